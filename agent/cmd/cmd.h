/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_CMD_H
#define CGPERF_AGENT_CMD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <getopt.h>
#include <stdio.h>

#include "agent/symbols/demangle.h"

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
int cmd_annotate(int argc, char **argv);

/*
 * record, with @e->emit(@e->ctx, stacks) called in place of writing the
 * folded stacks (annotate samples this way); @e->prog prefixes messages.
 * emit returns 0 or an exit status. @e NULL: cmd_record().
 */
struct stacks;
struct record_emit {
	const char *prog;
	int (*emit)(void *ctx, struct stacks *st, size_t *nlines); /* distinct stacks seen */
	void *ctx;
};
int cmd_record_emit(int argc, char **argv, const struct record_emit *e);

/* Shared by the commands: the perf_event cgroup hierarchy's mount point
 * (malloc'd) or NULL with a message printed. */
char *cmd_perf_cgroup_mount(const char *prog);
/* The same, printing nothing: NULL with what went wrong in @why. */
char *cmd_perf_cgroup_find(char *why, size_t whylen);

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
/* The pids of the processes in the -G cgroups @groups and below them
 * (cmd_cgpids.c), a malloc'd array in (*@pids, *@n). 0, or the exit status
 * (1, 2) with the reason said on stderr. */
int cmd_cgroup_pids(const char *prog, const char *groups, int **pids, size_t *n);
/*
 * Block SIGINT, SIGTERM, SIGHUP and, with @sigchld, SIGCHLD (the previous
 * mask in *@oldmask) and return a non-blocking signalfd for them, so signals
 * arrive in the commands' poll loops; -errno, with the mask restored, on
 * failure.
 */
int cmd_signalfd(sigset_t *oldmask, bool sigchld);
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
/* -p's process id (1 to PID_MAX_LIMIT, 4194304) into *@out: 0, or 2 with
 * "PROG: -p takes a process id, not 'ARG'" on stderr (record and trace). */
int cmd_parse_pid(const char *prog, const char *arg, pid_t *out);
/*
 * What record and trace watch, and for how long, from the options both
 * take: -a, -G (repeated lists add up), -p, --duration, -v, "-- COMMAND".
 */
struct cmd_target {
	bool all;        /* -a */
	char *groups;    /* every -G joined by commas (malloc'd), or NULL */
	pid_t pid;       /* -p, or 0 */
	double duration; /* --duration in seconds, or 0: until a signal or COMMAND's end */
	bool verbose;    /* -v */
	char **cmd;      /* "-- COMMAND": a part of argv, or NULL */
};
/* getopt_long()'s @opt and its @arg into @t when it is one of those: true
 * with *@ret 0 or the exit status (2, said on stderr), false when not. */
bool cmd_target_opt(struct cmd_target *t, const char *prog, int opt, const char *arg, int *ret);
/*
 * The cgroup directories of @t into (*@dirs, *@n): -G's, or, for a command
 * and no other target (@other: one of the caller's own, record's --target),
 * a new cgroup named @name that the command runs in (*@abs, to remove at the
 * end). @mount NULL (cmd_perf_cgroup_mount() said why): 1 when a cgroup is
 * needed. 0 or the exit status.
 */
int cmd_target_cgroups(const struct cmd_target *t, const char *prog, const char *mount,
		       const char *name, bool other, char ***dirs, size_t *n, char **abs);
/* The CLOCK_MONOTONIC instant --duration ends at, from @t0; 0: none. */
uint64_t cmd_target_deadline(const struct cmd_target *t, uint64_t t0);

/*
 * A command's options, once: getopt_long's tables and the option list of
 * its usage both come from one array of these.
 */
struct cmd_opt {
	const char *name; /* --NAME, or NULL for a short option only */
	int val;          /* what getopt_long returns for it */
	bool letter;      /* -VAL is an option too */
	const char *arg;  /* the argument's name in the usage; NULL: takes none */
	const char *help; /* its usage text, lines after the first begun by '\n';
			   * NULL: not listed (an alias, --help) */
};

#define CMD_MAX_OPTS 32

/* The sampling targets of record and annotate, one table for both. */
#define CMD_OPTS_SAMPLE_TARGETS                                                                   \
	{"all-cpus", 'a', true, NULL, "sample the whole host (default)"},                         \
	{"cgroup", 'G', true, "CG,...", "only these cgroups (paths relative to the cgroup mount)"}, \
	{"pid", 'p', true, "PID", "only this process and the children it forks"},                 \
	{"target", 't', true, "SELECTOR",                                                          \
	 "processes matching comm=, exe=, cgroup=, pid=, cmdline~,\n"                             \
	 "container=, image=, pod=, namespace=, unit="}

/*
 * A command's command line in one place: the usage text and the options
 * that getopt_long's tables and the usage's option list both come from.
 * --help (-h), which every command takes, is added by cmd_getopt_init()
 * and not listed.
 */
struct cmd_spec {
	const char *name;     /* the subcommand's */
	/* After "usage: cgperf-agent NAME ", lines ended by '\n', each under
	 * the first's start; one that begins "cgperf-agent " is another form
	 * of the command, under the first form. */
	const char *synopsis;
	const char *notes;    /* after the option list, or NULL */
	int col;              /* the column the options' help text starts at */
	bool in_order;        /* stop at the first operand ("+"): "-- COMMAND"
			       * and the command's own options stay its */
	struct cmd_opt opts[CMD_MAX_OPTS + 1]; /* ended by an entry with val 0 */
};

/* The usage: the synopsis, a blank line and the options that have help,
 * the notes. */
void cmd_usage(FILE *f, const struct cmd_spec *s);

/* getopt_long()'s long options and short option string of a spec. */
struct cmd_getopt {
	struct option lo[CMD_MAX_OPTS + 2];
	char so[2 * CMD_MAX_OPTS + 4];
};
/* Fill @g from @s, --help and -h included, and reset getopt (optind = 1)
 * for getopt_long(argc, argv, g->so, g->lo, NULL) from argv[1] on. */
void cmd_getopt_init(struct cmd_getopt *g, const struct cmd_spec *s);

/* --demangle's full, short or none into *@out: 0, or 2 with the choices on
 * stderr. */
int cmd_parse_demangle(const char *prog, const char *arg, enum demangle_style *out);

/* Explain a perf_event_open permission failure on stderr. */
void cmd_explain_perf_permission(const char *prog, int err);
/* When files of processes' roots were refused for want of permission, say on
 * stderr which capabilities naming their frames needs. */
void cmd_refusals_hint(const char *prog);
/* Whether this process has capability @cap (CAP_*) in its effective set. */
bool cmd_have_cap(int cap);

#endif
