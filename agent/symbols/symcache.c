// SPDX-License-Identifier: MIT
/*
 * The symbolization cache directory: see agent/symbols/symcache.h. Everything here
 * assumes the directory may be shared with other agents running at the
 * same time and may have been tampered with by someone else: entries are
 * trusted only by ownership and mode, and their readers validate content.
 */
#include "agent/symbols/symcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/grow.h"

#define SYMCACHE_MAX_ENTRIES 4096 /* entries considered by symcache_trim() */
/* A temporary this old was left by a writer that died (kill -9, OOM, a
 * crash): no write of an entry takes an hour. */
#define SYMCACHE_TMP_STALE 3600

static _Thread_local char symcache_path[PATH_MAX];

/* @path is a directory: ours and private (@last), or one on the way to it. */
static int dir_trusted(const char *path, bool last)
{
	uid_t me = geteuid();
	struct stat st;

	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (last)
		return st.st_uid == me && !(st.st_mode & 022) ? 0 : -EPERM;
	if (st.st_uid != 0 && st.st_uid != me)
		return -EPERM;
	return (st.st_mode & 022) && !(st.st_mode & S_ISVTX) ? -EPERM : 0;
}

/*
 * Every directory above @path (absolute, no symlinks) is one nobody but
 * root and us can rename or replace entries in: owned by root or us, and
 * writable by nobody else unless sticky (then others cannot touch entries
 * that are not theirs, and each entry on the way is root's or ours); @path
 * itself is ours and private. Else whoever could write above it could swap
 * our directory for a symlink to any other between this check and a later
 * open, rename or unlink by path, and have root write or delete there.
 */
static int chain_trusted(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	int err;

	if (n >= sizeof(buf) || path[0] != '/')
		return -EINVAL;
	if ((err = dir_trusted("/", n == 1)) < 0)
		return err;
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i < n; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		err = dir_trusted(buf, false);
		buf[i] = '/';
		if (err < 0)
			return err;
	}
	return n > 1 ? dir_trusted(path, true) : 0;
}

static int mkdir_private(char *path, size_t size)
{
	char real[PATH_MAX];
	struct stat st;
	int err;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	/* symlinks above it resolved; then the chain checked as it really is */
	if (!realpath(path, real))
		return -errno;
	if ((err = chain_trusted(real)) < 0)
		return err;
	if (strlen(real) >= size)
		return -ENAMETOOLONG;
	memcpy(path, real, strlen(real) + 1);
	return 0;
}

const char *symcache_dir(void)
{
	const char *env = getenv("CGPERF_CACHE_DIR");
	int n;

	if (env) {
		if (!env[0] || !strcmp(env, "off"))
			return NULL;
		n = snprintf(symcache_path, sizeof(symcache_path), "%s", env);
	} else if (geteuid() == 0) {
		n = snprintf(symcache_path, sizeof(symcache_path), "/var/cache/cgperf");
	} else {
		const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
		char parent[PATH_MAX];

		if (xdg && xdg[0] == '/')
			n = snprintf(parent, sizeof(parent), "%s", xdg);
		else if (home && home[0] == '/')
			n = snprintf(parent, sizeof(parent), "%s/.cache", home);
		else
			return NULL;
		if (n < 0 || (size_t)n >= sizeof(parent))
			return NULL;
		/* ~/.cache itself may be shared-readable; only ours must be private */
		if (mkdir(parent, 0700) < 0 && errno != EEXIST)
			return NULL;
		n = snprintf(symcache_path, sizeof(symcache_path), "%s/cgperf", parent);
	}
	if (n < 0 || (size_t)n >= sizeof(symcache_path) || symcache_path[0] != '/')
		return NULL;
	return mkdir_private(symcache_path, sizeof(symcache_path)) == 0 ? symcache_path : NULL;
}

static int entry_path(char *buf, size_t size, const char *dir, const char *name)
{
	int n;

	if (!dir || !name || !name[0] || strchr(name, '/'))
		return -EINVAL;
	n = snprintf(buf, size, "%s/%s", dir, name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int symcache_open(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, err = entry_path(path, sizeof(path), dir, name);

	if (err < 0)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int symcache_create(const char *dir, const char *name, char *tmp, size_t size)
{
	char base[PATH_MAX];
	int fd, err = entry_path(base, sizeof(base), dir, name);

	if (err < 0)
		return err;
	if (snprintf(tmp, size, "%s.tmp.XXXXXX", base) >= (int)size)
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) < 0) {
		err = -errno;
		symcache_abort(fd, tmp);
		return err;
	}
	return fd;
}

int symcache_commit(int fd, const char *tmp, const char *dir, const char *name)
{
	char path[PATH_MAX];
	int err = entry_path(path, sizeof(path), dir, name);

	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

void symcache_abort(int fd, const char *tmp)
{
	if (fd >= 0)
		close(fd);
	unlink(tmp);
}

struct trim_entry {
	char name[NAME_MAX + 1];
	time_t mtime;
	off_t size;
};

static int trim_cmp(const void *pa, const void *pb)
{
	const struct trim_entry *a = pa, *b = pb;

	if (a->mtime != b->mtime)
		return a->mtime < b->mtime ? -1 : 1;
	return strcmp(a->name, b->name);
}

void symcache_trim(const char *dir, const char *prefix, const char *keep, size_t max_bytes)
{
	struct trim_entry *v = NULL;
	size_t n = 0, cap = 0, total = 0, plen = strlen(prefix);
	time_t now = time(NULL);
	struct dirent *de;
	DIR *d;

	if (!dir || !(d = opendir(dir)))
		return;
	while ((de = readdir(d)) && n < SYMCACHE_MAX_ENTRIES) {
		struct stat st;

		if (strncmp(de->d_name, prefix, plen) != 0 || (keep && !strcmp(de->d_name, keep)))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (strstr(de->d_name, ".tmp.")) {
			/* another writer's, unless left by one that died long ago */
			if (st.st_mtime < now - SYMCACHE_TMP_STALE)
				unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (GROW_ARRAY(v, n, cap, 16) < 0)
			break;
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].mtime = st.st_mtime;
		v[n].size = st.st_size;
		total += (size_t)st.st_size;
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), trim_cmp);
	for (size_t i = 0; i < n && total > max_bytes; i++) {
		if (unlinkat(dirfd(d), v[i].name, 0) == 0)
			total -= (size_t)v[i].size;
	}
	closedir(d);
	free(v);
}
