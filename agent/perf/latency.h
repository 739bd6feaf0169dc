/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_LATENCY_H
#define CGPERF_AGENT_LATENCY_H

/*
 * Latency between two probe hits: on one thread (trace --latency, the run
 * config's latency_end: entry to return, query__start to query__done), or
 * keyed by values of the hits (trace --key, latency_key: a block request's
 * dev and sector, from block_rq_issue to block_rq_complete, whose
 * completion runs in interrupt context on any CPU and thread).
 *
 * Hits come out of per-CPU rings, one ring at a time, so a start read from
 * CPU 1's ring may be older than an end already read from CPU 0's. Endpoints
 * are therefore held here and paired only once every ring has been drained
 * past an instant (latency_pair's @upto), in time order.
 *
 * By thread: a start opens its thread's interval for its pair (replacing an
 * older open one, as a recursive call would); an end closes the latest open
 * start of its thread. The interval is reported with the end's cgroup/pid.
 *
 * By key: a start becomes pending under (pair, key); an end takes the
 * pending start of its key, and the interval is reported with the START's
 * cgroup and pid (the end's context says nothing of who asked). A start
 * whose key is already pending replaces it (the older one is counted as
 * replaced: a request the kernel re-issued, or a lost completion). Pending
 * starts are bounded: older than the timeout (measured against the newest
 * endpoint paired) they are dropped and counted as timed out; past
 * max_pending new ones are refused and counted as dropped. Ends with no
 * pending start are unpaired (also those of starts outside the selection).
 *
 * A "pair" is the caller's number for one (start probe, end probe) couple;
 * a probe that ends several couples adds one end per pair.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a caller subtracts from its drain instant before pairing: a hit
 * is stamped before it is written to its ring, so one stamped just before
 * the instant may only show up in the next drain. */
#define LATENCY_SLACK_NS 200000000ull

/* At most this many 64-bit key values (fields) per keyed endpoint. */
#define LATENCY_KEY_MAX 3
#define LATENCY_DEFAULT_TIMEOUT_NS 10000000000ull
#define LATENCY_DEFAULT_MAX_PENDING 65536

struct latency;

/* Hold at most @max_held endpoints (further ones are refused); keyed
 * starts wait LATENCY_DEFAULT_TIMEOUT_NS, at most
 * LATENCY_DEFAULT_MAX_PENDING of them. NULL on ENOMEM. */
struct latency *latency_new(size_t max_held);
void latency_free(struct latency *l);

struct fold;

/* The cell of @key (@klen bytes) in a caller's table of *@n cells of @size
 * bytes at *@v (capacity *@cap, grown as lib/grow.h does), indexed by the
 * fold @idx whose slots hold index + 1: trace's and run's cells per probe,
 * cgroup (and pid). A new key appends a zeroed cell and sets *@fresh, for
 * the caller to fill in its key fields. NULL with errno ENOSPC when @idx
 * refuses the key (its cap), ENOMEM when memory runs out. */
void *latency_cell(struct fold *idx, const void *key, size_t klen, void **v, size_t *n, size_t *cap,
		   size_t size, bool *fresh);

/* Bounds of keyed pending starts: @timeout_ns (0: never time out) and
 * @max_pending (0: the default). */
void latency_set_bounds(struct latency *l, uint64_t timeout_ns, size_t max_pending);

/* Hold one endpoint of @pair at @time (ns) on thread @tid of @pid in @cgroup.
 * 0, -ENOSPC past max_held, or -ENOMEM. */
int latency_add(struct latency *l, uint32_t pair, bool end, uint64_t time, uint64_t cgroup,
		uint32_t pid, uint32_t tid);

/* The same for a keyed pair: @nkey (1..LATENCY_KEY_MAX) values at @key
 * instead of the thread. -EINVAL for a bad @nkey. */
int latency_add_key(struct latency *l, uint32_t pair, bool end, uint64_t time, uint64_t cgroup,
		    uint32_t pid, const uint64_t *key, size_t nkey);

/* Called for each interval closed: @ns from start to end, ending at
 * @end_time, with the cgroup and pid that own it (see above). */
typedef void (*latency_fn)(void *ctx, uint32_t pair, uint64_t cgroup, uint32_t pid,
			   uint64_t end_time, uint64_t ns);

/*
 * Pair the held endpoints older than @upto (every one with UINT64_MAX) in
 * time order, calling @fn per interval; then time out keyed starts (not
 * with UINT64_MAX: what is left then is pending). Returns the number of
 * ends that found no open start of their thread or key.
 */
uint64_t latency_pair(struct latency *l, uint64_t upto, latency_fn fn, void *ctx);

/* Endpoints held now, waiting for their instant. */
size_t latency_held(const struct latency *l);

/* What pairing left over, since latency_new(). */
struct latency_stats {
	uint64_t paired;       /* intervals reported */
	uint64_t unpaired_end; /* ends with no open start (thread or key) */
	uint64_t timed_out;    /* keyed starts dropped after the timeout */
	uint64_t dropped;      /* keyed starts refused: max_pending were waiting */
	uint64_t replaced;     /* keyed starts replaced by a newer start of their key */
	uint64_t pending;      /* keyed starts waiting now */
	uint64_t late;         /* endpoints older than an instant already paired up to
				* (reached their ring later than LATENCY_SLACK_NS) */
};
void latency_stats(const struct latency *l, struct latency_stats *out);

#endif
