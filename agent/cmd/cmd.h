/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_CMD_H
#define CGPERF_AGENT_CMD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

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

/*
 * -G lists: append the absolute directory of every cgroup in @csv to
 * *@dirs (*@n of them). 0, 2 (a cgroup is missing: said on stderr, with its
 * path) or 1.
 */
int cmd_cgroup_dirs(const char *prog, const char *mount, const char *csv, char ***dirs,
		    size_t *n);
/* The cgroup "-- COMMAND" runs in: created, its directory appended to
 * *@dirs, its absolute path in *@abs (to remove later). 0 or 1. */
int cmd_command_cgroup(const char *prog, const char *mount, const char *name, char **abs,
		       char ***dirs, size_t *n);
void cmd_dirs_free(char **dirs, size_t n);
/*
 * Block SIGINT, SIGTERM, SIGCHLD and SIGHUP (the previous mask in *@oldmask)
 * and return a non-blocking signalfd for them, so signals arrive in the
 * commands' poll loops; -errno, with the mask restored, on failure.
 */
int cmd_signalfd(sigset_t *oldmask);
/* A command's exit status from waitpid(): its own, or 128 + signal. */
int cmd_exit_status(int wait_status);
/* Raise RLIMIT_NOFILE's soft limit to the hard one: events are fds. */
void cmd_raise_nofile(void);

/*
 * Refused container files (agent/symbols/refusals.h) for record and trace: start
 * counting, with one notice per file on stderr when @verbose ("PROG:
 * refused pid N PATH: REASON", the path escaped). 0 or -ENOMEM.
 */
int cmd_refusals_start(const char *prog, bool verbose);
/* "N files refused (special a, link b, ...)" into @buf ("none" when 0). */
void cmd_refusals_text(char *buf, size_t len);

/* Repeated -G options add up: append ",@arg" to malloc'd *@acc (or start
 * it). 0 or -ENOMEM. */
int cmd_join_csv(char **acc, const char *arg);
/* A positive, finite number of @what (--duration, -I) into *@out: 0, or 2
 * with "PROG: WHAT must be a positive number, not 'ARG'" on stderr. */
int cmd_parse_seconds(const char *prog, const char *what, const char *arg, double *out);

/* Explain a perf_event_open permission failure on stderr. */
void cmd_explain_perf_permission(const char *prog, int err);
/* When files of processes' roots were refused for want of permission, say on
 * stderr which capabilities naming their frames needs. */
void cmd_refusals_hint(const char *prog);
/* Whether this process has capability @cap (CAP_*) in its effective set. */
bool cmd_have_cap(int cap);

#endif
