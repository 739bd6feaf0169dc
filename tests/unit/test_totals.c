// SPDX-License-Identifier: MIT
/*
 * exporter/totals: what /metrics shows. Exact lines for counters (scaled),
 * cpu seconds, probe histograms (cumulative log2 buckets, le bounds, the
 * negative values apart, latency in seconds) and agent figures; hostile
 * label values escaped; OpenMetrics family names; the totals rebuilt from
 * the real SQLite store render byte for byte the same page as the ones
 * summed batch by batch; expiry; and 100,000 series rendered in one page
 * (the time is printed, not asserted). Review regressions: sums past
 * INT64_MAX saturate as the store's do (a restart renders the same page),
 * a series is found by hash (not a scan of its cgroup's series) also after
 * expiry, and the entries a batch would add are counted for the cap.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/wire.h"
#include "exporter/page.h"
#include "exporter/store/store.h"
#include "exporter/totals.h"
#include "tests/unit/testlib.h"

#define NS 1000000000ull
#define T0 (1700000000ull * NS)
#define EVIL "/a\"b\\c\nd ✓"

static Cgperf__V1__Batch *batch(uint64_t seq, uint64_t scale)
{
	struct wire_cgroup_info web = { .container_id = "c0ffee",
					.container_name = "nginx",
					.pod_uid = "p-1",
					.pod_name = "web-0",
					.k8s_namespace = "prod",
					.runtime = "docker",
					.unit = "x.scope" };
	struct wire_batch *b = wire_batch_new("h1", NULL, "a\"1", "1.0", seq, T0, T0 + NS);
	struct wire_self self = { .samples = 10 * scale, .spool_bytes = 70 + scale };
	struct hist v = { 0 }, l = { 0 };
	const char *st[] = { "x", "y" };
	int cw, ce, p;

	assert_non_null(b);
	cw = wire_add_cgroup(b, "/web", 1, &web);
	ce = wire_add_cgroup(b, EVIL, 2, NULL);
	assert_int_equal(wire_add_counter(b, cw, "task-clock", 1000000000 * scale, 100, 50, true),
			 0);
	assert_int_equal(wire_add_counter(b, cw, "context-switches", 7 * scale, 10, 10, true), 0);
	assert_int_equal(wire_add_counter(b, ce, "task-clock", 500000000 * scale, 1, 1, true), 0);
	hist_add(&v, 3);
	hist_add(&v, 100);
	hist_add(&v, -5);
	hist_add(&l, 1500);
	assert_int_equal(wire_add_probe(b, cw, "sdt:pg:q", 3 * scale, &v, &l), 0);
	p = wire_add_profile(b, cw, "cpu-clock", 0, 99);
	assert_int_equal(wire_add_stack(b, p, st, 2, 4 * scale), 0);
	wire_set_self(b, &self);
	return tl_wire_roundtrip(b);
}

static char *render(const struct totals *t, bool om, uint64_t cutoff)
{
	struct page p;
	char *s;

	page_init(&p, 0);
	totals_render(t, &p, om, cutoff);
	s = page_take(&p, NULL);
	assert_non_null(s);
	return s;
}

static void has(const char *page, const char *line)
{
	if (!strstr(page, line))
		fail_msg("missing line:\n%s\nin:\n%s", line, page);
}

#define WEB                                                                                  \
	"host=\"h1\",id=\"/web\",container=\"c0ffee\",container_name=\"nginx\",pod=\"p-1\"," \
	"pod_name=\"web-0\",namespace=\"prod\",unit=\"x.scope\",runtime=\"docker\""

static void test_lines(void **state)
{
	struct totals *t = totals_new();
	Cgperf__V1__Batch *m;
	char *page;

	assert_non_null(t);
	for (uint64_t i = 1; i <= 2; i++) {
		m = batch(i, i);
		assert_int_equal(totals_add_batch(t, m, T0 + i * NS), 0);
		wire_batch_decoded_free(m);
	}
	page = render(t, false, T0);
	has(page, "# TYPE cgperf_cgroup_perf_events_total counter\n");
	has(page, "\ncgperf_cgroup_perf_events_total{" WEB ",event=\"context-switches\"} 21\n");
	has(page, "\ncgperf_cgroup_cpu_seconds_total{" WEB "} 6\n");
	has(page, "\ncgperf_cgroup_cpu_seconds_total{host=\"h1\",id=\"/a\\\"b\\\\c\\nd ✓\","
		  "container=\"\",container_name=\"\",pod=\"\",pod_name=\"\",namespace=\"\","
		  "unit=\"\",runtime=\"\"} 1.5\n");
	has(page, "\ncgperf_probe_hits_total{" WEB ",probe=\"sdt:pg:q\"} 9\n");
	/* 3 is in [2, 4), 100 in [64, 128); -5 apart. */
	has(page, "\ncgperf_probe_values_bucket{" WEB ",probe=\"sdt:pg:q\",le=\"0\"} 0\n"
		  "cgperf_probe_values_bucket{" WEB ",probe=\"sdt:pg:q\",le=\"1\"} 0\n"
		  "cgperf_probe_values_bucket{" WEB ",probe=\"sdt:pg:q\",le=\"3\"} 2\n");
	has(page, "\ncgperf_probe_values_bucket{" WEB ",probe=\"sdt:pg:q\",le=\"63\"} 2\n"
		  "cgperf_probe_values_bucket{" WEB ",probe=\"sdt:pg:q\",le=\"127\"} 4\n"
		  "cgperf_probe_values_bucket{" WEB ",probe=\"sdt:pg:q\",le=\"+Inf\"} 4\n"
		  "cgperf_probe_values_sum{" WEB ",probe=\"sdt:pg:q\"} 206\n"
		  "cgperf_probe_values_count{" WEB ",probe=\"sdt:pg:q\"} 4\n");
	has(page, "\ncgperf_probe_negative_values_total{" WEB ",probe=\"sdt:pg:q\"} 2\n");
	has(page, "\ncgperf_probe_latency_seconds_bucket{" WEB
		  ",probe=\"sdt:pg:q\",le=\"2.0470000000000001e-06\"} 2\n");
	has(page, "\ncgperf_probe_latency_seconds_sum{" WEB ",probe=\"sdt:pg:q\"} 3.0000000000000001e-06\n");
	has(page, "\ncgperf_agent_samples_total{host=\"h1\",agent_id=\"a\\\"1\"} 30\n");
	has(page, "\ncgperf_agent_stack_samples_total{host=\"h1\",agent_id=\"a\\\"1\"} 12\n");
	has(page, "\ncgperf_agent_batches_total{host=\"h1\",agent_id=\"a\\\"1\"} 2\n");
	has(page, "\ncgperf_agent_spool_bytes{host=\"h1\",agent_id=\"a\\\"1\"} 72\n");
	has(page, "\ncgperf_agent_last_push_timestamp_seconds{host=\"h1\",agent_id=\"a\\\"1\"} "
		  "1700000002\n");
	has(page, "\ncgperf_agent_info{host=\"h1\",agent_id=\"a\\\"1\",version=\"1.0\"} 1\n");
	/* No raw newline inside a label: every line starts a sample or a comment. */
	for (const char *l = page; *l; l = strchr(l, '\n') + 1)
		assert_true(!strncmp(l, "cgperf_", 7) || !strncmp(l, "# ", 2));
	assert_int_equal(totals_series(t), 3 + 1 + 1);
	free(page);

	page = render(t, true, T0);
	has(page, "# TYPE cgperf_cgroup_cpu_seconds counter\n");
	has(page, "# HELP cgperf_probe_hits ");
	has(page, "# TYPE cgperf_probe_latency_seconds histogram\n");
	has(page, "# TYPE cgperf_agent_spool_bytes gauge\n");
	assert_null(strstr(page, "_total counter"));
	free(page);

	/* Only what was seen at the cutoff or later is shown, then kept. */
	page = render(t, false, T0 + 3 * NS);
	assert_null(strstr(page, "\ncgperf_"));
	free(page);
	totals_expire(t, T0 + 2 * NS);
	assert_int_equal(totals_series(t), 5);
	totals_expire(t, T0 + 3 * NS);
	assert_int_equal(totals_series(t), 0);
	page = render(t, false, 0);
	assert_null(strstr(page, "\ncgperf_"));
	free(page);
	totals_free(t);
}

