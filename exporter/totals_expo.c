// SPDX-License-Identifier: MIT
/*
 * The totals as exposition text: per family its HELP and TYPE, then one
 * line per series, made of the cgroup's label text and the series' name
 * as a label value (both made here, once, when totals.c takes a new
 * identity or name), the series' own labels and its number; probe histograms as _bucket/_sum/_count. Series last seen before
 * the cutoff are left out (they expire at the next expiry pass).
 */
#include "exporter/totals_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/page.h"
#include "lib/prom.h"

int totals_expo_labels(struct cg *c)
{
	static const struct {
		const char *name;
		int field;
	} ids[] = {
		{ ",container=\"", ID_CONTAINER }, { ",container_name=\"", ID_CONTAINER_NAME },
		{ ",pod=\"", ID_POD },		   { ",pod_name=\"", ID_POD_NAME },
		{ ",namespace=\"", ID_NS },	   { ",unit=\"", ID_UNIT },
		{ ",runtime=\"", ID_RUNTIME },
	};
	struct page p;
	char *s;

	page_init(&p, 0);
	page_put(&p, "host=\"");
	page_label(&p, c->host);
	page_put(&p, "\",id=\"");
	page_label(&p, c->path);
	page_putc(&p, '"');
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		page_put(&p, ids[i].name);
		page_label(&p, c->id[ids[i].field]);
		page_putc(&p, '"');
	}
	if (*c->id[ID_IMAGE]) {
		page_put(&p, ",image=\"");
		page_label(&p, c->id[ID_IMAGE]);
		page_putc(&p, '"');
	}
	page_put(&p, c->id[ID_CLABELS]); /* written text already */
	s = page_take(&p, NULL);
	if (!s)
		return -ENOMEM;
	free(c->labels);
	c->labels = s;
	return 0;
}

/* The container labels of @g (only those the agent's allow-list names
 * travel) as label text in *@out, "" for none. 0 or -ENOMEM. */
int totals_expo_clabels(const Cgperf__V1__Batch *m, const Cgperf__V1__Cgroup *g, char **out)
{
	const char *k[WIRE_LABELS_MAX], *v[WIRE_LABELS_MAX];
	size_t n = 0;
	struct page p;

	for (; n < g->n_labels && n < WIRE_LABELS_MAX; n++) {
		k[n] = wire_string(m, g->labels[n]->key);
		v[n] = wire_string(m, g->labels[n]->value);
	}
	page_init(&p, 0);
	prom_pairs_to(page_sink, &p, "container_label_", k, v, n);
	*out = page_take(&p, NULL);
	return *out ? 0 : -ENOMEM;
}

int totals_expo_value(const char *raw, char **out, size_t *len)
{
	struct page p;

	*out = NULL;
	if (!strpbrk(raw, "\\\"\n"))
		return 0;
	page_init(&p, 0);
	page_label(&p, raw);
	*out = page_take(&p, len);
	return *out ? 0 : -ENOMEM;
}

/* The end of a sample line: @close (what closes its labels), the value, a newline. */
static void sample_u64(struct page *p, const char *close, uint64_t v)
{
	page_put(p, close);
	page_u64(p, v);
	page_putc(p, '\n');
}

static void sample_double(struct page *p, const char *close, double v)
{
	page_put(p, close);
	page_double(p, v);
	page_putc(p, '\n');
}

/* "@name{" and the cgroup's labels: a sample line up to its own labels. */
static void cg_open(struct page *p, const char *name, const struct cg *c)
{
	page_put(p, name);
	page_putc(p, '{');
	page_put(p, c->labels);
}

