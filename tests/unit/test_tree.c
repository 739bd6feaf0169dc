// SPDX-License-Identifier: MIT
/*
 * cgroup/tree: cg_path_normalize() on the cases of
 * tests/unit/data/tree_normalize.tsv; cg_tree_scan() over a fake
 * hierarchy built in a temp dir (order, depths, process counts, ids, what is
 * not a cgroup, the depth cap); cg_path_id(); and a scan of the host's real
 * cgroup2 hierarchy.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/tree.h"
#include "tests/unit/testfix.h"
#include "tests/unit/testlib.h"

#define MNT "/sys/fs/cgroup/unified"

static void test_normalize(void **state)
{
	struct tl_table *t = tl_table_load("tree_normalize.tsv", 3);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *const *c = tl_table_row(t, i);
		char *got = cg_path_normalize(c[0], c[1]);

		if (!got)
			fail_msg("%s: (\"%s\", \"%s\"): NULL", tl_table_where(t, i),
				 c[0] ? c[0] : "(null)", c[1]);
		if (strcmp(got, c[2]))
			fail_msg("%s: (\"%s\", \"%s\"): \"%s\", want \"%s\"", tl_table_where(t, i),
				 c[0] ? c[0] : "(null)", c[1], got, c[2]);
		free(got);
	}
	tl_table_free(t);
	errno = 0;
	assert_null(cg_path_normalize(MNT, NULL));
	assert_int_equal(errno, EINVAL);
}

static uint64_t fake_ino(const struct tl_fake *f, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	tl_pathf(path, sizeof(path), "%s/%s", f->root, rel);
	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_ino;
}

/*
 * Created out of order on purpose. "a-b" sorts before "a/b" as a whole
 * path ('-' < '/') but after the subtree of "a" in pre-order.
 */
static int fake_setup(void **state)
{
	struct tl_fake *f = tl_fake_new("test_tree", sizeof(*f));

	tl_mkdirs(f->root, "c");
	tl_mkdirs(f->root, "a-b");
	tl_mkdirs(f->root, "a");
	tl_mkdirs(f->root, "a/b");
	tl_mkdirs(f->root, "system.slice");
	tl_mkdirs(f->root, "system.slice/nginx.service");
	tl_write_file(f->root, "cgroup.procs", "1\n2\n3\n");
	tl_write_file(f->root, "cgroup.controllers", "cpu memory pids\n");
	tl_write_file(f->root, "a/cgroup.procs", "");
	tl_write_file(f->root, "a/b/cgroup.procs", "100\n101\n");
	/* "c" has no cgroup.procs at all */
	tl_write_file(f->root, "a-b/cgroup.procs", "7\n");
	tl_write_file(f->root, "system.slice/nginx.service/cgroup.procs", "4242\n4243\n4244\n4245\n");
	/* Not cgroups: a hidden directory and a symlink to a directory. */
	tl_mkdirs(f->root, ".hidden");
	tl_symlink(f->root, "link", "a");
	*state = f;
	return 0;
}

static void test_scan_fake(void **state)
{
	static const struct {
		const char *path, *rel; /* rel: under the fake root, for stat() */
		int depth;
		long nprocs;
	} want[] = {
		{ "/", ".", 0, 3 },
		{ "/a", "a", 1, 0 },
		{ "/a/b", "a/b", 2, 2 },
		{ "/a-b", "a-b", 1, 1 },
		{ "/c", "c", 1, -1 },
		{ "/system.slice", "system.slice", 1, -1 },
		{ "/system.slice/nginx.service", "system.slice/nginx.service", 2, 4 },
	};
	struct tl_fake *f = *state;
	struct cg_tree *t = cg_tree_scan(f->root);
	const struct cg_node *n;

	assert_non_null(t);
	assert_int_equal(cg_tree_count(t), sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		n = cg_tree_get(t, i);
		assert_non_null(n);
		if (strcmp(n->path, want[i].path))
			fail_msg("node %zu is \"%s\", want \"%s\"", i, n->path, want[i].path);
		if (n->depth != want[i].depth || n->nprocs != want[i].nprocs)
			fail_msg("%s: depth %d nprocs %ld, want depth %d nprocs %ld", n->path,
				 n->depth, n->nprocs, want[i].depth, want[i].nprocs);
		assert_int_equal(n->id, fake_ino(f, want[i].rel));
		assert_ptr_equal(cg_tree_find(t, want[i].path), n);
	}
	assert_null(cg_tree_get(t, sizeof(want) / sizeof(want[0])));

	/* The identity comes from the path. */
	n = cg_tree_find(t, "/system.slice/nginx.service");
	assert_non_null(n);
	assert_string_equal(n->ident.unit, "nginx.service");
	assert_string_equal(n->ident.slice, "system.slice");
	assert_string_equal(cg_tree_find(t, "/")->ident.unit, "");

	/* Lookup is exact: stored form only. */
	assert_null(cg_tree_find(t, "/a/b/"));
	assert_null(cg_tree_find(t, "a/b"));
	assert_null(cg_tree_find(t, "//a/b"));
	assert_null(cg_tree_find(t, "/link"));
	assert_null(cg_tree_find(t, "/.hidden"));
	assert_null(cg_tree_find(t, "/cgroup.procs"));
	assert_null(cg_tree_find(t, ""));
	cg_tree_free(t);

	/* Scanning from a subtree: paths are relative to where the scan starts. */
	{
		char sub[PATH_MAX];

		tl_pathf(sub, sizeof(sub), "%s/%s", f->root, "a");
		t = cg_tree_scan(sub);
		assert_non_null(t);
		assert_int_equal(cg_tree_count(t), 2);
		assert_string_equal(cg_tree_get(t, 0)->path, "/");
		assert_string_equal(cg_tree_get(t, 1)->path, "/b");
		assert_int_equal(cg_tree_get(t, 1)->depth, 1);
		assert_int_equal(cg_tree_get(t, 1)->id, fake_ino(f, "a/b"));
		cg_tree_free(t);
	}
}

