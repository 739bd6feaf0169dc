// SPDX-License-Identifier: MIT
/*
 * agent/hist: log2 buckets at their edges (0, powers of two, 2^64-1),
 * bounds that tile the whole range, negatives counted apart (min/max/mean
 * of the rest only), saturating sum and merged counts, and both renderings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hist.h"
#include "tests/unit/testlib.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

static void test_buckets(void **state)
{
	static const struct {
		uint64_t v;
		int k;
	} cases[] = {
		{ 0, 0 },
		{ 1, 1 },
		{ 2, 2 },
		{ 3, 2 },
		{ 4, 3 },
		{ 1023, 10 },
		{ 1024, 11 },
		{ 1ull << 32, 33 },
		{ (1ull << 63) - 1, 63 },
		{ 1ull << 63, 64 },
		{ UINT64_MAX, 64 },
	};

	for (size_t i = 0; i < NCASES(cases); i++) {
		if (hist_bucket(cases[i].v) != cases[i].k)
			fail_msg("hist_bucket(%llu) = %d, want %d", (unsigned long long)cases[i].v,
				 hist_bucket(cases[i].v), cases[i].k);
	}
}

static void test_bounds_tile(void **state)
{
	uint64_t lo, hi, next = 1;

	hist_bounds(0, &lo, &hi);
	assert_true(lo == 0 && hi == 0);
	hist_bounds(-3, &lo, &hi); /* out of range: bucket 0's */
	assert_true(lo == 0 && hi == 0);
	/* buckets 1..64 follow each other without gap or overlap up to 2^64-1 */
	for (int k = 1; k < HIST_BUCKETS; k++) {
		hist_bounds(k, &lo, &hi);
		assert_int_equal(lo, next);
		assert_true(hi >= lo);
		assert_int_equal(hist_bucket(lo), k);
		assert_int_equal(hist_bucket(hi), k);
		next = hi + 1;
	}
	assert_int_equal(hi, UINT64_MAX);
}

static void test_add(void **state)
{
	struct hist h = { 0 };

	assert_true(hist_mean(&h) == 0.0);
	hist_add(&h, -5); /* negatives first: min must not stick at 0 */
	hist_add(&h, -1);
	assert_int_equal(h.count, 2);
	assert_int_equal(h.negative, 2);
	assert_true(hist_mean(&h) == 0.0);
	hist_add(&h, 100);
	hist_add(&h, 7);
	hist_add(&h, 0);
	hist_add(&h, 100);
	assert_int_equal(h.count, 6);
	assert_int_equal(h.negative, 2);
	assert_int_equal(h.min, 0);
	assert_int_equal(h.max, 100);
	assert_int_equal(h.sum, 207);
	assert_true(hist_mean(&h) == 207.0 / 4);
	assert_int_equal(h.b[0], 1);
	assert_int_equal(h.b[3], 1);  /* 7 in [4, 7] */
	assert_int_equal(h.b[7], 2);  /* 100 in [64, 127] */
	/* the sum saturates instead of wrapping */
	hist_add(&h, INT64_MAX);
	hist_add(&h, INT64_MAX);
	hist_add(&h, INT64_MAX);
	assert_int_equal(h.sum, UINT64_MAX);
	assert_int_equal(h.max, INT64_MAX);
	assert_int_equal(h.b[63], 3);
}

static void test_merge(void **state)
{
	struct hist a = { 0 }, b = { 0 }, only_neg = { 0 }, empty = { 0 };

	hist_add(&a, 10);
	hist_add(&a, 20);
	hist_add(&b, 3);
	hist_add(&b, 1000);
	hist_add(&b, -2);
	hist_add(&only_neg, -9);

	/* into an empty one: a copy */
	hist_merge(&empty, &a);
	assert_int_equal(empty.count, 2);
	assert_int_equal(empty.min, 10);
	assert_int_equal(empty.max, 20);

	hist_merge(&a, &b);
	assert_int_equal(a.count, 5);
	assert_int_equal(a.negative, 1);
	assert_int_equal(a.min, 3);
	assert_int_equal(a.max, 1000);
	assert_int_equal(a.sum, 1033);
	assert_int_equal(a.b[hist_bucket(3)], 1);
	assert_int_equal(a.b[hist_bucket(10)], 1);
	assert_int_equal(a.b[hist_bucket(1000)], 1);
	/* merging negatives only leaves min alone */
	hist_merge(&a, &only_neg);
	assert_int_equal(a.min, 3);
	assert_int_equal(a.negative, 2);
	/* merging nothing changes nothing */
	{
		struct hist before = a, none = { 0 };

		hist_merge(&a, &none);
		assert_memory_equal(&a, &before, sizeof(a));
	}
	/* a histogram holding negatives only takes the min of what comes */
	hist_merge(&only_neg, &b);
	assert_int_equal(only_neg.min, 3);

	/* counts stop at INT64_MAX */
	{
		struct hist big = { 0 }, more = { 0 };

		big.count = big.b[1] = INT64_MAX - 1;
		big.min = big.max = 1;
		more.count = more.b[1] = 5;
		more.min = more.max = 1;
		hist_merge(&big, &more);
		assert_int_equal(big.count, INT64_MAX);
		assert_int_equal(big.b[1], INT64_MAX);
	}
}

