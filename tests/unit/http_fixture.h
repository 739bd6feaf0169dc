/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_TESTS_HTTP_FIXTURE_H
#define CGPERF_TESTS_HTTP_FIXTURE_H

/*
 * What test_http.c and test_http_routes.c share: the exporter's HTTP
 * service started on a free loopback port over a SQLite store in a temp
 * directory (the cmocka group setup and teardown), and a client over a
 * plain socket, so a test can send what no client library would (a lying
 * Content-Length, a chunked body past the cap, garbage). Every helper
 * fails the running test instead of returning an error.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOKEN "s3cret"
#define MAX_BODY (256u << 10)
#define NS 1000000000ull
#define RECEIVED "cgperf_exporter_batches_received_total"

/* An answer: its status, head (status line and headers) and body. */
struct resp {
	int status;
	char *head;
	char *body;
	size_t body_len;
};
void hf_resp_free(struct resp *r);

/* cmocka group setup and teardown: the store, the totals and the server. */
int hf_setup(void **state);
int hf_teardown(void **state);

/* Send @head (request line and headers, without the blank line) and
 * @body, read the answer until the server closes (Connection: close). */
struct resp hf_exchange(const char *head, const void *body, size_t len);
/* GET @path with @extra header lines (each ending in CRLF; NULL: none). */
struct resp hf_get(const char *path, const char *extra);
/* POST @body to /api/v1/push, with bearer token @auth (NULL: none). */
struct resp hf_post(const void *body, size_t len, const char *auth, const char *extra);
/* Check @r's status and that its body holds @body_has (NULL: anything);
 * frees @r. */
void hf_expect(struct resp r, int status, const char *body_has);

/* The next batch sequence number of agent-1 on host h1. */
uint64_t hf_next_seq(void);
/* A batch of the next sequence number (from second N to N + 1) with
 * @ncounters counters in one cgroup named @cg; gzip'd when @gz. */
uint8_t *hf_batch(const char *cg, size_t ncounters, bool gz, size_t *len);
/* The value of the sample line starting with @series in /metrics, or -1. */
long long hf_metric(const char *series);

#endif
