// SPDX-License-Identifier: MIT
/*
 * agent/sampler: sampling perf events, their mmap'd rings and the records
 * in them.
 *
 * Rings. perf writes records into a ring of 2^n pages that follows one
 * control page (struct perf_event_mmap_page). The kernel advances
 * data_head after it has written whole records; we read records from
 * data_tail up to data_head and then store data_tail to hand the space
 * back. Both are free-running 64-bit byte counts, so "head - tail" is the
 * amount of unread data and "x & (size - 1)" its place in the ring. A
 * record never starts in the last bytes of the ring unaligned (records are
 * multiples of 8 bytes), but it may run past the end and continue at the
 * start: such a record is copied into a scratch buffer before parsing.
 *
 * Ordering: data_head is loaded with acquire semantics so the record bytes
 * we read after it are the ones the kernel wrote before publishing it;
 * data_tail is stored with release semantics so the kernel does not reuse
 * space we are still reading. Everything handed to callbacks points into
 * the ring (or scratch) and is only valid until the tail moves, i.e.
 * during the callback.
 *
 * One ring per CPU. A ring is written only by events of its CPU, so a
 * ring holds the records of one CPU in the order they were written, and
 * the number of rings (and of poll fds) does not grow with the number of
 * cgroups or threads:
 *
 *  - system-wide: one event per CPU, each with its own ring;
 *  - cgroup mode: one event per (cgroup, CPU) with PERF_FLAG_PID_CGROUP;
 *    the first cgroup's event on a CPU owns the ring, the others are
 *    redirected into it with PERF_EVENT_IOC_SET_OUTPUT;
 *  - pid mode: one event per (thread at open time, CPU) with inherit=1,
 *    so threads and children created later are followed too; again the
 *    first owns the CPU's ring. (An inherited event may only be mmap'd
 *    when it is bound to a CPU, which is why there is no cpu=-1 event.)
 *
 * Side-band records (mmap, comm, fork/exit) are requested on every event.
 * The kernel delivers them only to events whose filter matches the task
 * that caused them: the event's CPU, its task, and for cgroup events the
 * cgroup of the task running on that CPU. Requesting them on one event per
 * CPU would therefore lose the mmaps and execs of every cgroup but the
 * first; requesting them on each gives each cgroup's records exactly once
 * (unless the caller passes nested cgroups, which then also sample twice).
 *
 * Watermark: the kernel wakes pollers when a quarter of the ring is full,
 * not per sample.
 */
#include "agent/perf/sampler.h"
#include "lib/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


#define SAMPLER_DEFAULT_PAGES 64
#define SAMPLER_SCRATCH (64 * 1024) /* header.size is a u16: any record fits */
#define SAMPLER_MAX_STACK_BYTES 65528

/* The sample fields this parser knows how to walk, in the kernel's order. */
#define SAMPLER_PARSABLE                                                                    \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |      \
	 PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |      \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |                      \
	 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | (uint64_t)PERF_SAMPLE_CGROUP)

struct ring {
	int fd;                         /* the event that owns the mapping */
	int cpu;                        /* whose records it holds */
	void *map;
	size_t map_len;
	struct perf_event_mmap_page *pg;
	uint8_t *data;
	uint64_t size;                  /* power of two */
};

/* An event of the sampler and where it came from. */
struct sev {
	int fd;
	int tag; /* 0: opened with the sampler; -1: a dummy ring owner;
		    else the handle of its sampler_add_cgroup() */
};

struct sampler {
	struct sev *evs; /* every event, ring owners included */
	size_t nfds, capfds;
	struct sampler_layout layout;
	struct sampler_stats st;
	/* for sampler_add_cgroup(): */
	bool later, enabled, opened;
	struct perf_event_attr attr;
	char *filter;  /* the last sampler_set_filter() */
	int next_tag;
	_Alignas(8) uint8_t scratch[SAMPLER_SCRATCH]; /* a record that wraps around, copied */
	size_t nrings;
	struct ring rings[]; /* one per CPU of the options, allocated with the sampler */
};

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			       unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/* ---- record parsing ---- */

