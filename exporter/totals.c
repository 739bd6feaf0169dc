// SPDX-License-Identifier: MIT
#include "exporter/totals.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/selfmetrics.h"
#include "agent/wire.h"

struct series {
	char *host, *path, *event;
	char *container, *pod, *unit;
	double total; /* scaled events; ns for task-clock */
	struct series *next;
};

#define TOTALS_BUCKETS 4096

struct totals {
	struct series *bucket[TOTALS_BUCKETS];
	size_t n;
};


struct totals *totals_new(void)
{
	return calloc(1, sizeof(struct totals));
}

static void series_free(struct series *s)
{
	free(s->host);
	free(s->path);
	free(s->event);
	free(s->container);
	free(s->pod);
	free(s->unit);
	free(s);
}

void totals_free(struct totals *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < TOTALS_BUCKETS; i++) {
		struct series *s = t->bucket[i], *next;

		for (; s; s = next) {
			next = s->next;
			series_free(s);
		}
	}
	free(t);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull; /* separator no string holds */
}

/* Replace *@dst by a copy of @src unless equal. 0 or -ENOMEM. */
static int set_str(char **dst, const char *src)
{
	char *c;

	if (*dst && strcmp(*dst, src) == 0)
		return 0;
	c = strdup(src);
	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

int totals_add(struct totals *t, const char *host, const char *path, const char *container,
	       const char *pod, const char *unit, const char *event, uint64_t value,
	       uint64_t enabled, uint64_t running, int supported)
{
	uint64_t h = hash_str(hash_str(hash_str(14695981039346656037ull, host), path), event);
	struct series **head = &t->bucket[h % TOTALS_BUCKETS], *s;

	if (!supported)
		return 0;
	for (s = *head; s; s = s->next)
		if (!strcmp(s->host, host) && !strcmp(s->path, path) && !strcmp(s->event, event))
			break;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		s->host = strdup(host);
		s->path = strdup(path);
		s->event = strdup(event);
		if (!s->host || !s->path || !s->event) {
			series_free(s);
			return -ENOMEM;
		}
		s->next = *head;
		*head = s;
		t->n++;
	}
	if (set_str(&s->container, container) || set_str(&s->pod, pod) || set_str(&s->unit, unit))
		return -ENOMEM;
	if (running)
		s->total += (double)value * ((double)enabled / (double)running);
	return 0;
}

int totals_add_batch(struct totals *t, const Cgperf__V1__Batch *m)
{
	for (size_t i = 0; i < m->n_counters; i++) {
		const Cgperf__V1__Counter *c = m->counters[i];
		const Cgperf__V1__Cgroup *g = m->cgroups[c->cgroup]; /* checked by wire_decode */
		int ret = totals_add(t, m->host, wire_string(m, g->path),
				     wire_string(m, g->container_id), wire_string(m, g->pod_uid),
				     wire_string(m, g->unit), wire_string(m, c->event), c->value,
				     c->time_enabled, c->time_running, c->supported);

		if (ret)
			return ret;
	}
	return 0;
}

static void labels(FILE *f, const struct series *s)
{
	fputs("{host=\"", f);
	selfmetrics_label(f, s->host);
	fputs("\",id=\"", f);
	selfmetrics_label(f, s->path);
	fputs("\",container=\"", f);
	selfmetrics_label(f, s->container);
	fputs("\",pod=\"", f);
	selfmetrics_label(f, s->pod);
	fputs("\",unit=\"", f);
	selfmetrics_label(f, s->unit);
	fputc('"', f);
}

void totals_render(const struct totals *t, FILE *f)
{
	fputs("# HELP cgperf_cgroup_perf_events_total perf events counted in the cgroup "
	      "(scaled for multiplexing).\n# TYPE cgperf_cgroup_perf_events_total counter\n",
	      f);
	for (size_t i = 0; i < TOTALS_BUCKETS; i++) {
		for (const struct series *s = t->bucket[i]; s; s = s->next) {
			fputs("cgperf_cgroup_perf_events_total", f);
			labels(f, s);
			fputs(",event=\"", f);
			selfmetrics_label(f, s->event);
			fprintf(f, "\"} %.17g\n", s->total);
		}
	}
	fputs("# HELP cgperf_cgroup_cpu_seconds_total CPU time of the cgroup's tasks "
	      "(task-clock).\n# TYPE cgperf_cgroup_cpu_seconds_total counter\n",
	      f);
	for (size_t i = 0; i < TOTALS_BUCKETS; i++) {
		for (const struct series *s = t->bucket[i]; s; s = s->next) {
			if (strcmp(s->event, "task-clock"))
				continue;
			fputs("cgperf_cgroup_cpu_seconds_total", f);
			labels(f, s);
			fprintf(f, "} %.17g\n", s->total / 1e9);
		}
	}
}