static void render_counters(const struct totals *t, struct page *p, bool om, uint64_t cutoff)
{
	page_family(p, om, "cgperf_cgroup_perf_events_total", "counter",
		    "perf events counted in the cgroup (scaled for multiplexing).");
	EACH_CG(t, c)
	{
		for (size_t i = 0; i < c->ncounters; i++) {
			const struct counter_series *s = &c->counters[i];

			if (s->last_seen < cutoff)
				continue;
			cg_open(p, "cgperf_cgroup_perf_events_total", c);
			page_put(p, ",event=\"");
			page_put(p, s->elabel);
			sample_double(p, "\"} ", s->total);
		}
	}
	static const char *const reasons[WIRE_TRUNC_REASONS] = {"stack_copy", "max_stack",
								 "bad_return_address"};

	page_family(p, om, "cgperf_cgroup_stacks_truncated_total", "counter",
		    "Sampled stacks of the cgroup the agent could not complete, by reason.");
	EACH_CG_IF(t, c, t->ntrunc) /* none when no cgroup has any */
	{
		if (!c->truncated_seen || c->truncated_seen < cutoff)
			continue;
		for (int k = 0; k < WIRE_TRUNC_REASONS; k++) {
			cg_open(p, "cgperf_cgroup_stacks_truncated_total", c);
			page_put(p, ",reason=\"");
			page_put(p, reasons[k]);
			sample_u64(p, "\"} ", c->truncated[k]);
		}
	}
	page_family(p, om, "cgperf_cgroup_cpu_seconds_total", "counter",
		    "CPU time of the cgroup's tasks (task-clock).");
	EACH_CG(t, c)
	{
		const struct counter_series *s = c->cpu ? &c->counters[c->cpu - 1] : NULL;

		if (!s || s->last_seen < cutoff)
			continue;
		cg_open(p, "cgperf_cgroup_cpu_seconds_total", c);
		sample_double(p, "} ", s->total / 1e9);
	}
}

static void probe_labels(struct page *p, const char *name, const struct cg *c,
			 const struct probe_series *s)
{
	cg_open(p, name, c);
	page_put(p, ",probe=\"");
	page_put(p, s->elabel);
	page_putc(p, '"');
}

/*
 * One histogram series: cumulative buckets up to the highest one used
 * (bucket k holds integers up to 2^k - 1), then +Inf, _sum, _count, over
 * the non-negative values. @scale turns a bound or the sum into the
 * exported unit.
 */
static void histogram(struct page *p, const char *base, const struct cg *c,
		      const struct probe_series *s, const struct hist *h, double scale)
{
	char name[96];
	uint64_t cum = 0;
	int top = -1;

	for (int k = 0; k < HIST_BUCKETS; k++)
		if (h->b[k])
			top = k;
	snprintf(name, sizeof(name), "%s_bucket", base);
	for (int k = 0; k <= top && k < HIST_BUCKETS - 1; k++) {
		cum += h->b[k];
		probe_labels(p, name, c, s);
		page_put(p, ",le=\"");
		page_double(p, (double)((k ? (UINT64_C(1) << k) : 1) - 1) * scale);
		sample_u64(p, "\"} ", cum);
	}
	probe_labels(p, name, c, s);
	sample_u64(p, ",le=\"+Inf\"} ", h->count - h->negative);
	snprintf(name, sizeof(name), "%s_sum", base);
	probe_labels(p, name, c, s);
	sample_double(p, "} ", (double)h->sum * scale);
	snprintf(name, sizeof(name), "%s_count", base);
	probe_labels(p, name, c, s);
	sample_u64(p, "} ", h->count - h->negative);
}

/* What a probe family shows of each series. */
enum probe_fig { PF_HITS, PF_NEGATIVE, PF_VALUES, PF_LATENCY };

/* The samples of probe family @name: per series, a count (hits, negative
 * values) or a histogram (values, latencies in ns written in seconds);
 * series without the histogram in question are left out, as are those
 * last seen before @cutoff. */
static void probe_family(const struct totals *t, struct page *p, uint64_t cutoff,
			 const char *name, enum probe_fig fig)
{
	EACH_CG(t, c)
	{
		for (size_t i = 0; i < c->nprobes; i++) {
			const struct probe_series *s = &c->probes[i];
			const struct hist *h = fig == PF_LATENCY ? &s->latency : &s->values;

			if (s->last_seen < cutoff || (fig != PF_HITS && !h->count))
				continue;
			if (fig == PF_VALUES || fig == PF_LATENCY) {
				histogram(p, name, c, s, h, fig == PF_LATENCY ? 1e-9 : 1.0);
				continue;
			}
			probe_labels(p, name, c, s);
			sample_u64(p, "} ", fig == PF_NEGATIVE ? s->values.negative : s->hits);
		}
	}
}

