// SPDX-License-Identifier: MIT
/*
 * agent/procmaps: process maps seeded from a fake procfs in a temp dir,
 * exec records, and procmaps_refresh, which re-reads /proc/PID/maps when a
 * sample hits an address the known maps do not cover (an exec read from
 * another CPU's ring after the samples of the new image).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/stacks/procmaps.h"
#include "tests/unit/testlib.h"

#define PID 4242u

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* The shell before its exec, then the program it became. */
static const char sh_maps[] =
	"55d000000000-55d000010000 r--p 00000000 08:01 100 /usr/bin/dash\n"
	"55d000010000-55d000030000 r-xp 00010000 08:01 100 /usr/bin/dash\n"
	"7f0000000000-7f0000100000 r-xp 00028000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n";
static const char prog_maps[] =
	"560000000000-560000001000 r--p 00000000 08:01 300 /opt/prog\n"
	"560000001000-560000005000 r-xp 00001000 08:01 300 /opt/prog\n"
	"7f1000000000-7f1000100000 r-xp 00028000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n";

static int setup(void **state)
{
	char dir[256];

	snprintf(root, sizeof(root), "/tmp/cgperf-procmaps.XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/%u", root, PID);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/%u/task", root, PID);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/%u/task/%u", root, PID, PID);
	assert_int_equal(mkdir(dir, 0755), 0);
	put("4242/maps", sh_maps);
	put("4242/task/4242/comm", "sh\n");
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int teardown(void **state)
{
	nftw(root, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* The executable mapping of PID at @addr is @path at file offset @pgoff. */
static void expect_map(struct procmaps *pm, uint64_t addr, const char *path, uint64_t pgoff)
{
	const struct pmap_entry *m = procmaps_find(pm, PID, addr);

	assert_non_null(m);
	assert_string_equal(m->path, path);
	assert_int_equal(m->pgoff, pgoff);
}

static void test_seed_and_exec_record(void **state)
{
	struct procmaps *pm = procmaps_new(root);
	const struct pmap_entry *m;

	assert_non_null(pm);
	expect_map(pm, 0x55d000012345, "/usr/bin/dash", 0x10000);
	/* Not executable: not kept. */
	assert_null(procmaps_find(pm, PID, 0x55d000000100));
	assert_string_equal(procmaps_comm_of(pm, PID, PID), "sh");

	/* An exec record: the old maps are gone; the new image comes from
	 * /proc (MMAP2 records of another CPU's ring may have been read, and
	 * cleared, before it) and from the MMAP2 records that follow. */
	put("4242/maps", prog_maps);
	procmaps_comm(pm, PID, PID, "prog", true, 0);
	assert_null(procmaps_find(pm, PID, 0x55d000012345));
	m = procmaps_find(pm, PID, 0x7f1000000100);
	assert_non_null(m);
	assert_string_equal(m->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	procmaps_mmap(pm, PID, 0x560000001000, 0x4000, 0x1000, 0x801, 300, true, "/opt/prog");
	expect_map(pm, 0x560000002000, "/opt/prog", 0x1000);
	assert_string_equal(procmaps_comm_of(pm, PID, PID), "prog");
	procmaps_free(pm);
}

static void test_refresh_after_unseen_exec(void **state)
{
	struct procmaps *pm = procmaps_new(root);

	assert_non_null(pm);
	assert_non_null(procmaps_find(pm, PID, 0x55d000012345));
	assert_string_equal(procmaps_comm_of(pm, PID, PID), "sh");

	/* The process execs; its exec record sits in a ring not read yet. */
	put("4242/maps", prog_maps);
	put("4242/task/4242/comm", "prog\n");
	assert_null(procmaps_find(pm, PID, 0x560000002000));
	assert_true(procmaps_refresh(pm, PID, PID));
	expect_map(pm, 0x560000002000, "/opt/prog", 0x1000);
	assert_null(procmaps_find(pm, PID, 0x55d000012345));
	assert_string_equal(procmaps_comm_of(pm, PID, PID), "prog");

	/* At most once a second per process: garbage addresses in broken
	 * frame-pointer chains must not make every sample read /proc. */
	assert_false(procmaps_refresh(pm, PID, PID));

	/* An exited process is not re-read (its /proc entry may be another's). */
	procmaps_exit(pm, PID, PID);
	assert_false(procmaps_refresh(pm, PID, PID));
	/* Unknown pid: nothing to refresh, the next find seeds it anyway. */
	assert_false(procmaps_refresh(pm, 999999, 999999));
	procmaps_free(pm);
}

/*
 * A parent never sampled forks a child that lives a few ms: the parent's
 * maps are read at the fork and the child gets a copy, and its name. A
 * child whose /proc entry is gone and that no FORK explained is unknown.
 */
static void test_fork_of_unseen_parent(void **state)
{
	struct procmaps *pm = procmaps_new(root);
	const struct pmap_entry *m;

	assert_non_null(pm);
	/* The child (pid 5000) has no /proc entry: it exited already. */
	assert_true(procmaps_unknown(pm, 5000));
	procmaps_fork(pm, 5000, PID);
	assert_int_equal(procmaps_fork_seeds(pm), 1);
	assert_false(procmaps_unknown(pm, 5000));
	m = procmaps_find(pm, 5000, 0x55d000010100ull);
	assert_non_null(m);
	assert_string_equal(m->path, "/usr/bin/dash");
	assert_int_equal(m->tag, -1);
	assert_string_equal(procmaps_comm_of(pm, 5000, 5000), "sh");
	/* A second child of the same parent costs no read. */
	procmaps_fork(pm, 5001, PID);
	assert_int_equal(procmaps_fork_seeds(pm), 1);
	assert_non_null(procmaps_find(pm, 5001, 0x7f0000000100ull));
	/* A new thread is no new process. */
	procmaps_fork(pm, PID, PID);
	assert_int_equal(procmaps_fork_seeds(pm), 1);
	/* The child's exit and the parent's later mmaps leave the copy alone. */
	procmaps_mmap(pm, PID, 0x7f2000000000ull, 0x1000, 0, 0x801, 400, true, "/opt/lib.so");
	assert_null(procmaps_find(pm, 5000, 0x7f2000000000ull));
	procmaps_exit(pm, 5000, 5000);
	assert_non_null(procmaps_find(pm, 5000, 0x55d000010100ull));
	procmaps_free(pm);
}

/* A refresh that finds the process gone keeps what was known. */
static void test_refresh_of_vanished_process(void **state)
{
	struct procmaps *pm = procmaps_new(root);
	char path[256];

	assert_non_null(pm);
	assert_non_null(procmaps_find(pm, PID, 0x55d000010100ull));
	snprintf(path, sizeof(path), "%s/%u/maps", root, PID);
	assert_int_equal(unlink(path), 0);
	assert_false(procmaps_refresh(pm, PID, PID));
	assert_non_null(procmaps_find(pm, PID, 0x55d000010100ull));
	assert_false(procmaps_unknown(pm, PID));
	procmaps_free(pm);
}

/*
 * A child (pid 5002, exited already) that renamed itself: its COMM record,
 * in the CPU ring read first, comes before the FORK in its parent's ring.
 * It still gets its parent's maps, and keeps its own name.
 */
static void test_fork_read_after_child_rename(void **state)
{
	struct procmaps *pm = procmaps_new(root);

	assert_non_null(pm);
	assert_true(procmaps_unknown(pm, 5002)); /* its first sample */
	procmaps_comm(pm, 5002, 5002, "storm-child", false, 200);
	procmaps_fork(pm, 5002, PID);
	assert_false(procmaps_unknown(pm, 5002));
	assert_non_null(procmaps_find(pm, 5002, 0x55d000010100ull));
	assert_string_equal(procmaps_comm_of(pm, 5002, 5002), "storm-child");
	procmaps_free(pm);
}

/*
 * Two execs in a row (sh, then the program), their COMM records in two CPU
 * rings read newest first: the older one changes neither name nor maps.
 */
static void test_execs_read_out_of_order(void **state)
{
	struct procmaps *pm = procmaps_new(root);

	assert_non_null(pm);
	put("4242/maps", prog_maps);
	assert_true(procmaps_comm(pm, PID, PID, "prog", true, 2000));
	expect_map(pm, 0x560000002000, "/opt/prog", 0x1000);
	assert_false(procmaps_comm(pm, PID, PID, "sh", true, 1000));
	assert_string_equal(procmaps_comm_of(pm, PID, PID), "prog");
	expect_map(pm, 0x560000002000, "/opt/prog", 0x1000);
	/* a later rename applies; so does one whose time is unknown */
	assert_true(procmaps_comm(pm, PID, PID, "worker", false, 3000));
	assert_string_equal(procmaps_comm_of(pm, PID, PID), "worker");
	assert_true(procmaps_comm(pm, PID, PID, "w2", false, 0));
	assert_string_equal(procmaps_comm_of(pm, PID, PID), "w2");
	procmaps_free(pm);
}

TL_MAIN_FIXTURE(setup, teardown, test_seed_and_exec_record, test_refresh_after_unseen_exec,
	test_fork_of_unseen_parent, test_refresh_of_vanished_process,
	test_fork_read_after_child_rename, test_execs_read_out_of_order)
