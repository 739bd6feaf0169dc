// SPDX-License-Identifier: MIT
/*
 * cgroup/watch on a plain directory tree (inotify works the same on any
 * directory, so no cgroupfs is needed; one case uses the real cgroup2 mount
 * when it can): the tree present at the start is not reported; directories
 * made, removed and renamed are; a subtree made between two reads is
 * reported whole, by the scan of each new directory; files are not
 * directories; hostile names come through as they are; nesting deeper than
 * the watch goes is bounded; a queue overflow says "rescan"; a missing root
 * fails; and failing allocations leave nothing behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/watch.h"
#include "tests/unit/testfix.h"
#include "tests/unit/testalloc.h"
#include "tests/unit/testlib.h"

#define MAX_EVENTS 256

struct events {
	size_t n, overflow, total;
	enum cg_watch_kind kind[MAX_EVENTS];
	char *path[MAX_EVENTS];
};

static void on_event(void *ctx, enum cg_watch_kind kind, const char *path)
{
	struct events *e = ctx;

	e->total++;
	if (kind == CG_WATCH_OVERFLOW) {
		assert_string_equal(path, "/");
		e->overflow++;
		return;
	}
	if (e->n == MAX_EVENTS)
		return;
	e->kind[e->n] = kind;
	e->path[e->n] = strdup(path);
	assert_non_null(e->path[e->n]);
	e->n++;
}

static void events_clear(struct events *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->path[i]);
	memset(e, 0, sizeof(*e));
}

/* Drain @w into @e (cleared first); returns the callbacks counted by read. */
static int drain(struct cg_watch *w, struct events *e)
{
	int ret;

	events_clear(e);
	ret = cg_watch_read(w, on_event, e);
	assert_true(ret >= 0);
	assert_int_equal((size_t)ret, e->total);
	return ret;
}

static bool has(const struct events *e, enum cg_watch_kind kind, const char *path)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->kind[i] == kind && !strcmp(e->path[i], path))
			return true;
	return false;
}

static void in(const char *root, const char *rel, bool make)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	if (make ? mkdir(path, 0755) : rmdir(path))
		fail_msg("%s %s: %s", make ? "mkdir" : "rmdir", path, strerror(errno));
}

static void mv(const char *root, const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];

	snprintf(a, sizeof(a), "%s%s", root, from);
	snprintf(b, sizeof(b), "%s%s", root, to);
	if (rename(a, b))
		fail_msg("rename %s %s: %s", a, b, strerror(errno));
}

