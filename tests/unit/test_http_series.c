// SPDX-License-Identifier: MIT
/*
 * GET /api/v1/series through a real server over the SQLite store
 * (http_fixture.h), after pushes of counters in three cgroups of host
 * "hs" (one of them named with quotes, a backslash, a newline, a control
 * character and a byte that is not UTF-8): the steps' sums of two cgroups
 * over several batches, per second and as increases; the sum of the
 * increases over a range equals the /metrics counter's increase over the
 * same pushes (task-clock, and cpu in seconds); the top N by sum, largest
 * first; bad steps, tops and rates answered 400 with the reason; an empty
 * selection answered as an empty matrix; hostile names as valid JSON.
 * The answers are parsed with json-c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/http_fixture.h"
#include "tests/unit/testlib.h"
#include "wire/wire.h"

/* The agent's wire cleans the byte that is not UTF-8 into U+FFFD before
 * anything is stored (lib/json's own \ufffd for such bytes is test_json's). */
#define HOSTILE "/evil\"\\\n\x01\xff"
#define HOSTILE_STORED "/evil\"\\\n\x01\xef\xbf\xbd"
#define HOSTILE_JSON "\"/evil\\\"\\\\\\n\\u0001\xef\xbf\xbd\""

static uint64_t seq_s;

/*
 * Batch k of agent "agent-s" on host "hs", over [@start, @start + 10) s:
 * task-clock (k + 1) s on /a (container "web"), (k + 1) x 0.2 s on /b
 * counted half the time (scaled x 2), 1 ms on the hostile cgroup;
 * context-switches 10 (k + 1) on /a.
 */
static void push_batch(uint64_t k, uint64_t start)
{
	struct wire_cgroup_info web = { .container_id = "c0ffee0123456789abcdef",
					.container_name = "web",
					.pod_name = "web-0",
					.image = "nginx:1.25",
					.runtime = "docker" };
	struct wire_cgroup_info evil = { .container_name = "n\"a\\me\t" };
	struct wire_batch *b = wire_batch_new("hs", NULL, "agent-s", "9.9", ++seq_s, start * NS,
					      (start + 10) * NS);
	int a, bb, h;
	uint8_t *buf;
	size_t len;

	assert_non_null(b);
	a = wire_add_cgroup(b, "/a", 21, &web);
	bb = wire_add_cgroup(b, "/b", 22, NULL);
	h = wire_add_cgroup(b, HOSTILE, 23, &evil);
	assert_true(a >= 0 && bb >= 0 && h >= 0);
	assert_int_equal(wire_add_counter(b, a, "task-clock", (k + 1) * NS, 10, 10, true), 0);
	assert_int_equal(wire_add_counter(b, a, "context-switches", 10 * (k + 1), 10, 10, true), 0);
	assert_int_equal(wire_add_counter(b, bb, "task-clock", (k + 1) * NS / 10, 20, 10, true), 0);
	assert_int_equal(wire_add_counter(b, h, "task-clock", 1000000, 10, 10, true), 0);
	assert_int_equal(wire_add_counter(b, bb, "cycles", 5, 0, 0, false), 0);
	assert_int_equal(wire_encode(b, &buf, &len), 0);
	wire_batch_free(b);
	hf_expect(hf_post(buf, len, TOKEN, NULL), 200, "stored\n");
	free(buf);
}

/* Six batches ending at 1010, 1020, ... 1060 s. */
static int group_setup(void **state)
{
	int ret = hf_setup(state);

	for (uint64_t k = 0; !ret && k < 6; k++)
		push_batch(k, 1000 + 10 * k);
	return ret;
}

/* GET /api/v1/series?@query: 200, parsed; fails otherwise. */
static json_object *series(const char *query)
{
	char path[512];
	struct resp r;
	json_object *j, *v;

	tl_pathf(path, sizeof(path), "/api/v1/series?%s", query);
	r = hf_get(path, NULL);
	if (r.status != 200 || !strcasestr(r.head, "Content-Type: application/json"))
		fail_msg("GET %s: %d %.300s", path, r.status, r.body);
	j = json_tokener_parse(r.body);
	if (!j)
		fail_msg("GET %s: not JSON: %.300s", path, r.body);
	hf_resp_free(&r);
	assert_true(json_object_object_get_ex(j, "status", &v));
	assert_string_equal(json_object_get_string(v), "success");
	return j;
}

/* The result array of answer @j. */
static json_object *result(json_object *j)
{
	json_object *d, *t, *res;

	assert_true(json_object_object_get_ex(j, "data", &d));
	assert_true(json_object_object_get_ex(d, "resultType", &t));
	assert_string_equal(json_object_get_string(t), "matrix");
	assert_true(json_object_object_get_ex(d, "result", &res));
	assert_true(json_object_is_type(res, json_type_array));
	return res;
}

