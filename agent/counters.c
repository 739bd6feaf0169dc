// SPDX-License-Identifier: MIT
#include "agent/counters.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct reading {
	uint64_t val, enabled, running;
};

struct slot {
	bool used;
	int *fds;             /* [nev][ncpu], -1 where not open */
	int *err;             /* [nev] */
	struct reading *cur;  /* [nev] summed over CPUs */
	struct reading *prev; /* [nev] */
};

struct counters {
	struct ev_spec *evs;
	size_t nev;
	int *cpus;
	size_t ncpu;
	struct slot *slots;
	size_t nslots;
	bool started;
	size_t nfds;
};

static int sys_perf_event_open(struct perf_event_attr *attr, int pid, int cpu, int group,
			       unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/*
 * Enable and read each CPU's events while running on that CPU, as perf does:
 * a cgroup event is only updated by the CPU it counts on, and reading or
 * enabling it from elsewhere has returned stale time_enabled (time from
 * before the enable leaking in) on the kernels we met. Being on the CPU also
 * saves an IPI per read.
 */
struct affinity {
	cpu_set_t saved;
	bool ok;
};

static void affinity_save(struct affinity *a)
{
	a->ok = sched_getaffinity(0, sizeof(a->saved), &a->saved) == 0;
}

static void affinity_set(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set); /* best effort: correctness of
						  * counts does not depend on it */
}

static void affinity_restore(const struct affinity *a)
{
	if (a->ok)
		sched_setaffinity(0, sizeof(a->saved), &a->saved);
}

struct counters *counters_new(const struct ev_spec *evs, size_t nev, const int *cpus,
			      size_t ncpu)
{
	struct counters *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->evs = calloc(nev ? nev : 1, sizeof(*c->evs));
	c->cpus = calloc(ncpu ? ncpu : 1, sizeof(*c->cpus));
	if (!c->evs || !c->cpus) {
		counters_free(c);
		errno = ENOMEM;
		return NULL;
	}
	/* Shallow copy: names stay owned by the caller's array. */
	memcpy(c->evs, evs, nev * sizeof(*evs));
	memcpy(c->cpus, cpus, ncpu * sizeof(*cpus));
	c->nev = nev;
	c->ncpu = ncpu;
	return c;
}

static void slot_release(struct counters *c, struct slot *s)
{
	if (!s->used)
		return;
	/* fds is NULL when counters_add's allocation of it failed */
	for (size_t i = 0; s->fds && i < c->nev * c->ncpu; i++) {
		if (s->fds[i] >= 0) {
			close(s->fds[i]);
			c->nfds--;
		}
	}
	free(s->fds);
	free(s->err);
	free(s->cur);
	free(s->prev);
	memset(s, 0, sizeof(*s));
}

void counters_free(struct counters *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nslots; i++)
		slot_release(c, &c->slots[i]);
	free(c->slots);
	free(c->evs);
	free(c->cpus);
	free(c);
}

static void fill_attr(const struct ev_spec *ev, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = ev->type;
	attr->config = ev->config;
	attr->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	attr->disabled = 1;
	attr->exclude_user = ev->exclude_user;
	attr->exclude_kernel = ev->exclude_kernel;
}

/* Errors that concern the whole request, not one event. */
static bool fatal_open_error(int err)
{
	return err == EACCES || err == EPERM || err == EMFILE || err == ENFILE ||
	       err == ENOMEM || err == EBADF;
}

static int find_free_slot(struct counters *c)
{
	for (size_t i = 0; i < c->nslots; i++)
		if (!c->slots[i].used)
			return (int)i;
	size_t n = c->nslots ? c->nslots * 2 : 16;
	struct slot *v = realloc(c->slots, n * sizeof(*v));

	if (!v)
		return -ENOMEM;
	memset(v + c->nslots, 0, (n - c->nslots) * sizeof(*v));
	c->slots = v;
	int idx = (int)c->nslots;

	c->nslots = n;
	return idx;
}

