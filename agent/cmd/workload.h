/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_WORKLOAD_H
#define CGPERF_AGENT_WORKLOAD_H

/*
 * The run of a measuring command (stat, record, trace) and its optional
 * "-- COMMAND", as perf's evlist__prepare_workload: one place that blocks
 * the signals into a signalfd, forks the command held, lets it go once the
 * events are enabled, notices it exit, and tears it all down.
 *
 *	workload_start(&w, prog, cmd_argv, cgroup_dir)   signalfd + held fork
 *	... enable events ...
 *	workload_go(&w)                                    the command runs
 *	poll workload_fd(&w); workload_signals(&w)        true: time to stop
 *	ret = workload_finish(&w)                          its exit status
 *	workload_release(&w)                               always, at out:
 *
 * The struct lives on the caller's stack; workload_init() (or the
 * WORKLOAD_INIT initializer) makes workload_release() safe at any point.
 * These calls belong to the commands, so they print their failures on
 * stderr prefixed by @prog.
 */

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "agent/cmd/spawn.h"

struct workload {
	const char *prog;
	int sfd;		/* signalfd for INT, TERM, CHLD, HUP; -1 before start */
	sigset_t oldmask;	/* the mask before start, restored by release */
	bool mask_set;
	struct spawn sp;	/* the held command, if any */
	pid_t child;		/* the command until reaped, else -1 */
	int status;		/* its wait status once reaped */
};

#define WORKLOAD_INIT                                                                       \
	{                                                                                   \
		.sfd = -1, .sp = {.pid = -1, .go_fd = -1 }, .child = -1                     \
	}

/*
 * Block the signals into a signalfd and, when @argv is not NULL, fork the
 * command held in @cgroup_dir (absolute, may be NULL). 0, or 1 with the
 * reason printed.
 */
int workload_start(struct workload *w, const char *prog, char **argv, const char *cgroup_dir);
/* The command's pid, or -1 when there is none (or it was reaped). */
pid_t workload_pid(const struct workload *w);
/* Let the held command run (nothing without one). */
void workload_go(struct workload *w);
/* The signalfd to poll for POLLIN. */
int workload_fd(const struct workload *w);
/*
 * Read every pending signal. True when the run should stop: a signal other
 * than SIGCHLD arrived, or the command exited (it is then reaped).
 */
bool workload_signals(struct workload *w);
/*
 * End of a run: a command still running gets SIGTERM and is waited for.
 * Returns its exit status (its own, or 128 + signal); 0 without a command.
 */
int workload_finish(struct workload *w);
/* Undo what start did: abort a held child, reap, close, restore the mask. */
void workload_release(struct workload *w);

#endif
