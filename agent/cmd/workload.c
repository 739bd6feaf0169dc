// SPDX-License-Identifier: MIT
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/cmd/cmd.h"
#include "agent/cmd/workload.h"

int workload_start(struct workload *w, const char *prog, char **argv, const char *cgroup_dir)
{
	int err;

	w->prog = prog;
	w->sfd = cmd_signalfd(&w->oldmask, true);
	if (w->sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(-w->sfd));
		return 1;
	}
	w->mask_set = true;
	if (!argv)
		return 0;
	err = spawn_held(&w->sp, argv, cgroup_dir, &w->oldmask, prog);
	if (err) {
		fprintf(stderr, "%s: fork: %s\n", prog, strerror(-err));
		return 1;
	}
	w->child = w->sp.pid;
	return 0;
}

pid_t workload_pid(const struct workload *w)
{
	return w->child;
}

void workload_go(struct workload *w)
{
	spawn_release(&w->sp);
}

int workload_fd(const struct workload *w)
{
	return w->sfd;
}

bool workload_signals(struct workload *w)
{
	struct signalfd_siginfo si;
	bool stop = false;

	while (read(w->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo != SIGCHLD) {
			stop = true;
		} else if (w->child > 0 && waitpid(w->child, &w->status, WNOHANG) == w->child) {
			w->child = -1;
			stop = true;
		}
	}
	return stop;
}

int workload_finish(struct workload *w)
{
	bool had = w->sp.pid > 0;

	if (w->child > 0) {
		kill(w->child, SIGTERM);
		waitpid(w->child, &w->status, 0);
		w->child = -1;
	}
	return had ? cmd_exit_status(w->status) : 0;
}

void workload_release(struct workload *w)
{
	if (w->sp.go_fd >= 0)
		spawn_abort(&w->sp);
	else if (w->child > 0)
		waitpid(w->child, NULL, 0);
	w->child = -1;
	if (w->sfd >= 0)
		close(w->sfd);
	w->sfd = -1;
	if (w->mask_set)
		sigprocmask(SIG_SETMASK, &w->oldmask, NULL);
	w->mask_set = false;
}
