/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_HEATMAP_H
#define CGPERF_LIB_HEATMAP_H

/*
 * Latency heat maps (time x latency, colour by count), as Brendan Gregg's
 * trace2heatmap.pl draws them: `trace --heatmap` from the pairs it
 * measured, the exporter's /api/v1/heatmap from the per-interval latency
 * histograms the agents pushed.
 *
 * Columns are time buckets of col_ns from t0; past max_cols the columns
 * are merged two by two (col_ns doubles), so memory stays bounded
 * whatever the duration. Rows are log-scaled: row 0 holds 0, then
 * @per_octave rows per power of two (with 1, row k holds [2^(k-1), 2^k):
 * lib/hist's buckets, so a histogram's bucket is its row).
 *
 * The SVG is self-contained (no script): a cell per non-empty (column,
 * row) as a <rect class="cell"> with a <title> tooltip, the time axis in
 * seconds from t0, the latency axis with units, a legend of the colours.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HEATMAP_MAX_PER_OCTAVE 8

struct heatmap;

/* NULL + errno (EINVAL for col_ns 0, max_cols < 2 or per_octave outside
 * 1..HEATMAP_MAX_PER_OCTAVE; ENOMEM). */
struct heatmap *heatmap_new(uint64_t t0_ns, uint64_t col_ns, size_t max_cols,
			    unsigned per_octave);
void heatmap_free(struct heatmap *h);

/* The row of value @v, and the values row @row holds: [lo, hi]. */
int heatmap_row(const struct heatmap *h, uint64_t v);
void heatmap_row_bounds(const struct heatmap *h, int row, uint64_t *lo, uint64_t *hi);
int heatmap_rows(const struct heatmap *h);

/* Count @n values @v at time @t_ns (or @n in row @row). 0, -ERANGE
 * before t0 or for a bad row, -ENOMEM. @n 0 only extends the time axis
 * to @t_ns (a trace that ends later than its last value). */
int heatmap_add(struct heatmap *h, uint64_t t_ns, uint64_t v, uint64_t n);
int heatmap_add_row(struct heatmap *h, uint64_t t_ns, int row, uint64_t n);

size_t heatmap_cols(const struct heatmap *h);
uint64_t heatmap_col_ns(const struct heatmap *h);
uint64_t heatmap_cell(const struct heatmap *h, size_t col, int row);
uint64_t heatmap_total(const struct heatmap *h);

struct heatmap_opts {
	const char *title, *subtitle; /* NULL: none */
	const char *unit;             /* of the values: "ns" scales to us, ms, s */
};

/* Write the SVG to @out. 0, or -EIO when a write failed. */
int heatmap_svg(const struct heatmap *h, const struct heatmap_opts *o, FILE *out);

#endif