/* A hierarchy deeper than CG_TREE_MAX_DEPTH is cut there, not failed. */
static void test_scan_depth_cap(void **state)
{
	struct tl_fake *f = *state;
	char rel[PATH_MAX] = "deep";
	struct cg_tree *t;
	size_t len = strlen(rel);
	int deepest = -1;

	tl_mkdirs(f->root, rel);
	for (int d = 2; d <= CG_TREE_MAX_DEPTH + 6; d++) {
		assert_true(len + 3 < sizeof(rel));
		memcpy(rel + len, "/d", 3);
		len += 2;
		tl_mkdirs(f->root, rel);
	}
	t = cg_tree_scan(f->root);
	assert_non_null(t);
	for (size_t i = 0; i < cg_tree_count(t); i++) {
		const struct cg_node *n = cg_tree_get(t, i);

		if (!strncmp(n->path, "/deep", 5) && n->depth > deepest)
			deepest = n->depth;
	}
	assert_int_equal(deepest, CG_TREE_MAX_DEPTH);
	/* 7 nodes from the fixture, then /deep at depth 1 down to depth 64 */
	assert_int_equal(cg_tree_count(t), 7 + CG_TREE_MAX_DEPTH);
	cg_tree_free(t);
}

static void test_scan_errors(void **state)
{
	struct tl_fake *f = *state;
	char path[PATH_MAX];

	tl_pathf(path, sizeof(path), "%s/%s", f->root, "no-such-dir");
	errno = 0;
	assert_null(cg_tree_scan(path));
	assert_int_equal(errno, ENOENT);

	tl_pathf(path, sizeof(path), "%s/%s", f->root, "cgroup.procs");
	errno = 0;
	assert_null(cg_tree_scan(path));
	assert_int_equal(errno, ENOTDIR);

	assert_int_equal(cg_tree_count(NULL), 0);
	assert_null(cg_tree_get(NULL, 0));
	assert_null(cg_tree_find(NULL, "/"));
	cg_tree_free(NULL);
}

static void test_path_id(void **state)
{
	struct tl_fake *f = *state;
	uint64_t id = 0;

	assert_int_equal(cg_path_id(f->root, "/a/b", &id), 0);
	assert_int_equal(id, fake_ino(f, "a/b"));
	/* "" is the root, as the callers pass it */
	assert_int_equal(cg_path_id(f->root, "", &id), 0);
	assert_int_equal(id, fake_ino(f, "."));
	assert_int_equal(cg_path_id(f->root, "/system.slice/nginx.service", &id), 0);
	assert_int_equal(id, fake_ino(f, "system.slice/nginx.service"));

	/* Failures leave the out-parameter alone. */
	id = 12345;
	assert_int_equal(cg_path_id(f->root, "/nope", &id), -ENOENT);
	assert_int_equal(cg_path_id(f->root, "/cgroup.procs", &id), -ENOTDIR);
	assert_int_equal(cg_path_id(f->root, "/c/cgroup.procs", &id), -ENOENT);
	assert_int_equal(id, 12345);
}

/* The host's own unified hierarchy: the root's id is the mount's inode,
 * and every node is findable and a real directory with that inode. */
static void test_scan_real(void **state)
{
	char *mount = tf_cgroup_mount(false);
	struct cg_tree *t;
	struct stat st;
	uint64_t id;

	t = cg_tree_scan(mount);
	assert_non_null(t);
	assert_true(cg_tree_count(t) >= 1);
	assert_string_equal(cg_tree_get(t, 0)->path, "/");
	assert_int_equal(cg_tree_get(t, 0)->depth, 0);
	assert_int_equal(stat(mount, &st), 0);
	assert_int_equal(cg_tree_get(t, 0)->id, (uint64_t)st.st_ino);
	/* Readable cgroup.procs everywhere on a real hierarchy (we are root). */
	assert_true(cg_tree_get(t, 0)->nprocs >= 0);
	assert_int_equal(cg_path_id(mount, "", &id), 0);
	assert_int_equal(id, (uint64_t)st.st_ino);
	for (size_t i = 1; i < cg_tree_count(t); i++) {
		const struct cg_node *n = cg_tree_get(t, i), *prev = cg_tree_get(t, i - 1);

		assert_int_equal(n->path[0], '/');
		assert_true(n->depth >= 1 && n->depth <= prev->depth + 1);
		assert_ptr_equal(cg_tree_find(t, n->path), n);
	}
	cg_tree_free(t);
	free(mount);
}

int main(void)
{
	int failed = 0;

	failed += tl_run(TL_TESTS(test_normalize, test_scan_real),
		NULL, NULL, NULL, NULL);
	failed += tl_run(TL_TESTS(test_scan_fake, test_scan_depth_cap, test_scan_errors, test_path_id),
		NULL, NULL, fake_setup, tl_fake_teardown);
	return failed;
}
