// SPDX-License-Identifier: MIT
/*
 * agent/symcache: the symbolization cache directory as root sees it when
 * someone else may have been there first. The directory must be refused
 * when anyone but root and us could swap it (or a directory above it) for
 * a symlink; entries must be refused when they are symlinks, FIFOs or
 * writable by others; temporaries of writers that died must not pile up.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/symbols/symcache.h"
#include "tests/unit/testlib.h"

#define NOBODY 65534

static char root[64];
static char *saved_env;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	const char *e = getenv("CGPERF_CACHE_DIR");

	(void)state;
	saved_env = e ? strdup(e) : NULL;
	snprintf(root, sizeof(root), "/tmp/cgperf-symcache.XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (saved_env)
		setenv("CGPERF_CACHE_DIR", saved_env, 1);
	else
		unsetenv("CGPERF_CACHE_DIR");
	free(saved_env);
	return 0;
}


static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(close(fd), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static const char *dir_for(const char *path)
{
	assert_int_equal(setenv("CGPERF_CACHE_DIR", path, 1), 0);
	return symcache_dir();
}

/* A private directory under trusted ones is used, created 0700. */
static void test_dir_ok(void **state)
{
	char path[PATH_MAX], link[PATH_MAX], sticky[PATH_MAX];
	const char *d;
	struct stat st;

	(void)state;
	tl_pathf(path, sizeof(path), "%s/cache", root);
	d = dir_for(path);
	assert_non_null(d);
	assert_string_equal(d, path);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);

	/* a symlink above it (in trusted directories) is resolved */
	tl_pathf(link, sizeof(link), "%s/via", root);
	assert_int_equal(symlink(root, link), 0);
	tl_pathf(path, sizeof(path), "%s/via/cache", root);
	d = dir_for(path);
	assert_non_null(d);
	tl_pathf(path, sizeof(path), "%s/cache", root);
	assert_string_equal(d, path);

	/* a sticky world-writable parent (as /tmp) is fine: others cannot
	 * rename or remove what is ours there */
	tl_pathf(sticky, sizeof(sticky), "%s/sticky", root);
	assert_int_equal(mkdir(sticky, 0700), 0);
	assert_int_equal(chmod(sticky, 01777), 0);
	tl_pathf(path, sizeof(path), "%s/cache", sticky);
	assert_non_null(dir_for(path));

	assert_null(dir_for(""));
	assert_null(dir_for("off"));
	assert_null(dir_for("relative/dir"));
}

/* The directory itself: not a symlink, ours, private. */
static void test_dir_refused(void **state)
{
	char path[PATH_MAX], target[PATH_MAX];

	(void)state;
	tl_pathf(target, sizeof(target), "%s/elsewhere", root);
	assert_int_equal(mkdir(target, 0700), 0);
	tl_pathf(path, sizeof(path), "%s/link", root);
	assert_int_equal(symlink(target, path), 0);
	assert_null(dir_for(path));

	tl_pathf(path, sizeof(path), "%s/open", root);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chmod(path, 0777), 0);
	assert_null(dir_for(path));

	if (geteuid() == 0) {
		tl_pathf(path, sizeof(path), "%s/theirs", root);
		assert_int_equal(mkdir(path, 0700), 0);
		assert_int_equal(chown(path, NOBODY, NOBODY), 0);
		assert_null(dir_for(path));
	}
}

/*
 * The directories above it: whoever owns or may write to one could rename
 * our directory away and put a symlink to /etc in its place after the
 * check; root would then write and unlink entries there.
 */
static void test_dir_chain(void **state)
{
	char parent[PATH_MAX], path[PATH_MAX];

	(void)state;
	/* writable by all, not sticky */
	tl_pathf(parent, sizeof(parent), "%s/shared", root);
	assert_int_equal(mkdir(parent, 0700), 0);
	assert_int_equal(chmod(parent, 0777), 0);
	tl_pathf(path, sizeof(path), "%s/cache", parent);
	assert_null(dir_for(path));
	/* group-writable, not sticky */
	assert_int_equal(chmod(parent, 0775), 0);
	assert_null(dir_for(path));
	/* deeper: one bad directory anywhere on the way is enough */
	assert_int_equal(chmod(parent, 0777), 0);
	tl_pathf(path, sizeof(path), "%s/a", parent);
	assert_int_equal(mkdir(path, 0700), 0);
	tl_pathf(path, sizeof(path), "%s/a/cache", parent);
	assert_null(dir_for(path));

	if (geteuid() == 0) {
		/* owned by someone else, even if only they may write it */
		tl_pathf(parent, sizeof(parent), "%s/user", root);
		assert_int_equal(mkdir(parent, 0755), 0);
		assert_int_equal(chown(parent, NOBODY, NOBODY), 0);
		tl_pathf(path, sizeof(path), "%s/cache", parent);
		assert_null(dir_for(path));
	}
}

