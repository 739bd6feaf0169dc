// SPDX-License-Identifier: MIT
/*
 * exporter/routes: the read routes through a real server (http_fixture.h),
 * after pushes with stacks in two cgroups. /api/v1/stacks answers folded
 * text, pprof (gzip'd by its format, so never gzip'd again, and sent as an
 * attachment) and an SVG titled by the selection; the selection (cgroup,
 * event, time span) picks the stacks; an empty selection is 404 with a
 * reason (and a flame graph saying so for SVG); bad queries are 400 with
 * the parameter named. /api/v1/targets and / list the agent and its
 * cgroups; /metrics has the server's own figures in both formats.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/http_fixture.h"
#include "tests/unit/testlib.h"
#include "wire/wire.h"

/* The span of every batch pushed here (seconds since the epoch). */
#define SPAN "from=1&to=100000"

static void push_stacks(void)
{
	static const char *const db1[] = { "postgres", "main", "exec_simple_query" };
	static const char *const db2[] = { "postgres", "main", "vacuum" };
	static const char *const web[] = { "nginx", "ngx_worker", "write_[k]" };
	uint64_t n = hf_next_seq();
	struct wire_batch *b = wire_batch_new("h1", NULL, "agent-1", "9.9", n, n * NS, n * NS + NS);
	int db, wb, pdb, pwb, mod, mods[3];
	uint8_t *buf;
	size_t len;

	assert_non_null(b);
	db = wire_add_cgroup(b, "/db", 11, NULL);
	wb = wire_add_cgroup(b, "/web", 12, NULL);
	assert_true(db >= 0 && wb >= 0);
	mod = wire_add_module(b, "/usr/lib/postgresql/15/bin/postgres", "0badc0de");
	assert_true(mod >= 0);
	mods[0] = -1;
	mods[1] = mods[2] = mod;
	pdb = wire_add_profile(b, db, "cpu-clock", 0, 100);
	pwb = wire_add_profile(b, wb, "cpu-clock", 0, 100);
	assert_true(pdb >= 0 && pwb >= 0);
	assert_int_equal(wire_add_stack_mod(b, pdb, db1, mods, 3, 30), 0);
	assert_int_equal(wire_add_stack_mod(b, pdb, db2, mods, 3, 5), 0);
	assert_int_equal(wire_add_stack(b, pwb, web, 3, 7), 0);
	assert_int_equal(wire_encode_gzip(b, &buf, &len), 0);
	wire_batch_free(b);
	hf_expect(hf_post(buf, len, TOKEN, "Content-Encoding: gzip\r\n"), 200, "stored\n");
	free(buf);
}

/* The server (hf_setup), then the stacks every case reads. */
static int group_setup(void **state)
{
	int ret = hf_setup(state);

	if (!ret)
		push_stacks();
	return ret;
}

/* GET @path: 200 with a Content-Type starting with @type (fails otherwise). */
static struct resp get_ok(const char *path, const char *extra, const char *type)
{
	struct resp r = hf_get(path, extra);
	char want[128];

	tl_pathf(want, sizeof(want), "Content-Type: %s", type);
	if (r.status != 200 || !strcasestr(r.head, want))
		fail_msg("GET %s: %d, want 200 with %s:\n%s", path, r.status, want, r.head);
	return r;
}

/* The header line @name of @r, or NULL. */
static const char *header(const struct resp *r, const char *name)
{
	const char *h = strcasestr(r->head, name);

	return h && h[strlen(name)] == ':' ? h : NULL;
}

/* GET /api/v1/stacks?SPAN@query: 200 with Content-Type @type, a body with
 * every string of @has and none of @lacks (NULL-terminated lists). */
