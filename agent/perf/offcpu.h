/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_OFFCPU_H
#define CGPERF_AGENT_OFFCPU_H

/*
 * Off-CPU time: pairing a thread's switch-out (the sched:sched_switch sample
 * taken as it blocked, with its stack) with its next switch-in (a
 * PERF_RECORD_SWITCH record), into "this stack waited N ns". The events, the
 * sampler options and the reasons for them are in the design note of
 * offcpu.c; this module only pairs, and owns copies of the samples it holds.
 *
 * Switches come out of per-CPU rings, one ring after the other, and a thread
 * that blocked on one CPU often wakes on another. So every event is held and
 * paired only once all rings have been drained past an instant (@upto of
 * offcpu_pair()), in time order.
 *
 * Not thread-safe. Times are nanoseconds of one clock (the sampler's
 * clock_monotonic).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/perf/sampler.h"

struct offcpu;

struct offcpu_opts {
	uint64_t min_ns;      /* waits shorter than this are not counted (0: all) */
	size_t max_held;      /* events held for pairing at once (0: 1 << 20) */
	size_t max_bytes;     /* bytes of sample copies held at once (0: 256 MiB) */
	size_t max_threads;   /* threads off CPU tracked at once (0: 65536) */
	uint64_t regs_mask;   /* the sampler's sample_regs_user (registers copied) */
};

/* NULL + errno (EINVAL, ENOMEM). */
struct offcpu *offcpu_new(const struct offcpu_opts *o);
void offcpu_free(struct offcpu *oc);

/*
 * Hold a switch-out: @s is the sample taken as its thread blocked (its
 * callchain, registers and user stack are copied; raw data is not kept).
 * 0, -ENOSPC past max_held/max_bytes (counted in dropped), -ENOMEM.
 */
int offcpu_out(struct offcpu *oc, const struct sample *s);
/* Hold a switch-in of @tid at @time. 0, -ENOSPC, -ENOMEM. */
int offcpu_in(struct offcpu *oc, uint32_t pid, uint32_t tid, uint64_t time);

/*
 * A wait that ended (or was cut by offcpu_flush()): @s is the switch-out
 * sample (valid during the call only; s->time is when the wait began, or
 * when the last flush counted it up to), @ns the time off CPU counted now.
 */
typedef void (*offcpu_fn)(void *ctx, const struct sample *s, uint64_t ns);

/*
 * Pair every held event older than @upto (UINT64_MAX: all) in time order:
 * a switch-out opens its thread's wait (one still open is dropped: its
 * switch-in was lost, counted in stats.replaced); a switch-in closes it,
 * and @fn gets the wait when it lasted at least min_ns (or was partly
 * counted by a flush already). A switch-in without an open wait (a
 * preemption, or a wait that began before the events were enabled) is
 * counted in stats.unmatched and otherwise ignored.
 */
void offcpu_pair(struct offcpu *oc, uint64_t upto, offcpu_fn fn, void *ctx);

/*
 * Count the waits still open at @upto (call offcpu_pair(@upto) first):
 * each one that has lasted min_ns (or was flushed before) goes to @fn with
 * the time from its start (or the last flush) to @upto, and restarts at
 * @upto, so that a thread asleep across several intervals is counted in
 * each, and once. With @alive (may be NULL), a wait whose thread
 * @alive(pid, tid) says is gone is dropped instead (its switch-in record
 * was lost). Returns the number of waits still open.
 */
size_t offcpu_flush(struct offcpu *oc, uint64_t upto, offcpu_fn fn, void *ctx,
		    bool (*alive)(uint32_t pid, uint32_t tid));

struct offcpu_stats {
	uint64_t waits;     /* waits counted (each flush of an open one too) */
	uint64_t short_waits; /* ended under min_ns */
	uint64_t total_ns;  /* time handed to the callback */
	uint64_t unmatched; /* switch-ins with no open wait */
	uint64_t replaced;  /* open waits dropped by a newer switch-out */
	uint64_t dropped;   /* events refused: caps reached */
	uint64_t gone;      /* open waits dropped at a flush: thread gone */
	size_t held;        /* events held now */
	size_t open;        /* threads off CPU now */
};
void offcpu_stats(const struct offcpu *oc, struct offcpu_stats *out);

/* How far before the start of a drain of every ring offcpu_pair()'s @upto
 * is taken: records are published a few microseconds after their time. */
#define OFFCPU_SLACK_NS 5000000ull

/* The tracepoint whose samples are the switch-outs. */
#define OFFCPU_EVENT "sched:sched_switch"
/* The event name of off-CPU profiles on the wire (counts in microseconds). */
#define OFFCPU_PROFILE_EVENT "off-cpu"

/*
 * Open the off-CPU events over @so's targets (cpus, cgroup_dirs or pid) and
 * stack options (callchain, user_stack, stack_bytes, regs_mask, max_stack,
 * mmap_pages, cgroups_later): @so's event, freq, raw, context_switch and
 * clock_monotonic are set here, the period to 1 unless @so has one (N:
 * the kernel stacks one block in N, after the filter), @ev is resolved (release it with
 * ev_spec_release() after sampler_close()). *@filtered tells whether the
 * kernel took the filter that keeps blocked switch-outs only (else every
 * switch-out is a wait, preemptions too). NULL + errno as sampler_open()
 * (ENOENT: no sched:sched_switch here, e.g. tracefs missing).
 */
struct ev_spec;
struct sampler *offcpu_sampler_open(struct sampler_opts *so, struct ev_spec *ev,
				    bool *filtered);

#endif
