// SPDX-License-Identifier: MIT
/*
 * The perf-map loader: see agent/symbols/jitload.h. One mutex guards the queue and
 * every job's state; one condition wakes the thread for work, another
 * wakes waiters when a job is done. The loader struct is shared by its
 * owner and its thread and freed by whichever lets go last, so a thread
 * stuck in a container's FUSE read never keeps the owner from finishing.
 */
#include "agent/symbols/jitload.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/fdio.h"
#include "lib/rootfs.h"

extern char **environ;

/* What the helper writes first on its stdout. */
struct helper_hdr {
	int32_t err; /* 0: the file's bytes follow; else the open's errno */
	int32_t why; /* a refusal's enum rootfs_reason, or -1 */
};

static const char *helper_exe;

void jitload_set_helper(const char *exe)
{
	helper_exe = exe;
}

int jitload_helper_main(int argc, char **argv)
{
	static char buf[64 << 10];
	struct helper_hdr h = {.why = -1};
	uint64_t sent = 0;
	int fd;

	/* A helper not stuck in a read goes when the agent does. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (argc != 2)
		return 2;
	rootfs_set_refusal_hook(rootfs_refusal_keep, &h.why);
	fd = rootfs_open_path(argv[1], ROOTFS_NO_CAP, NULL);
	h.err = fd < 0 ? -fd : 0;
	if (fdio_write_all(1, &h, sizeof(h)) < 0 || fd < 0)
		return 0;
	while (sent < PERFMAP_MAX_BYTES) {
		size_t want = PERFMAP_MAX_BYTES - sent < sizeof(buf) ? PERFMAP_MAX_BYTES - sent
								       : sizeof(buf);
		ssize_t n = fdio_read(fd, buf, want);

		if (n <= 0 || fdio_write_all(1, buf, (size_t)n) < 0)
			break;
		sent += (uint64_t)n;
	}
	close(fd);
	return 0;
}

/* perfmap_load(@path) in a helper process; NULL + errno. */
static struct perfmap *load_via_helper(const char *path)
{
	char *argv[] = {(char *)helper_exe, (char *)JITLOAD_HELPER_CMD, (char *)path, NULL};
	posix_spawn_file_actions_t fa;
	struct helper_hdr h;
	struct perfmap *m = NULL;
	size_t got = 0;
	int p[2], err = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	err = posix_spawn(&pid, helper_exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (err) {
		close(p[0]);
		errno = err;
		return NULL;
	}
	while (got < sizeof(h)) {
		ssize_t n = fdio_read(p[0], (char *)&h + got, sizeof(h) - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < sizeof(h)) {
		close(p[0]);
		err = EIO;
	} else {
		pid_t tp;
		const char *rest;

		if (h.why >= 0 && h.why < ROOTFS_R_N && rootfs_split(path, &tp, &rest))
			rootfs_report_refusal(tp, rest, (enum rootfs_reason)h.why, h.err);
		if (h.err) {
			close(p[0]);
			err = h.err;
		} else if (!(m = perfmap_load_fd(p[0]))) {
			err = errno;
		}
	}
	/* It has written all it will (or the pipe is closed: it ends). */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (!m)
		errno = err ? err : EIO;
	return m;
}

enum job_state { JOB_QUEUED, JOB_LOADING, JOB_DONE };

struct jitload_job {
	struct jitload *l;
	struct jitload_job *next; /* in the queue */
	char *path;
	enum job_state state;
	bool abandoned; /* the submitter freed it: the loader frees it */
	struct perfmap *map;
	int err;
};

struct jitload {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct jitload_job *head, *tail;
	size_t queued;
	bool started, stopping;
	int refs; /* the owner, and the thread once started */
	uint64_t ndone;
};

static void job_destroy(struct jitload_job *j)
{
	perfmap_free(j->map);
	free(j->path);
	free(j);
}

static void loader_unref(struct jitload *l)
{
	bool last;

	pthread_mutex_lock(&l->mu);
	last = --l->refs == 0;
	pthread_mutex_unlock(&l->mu);
	if (!last)
		return;
	pthread_cond_destroy(&l->work);
	pthread_cond_destroy(&l->done);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

static void *loader_main(void *arg)
{
	struct jitload *l = arg;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct jitload_job *j;
		struct perfmap *m;
		int err;

		while (!l->head && !l->stopping)
			pthread_cond_wait(&l->work, &l->mu);
		if (l->stopping)
			break;
		j = l->head;
		l->head = j->next;
		if (!l->head)
			l->tail = NULL;
		l->queued--;
		if (j->abandoned) {
			job_destroy(j);
			continue;
		}
		j->state = JOB_LOADING;
		pthread_mutex_unlock(&l->mu);
		/* j->path is not touched by anyone else while loading */
		m = helper_exe ? load_via_helper(j->path) : perfmap_load(j->path);
		err = m ? 0 : errno;
		pthread_mutex_lock(&l->mu);
		l->ndone++;
		if (j->abandoned) {
			perfmap_free(m);
			job_destroy(j);
			continue;
		}
		j->map = m;
		j->err = err;
		j->state = JOB_DONE;
		pthread_cond_broadcast(&l->done);
	}
	/* Stopping: jobs still queued were abandoned (the owner frees its jobs
	 * before the loader). */
	while (l->head) {
		struct jitload_job *j = l->head;

		l->head = j->next;
		job_destroy(j);
	}
	l->tail = NULL;
	pthread_mutex_unlock(&l->mu);
	loader_unref(l);
	return NULL;
}

struct jitload *jitload_new(void)
{
	struct jitload *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	pthread_mutex_init(&l->mu, NULL);
	clock_cond_init(&l->done);
	pthread_cond_init(&l->work, NULL);
	l->refs = 1;
	return l;
}

/* Under l->mu. 0 or -errno. */
static int start_thread(struct jitload *l)
{
	sigset_t all, old;
	pthread_t t;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, NULL, loader_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_detach(t);
	l->started = true;
	l->refs++;
	return 0;
}

struct jitload_job *jitload_submit(struct jitload *l, const char *path)
{
	struct jitload_job *j;
	int err = 0;

	if (!l || !path) {
		errno = EINVAL;
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j || !(j->path = strdup(path))) {
		free(j);
		errno = ENOMEM;
		return NULL;
	}
	j->l = l;
	pthread_mutex_lock(&l->mu);
	if (l->queued >= JITLOAD_MAX_QUEUED)
		err = -EAGAIN;
	else if (!l->started)
		err = start_thread(l);
	if (!err) {
		if (l->tail)
			l->tail->next = j;
		else
			l->head = j;
		l->tail = j;
		l->queued++;
		pthread_cond_signal(&l->work);
	}
	pthread_mutex_unlock(&l->mu);
	if (err) {
		job_destroy(j);
		errno = -err;
		return NULL;
	}
	return j;
}

int jitload_wait(struct jitload_job *j, uint64_t deadline_ns, struct perfmap **map, int *err)
{
	struct jitload *l = j->l;
	struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000u),
			      .tv_nsec = (long)(deadline_ns % 1000000000u)};
	int ret;

	pthread_mutex_lock(&l->mu);
	while (j->state != JOB_DONE && deadline_ns &&
	       pthread_cond_timedwait(&l->done, &l->mu, &ts) != ETIMEDOUT)
		;
	ret = j->state == JOB_DONE;
	if (ret) {
		*map = j->map;
		*err = j->err;
		j->map = NULL;
	}
	pthread_mutex_unlock(&l->mu);
	return ret;
}

void jitload_job_free(struct jitload_job *j)
{
	struct jitload *l;
	bool now;

	if (!j)
		return;
	l = j->l;
	pthread_mutex_lock(&l->mu);
	/* queued or loading: the loader meets it and frees it */
	now = j->state == JOB_DONE;
	j->abandoned = true;
	pthread_mutex_unlock(&l->mu);
	if (now)
		job_destroy(j);
}

void jitload_free(struct jitload *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stopping = true;
	pthread_cond_signal(&l->work);
	pthread_mutex_unlock(&l->mu);
	loader_unref(l);
}

uint64_t jitload_done(const struct jitload *l)
{
	uint64_t n;

	if (!l)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&l->mu);
	n = l->ndone;
	pthread_mutex_unlock((pthread_mutex_t *)&l->mu);
	return n;
}
