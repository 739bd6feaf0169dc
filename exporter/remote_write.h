/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_REMOTE_WRITE_H
#define CGPERF_EXPORTER_REMOTE_WRITE_H

/*
 * remote_write: every interval, the exporter's /metrics series of cgroups,
 * probes and agents (what a snapshot callback writes, as exposition text)
 * go to one or more Prometheus remote_write 1.0 receivers (Prometheus with
 * --web.enable-remote-write-receiver, VictoriaMetrics, Mimir, Thanos
 * receive), encoded by exporter/rw_encode.h with the labels instance and
 * job added.
 *
 * Each URL has a sender thread and a bounded queue of encoded requests
 * (oldest first). A 2xx is sent; 5xx, 429, 408 and transport errors are
 * retried after a backoff (full jitter, doubling from 500 ms to 5 s, at
 * least the Retry-After of a 429/503), the request staying at the head of
 * the queue; any other 4xx drops the request (counted). When the queue is
 * full, the oldest request is dropped (counted) for the new one: the newest
 * totals matter most, and the counters being totals, a later sample stands
 * in for a lost one.
 *
 * rw_render() writes the module's own metrics for /metrics. Nothing here
 * prints; problems go to lib/log.h, once per change of a URL's state.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter/page.h"

struct rw;

struct rw_opts {
	const char *const *urls; /* 1.. URLs */
	size_t nurls;
	const char *bearer_token; /* or NULL */
	const char *basic_user, *basic_password; /* or NULL */
	const char *instance; /* the instance label's value */
	uint64_t interval_ms; /* > 0 */
	size_t queue_max; /* requests per URL; > 0 */
	unsigned timeout_ms; /* per request; 0: 10 s */
	unsigned retry_initial_ms, retry_max_ms; /* 0: 500 ms and 5 s */
};

/*
 * Writes into @p the text to send (the exporter renders its totals there).
 * 0, or a -errno that skips this round. Called from the module's thread.
 */
typedef int rw_snapshot_fn(void *arg, struct page *p);

/* NULL + errno (EINVAL: bad options or URL; ENOMEM). Sends nothing yet. */
struct rw *rw_new(const struct rw_opts *o);
/* Start the threads: the first snapshot at once, then every interval.
 * 0 or -errno. */
int rw_start(struct rw *rw, rw_snapshot_fn *snap, void *arg);
/* Take one snapshot now, before the next interval (also before rw_start,
 * for tests). 0 or -errno. */
int rw_snapshot_now(struct rw *rw, rw_snapshot_fn *snap, void *arg);
/* Stop (a request in flight is interrupted; what is queued is dropped). */
void rw_free(struct rw *rw);

/* The module's metrics, exposition text (OpenMetrics with @om). */
void rw_render(struct rw *rw, struct page *p, bool om);

#endif