struct rd {
	const uint8_t *p, *end;
};

static size_t rd_left(const struct rd *r)
{
	return (size_t)(r->end - r->p);
}

/* The next @n bytes into @v, if the record holds them. */
static bool rd_bytes(struct rd *r, void *v, size_t n)
{
	if (rd_left(r) < n)
		return false;
	memcpy(v, r->p, n);
	r->p += n;
	return true;
}

static bool rd_u64(struct rd *r, uint64_t *v)
{
	return rd_bytes(r, v, sizeof(*v));
}

static bool rd_u32(struct rd *r, uint32_t *v)
{
	return rd_bytes(r, v, sizeof(*v));
}

static bool rd_skip(struct rd *r, uint64_t n)
{
	if (n > rd_left(r))
		return false;
	r->p += n;
	return true;
}

/* A NUL-terminated string that ends inside the reader. */
static bool rd_str(struct rd *r, const char **s)
{
	size_t n = strnlen((const char *)r->p, rd_left(r));

	if (n == rd_left(r))
		return false;
	*s = (const char *)r->p;
	r->p += n + 1;
	return true;
}

/* Bytes of the sample_id fields at the end of non-sample records. */
static size_t sample_id_size(const struct sampler_layout *l)
{
	static const uint64_t bits[] = { PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PERF_SAMPLE_ID,
					 PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU,
					 PERF_SAMPLE_IDENTIFIER };
	size_t n = 0;

	if (!l->sample_id_all)
		return 0;
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (l->sample_type & bits[i])
			n += 8;
	return n;
}

/* The TIME field of a side-band record's sample_id trailer (@id bytes at
 * @trailer), 0 when the layout has none. */
static uint64_t sample_id_time(const struct sampler_layout *l, const uint8_t *trailer, size_t id)
{
	size_t off = l->sample_type & PERF_SAMPLE_TID ? 8 : 0;
	uint64_t t;

	if (!l->sample_id_all || !(l->sample_type & PERF_SAMPLE_TIME) || id < off + 8)
		return 0;
	memcpy(&t, trailer + off, sizeof(t));
	return t;
}

static bool parse_sample(const struct sampler_layout *l, const struct perf_event_header *h,
			 struct rd *r, const struct sampler_cb *cb, struct sampler_stats *st)
{
	uint64_t t = l->sample_type, v;
	struct sample s = { 0 };

	s.user_mode = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
	if ((t & PERF_SAMPLE_IDENTIFIER) && !rd_skip(r, 8))
		return false;
	if ((t & PERF_SAMPLE_IP) && !rd_u64(r, &s.ip))
		return false;
	if ((t & PERF_SAMPLE_TID) && !(rd_u32(r, &s.pid) && rd_u32(r, &s.tid)))
		return false;
	if ((t & PERF_SAMPLE_TIME) && !rd_u64(r, &s.time))
		return false;
	if ((t & PERF_SAMPLE_ADDR) && !rd_skip(r, 8))
		return false;
	if ((t & PERF_SAMPLE_ID) && !rd_skip(r, 8))
		return false;
	if ((t & PERF_SAMPLE_STREAM_ID) && !rd_skip(r, 8))
		return false;
	if ((t & PERF_SAMPLE_CPU) && !(rd_u32(r, &s.cpu) && rd_skip(r, 4)))
		return false;
	if ((t & PERF_SAMPLE_PERIOD) && !rd_u64(r, &s.period))
		return false;
	if (t & PERF_SAMPLE_CALLCHAIN) {
		if (!rd_u64(r, &v) || v > rd_left(r) / 8)
			return false;
		/* Every field before is a multiple of 8 bytes: still aligned. */
		s.callchain = (const uint64_t *)(const void *)r->p;
		s.nr_callchain = v;
		r->p += v * 8;
	}
	if (t & PERF_SAMPLE_RAW) {
		uint32_t n;

		/* u32 size, then size bytes; the kernel pads so 4 + size keeps
		 * the record 8-byte aligned. */
		if (!rd_u32(r, &n) || n > rd_left(r) || ((4 + (uint64_t)n) & 7))
			return false;
		s.raw = r->p;
		s.raw_size = n;
		r->p += n;
	}
	if (t & PERF_SAMPLE_REGS_USER) {
		if (!rd_u64(r, &s.regs_abi))
			return false;
		if (s.regs_abi != PERF_SAMPLE_REGS_ABI_NONE) {
			uint64_t n = (uint64_t)__builtin_popcountll(l->regs_mask);

			if (n > rd_left(r) / 8)
				return false;
			s.regs = (const uint64_t *)(const void *)r->p;
			r->p += n * 8;
		}
	}
	if (t & PERF_SAMPLE_STACK_USER) {
		if (!rd_u64(r, &v) || v > rd_left(r))
			return false;
		if (v) {
			const uint8_t *data = r->p;
			uint64_t dyn;

			r->p += v;
			if (!rd_u64(r, &dyn) || dyn > v)
				return false;
			s.stack = data;
			s.stack_size = dyn;
		}
	}
	if ((t & PERF_SAMPLE_CGROUP) && !rd_u64(r, &s.cgroup_id))
		return false;
	/* A sample is exactly its fields: anything left means we misread it. */
	if (rd_left(r))
		return false;
	st->samples++;
	if (cb && cb->sample)
		cb->sample(cb->ctx, &s);
	return true;
}

