/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_CMD_H
#define CGPERF_AGENT_CMD_H

/*
 * Subcommands of cgperf-agent. Each takes argv with argv[0] = the
 * subcommand's name and returns the process exit status:
 * 0 success, 1 runtime failure, 2 bad usage or input (unknown event,
 * missing cgroup, bad option).
 */
int cmd_cgroups(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_wiredump(int argc, char **argv);

/* Shared by the commands: the perf_event cgroup hierarchy's mount point
 * (malloc'd) or NULL with a message printed. */
char *cmd_perf_cgroup_mount(const char *prog);

/* Explain a perf_event_open permission failure on stderr. */
void cmd_explain_perf_permission(const char *prog, int err);

#endif
