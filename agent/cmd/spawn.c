// SPDX-License-Identifier: MIT
#include "agent/cmd/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int enter_cgroup(const char *dir)
{
	size_t n = strlen(dir) + sizeof("/cgroup.procs");
	char *procs = malloc(n);
	int fd, ret = 0;

	if (!procs)
		return -ENOMEM;
	snprintf(procs, n, "%s/cgroup.procs", dir);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	free(procs);
	if (fd < 0)
		return -errno;
	/* "0" is the writing process itself. */
	if (write(fd, "0\n", 2) != 2)
		ret = -errno;
	close(fd);
	return ret;
}

int spawn_held(struct spawn *sp, char **argv, const char *cgroup_dir, const sigset_t *child_mask,
	       const char *prog)
{
	int pipefd[2];
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(pipefd[0]);
		close(pipefd[1]);
		return -err;
	}
	if (pid == 0) {
		char b;
		int err;

		close(pipefd[1]);
		if (child_mask)
			sigprocmask(SIG_SETMASK, child_mask, NULL);
		if (cgroup_dir && (err = enter_cgroup(cgroup_dir)) < 0) {
			fprintf(stderr, "%s: cannot enter cgroup %s: %s\n", prog, cgroup_dir,
				strerror(-err));
			_exit(127);
		}
		/* EOF (the parent closed its end) means go; a byte means abort. */
		if (read(pipefd[0], &b, 1) != 0)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: cannot run '%s': %s\n", prog, argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[0]);
	sp->pid = pid;
	sp->go_fd = pipefd[1];
	return 0;
}

void spawn_release(struct spawn *sp)
{
	if (sp->go_fd >= 0) {
		close(sp->go_fd);
		sp->go_fd = -1;
	}
}

void spawn_abort(struct spawn *sp)
{
	if (sp->go_fd >= 0) {
		if (write(sp->go_fd, "x", 1) < 0) {
			/* closing the pipe below stops the child too */
		}
		close(sp->go_fd);
		sp->go_fd = -1;
	}
	if (sp->pid > 0) {
		waitpid(sp->pid, NULL, 0);
		sp->pid = -1;
	}
}

int spawn_make_cgroup(const char *mount, const char *name, char **rel, char **abs)
{
	char r[96];
	size_t n;
	char *a;

	snprintf(r, sizeof(r), "/cgperf-%s-%d", name, (int)getpid());
	n = strlen(mount) + strlen(r) + 1;
	a = malloc(n);
	if (!a)
		return -ENOMEM;
	snprintf(a, n, "%s%s", mount, r);
	if (mkdir(a, 0755) < 0) {
		int err = errno;

		free(a);
		return -err;
	}
	*rel = strdup(r);
	if (!*rel) {
		rmdir(a);
		free(a);
		return -ENOMEM;
	}
	*abs = a;
	return 0;
}
