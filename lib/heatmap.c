// SPDX-License-Identifier: MIT
/*
 * Heat maps: a grid of counts, columns by time, rows by log-scaled value,
 * and its SVG.
 *
 * The grid is column-major (a column is one time bucket, rows contiguous)
 * and grows by columns as time goes on. When a value lands past
 * max_cols, neighbouring columns are summed pairwise and col_ns doubles
 * until it fits: the picture keeps its whole time span at a coarser step,
 * as trace2heatmap.pl's --step would if chosen after the fact.
 *
 * Rows within an octave [2^b, 2^(b+1)) are split linearly in per_octave
 * parts: integer arithmetic, exact for per_octave 1 (lib/hist buckets).
 *
 * The drawing follows the shape of trace2heatmap.pl's output: time left to
 * right, latency bottom (small) to top (large), darker for more; only the
 * rows from the lowest to the highest non-empty one are drawn. Colours go
 * from pale yellow to dark red on a linear scale of the count (a cell of
 * count 1 is still visible).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/heatmap.h"
#include "lib/grow.h"

struct heatmap {
	uint64_t t0, col_ns, total;
	size_t max_cols, ncols, capcols;
	unsigned per;
	int nrows;
	uint64_t *cells; /* ncols x nrows */
};

struct heatmap *heatmap_new(uint64_t t0_ns, uint64_t col_ns, size_t max_cols,
			    unsigned per_octave)
{
	struct heatmap *h;

	if (!col_ns || max_cols < 2 || !per_octave || per_octave > HEATMAP_MAX_PER_OCTAVE) {
		errno = EINVAL;
		return NULL;
	}
	h = malloc(sizeof(*h));
	if (!h)
		return NULL;
	*h = (struct heatmap){
		.t0 = t0_ns,
		.col_ns = col_ns,
		.max_cols = max_cols,
		.per = per_octave,
		.nrows = 1 + 64 * (int)per_octave,
	};
	return h;
}

void heatmap_free(struct heatmap *h)
{
	if (!h)
		return;
	free(h->cells);
	free(h);
}

int heatmap_rows(const struct heatmap *h)
{
	return h->nrows;
}

int heatmap_row(const struct heatmap *h, uint64_t v)
{
	int b;
	uint64_t sub;

	if (!v)
		return 0;
	b = 63 - __builtin_clzll(v);
	sub = (uint64_t)(((unsigned __int128)(v - (1ull << b)) * h->per) >> b);
	return 1 + b * (int)h->per + (int)sub;
}

void heatmap_row_bounds(const struct heatmap *h, int row, uint64_t *lo, uint64_t *hi)
{
	int b;
	unsigned sub;
	uint64_t base;

	if (row <= 0) {
		*lo = *hi = 0;
		return;
	}
	b = (row - 1) / (int)h->per;
	sub = (unsigned)(row - 1) % h->per;
	base = 1ull << b;
	/* v is in row r when floor((v - base) * per / base) == sub. */
	*lo = base + (uint64_t)(((unsigned __int128)base * sub + h->per - 1) / h->per);
	*hi = sub + 1 == h->per
		      ? base + (base - 1)
		      : base + (uint64_t)(((unsigned __int128)base * (sub + 1) + h->per - 1) / h->per) - 1;
	if (*hi < *lo)
		*hi = *lo; /* an empty row of a small octave */
}

/* Sum neighbouring columns until column @idx fits; col_ns doubles each time. */
static size_t fit_column(struct heatmap *h, uint64_t off)
{
	uint64_t idx = off / h->col_ns;

	while (idx >= h->max_cols) {
		size_t n = (h->ncols + 1) / 2;

		for (size_t c = 0; c < n; c++) {
			uint64_t *to = h->cells + c * (size_t)h->nrows;
			const uint64_t *a = h->cells + 2 * c * (size_t)h->nrows;

			if (c)
				memcpy(to, a, (size_t)h->nrows * sizeof(*to));
			if (2 * c + 1 < h->ncols)
				for (int r = 0; r < h->nrows; r++)
					to[r] += a[h->nrows + r];
		}
		h->ncols = n;
		h->col_ns *= 2;
		idx = off / h->col_ns;
	}
	return (size_t)idx;
}

int heatmap_add_row(struct heatmap *h, uint64_t t_ns, int row, uint64_t n)
{
	size_t col;

	if (t_ns < h->t0 || row < 0 || row >= h->nrows)
		return -ERANGE;
	col = fit_column(h, t_ns - h->t0);
	while (h->ncols <= col) {
		size_t need = (h->ncols + 1) * (size_t)h->nrows;

		while (need > h->capcols) {
			uint64_t *v = grow_array(h->cells, &h->capcols, sizeof(*v),
						 16 * (size_t)h->nrows);

			if (!v)
				return -ENOMEM;
			h->cells = v;
		}
		memset(h->cells + h->ncols * (size_t)h->nrows, 0, (size_t)h->nrows * sizeof(uint64_t));
		h->ncols++;
	}
	h->cells[col * (size_t)h->nrows + (size_t)row] += n;
	h->total += n;
	return 0;
}

