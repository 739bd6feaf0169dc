// SPDX-License-Identifier: MIT
/*
 * The read routes of the exporter's HTTP service, served by its reader
 * threads (http.c queues them; see the design note there): /metrics (the
 * server's own figures, then the totals, then process_*), /api/v1/targets,
 * the index page, and /api/v1/stacks (folded text, pprof or an SVG flame
 * graph of a selection read from the store, outside the server's locks).
 * Each builds its answer into the request with http_answer*().
 */
#include "exporter/http_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "exporter/config.h"
#include "exporter/page.h"
#include "exporter/procmetrics.h"
#include "exporter/render/render.h"
#include "exporter/targets.h"
#include "exporter/totals.h"
#include "lib/grow.h"
#include "lib/hashmap.h"
#include "lib/strv.h"

static void self_metric(struct page *p, bool om, const char *name, const char *type,
			const char *help, uint64_t v)
{
	page_family(p, om, name, type, help);
	page_put(p, name);
	page_putc(p, ' ');
	page_u64(p, v);
	page_putc(p, '\n');
}

/* Does the Accept header ask for OpenMetrics? */
bool routes_wants_openmetrics(struct MHD_Connection *c)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");

	return a && strstr(a, "application/openmetrics-text");
}

static enum MHD_Result serve_metrics(struct http *h, struct MHD_Connection *c, struct req *r)
{
	bool om = r->om;
	struct store_stats st;
	struct page p;
	uint64_t now = http_now_ns();

	store_stats(h->cfg.store, &st);
	http_totals_refresh(h);
	page_init(&p, 0);
	pthread_mutex_lock(&h->lock);
	page_reserve(&p, h->metrics_len + h->metrics_len / 8);
	self_metric(&p, om, "cgperf_exporter_batches_received_total", "counter",
		    "Batches accepted and stored.", h->received);
	self_metric(&p, om, "cgperf_exporter_batches_duplicate_total", "counter",
		    "Batches answered 200 but not stored again (agent id and sequence known).",
		    h->duplicates);
	self_metric(&p, om, "cgperf_exporter_store_errors_total", "counter",
		    "Batches the store failed to write (answered 500).", h->store_errors);
	page_family(&p, om, "cgperf_exporter_rejects_total", "counter",
		    "Push requests refused, by reason.");
	for (int i = 0; i < REJ_N; i++)
		page_printf(&p, "cgperf_exporter_rejects_total{reason=\"%s\"} %" PRIu64 "\n",
			    http_reject_name[i], h->rejects[i]);
	self_metric(&p, om, "cgperf_exporter_busy_total", "counter",
		    "Requests answered 503 with Retry-After because a work queue was full.",
		    h->busy);
	self_metric(&p, om, "cgperf_exporter_series", "gauge",
		    "Series held for /metrics (cgroup counters, probes, agents).",
		    totals_series(h->cfg.totals));
	totals_render(h->cfg.totals, &p, om, http_cutoff(h, now));
	h->metrics_len = p.len;
	pthread_mutex_unlock(&h->lock);
	self_metric(&p, om, "cgperf_exporter_stack_rows_total", "counter",
		    "Stack sample rows written to the store since start.", st.stack_rows);
	self_metric(&p, om, "cgperf_exporter_retention_deleted_rows_total", "counter",
		    "Rows deleted by retention since start.", st.deleted_rows);
	self_metric(&p, om, "cgperf_exporter_store_size_bytes", "gauge",
		    "Size of the store on disk.", st.bytes);
	{
		const union MHD_DaemonInfo *di =
			MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		size_t qn[2];

		self_metric(&p, om, "cgperf_exporter_connections", "gauge",
			    "HTTP connections open (kept-alive agents included).",
			    di ? di->num_connections : 0);
		http_workq_depth(h, qn);
		self_metric(&p, om, "cgperf_exporter_ingest_queue", "gauge",
			    "Pushes decoded and waiting for the store thread.", qn[0]);
		self_metric(&p, om, "cgperf_exporter_connection_limit", "gauge",
			    "Connections the exporter accepts at once (--max-connections, "
			    "lowered to fit RLIMIT_NOFILE).",
			    h->cfg.max_connections);
	}
	if (h->cfg.extra_metrics)
		h->cfg.extra_metrics(h->cfg.extra_arg, &p, om);
	procmetrics_render(&p, om);
	if (om)
		page_put(&p, "# EOF\n");
	return http_answer_page(c, r, MHD_HTTP_OK,
			   om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
			      : "text/plain; version=0.0.4; charset=utf-8",
			   &p);
}

