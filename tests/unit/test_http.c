// SPDX-License-Identifier: MIT
/*
 * exporter/http: the push handler and the answers, through a real server
 * (http_fixture.h). Each case is request -> status and body; the pushes
 * that must be refused are followed by a check that nothing accepted was
 * lost. The read routes' answers are in test_http_routes.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/hist.h"
#include "lib/log.h"
#include "wire/wire.h"
#include "exporter/http.h"
#include "exporter/store/store.h"
#include "exporter/totals.h"
#include "tests/unit/http_fixture.h"
#include "tests/unit/testlib.h"

static void test_routes(void **state)
{
	hf_expect(hf_get("/healthz", NULL), 200, "ok\n");
	hf_expect(hf_get("/nope", NULL), 404, "not found");
	hf_expect(hf_exchange("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n", NULL, 0), 405, "GET");
	hf_expect(hf_get("/api/v1/push", NULL), 405, "POST");
	hf_expect(hf_get("/", NULL), 200, NULL);
	hf_expect(hf_get("/api/v1/stacks?format=png", NULL), 400, "want folded, pprof, svg or json");
	hf_expect(hf_get("/api/v1/stacks?from=yesterday-ish", NULL), 400, NULL);
	hf_expect(hf_get("/api/v1/heatmap", NULL), 400, "probe");
	hf_expect(hf_get("/api/v1/heatmap?probe=p&format=png", NULL), 400, "want svg or json");
	hf_expect(hf_get("/api/v1/heatmap?probe=no:such", NULL), 404, "no latency histograms");
}

static void test_push_and_duplicate(void **state)
{
	long long before = hf_metric(RECEIVED);
	size_t len;
	uint8_t *b = hf_batch("/web", 3, false, &len);

	hf_expect(hf_post(b, len, TOKEN, NULL), 200, "stored\n");
	hf_expect(hf_post(b, len, TOKEN, NULL), 200, "duplicate\n");
	free(b);
	assert_int_equal(hf_metric(RECEIVED), before + 1);
	assert_true(hf_metric("cgperf_exporter_batches_duplicate_total") >= 1);
	assert_true(hf_metric("cgperf_cgroup_perf_events_total{host=\"h1\",id=\"/web\",container=\"\","
			   "container_name=\"\",pod=\"\",pod_name=\"\",namespace=\"\",unit=\"\","
			   "runtime=\"\",event=\"ev-0\"}") >= 1000);
}

static void test_gzip_body(void **state)
{
	long long before = hf_metric(RECEIVED);
	size_t len;
	uint8_t *b = hf_batch("/gz", 5, true, &len);

	assert_true(len > 2 && b[0] == 0x1f && b[1] == 0x8b);
	hf_expect(hf_post(b, len, TOKEN, "Content-Encoding: gzip\r\n"), 200, "stored\n");
	free(b);
	assert_int_equal(hf_metric(RECEIVED), before + 1);
}

/* Refusals cost nothing stored: the count of received batches moves only
 * with the good push that follows them, and the reject counters say why. */
static void test_bad_input(void **state)
{
	static const char garbage[] = "\x08\x96\x01 this is not a batch \xff\xff\xff\xff";
	long long before = hf_metric(RECEIVED);
	long long bad = hf_metric("cgperf_exporter_rejects_total{reason=\"bad_request\"}");
	long long auth = hf_metric("cgperf_exporter_rejects_total{reason=\"auth\"}");
	uint8_t gz_junk[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3 };
	size_t len;
	uint8_t *b = hf_batch("/ok", 2, false, &len);

	hf_expect(hf_post(garbage, sizeof(garbage) - 1, TOKEN, NULL), 400, NULL);
	hf_expect(hf_post(gz_junk, sizeof(gz_junk), TOKEN, NULL), 400, "gzip");
	hf_expect(hf_post("", 0, TOKEN, NULL), 400, "empty body");
	hf_expect(hf_post(b, len, NULL, NULL), 401, "bearer token");
	hf_expect(hf_post(b, len, "wrong", NULL), 401, "bearer token");
	hf_expect(hf_post(b, len - 3, TOKEN, NULL), 400, NULL); /* cut short */
	assert_int_equal(hf_metric(RECEIVED), before);
	assert_int_equal(hf_metric("cgperf_exporter_rejects_total{reason=\"bad_request\"}"), bad + 4);
	assert_int_equal(hf_metric("cgperf_exporter_rejects_total{reason=\"auth\"}"), auth + 2);
	hf_expect(hf_post(b, len, TOKEN, NULL), 200, "stored\n");
	free(b);
	assert_int_equal(hf_metric(RECEIVED), before + 1);
}