/* Batch @i: /web's profile has 3i stack-copy and i bad-return-address
 * truncations; /quiet's none. */
static Cgperf__V1__Batch *trunc_batch(uint64_t i)
{
	struct wire_batch *b = wire_batch_new("h1", NULL, "a\"1", "1.0", i, T0, T0 + NS);
	const char *st[] = {"comm", "[truncated: stack copy]", "f"};
	const uint64_t cut[WIRE_TRUNC_REASONS] = {3 * i, 0, i};
	struct wire_self self = {0};
	Cgperf__V1__Batch *m;
	int cw, ce, p;

	assert_non_null(b);
	cw = wire_add_cgroup(b, "/web", 1, NULL);
	ce = wire_add_cgroup(b, "/quiet", 2, NULL);
	p = wire_add_profile(b, cw, "cpu-clock", 0, 99);
	assert_int_equal(wire_add_stack(b, p, st, 3, 4 * i), 0);
	assert_int_equal(wire_add_truncated(b, p, cut), 0);
	assert_int_equal(wire_add_truncated(b, -1, cut), -EINVAL);
	p = wire_add_profile(b, ce, "cpu-clock", 0, 99);
	assert_int_equal(wire_add_stack(b, p, st + 2, 1, 1), 0);
	wire_set_self(b, &self);
	m = tl_wire_roundtrip(b);
	assert_int_equal(m->profiles[0]->truncated_stack_copy, 3 * i);
	return m;
}

