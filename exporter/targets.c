// SPDX-License-Identifier: MIT
#include "exporter/targets.h"
#include "lib/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void targets_time(uint64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;
	char t[32];

	if (!gmtime_r(&s, &tm) || !strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, len, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf, len, "%s.%03uZ", t, (unsigned)(ns / 1000000u % 1000u));
}

static void json_kv(struct page *p, const char *k, const char *v, int first)
{
	if (!first)
		page_putc(p, ',');
	page_json(p, k);
	page_putc(p, ':');
	page_json(p, v);
}

static void json_ku(struct page *p, const char *k, uint64_t v)
{
	page_putc(p, ',');
	page_json(p, k);
	page_putc(p, ':');
	page_u64(p, v);
}

static void json_time(struct page *p, const char *k, uint64_t ns)
{
	char t[40];

	targets_time(ns, t, sizeof(t));
	json_kv(p, k, t, 0);
}

struct walk {
	struct page *p;
	int n;
};

/* Open the next object of @w's array: its page. */
static struct page *json_next(struct walk *w)
{
	page_put(w->p, w->n++ ? ",{" : "{");
	return w->p;
}

static int json_agent(void *arg, const struct store_agent *a)
{
	struct page *p = json_next(arg);

	json_kv(p, "agent_id", a->agent_id, 1);
	json_kv(p, "host", a->host, 0);
	json_kv(p, "version", a->version, 0);
	json_time(p, "last_push", a->last_push_ns);
	json_ku(p, "last_push_unix_ns", a->last_push_ns);
	json_ku(p, "batches", a->batches);
	json_ku(p, "stack_samples", a->stack_samples);
	page_putc(p, '}');
	return 0;
}

static int json_cgroup(void *arg, const struct store_cgroup *c)
{
	const struct {
		const char *key, *v;
	} ids[] = {
		{ "container_id", c->container_id }, { "container_name", c->container_name },
		{ "runtime", c->runtime },	     { "pod_uid", c->pod_uid },
		{ "pod_name", c->pod_name },	     { "namespace", c->k8s_namespace },
		{ "qos", c->qos },		     { "unit", c->unit },
		{ "slice", c->slice },		     { "image", c->image ? c->image : "" },
	};
	struct page *p = json_next(arg);

	json_kv(p, "host", c->host, 1);
	json_kv(p, "path", c->path, 0);
	json_ku(p, "cgroup_id", c->cgroup_id);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		json_kv(p, ids[i].key, ids[i].v, 0);
	json_time(p, "last_seen", c->last_seen_ns);
	json_ku(p, "last_seen_unix_ns", c->last_seen_ns);
	page_putc(p, '}');
	return 0;
}

int targets_json(const struct totals *t, uint64_t cutoff, struct page *p)
{
	struct walk w = { .p = p };

	page_put(p, "{\"agents\":[");
	totals_each_agent(t, cutoff, json_agent, &w);
	page_put(p, "],\"cgroups\":[");
	w.n = 0;
	totals_each_cgroup(t, cutoff, json_cgroup, &w);
	page_put(p, "]}\n");
	return 0;
}

/* ---- the index page ---- */

struct row {
	char *host, *path, *container, *name, *image;
};

struct rows {
	struct row *v;
	size_t n, cap;
	bool oom;
};

static int collect(void *arg, const struct store_cgroup *c)
{
	struct rows *r = arg;
	struct row *x;

	if (GROW_ARRAY(r->v, r->n, r->cap, 64) < 0)
		return -ENOMEM;
	x = &r->v[r->n];
	x->host = strdup(c->host);
	x->path = strdup(c->path);
	x->container = strdup(c->container_id);
	x->name = strdup(*c->container_name ? c->container_name : *c->pod_name ? c->pod_name : "");
	x->image = strdup(c->image ? c->image : "");
	r->n++;
	if (!x->host || !x->path || !x->container || !x->name || !x->image)
		return -ENOMEM;
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int d = strcmp(x->host, y->host);

	return d ? d : strcmp(x->path, y->path);
}