static bool parse_mmap(const struct perf_event_header *h, struct rd *r, bool v2,
		       const struct sampler_cb *cb)
{
	struct sample_mmap m = { 0 };

	if (!rd_u32(r, &m.pid) || !rd_u32(r, &m.tid) || !rd_u64(r, &m.start) ||
	    !rd_u64(r, &m.len) || !rd_u64(r, &m.pgoff))
		return false;
	if (v2) {
		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			/* build_id_size, 3 reserved bytes, build_id[20]: no device/inode. */
			if (!rd_skip(r, 24))
				return false;
		} else {
			uint64_t gen;

			if (!rd_u32(r, &m.maj) || !rd_u32(r, &m.min) || !rd_u64(r, &m.ino) ||
			    !rd_u64(r, &gen))
				return false;
		}
		if (!rd_u32(r, &m.prot) || !rd_u32(r, &m.flags))
			return false;
	}
	if (!rd_str(r, &m.filename))
		return false;
	if (cb && cb->mmap)
		cb->mmap(cb->ctx, &m);
	return true;
}

/* The sample_id fields that end @r (TID, TIME, ID, STREAM_ID, CPU,
 * IDENTIFIER as the layout has them) into @sw. */
static bool parse_switch_id(const struct sampler_layout *l, struct rd *r, struct sample_switch *sw)
{
	uint64_t t = l->sample_type;

	if ((t & PERF_SAMPLE_TID) && !(rd_u32(r, &sw->pid) && rd_u32(r, &sw->tid)))
		return false;
	if ((t & PERF_SAMPLE_TIME) && !rd_u64(r, &sw->time))
		return false;
	if ((t & PERF_SAMPLE_ID) && !rd_skip(r, 8))
		return false;
	if ((t & PERF_SAMPLE_STREAM_ID) && !rd_skip(r, 8))
		return false;
	if ((t & PERF_SAMPLE_CPU) && !(rd_u32(r, &sw->cpu) && rd_skip(r, 4)))
		return false;
	return true;
}

/* PERF_RECORD_SWITCH (no body) or _CPU_WIDE (next/prev pid and tid), then
 * the sample_id fields: whose switch it is and when. */
static bool parse_switch(const struct sampler_layout *l, const struct perf_event_header *h,
			 struct rd *r, const struct sampler_cb *cb)
{
	struct sample_switch sw = { 0 };

