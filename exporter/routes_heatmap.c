// SPDX-License-Identifier: MIT
/*
 * GET /api/v1/heatmap?probe=LABEL[&host=..&cgroup=..&from=..&to=..&format=svg|json]:
 * a latency heat map of one probe from the latency histograms the agents
 * pushed, one per probe, cgroup and push interval (the store's
 * store_latency_rows()). Columns are time buckets as wide as the median
 * interval (merged two by two past HEAT_MAX_COLS), rows the histograms'
 * log2 buckets, so no bucket is split or guessed: a cell is the sum of the
 * bucket's counts of the intervals whose middle falls in the column (over
 * every cgroup of the selection). SVG by lib/heatmap, or the
 * same grid as JSON.
 */
#include "exporter/http_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/page.h"
#include "exporter/targets.h"
#include "lib/grow.h"
#include "lib/heatmap.h"
#include "lib/hist.h"
#include "lib/log.h"

#define HEAT_MAX_COLS 400
#define HEAT_MAX_ROWS 200000 /* stored intervals read for one map */
#define HEAT_MIN_COL_NS 100000000ull /* 100 ms */

int routes_parse_heatmap_query(struct MHD_Connection *c, struct stacks_query *q, char *why,
			       size_t whylen)
{
	static const char *const names[] = { "svg", "json" };
	static const enum format fmts[] = { FMT_SVG, FMT_JSON };
	const char *format = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");

	if (routes_parse_selection(c, q, why, whylen))
		return -EINVAL;
	if (!q->probe) {
		snprintf(why, whylen, "probe: the probe's label is needed (probe=block:block_rq_issue)");
		return -EINVAL;
	}
	return routes_format(format && *format ? format : NULL, names, fmts, 2, &q->format, why,
			     whylen);
}

/* The rows read, then placed: t0 and the column width come from them. */
struct heat_rows {
	struct {
		uint64_t start, len;
		struct hist h;
	} *v;
	size_t n, cap;
	bool cut;
};

