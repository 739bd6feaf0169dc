// SPDX-License-Identifier: MIT
/*
 * lib/heatmap: log-scaled rows (lib/hist's buckets with one per octave,
 * bounds that tile the values with more), time columns merged pairwise
 * past the cap with nothing lost, and an SVG with a cell per non-empty
 * bucket and escaped titles.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/heatmap.h"
#include "lib/hist.h"
#include "tests/unit/testlib.h"

static void test_rows_are_hist_buckets(void **state)
{
	static const uint64_t v[] = {0, 1, 2, 3, 4, 1000, 4095, 4096, 1ull << 40, UINT64_MAX};
	struct heatmap *h = heatmap_new(0, 1000, 10, 1);

	(void)state;
	assert_non_null(h);
	assert_int_equal(heatmap_rows(h), HIST_BUCKETS);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint64_t lo, hi, hlo, hhi;
		int r = heatmap_row(h, v[i]);

		assert_int_equal(r, hist_bucket(v[i]));
		heatmap_row_bounds(h, r, &lo, &hi);
		hist_bounds(r, &hlo, &hhi);
		assert_int_equal(lo, hlo);
		assert_int_equal(hi, hhi);
	}
	heatmap_free(h);
}

/* With several rows per octave, each value lies in its row's bounds, rows
 * never go down as values go up, and the bounds tile without gaps. */
static void test_rows_tile(void **state)
{
	(void)state;
	for (unsigned per = 1; per <= HEATMAP_MAX_PER_OCTAVE; per++) {
		struct heatmap *h = heatmap_new(0, 1, 2, per);
		int prev = 0;

		assert_non_null(h);
		for (uint64_t v = 1; v < 5000; v += 1 + v / 64) {
			uint64_t lo, hi;
			int r = heatmap_row(h, v);

			heatmap_row_bounds(h, r, &lo, &hi);
			assert_true(lo <= v && v <= hi);
			assert_true(r >= prev);
			prev = r;
		}
		for (int r = 1; r + 1 < heatmap_rows(h); r++) {
			uint64_t lo, hi, lo2, hi2;

			heatmap_row_bounds(h, r, &lo, &hi);
			heatmap_row_bounds(h, r + 1, &lo2, &hi2);
			if (hi >= lo2) /* an empty row of a small octave */
				continue;
			assert_int_equal(hi + 1, lo2);
		}
		assert_int_equal(heatmap_row(h, UINT64_MAX), heatmap_rows(h) - 1);
		heatmap_free(h);
	}
	assert_null(heatmap_new(0, 0, 10, 1));
	assert_null(heatmap_new(0, 1, 10, HEATMAP_MAX_PER_OCTAVE + 1));
}

static void test_columns_merge(void **state)
{
	struct heatmap *h = heatmap_new(1000, 10, 4, 1);

	(void)state;
	assert_non_null(h);
	assert_int_equal(heatmap_add(h, 999, 5, 1), -ERANGE);
	assert_int_equal(heatmap_add_row(h, 1000, HIST_BUCKETS, 1), -ERANGE);
	assert_int_equal(heatmap_add(h, 1000, 5, 1), 0);  /* col 0 */
	assert_int_equal(heatmap_add(h, 1015, 5, 2), 0);  /* col 1 */
	assert_int_equal(heatmap_add(h, 1035, 100, 3), 0); /* col 3 */
	assert_int_equal(heatmap_cols(h), 4);
	assert_int_equal(heatmap_cell(h, 1, hist_bucket(5)), 2);
	/* Column 8 does not fit in 4 of 10 ns: 4 columns of 40 ns. */
	assert_int_equal(heatmap_add(h, 1085, 5, 4), 0);
	assert_int_equal(heatmap_col_ns(h), 40);
	assert_int_equal(heatmap_cols(h), 3);
	assert_int_equal(heatmap_cell(h, 0, hist_bucket(5)), 3);
	assert_int_equal(heatmap_cell(h, 0, hist_bucket(100)), 3);
	assert_int_equal(heatmap_cell(h, 2, hist_bucket(5)), 4);
	assert_int_equal(heatmap_total(h), 10);
	assert_int_equal(heatmap_cell(h, 9, 1), 0);
	/* A count of 0 only stretches the time axis. */
	assert_int_equal(heatmap_add_row(h, 1159, 0, 0), 0);
	assert_int_equal(heatmap_cols(h), 4);
	assert_int_equal(heatmap_total(h), 10);
	heatmap_free(h);
	heatmap_free(NULL);
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

static void test_svg(void **state)
{
	struct heatmap *h = heatmap_new(0, 1000000000, 100, 2);
	struct heatmap_opts o = {.title = "disk <vda> & \"more\"", .unit = "ns"};
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(h);
	for (uint64_t s = 0; s < 5; s++) {
		assert_int_equal(heatmap_add(h, s * 1000000000, 150000, 10 + s), 0);
		assert_int_equal(heatmap_add(h, s * 1000000000, 3000000, 1), 0);
	}
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(heatmap_svg(h, &o, f), 0);
	fclose(f);
	assert_int_equal(count(text, "class=\"cell\""), 10);
	assert_non_null(strstr(text, "disk &lt;vda&gt; &amp; &quot;more&quot;"));
	assert_non_null(strstr(text, "</svg>"));
	assert_non_null(strstr(text, "2.1ms"));
	assert_non_null(strstr(text, "65 in all"));
	free(text);
	heatmap_free(h);
}

int main(void)
{
	return tl_run(TL_TESTS(test_rows_are_hist_buckets, test_rows_tile, test_columns_merge,
			       test_svg),
		      NULL, NULL, NULL, NULL);
}