static void expect_stacks(const char *query, const char *type, const char *const *has,
			  const char *const *lacks)
{
	char path[256];
	struct resp r;

	tl_pathf(path, sizeof(path), "/api/v1/stacks?%s%s", SPAN, query);
	r = get_ok(path, NULL, type);
	for (; *has; has++)
		if (!strstr(r.body, *has))
			fail_msg("GET %s lacks \"%s\":\n%.300s", path, *has, r.body);
	for (; lacks && *lacks; lacks++)
		if (strstr(r.body, *lacks))
			fail_msg("GET %s has \"%s\"", path, *lacks);
	hf_resp_free(&r);
}

static void test_stacks_folded(void **state)
{
	struct resp r;

	expect_stacks("&format=folded", "text/plain",
		      (const char *const[]){ "main;exec_simple_query 30\n", "main;vacuum 5\n",
					     "ngx_worker;write_[k] 7\n", NULL },
		      NULL);
	r = hf_get("/api/v1/stacks?" SPAN, NULL);
	assert_int_equal(tl_count_lines(r.body), 3);
	hf_resp_free(&r);
	/* one cgroup; the default format is folded */
	expect_stacks("&cgroup=/web", "text/plain",
		      (const char *const[]){ "ngx_worker;write_[k] 7\n", NULL },
		      (const char *const[]){ "postgres", NULL });
}

static void test_stacks_pprof(void **state)
{
	struct resp r = get_ok("/api/v1/stacks?" SPAN "&cgroup=/db&format=pprof",
			       "Accept-Encoding: gzip\r\n", "application/octet-stream");

	assert_non_null(strstr(r.head, "attachment; filename=\"cgperf.pb.gz\""));
	/* the profile is gzip'd by its format: no Content-Encoding on top */
	assert_null(header(&r, "Content-Encoding"));
	assert_true(r.body_len > 20);
	assert_true((uint8_t)r.body[0] == 0x1f && (uint8_t)r.body[1] == 0x8b);
	hf_resp_free(&r);
}

static void test_stacks_svg(void **state)
{
	expect_stacks("&cgroup=/db&format=svg", "image/svg+xml",
		      (const char *const[]){ "<svg", "cgperf: cgroup=/db", "exec_simple_query", NULL },
		      (const char *const[]){ "ngx_worker", NULL });
}

/* Nothing selected: 404 with a reason; SVG still draws, saying so. */
static void test_stacks_empty(void **state)
{
	struct resp r;

	hf_expect(hf_get("/api/v1/stacks?" SPAN "&cgroup=/none", NULL), 404, "no samples");
	hf_expect(hf_get("/api/v1/stacks?" SPAN "&event=task-clock&format=pprof", NULL), 404,
		  "no samples");
	/* the default span is the last hour: these batches are from 1970 */
	hf_expect(hf_get("/api/v1/stacks", NULL), 404, "no samples");
	r = hf_get("/api/v1/stacks?" SPAN "&host=other&format=svg", NULL);
	assert_int_equal(r.status, 404);
	assert_non_null(strcasestr(r.head, "Content-Type: image/svg+xml"));
	assert_non_null(strstr(r.body, "no samples in this selection"));
	assert_non_null(strstr(r.body, "cgperf: host=other"));
	hf_resp_free(&r);
}

/* GET /api/v1/stacks?@query: 400 with @says in the answer. */
static void bad_query(const char *query, const char *says)
{
	char path[256];

	tl_pathf(path, sizeof(path), "/api/v1/stacks?%s", query);
	hf_expect(hf_get(path, NULL), 400, says);
}

/* Bad queries: 400 naming the parameter, before the store is asked. */
static void test_stacks_bad_query(void **state)
{
	char head[5100];

	bad_query("to=teatime", "to: 'teatime' is not a time");
	bad_query("from=soon", "from: 'soon' is not a time");
	bad_query("from=200&to=100", "from is not before to");
	bad_query("from=100&to=100", "from is not before to");
	bad_query("format=PPROF", "want folded, pprof, svg or json");
	/* a parameter over the cap (4096 bytes) */
	memcpy(head, "GET /api/v1/stacks?host=", 24);
	memset(head + 24, 'h', 5000);
	memcpy(head + 5024, " HTTP/1.1\r\nHost: x\r\n", 21);
	hf_expect(hf_exchange(head, NULL, 0), 400, "host: longer than 4096 bytes");
}