	if (!l->sample_id_all)
		return true; /* nothing says whose switch it is */
	if (h->type == PERF_RECORD_SWITCH_CPU_WIDE && !rd_skip(r, 8))
		return false;
	if (!parse_switch_id(l, r, &sw))
		return false;
	sw.out = h->misc & PERF_RECORD_MISC_SWITCH_OUT;
	sw.preempt = h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
	if (cb && cb->cswitch)
		cb->cswitch(cb->ctx, &sw);
	return true;
}

static bool parse_other(const struct sampler_layout *l, const struct perf_event_header *h,
			struct rd *r, const struct sampler_cb *cb, struct sampler_stats *st)
{
	size_t id = sample_id_size(l);
	uint32_t pid, tid, ppid, ptid;
	uint64_t v;
	const char *comm;

	if (h->type == PERF_RECORD_SWITCH || h->type == PERF_RECORD_SWITCH_CPU_WIDE)
		return parse_switch(l, h, r, cb);
	switch (h->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		break;
	default:
		return true; /* not ours to read */
	}
	/* The sample_id fields sit at the end: the body stops before them. */
	if (rd_left(r) < id)
		return false;
	r->end -= id;
	switch (h->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return parse_mmap(h, r, h->type == PERF_RECORD_MMAP2, cb);
	case PERF_RECORD_COMM:
		if (!rd_u32(r, &pid) || !rd_u32(r, &tid) || !rd_str(r, &comm))
			return false;
		if (cb && cb->comm)
			cb->comm(cb->ctx, pid, tid, comm, h->misc & PERF_RECORD_MISC_COMM_EXEC,
				 sample_id_time(l, r->end, id));
		return true;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (!rd_u32(r, &pid) || !rd_u32(r, &ppid) || !rd_u32(r, &tid) ||
		    !rd_u32(r, &ptid) || !rd_u64(r, &v))
			return false;
		if (h->type == PERF_RECORD_FORK && cb && cb->fork)
			cb->fork(cb->ctx, pid, ppid, tid);
		else if (h->type == PERF_RECORD_EXIT && cb && cb->exit)
			cb->exit(cb->ctx, pid, tid);
		return true;
	case PERF_RECORD_LOST:          /* id, lost */
	case PERF_RECORD_LOST_SAMPLES:  /* lost */
		if ((h->type == PERF_RECORD_LOST && !rd_skip(r, 8)) || !rd_u64(r, &v))
			return false;
		st->lost += v;
		if (cb && cb->lost)
			cb->lost(cb->ctx, v);
		return true;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		/* time, id, stream_id */
		if (!rd_skip(r, 24))
			return false;
		if (h->type == PERF_RECORD_THROTTLE)
			st->throttled++;
		return true;
	}
	return true;
}

int sampler_parse_record(const struct sampler_layout *l, const void *rec, size_t len,
			 const struct sampler_cb *cb, struct sampler_stats *st)
{
	struct perf_event_header h;
	struct rd r;
	bool ok;

	if (!l || !rec || !st || (l->sample_type & ~(uint64_t)SAMPLER_PARSABLE) ||
	    ((uintptr_t)rec & 7))
		return -EINVAL;
	if (len < sizeof(h))
		goto bad;
	memcpy(&h, rec, sizeof(h));
	if (h.size < sizeof(h) || h.size > len)
		goto bad;
	r.p = (const uint8_t *)rec + sizeof(h);
	r.end = (const uint8_t *)rec + h.size;
	if (h.type == PERF_RECORD_SAMPLE)
		ok = parse_sample(l, &h, &r, cb, st);
	else
		ok = parse_other(l, &h, &r, cb, st);
	if (ok)
		return 0;
bad:
	st->malformed++;
	return -EBADMSG;
}

/* ---- rings ---- */

