// SPDX-License-Identifier: MIT
/*
 * The explorer page's views of stacks: GET /api/v1/stacks?format=json (the
 * compact JSON of render_json() with the selection, totals and sampling
 * rates around it) and GET /api/v1/diff, a base selection against a
 * target selection.
 *
 * A diff sums both selections into one fold_set, the target into its
 * counts and the base into its base counts (fold_set_add_base()), so every
 * distinct stack of either side is one entry with two counts and the
 * outputs need no join: folded lines "STACK BASE TARGET" (difffolded.pl's
 * form), the JSON with two counts per row, or a differential flame graph
 * (render_svg() with flame_opts.diff). The base's parameters are the
 * target's with "base_" in front, each the target's value when absent
 * (routes_parse_base()), so comparing two time ranges of one cgroup needs
 * only base_from and base_to.
 */
#include "exporter/http_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/page.h"
#include "exporter/render/render.h"
#include "exporter/targets.h"
#include "lib/json.h"
#include "lib/log.h"

#define NS_PER_S UINT64_C(1000000000)
#define OFF_CPU_EVENT "off-cpu"

/* ---- JSON around the stacks ---- */

static void put_string_or_null(FILE *f, const char *v)
{
	if (v)
		json_write_string(f, v);
	else
		fputs("null", f);
}

/* Unix seconds with milliseconds: exact in a JavaScript number. */
static void put_seconds(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03" PRIu64, ns / NS_PER_S, ns % NS_PER_S / 1000000);
}

/* "selection":{...},"unit":"...","totals":{...},"rates":[...] of one side. */
static void put_side(FILE *f, const struct store_selection *s, const struct routes_sum *x)
{
	const struct {
		const char *k, *v;
	} fld[] = { { "host", s->host },
		    { "cgroup", s->cgroup },
		    { "container", s->container },
		    { "pod", s->pod },
		    { "event", s->event } };

	fputs("\"selection\":{", f);
	for (size_t i = 0; i < sizeof(fld) / sizeof(fld[0]); i++) {
		fprintf(f, "\"%s\":", fld[i].k);
		put_string_or_null(f, fld[i].v);
		putc(',', f);
	}
	fputs("\"from\":", f);
	put_seconds(f, s->from_ns);
	fputs(",\"to\":", f);
	put_seconds(f, s->to_ns);
	fprintf(f, "},\n\"unit\":\"%s\",\"totals\":{\"samples\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
		   "},\n\"rates\":[",
		s->event && !strcmp(s->event, OFF_CPU_EVENT) ? "microseconds" : "samples",
		x->samples, x->value_ns);
	for (size_t i = 0; i < x->nrates; i++) {
		const struct routes_rate *r = &x->rates[i];

		fputs(i ? ",{\"event\":" : "{\"event\":", f);
		json_write_string(f, r->event);
		fprintf(f,
			",\"frequency\":%" PRIu64 ",\"period\":%" PRIu64 ",\"samples\":%" PRIu64
			",\"cpu_ns\":%" PRIu64 "}",
			r->frequency, r->period, r->samples, r->value_ns);
	}
	fputs("]", f);
}

/* The JSON answer: @head writes the members before the stacks. */
static enum MHD_Result serve_json(struct http *h, struct MHD_Connection *c, struct req *r,
				  const struct fold_set *fs, bool diff,
				  void (*head)(FILE *f, const void *arg), const void *arg)
{
	struct routes_modules mx = { .store = h->cfg.store };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int ret = -ENOMEM;

	if (f) {
		putc('{', f);
		head(f, arg);
		fputs(",\n", f);
		ret = render_json(fs, diff, routes_module_of, &mx, f);
		fputs("}\n", f);
		if (fclose(f))
			ret = -ENOMEM;
	}
	routes_modules_release(&mx);
	if (ret || !text) {
		free(text);
		return http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	}
	return http_respond(c, r, MHD_HTTP_OK, "application/json", text, len, true, NULL);
}

struct stacks_head {
	const struct store_selection *sel;
	const struct routes_sum *x;
};

static void stacks_head(FILE *f, const void *arg)
{
	const struct stacks_head *a = arg;

	put_side(f, a->sel, a->x);
}

enum MHD_Result routes_serve_stacks_json(struct http *h, struct MHD_Connection *c, struct req *r,
					 const struct routes_sum *x)
{
	struct stacks_head a = { &r->q.sel, x };

	return serve_json(h, c, r, x->fs, false, stacks_head, &a);
}

/* ---- /api/v1/diff ---- */