int heatmap_add(struct heatmap *h, uint64_t t_ns, uint64_t v, uint64_t n)
{
	return heatmap_add_row(h, t_ns, heatmap_row(h, v), n);
}

size_t heatmap_cols(const struct heatmap *h)
{
	return h->ncols;
}

uint64_t heatmap_col_ns(const struct heatmap *h)
{
	return h->col_ns;
}

uint64_t heatmap_cell(const struct heatmap *h, size_t col, int row)
{
	if (col >= h->ncols || row < 0 || row >= h->nrows)
		return 0;
	return h->cells[col * (size_t)h->nrows + (size_t)row];
}

uint64_t heatmap_total(const struct heatmap *h)
{
	return h->total;
}

/* ---- SVG ---------------------------------------------------------------- */

#define W 1100
#define LEFT 100
#define RIGHT 150
#define TOP 70
#define BOTTOM 60
#define PLOT_W (W - LEFT - RIGHT)

/* @s as XML text: the five entities, control characters as '?'. */
static void xml_text(FILE *f, const char *s)
{
	static const char *const ent[] = {['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;",
					  ['"'] = "&quot;", ['\''] = "&apos;"};

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < sizeof(ent) / sizeof(ent[0]) && ent[c])
			fputs(ent[c], f);
		else
			putc(c < 0x20 || c == 0x7f ? '?' : c, f);
	}
}

/* @v in @unit, scaled when the unit is ns: "250ns", "1.5us", "12ms", "3s". */
static void value_label(char *buf, size_t len, uint64_t v, const char *unit)
{
	static const struct {
		double div;
		const char *name;
	} ns[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}};

	if (unit && !strcmp(unit, "ns"))
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			if ((double)v >= ns[i].div) {
				snprintf(buf, len, "%.3g%s", (double)v / ns[i].div, ns[i].name);
				return;
			}
	snprintf(buf, len, "%" PRIu64 "%s", v, unit ? unit : "");
}

/* Colour of a count: pale yellow (1) to dark red (@max), linear. */
static void colour(uint64_t n, uint64_t max, int rgb[3])
{
	static const int lo[3] = {255, 237, 160}, hi[3] = {128, 0, 38};
	double x = max > 1 ? (double)(n - 1) / (double)(max - 1) : 1.0;

	for (int i = 0; i < 3; i++)
		rgb[i] = (int)(lo[i] + (hi[i] - lo[i]) * x + 0.5);
}

struct frame {
	int first, last;  /* rows drawn */
	double cw, rh;    /* cell width and height */
	int plot_h;
	uint64_t max;     /* largest cell */
};

static void frame_of(const struct heatmap *h, struct frame *fr)
{
	fr->first = h->nrows;
	fr->last = -1;
	fr->max = 0;
	for (size_t c = 0; c < h->ncols; c++)
		for (int r = 0; r < h->nrows; r++) {
			uint64_t n = h->cells[c * (size_t)h->nrows + (size_t)r];

			if (!n)
				continue;
			fr->first = r < fr->first ? r : fr->first;
			fr->last = r > fr->last ? r : fr->last;
			fr->max = n > fr->max ? n : fr->max;
		}
	if (fr->last < 0)
		fr->first = fr->last = 0;
	int rows = fr->last - fr->first + 1;

	fr->rh = rows > 40 ? 10.0 : rows > 20 ? 16.0 : 24.0;
	fr->plot_h = (int)(fr->rh * rows);
	fr->cw = (double)PLOT_W / (double)(h->ncols ? h->ncols : 1);
}

