/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_HTTP_H
#define CGPERF_EXPORTER_HTTP_H

/*
 * The exporter's HTTP service (libmicrohttpd: a few epoll loops holding
 * thousands of connections, a store thread and reader threads for the
 * slow work, see http.c):
 *   POST /api/v1/push  a batch (protobuf, gzip'd or not): 401 without the
 *                      bearer token, 413 over the body cap, 400 with the
 *                      reason when it does not decode, 200 once stored (or
 *                      when it was stored before)
 *   GET /metrics       Prometheus text 0.0.4, or OpenMetrics 1.0.0 when
 *                      the Accept header asks for it
 *   GET /api/v1/stacks folded stacks, pprof or an SVG flame graph of a
 *                      selection (host, cgroup, container, pod, event,
 *                      from, to)
 *   GET /api/v1/targets agents and cgroups known (JSON)
 *   GET /              the explorer page, GET /ui/NAME its assets (ui.h)
 *   GET /index         an index page with links
 *   GET /healthz       "ok"
 * The server owns neither the store nor the totals. It orders the two:
 * batches reach the totals in the order the store committed them, and
 * the totals' lock is never held across a commit's fsync.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Connections held at once by default: a fleet of kept-alive agents. */
#define HTTP_CONNECTIONS_DEFAULT 16384u
/* Idle connections closed after this long by default: longer than any usual
 * push interval, so a pushing agent keeps its connection. */
#define HTTP_IDLE_TIMEOUT_DEFAULT_S 120u

/* Pushes decoded and waiting for the store thread, at most, by default;
 * past it a push is answered 503 with Retry-After. The bound of the
 * setting. */
#define HTTP_INGEST_QUEUE_DEFAULT 4096u
#define HTTP_INGEST_QUEUE_MAX 1000000u

struct store;
struct totals;
struct http;
struct page;

struct http_config {
	const char *listen;        /* HOST:PORT, [V6]:PORT or :PORT */
	const char *token;         /* NULL: no authentication */
	size_t max_body;           /* bytes, > 0 */
	uint64_t series_expiry_ns; /* > 0 */
	size_t max_series;         /* entries the totals may hold; 0: TOTALS_ENTRIES_MAX_DEFAULT */
	size_t max_series_bytes;   /* bytes they may take; 0: TOTALS_BYTES_MAX_DEFAULT */
	size_t max_connections;    /* open at once; 0: HTTP_CONNECTIONS_DEFAULT */
	unsigned idle_timeout_s;   /* a connection idle this long is closed; 0: default */
	size_t ingest_queue;       /* pushes waiting for the store; 0: HTTP_INGEST_QUEUE_DEFAULT */
	const char *ui_dir;        /* --ui-dir: the page's files read from here first; NULL: built-in */
	struct store *store;
	struct totals *totals;
	/* More of the exporter's own metrics for /metrics (remote_write's), or NULL. */
	void (*extra_metrics)(void *arg, struct page *p, bool openmetrics);
	void *extra_arg;
};

/* Start serving. NULL + errno, reason in @err. */
struct http *http_start(const struct http_config *cfg, char *err, size_t errlen);
/* Stop serving (answers requests queued, waits for those in flight);
 * NULL is fine. */
void http_stop(struct http *h);

/* Forget series last seen before @now_ns - series_expiry, in the store
 * and in the totals, ordered with ingest. 0 or -errno. */
int http_expire(struct http *h, uint64_t now_ns);

/* The cgroup, probe and agent series of /metrics (text format 0.0.4, no
 * exporter or process metrics) into @p, under the totals' lock: what
 * remote_write sends. 0 (a failed append shows in page_failed()). */
int http_render_totals(struct http *h, struct page *p);

/* Wall-clock now, in Unix ns. */
uint64_t http_now_ns(void);

#endif