int sampler_ring_read(const struct sampler_layout *l, struct perf_event_mmap_page *pg,
		      const uint8_t *data, uint64_t data_size, uint8_t *scratch,
		      size_t scratch_size, const struct sampler_cb *cb, struct sampler_stats *st)
{
	uint64_t head, tail, mask = data_size - 1;
	int n = 0;

	if (!l || !pg || !data || !st || data_size < 8 || (data_size & mask) ||
	    ((uintptr_t)data & 7) || (scratch && ((uintptr_t)scratch & 7)))
		return -EINVAL;
	head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	tail = __atomic_load_n(&pg->data_tail, __ATOMIC_RELAXED);
	if (head == tail)
		return 0;
	st->wakeups++;
	if (head - tail > data_size)
		goto corrupt;
	while (tail != head) {
		uint64_t off = tail & mask, avail = head - tail;
		struct perf_event_header h;
		const void *rec;

		if (avail < sizeof(h))
			goto corrupt;
		/* data_size is a power of two >= 8 and tail a multiple of 8 (every
		 * size is): the header itself never straddles the end. */
		if (off + sizeof(h) > data_size)
			goto corrupt;
		memcpy(&h, data + off, sizeof(h));
		if (h.size < sizeof(h) || (h.size & 7) || h.size > avail)
			goto corrupt;
		if (off + h.size <= data_size) {
			rec = data + off;
		} else {
			size_t first = (size_t)(data_size - off);

			if (!scratch || h.size > scratch_size) {
				st->malformed++;
				goto next;
			}
			memcpy(scratch, data + off, first);
			memcpy(scratch + first, data, h.size - first);
			rec = scratch;
			st->wrapped++;
		}
		/* Malformed records are counted by the parser and skipped. */
		(void)sampler_parse_record(l, rec, h.size, cb, st);
next:
		st->records++;
		if (n < INT_MAX)
			n++;
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return n;

corrupt:
	/* Nothing after a bad size can be trusted: give the rest back. */
	st->malformed++;
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
	return n;
}

/* ---- opening ---- */

static void ring_release(struct ring *r)
{
	if (r->map && r->map != MAP_FAILED)
		munmap(r->map, r->map_len);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nrings; i++)
		ring_release(&s->rings[i]);
	for (size_t i = 0; i < s->nfds; i++)
		close(s->evs[i].fd);
	free(s->evs);
	free(s->filter);
	free(s);
}

/* Targets of the events on one CPU: cgroup dir fds or thread ids. */
struct targets {
	int *ids;
	size_t n;
	unsigned long flags;
};

static void targets_release(struct targets *t)
{
	if (t->flags & PERF_FLAG_PID_CGROUP)
		for (size_t i = 0; i < t->n; i++)
			close(t->ids[i]);
	free(t->ids);
	memset(t, 0, sizeof(*t));
}

static int targets_push(struct targets *t, size_t *cap, int id)
{
	if (GROW_ARRAY(t->ids, t->n, *cap, 16) < 0)
		return -ENOMEM;
	t->ids[t->n++] = id;
	return 0;
}

/* The threads of @pid, its main thread first. */
static int targets_threads(struct targets *t, pid_t pid)
{
	char path[64];
	size_t cap = 0;
	struct dirent *de;
	DIR *d;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	err = targets_push(t, &cap, pid);
	while (!err && (de = readdir(d))) {
		char *end;
		unsigned long v;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		errno = 0;
		v = strtoul(de->d_name, &end, 10);
		if (errno || *end || v == 0 || v > INT_MAX || (pid_t)v == pid)
			continue;
		err = targets_push(t, &cap, (int)v);
	}
	closedir(d);
	return err;
}

static int targets_cgroups(struct targets *t, const char *const *dirs, size_t n)
{
	size_t cap = 0;

	t->flags = PERF_FLAG_PID_CGROUP;
	for (size_t i = 0; i < n; i++) {
		int fd, err;

		if (!dirs[i])
			return -EINVAL;
		fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		err = targets_push(t, &cap, fd);
		if (err) {
			close(fd);
			return err;
		}
	}
	return 0;
}