int http_render_totals(struct http *h, struct page *p)
{
	uint64_t now = http_now_ns();

	http_totals_refresh(h);
	pthread_mutex_lock(&h->lock);
	page_reserve(p, h->metrics_len + h->metrics_len / 8);
	totals_render(h->cfg.totals, p, false, http_cutoff(h, now));
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* ---- /api/v1/targets and / ---- */

/* A page written from the totals by @write (targets.h), under the lock. */
static enum MHD_Result serve_targets(struct http *h, struct MHD_Connection *c, struct req *r,
				     int (*write)(const struct totals *t, uint64_t cutoff,
						  struct page *p),
				     const char *type)
{
	struct page p;

	http_totals_refresh(h);
	page_init(&p, 0);
	pthread_mutex_lock(&h->lock);
	write(h->cfg.totals, http_cutoff(h, http_now_ns()), &p);
	pthread_mutex_unlock(&h->lock);
	return http_answer_page(c, r, MHD_HTTP_OK, type, &p);
}

/* ---- /api/v1/stacks ---- */

/* Parameter @name: NULL when absent; -EINVAL when too long. */
static int param(struct MHD_Connection *c, const char *name, const char **out, char *why,
		 size_t whylen)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	*out = v && *v ? v : NULL;
	if (v && strlen(v) > PARAM_MAX) {
		snprintf(why, whylen, "%s: longer than %d bytes", name, PARAM_MAX);
		return -EINVAL;
	}
	return 0;
}

/* Time parameter @name's value @v (NULL: absent, *@out kept) into *@out:
 * 0, or -EINVAL with why. */
static int time_param(const char *name, const char *v, uint64_t now, uint64_t *out, char *why,
		      size_t whylen)
{
	if (!v || !exporter_parse_time(v, now, out))
		return 0;
	snprintf(why, whylen,
		 "%s: '%.60s' is not a time (Unix seconds, RFC 3339, now, or -DURATION like -1h)",
		 name, v);
	return -EINVAL;
}

int routes_parse_selection(struct MHD_Connection *c, struct stacks_query *q, char *why,
			   size_t whylen)
{
	const char *from, *to;
	uint64_t now = http_now_ns();

	memset(q, 0, sizeof(*q));
	if (param(c, "host", &q->sel.host, why, whylen) ||
	    param(c, "cgroup", &q->sel.cgroup, why, whylen) ||
	    param(c, "container", &q->sel.container, why, whylen) ||
	    param(c, "pod", &q->sel.pod, why, whylen) ||
	    param(c, "event", &q->sel.event, why, whylen) || param(c, "from", &from, why, whylen) ||
	    param(c, "to", &to, why, whylen) || param(c, "probe", &q->probe, why, whylen))
		return -EINVAL;
	q->sel.to_ns = now;
	if (time_param("to", to, now, &q->sel.to_ns, why, whylen))
		return -EINVAL;
	q->sel.from_ns = q->sel.to_ns > DEFAULT_SPAN_NS ? q->sel.to_ns - DEFAULT_SPAN_NS : 0;
	if (time_param("from", from, now, &q->sel.from_ns, why, whylen))
		return -EINVAL;
	if (q->sel.from_ns >= q->sel.to_ns) {
		snprintf(why, whylen, "from is not before to");
		return -EINVAL;
	}
	return 0;
}

int routes_parse_base(struct MHD_Connection *c, const struct store_selection *target,
		      struct store_selection *base, char *why, size_t whylen)
{
	const char *const names[] = { "base_host", "base_cgroup", "base_container", "base_pod",
				      "base_event" };
	const char **const out[] = { &base->host, &base->cgroup, &base->container, &base->pod,
				     &base->event };
	const char *const dflt[] = { target->host, target->cgroup, target->container, target->pod,
				     target->event };
	const char *from, *to;
	uint64_t now = http_now_ns();

	*base = *target;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, names[i]);

		/* absent: the target's; present but empty: any */
		if (v && strlen(v) > PARAM_MAX) {
			snprintf(why, whylen, "%s: longer than %d bytes", names[i], PARAM_MAX);
			return -EINVAL;
		}
		*out[i] = !v ? dflt[i] : *v ? v : NULL;
	}
	if (param(c, "base_from", &from, why, whylen) || param(c, "base_to", &to, why, whylen) ||
	    time_param("base_to", to, now, &base->to_ns, why, whylen) ||
	    time_param("base_from", from, now, &base->from_ns, why, whylen))
		return -EINVAL;
	if (base->from_ns >= base->to_ns) {
		snprintf(why, whylen, "base_from is not before base_to");
		return -EINVAL;
	}
	return 0;
}