static void test_big_bodies(void **state)
{
	long long before = hf_metric(RECEIVED);
	long long large = hf_metric("cgperf_exporter_rejects_total{reason=\"too_large\"}");
	size_t len, big = MAX_BODY + 4096;
	uint8_t *b = hf_batch("/big", 4000, false, &len), *huge = calloc(1, big);
	char head[256], chunk[32];
	struct resp r;

	/* just under the cap, plain */
	assert_true(len > MAX_BODY / 4 && len < MAX_BODY);
	hf_expect(hf_post(b, len, TOKEN, NULL), 200, "stored\n");
	free(b);
	/* Content-Length over the cap: refused from the headers */
	assert_non_null(huge);
	hf_expect(hf_post(huge, big, TOKEN, NULL), 413, "too large");
	/* no Content-Length (chunked): refused once the body passes the cap */
	snprintf(head, sizeof(head),
		 "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TOKEN "\r\n"
		 "Transfer-Encoding: chunked\r\n");
	snprintf(chunk, sizeof(chunk), "%zx\r\n", big);
	{
		size_t n = strlen(chunk) + big + 7;
		char *body = malloc(n);

		assert_non_null(body);
		memcpy(body, chunk, strlen(chunk));
		memset(body + strlen(chunk), 'x', big);
		memcpy(body + strlen(chunk) + big, "\r\n0\r\n\r\n", 7);
		r = hf_exchange(head, body, n);
		free(body);
	}
	hf_expect(r, 413, "too large");
	/* a gzip bomb: small on the wire, over the cap inflated */
	{
		size_t zl;
		uint8_t *z = tl_gzip(huge, big, &zl);

		hf_expect(hf_post(z, zl, TOKEN, NULL), 413, "exceeds");
		free(z);
	}
	free(huge);
	assert_int_equal(hf_metric(RECEIVED), before + 1);
	assert_int_equal(hf_metric("cgperf_exporter_rejects_total{reason=\"too_large\"}"), large + 3);
}

/* Read routes answer gzip'd when asked, plain otherwise. */
static void test_gzip_answers(void **state)
{
	struct resp r = hf_get("/metrics", "Accept-Encoding: gzip\r\n");
	char out[1 << 16];
	z_stream s = { 0 };

	assert_int_equal(r.status, 200);
	assert_non_null(strcasestr(r.head, "Content-Encoding: gzip"));
	assert_non_null(strcasestr(r.head, "Vary: Accept-Encoding"));
	assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
	s.next_in = (Bytef *)r.body;
	s.avail_in = (uInt)r.body_len;
	s.next_out = (Bytef *)out;
	s.avail_out = sizeof(out) - 1;
	assert_true(inflate(&s, Z_FINISH) == Z_STREAM_END || s.avail_out == 0);
	out[sizeof(out) - 1 - s.avail_out] = '\0';
	inflateEnd(&s);
	assert_non_null(strstr(out, "# TYPE cgperf_exporter_series gauge"));
	hf_resp_free(&r);
	r = hf_get("/metrics", "Accept-Encoding: gzip;q=0, identity\r\n");
	assert_null(strcasestr(r.head, "Content-Encoding: gzip"));
	assert_non_null(strstr(r.body, "# TYPE cgperf_exporter_series gauge"));
	hf_resp_free(&r);
	r = hf_get("/metrics", "Accept: application/openmetrics-text; version=1.0.0\r\n");
	assert_non_null(strstr(r.body, "# TYPE cgperf_exporter_batches_received counter\n"));
	assert_non_null(strstr(r.body, "# EOF\n"));
	hf_resp_free(&r);
}

/* A cgroup name with a quote, a newline and a backslash: escaped as a
 * label in /metrics and as a JSON string in /api/v1/targets. */
static void test_hostile_names(void **state)
{
	size_t len;
	uint8_t *b = hf_batch("/we\"ird\nname\\", 1, false, &len);
	struct resp r;

	hf_expect(hf_post(b, len, TOKEN, NULL), 200, "stored\n");
	free(b);
	r = hf_get("/metrics", NULL);
	assert_non_null(strstr(r.body, "id=\"/we\\\"ird\\nname\\\\\""));
	hf_resp_free(&r);
	r = hf_get("/api/v1/targets", NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"/we\\\"ird\\nname\\\\\""));
	hf_resp_free(&r);
}

/* Three pushed intervals with latency histograms of one probe: a heat map
 * of three columns, the buckets as rows, as JSON and SVG. */
static void test_heatmap(void **state)
{
	for (int i = 0; i < 3; i++) {
		uint64_t n = hf_next_seq();
		struct wire_batch *b = wire_batch_new("h1", NULL, "agent-1", "9.9", n, n * NS,
						      n * NS + NS);
		struct hist l = {0};
		uint8_t *buf;
		size_t len;
		int c = wire_add_cgroup(b, "/heat", 8, NULL);

		for (int k = 0; k <= i; k++)
			hist_add(&l, 1500); /* bucket [1024, 2047] */
		hist_add(&l, 100000);
		assert_int_equal(wire_add_probe(b, c, "lat:p", 10, NULL, &l), 0);
		assert_int_equal(wire_encode(b, &buf, &len), 0);
		wire_batch_free(b);
		hf_expect(hf_post(buf, len, TOKEN, NULL), 200, "stored\n");
		free(buf);
	}
	hf_expect(hf_get("/api/v1/heatmap?probe=lat:p&cgroup=/heat&from=0&format=json", NULL), 200,
		  "\"columns\":3,\"total\":9,\"cells\":[{\"column\":0,\"ge\":1024,\"le\":2047,"
		  "\"count\":1},{\"column\":0,\"ge\":65536,\"le\":131071,\"count\":1},"
		  "{\"column\":1,\"ge\":1024,\"le\":2047,\"count\":2}");
	hf_expect(hf_get("/api/v1/heatmap?probe=lat:p&from=0", NULL), 200, "class=\"cell\"");
	hf_expect(hf_get("/api/v1/heatmap?probe=lat:p&cgroup=/other&from=0", NULL), 404, NULL);
}

TL_MAIN_GROUP(hf_setup, hf_teardown, test_routes, test_push_and_duplicate, test_gzip_body,
	test_bad_input, test_big_bodies, test_gzip_answers, test_hostile_names, test_heatmap)