static int ring_map(struct ring *r, int fd, size_t pages, size_t page)
{
	r->map_len = (1 + pages) * page;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	r->fd = fd;
	r->pg = r->map;
	/* data_offset/data_size are set by kernels since 4.1; older ones put the
	 * data right after the control page. */
	if (r->pg->data_size) {
		if (r->pg->data_offset < page || r->pg->data_offset > r->map_len ||
		    r->pg->data_size > r->map_len - r->pg->data_offset ||
		    (r->pg->data_size & (r->pg->data_size - 1)))
			return -EPROTO;
		r->data = (uint8_t *)r->map + r->pg->data_offset;
		r->size = r->pg->data_size;
	} else {
		r->data = (uint8_t *)r->map + page;
		r->size = pages * page;
	}
	return 0;
}

static void attr_init(struct perf_event_attr *a, const struct sampler_opts *o, size_t ring_bytes)
{
	memset(a, 0, sizeof(*a));
	if (o->base_attr) {
		/* Probes: type and config1/config2 (uprobe path and offset) as given. */
		a->type = o->base_attr->type;
		a->config = o->base_attr->config;
		a->config1 = o->base_attr->config1;
		a->config2 = o->base_attr->config2;
	} else {
		a->type = o->event->type;
		a->config = o->event->config;
		a->exclude_user = o->event->exclude_user;
		a->exclude_kernel = o->event->exclude_kernel;
	}
	a->size = sizeof(*a);
	if (o->freq) {
		a->freq = 1;
		a->sample_freq = o->freq;
	} else {
		a->sample_period = o->period;
	}
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CGROUP;
	if (o->callchain) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->sample_max_stack = (uint16_t)o->max_stack;
		a->exclude_callchain_user = o->kernel_callchain_only;
	}
	if (o->user_stack) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = o->regs_mask;
		a->sample_stack_user = o->stack_bytes;
	} else if (o->regs_mask) {
		a->sample_type |= PERF_SAMPLE_REGS_USER; /* argument registers only */
		a->sample_regs_user = o->regs_mask;
	}
	if (o->raw)
		a->sample_type |= PERF_SAMPLE_RAW;
	if (o->clock_monotonic) {
		/* Comparable with clock_gettime() and across events. */
		a->use_clockid = 1;
		a->clockid = CLOCK_MONOTONIC;
	}
	a->context_switch = o->context_switch;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(ring_bytes / 4);
	a->disabled = 1;
	a->inherit = o->pid > 0;
}

static int opts_check(const struct sampler_opts *o, size_t *pages)
{
	if (!o || (!o->event && !o->base_attr) || !o->cpus || !o->ncpu || (!o->freq && !o->period))
		return -EINVAL;
	if (o->ncpu > (SIZE_MAX - sizeof(struct sampler)) / sizeof(struct ring))
		return -EINVAL; /* the sampler and its rings are one allocation */
	if (o->ncgroups && !o->cgroup_dirs)
		return -EINVAL;
	if (o->ncgroups && o->pid > 0)
		return -EINVAL;
	if (o->cgroups_later && (o->ncgroups || o->pid > 0))
		return -EINVAL;
	if (o->user_stack && (!o->stack_bytes || (o->stack_bytes & 7) ||
			      o->stack_bytes > SAMPLER_MAX_STACK_BYTES))
		return -EINVAL;
	if (o->max_stack > UINT16_MAX)
		return -EINVAL;
	*pages = o->mmap_pages ? o->mmap_pages : SAMPLER_DEFAULT_PAGES;
	if (*pages & (*pages - 1) || *pages > (1u << 20))
		return -EINVAL;
	for (size_t i = 0; i < o->ncpu; i++)
		if (o->cpus[i] < 0)
			return -EINVAL;
	return 0;
}

/* Keep @fd, tagged @tag, among the sampler's events. */
static int sev_push(struct sampler *s, int fd, int tag)
{
	if (GROW_ARRAY(s->evs, s->nfds, s->capfds, 64) < 0)
		return -ENOMEM;
	s->evs[s->nfds++] = (struct sev){.fd = fd, .tag = tag};
	return 0;
}

/* Open the event of @id (cgroup fd, tid or -1) on @cpu into the ring of
 * @owner (-1: it owns a new ring), tagged @tag. */
