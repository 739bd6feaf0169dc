// SPDX-License-Identifier: MIT
/*
 * The agent's own /metrics (metrics.listen): Prometheus text format 0.0.4,
 * written into a memory stream and published whole to agent/ship/
 * selfmetrics, which serves it. Every label value is escaped there.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/cmd.h"
#include "agent/cmd/config.h"
#include "agent/perf/counters.h"
#include "agent/perf/cpumap.h"
#include "agent/perf/events.h"
#include "agent/stacks/fold.h"
#include "lib/hist.h"
#include "lib/log.h"
#include "lib/prom.h"
#include "agent/perf/latency.h"
#include "agent/perf/probe.h"
#include "agent/ship/push.h"
#include "agent/perf/sampler.h"
#include "agent/symbols/refusals.h"
#include "agent/ship/selfmetrics.h"
#include "agent/stacks/stacks.h"
#include "agent/perf/usdt.h"
#include "wire/wire.h"
#include "cgroup/identity.h"
#include "cgroup/tree.h"
#include "cgroup/watch.h"
#include "lib/clock.h"
#include "agent/cmd/run.h"

static void cg_labels(FILE *f, const struct agent *a, const struct rcg *c)
{
	fputs("host=\"", f);
	prom_label(f, a->host);
	fputs("\",id=\"", f);
	prom_label(f, c->path);
	fputs("\",container=\"", f);
	prom_label(f, c->ident.container_id[0] ? c->ident.container_id : c->ident.container_name);
	fputs("\",pod=\"", f);
	prom_label(f, c->ident.pod_uid);
	fputs("\",unit=\"", f);
	prom_label(f, c->ident.unit);
	fputc('"', f);
	run_identity_metric_labels(f, a, c);
}

/* One sample of a family labelled by host only (plus @reason when set). */
static void host_sample(FILE *f, const struct agent *a, const char *name, const char *reason,
			uint64_t v)
{
	fprintf(f, "%s{host=\"", name);
	prom_label(f, a->host);
	if (reason)
		fprintf(f, "\",reason=\"%s", reason);
	fprintf(f, "\"} %" PRIu64 "\n", v);
}

/* The agent's own figures: families of one series each, labelled by host. */
struct self_figure {
	const char *name, *type, *help;
	size_t off; /* of the value in struct self_values */
};

struct self_values {
	uint64_t samples, lost, batches;
	uint64_t objects; /* stacks_stats' size_t, as the other figures */
	struct push_stats ps;
	struct stacks_stats ss; /* CPU and probe stacks engines added up */
	struct latency_stats ls; /* latency pairing (latency_end, latency_key) */
};

#define SV(field) offsetof(struct self_values, field)
static const struct self_figure push_figures[] = {
	{"cgperf_agent_samples_total", "counter", "Samples the agent processed.", SV(samples)},
	{"cgperf_agent_lost_samples_total", "counter", "Samples lost in the ring buffers.", SV(lost)},
	{"cgperf_agent_batches_total", "counter",
	 "Batches built (spooled when collectors are configured).", SV(batches)},
	{"cgperf_agent_push_failures_total", "counter",
	 "Push requests that failed and are retried.", SV(ps.failures)},
	{"cgperf_agent_push_maybe_delivered_total", "counter",
	 "Failed push requests whose whole batch had been sent (the resend may be a duplicate).",
	 SV(ps.maybe_delivered)},
	{"cgperf_agent_push_duplicates_total", "counter",
	 "Resent batches a collector answered it had already stored.", SV(ps.duplicates)},
	{"cgperf_agent_push_rejected_total", "counter", "Batches a collector refused (not retried).",
	 SV(ps.rejected)},
	{"cgperf_agent_spool_dropped_batches_total", "counter", "Batches dropped by the spool cap.",
	 SV(ps.spool_dropped)},
	{"cgperf_agent_spool_bytes", "gauge", "Bytes of batches waiting in the spool.",
	 SV(ps.spool_bytes)},
	{"cgperf_agent_spool_batches", "gauge", "Batches waiting in the spool.", SV(ps.spool_count)},
};
static const struct self_figure stacks_figures[] = {
	{"cgperf_agent_symbol_objects", "gauge",
	 "Binaries whose symbols and unwind tables the agent holds.", SV(objects)},
	{"cgperf_agent_symbol_objects_dropped_total", "counter",
	 "Binaries dropped once no process mapped them.", SV(ss.objects_dropped)},
	{"cgperf_agent_fork_maps_reads_total", "counter",
	 "Parents' /proc/PID/maps read at a fork (children inherit them).", SV(ss.fork_seeds)},
};
static const struct self_figure latency_figures[] = {
	{"cgperf_agent_latency_pairs_total", "counter",
	 "Latencies measured (start and end paired).", SV(ls.paired)},
	{"cgperf_agent_latency_unpaired_ends_total", "counter",
	 "Latency ends that found no start of their thread or key.", SV(ls.unpaired_end)},
	{"cgperf_agent_latency_timed_out_total", "counter",
	 "Keyed latency starts dropped unpaired after the timeout.", SV(ls.timed_out)},
	{"cgperf_agent_latency_dropped_total", "counter",
	 "Keyed latency starts refused: the pending table was full.", SV(ls.dropped)},
	{"cgperf_agent_latency_replaced_total", "counter",
	 "Keyed latency starts replaced by a newer start of their key.", SV(ls.replaced)},
	{"cgperf_agent_latency_pending", "gauge", "Keyed latency starts waiting for their end.",
	 SV(ls.pending)},
	{"cgperf_agent_latency_late_total", "counter",
	 "Latency hits that reached their ring after their instant had been paired.", SV(ls.late)},
};
#undef SV