int routes_parse_stacks_query(struct MHD_Connection *c, struct stacks_query *q, char *why,
			      size_t whylen)
{
	const char *format;

	static const char *const names[] = { "folded", "pprof", "svg", "json" };
	static const enum format fmts[] = { FMT_FOLDED, FMT_PPROF, FMT_SVG, FMT_JSON };

	if (routes_parse_selection(c, q, why, whylen) || param(c, "format", &format, why, whylen))
		return -EINVAL;
	return routes_format(format, names, fmts, 4, &q->format, why, whylen);
}

int routes_format(const char *v, const char *const *names, const enum format *fmts, size_t n,
		  enum format *out, char *why, size_t whylen)
{
	size_t at;

	for (size_t i = 0; i < n; i++)
		if (!v || !strcmp(v, names[i])) {
			*out = fmts[i];
			return 0;
		}
	at = (size_t)snprintf(why, whylen, "format: '%.60s': want ", v);
	for (size_t i = 0; i < n && at < whylen; i++)
		at += (size_t)snprintf(why + at, whylen - at, "%s%s", names[i],
				       i + 2 < n ? ", " : i + 1 < n ? " or " : "");
	return -EINVAL;
}

/*
 * The store's "id id id" module text of a stack into x->mods; the count, or
 * 0 when there are none or the text is not one id per frame (then the
 * stack goes without, and pprof names its frames without a mapping).
 */
static size_t parse_modules(struct routes_sum *x, const char *text)
{
	size_t n = 0;

	while (text && *text) {
		char *end;
		unsigned long long id;

		errno = 0;
		id = strtoull(text, &end, 10);
		if (errno || end == text || id > UINT32_MAX || (*end && *end != ' '))
			return 0;
		if (GROW_ARRAY(x->mods, n, x->mods_cap, 64) < 0)
			return 0;
		x->mods[n++] = (uint32_t)id;
		text = *end ? end + 1 : end;
	}
	return n;
}

static bool time_based(const char *event)
{
	return !strcmp(event, "cpu-clock") || !strcmp(event, "task-clock");
}

/* The agent's off-CPU profiles: counts are microseconds off the CPU. */
#define OFF_CPU_EVENT "off-cpu"

/* Count @count samples worth @ns in the rate of @st (a small map: rows are
 * many, rates few). 0 or -ENOMEM. */
static int count_rate(struct routes_sum *x, const struct store_stack *st, uint64_t ns)
{
	size_t elen = strlen(st->event), klen = elen + 1 + 2 * sizeof(uint64_t);
	char small[128], *key = klen <= sizeof(small) ? small : malloc(klen);
	struct routes_rate *r;
	uint64_t *v;

	if (!key)
		return -ENOMEM;
	memcpy(key, st->event, elen + 1);
	memcpy(key + elen + 1, &st->frequency, sizeof(uint64_t));
	memcpy(key + elen + 1 + sizeof(uint64_t), &st->period, sizeof(uint64_t));
	if (!x->rate_of)
		x->rate_of = hashmap_new();
	v = x->rate_of ? hashmap_slot(x->rate_of, key, klen) : NULL;
	if (key != small)
		free(key);
	if (!v)
		return -ENOMEM;
	if (!*v) {
		if (GROW_ARRAY(x->rates, x->nrates, x->caprates, 4) < 0)
			return -ENOMEM;
		r = &x->rates[x->nrates];
		memset(r, 0, sizeof(*r));
		r->event = strdup(st->event);
		if (!r->event)
			return -ENOMEM;
		r->frequency = st->frequency;
		r->period = st->period;
		*v = ++x->nrates;
	}
	r = &x->rates[*v - 1];
	r->samples += st->count;
	r->value_ns += ns;
	return 0;
}