int routes_parse_diff_query(struct MHD_Connection *c, struct stacks_query *q, char *why,
			    size_t whylen)
{
	static const char *const names[] = { "folded", "json", "svg" };
	static const enum format fmts[] = { FMT_FOLDED, FMT_JSON, FMT_SVG };
	const char *format, *norm;

	if (routes_parse_selection(c, q, why, whylen) ||
	    routes_parse_base(c, &q->sel, &q->base, why, whylen))
		return -EINVAL;
	format = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	if (routes_format(format && *format ? format : NULL, names, fmts, 3, &q->format, why,
			  whylen))
		return -EINVAL;
	norm = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "normalize");
	q->normalize = true;
	if (norm && *norm) {
		if (!strcmp(norm, "0") || !strcmp(norm, "false")) {
			q->normalize = false;
		} else if (strcmp(norm, "1") && strcmp(norm, "true")) {
			snprintf(why, whylen,
				 "normalize: '%.32s': want 1 (compare shares, the default) or 0 "
				 "(compare counts)",
				 norm);
			return -EINVAL;
		}
	}
	return 0;
}

struct diff_head {
	const struct stacks_query *q;
	const struct routes_sum *t, *b;
};

static void diff_head(FILE *f, const void *arg)
{
	const struct diff_head *a = arg;

	fputs("\"base\":{", f);
	put_side(f, &a->q->base, a->b);
	fputs("},\n\"target\":{", f);
	put_side(f, &a->q->sel, a->t);
	fprintf(f, "},\n\"normalize\":%s", a->q->normalize ? "true" : "false");
}

struct diff_draw {
	const struct fold_set *fs;
	bool normalize;
};

static int draw_diff(const void *arg, const char *title, const char *subtitle, FILE *f)
{
	const struct diff_draw *d = arg;
	struct flame_opts o = {
		.title = title, .subtitle = subtitle, .diff = true, .normalize = d->normalize
	};

	return render_svg(d->fs, &o, f);
}

/* "SEL FROM to TO, N samples" of one side. */
static void side_text(struct page *p, const struct store_selection *s, uint64_t samples)
{
	char from[40], to[40];

	targets_time(s->from_ns, from, sizeof(from));
	targets_time(s->to_ns, to, sizeof(to));
	routes_selection_text(s, p);
	page_printf(p, " %s to %s, %" PRIu64 " samples", from, to, samples);
}

static enum MHD_Result serve_diff_svg(struct MHD_Connection *c, struct req *r,
				      const struct stacks_query *q, const struct fold_set *fs,
				      unsigned status)
{
	struct diff_draw d = { fs, q->normalize };
	struct page t, sub;

	page_init(&t, 0);
	page_put(&t, "cgperf diff: ");
	side_text(&t, &q->sel, fold_set_samples(fs));
	page_init(&sub, 0);
	page_put(&sub, "base: ");
	side_text(&sub, &q->base, fold_set_base_samples(fs));
	page_printf(&sub, ". Width: target samples; red grown, blue shrunk (%s), yellow only in "
			  "the target",
		    q->normalize ? "share of each side" : "samples");
	return routes_svg(c, r, status, &t, &sub, draw_diff, &d);
}

enum MHD_Result routes_serve_diff(struct http *h, struct MHD_Connection *c, struct req *r)
{
	const struct stacks_query q = r->q; /* parsed by first_call() */
	struct routes_sum t = { 0 }, b = { .base = true };
	struct fold_set *fs = fold_set_new();
	enum MHD_Result res;
	bool empty;
	int ret;

	if (!fs)
		return http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	t.fs = b.fs = fs;
	ret = routes_sum_stacks(h, &q.sel, &t);
	if (!ret)
		ret = routes_sum_stacks(h, &q.base, &b);
	if (ret) {
		log_kv(LOG_ERROR, "diff query failed", "error", strerror(-ret), NULL);
		res = http_answer(c, r, ret == -ENOMEM ? MHD_HTTP_SERVICE_UNAVAILABLE
						       : MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "stacks query failed\n");
		goto out;
	}
	empty = !fold_set_samples(fs) && !fold_set_base_samples(fs);
	if (q.format == FMT_SVG) {
		res = serve_diff_svg(c, r, &q, fs, empty ? MHD_HTTP_NOT_FOUND : MHD_HTTP_OK);
	} else if (empty) {
		res = http_answer(c, r, MHD_HTTP_NOT_FOUND,
				  "no samples in either selection (host, cgroup, container, pod, "
				  "event between from and to, and their base_ forms)\n");
	} else if (q.format == FMT_FOLDED) {
		res = routes_folded_text(c, r, fs, render_folded_diff);
	} else {
		struct diff_head a = { &q, &t, &b };

		res = serve_json(h, c, r, fs, true, diff_head, &a);
	}
out:
	routes_sum_release(&t);
	routes_sum_release(&b);
	fold_set_free(fs);
	return res;
}
