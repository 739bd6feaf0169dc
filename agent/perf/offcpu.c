// SPDX-License-Identifier: MIT
/*
 * agent/perf/offcpu: time off the CPU, by the stack at which a thread
 * blocked (see offcpu.h for the contract).
 *
 * What is measured. A thread is off the CPU from the moment it blocks
 * (schedule() with its state S or D: a sleep, a lock, a read, epoll) to
 * the moment it runs again. Its stack at the block says why it waits, so
 * the stack of the switch-out is weighted with the time until the next
 * switch-in of the same thread. Preemptions (switched out while runnable)
 * are not counted: that time is CPU contention, not a wait of the program,
 * and perf's --off-cpu leaves it out too.
 *
 * The events, no BPF. One sampling event per CPU (per cgroup with
 * PERF_FLAG_PID_CGROUP, per thread with -p) on the tracepoint
 * sched:sched_switch, period 1, with the callchain (and the user registers
 * and stack for DWARF unwinding), and attr.context_switch = 1 on the same
 * events:
 *  - the tracepoint fires in __schedule() with the task going out as
 *    `current`, so its sample carries the blocked thread's kernel and user
 *    stack, its pid/tid, its cgroup (a cgroup event is active exactly while
 *    one of its tasks is current, which is when its tasks switch out), and
 *    the time of the block. A kernel filter "prev_state & 3" (S or D) drops
 *    preemptions and idle before any stack is taken, so they cost little;
 *  - PERF_RECORD_SWITCH(_CPU_WIDE) side-band records are written at every
 *    switch-in and switch-out of a task the event matches. The kernel
 *    switches a CPU's perf cgroup between the switch-out and the switch-in
 *    record, so a cgroup event sees both switches of its own tasks, and
 *    only those: the switch-in that ends a wait of a thread in the cgroup
 *    is in that cgroup's records even when the thread before it on that CPU
 *    is elsewhere. (The tracepoint's next_pid field cannot serve here: it
 *    fires in the context of the task going out, which may be in another
 *    cgroup.) Its sample_id fields give the thread and time.
 * perf does the same with `perf record -e sched:sched_switch -g` and
 * `perf inject -s` after the fact, or with a BPF program (--off-cpu); here
 * it happens as the records are read, with nothing written to disk.
 *
 * Cost, and what was chosen by measuring it (bench/bench_offcpu.sh:
 * PostgreSQL under select-only pgbench, a block and a wake-up per query,
 * CPU per transaction of PostgreSQL + pgbench). All of it is paid in the
 * kernel by the profiled threads, at their blocks and switches: a sample
 * with its stack per block (the cost of on-CPU sampling, paid per block
 * instead of per tick), two 48-byte records per switch. So:
 *  - the events match as few threads as possible: run opens them per
 *    followed cgroup (sampler_add_cgroup() as cgroups come and go), not
 *    host-wide, unless the whole host is followed; record has -G/-p;
 *  - in DWARF mode the callchain is kernel-only (exclude_callchain_user):
 *    the user part is unwound from the stack copy anyway, and the kernel's
 *    frame-pointer walk of code built without frame pointers (Debian's
 *    postgres) is work thrown away;
 *  - the user stack copy per block can be smaller than the on-CPU one
 *    (sampling.off_cpu_stack_bytes): blocking stacks are shallow in libc,
 *    and 4 KiB kept PostgreSQL's lock wait down to PostgresMain (only
 *    PostmasterMain..._start cut); the default stays the on-CPU size;
 *  - sampling.off_cpu_every N stacks one block in N (the tracepoint's
 *    period counts blocks after the filter) and weighs each wait N: an
 *    estimate for when exact is too dear. The switch records stay (they
 *    end the waits), so the saving is well under N-fold;
 *  - the switch-ins stay PERF_RECORD_SWITCH records: a second
 *    sched_switch event for the switch-in side would cost a sample per
 *    switch too, and in cgroup mode could not work (above); sched_wakeup
 *    marks when a thread became runnable, not when it ran.
 *
 * Pairing. Records of one CPU reach its ring in time order, but rings are
 * read one after another, and a thread that blocks on CPU 0 often wakes on
 * CPU 1. Pairing in the order read would pair a switch-out with a later
 * switch-in than its own when the ring holding its own is read later. So
 * everything is held here and only paired once every ring has been read
 * after an instant: offcpu_pair(upto) sorts the held events by time and
 * walks those before `upto`, keeping one open wait per thread. The caller
 * takes `upto` a little before it starts reading the rings (a record is
 * published a few microseconds after its time is taken). Held events are
 * bounded by what the rings held (plus what arrived after `upto`), open
 * waits by the threads asleep; both are capped and refusals counted.
 *
 * Waits that never end. A thread asleep when the recording stops (an idle
 * connection in epoll_wait, a timer thread) has no switch-in; offcpu_flush()
 * counts its wait up to that instant, so `record` reports the time it
 * spent off CPU while recording, and `run` counts a long sleep in each
 * interval it spans rather than all at once when it ends, if ever. Waits
 * that began before the events were enabled are not seen (their switch-in
 * finds no open wait): the first moments of a recording undercount
 * threads that were already asleep.
 *
 * Threshold. A wait under min_ns is dropped when it ends; a wait flushed
 * before it ended had passed it already, so its remainder always counts.
 */