static void test_targets(void **state)
{
	struct resp r;

	r = get_ok("/api/v1/targets", NULL, "application/json");
	assert_non_null(strstr(r.body, "\"agent-1\""));
	assert_non_null(strstr(r.body, "\"/db\""));
	assert_non_null(strstr(r.body, "\"/web\""));
	hf_resp_free(&r);
	r = get_ok("/index", NULL, "text/html");
	assert_non_null(strstr(r.body, "/db"));
	hf_resp_free(&r);
}

/* The explorer page and its assets: CSP, ETag and 304, gzip as built. */
static void test_ui_page(void **state)
{
	struct resp r = get_ok("/?view=flame&host=a", NULL, "text/html");
	char inm[160];
	const char *etag;
	const char *v;

	assert_non_null(strstr(r.body, "src=\"/ui/app.js\""));
	assert_non_null(strcasestr(r.head, "Content-Security-Policy: default-src 'none'; script-src 'self';"));
	hf_resp_free(&r);
	r = get_ok("/ui/app.js", NULL, "text/javascript");
	etag = header(&r, "ETag");
	assert_non_null(etag);
	for (v = etag + 5; *v == ' ';)
		v++;
	tl_pathf(inm, sizeof(inm), "If-None-Match: %.*s\r\n", (int)strcspn(v, "\r\n"), v);
	hf_resp_free(&r);
	hf_expect(hf_get("/ui/app.js", inm), 304, NULL);
	r = hf_get("/ui/uPlot.esm.js", "Accept-Encoding: gzip\r\n");
	assert_int_equal(r.status, 200);
	assert_non_null(strcasestr(r.head, "Content-Encoding: gzip"));
	assert_true(r.body_len > 2 && (uint8_t)r.body[0] == 0x1f && (uint8_t)r.body[1] == 0x8b);
	hf_resp_free(&r);
	hf_expect(hf_get("/ui/no-such.js", NULL), 404, "no such asset");
	hf_expect(hf_get("/ui/.hidden", NULL), 404, NULL);
	hf_expect(hf_exchange("POST / HTTP/1.1\r\nContent-Length: 0\r\n", NULL, 0), 405, "GET");
}

/* The server's own figures, in the text format and in OpenMetrics. */
static void test_metrics_self(void **state)
{
	static const char *const gauges[] = { "cgperf_exporter_connections",
					      "cgperf_exporter_ingest_queue",
					      "cgperf_exporter_connection_limit",
					      "cgperf_exporter_store_size_bytes" };
	struct resp r = get_ok("/metrics", NULL, "text/plain; version=0.0.4");

	for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
		char want[128];

		tl_pathf(want, sizeof(want), "# TYPE %s gauge\n%s ", gauges[i], gauges[i]);
		if (!strstr(r.body, want))
			fail_msg("/metrics lacks %s", gauges[i]);
	}
	assert_null(strstr(r.body, "# EOF"));
	hf_resp_free(&r);
	assert_true(hf_metric("cgperf_exporter_connections") >= 1);
	r = hf_get("/metrics", "Accept: application/openmetrics-text; version=1.0.0\r\n");
	assert_non_null(strcasestr(r.head, "Content-Type: application/openmetrics-text"));
	assert_non_null(strstr(r.body, "# TYPE cgperf_exporter_stack_rows counter\n"));
	assert_int_equal(strcmp(r.body + r.body_len - 6, "# EOF\n"), 0);
	hf_resp_free(&r);
}

TL_MAIN_GROUP(group_setup, hf_teardown, test_ui_page, test_stacks_folded, test_stacks_pprof,
	test_stacks_svg, test_stacks_empty, test_stacks_bad_query, test_targets, test_metrics_self)