/* Label @k of series @s, or NULL. */
static const char *label(json_object *s, const char *k)
{
	json_object *m, *v;

	assert_true(json_object_object_get_ex(s, "metric", &m));
	return json_object_object_get_ex(m, k, &v) ? json_object_get_string(v) : NULL;
}

/* The series of result @res whose id is @id, or NULL. */
static json_object *find(json_object *res, const char *id)
{
	for (size_t i = 0; i < json_object_array_length(res); i++) {
		json_object *s = json_object_array_get_idx(res, i);

		if (!strcmp(label(s, "id"), id))
			return s;
	}
	return NULL;
}

/* The values of @s: times into @t, values (parsed from their strings)
 * into @v, at most @n; how many. */
static size_t values(json_object *s, uint64_t *t, double *v, size_t n)
{
	json_object *vs;
	size_t k;

	assert_true(json_object_object_get_ex(s, "values", &vs));
	for (k = 0; k < json_object_array_length(vs) && k < n; k++) {
		json_object *p = json_object_array_get_idx(vs, k);
		json_object *pt = json_object_array_get_idx(p, 0);
		json_object *pv = json_object_array_get_idx(p, 1);

		assert_int_equal(json_object_array_length(p), 2);
		assert_true(json_object_is_type(pt, json_type_int));
		assert_true(json_object_is_type(pv, json_type_string));
		t[k] = (uint64_t)json_object_get_int64(pt);
		v[k] = strtod(json_object_get_string(pv), NULL);
	}
	return k;
}

static double sum_values(json_object *s)
{
	uint64_t t[64];
	double v[64], sum = 0;
	size_t n = values(s, t, v, 64);

	for (size_t i = 0; i < n; i++)
		sum += v[i];
	return sum;
}

/* Steps of 20 s: the batches end at 1010 | 1020 1030 | 1040 1050 | 1060. */
static void test_buckets(void **state)
{
	static const uint64_t want_t[] = { 1000, 1020, 1040, 1060 };
	static const double want_a[] = { 1e9, 5e9, 9e9, 6e9 };
	static const double want_b[] = { 2e8, 1e9, 1.8e9, 1.2e9 };
	json_object *j = series("host=hs&event=task-clock&from=1000&to=1061&step=20&rate=0");
	json_object *res = result(j), *a = find(res, "/a"), *b = find(res, "/b");
	uint64_t t[8];
	double v[8];

	assert_int_equal(json_object_array_length(res), 3);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(values(a, t, v, 8), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(t[i], want_t[i]);
		assert_true(v[i] == want_a[i]);
	}
	assert_int_equal(values(b, t, v, 8), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(t[i], want_t[i]);
		assert_true(fabs(v[i] - want_b[i]) <= want_b[i] * 1e-12);
	}
	assert_string_equal(label(a, "host"), "hs");
	assert_string_equal(label(a, "event"), "task-clock");
	assert_string_equal(label(a, "container_name"), "web");
	assert_string_equal(label(a, "pod_name"), "web-0");
	assert_string_equal(label(a, "image"), "nginx:1.25");
	assert_null(label(b, "container_name")); /* unknown: left out */
	json_object_put(j);

	/* per second (the default): 5 s of task-clock in 20 s = 0.25 cores */
	j = series("host=hs&cgroup=/a&from=1000&to=1061&step=20");
	res = result(j);
	assert_int_equal(json_object_array_length(res), 1);
	a = json_object_array_get_idx(res, 0);
	assert_string_equal(label(a, "event"), "cpu");
	assert_int_equal(values(a, t, v, 8), 4);
	assert_true(fabs(v[1] - 0.25) < 1e-12);
	assert_true(fabs(v[0] - 0.05) < 1e-12);
	json_object_put(j);

	/* a range that starts inside a step takes only what was read in it */
	j = series("host=hs&cgroup=/a&event=context-switches&from=1025&to=1061&step=20&rate=0");
	a = json_object_array_get_idx(result(j), 0);
	assert_int_equal(values(a, t, v, 8), 3);
	assert_int_equal(t[0], 1020);
	assert_true(v[0] == 30 && v[1] == 90 && v[2] == 60);
	json_object_put(j);
}

/* The sample value of the /metrics line that starts with @prefix and has
 * @has, or 0 when there is none. */
static double metric(const char *prefix, const char *has)
{
	struct resp r = hf_get("/metrics", NULL);
	double v = 0;

	assert_int_equal(r.status, 200);
	for (char *l = r.body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *end = strchr(l, '\n'), *sp;

		if (end)
			*end = '\0';
		sp = strrchr(l, ' ');
		if (!strncmp(l, prefix, strlen(prefix)) && strstr(l, has) && sp)
			v = strtod(sp + 1, NULL);
		if (end)
			*end = '\n';
	}
	hf_resp_free(&r);
	return v;
}

