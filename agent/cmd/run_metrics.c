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
	selfmetrics_label(f, a->host);
	fputs("\",id=\"", f);
	selfmetrics_label(f, c->path);
	fputs("\",container=\"", f);
	selfmetrics_label(f, c->ident.container_id[0] ? c->ident.container_id
						       : c->ident.container_name);
	fputs("\",pod=\"", f);
	selfmetrics_label(f, c->ident.pod_uid);
	fputs("\",unit=\"", f);
	selfmetrics_label(f, c->ident.unit);
	fputc('"', f);
	run_identity_metric_labels(f, a, c);
}

static void self_metric(FILE *f, const struct agent *a, const char *name, const char *type,
			const char *help, uint64_t v)
{
	fprintf(f, "# HELP cgperf_agent_%s %s\n# TYPE cgperf_agent_%s %s\ncgperf_agent_%s{host=\"",
		name, help, name, type, name);
	selfmetrics_label(f, a->host);
	fprintf(f, "\"} %" PRIu64 "\n", v);
}

/* The page behind /metrics: totals since the agent (or its last reload)
 * started, in Prometheus text format 0.0.4. */
void run_publish_metrics(struct agent *a)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	struct push_stats ps = {0};

	if (!a->metrics || !(f = open_memstream(&buf, &len)))
		return;
	if (a->push)
		push_stats(a->push, &ps);
	self_metric(f, a, "samples_total", "counter", "Samples the agent processed.", a->samples);
	self_metric(f, a, "lost_samples_total", "counter", "Samples lost in the ring buffers.",
		    a->lost);
	self_metric(f, a, "batches_total", "counter", "Batches built (spooled when collectors are configured).", a->batches);
	self_metric(f, a, "push_failures_total", "counter",
		    "Push requests that failed and are retried.", ps.failures);
	self_metric(f, a, "push_maybe_delivered_total", "counter",
		    "Failed push requests whose whole batch had been sent (the resend may be a duplicate).",
		    ps.maybe_delivered);
	self_metric(f, a, "push_duplicates_total", "counter",
		    "Resent batches a collector answered it had already stored.", ps.duplicates);
	self_metric(f, a, "push_rejected_total", "counter",
		    "Batches a collector refused (not retried).", ps.rejected);
	self_metric(f, a, "spool_dropped_batches_total", "counter",
		    "Batches dropped by the spool cap.", ps.spool_dropped);
	self_metric(f, a, "spool_bytes", "gauge", "Bytes of batches waiting in the spool.",
		    ps.spool_bytes);
	self_metric(f, a, "spool_batches", "gauge", "Batches waiting in the spool.",
		    ps.spool_count);
	{
		struct refusals_figures rf;

		refusals_figures(&rf);
		fputs("# HELP cgperf_agent_files_refused_total Files of profiled processes (containers) "
		      "the agent refused to read, by reason (docs/security.md).\n"
		      "# TYPE cgperf_agent_files_refused_total counter\n", f);
		for (int i = 0; i < ROOTFS_R_N; i++) {
			fputs("cgperf_agent_files_refused_total{host=\"", f);
			selfmetrics_label(f, a->host);
			fprintf(f, "\",reason=\"%s\"} %" PRIu64 "\n",
				rootfs_reason_name((enum rootfs_reason)i), rf.by_reason[i]);
		}
	}
	if (a->st || a->pst) {
		struct stacks_stats ss = {0}, pss = {0};

		if (a->st)
			stacks_stats(a->st, &ss);
		if (a->pst)
			stacks_stats(a->pst, &pss);
		self_metric(f, a, "symbol_objects", "gauge",
			    "Binaries whose symbols and unwind tables the agent holds.",
			    ss.objects + pss.objects);
		self_metric(f, a, "symbol_objects_dropped_total", "counter",
			    "Binaries dropped once no process mapped them.",
			    ss.objects_dropped + pss.objects_dropped);
		self_metric(f, a, "fork_maps_reads_total", "counter",
			    "Parents' /proc/PID/maps read at a fork (children inherit them).",
			    ss.fork_seeds + pss.fork_seeds);
		fputs("# HELP cgperf_agent_stacks_truncated_total Stacks (CPU and probe) cut short, "
		      "by reason.\n# TYPE cgperf_agent_stacks_truncated_total counter\n",
		      f);
		for (int k = 0; k < STACKS_TRUNC_N; k++) {
			fputs("cgperf_agent_stacks_truncated_total{host=\"", f);
			selfmetrics_label(f, a->host);
			fprintf(f, "\",reason=\"%s\"} %" PRIu64 "\n", stacks_trunc_name(k),
				ss.truncated[k] + pss.truncated[k]);
		}
		fputs("# HELP cgperf_cgroup_stacks_truncated_total CPU stacks of the cgroup cut "
		      "short, by reason.\n# TYPE cgperf_cgroup_stacks_truncated_total counter\n",
		      f);
		for (size_t i = 0; i < a->ncg; i++) {
			const uint64_t *t = a->cg[i].truncated;

			if (!t[0] && !t[1] && !t[2])
				continue; /* series appear with the first cut stack */
			for (int k = 0; k < STACKS_TRUNC_N; k++) {
				fputs("cgperf_cgroup_stacks_truncated_total{", f);
				cg_labels(f, a, &a->cg[i]);
				fprintf(f, ",reason=\"%s\"} %" PRIu64 "\n", stacks_trunc_name(k),
					a->cg[i].truncated[k]);
			}
		}
	}
	if (a->ctr) {
		ssize_t tc = -1;

		for (size_t e = 0; e < a->nev; e++)
			if (a->evs[e].is_clock && strncmp(a->evs[e].name, "task-clock", 10) == 0)
				tc = (ssize_t)e;
		fputs("# HELP cgperf_cgroup_perf_events_total perf events counted in the cgroup "
		      "(scaled for multiplexing).\n# TYPE cgperf_cgroup_perf_events_total counter\n",
		      f);
		for (size_t i = 0; i < a->ncg; i++) {
			for (size_t e = 0; a->cg[i].slot >= 0 && e < a->nev; e++) {
				struct counter_value v;

				counters_get(a->ctr, a->cg[i].slot, e, false, &v);
				if (v.err)
					continue;
				fputs("cgperf_cgroup_perf_events_total{", f);
				cg_labels(f, a, &a->cg[i]);
				fputs(",event=\"", f);
				selfmetrics_label(f, a->evs[e].name);
				fprintf(f, "\"} %.0f\n", v.scaled);
			}
		}
		if (tc >= 0) {
			fputs("# HELP cgperf_cgroup_cpu_seconds_total CPU time of the cgroup's tasks "
			      "(task-clock).\n# TYPE cgperf_cgroup_cpu_seconds_total counter\n",
			      f);
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