static void has_truncated(const char *page)
{
	has(page, "# TYPE cgperf_cgroup_stacks_truncated_total counter\n");
	has(page, "\ncgperf_cgroup_stacks_truncated_total{host=\"h1\",id=\"/web\",container=\"\","
		  "container_name=\"\",pod=\"\",pod_name=\"\",namespace=\"\",unit=\"\",runtime=\"\","
		  "reason=\"stack_copy\"} 9\n");
	has(page, ",reason=\"max_stack\"} 0\n");
	has(page, "id=\"/web\",container=\"\",container_name=\"\",pod=\"\",pod_name=\"\","
		  "namespace=\"\",unit=\"\",runtime=\"\",reason=\"bad_return_address\"} 3\n");
	assert_null(strstr(page, "cgperf_cgroup_stacks_truncated_total{host=\"h1\",id=\"/quiet\""));
}

/* Profiles' truncated stack counts add up per cgroup and reason, and only
 * cgroups that had some get the series. */
static void test_truncated(void **state)
{
	struct totals *t = totals_new();
	char *page;

	assert_non_null(t);
	for (uint64_t i = 1; i <= 2; i++) {
		Cgperf__V1__Batch *m = trunc_batch(i);

		assert_int_equal(totals_add_batch(t, m, T0 + i * NS), 0);
		wire_batch_decoded_free(m);
	}
	page = render(t, false, 0);
	has_truncated(page);
	free(page);
	totals_free(t);
}

/*
 * Batches 1..@n from @mk, summed here and stored in a real store, which is
 * then reopened and loaded into fresh totals: the page of each (malloc'd,
 * the live one returned, the reloaded one in *@reloaded).
 */