static int take_row(void *arg, const struct store_latency_row *r)
{
	struct heat_rows *x = arg;

	if (x->n >= HEAT_MAX_ROWS) {
		x->cut = true;
		return 1;
	}
	if (GROW_ARRAY(x->v, x->n, x->cap, 64) < 0)
		return -ENOMEM;
	x->v[x->n].start = r->start_ns;
	x->v[x->n].len = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
	x->v[x->n++].h = r->latency_ns;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median interval of @x (partial ones, at a start or a reload, do not
 * count much), at least HEAT_MIN_COL_NS; 0 on ENOMEM. */
static uint64_t column_width(const struct heat_rows *x)
{
	uint64_t *len = malloc(x->n * sizeof(*len)), col;

	if (!len)
		return 0;
	for (size_t i = 0; i < x->n; i++)
		len[i] = x->v[i].len;
	qsort(len, x->n, sizeof(*len), cmp_u64);
	col = len[x->n / 2];
	free(len);
	return col < HEAT_MIN_COL_NS ? HEAT_MIN_COL_NS : col;
}

/*
 * The grid of @x: NULL + errno. An interval goes to the column of its
 * middle: push intervals start a few ms early or late, and by its start
 * one would share a column with its neighbour now and then.
 */
static struct heatmap *place(const struct heat_rows *x, uint64_t *t0_out)
{
	uint64_t t0 = UINT64_MAX, col = column_width(x);
	struct heatmap *m;

	if (!col) {
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < x->n; i++)
		t0 = x->v[i].start < t0 ? x->v[i].start : t0;
	m = heatmap_new(t0, col, HEAT_MAX_COLS, 1);
	for (size_t i = 0; m && i < x->n; i++) {
		uint64_t mid = x->v[i].start + x->v[i].len / 2;

		for (int k = 0; k < HIST_BUCKETS; k++)
			if (x->v[i].h.b[k] && heatmap_add_row(m, mid, k, x->v[i].h.b[k]) < 0) {
				heatmap_free(m);
				errno = ENOMEM;
				return NULL;
			}
	}
	*t0_out = t0;
	return m;
}

static void heat_json(const struct heatmap *m, const struct stacks_query *q, uint64_t t0,
		      struct page *p)
{
	bool first = true;

	page_put(p, "{\"probe\":");
	page_json(p, q->probe);
	page_printf(p, ",\"start_ns\":%" PRIu64 ",\"column_ns\":%" PRIu64 ",\"columns\":%zu"
		       ",\"total\":%" PRIu64 ",\"cells\":[",
		    t0, heatmap_col_ns(m), heatmap_cols(m), heatmap_total(m));
	for (size_t c = 0; c < heatmap_cols(m); c++)
		for (int r = 0; r < heatmap_rows(m); r++) {
			uint64_t n = heatmap_cell(m, c, r), lo, hi;

			if (!n)
				continue;
			heatmap_row_bounds(m, r, &lo, &hi);
			page_printf(p, "%s{\"column\":%zu,\"ge\":%" PRIu64 ",\"le\":%" PRIu64
				       ",\"count\":%" PRIu64 "}",
				    first ? "" : ",", c, lo, hi, n);
			first = false;
		}
	page_put(p, "]}\n");
}

static int draw_heat(const void *arg, const char *title, const char *subtitle, FILE *f)
{
	struct heatmap_opts o = {.title = title, .subtitle = subtitle, .unit = "ns"};

	return heatmap_svg(arg, &o, f);
}

static enum MHD_Result heat_svg(struct MHD_Connection *c, struct req *r,
				const struct stacks_query *q, const struct heatmap *m)
{
	char from[40], to[40];
	struct page t, sub;

	targets_time(q->sel.from_ns, from, sizeof(from));
	targets_time(q->sel.to_ns, to, sizeof(to));
	page_init(&t, 0);
	page_printf(&t, "cgperf: latency of %s", q->probe);
	page_init(&sub, 0);
	routes_selection_text(&q->sel, &sub);
	page_printf(&sub, ", %s to %s", from, to);
	return routes_svg(c, r, MHD_HTTP_OK, &t, &sub, draw_heat, m);
}

enum MHD_Result routes_serve_heatmap(struct http *h, struct MHD_Connection *c, struct req *r)
{
	const struct stacks_query q = r->q; /* parsed by first_call() */
	struct heat_rows x = {0};
	struct heatmap *m = NULL;
	uint64_t t0 = 0;
	enum MHD_Result res;
	int ret = store_latency_rows(h->cfg.store, &q.sel, q.probe, take_row, &x);

	if (ret < 0) {
		free(x.v);
		log_kv(LOG_ERROR, "heat map query failed", "error", strerror(-ret), NULL);
		return http_answer(c, r, ret == -EOPNOTSUPP ? MHD_HTTP_NOT_IMPLEMENTED
				   : ret == -ENOMEM ? MHD_HTTP_SERVICE_UNAVAILABLE
						    : MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "heat map query failed\n");
	}
	if (!x.n) {
		free(x.v);
		return http_answer(c, r, MHD_HTTP_NOT_FOUND,
				   "no latency histograms of this probe in this selection (probe, host, "
				   "cgroup) between from and to\n");
	}
	if (x.cut)
		log_kv(LOG_WARN, "heat map cut to its first intervals", "probe", q.probe, NULL);
	m = place(&x, &t0);
	if (!m) {
		res = http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	} else if (q.format == FMT_JSON) {
		struct page p;
		char *text;
		size_t len = 0;

		page_init(&p, 0);
		heat_json(m, &q, t0, &p);
		text = page_take(&p, &len);
		res = text ? http_respond(c, r, MHD_HTTP_OK, "application/json", text, len, true, NULL)
			   : http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	} else {
		res = heat_svg(c, r, &q, m);
	}
	heatmap_free(m);
	free(x.v);
	return res;
}
