/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_LATENCY_H
#define CGPERF_AGENT_LATENCY_H

/*
 * Latency between two probe hits on one thread (trace --latency, the run
 * config's latency_end): entry to return, query__start to query__done.
 *
 * Hits come out of per-CPU rings, one ring at a time, so a start read from
 * CPU 1's ring may be older than an end already read from CPU 0's. Endpoints
 * are therefore held here and paired only once every ring has been drained
 * past an instant (latency_pair's @upto), in time order: a start opens its
 * thread's interval for its pair (replacing an older open one, as a
 * recursive call would); an end closes the latest open start of its thread.
 *
 * A "pair" is the caller's number for one (start probe, end probe) couple;
 * a probe that ends several couples adds one end per pair.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct latency;

/* Hold at most @max_held endpoints (further ones are refused). NULL on ENOMEM. */
struct latency *latency_new(size_t max_held);
void latency_free(struct latency *l);

/* Hold one endpoint of @pair at @time (ns) on thread @tid of @pid in @cgroup.
 * 0, -ENOSPC past max_held, or -ENOMEM. */
int latency_add(struct latency *l, uint32_t pair, bool end, uint64_t time, uint64_t cgroup,
		uint32_t pid, uint32_t tid);

/* Called for each interval closed: @ns from start to end, with the end's
 * cgroup and pid. */
typedef void (*latency_fn)(void *ctx, uint32_t pair, uint64_t cgroup, uint32_t pid, uint64_t ns);

/*
 * Pair the held endpoints older than @upto (every one with UINT64_MAX) in
 * time order, calling @fn per interval. Returns the number of ends that
 * found no open start of their thread (or one later than them).
 */
uint64_t latency_pair(struct latency *l, uint64_t upto, latency_fn fn, void *ctx);

/* Endpoints held now, waiting for their instant. */
size_t latency_held(const struct latency *l);

#endif
