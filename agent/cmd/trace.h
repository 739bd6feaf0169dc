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
#include <stdio.h>

#include "agent/perf/latency.h"
#include "agent/perf/probe.h"
#include "agent/perf/sampler.h"
#include "agent/perf/usdt.h"
#include "agent/stacks/fold.h"
#include "agent/stacks/stacks.h"
#include "lib/hist.h"

struct heatmap;

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
	uint64_t throttled;   /* the kernel's throttling of the probes' events (not counted as lost) */
	char *mount;
	/* --key: latency paired by these fields of both probes (trace_keyed.c) */
	char *key_names[LATENCY_KEY_MAX];
	size_t nkey;
	int key_arg[2][LATENCY_KEY_MAX]; /* [0 start, 1 end]: index into p.args */
	double lat_timeout;             /* --latency-timeout, seconds */
	const char *heat_path;          /* --heatmap FILE.svg, or NULL */
	struct heatmap *heat;
	FILE *heat_file;                /* opened before tracing, written at the end */
	uint64_t heat_refused;
};

/* trace_keyed.c. --key FIELD[,FIELD] into t->key_names: 0 or the exit status. */
int trace_key_parse(struct trace *t, const char *csv);
/* Append the key fields @spec does not name yet to it (*@spec replaced).
 * 0 or -ENOMEM. */
int trace_key_spec(const struct trace *t, char **spec);
/* The key fields' argument indexes in both latency probes: 0 or the exit
 * status (not tracepoints, no such field), with the reason on stderr. */
int trace_key_resolve(struct trace *t);
/* Hold the keyed endpoint of hit @s of the start or end probe. 0 or -errno. */
int trace_key_add(struct trace *t, const struct sample *s, bool end);
/* --heatmap: open the file before tracing (0 or the exit status, said on
 * stderr), start the map at @t0 (0 or -errno), add a pair, write the SVG
 * with the time axis up to @end (0 or the exit status). */
int trace_heat_open(struct trace *t);
int trace_heat_start(struct trace *t, uint64_t t0);
void trace_heat_add(struct trace *t, uint64_t end_time, uint64_t ns);
int trace_heat_write(struct trace *t, uint64_t end);
/* Free the key names and the heat map. */
void trace_key_release(struct trace *t);

/* Sort the cells, name the cgroups, print the table (or JSON Lines with
 * @json) and the stacks. The cells' index is freed (t->cells NULL). */
void trace_print_results(struct trace *t, bool json, double secs);
/* The closing line on stderr: hits, losses, and what was cut. */
void trace_report_summary(struct trace *t, bool verbose, double secs, uint64_t lost);
/* --list BINARY: its functions and SDT probes on stdout. Exit status. */
int trace_list_binary(const char *prog, const char *bin);

#endif