static void self_figures(FILE *f, const struct agent *a, const struct self_figure *fig, size_t n,
			 const struct self_values *sv)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		memcpy(&v, (const char *)sv + fig[i].off, sizeof(v));
		prom_family(f, false, fig[i].name, fig[i].type, fig[i].help);
		host_sample(f, a, fig[i].name, NULL, v);
	}
}

/* The stacks engines' figures, CPU and probe engines added up. */
static void stacks_sum(const struct agent *a, struct self_values *sv)
{
	struct stacks_stats pss = {0};

	if (a->st)
		stacks_stats(a->st, &sv->ss);
	if (a->pst)
		stacks_stats(a->pst, &pss);
	sv->objects = sv->ss.objects + pss.objects;
	sv->ss.objects_dropped += pss.objects_dropped;
	sv->ss.fork_seeds += pss.fork_seeds;
	for (int k = 0; k < STACKS_TRUNC_N; k++)
		sv->ss.truncated[k] += pss.truncated[k];
}

static void stacks_metrics(FILE *f, const struct agent *a)
{
	struct self_values sv = {0};

	stacks_sum(a, &sv);
	self_figures(f, a, stacks_figures, sizeof(stacks_figures) / sizeof(stacks_figures[0]), &sv);
	prom_family(f, false, "cgperf_agent_stacks_truncated_total", "counter",
		    "Stacks (CPU and probe) cut short, by reason.");
	for (int k = 0; k < STACKS_TRUNC_N; k++)
		host_sample(f, a, "cgperf_agent_stacks_truncated_total", stacks_trunc_name(k),
			    sv.ss.truncated[k]);
	prom_family(f, false, "cgperf_cgroup_stacks_truncated_total", "counter",
		    "CPU stacks of the cgroup cut short, by reason.");
	for (size_t i = 0; i < a->ncg; i++) {
		const uint64_t *t = a->cg[i].truncated;

		if (!t[0] && !t[1] && !t[2])
			continue; /* series appear with the first cut stack */
		for (int k = 0; k < STACKS_TRUNC_N; k++) {
			fputs("cgperf_cgroup_stacks_truncated_total{", f);
			cg_labels(f, a, &a->cg[i]);
			fprintf(f, ",reason=\"%s\"} %" PRIu64 "\n", stacks_trunc_name(k), t[k]);
		}
	}
}

/* The page behind /metrics: totals since the agent (or its last reload)
 * started, in Prometheus text format 0.0.4. */
void run_publish_metrics(struct agent *a)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	struct self_values sv = {.samples = a->samples, .lost = a->lost, .batches = a->batches};
	struct refusals_figures rf;

	if (!a->metrics || !(f = open_memstream(&buf, &len)))
		return;
	if (a->push)
		push_stats(a->push, &sv.ps);
	self_figures(f, a, push_figures, sizeof(push_figures) / sizeof(push_figures[0]), &sv);
	refusals_figures(&rf);
	prom_family(f, false, "cgperf_agent_files_refused_total", "counter",
		    "Files of profiled processes (containers) the agent refused to read, by reason "
		    "(docs/security.md).");
	for (int i = 0; i < ROOTFS_R_N; i++)
		host_sample(f, a, "cgperf_agent_files_refused_total",
			    rootfs_reason_name((enum rootfs_reason)i), rf.by_reason[i]);
	if (a->st || a->pst)
		stacks_metrics(f, a);
	if (a->lat) {
		latency_stats(a->lat, &sv.ls);
		self_figures(f, a, latency_figures,
			     sizeof(latency_figures) / sizeof(latency_figures[0]), &sv);
	}
	if (a->ctr) {
		ssize_t tc = -1;

		for (size_t e = 0; e < a->nev; e++)
			if (a->evs[e].is_clock && strncmp(a->evs[e].name, "task-clock", 10) == 0)
				tc = (ssize_t)e;
		prom_family(f, false, "cgperf_cgroup_perf_events_total", "counter",
			    "perf events counted in the cgroup (scaled for multiplexing).");
		for (size_t i = 0; i < a->ncg; i++) {
			for (size_t e = 0; a->cg[i].slot >= 0 && e < a->nev; e++) {
				struct counter_value v;

				counters_get(a->ctr, a->cg[i].slot, e, false, &v);
				if (v.err)
					continue;
				fputs("cgperf_cgroup_perf_events_total{", f);
				cg_labels(f, a, &a->cg[i]);
				fputs(",event=\"", f);
				prom_label(f, a->evs[e].name);
				fprintf(f, "\"} %.0f\n", v.scaled);
			}
		}
		if (tc >= 0) {
			prom_family(f, false, "cgperf_cgroup_cpu_seconds_total", "counter",
				    "CPU time of the cgroup's tasks (task-clock).");
			for (size_t i = 0; i < a->ncg; i++) {
				struct counter_value v;

				if (a->cg[i].slot < 0)
					continue;
				counters_get(a->ctr, a->cg[i].slot, (size_t)tc, false, &v);
				if (v.err)
					continue;
				fputs("cgperf_cgroup_cpu_seconds_total{", f);
				cg_labels(f, a, &a->cg[i]);
				fprintf(f, "} %.9f\n", v.scaled / 1e9);
			}
		}
	}
	fclose(f);
	selfmetrics_publish(a->metrics, buf, len);
	free(buf);
}
