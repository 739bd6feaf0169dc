// SPDX-License-Identifier: MIT
/* FUSE mount points per mount namespace: see lib/fusemnt.h. */
#include "lib/fusemnt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/grow.h"
#include "lib/mountinfo.h"
#include "lib/rootfs.h"
#include "lib/strv.h"

struct fusemnt_table {
	bool all;      /* read in part: everything is at risk */
	char **points; /* unescaped mount points, "/" included */
	size_t n, cap;
};

static bool fuse_type(const char *t)
{
	return !strcmp(t, "fuse") || !strcmp(t, "fuseblk") || (!strncmp(t, "fuse.", 5) && t[5]);
}

/* A mount line into the table: 0, or -ENOMEM. */
static int table_add(void *ctx, const struct mountinfo_entry *e)
{
	struct fusemnt_table *t = ctx;
	size_t len = e->point_len;
	char *s;

	if (!fuse_type(e->fstype) || e->point[0] != '/')
		return 0;
	if (GROW_ARRAY(t->points, t->n, t->cap, 8) < 0 || !(s = strndup(e->point, len)))
		return -ENOMEM;
	/* without trailing slashes, except the root itself */
	while (len > 1 && s[len - 1] == '/')
		s[--len] = '\0';
	t->points[t->n++] = s;
	return 0;
}

/* One mountinfo line (NUL-terminated, writable): 0, or -errno on memory. */
static int parse_line(struct fusemnt_table *t, char *line)
{
	struct mountinfo_entry e;

	return mountinfo_parse_line(line, &e) ? 0 : table_add(t, &e);
}

static struct fusemnt_table *table_new(void)
{
	return calloc(1, sizeof(struct fusemnt_table));
}

/* @t when @err is 0, else NULL + errno (and @t freed). */
static struct fusemnt_table *table_done(struct fusemnt_table *t, int err)
{
	if (!err)
		return t;
	fusemnt_table_free(t);
	errno = err;
	return NULL;
}

struct fusemnt_table *fusemnt_table_read(int fd)
{
	struct fusemnt_table *t = table_new();
	struct rootfs_lines *lr;
	const char *line;
	size_t len;
	int dup_fd, r, err = 0;

	if (!t)
		return NULL;
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0 || !(lr = rootfs_lines_new(dup_fd, FUSEMNT_MAX_LINE, FUSEMNT_MAX_BYTES))) {
		err = errno;
		if (dup_fd >= 0)
			close(dup_fd);
		free(t);
		errno = err;
		return NULL;
	}
	while ((r = rootfs_lines_next(lr, &line, &len)) == 1) {
		if ((err = -parse_line(t, (char *)line)) != 0)
			break;
	}
	if (r < 0 || rootfs_lines_capped(lr) || rootfs_lines_skipped(lr))
		t->all = true;
	rootfs_lines_free(lr);
	return table_done(t, err);
}

struct fusemnt_table *fusemnt_table_parse(const char *text)
{
	struct fusemnt_table *t = table_new();
	char *copy = strdup(text ? text : "");
	int err;

	if (!t || !copy) {
		free(t);
		free(copy);
		errno = ENOMEM;
		return NULL;
	}
	err = -mountinfo_foreach(copy, table_add, t);
	free(copy);
	return table_done(t, err);
}

void fusemnt_table_free(struct fusemnt_table *t)
{
	if (!t)
		return;
	strv_free(t->points, t->n);
	free(t);
}

size_t fusemnt_table_count(const struct fusemnt_table *t)
{
	return t && !t->all ? t->n : 0;
}

bool fusemnt_table_covers(const struct fusemnt_table *t, const char *path)
{
	if (!t)
		return false;
	if (t->all)
		return true;
	if (!t->n)
		return false;
	if (!path || path[0] != '/')
		return true;
	for (size_t i = 0; i < t->n; i++) {
		const char *m = t->points[i];
		size_t ml = strlen(m);

		if (ml == 1) /* "/" is FUSE: the whole root */
			return true;
		if (!strncmp(path, m, ml) && (path[ml] == '\0' || path[ml] == '/'))
			return true;
	}
	return false;
}

/* ---- the per-namespace cache ---- */

struct slot {
	dev_t dev;
	ino_t ino;
	time_t loaded;
	struct fusemnt_table *t;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[FUSEMNT_CACHE_SLOTS];
static unsigned next_victim;
static uint64_t nread;

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

/* Under lock: the table of @pid's namespace (dev, ino), read if needed. */
static struct fusemnt_table *table_for(pid_t pid, dev_t dev, ino_t ino, int *err)
{
	char path[64];
	struct slot *s = NULL;
	struct fusemnt_table *t;
	time_t now = now_s();
	int fd;

	for (unsigned i = 0; i < FUSEMNT_CACHE_SLOTS; i++) {
		if (slots[i].t && slots[i].dev == dev && slots[i].ino == ino) {
			s = &slots[i];
			break;
		}
	}
	if (s && now - s->loaded < FUSEMNT_TTL_S)
		return s->t;
	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/mountinfo");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = errno == ENOENT ? -ESRCH : -errno;
		return NULL;
	}
	t = fusemnt_table_read(fd);
	close(fd);
	if (!t) {
		*err = -errno;
		return NULL;
	}
	nread++;
	if (!s) {
		for (unsigned i = 0; i < FUSEMNT_CACHE_SLOTS && !s; i++)
			if (!slots[i].t)
				s = &slots[i];
		if (!s)
			s = &slots[next_victim++ % FUSEMNT_CACHE_SLOTS];
	}
	fusemnt_table_free(s->t);
	s->dev = dev;
	s->ino = ino;
	s->loaded = now;
	s->t = t;
	return t;
}

int fusemnt_classify(pid_t pid, const char *path)
{
	char ns[64];
	struct stat st;
	struct fusemnt_table *t;
	int ret = 0;

	if (pid > 0)
		snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)pid);
	else
		snprintf(ns, sizeof(ns), "/proc/self/ns/mnt");
	if (stat(ns, &st) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	pthread_mutex_lock(&lock);
	t = table_for(pid, st.st_dev, st.st_ino, &ret);
	if (t) {
		if (!t->all && !t->n)
			ret = FUSEMNT_NONE;
		else
			ret = fusemnt_table_covers(t, path) ? FUSEMNT_AT_RISK : FUSEMNT_ELSEWHERE;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

void fusemnt_cache_reset(void)
{
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < FUSEMNT_CACHE_SLOTS; i++) {
		fusemnt_table_free(slots[i].t);
		slots[i].t = NULL;
	}
	nread = 0;
	pthread_mutex_unlock(&lock);
}

uint64_t fusemnt_tables_read(void)
{
	uint64_t n;

	pthread_mutex_lock(&lock);
	n = nread;
	pthread_mutex_unlock(&lock);
	return n;
}