static void draw_axes(const struct heatmap *h, const struct frame *fr, const char *unit, FILE *f)
{
	int every = fr->rh >= 16 ? 1 : 2, ticks = 10;
	double secs = (double)(h->ncols * h->col_ns) / 1e9;
	char lab[48];

	fprintf(f, "<g class=\"axis\" font-size=\"11\">\n");
	for (int r = fr->first; r <= fr->last + 1; r += every) {
		uint64_t lo, hi;
		double y = TOP + fr->plot_h - (r - fr->first) * fr->rh;

		heatmap_row_bounds(h, r <= fr->last ? r : fr->last, &lo, &hi);
		value_label(lab, sizeof(lab), r <= fr->last ? lo : hi + 1, unit);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LEFT - 6, y + 4);
		xml_text(f, lab);
		fprintf(f, "</text>\n");
	}
	/* Ticks at a round step (1, 2 or 5 x 10^k s), at most @ticks of them. */
	double step = secs > 0 ? pow(10, floor(log10(secs / ticks))) : 1;

	step *= secs / step > 5 * ticks ? 10 : secs / step > 2 * ticks ? 5 : secs / step > ticks ? 2 : 1;
	for (int i = 0; secs > 0 && i * step <= secs * (1 + 1e-9); i++) {
		double x = LEFT + (double)PLOT_W * (i * step) / secs;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#666\"/>\n", x,
			TOP + fr->plot_h, x, TOP + fr->plot_h + 5);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.4gs</text>\n", x,
			TOP + fr->plot_h + 18, i * step);
	}
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
		   "stroke=\"#666\"/>\n", LEFT, TOP, PLOT_W, fr->plot_h);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (s), columns of ",
		LEFT + PLOT_W / 2, TOP + fr->plot_h + 40);
	value_label(lab, sizeof(lab), h->col_ns, "ns");
	xml_text(f, lab);
	fprintf(f, "</text>\n<text x=\"20\" y=\"%d\" text-anchor=\"middle\" "
		   "transform=\"rotate(-90 20 %d)\">latency</text>\n</g>\n",
		TOP + fr->plot_h / 2, TOP + fr->plot_h / 2);
}

static void draw_legend(const struct frame *fr, FILE *f)
{
	int x = LEFT + PLOT_W + 30, steps = 6;

	fprintf(f, "<g class=\"legend\" font-size=\"11\">\n<text x=\"%d\" y=\"%d\">count</text>\n", x,
		TOP - 8);
	for (int i = 0; i < steps && fr->max; i++) {
		uint64_t n = 1 + (fr->max - 1) * (uint64_t)i / (uint64_t)(steps - 1);
		int rgb[3];

		colour(n, fr->max, rgb);
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"18\" height=\"16\" fill=\"rgb(%d,%d,%d)\" "
			   "stroke=\"#999\"/><text x=\"%d\" y=\"%d\">%" PRIu64 "</text>\n",
			x, TOP + i * 20, rgb[0], rgb[1], rgb[2], x + 24, TOP + i * 20 + 12, n);
	}
	fprintf(f, "</g>\n");
}

static void draw_cells(const struct heatmap *h, const struct frame *fr, const char *unit, FILE *f)
{
	char lo_s[48], hi_s[48];

	fprintf(f, "<g class=\"cells\">\n");
	for (size_t c = 0; c < h->ncols; c++)
		for (int r = fr->first; r <= fr->last; r++) {
			uint64_t n = h->cells[c * (size_t)h->nrows + (size_t)r], lo, hi;
			int rgb[3];

			if (!n)
				continue;
			colour(n, fr->max, rgb);
			heatmap_row_bounds(h, r, &lo, &hi);
			value_label(lo_s, sizeof(lo_s), lo, unit);
			value_label(hi_s, sizeof(hi_s), hi, unit);
			fprintf(f, "<rect class=\"cell\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
				   "height=\"%.1f\" fill=\"rgb(%d,%d,%d)\"><title>%.3fs: ",
				LEFT + fr->cw * (double)c, TOP + fr->plot_h - (r - fr->first + 1) * fr->rh,
				fr->cw, fr->rh, rgb[0], rgb[1], rgb[2],
				(double)(c * h->col_ns) / 1e9);
			xml_text(f, lo_s);
			fputs("..", f);
			xml_text(f, hi_s);
			fprintf(f, ", %" PRIu64 "</title></rect>\n", n);
		}
	fprintf(f, "</g>\n");
}

int heatmap_svg(const struct heatmap *h, const struct heatmap_opts *o, FILE *f)
{
	struct frame fr;
	int height;

	frame_of(h, &fr);
	height = TOP + fr.plot_h + BOTTOM;
	if (height < TOP + 6 * 20 + BOTTOM)
		height = TOP + 6 * 20 + BOTTOM;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		   "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Verdana, sans-serif\">\n"
		   "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n"
		   "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
		W, height, W, height, LEFT, TOP, PLOT_W, fr.plot_h);
	fprintf(f, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">", W / 2);
	xml_text(f, o && o->title ? o->title : "Latency heat map");
	fprintf(f, "</text>\n<text x=\"%d\" y=\"44\" text-anchor=\"middle\" font-size=\"12\" "
		   "fill=\"#555\">", W / 2);
	if (o && o->subtitle)
		xml_text(f, o->subtitle);
	fprintf(f, "%s%" PRIu64 " in all</text>\n", o && o->subtitle ? ", " : "", h->total);
	draw_cells(h, &fr, o ? o->unit : NULL, f);
	draw_axes(h, &fr, o ? o->unit : NULL, f);
	draw_legend(&fr, f);
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}