static void render_probes(const struct totals *t, struct page *p, bool om, uint64_t cutoff)
{
	static const struct {
		const char *name, *type, *help;
		enum probe_fig fig;
	} f[] = {
		{"cgperf_probe_hits_total", "counter", "Times the probe fired in the cgroup.",
		 PF_HITS},
		{"cgperf_probe_values", "histogram",
		 "Values of the probe's argument (log2 buckets; negative values apart).", PF_VALUES},
		{"cgperf_probe_negative_values_total", "counter",
		 "Negative values of the probe's argument (not in cgperf_probe_values).",
		 PF_NEGATIVE},
		{"cgperf_probe_latency_seconds", "histogram",
		 "Latency between the probe and its latency_end probe (log2 buckets of ns).",
		 PF_LATENCY},
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		page_family(p, om, f[i].name, f[i].type, f[i].help);
		probe_family(t, p, cutoff, f[i].name, f[i].fig);
	}
}

static void agent_labels(struct page *p, const char *name, const struct agent *a)
{
	page_put(p, name);
	page_put(p, "{host=\"");
	page_label(p, a->host);
	page_put(p, "\",agent_id=\"");
	page_label(p, a->agent_id);
	page_putc(p, '"');
}

static void render_agents(const struct totals *t, struct page *p, bool om, uint64_t cutoff)
{
	static const struct {
		const char *name, *type, *help;
		size_t off; /* in struct agent */
	} f[] = {
#define A(m) offsetof(struct agent, m)
		{ "cgperf_agent_batches_total", "counter", "Batches of the agent stored.",
		  A(batches) },
		{ "cgperf_agent_stack_samples_total", "counter",
		  "Stack samples in the agent's stored batches.", A(stack_samples) },
		{ "cgperf_agent_samples_total", "counter", "Samples the agent read.",
		  A(self.samples) },
		{ "cgperf_agent_lost_samples_total", "counter",
		  "Samples the kernel dropped because a ring was full.", A(self.lost_samples) },
		{ "cgperf_agent_unwind_failures_total", "counter",
		  "Samples whose user stack could not be unwound.", A(self.unwind_failures) },
		{ "cgperf_agent_push_failures_total", "counter", "Push attempts that failed.",
		  A(self.push_failures) },
		{ "cgperf_agent_push_rejected_total", "counter",
		  "Batches a collector refused for good.", A(self.push_rejected) },
		{ "cgperf_agent_spool_dropped_batches_total", "counter",
		  "Batches dropped from a full spool.", A(self.spool_dropped_batches) },
		{ "cgperf_agent_stacks_refused_total", "counter",
		  "Samples not folded because the distinct-stack cap was reached.",
		  A(self.stacks_refused) },
		{ "cgperf_agent_spool_bytes", "gauge", "Bytes in the agent's spool at its last push.",
		  A(self.spool_bytes) },
		{ "cgperf_agent_spool_batches", "gauge",
		  "Batches in the agent's spool at its last push.", A(self.spool_batches) },
#undef A
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		page_family(p, om, f[i].name, f[i].type, f[i].help);
		for (const struct agent *a = t->agents; a; a = a->next) {
			uint64_t v;

			if (a->last_push < cutoff)
				continue;
			memcpy(&v, (const char *)a + f[i].off, sizeof(v));
			agent_labels(p, f[i].name, a);
			sample_u64(p, "} ", v);
		}
	}
	page_family(p, om, "cgperf_agent_last_push_timestamp_seconds", "gauge",
		    "When the exporter last stored a batch of the agent (Unix time).");
	for (const struct agent *a = t->agents; a; a = a->next) {
		if (a->last_push < cutoff)
			continue;
		agent_labels(p, "cgperf_agent_last_push_timestamp_seconds", a);
		sample_double(p, "} ", (double)a->last_push / 1e9);
	}
	page_family(p, om, "cgperf_agent_info", "gauge", "The agent's version, always 1.");
	for (const struct agent *a = t->agents; a; a = a->next) {
		if (a->last_push < cutoff)
			continue;
		agent_labels(p, "cgperf_agent_info", a);
		page_put(p, ",version=\"");
		page_label(p, a->version);
		page_put(p, "\"} 1\n");
	}
}

void totals_render(const struct totals *t, struct page *p, bool om, uint64_t cutoff)
{
	render_counters(t, p, om, cutoff);
	render_probes(t, p, om, cutoff);
	render_agents(t, p, om, cutoff);
}