/* An <a> to /api/v1/stacks with @k1=@v1 (and @k2=@v2) in @format. */
static void link(struct page *p, const char *k1, const char *v1, const char *k2, const char *v2,
		 const char *format, const char *text)
{
	struct page u;
	char *href;

	page_init(&u, 0);
	page_put(&u, "/api/v1/stacks?");
	page_put(&u, k1);
	page_putc(&u, '=');
	page_url(&u, v1);
	if (k2) {
		page_putc(&u, '&');
		page_put(&u, k2);
		page_putc(&u, '=');
		page_url(&u, v2);
	}
	page_put(&u, "&format=");
	page_put(&u, format);
	href = page_take(&u, NULL);
	if (!href) {
		page_put(p, "?");
		return;
	}
	page_put(p, "<a href=\"");
	page_html(p, href);
	page_put(p, "\">");
	page_put(p, text);
	page_put(p, "</a>");
	free(href);
}

/* A table row's first cells: "<tr><td>HOST</td><td><code>CODE</code></td>". */
static void row_start(struct page *p, const char *host, const char *code)
{
	page_put(p, "<tr><td>");
	page_html(p, host);
	page_put(p, "</td><td><code>");
	page_html(p, code);
	page_put(p, "</code></td>");
}

static void links(struct page *p, const char *k1, const char *v1, const char *k2, const char *v2)
{
	page_put(p, "<td>");
	link(p, k1, v1, k2, v2, "svg", "flame graph");
	page_put(p, " · ");
	link(p, k1, v1, k2, v2, "folded", "folded");
	page_put(p, " · ");
	link(p, k1, v1, k2, v2, "pprof", "pprof");
	page_put(p, "</td>");
}

int targets_index(const struct totals *t, uint64_t cutoff, struct page *p)
{
	struct rows r = { 0 };
	int ret = totals_each_cgroup(t, cutoff, collect, &r);
	size_t ncontainers = 0;

	if (!ret && r.n)
		qsort(r.v, r.n, sizeof(*r.v), row_cmp);
	page_put(p, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>cgperf-exporter"
		    "</title><style>body{font-family:sans-serif;margin:1.5em}"
		    "td,th{padding:2px 10px;text-align:left}code{font-size:90%}</style></head><body>\n"
		    "<h1>cgperf-exporter</h1>\n<p><a href=\"/metrics\">/metrics</a> · "
		    "<a href=\"/api/v1/targets\">/api/v1/targets</a> · "
		    "<a href=\"/healthz\">/healthz</a>. Stacks cover the last hour; add "
		    "<code>&amp;from=-6h</code> to a link for more.</p>\n");
	page_put(p, "<h2>Hosts</h2>\n<table><tr><th>host</th><th>stacks</th></tr>\n");
	for (size_t i = 0; !ret && i < r.n; i++) {
		if (i && !strcmp(r.v[i].host, r.v[i - 1].host))
			continue;
		page_put(p, "<tr><td>");
		page_html(p, r.v[i].host);
		page_put(p, "</td>");
		links(p, "host", r.v[i].host, NULL, NULL);
		page_put(p, "</tr>\n");
	}
	page_put(p, "</table>\n<h2>Containers</h2>\n<table><tr><th>host</th><th>container</th>"
		    "<th>name</th><th>image</th><th>stacks</th></tr>\n");
	for (size_t i = 0; !ret && i < r.n; i++) {
		if (!*r.v[i].container)
			continue;
		ncontainers++;
		row_start(p, r.v[i].host, r.v[i].container);
		page_put(p, "<td>");
		page_html(p, r.v[i].name);
		page_put(p, "</td><td>");
		page_html(p, r.v[i].image);
		page_put(p, "</td>");
		links(p, "host", r.v[i].host, "container", r.v[i].container);
		page_put(p, "</tr>\n");
	}
	if (!ncontainers)
		page_put(p, "<tr><td colspan=\"5\">none seen</td></tr>\n");
	page_put(p, "</table>\n<h2>Cgroups</h2>\n<table><tr><th>host</th><th>cgroup</th>"
		    "<th>stacks</th></tr>\n");
	for (size_t i = 0; !ret && i < r.n; i++) {
		row_start(p, r.v[i].host, r.v[i].path);
		links(p, "host", r.v[i].host, "cgroup", r.v[i].path);
		page_put(p, "</tr>\n");
	}
	page_put(p, "</table>\n</body></html>\n");
	for (size_t i = 0; i < r.n; i++) {
		free(r.v[i].host);
		free(r.v[i].path);
		free(r.v[i].container);
		free(r.v[i].name);
		free(r.v[i].image);
	}
	free(r.v);
	return ret ? ret : page_failed(p) ? -ENOMEM : 0;
}
