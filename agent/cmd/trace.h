/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_TRACE_H
#define CGPERF_AGENT_TRACE_H

/*
 * The state of `cgperf-agent trace`, shared by cmd_trace.c (options,
 * probes, the drain loop) and trace_print.c (its output). Internal to
 * agent/cmd/. The trace owns everything it points to.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/perf/latency.h"
#include "agent/perf/probe.h"
#include "agent/perf/sampler.h"
#include "agent/perf/usdt.h"
#include "agent/stacks/fold.h"
#include "agent/stacks/stacks.h"
#include "lib/hist.h"

#define MAX_PROBES 32
#define MAX_CELLS 100000

struct cell {
	uint32_t probe;
	uint32_t pid;
	uint64_t cgroup;
	uint64_t hits;
	struct hist h;   /* --hist value */
	struct hist lat; /* --latency, on the start probe's cell */
};

struct tprobe {
	struct probe p;
	struct sampler **smp; /* one per USDT site (1 otherwise) */
	struct usdt_arg (*site_args)[USDT_MAX_ARGS]; /* per sampler: each USDT site's own specs */
	size_t nsmp;
	int hist_arg;         /* index into p.args, -1 */
	uint64_t sample_regs; /* sample_regs_user asked for: the args' and the unwinder's */
};

struct trace {
	const char *prog;
	struct tprobe pr[MAX_PROBES];
	size_t npr;
	int lat_start, lat_end; /* probe indexes, -1 */
	bool per_pid, per_cgroup;
	const char *hist_name;
	struct fold *cells;   /* key -> index + 1 */
	struct cell *v;
	size_t n, cap;
	uint64_t cells_refused;
	struct latency *lat;  /* --latency endpoints, paired in time order */
	uint64_t unpaired_end;
	struct stacks *stacks;
	struct cg_rtcache *rt; /* container names for --stacks --per-cgroup */
	struct trace_wait *wait; /* -G probes waiting for their binary, or NULL */
	size_t cur;           /* probe whose ring is being drained */
	size_t cur_site;      /* and which of its samplers */
	struct fold *pids;    /* -p with uprobes: the process tree, filtered here */
	bool filter_pids;
	uint64_t samples, value_errors;
	char *mount;
};

/* Sort the cells, name the cgroups, print the table (or JSON Lines with
 * @json) and the stacks. The cells' index is freed (t->cells NULL). */
void trace_print_results(struct trace *t, bool json, double secs);
/* The closing line on stderr: hits, losses, and what was cut. */
void trace_report_summary(struct trace *t, bool verbose, double secs, uint64_t lost);
/* --list BINARY: its functions and SDT probes on stdout. Exit status. */
int trace_list_binary(const char *prog, const char *bin);

#endif
