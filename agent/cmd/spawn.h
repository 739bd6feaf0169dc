/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_SPAWN_H
#define CGPERF_AGENT_SPAWN_H

/*
 * Run "-- COMMAND": fork a child that first moves itself into a cgroup (if
 * one is given), then waits until the parent has its events enabled, then
 * execs. So the command's first instruction is already counted/sampled and
 * nothing before it is.
 */

#include <signal.h>
#include <sys/types.h>

struct spawn {
	pid_t pid;
	int go_fd; /* write end of the hold pipe; -1 once released */
};

/*
 * Fork @argv held. @cgroup_dir (absolute, may be NULL) is entered by the
 * child; @child_mask is the signal mask the command gets. The child reports
 * exec failures on stderr prefixed by @prog and exits 127. 0 or -errno.
 */
int spawn_held(struct spawn *sp, char **argv, const char *cgroup_dir, const sigset_t *child_mask,
	       const char *prog);
/* Let the command run. */
void spawn_release(struct spawn *sp);
/* Make a held child exit without running the command, and reap it. */
void spawn_abort(struct spawn *sp);

/*
 * Create the cgroup "/cgperf-NAME-PID" under @mount for the command.
 * Returns 0 with malloc'd @rel ("/cgperf-...") and @abs paths, or -errno.
 */
int spawn_make_cgroup(const char *mount, const char *name, char **rel, char **abs);

#endif
