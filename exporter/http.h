/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_HTTP_H
#define CGPERF_EXPORTER_HTTP_H

/*
 * The exporter's HTTP service (libmicrohttpd, a small thread pool):
 *   POST /api/v1/push  a batch (protobuf, gzip'd or not): 401 without the
 *                      bearer token, 413 over the body cap, 400 with the
 *                      reason when it does not decode, 200 once stored (or
 *                      when it was stored before)
 *   GET /metrics       Prometheus text 0.0.4
 *   GET /healthz       "ok"
 * The store and the totals are used under one lock; the server owns
 * neither.
 */

#include <stddef.h>

struct store;
struct totals;
struct http;

struct http_config {
	const char *listen;  /* HOST:PORT, [V6]:PORT or :PORT */
	const char *token;   /* NULL: no authentication */
	size_t max_body;     /* bytes, > 0 */
	struct store *store;
	struct totals *totals;
};

/* Start serving. NULL + errno, reason in @err. */
struct http *http_start(const struct http_config *cfg, char *err, size_t errlen);
/* Stop serving (waits for requests in flight); NULL is fine. */
void http_stop(struct http *h);

#endif
