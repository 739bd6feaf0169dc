// SPDX-License-Identifier: MIT
/*
 * GET /api/v1/series: per-cgroup counters over time as JSON, the matrix of
 * Prometheus' query_range API, for the page's series view:
 *
 *   {"status":"success","data":{"resultType":"matrix","result":[
 *     {"metric":{"host":..,"id":..,"event":..,...},"values":[[T,"V"],...]}]}}
 *
 * The store sums the scaled counter deltas per step of the top series
 * (store_series(): the bucketing and the ranking are its query's), so this
 * file only checks the parameters, turns each step's increase into a rate
 * (or not) and writes JSON, every string through lib/json. A step whose
 * series read nothing is left out, as Prometheus leaves out missing
 * points; a selection without data is an empty result, not an error.
 *
 * The sum over a range of the steps' increases (rate=0) is the increase
 * of the series' /metrics counter over the same pushes: both add
 * store_scaled() of the same deltas (only the order of the additions
 * differs, so doubles may differ in their last bits).
 */
#include "exporter/http_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/page.h"
#include "lib/grow.h"
#include "lib/log.h"
#include "lib/units.h"

#define NS_PER_S UINT64_C(1000000000)
/* Steps of one series, at most (Prometheus' query_range refuses more). */
#define SERIES_MAX_POINTS 11000u
/* The default step gives at most this many points. */
#define SERIES_DEFAULT_POINTS 1000u
#define SERIES_TOP_DEFAULT 10u
#define SERIES_TOP_MAX 100u
/* event=cpu: task-clock (ns) in seconds, as cgperf_cgroup_cpu_seconds_total. */
#define CPU_EVENT "cpu"
#define CPU_COUNTER "task-clock"

/* Steps of @step_ns (aligned to multiples of it) that [@from, @to) touches. */
static uint64_t steps_in(uint64_t from, uint64_t to, uint64_t step)
{
	return (to - 1) / step - from / step + 1;
}

/* The default step: the first of a ladder of round steps, from the agents'
 * default push interval (15 s) up, that gives at most
 * SERIES_DEFAULT_POINTS steps over the range; whole days past the ladder. */
static uint64_t default_step(uint64_t from, uint64_t to)
{
	static const uint64_t ladder[] = { 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
					   10800, 21600, 43200, 86400 };
	uint64_t step;

	for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++)
		if (steps_in(from, to, ladder[i] * NS_PER_S) <= SERIES_DEFAULT_POINTS)
			return ladder[i] * NS_PER_S;
	step = 86400 * NS_PER_S;
	while (steps_in(from, to, step) > SERIES_DEFAULT_POINTS)
		step += 86400 * NS_PER_S;
	return step;
}

/* "60" (seconds) or a duration of whole seconds ("1m", "90s"). */
static int parse_step(const char *v, uint64_t *out)
{
	const char *p = v;
	uint64_t n;

	if (units_digits(&p, &n) == 0 && !*p) {
		if (n > UINT64_MAX / NS_PER_S)
			return -ERANGE;
		*out = n * NS_PER_S;
		return 0;
	}
	if (units_duration_ns(v, &n))
		return -EINVAL;
	if (n % NS_PER_S)
		return -EINVAL;
	*out = n;
	return 0;
}

static int parse_step_param(struct MHD_Connection *c, struct stacks_query *q, char *why,
			    size_t whylen)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "step");
	uint64_t steps;

	if (!v || !*v) {
		q->step_ns = default_step(q->sel.from_ns, q->sel.to_ns);
		return 0;
	}
	if (strlen(v) > 32 || parse_step(v, &q->step_ns)) {
		snprintf(why, whylen,
			 "step: '%.32s' is not a step: want whole seconds (60) or a duration of "
			 "whole seconds (90s, 5m, 1h)",
			 v);
		return -EINVAL;
	}
	if (!q->step_ns) {
		snprintf(why, whylen, "step: must be at least 1 second");
		return -EINVAL;
	}
	steps = steps_in(q->sel.from_ns, q->sel.to_ns, q->step_ns);
	if (steps > SERIES_MAX_POINTS) {
		snprintf(why, whylen,
			 "step: %.32s gives %" PRIu64 " points between from and to, more than %u: "
			 "take a larger step or a shorter range",
			 v, steps, SERIES_MAX_POINTS);
		return -EINVAL;
	}
	return 0;
}

int routes_parse_series_query(struct MHD_Connection *c, struct stacks_query *q, char *why,
			      size_t whylen)
{
	const char *top, *rate;
	uint64_t n;

	if (routes_parse_selection(c, q, why, whylen) || parse_step_param(c, q, why, whylen))
		return -EINVAL;
	q->scale = 1;
	q->event_label = q->sel.event;
	if (!q->sel.event || !strcmp(q->sel.event, CPU_EVENT)) {
		q->sel.event = CPU_COUNTER;
		q->event_label = CPU_EVENT;
		q->scale = 1.0 / (double)NS_PER_S;
	}
	top = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "top");
	q->top = SERIES_TOP_DEFAULT;
	if (top && *top) {
		const char *p = top;

		if (units_digits(&p, &n) || *p || n < 1 || n > SERIES_TOP_MAX) {
			snprintf(why, whylen, "top: '%.32s': want a whole number from 1 to %u", top,
				 SERIES_TOP_MAX);
			return -EINVAL;
		}
		q->top = (size_t)n;
	}
	rate = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "rate");
	q->increase = false;
	if (rate && *rate) {
		if (!strcmp(rate, "0") || !strcmp(rate, "false"))
			q->increase = true;
		else if (strcmp(rate, "1") && strcmp(rate, "true")) {
			snprintf(why, whylen,
				 "rate: '%.32s': want 1 (per second, the default) or 0 "
				 "(the increase within each step)",
				 rate);
			return -EINVAL;
		}
	}
	return 0;
}