/* Four more batches (2000-2040 s): the series' increases over their range
 * add up to what /metrics added, for task-clock and for cpu (seconds),
 * per step and per second. */
static void test_sum_invariant(void **state)
{
	const char *ev = "cgperf_cgroup_perf_events_total{host=\"hs\",id=\"/b\"";
	const char *cpu = "cgperf_cgroup_cpu_seconds_total{host=\"hs\",id=\"/b\"";
	double ev0 = metric(ev, "event=\"task-clock\""), cpu0 = metric(cpu, ""), ev1, cpu1;
	json_object *j;

	for (uint64_t k = 0; k < 4; k++)
		push_batch(k + 3, 2000 + 10 * k);
	ev1 = metric(ev, "event=\"task-clock\"");
	cpu1 = metric(cpu, "");
	assert_true(ev1 > ev0);

	j = series("host=hs&cgroup=/b&event=task-clock&from=2000&to=2100&step=30&rate=0");
	assert_true(fabs(sum_values(json_object_array_get_idx(result(j), 0)) - (ev1 - ev0)) <=
		    (ev1 - ev0) * 1e-12);
	json_object_put(j);
	j = series("host=hs&cgroup=/b&from=2000&to=2100&step=15&rate=0");
	assert_true(fabs(sum_values(json_object_array_get_idx(result(j), 0)) - (cpu1 - cpu0)) <=
		    (cpu1 - cpu0) * 1e-12);
	json_object_put(j);
	/* per second: times the step */
	j = series("host=hs&cgroup=/b&event=task-clock&from=2000&to=2100&step=1m");
	assert_true(fabs(sum_values(json_object_array_get_idx(result(j), 0)) * 60 -
			 (ev1 - ev0)) <= (ev1 - ev0) * 1e-12);
	json_object_put(j);
}

/* The largest sums first, and only @top of them. */
static void test_top(void **state)
{
	json_object *j = series("host=hs&event=task-clock&from=1000&to=1061&top=2");
	json_object *res = result(j);

	assert_int_equal(json_object_array_length(res), 2);
	assert_string_equal(label(json_object_array_get_idx(res, 0), "id"), "/a");
	assert_string_equal(label(json_object_array_get_idx(res, 1), "id"), "/b");
	json_object_put(j);
	j = series("host=hs&event=task-clock&from=1000&to=1061&top=1&step=60");
	res = result(j);
	assert_int_equal(json_object_array_length(res), 1);
	assert_string_equal(label(json_object_array_get_idx(res, 0), "id"), "/a");
	json_object_put(j);
}

static void bad(const char *query, const char *says)
{
	char path[256];

	tl_pathf(path, sizeof(path), "/api/v1/series?%s", query);
	hf_expect(hf_get(path, NULL), 400, says);
}

static void test_bad_query(void **state)
{
	bad("step=0", "step: must be at least 1 second");
	bad("step=abc", "step: 'abc' is not a step");
	bad("step=1.5", "want whole seconds");
	bad("step=-5", "is not a step");
	bad("step=1500ms", "is not a step");
	bad("step=1&from=0&to=100000", "gives 100000 points between from and to, more than 11000");
	bad("top=0", "top: '0': want a whole number from 1 to 100");
	bad("top=101", "want a whole number from 1 to 100");
	bad("top=2x", "top: '2x'");
	bad("rate=maybe", "rate: 'maybe': want 1");
	bad("from=200&to=100", "from is not before to");
	bad("to=teatime", "to: 'teatime' is not a time");
}

static void test_empty(void **state)
{
	static const char *const empty[] = {
		"host=nobody&from=1000&to=1061",
		"host=hs&event=no-such-event&from=1000&to=1061",
		"host=hs&from=5000&to=6000",
		"host=hs&event=cycles&from=1000&to=1061", /* not supported: no data */
		"", /* the last hour: these batches are from 1970 */
	};

	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		json_object *j = series(empty[i]);

		assert_int_equal(json_object_array_length(result(j)), 0);
		json_object_put(j);
	}
}

/* Names as JSON escapes them, and the answer parses. */
static void test_hostile(void **state)
{
	struct resp r =
		hf_get("/api/v1/series?host=hs&event=task-clock&from=1000&to=1061&rate=0", NULL);
	json_object *j, *s;

	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"id\":" HOSTILE_JSON));
	assert_non_null(strstr(r.body, "\"container_name\":\"n\\\"a\\\\me\\t\""));
	j = json_tokener_parse(r.body);
	assert_non_null(j);
	s = find(result(j), HOSTILE_STORED);
	assert_non_null(s);
	assert_true(fabs(sum_values(s) - 6e6) < 1e-6);
	json_object_put(j);
	hf_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets),	  cmocka_unit_test(test_sum_invariant),
		cmocka_unit_test(test_top),	  cmocka_unit_test(test_bad_query),
		cmocka_unit_test(test_empty),	  cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, group_setup, hf_teardown);
}