static void test_add_remove_rename(void **state)
{
	char *root = tl_tmpdir("test_cgwatch");
	struct events e = { 0 };
	struct cg_watch *w;

	tl_mkdirs(root, "before/inner");
	w = cg_watch_new(root);
	assert_non_null(w);
	assert_true(cg_watch_fd(w) >= 0);
	assert_int_equal(drain(w, &e), 0); /* what was there is not news */

	in(root, "/a", true);
	in(root, "/before/inner/x", true); /* below a directory watched from the start */
	assert_int_equal(drain(w, &e), 2);
	assert_true(has(&e, CG_WATCH_ADDED, "/a"));
	assert_true(has(&e, CG_WATCH_ADDED, "/before/inner/x"));

	/* a whole subtree made between two reads: reported whole */
	tl_mkdirs(root, "a/b/c/d");
	tl_write_file(root, "a/b/file", "not a cgroup");
	assert_int_equal(drain(w, &e), 3);
	assert_true(has(&e, CG_WATCH_ADDED, "/a/b"));
	assert_true(has(&e, CG_WATCH_ADDED, "/a/b/c"));
	assert_true(has(&e, CG_WATCH_ADDED, "/a/b/c/d"));
	/* and watched: below it, news comes */
	in(root, "/a/b/c/d/e", true);
	assert_int_equal(drain(w, &e), 1);
	assert_true(has(&e, CG_WATCH_ADDED, "/a/b/c/d/e"));

	/* files are not cgroups */
	tl_write_file(root, "a/another", "x");
	assert_int_equal(unlink(strcat(strcpy((char[PATH_MAX]){ 0 }, root), "/a/another")), 0);
	assert_int_equal(drain(w, &e), 0);

	/* a rename removes the old name and adds the new one with what lies
	 * below it (new paths); the renamed tree stays watched under its new
	 * name, at every level */
	mv(root, "/a/b", "/moved");
	assert_int_equal(drain(w, &e), 5);
	assert_true(has(&e, CG_WATCH_REMOVED, "/a/b"));
	assert_true(has(&e, CG_WATCH_ADDED, "/moved"));
	assert_true(has(&e, CG_WATCH_ADDED, "/moved/c"));
	assert_true(has(&e, CG_WATCH_ADDED, "/moved/c/d"));
	assert_true(has(&e, CG_WATCH_ADDED, "/moved/c/d/e"));
	in(root, "/moved/new", true);
	in(root, "/moved/c/d/new", true);
	assert_int_equal(drain(w, &e), 2);
	assert_true(has(&e, CG_WATCH_ADDED, "/moved/new"));
	assert_true(has(&e, CG_WATCH_ADDED, "/moved/c/d/new"));
	in(root, "/moved/c/d/new", false);

	/* removals, deepest first as rmdir must */
	in(root, "/moved/new", false);
	in(root, "/moved/c/d/e", false);
	assert_int_equal(drain(w, &e), 3);
	assert_true(has(&e, CG_WATCH_REMOVED, "/moved/c/d/new"));
	assert_true(has(&e, CG_WATCH_REMOVED, "/moved/new"));
	assert_true(has(&e, CG_WATCH_REMOVED, "/moved/c/d/e"));

	/* made and removed many times: still only what happened, in order */
	for (int i = 0; i < 300; i++) {
		in(root, "/flap", true);
		in(root, "/flap", false);
	}
	drain(w, &e);
	assert_true(e.n >= 2 && e.n <= MAX_EVENTS);
	for (size_t i = 0; i < e.n; i++) {
		assert_string_equal(e.path[i], "/flap");
		assert_int_equal(e.kind[i], i % 2 ? CG_WATCH_REMOVED : CG_WATCH_ADDED);
	}
	events_clear(&e);
	cg_watch_free(w);
	cg_watch_free(NULL);
	assert_int_equal(tl_rmtree(root), 0);
}

static void test_hostile_names(void **state)
{
	static const char *const names[] = {
		"/with space", "/quote\"d", "/back\\slash", "/new\nline", "/caf\xc3\xa9",
		"/semi;colon", "/\xff\xfe",
	};
	char *root = tl_tmpdir("test_cgwatch");
	struct events e = { 0 };
	struct cg_watch *w = cg_watch_new(root);

	assert_non_null(w);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		in(root, names[i], true);
	assert_int_equal(drain(w, &e), sizeof(names) / sizeof(names[0]));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_true(has(&e, CG_WATCH_ADDED, names[i]));
	events_clear(&e);
	cg_watch_free(w);
	assert_int_equal(tl_rmtree(root), 0);
}

static void test_deep(void **state)
{
	char *root = tl_tmpdir("test_cgwatch");
	char rel[PATH_MAX] = "";
	struct events e = { 0 };
	struct cg_watch *w = cg_watch_new(root);
	size_t len = 0;

	assert_non_null(w);
	/* 100 levels made at once: the scan stops descending at its bound */
	for (int i = 0; i < 100; i++) {
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "%sd", i ? "/" : "");
	}
	tl_mkdirs(root, rel);
	drain(w, &e);
	assert_true(e.n >= 60 && e.n < 100);
	assert_true(has(&e, CG_WATCH_ADDED, "/d"));
	assert_true(has(&e, CG_WATCH_ADDED, "/d/d/d/d/d/d/d/d/d/d"));
	events_clear(&e);
	cg_watch_free(w);
	assert_int_equal(tl_rmtree(root), 0);
}