/* Entries: O_NOFOLLOW, regular, ours, not writable by others. */
static void test_open(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX], target[PATH_MAX];
	int fd;

	(void)state;
	tl_pathf(dir, sizeof(dir), "%s/cache", root);
	assert_non_null(dir_for(dir));

	tl_pathf(path, sizeof(path), "%s/good", dir);
	put(path, "data", 0600);
	fd = symcache_open(dir, "good");
	assert_true(fd >= 0);
	close(fd);
	put(path, "data", 0644); /* others may read: still ours alone to write */
	fd = symcache_open(dir, "good");
	assert_true(fd >= 0);
	close(fd);

	put(path, "data", 0666);
	assert_int_equal(symcache_open(dir, "good"), -EPERM);
	put(path, "data", 0620);
	assert_int_equal(symcache_open(dir, "good"), -EPERM);

	tl_pathf(target, sizeof(target), "%s/target", root);
	put(target, "data", 0600);
	tl_pathf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(symcache_open(dir, "link"), -ELOOP);

	/* a FIFO must neither block the agent nor be read */
	tl_pathf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(symcache_open(dir, "fifo"), -EPERM);

	tl_pathf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(symcache_open(dir, "sub"), -EPERM);

	if (geteuid() == 0) {
		tl_pathf(path, sizeof(path), "%s/theirs", dir);
		put(path, "data", 0600);
		assert_int_equal(chown(path, NOBODY, NOBODY), 0);
		assert_int_equal(symcache_open(dir, "theirs"), -EPERM);
	}

	assert_int_equal(symcache_open(dir, "../good"), -EINVAL);
	assert_int_equal(symcache_open(dir, ""), -EINVAL);
	assert_int_equal(symcache_open(dir, "missing"), -ENOENT);
}

/* Writes land whole under their name, private; aborted ones leave nothing. */
static void test_create_commit(void **state)
{
	char dir[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int fd;

	(void)state;
	tl_pathf(dir, sizeof(dir), "%s/cache", root);
	assert_non_null(dir_for(dir));

	fd = symcache_create(dir, "entry", tmp, sizeof(tmp));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	assert_int_equal(symcache_commit(fd, tmp, dir, "entry"), 0);
	tl_pathf(path, sizeof(path), "%s/entry", dir);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_size, 5);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(lstat(tmp, &st), -1);

	fd = symcache_create(dir, "other", tmp, sizeof(tmp));
	assert_true(fd >= 0);
	symcache_abort(fd, tmp);
	assert_int_equal(lstat(tmp, &st), -1);
	tl_pathf(path, sizeof(path), "%s/other", dir);
	assert_int_equal(lstat(path, &st), -1);

	assert_int_equal(symcache_create(dir, "a/b", tmp, sizeof(tmp)), -EINVAL);
	assert_int_equal(symcache_create(dir, "x", tmp, 8), -ENAMETOOLONG);
}

static void age(const char *path, time_t secs_ago)
{
	struct timespec ts[2];

	ts[0].tv_sec = ts[1].tv_sec = time(NULL) - secs_ago;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	tl_pathf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

/*
 * Oldest first down to the budget; the kept entry, other prefixes and
 * what symlinks point to survive; temporaries of live writers stay, those
 * of writers that died an hour ago go.
 */
static const struct {
	const char *name;
	int seconds; /* how old */
} aged[] = {
	{ "dwarf-old", 300 }, { "dwarf-mid", 200 }, { "dwarf-new", 100 },
	{ "dwarf-keep", 400 }, { "kallsyms-x", 500 },
};

static void test_trim(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX], target[PATH_MAX];

	(void)state;
	tl_pathf(dir, sizeof(dir), "%s/cache", root);
	assert_non_null(dir_for(dir));
	for (size_t i = 0; i < sizeof(aged) / sizeof(aged[0]); i++) {
		tl_pathf(path, sizeof(path), "%s/%s", dir, aged[i].name);
		put(path, "0123456789", 0600);
		age(path, aged[i].seconds);
	}
	tl_pathf(target, sizeof(target), "%s/victim", root);
	put(target, "0123456789", 0600);
	tl_pathf(path, sizeof(path), "%s/dwarf-link", dir);
	assert_int_equal(symlink(target, path), 0);
	tl_pathf(path, sizeof(path), "%s/dwarf-a.tmp.AAAAAA", dir);
	put(path, "partial", 0600);
	tl_pathf(path, sizeof(path), "%s/dwarf-b.tmp.BBBBBB", dir);
	put(path, "partial", 0600);
	age(path, 2 * 3600);

	symcache_trim(dir, "dwarf-", "dwarf-keep", 20);
	assert_false(exists(dir, "dwarf-old"));
	assert_true(exists(dir, "dwarf-mid"));
	assert_true(exists(dir, "dwarf-new"));
	assert_true(exists(dir, "dwarf-keep"));
	assert_true(exists(dir, "kallsyms-x"));
	assert_true(exists(root, "victim"));
	assert_true(exists(dir, "dwarf-a.tmp.AAAAAA"));
	assert_false(exists(dir, "dwarf-b.tmp.BBBBBB"));

	symcache_trim(dir, "dwarf-", NULL, 0);
	assert_false(exists(dir, "dwarf-mid"));
	assert_false(exists(dir, "dwarf-keep"));
	assert_true(exists(dir, "kallsyms-x"));
	assert_true(exists(root, "victim"));
}

TL_MAIN_FIXTURE(setup, teardown, test_dir_ok, test_dir_refused, test_dir_chain, test_open,
	test_create_commit, test_trim)