static char *live_and_reloaded(Cgperf__V1__Batch *(*mk)(uint64_t i), uint64_t n,
			       char **reloaded)
{
	char *dir = tl_tmpdir("test_totals"), err[256], *a;
	struct totals *live = totals_new(), *loaded = totals_new();
	struct store_visitor v;
	struct store *s;

	s = store_open(store_backend("sqlite"), dir, err, sizeof(err));
	assert_non_null(s);
	for (uint64_t i = 1; i <= n; i++) {
		Cgperf__V1__Batch *m = mk(i);

		assert_int_equal(store_put(s, m, T0 + i * NS, err, sizeof(err)), 0);
		assert_int_equal(totals_add_batch(live, m, T0 + i * NS), 0);
		wire_batch_decoded_free(m);
	}
	store_close(s);
	s = store_open(store_backend("sqlite"), dir, err, sizeof(err));
	assert_non_null(s);
	totals_visitor(loaded, &v);
	assert_int_equal(store_load(s, &v), 0);
	a = render(live, false, 0);
	*reloaded = render(loaded, false, 0);
	store_close(s);
	totals_free(live);
	totals_free(loaded);
	tl_rmtree(dir);
	return a;
}

static Cgperf__V1__Batch *mixed_batch(uint64_t i)
{
	return batch(i, i * 7919 % 13 + 1);
}

/* The same batches summed here and reloaded from the real store render
 * the same page, byte for byte. */
static void test_rebuild_from_store(void **state)
{
	char *b, *a = live_and_reloaded(mixed_batch, 20, &b);

	assert_string_equal(a, b);
	free(a);
	free(b);
}

/* The truncation counts are kept in the store too: a reloaded exporter
 * shows the same. */
static void test_truncated_from_store(void **state)
{
	char *b, *a = live_and_reloaded(trunc_batch, 2, &b);

	has_truncated(a);
	assert_string_equal(a, b);
	free(a);
	free(b);
}

/* 25,000 cgroups x 4 events = 100,000 counter series (and 25,000 cpu
 * seconds lines) in one page. */