static int open_into(struct sampler *s, struct perf_event_attr *attr, int id, int cpu,
		     unsigned long flags, int owner, int tag, size_t pages, size_t page)
{
	int fd = sys_perf_event_open(attr, id, cpu, -1, flags | PERF_FLAG_FD_CLOEXEC), err;

	if (fd < 0 && errno == EINVAL && tag >= 0 && !s->opened &&
	    (attr->sample_type & PERF_SAMPLE_CGROUP)) {
		/* Kernels before 5.7: samples carry no cgroup id. */
		attr->sample_type &= ~(uint64_t)PERF_SAMPLE_CGROUP;
		fd = sys_perf_event_open(attr, id, cpu, -1, flags | PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (tag >= 0) {
		s->opened = true; /* the first one decides the layout */
		s->layout.sample_type = attr->sample_type;
	}
	err = sev_push(s, fd, tag);
	if (err) {
		close(fd);
		return err;
	}
	if (owner < 0) {
		err = ring_map(&s->rings[s->nrings], fd, pages, page);
		if (err) {
			ring_release(&s->rings[s->nrings]);
			return err;
		}
		s->rings[s->nrings++].cpu = cpu;
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, owner) < 0) {
		return -errno;
	}
	return 0;
}

/* A software event that writes nothing, only there to own a ring that
 * cgroup events come and go into (same clock and wake-up as theirs). */
static void dummy_attr(struct perf_event_attr *d, const struct perf_event_attr *a)
{
	memset(d, 0, sizeof(*d));
	d->size = sizeof(*d);
	d->type = PERF_TYPE_SOFTWARE;
	d->config = PERF_COUNT_SW_DUMMY;
	d->use_clockid = a->use_clockid;
	d->clockid = a->clockid;
	d->watermark = a->watermark;
	d->wakeup_watermark = a->wakeup_watermark;
	d->disabled = 1;
}

static int open_all(struct sampler *s, const struct sampler_opts *o, struct targets *tg,
		    size_t pages, size_t page)
{
	struct perf_event_attr dummy;
	int err = 0;

	dummy_attr(&dummy, &s->attr);
	for (size_t c = 0; c < o->ncpu && !err; c++) {
		size_t first = s->nfds;

		if (o->cgroups_later)
			err = open_into(s, &dummy, -1, o->cpus[c], 0, -1, -1, pages, page);
		for (size_t i = 0; i < tg->n && !err; i++) {
			int owner = s->nfds > first ? s->evs[first].fd : -1;

			err = open_into(s, &s->attr, tg->ids[i], o->cpus[c], tg->flags, owner, 0,
					pages, page);
			if (err == -ESRCH && o->pid > 0 && tg->ids[i] != o->pid)
				err = 0; /* a thread that exited since we listed it */
		}
	}
	return err;
}

struct sampler *sampler_open(const struct sampler_opts *o)
{
	struct targets tg = { 0 };
	struct sampler *s = NULL;
	size_t pages, page;
	long ps = sysconf(_SC_PAGESIZE);
	int err;

	err = opts_check(o, &pages);
	if (err)
		goto out;
	page = ps > 0 ? (size_t)ps : 4096;
	if (o->ncgroups)
		err = targets_cgroups(&tg, o->cgroup_dirs, o->ncgroups);
	else if (o->pid > 0)
		err = targets_threads(&tg, o->pid);
	else if (!o->cgroups_later)
		err = targets_push(&tg, &(size_t){ 0 }, -1);
	if (err)
		goto out;
	s = calloc(1, sizeof(*s) + o->ncpu * sizeof(s->rings[0]));
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	s->later = o->cgroups_later;
	attr_init(&s->attr, o, pages * page);
	err = open_all(s, o, &tg, pages, page);
	if (err)
		goto out;
	s->layout.sample_type = s->attr.sample_type;
	s->layout.regs_mask = s->attr.sample_regs_user;
	s->layout.sample_id_all = true;
out:
	targets_release(&tg);
	if (err) {
		sampler_close(s);
		errno = -err;
		return NULL;
	}
	return s;
}

int sampler_remove_cgroup(struct sampler *s, int handle)
{
	size_t k = 0, n;

	if (!s || handle <= 0)
		return -EINVAL;
	n = s->nfds;
	for (size_t i = 0; i < n; i++) {
		if (s->evs[i].tag == handle)
			close(s->evs[i].fd);
		else
			s->evs[k++] = s->evs[i];
	}
	s->nfds = k;
	return k < n ? 0 : -ENOENT;
}

int sampler_add_cgroup(struct sampler *s, const char *dir)
{
	int cfd, tag, err = 0;

	if (!s || !dir || !s->later)
		return -EINVAL;
	cfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cfd < 0)
		return -errno;
	tag = ++s->next_tag;
	for (size_t c = 0; c < s->nrings && !err; c++) {
		int fd;

		err = open_into(s, &s->attr, cfd, s->rings[c].cpu, PERF_FLAG_PID_CGROUP,
				s->rings[c].fd, tag, 0, 0);
		fd = err ? -1 : s->evs[s->nfds - 1].fd;
		if (!err && s->filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, s->filter) < 0)
			err = -errno;
		if (!err && s->enabled && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
			err = -errno;
	}
	close(cfd);
	if (err) {
		sampler_remove_cgroup(s, tag);
		return err;
	}
	return tag;
}