static char *render_json(const struct hist *h)
{
	FILE *f = tl_capture_begin();

	hist_json(h, f);
	return tl_capture_end(f);
}

static void test_span(void **state)
{
	struct hist h = { 0 };
	int first = 7, last = 7;

	assert_false(hist_span(&h, &first, &last));
	assert_int_equal(first, -1);
	assert_int_equal(last, -1);
	hist_add(&h, -5); /* negative values have no bucket */
	assert_false(hist_span(&h, &first, &last));
	hist_add(&h, 0);
	assert_true(hist_span(&h, &first, &last));
	assert_int_equal(first, 0);
	assert_int_equal(last, 0);
	hist_add(&h, 1000);
	hist_add(&h, 3);
	assert_true(hist_span(&h, &first, &last));
	assert_int_equal(first, 0);
	assert_int_equal(last, hist_bucket(1000));
	h.b[HIST_BUCKETS - 1] = 1;
	assert_true(hist_span(&h, &first, &last));
	assert_int_equal(last, HIST_BUCKETS - 1);
}

static void test_json(void **state)
{
	struct hist h = { 0 };
	char *out;

	out = render_json(&h);
	assert_string_equal(out, "{\"count\":0,\"negative\":0,\"sum\":0,\"min\":0,\"max\":0,"
				 "\"mean\":0.000,\"buckets\":[]}");
	free(out);
	hist_add(&h, -1); /* min of negatives only is written as 0 */
	out = render_json(&h);
	assert_non_null(strstr(out, "\"min\":0,"));
	free(out);
	hist_add(&h, 0);
	hist_add(&h, 5);
	hist_add(&h, 6);
	out = render_json(&h);
	assert_string_equal(out, "{\"count\":4,\"negative\":1,\"sum\":11,\"min\":0,\"max\":6,"
				 "\"mean\":3.667,\"buckets\":[{\"ge\":0,\"le\":0,\"count\":1},"
				 "{\"ge\":4,\"le\":7,\"count\":2}]}");
	free(out);
}

static void test_print(void **state)
{
	struct hist h = { 0 };
	FILE *f;
	char *out, *line;

	for (int i = 0; i < 8; i++)
		hist_add(&h, 100);
	hist_add(&h, 2);
	hist_add(&h, -4);
	f = tl_capture_begin();
	hist_print(&h, f, "  ", "ns");
	out = tl_capture_end(f);
	/* header, "< 0", and buckets 2 (2..3) to 7 (64..127): the empty ones
	 * between are shown, the empty ones around are not */
	assert_int_equal(tl_count_lines(out), 2 + 6);
	assert_non_null(strstr(out, "< 0 : 1 "));
	assert_null(strstr(out, "0 -> 0"));
	assert_null(strstr(out, "128 -> 255"));
	line = strstr(out, "64 -> 127 : 8 ");
	assert_non_null(line);
	/* the fullest bucket has the full bar of 40 */
	assert_non_null(strstr(line, "|****************************************|"));
	line = strstr(out, "2 -> 3 : 1 ");
	assert_non_null(line);
	assert_non_null(strstr(line, "|*****  ")); /* 1/8 of 40 */
	assert_non_null(strstr(out, "8 -> 15 : 0 "));
	free(out);

	/* empty: the header only */
	memset(&h, 0, sizeof(h));
	f = tl_capture_begin();
	hist_print(&h, f, "", "bytes");
	out = tl_capture_end(f);
	assert_int_equal(tl_count_lines(out), 1);
	assert_true(!strncmp(out, "bytes ", 6));
	free(out);
}

TL_MAIN(test_buckets, test_bounds_tile, test_add, test_merge, test_json, test_print, test_span)