#include "agent/perf/offcpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/perf/events.h"
#include "lib/grow.h"
#include "lib/hashmap.h"

#define OFFCPU_MAX_HELD (1u << 20)
#define OFFCPU_MAX_BYTES (256u << 20)
#define OFFCPU_MAX_THREADS 65536u
#define OFFCPU_MAX_CHAIN 4096u /* callchain entries copied, at most */

/* A switch-out: its sample, copied, and the wait it opens. */
struct wait {
	struct sample s;
	uint64_t start;   /* the wait counted from here (s.time, or the last flush) */
	bool counted;     /* partly counted by a flush: its rest counts whatever its length */
	size_t bytes;     /* of the allocation, for max_bytes */
	uint64_t buf[];   /* callchain, registers, user stack */
};

struct held {
	uint64_t time, seq;
	uint32_t pid, tid;
	struct wait *w; /* a switch-out, or NULL for a switch-in */
};

struct offcpu {
	struct offcpu_opts o;
	uint64_t regs_n;       /* user registers in a sample */
	struct held *held;
	size_t nheld, capheld;
	uint64_t seq;
	struct hashmap *open;  /* tid -> struct wait * */
	size_t bytes;
	struct offcpu_stats st;
};

struct offcpu *offcpu_new(const struct offcpu_opts *o)
{
	struct offcpu *oc;

	if (!o) {
		errno = EINVAL;
		return NULL;
	}
	oc = calloc(1, sizeof(*oc));
	if (!oc)
		return NULL;
	oc->o = *o;
	if (!oc->o.max_held)
		oc->o.max_held = OFFCPU_MAX_HELD;
	if (!oc->o.max_bytes)
		oc->o.max_bytes = OFFCPU_MAX_BYTES;
	if (!oc->o.max_threads)
		oc->o.max_threads = OFFCPU_MAX_THREADS;
	oc->regs_n = (uint64_t)__builtin_popcountll(o->regs_mask);
	oc->open = hashmap_new();
	if (!oc->open) {
		free(oc);
		errno = ENOMEM;
		return NULL;
	}
	hashmap_set_limit(oc->open, oc->o.max_threads);
	return oc;
}

static void wait_free(struct offcpu *oc, struct wait *w)
{
	if (!w)
		return;
	oc->bytes -= w->bytes;
	free(w);
}

static void free_open(void *ctx, const void *key, size_t len, uint64_t value)
{
	(void)key;
	(void)len;
	wait_free(ctx, (struct wait *)(uintptr_t)value);
}

void offcpu_free(struct offcpu *oc)
{
	if (!oc)
		return;
	for (size_t i = 0; i < oc->nheld; i++)
		wait_free(oc, oc->held[i].w);
	hashmap_foreach(oc->open, free_open, oc);
	hashmap_free(oc->open);
	free(oc->held);
	free(oc);
}

