// SPDX-License-Identifier: MIT
/*
 * cgperf-agent: container- and cgroup-aware profiling agent. A perf-like
 * command for one-off use; each subcommand lives in agent/cmd_*.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "agent/cmd/cmd.h"
#include "agent/perf/events.h"
#include "agent/symbols/jitload.h"
#include "agent/symbols/slowopen.h"
#include "lib/log.h"

#ifndef CGPERF_VERSION
#define CGPERF_VERSION "0.1.0"
#endif

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{"cgroups", cmd_cgroups, "list cgroups with container/pod/unit identity and processes"},
	{"stat", cmd_stat, "count perf events per cgroup (perf stat -a -G for every cgroup)"},
	{"record", cmd_record, "sample CPU stacks, fold them per cgroup (perf record -g + stackcollapse)"},
	{"run", cmd_run, "continuous mode: counters, stacks, probes per cgroup, pushed to collectors"},
	{"wire-dump", cmd_wiredump, "decode pushed batches (as a collector gets them) to JSON"},
	{"trace", cmd_trace, "uprobes, USDT and tracepoints per cgroup: hits, histograms, latency"},
	{"annotate", cmd_annotate, "a function's instructions with the share of samples at each (perf annotate)"},
};

/* `run` logs through the log module; the one-shot commands talk plainly. */
static bool log_structured;

/* Told by the events module when it mounted tracefs itself. */
static void tracefs_mounted(const char *path)
{
	if (log_structured)
		log_kv(LOG_INFO, "mounted tracefs: nothing had mounted it", "path", path, NULL);
	else
		fprintf(stderr, "cgperf-agent: mounted tracefs at %s (nothing had mounted it)\n",
			path);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: cgperf-agent COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'cgperf-agent COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("cgperf-agent %s\n", CGPERF_VERSION);
		return 0;
	}
	/* the perf-map reader the agent runs for itself (agent/symbols/jitload.h) */
	if (!strcmp(argv[1], JITLOAD_HELPER_CMD))
		return jitload_helper_main(argc - 1, argv + 1);
	/* the opener of files on FUSE (agent/symbols/slowopen.h) */
	if (!strcmp(argv[1], SLOWOPEN_HELPER_CMD))
		return slowopen_helper_main(argc - 1, argv + 1);
	jitload_set_helper("/proc/self/exe");
	slowopen_install("/proc/self/exe");
	ev_tracefs_on_mount(tracefs_mounted);
	log_structured = !strcmp(argv[1], "run");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "cgperf-agent: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