int counters_add(struct counters *c, const char *dir)
{
	struct perf_event_attr attr;
	struct slot *s;
	int cgfd, idx, ret = 0;

	cgfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0)
		return -errno;
	idx = find_free_slot(c);
	if (idx < 0) {
		close(cgfd);
		return idx;
	}
	s = &c->slots[idx];
	s->fds = malloc(c->nev * c->ncpu * sizeof(*s->fds) + 1);
	s->err = calloc(c->nev + 1, sizeof(*s->err));
	s->cur = calloc(c->nev + 1, sizeof(*s->cur));
	s->prev = calloc(c->nev + 1, sizeof(*s->prev));
	s->used = true;
	if (!s->fds || !s->err || !s->cur || !s->prev) {
		for (size_t i = 0; s->fds && i < c->nev * c->ncpu; i++)
			s->fds[i] = -1;
		ret = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < c->nev * c->ncpu; i++)
		s->fds[i] = -1;

	for (size_t e = 0; e < c->nev; e++) {
		fill_attr(&c->evs[e], &attr);
		for (size_t k = 0; k < c->ncpu; k++) {
			int fd = sys_perf_event_open(&attr, cgfd, c->cpus[k], -1,
						     PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);

			if (fd < 0) {
				int err = errno;

				if (fatal_open_error(err)) {
					ret = -err;
					goto fail;
				}
				/* Not countable here (e.g. no PMU): note it, skip the
				 * remaining CPUs of this event. */
				s->err[e] = -err;
				break;
			}
			s->fds[e * c->ncpu + k] = fd;
			c->nfds++;
		}
		if (s->err[e]) {
			/* Partial opens of a failed event would count a subset of CPUs. */
			for (size_t k = 0; k < c->ncpu; k++) {
				int *fd = &s->fds[e * c->ncpu + k];

				if (*fd >= 0) {
					close(*fd);
					c->nfds--;
					*fd = -1;
				}
			}
		}
	}
	close(cgfd);
	if (c->started) {
		struct affinity a;

		affinity_save(&a);
		for (size_t k = 0; k < c->ncpu; k++) {
			affinity_set(c->cpus[k]);
			for (size_t e = 0; e < c->nev; e++) {
				int fd = s->fds[e * c->ncpu + k];

				if (fd >= 0)
					ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
			}
		}
		affinity_restore(&a);
	}
	return idx;
fail:
	close(cgfd);
	slot_release(c, s);
	return ret;
}

void counters_remove(struct counters *c, int slot)
{
	if (slot >= 0 && (size_t)slot < c->nslots)
		slot_release(c, &c->slots[slot]);
}

int counters_start(struct counters *c)
{
	struct affinity a;
	int ret = 0;

	affinity_save(&a);
	for (size_t k = 0; k < c->ncpu && !ret; k++) {
		affinity_set(c->cpus[k]);
		for (size_t i = 0; i < c->nslots && !ret; i++) {
			struct slot *s = &c->slots[i];

			for (size_t e = 0; s->used && e < c->nev; e++) {
				int fd = s->fds[e * c->ncpu + k];

				if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
					ret = -errno;
					break;
				}
			}
		}
	}
	affinity_restore(&a);
	if (!ret)
		c->started = true;
	return ret;
}

int counters_read(struct counters *c)
{
	struct affinity a;
	int ret = 0;

	for (size_t i = 0; i < c->nslots; i++) {
		struct slot *s = &c->slots[i];

		if (!s->used)
			continue;
		memcpy(s->prev, s->cur, c->nev * sizeof(*s->cur));
		memset(s->cur, 0, c->nev * sizeof(*s->cur));
	}
	affinity_save(&a);
	for (size_t k = 0; k < c->ncpu; k++) {
		affinity_set(c->cpus[k]);
		for (size_t i = 0; i < c->nslots; i++) {
			struct slot *s = &c->slots[i];

			for (size_t e = 0; s->used && e < c->nev; e++) {
				int fd = s->fds[e * c->ncpu + k];
				uint64_t buf[3];

				if (fd < 0 || s->err[e])
					continue;
				if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
					ret = -EIO;
					continue;
				}
				s->cur[e].val += buf[0];
				s->cur[e].enabled += buf[1];
				s->cur[e].running += buf[2];
			}
		}
	}
	affinity_restore(&a);
	return ret;
}

void counters_get(const struct counters *c, int slot, size_t ev, bool delta,
		  struct counter_value *out)
{
	const struct slot *s;
	struct reading r;

	memset(out, 0, sizeof(*out));
	if (slot < 0 || (size_t)slot >= c->nslots || ev >= c->nev || !c->slots[slot].used) {
		out->err = -EINVAL;
		return;
	}
	s = &c->slots[slot];
	out->err = s->err[ev];
	r = s->cur[ev];
	if (delta) {
		r.val -= s->prev[ev].val;
		r.enabled -= s->prev[ev].enabled;
		r.running -= s->prev[ev].running;
	}
	out->val = r.val;
	out->enabled = r.enabled;
	out->running = r.running;
	if (r.running == 0)
		out->scaled = 0;
	else if (r.running >= r.enabled)
		out->scaled = (double)r.val;
	else
		out->scaled = (double)r.val * (double)r.enabled / (double)r.running;
}

size_t counters_nevents(const struct counters *c)
{
	return c->nev;
}

size_t counters_nfds(const struct counters *c)
{
	return c->nfds;
}