static int hold(struct offcpu *oc, uint32_t pid, uint32_t tid, uint64_t time, struct wait *w)
{
	if (oc->nheld >= oc->o.max_held || GROW_ARRAY(oc->held, oc->nheld, oc->capheld, 256) < 0) {
		oc->st.dropped++;
		return oc->nheld >= oc->o.max_held ? -ENOSPC : -ENOMEM;
	}
	oc->held[oc->nheld++] = (struct held){
		.time = time, .seq = oc->seq++, .pid = pid, .tid = tid, .w = w};
	return 0;
}

/* A copy of @s owning its callchain, registers and user stack. */
static struct wait *wait_copy(struct offcpu *oc, const struct sample *s, int *err)
{
	uint64_t nchain = s->nr_callchain < OFFCPU_MAX_CHAIN ? s->nr_callchain : OFFCPU_MAX_CHAIN;
	uint64_t nregs = s->regs ? oc->regs_n : 0;
	uint64_t stack = s->stack ? s->stack_size : 0;
	size_t words = (size_t)(nchain + nregs + (stack + 7) / 8);
	size_t bytes = sizeof(struct wait) + words * 8;
	struct wait *w;

	*err = -ENOSPC;
	if (oc->bytes + bytes > oc->o.max_bytes)
		return NULL;
	*err = -ENOMEM;
	w = malloc(bytes);
	if (!w)
		return NULL;
	w->s = *s;
	w->s.raw = NULL;
	w->s.raw_size = 0;
	w->start = s->time;
	w->counted = false;
	w->bytes = bytes;
	if (nchain)
		memcpy(w->buf, s->callchain, nchain * 8);
	w->s.callchain = nchain ? w->buf : NULL;
	w->s.nr_callchain = nchain;
	if (nregs)
		memcpy(w->buf + nchain, s->regs, nregs * 8);
	w->s.regs = nregs ? w->buf + nchain : NULL;
	if (stack)
		memcpy(w->buf + nchain + nregs, s->stack, stack);
	w->s.stack = stack ? (const uint8_t *)(w->buf + nchain + nregs) : NULL;
	w->s.stack_size = stack;
	oc->bytes += bytes;
	return w;
}

int offcpu_out(struct offcpu *oc, const struct sample *s)
{
	struct wait *w;
	int err;

	if (!oc || !s)
		return -EINVAL;
	w = wait_copy(oc, s, &err);
	if (!w) {
		oc->st.dropped++;
		return err;
	}
	err = hold(oc, s->pid, s->tid, s->time, w);
	if (err)
		wait_free(oc, w);
	return err;
}

int offcpu_in(struct offcpu *oc, uint32_t pid, uint32_t tid, uint64_t time)
{
	if (!oc)
		return -EINVAL;
	return hold(oc, pid, tid, time, NULL);
}