/* One series' JSON object, kept until all are read, then written by sum. */
struct series_out {
	struct page text;
	double sum;
	size_t order;
};

struct series_ctx {
	const struct stacks_query *q;
	struct series_out *v;
	size_t n, cap;
	char *host, *path, *event; /* the key of the series being written */
};

/* The "metric" object of @r's series: the labels of /metrics (the cgroup
 * path as id), the empty ones left out as Prometheus leaves them out. */
static void metric_json(struct page *p, const struct store_series_row *r, const char *event)
{
	const struct store_cgroup *c = r->cgroup;
	const struct {
		const char *k, *v;
	} l[] = {
		{ "host", c->host },
		{ "id", c->path },
		{ "container", c->container_id },
		{ "container_name", c->container_name },
		{ "pod", c->pod_uid },
		{ "pod_name", c->pod_name },
		{ "namespace", c->k8s_namespace },
		{ "unit", c->unit },
		{ "runtime", c->runtime },
		{ "image", c->image },
		{ "event", event },
	};
	bool first = true;

	page_put(p, "{\"metric\":{");
	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
		if (!l[i].v || (!*l[i].v && i > 1))
			continue;
		page_printf(p, "%s\"%s\":", first ? "" : ",", l[i].k);
		page_json(p, l[i].v);
		first = false;
	}
	page_put(p, "},\"values\":[");
}

static bool same_series(const struct series_ctx *x, const struct store_series_row *r)
{
	return x->host && !strcmp(x->host, r->cgroup->host) && !strcmp(x->path, r->cgroup->path) &&
	       !strcmp(x->event, r->event);
}

static void forget_key(struct series_ctx *x)
{
	free(x->host);
	free(x->path);
	free(x->event);
	x->host = x->path = x->event = NULL;
}

static int take_step(void *arg, const struct store_series_row *r)
{
	struct series_ctx *x = arg;
	struct series_out *o;
	double inc = r->value * x->q->scale, v;

	if (!same_series(x, r)) {
		if (x->n >= x->q->top) /* the store gives at most top series */
			return -EPROTO;
		if (GROW_ARRAY(x->v, x->n, x->cap, 16) < 0)
			return -ENOMEM;
		forget_key(x);
		x->host = strdup(r->cgroup->host);
		x->path = strdup(r->cgroup->path);
		x->event = strdup(r->event);
		if (!x->host || !x->path || !x->event)
			return -ENOMEM;
		o = &x->v[x->n];
		memset(o, 0, sizeof(*o));
		o->order = x->n++;
		page_init(&o->text, 0);
		metric_json(&o->text, r, x->q->event_label ? x->q->event_label : r->event);
	} else {
		o = &x->v[x->n - 1];
		page_putc(&o->text, ',');
	}
	o->sum += inc;
	v = x->q->increase ? inc : inc / ((double)x->q->step_ns / (double)NS_PER_S);
	page_printf(&o->text, "[%" PRIu64 ",\"", r->t_ns / NS_PER_S);
	page_double(&o->text, v);
	page_put(&o->text, "\"]");
	return page_failed(&o->text) ? -ENOMEM : 0;
}

/* Largest sum first; ties in the store's order. */
static int by_sum(const void *a, const void *b)
{
	const struct series_out *x = a, *y = b;

	if (x->sum != y->sum)
		return x->sum > y->sum ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void series_release(struct series_ctx *x)
{
	for (size_t i = 0; i < x->n; i++)
		page_release(&x->v[i].text);
	free(x->v);
	forget_key(x);
}

enum MHD_Result routes_serve_series(struct http *h, struct MHD_Connection *c, struct req *r)
{
	const struct stacks_query q = r->q; /* parsed by first_call() */
	struct series_ctx x = { .q = &q };
	struct page p;
	char *text;
	size_t len = 0;
	int ret = store_series(h->cfg.store, &q.sel, q.step_ns, q.top, take_step, &x);

	if (ret) {
		series_release(&x);
		log_kv(LOG_ERROR, "series query failed", "error", strerror(-ret), NULL);
		return http_answer(c, r, ret == -EOPNOTSUPP ? MHD_HTTP_NOT_IMPLEMENTED
				   : ret == -ENOMEM ? MHD_HTTP_SERVICE_UNAVAILABLE
						    : MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "series query failed\n");
	}
	if (x.n)
		qsort(x.v, x.n, sizeof(*x.v), by_sum);
	page_init(&p, 0);
	page_put(&p, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
	for (size_t i = 0; i < x.n; i++) {
		if (i)
			page_putc(&p, ',');
		page_putn(&p, x.v[i].text.buf, x.v[i].text.len);
		page_put(&p, "]}");
	}
	page_put(&p, "]}}\n");
	series_release(&x);
	text = page_take(&p, &len);
	return text ? http_respond(c, r, MHD_HTTP_OK, "application/json", text, len, true, NULL)
		    : http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
}