static int sum_stack(void *arg, const struct store_stack *st)
{
	struct routes_sum *x = arg;
	uint64_t ns = 0;
	size_t n;
	int ret;

	if (!strcmp(st->event, OFF_CPU_EVENT)) {
		/* waits are not samples: never summed with them unasked */
		if (x->all_events)
			return 0;
		ns = st->count * 1000;
	} else if (time_based(st->event)) {
		/* cpu-clock counts ns: a sample is worth 1e9 / F at frequency F,
		 * or the period itself when sampled by period. */
		if (st->frequency)
			ns = (uint64_t)((double)st->count * 1e9 / (double)st->frequency);
		else if (st->period)
			ns = st->count * st->period;
		if (st->frequency && x->frequency && x->frequency != st->frequency)
			x->mixed = true;
		if (st->frequency)
			x->frequency = st->frequency;
	}
	n = parse_modules(x, st->modules);
	if (x->base)
		ret = fold_set_add_base(x->fs, st->folded, n ? x->mods : NULL, n, st->count);
	else
		ret = fold_set_add_mod(x->fs, st->folded, n ? x->mods : NULL, n, st->count, ns);
	if (ret)
		return ret;
	x->samples += st->count;
	x->value_ns += ns;
	return count_rate(x, st, ns);
}

int routes_sum_stacks(struct http *h, const struct store_selection *sel, struct routes_sum *x)
{
	x->all_events = !sel->event;
	return store_stacks(h->cfg.store, sel, sum_stack, x);
}

void routes_sum_release(struct routes_sum *x)
{
	for (size_t i = 0; i < x->nrates; i++)
		free(x->rates[i].event);
	free(x->rates);
	hashmap_free(x->rate_of);
	free(x->mods);
	x->rates = NULL;
	x->rate_of = NULL;
	x->mods = NULL;
	x->nrates = x->caprates = x->mods_cap = 0;
}

/* Module lookups for render_pprof() and render_json(): strings kept until
 * the render ends. */
int routes_module_of(void *arg, const char *frame, uint32_t module, struct render_module *out)
{
	struct routes_modules *x = arg;
	struct store_module m;

	(void)frame;
	if (GROW_ARRAY(x->keep, x->n + 1, x->cap, 256) < 0)
		return -ENOMEM;
	if (!module || store_module(x->store, module, &m))
		return -ENOENT;
	x->keep[x->n++] = m.path;
	x->keep[x->n++] = m.build_id;
	out->path = m.path;
	out->build_id = m.build_id;
	return 0;
}

void routes_modules_release(struct routes_modules *m)
{
	strv_free(m->keep, m->n);
	m->keep = NULL;
	m->n = m->cap = 0;
}

static enum MHD_Result routes_no_samples(struct MHD_Connection *c, struct req *r)
{
	return http_answer(c, r, MHD_HTTP_NOT_FOUND,
			   "no samples in this selection (host, cgroup, container, pod, "
			   "event) between from and to\n");
}

/* "host=a cgroup=/x" naming the selection, for titles and file names. */
void routes_selection_text(const struct store_selection *s, struct page *p)
{
	const struct {
		const char *k, *v;
	} f[] = { { "host", s->host },	 { "cgroup", s->cgroup }, { "container", s->container },
		  { "pod", s->pod },	 { "event", s->event } };
	bool any = false;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (!f[i].v)
			continue;
		page_printf(p, "%s%s=", any ? " " : "", f[i].k);
		page_put(p, f[i].v);
		any = true;
	}
	if (!any)
		page_put(p, "all hosts");
}

enum MHD_Result routes_svg(struct MHD_Connection *c, struct req *r, unsigned status,
			   struct page *t, struct page *sub, routes_draw_fn draw, const void *arg)
{
	char *title = page_take(t, NULL), *subtitle = page_take(sub, NULL), *svg = NULL;
	size_t len = 0;
	FILE *f = title && subtitle ? open_memstream(&svg, &len) : NULL;
	int ret = -ENOMEM;

	if (f) {
		ret = draw(arg, title, subtitle, f);
		if (fclose(f))
			ret = -ENOMEM;
	}
	free(title);
	free(subtitle);
	if (ret || !svg) {
		free(svg);
		return http_answer(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot draw the picture\n");
	}
	return http_respond(c, r, status, "image/svg+xml", svg, len, true, NULL);
}

static int draw_flame(const void *arg, const char *title, const char *subtitle, FILE *f)
{
	struct flame_opts o = { .title = title, .subtitle = subtitle };

	return render_svg(arg, &o, f);
}

static enum MHD_Result serve_svg(struct MHD_Connection *c, struct req *r,
				 const struct stacks_query *q, const struct fold_set *fs,
				 unsigned status)
{
	char from[40], to[40];
	struct page t, sub;

	targets_time(q->sel.from_ns, from, sizeof(from));
	targets_time(q->sel.to_ns, to, sizeof(to));
	page_init(&t, 0);
	page_put(&t, "cgperf: ");
	routes_selection_text(&q->sel, &t);
	page_init(&sub, 0);
	page_printf(&sub, "%s to %s, %" PRIu64 " samples%s", from, to, fold_set_samples(fs),
		    fold_set_samples(fs) ? "" : ": no samples in this selection");
	return routes_svg(c, r, status, &t, &sub, draw_flame, fs);
}

/* @fs as text written by @render (render_folded, render_folded_diff), 200. */
enum MHD_Result routes_folded_text(struct MHD_Connection *c, struct req *r,
				   const struct fold_set *fs,
				   int (*render)(const struct fold_set *fs, FILE *out))
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int ret = f ? render(fs, f) : -ENOMEM;

