// SPDX-License-Identifier: MIT
/*
 * exporter/rw_encode: exposition text into a remote_write request, read
 * back with protobuf-c: one series per sample line, __name__ and labels
 * sorted by name, label escapes undone (quote, backslash, newline, UTF-8
 * kept), histogram buckets with le="+Inf", special values, the extra labels
 * added and overriding, every sample at the given time; comment lines
 * skipped; a broken line named by number.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/rw_encode.h"
#include "proto/remote_write.pb-c.h"
#include "tests/unit/testlib.h"

static const struct rw_label extra[] = { { "instance", "exp-1:9464" }, { "job", "cgperf-exporter" } };

static Prometheus__WriteRequest *encode(const char *text, int64_t ts, size_t *nseries)
{
	void *z, *raw;
	size_t zlen, len;
	Prometheus__WriteRequest *wr;

	assert_int_equal(rw_encode(text, strlen(text), extra, 2, ts, &z, &zlen, nseries), 0);
	assert_int_equal(rw_uncompress(z, zlen, &raw, &len), 0);
	wr = prometheus__write_request__unpack(NULL, len, raw);
	assert_non_null(wr);
	free(z);
	free(raw);
	return wr;
}

static const char *label(const Prometheus__TimeSeries *ts, const char *name)
{
	for (size_t i = 0; i < ts->n_labels; i++)
		if (!strcmp(ts->labels[i]->name, name))
			return ts->labels[i]->value;
	return NULL;
}

static void assert_sorted(const Prometheus__TimeSeries *ts)
{
	for (size_t i = 1; i < ts->n_labels; i++)
		assert_true(strcmp(ts->labels[i - 1]->name, ts->labels[i]->name) < 0);
}

static void test_series(void **state)
{
	(void)state;
	const char *text =
		"# HELP cgperf_cgroup_cpu_seconds_total CPU time.\n"
		"# TYPE cgperf_cgroup_cpu_seconds_total counter\n"
		"cgperf_cgroup_cpu_seconds_total{id=\"/a\\\"b\\\\c\\nd\",host=\"h\xc3\xa9\",container=\"\"} 2.5\n"
		"cgperf_probe_values_bucket{id=\"/x\",probe=\"p\",le=\"+Inf\"} 7\n"
		"cgperf_probe_values_sum{id=\"/x\",probe=\"p\",instance=\"spoof\"} NaN\n"
		"up 1\n"
		"cgperf_x{a=\"=,}\"} -Inf\n"
		"# EOF\n";
	size_t n = 0;
	Prometheus__WriteRequest *wr = encode(text, 1714564800123, &n);

	assert_int_equal(n, 5);
	assert_int_equal(wr->n_timeseries, 5);
	for (size_t i = 0; i < wr->n_timeseries; i++) {
		const Prometheus__TimeSeries *ts = wr->timeseries[i];

		assert_sorted(ts);
		assert_int_equal(ts->n_samples, 1);
		assert_int_equal(ts->samples[0]->timestamp, 1714564800123);
		assert_string_equal(label(ts, "instance"), "exp-1:9464");
		assert_string_equal(label(ts, "job"), "cgperf-exporter");
		assert_string_equal(ts->labels[0]->name, "__name__");
	}
	const Prometheus__TimeSeries *a = wr->timeseries[0];

	assert_string_equal(label(a, "__name__"), "cgperf_cgroup_cpu_seconds_total");
	assert_string_equal(label(a, "id"), "/a\"b\\c\nd");
	assert_string_equal(label(a, "host"), "h\xc3\xa9");
	assert_string_equal(label(a, "container"), "");
	assert_int_equal(a->n_labels, 6);
	assert_true(a->samples[0]->value == 2.5);
	assert_string_equal(label(wr->timeseries[1], "le"), "+Inf");
	assert_true(wr->timeseries[1]->samples[0]->value == 7);
	/* An instance label of the text is overridden, not doubled. */
	assert_int_equal(wr->timeseries[2]->n_labels, 5);
	assert_true(isnan(wr->timeseries[2]->samples[0]->value));
	assert_int_equal(wr->timeseries[3]->n_labels, 3);
	assert_string_equal(label(wr->timeseries[4], "a"), "=,}");
	assert_true(isinf(wr->timeseries[4]->samples[0]->value) && wr->timeseries[4]->samples[0]->value < 0);
	prometheus__write_request__free_unpacked(wr, NULL);
}

static void test_empty(void **state)
{
	(void)state;
	size_t n = 99;
	Prometheus__WriteRequest *wr = encode("# only comments\n\n", 1, &n);

	assert_int_equal(n, 0);
	assert_int_equal(wr->n_timeseries, 0);
	prometheus__write_request__free_unpacked(wr, NULL);
	wr = encode("", 1, &n);
	assert_int_equal(n, 0);
	prometheus__write_request__free_unpacked(wr, NULL);
}

static void test_broken(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		size_t line;
	} cases[] = {
		{ "a 1\nb{x=\"1} 2\n", 2 },  /* unterminated value */
		{ "a{x=1} 2\n", 1 },         /* unquoted value */
		{ "a 1\n\n9a 1\n", 3 },      /* name starts with a digit */
		{ "a{x=\"1\"}2\n", 1 },       /* no space before the value */
		{ "a{x=\"1\"} two\n", 1 },   /* not a number */
		{ "a{x=\"1\"} \n", 1 },       /* no value */
		{ "a{x=\"1\"\n", 1 },         /* no closing brace */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		void *z = NULL;
		size_t zlen = 0, n = 0;

		assert_int_equal(rw_encode(cases[i].text, strlen(cases[i].text), extra, 2, 1, &z, &zlen, &n),
				 -EINVAL);
		assert_int_equal(n, cases[i].line);
		assert_null(z);
	}
}

TL_MAIN(test_series, test_empty, test_broken)