static void test_100k_series(void **state)
{
	static const char *const ev[] = { "task-clock", "cycles", "instructions", "page-faults" };
	struct totals *t = totals_new();
	struct timespec t0, t1;
	size_t lines = 0;
	char *page;

	for (int k = 0; k < 25; k++) {
		struct wire_batch *b = wire_batch_new("big", NULL, "agent", "1", (uint64_t)k + 1, T0,
						      T0 + NS);
		Cgperf__V1__Batch *m;

		for (int i = 0; i < 1000; i++) {
			char path[64], cid[80];
			struct wire_cgroup_info info = { .container_id = cid };
			int cg;

			snprintf(path, sizeof(path), "/kubepods/pod-%d/ctr-%d", k, i);
			snprintf(cid, sizeof(cid), "%064d", k * 1000 + i);
			cg = wire_add_cgroup(b, path, 0, &info);
			for (int e = 0; e < 4; e++)
				assert_int_equal(
					wire_add_counter(b, cg, ev[e], (uint64_t)i * 1000 + 1, 2, 1, true),
					0);
		}
		wire_set_self(b, &(struct wire_self){ 0 });
		m = tl_wire_roundtrip(b);
		assert_int_equal(totals_add_batch(t, m, T0), 0);
		wire_batch_decoded_free(m);
	}
	assert_int_equal(totals_series(t), 100000 + 1);
	page = render(t, false, 0);
	free(page);
	/* As /metrics does: the page allocated at the last page's size. */
	{
		struct page p;

		page_init(&p, 0);
		page_reserve(&p, 32u << 20);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		totals_render(t, &p, false, 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		page = page_take(&p, NULL);
		assert_non_null(page);
	}
	for (const char *p = page; (p = strchr(p, '\n')); p++)
		lines++;
	print_message("100,000 series: %zu lines, %zu bytes rendered in %.1f ms\n", lines,
		      strlen(page),
		      (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	assert_true(lines > 125000);
	has(page, "\ncgperf_cgroup_cpu_seconds_total{host=\"big\",id=\"/kubepods/pod-24/ctr-999\"");
	free(page);
	totals_free(t);
}

/* ---- review regressions ---- */

/* A batch of agent "a1" at the wire's limits: INT64_MAX self samples,
 * probe hits and stack samples in each of three profiles. */
static Cgperf__V1__Batch *huge_batch(uint64_t seq)
{
	struct wire_batch *b = wire_batch_new("h1", NULL, "a1", "1", seq, T0, T0 + NS);
	struct wire_self self = { .samples = INT64_MAX, .lost_samples = INT64_MAX };
	const char *st[] = { "x", "y" };
	const char *ev[] = { "cpu-clock", "page-faults", "cycles" };
	int cg;

	assert_non_null(b);
	cg = wire_add_cgroup(b, "/big", 1, NULL);
	assert_int_equal(wire_add_probe(b, cg, "u:a:b", INT64_MAX, NULL, NULL), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(wire_add_stack(b, wire_add_profile(b, cg, ev[i], 0, 99), st, 2,
						INT64_MAX),
				 0);
	wire_set_self(b, &self);
	return tl_wire_roundtrip(b);
}

/*
 * Agent figures, probe hits and stack samples summed past INT64_MAX: the
 * totals wrapped around (a Prometheus counter reset, then a tiny number)
 * while the store saturated, so a restart changed /metrics. Both saturate
 * at INT64_MAX now, and the rebuilt page equals the live one.
 */
static void test_saturation_matches_store(void **state)
{
	char *b, *a = live_and_reloaded(huge_batch, 3, &b);

	has(a, "\ncgperf_agent_samples_total{host=\"h1\",agent_id=\"a1\"} 9223372036854775807\n");
	has(a, "\ncgperf_agent_stack_samples_total{host=\"h1\",agent_id=\"a1\"} "
	       "9223372036854775807\n");
	has(a, ",probe=\"u:a:b\"} 9223372036854775807\n");
	assert_string_equal(a, b);
	free(a);
	free(b);
}

/* One cgroup with @n events "e<first>".."e<first+n-1>" of value @v each,
 * and probe "p" unless @n is 0. */
static Cgperf__V1__Batch *events_batch(uint64_t seq, int first, int n, uint64_t v)
{
	struct wire_batch *b = wire_batch_new("h1", NULL, "a1", "1", seq, T0, T0 + NS);
	char ev[32];
	int cg;

	assert_non_null(b);
	cg = wire_add_cgroup(b, "/many", 1, NULL);
	for (int i = first; i < first + n; i++) {
		snprintf(ev, sizeof(ev), "e%d", i);
		assert_int_equal(wire_add_counter(b, cg, ev, v, 1, 1, true), 0);
	}
	if (n)
		assert_int_equal(wire_add_probe(b, cg, "p", 1, NULL, NULL), 0);
	return tl_wire_roundtrip(b);
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * 200,000 distinct events in one cgroup (a 4 MB push): every new series
 * was looked for by a scan of its cgroup's series, 2 * 10^10 string
 * compares (~1 minute; ~40 minutes for a 32 MB push) under the lock every
 * scrape and push waits for. By hash it takes a fraction of a second; the
 * bound below is CPU time, a hundred times that, so load cannot fail it.
 * Then expiry moves series about: the index must still find each one
 * (summed, not duplicated).
 */
static void test_many_series_one_cgroup(void **state)
{
	struct totals *t = totals_new();
	Cgperf__V1__Batch *m = events_batch(1, 0, 200000, 1);
	double c0, c1;
	char *page;

	assert_non_null(t);
	assert_int_equal(totals_batch_growth(t, m, NULL), 1 + 200000 + 1 + 1);
	c0 = cpu_seconds();
	assert_int_equal(totals_add_batch(t, m, T0), 0);
	c1 = cpu_seconds();
	wire_batch_decoded_free(m);
	print_message("200,000 new series in one cgroup: %.3f s of CPU\n", c1 - c0);
	assert_true(c1 - c0 < 10.0);
	assert_int_equal(totals_series(t), 200000 + 1 + 1);
	assert_int_equal(totals_entries(t), 1 + 200000 + 1 + 1);

	/* e100000.. seen again later; e0.. and the probe expire. */
	m = events_batch(2, 100000, 100000, 2);
	assert_int_equal(totals_batch_growth(t, m, NULL), 0);
	assert_int_equal(totals_add_batch(t, m, T0 + NS), 0);
	wire_batch_decoded_free(m);
	totals_expire(t, T0 + NS);
	assert_int_equal(totals_series(t), 100000 + 1 + 1); /* the probe was seen at T0 + NS */
	/* Every survivor is found where expiry moved it: summed, not added. */
	m = events_batch(4, 100000, 100000, 4);
	assert_int_equal(totals_batch_growth(t, m, NULL), 0);
	assert_int_equal(totals_add_batch(t, m, T0 + 2 * NS), 0);
	wire_batch_decoded_free(m);
	assert_int_equal(totals_series(t), 100000 + 1 + 1);
	page = render(t, false, 0);
	has(page, ",event=\"e100000\"} 7\n");
	has(page, ",event=\"e199999\"} 7\n");
	assert_null(strstr(page, ",event=\"e99999\"}"));
	free(page);
	/* New ones after the rebuild are found too. */
	m = events_batch(5, 0, 3, 1);
	assert_int_equal(totals_batch_growth(t, m, NULL), 3);
	assert_int_equal(totals_add_batch(t, m, T0 + 3 * NS), 0);
	wire_batch_decoded_free(m);
	m = events_batch(6, 0, 3, 1);
	assert_int_equal(totals_batch_growth(t, m, NULL), 0);
	assert_int_equal(totals_add_batch(t, m, T0 + 3 * NS), 0);
	wire_batch_decoded_free(m);
	page = render(t, false, 0);
	has(page, ",event=\"e2\"} 2\n");
	free(page);
	totals_free(t);
}

/* @n cgroups "/c<i>" whose nine identity fields are one 8000-byte string
 * (@fill), interned once in the batch. */
static Cgperf__V1__Batch *wide_batch(uint64_t seq, int n, char fill)
{
	static char big[8001];
	struct wire_cgroup_info info = { .container_id = big,  .container_name = big,
					 .pod_uid = big,	.pod_name = big,
					 .k8s_namespace = big, .runtime = big,
					 .unit = big,		.qos = big,
					 .slice = big };
	struct wire_batch *b = wire_batch_new("h1", NULL, "wide", "1", seq, T0, T0 + NS);
	char path[32];

	memset(big, fill, sizeof(big) - 1);
	assert_non_null(b);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/c%d", i);
		assert_true(wire_add_cgroup(b, path, 1, &info) >= 0);
	}
	return tl_wire_roundtrip(b);
}

/*
 * What a batch would add, for the caps: entries (new cgroups, counter
 * series but not unsupported ones, probe series, a new agent; nothing for
 * a batch seen before) and bytes, an upper bound of what totals_bytes()
 * then grows by, which expiry gives back in full.
 */
static void test_batch_growth(void **state)
{
	struct totals *t = totals_new();
	Cgperf__V1__Batch *m = batch(1, 1);
	size_t before = totals_entries(t), growth, bytes = 0, b0;

	assert_int_equal(before, 0);
	assert_int_equal(totals_bytes(t), 0);
	growth = totals_batch_growth(t, m, &bytes);
	/* /web and EVIL; 3 counters; 1 probe; agent a"1 */
	assert_int_equal(growth, 2 + 3 + 1 + 1);
	assert_int_equal(totals_add_batch(t, m, T0), 0);
	assert_int_equal(totals_entries(t), before + growth);
	assert_true(totals_bytes(t) > 0 && totals_bytes(t) <= bytes);
	assert_int_equal(totals_batch_growth(t, m, &bytes), 0);
	assert_int_equal(bytes, 0);
	wire_batch_decoded_free(m);

	/* 40 KB of gzip'd push that takes ~1.3 GB held: over the byte cap,
	 * whatever the entry cap says. */
	m = wide_batch(1, 10000, 'x');
	assert_int_equal(totals_batch_growth(t, m, &bytes), 10000 + 1);
	assert_true(bytes > TOTALS_BYTES_MAX_DEFAULT);
	wire_batch_decoded_free(m);

	/* Bounds hold for wide cgroups too, and for a changed identity. */
	m = wide_batch(2, 20, 'y');
	b0 = totals_bytes(t);
	assert_int_equal(totals_batch_growth(t, m, &bytes), 20 + 1);
	assert_int_equal(totals_add_batch(t, m, T0), 0);
	assert_true(totals_bytes(t) - b0 > 20 * (9 + 7) * 8000); /* fields, 7 in labels */
	assert_true(totals_bytes(t) - b0 <= bytes);
	wire_batch_decoded_free(m);
	m = wide_batch(3, 20, 'z');
	b0 = totals_bytes(t);
	assert_int_equal(totals_batch_growth(t, m, &bytes), 0);
	assert_true(bytes > 0);
	assert_int_equal(totals_add_batch(t, m, T0), 0);
	assert_true(totals_bytes(t) >= b0 && totals_bytes(t) - b0 <= bytes);
	wire_batch_decoded_free(m);

	totals_expire(t, T0 + NS);
	assert_int_equal(totals_entries(t), 0);
	assert_int_equal(totals_bytes(t), 0);
	totals_free(t);
}

/* One cgroup @cg with a counter and a probe both named EVIL. */
static Cgperf__V1__Batch *evil_batch(uint64_t seq, const char *cg)
{
	struct wire_batch *b = wire_batch_new("h1", NULL, "a1", "1", seq, T0, T0 + NS);
	int c;

	assert_non_null(b);
	c = wire_add_cgroup(b, cg, 1, NULL);
	assert_int_equal(wire_add_counter(b, c, EVIL, 3, 1, 1, true), 0);
	assert_int_equal(wire_add_probe(b, c, EVIL, 2, NULL, NULL), 0);
	return tl_wire_roundtrip(b);
}

/* Series names are interned with their escaped text: shared by cgroups,
 * escaped on the page, released with the last series that uses them. */
static void test_names_escaped_and_shared(void **state)
{
	struct totals *t = totals_new();
	Cgperf__V1__Batch *m;
	char *page;

	assert_non_null(t);
	m = evil_batch(1, "/x");
	assert_int_equal(totals_add_batch(t, m, T0), 0);
	wire_batch_decoded_free(m);
	m = evil_batch(2, "/y");
	assert_int_equal(totals_add_batch(t, m, T0 + NS), 0);
	wire_batch_decoded_free(m);
	totals_expire(t, T0 + NS); /* /x goes, /y keeps the names */
	m = evil_batch(3, "/y");
	assert_int_equal(totals_batch_growth(t, m, NULL), 0);
	assert_int_equal(totals_add_batch(t, m, T0 + NS), 0);
	wire_batch_decoded_free(m);
	page = render(t, false, 0);
	has(page, "id=\"/y\",container=\"\",container_name=\"\",pod=\"\",pod_name=\"\","
		  "namespace=\"\",unit=\"\",runtime=\"\",event=\"/a\\\"b\\\\c\\nd ✓\"} 6\n");
	has(page, ",probe=\"/a\\\"b\\\\c\\nd ✓\"} 4\n");
	assert_null(strstr(page, "id=\"/x\""));
	free(page);
	totals_expire(t, T0 + 2 * NS);
	assert_int_equal(totals_entries(t), 0);
	assert_int_equal(totals_bytes(t), 0);
	totals_free(t);
}

TL_MAIN(test_lines, test_truncated, test_rebuild_from_store, test_truncated_from_store, test_100k_series,
	test_saturation_matches_store, test_many_series_one_cgroup, test_batch_growth,
	test_names_escaped_and_shared)