static void test_overflow(void **state)
{
	char *root = tl_tmpdir("test_cgwatch");
	char *max = tl_read_file("/proc/sys/fs/inotify/max_queued_events", 64, NULL);
	struct events e = { 0 };
	struct cg_watch *w = cg_watch_new(root);
	long limit = max ? strtol(max, NULL, 10) : 0;

	free(max);
	assert_non_null(w);
	if (limit <= 0 || limit > 100000) {
		cg_watch_free(w);
		tl_rmtree(root);
		print_message("max_queued_events %ld: overflow too costly to provoke\n", limit);
		skip();
	}
	/* a rename queues two events (from, to): more than the queue holds */
	in(root, "/o", true);
	for (long i = 0; i < limit / 2 + 16; i++)
		mv(root, i % 2 ? "/p" : "/o", i % 2 ? "/o" : "/p");
	drain(w, &e);
	assert_int_equal(e.overflow, 1);
	/* after it, news comes again */
	in(root, "/after", true);
	drain(w, &e);
	assert_true(has(&e, CG_WATCH_ADDED, "/after"));
	assert_int_equal(e.overflow, 0);
	events_clear(&e);
	cg_watch_free(w);
	assert_int_equal(tl_rmtree(root), 0);
}

static void test_bad_root(void **state)
{
	char *root = tl_tmpdir("test_cgwatch");
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/missing", root);
	errno = 0;
	assert_null(cg_watch_new(path));
	assert_int_equal(errno, ENOENT);
	tl_write_file(root, "file", "x");
	snprintf(path, sizeof(path), "%s/file", root);
	errno = 0;
	assert_null(cg_watch_new(path));
	assert_int_equal(errno, ENOTDIR);
	assert_int_equal(tl_rmtree(root), 0);
}

/* The real cgroup2 hierarchy: a cgroup made and removed is seen. */
static void test_cgroupfs(void **state)
{
	char *mount = tf_cgroup_mount(false);
	struct events e = { 0 };
	struct cg_watch *w;
	char name[64], path[PATH_MAX];

	snprintf(name, sizeof(name), "/cgperf-test-cgwatch.%d", (int)getpid());
	snprintf(path, sizeof(path), "%s%s", mount, name);
	w = cg_watch_new(mount);
	assert_non_null(w);
	drain(w, &e);
	if (mkdir(path, 0755)) {
		print_message("cannot make %s: %s\n", path, strerror(errno));
		cg_watch_free(w);
		free(mount);
		skip();
	}
	drain(w, &e);
	assert_true(has(&e, CG_WATCH_ADDED, name));
	assert_int_equal(rmdir(path), 0);
	drain(w, &e);
	assert_true(has(&e, CG_WATCH_REMOVED, name));
	events_clear(&e);
	cg_watch_free(w);
	free(mount);
}

static void count_event(void *ctx, enum cg_watch_kind kind, const char *path)
{
	(*(int *)ctx)++;
}

/* One run of the torture loop over @root: a watch, a new directory with a
 * child, the events read (a callback that allocates nothing of its own). */
static void watch_run(void *ctx)
{
	static long n;
	const char *root = ctx;
	struct cg_watch *w = cg_watch_new(root);
	int ret = 0, calls = 0;
	char sub[PATH_MAX];

	n++;
	if (w) {
		tl_pathf(sub, sizeof(sub), "%s/n%ld", root, n);
		if (mkdir(sub, 0755) == 0) {
			tl_pathf(sub, sizeof(sub), "%s/n%ld/m", root, n);
			mkdir(sub, 0755);
		}
		ret = cg_watch_read(w, count_event, &calls);
		if (ret >= 0)
			assert_int_equal(ret, calls);
		else
			assert_int_equal(ret, -ENOMEM);
	} else {
		assert_int_equal(errno, ENOMEM);
	}
	if (!tl_alloc_failed()) {
		assert_non_null(w);
		assert_true(ret >= 2);
	}
	cg_watch_free(w);
	tl_pathf(sub, sizeof(sub), "%s/n%ld/m", root, n);
	rmdir(sub);
	tl_pathf(sub, sizeof(sub), "%s/n%ld", root, n);
	rmdir(sub);
}

static void test_alloc_failures(void **state)
{
	char *root;
	long i;

	tl_alloc_require();
	root = tl_tmpdir("test_cgwatch");
	tl_mkdirs(root, "x/y");
	i = tl_alloc_torture(watch_run, root, 1000);
	print_message("     %ld allocations failed in turn\n", i);
	assert_true(i >= 5);
	assert_int_equal(tl_rmtree(root), 0);
}

TL_MAIN(test_add_remove_rename, test_hostile_names, test_deep, test_overflow, test_bad_root,
	test_cgroupfs, test_alloc_failures)