	if (f && fclose(f))
		ret = -ENOMEM;
	if (ret || !text) {
		free(text);
		return http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	}
	return http_respond(c, r, MHD_HTTP_OK, "text/plain; charset=utf-8", text, len, true, NULL);
}

static enum MHD_Result serve_pprof(struct http *h, struct MHD_Connection *c, struct req *r,
				   const struct stacks_query *q, const struct routes_sum *x)
{
	struct routes_modules mx = { .store = h->cfg.store };
	struct pprof_opts o = {
		.time_ns = q->sel.from_ns,
		.duration_ns = q->sel.to_ns - q->sel.from_ns,
		.period_ns = x->frequency && !x->mixed ? 1000000000u / x->frequency : 0,
	};
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	if (q->sel.event && !strcmp(q->sel.event, OFF_CPU_EVENT)) {
		o.value_type = OFF_CPU_EVENT;
		o.count_unit = "microseconds";
	}
	ret = render_pprof(x->fs, &o, routes_module_of, &mx, &buf, &len);
	routes_modules_release(&mx);
	/* Already gzip'd by its format: the same bytes for every client. */
	r->encodable = false;
	if (ret)
		return http_answer(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot build the profile\n");
	return http_respond(c, r, MHD_HTTP_OK, "application/octet-stream", buf, len, true,
			    "attachment; filename=\"cgperf.pb.gz\"");
}

static enum MHD_Result serve_stacks(struct http *h, struct MHD_Connection *c, struct req *r)
{
	const struct stacks_query q = r->q; /* parsed by first_call() */
	struct routes_sum x = { 0 };
	enum MHD_Result res;
	unsigned status = MHD_HTTP_OK;
	int ret;

	x.fs = fold_set_new();
	if (!x.fs)
		return http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	ret = routes_sum_stacks(h, &q.sel, &x);
	if (ret) {
		routes_sum_release(&x);
		fold_set_free(x.fs);
		log_kv(LOG_ERROR, "stacks query failed", "error", strerror(-ret), NULL);
		return http_answer(c, r, ret == -ENOMEM ? MHD_HTTP_SERVICE_UNAVAILABLE
						   : MHD_HTTP_INTERNAL_SERVER_ERROR,
			      "stacks query failed\n");
	}
	if (!fold_set_samples(x.fs))
		status = MHD_HTTP_NOT_FOUND;
	if (status != MHD_HTTP_OK && q.format != FMT_SVG)
		res = routes_no_samples(c, r);
	else if (q.format == FMT_SVG)
		res = serve_svg(c, r, &q, x.fs, status);
	else if (q.format == FMT_FOLDED)
		res = routes_folded_text(c, r, x.fs, render_folded);
	else if (q.format == FMT_JSON)
		res = routes_serve_stacks_json(h, c, r, &x);
	else
		res = serve_pprof(h, c, r, &q, &x);
	routes_sum_release(&x);
	fold_set_free(x.fs);
	return res;
}

/* A reader thread: build the answer of a read route. */
void routes_serve(struct http *h, struct req **rs, size_t n)
{
	struct req *r = rs[0];

	switch (r->route) {
	case RT_METRICS: serve_metrics(h, NULL, r); break;
	case RT_STACKS: serve_stacks(h, NULL, r); break;
	case RT_HEATMAP: routes_serve_heatmap(h, NULL, r); break;
	case RT_SERIES: routes_serve_series(h, NULL, r); break;
	case RT_DIFF: routes_serve_diff(h, NULL, r); break;
	case RT_TARGETS: serve_targets(h, NULL, r, targets_json, "application/json"); break;
	default: serve_targets(h, NULL, r, targets_index, "text/html; charset=utf-8"); break;
	}
}
