/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_STAT_H
#define CGPERF_AGENT_STAT_H

/*
 * The state of `cgperf-agent stat`, shared by cmd_stat.c (targets, the
 * counting loop) and stat_print.c (its output). Internal to agent/cmd/.
 */

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/perf/counters.h"
#include "agent/perf/events.h"
#include "cgroup/identity.h"
#include "cgroup/runtime.h"

enum select_mode { SEL_NONE, SEL_ALL, SEL_NAMED, SEL_REGEX };

struct target {
	char *path; /* relative to the mount, "/x/y" */
	uint64_t id;
	int slot;
	bool removed;
	struct cg_identity ident;
};

struct stat_ctx {
	const char *prog;
	char *mount;
	enum select_mode mode;
	regex_t re;
	bool have_re;
	struct ev_spec *evs;
	size_t nev;
	struct counters *ctr;
	struct target *tg;
	size_t ntg, captg;
	bool json;
	long interval_ms;
	char *transient; /* absolute path of the cgroup made for "-- CMD" */
	FILE *out;
	bool verbose;
	uint64_t read_ns_total, read_ns_max, nreads;
	int fatal;       /* exit status decided inside a callback */
	bool header_done;
	struct cg_rtcache *rt; /* runtime identity, looked up off the counting loop */
};

/* One -I row per cgroup and event: the deltas since the last read. */
void stat_print_interval(struct stat_ctx *c, double since_start_s, double elapsed_ns);
/* The totals since the start, titled "Performance counter stats for
 * @what" (the command) or for the cgroups. */
void stat_print_totals(struct stat_ctx *c, double elapsed_ns, const char *what);

#endif