static int held_cmp(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Hand @ns of @w to @fn and count it. */
static void emit(struct offcpu *oc, struct wait *w, uint64_t ns, offcpu_fn fn, void *ctx)
{
	oc->st.waits++;
	oc->st.total_ns += ns;
	if (fn) {
		struct sample s = w->s;

		s.time = w->start;
		fn(ctx, &s, ns);
	}
}

/* Open @h's wait (dropping one left open: its switch-in was lost). */
static void open_wait(struct offcpu *oc, struct held *h)
{
	uint64_t *slot = hashmap_slot(oc->open, &h->tid, sizeof(h->tid));

	if (!slot) {
		oc->st.dropped++;
		wait_free(oc, h->w);
		return;
	}
	if (*slot) {
		oc->st.replaced++;
		wait_free(oc, (struct wait *)(uintptr_t)*slot);
	}
	*slot = (uint64_t)(uintptr_t)h->w;
}

/* Close @h's thread's open wait, if any. */
static void close_wait(struct offcpu *oc, const struct held *h, offcpu_fn fn, void *ctx)
{
	uint64_t v;
	struct wait *w;

	if (hashmap_remove(oc->open, &h->tid, sizeof(h->tid), &v) < 0) {
		oc->st.unmatched++;
		return;
	}
	w = (struct wait *)(uintptr_t)v;
	if (h->time >= w->start) {
		uint64_t ns = h->time - w->start;

		if (w->counted || ns >= oc->o.min_ns)
			emit(oc, w, ns, fn, ctx);
		else
			oc->st.short_waits++;
	}
	wait_free(oc, w);
}

void offcpu_pair(struct offcpu *oc, uint64_t upto, offcpu_fn fn, void *ctx)
{
	size_t i;

	if (!oc || !oc->nheld)
		return;
	qsort(oc->held, oc->nheld, sizeof(*oc->held), held_cmp);
	for (i = 0; i < oc->nheld && oc->held[i].time < upto; i++) {
		struct held *h = &oc->held[i];

		if (h->w)
			open_wait(oc, h);
		else
			close_wait(oc, h, fn, ctx);
	}
	memmove(oc->held, oc->held + i, (oc->nheld - i) * sizeof(*oc->held));
	oc->nheld -= i;
}

struct flush_ctx {
	struct offcpu *oc;
	uint64_t upto;
	offcpu_fn fn;
	void *ctx;
	bool (*alive)(uint32_t pid, uint32_t tid);
	uint32_t *gone;
	size_t ngone, capgone;
};

static void flush_one(void *arg, const void *key, size_t len, uint64_t value)
{
	struct flush_ctx *f = arg;
	struct wait *w = (struct wait *)(uintptr_t)value;
	uint32_t tid;

	memcpy(&tid, key, sizeof(tid));
	(void)len;
	if (f->alive && !f->alive(w->s.pid, tid)) {
		/* removed after the walk: the walk may not remove */
		if (GROW_ARRAY(f->gone, f->ngone, f->capgone, 16) == 0)
			f->gone[f->ngone++] = tid;
		return;
	}
	if (f->upto <= w->start || (!w->counted && f->upto - w->start < f->oc->o.min_ns))
		return;
	emit(f->oc, w, f->upto - w->start, f->fn, f->ctx);
	w->start = f->upto;
	w->counted = true;
}

size_t offcpu_flush(struct offcpu *oc, uint64_t upto, offcpu_fn fn, void *ctx,
		    bool (*alive)(uint32_t pid, uint32_t tid))
{
	struct flush_ctx f = {.oc = oc, .upto = upto, .fn = fn, .ctx = ctx, .alive = alive};

	if (!oc)
		return 0;
	hashmap_foreach(oc->open, flush_one, &f);
	for (size_t i = 0; i < f.ngone; i++) {
		uint64_t v;

		if (hashmap_remove(oc->open, &f.gone[i], sizeof(f.gone[i]), &v) == 0) {
			wait_free(oc, (struct wait *)(uintptr_t)v);
			oc->st.gone++;
		}
	}
	free(f.gone);
	return hashmap_count(oc->open);
}

void offcpu_stats(const struct offcpu *oc, struct offcpu_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!oc)
		return;
	*out = oc->st;
	out->held = oc->nheld;
	out->open = hashmap_count(oc->open);
}

struct sampler *offcpu_sampler_open(struct sampler_opts *so, struct ev_spec *ev,
				    bool *filtered)
{
	struct sampler *smp;
	int err;

	*filtered = false;
	memset(ev, 0, sizeof(*ev));
	err = ev_parse(OFFCPU_EVENT, ev_tracefs(), ev);
	if (err) {
		errno = -err;
		return NULL;
	}
	so->event = ev;
	so->base_attr = NULL;
	so->freq = 0;
	if (!so->period)
		so->period = 1; /* every block; N: one block in N */
	so->raw = false;
	so->context_switch = true;
	so->clock_monotonic = true;
	smp = sampler_open(so);
	if (!smp) {
		err = errno;
		ev_spec_release(ev);
		memset(ev, 0, sizeof(*ev));
		errno = err;
		return NULL;
	}
	/* S (1) or D (2): blocked, not preempted (R, reported as TASK_REPORT_MAX). */
	*filtered = sampler_set_filter(smp, "prev_state & 3") == 0;
	return smp;
}