/* ---- running ---- */

int sampler_set_filter(struct sampler *s, const char *filter)
{
	char *copy;

	if (!s || !filter)
		return -EINVAL;
	copy = strdup(filter);
	if (!copy)
		return -ENOMEM;
	free(s->filter);
	s->filter = copy;
	for (size_t i = 0; i < s->nfds; i++)
		if (s->evs[i].tag >= 0 && ioctl(s->evs[i].fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0)
			return -errno;
	return 0;
}

static int sampler_ioctl_all(struct sampler *s, unsigned long req)
{
	if (!s)
		return -EINVAL;
	s->enabled = req == PERF_EVENT_IOC_ENABLE;
	for (size_t i = 0; i < s->nfds; i++)
		if (ioctl(s->evs[i].fd, req, 0) < 0)
			return -errno;
	return 0;
}

int sampler_enable(struct sampler *s)
{
	return sampler_ioctl_all(s, PERF_EVENT_IOC_ENABLE);
}

int sampler_disable(struct sampler *s)
{
	return sampler_ioctl_all(s, PERF_EVENT_IOC_DISABLE);
}

size_t sampler_fds(const struct sampler *s, int *fds, size_t max)
{
	size_t n = 0;

	if (!s)
		return 0;
	for (; n < s->nrings && n < max; n++)
		fds[n] = s->rings[n].fd;
	return s->nrings; /* all of them, so a first call with max 0 sizes the array */
}

int sampler_drain(struct sampler *s, const struct sampler_cb *cb)
{
	int total = 0;

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < s->nrings; i++) {
		struct ring *r = &s->rings[i];
		int n = sampler_ring_read(&s->layout, r->pg, r->data, r->size, s->scratch,
					  SAMPLER_SCRATCH, cb, &s->st);

		if (n < 0)
			return n;
		total = n > INT_MAX - total ? INT_MAX : total + n;
	}
	return total;
}

/* @n bytes of @src (NULL: zeros) into @out (NULL: nothing). */
static void copy_out(void *out, const void *src, size_t n)
{
	if (out && src)
		memcpy(out, src, n);
	else if (out)
		memset(out, 0, n);
}

void sampler_stats(const struct sampler *s, struct sampler_stats *out)
{
	copy_out(out, s ? &s->st : NULL, sizeof(*out));
}

void sampler_layout(const struct sampler *s, struct sampler_layout *out)
{
	copy_out(out, s ? &s->layout : NULL, sizeof(*out));
}

int sampler_max_stack_default(void)
{
	char buf[32], *end;
	unsigned long v;
	ssize_t n;
	int fd = open("/proc/sys/kernel/perf_event_max_stack", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = '\0';
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || v == 0 || v > INT_MAX)
		return -EINVAL;
	return (int)v;
}
