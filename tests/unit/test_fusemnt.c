// SPDX-License-Identifier: MIT
/*
 * lib/fusemnt: which mountinfo lines are FUSE mounts, which paths lie
 * under them (component by component, escapes undone), a table read in
 * part covering everything, and the per-namespace cache reading the
 * agent's own mountinfo once. Prints the cost of a classification.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/fusemnt.h"
#include "lib/rootfs.h"
#include "tests/unit/testlib.h"

static const char MOUNTINFO[] =
	"22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
	"30 22 0:25 / /proc rw,nosuid - proc proc rw\n"
	"40 22 0:40 / /tmp/stall rw,nosuid,nodev,relatime - fuse.stallfs stallfs rw,user_id=0\n"
	"41 22 0:41 / /mnt/my\\040dir rw shared:7 master:3 - fuse sshfs#x rw\n"
	"42 22 0:42 / /media/usb rw - fuseblk /dev/sdb1 rw\n"
	"43 40 0:43 / /tmp/stall/sub rw - tmpfs tmpfs rw\n"
	"44 22 0:44 / /fusefake rw - fusectl fusectl rw\n"
	"45 22 0:45 / /opt/trail/ rw - fuse.x x rw\n"
	"garbage line\n"
	"46 22 0:46 / relative rw - fuse.y y rw\n";

static void test_covers(void **state)
{
	static const struct {
		const char *path;
		bool covered;
	} cases[] = {
		{"/tmp/stall", true},         {"/tmp/stall/map", true},
		{"/tmp/stall/sub/x", true},   /* a FUSE ancestor: the walk asks it */
		{"/tmp/stallx", false},       {"/tmp", false},
		{"/mnt/my dir/f", true},      {"/mnt/my\\040dir/f", false},
		{"/media/usb/a/b", true},     {"/fusefake/x", false}, /* fusectl is not fuse */
		{"/opt/trail/lib.so", true},  {"/opt/trail", true},
		{"/usr/bin/python3", false},  {"/", false},
		{"relative/path", true},      /* unknown: at risk */
	};
	struct fusemnt_table *t = fusemnt_table_parse(MOUNTINFO);

	(void)state;
	assert_non_null(t);
	assert_int_equal(fusemnt_table_count(t), 4);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (fusemnt_table_covers(t, cases[i].path) != cases[i].covered)
			fail_msg("%s: covered should be %d", cases[i].path, cases[i].covered);
	}
	fusemnt_table_free(t);

	/* a FUSE root (rootless fuse-overlayfs) covers every path */
	t = fusemnt_table_parse("1 0 0:50 / / rw - fuse.fuse-overlayfs fuse-overlayfs rw\n");
	assert_non_null(t);
	assert_true(fusemnt_table_covers(t, "/usr/lib/libc.so.6"));
	fusemnt_table_free(t);
	/* no FUSE: nothing, not even a relative path */
	t = fusemnt_table_parse("22 1 0:21 / / rw - ext4 /dev/vda1 rw\n");
	assert_non_null(t);
	assert_int_equal(fusemnt_table_count(t), 0);
	assert_false(fusemnt_table_covers(t, "/x"));
	assert_false(fusemnt_table_covers(t, "x"));
	fusemnt_table_free(t);
	assert_false(fusemnt_table_covers(NULL, "/x"));
	fusemnt_table_free(NULL);
}

/* A table read from an fd, and one whose line is over the limit: "all". */
static void test_read(void **state)
{
	char path[] = "/tmp/fusemnt-XXXXXX";
	int fd = mkstemp(path);
	char *line;
	struct fusemnt_table *t;

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, MOUNTINFO, sizeof(MOUNTINFO) - 1), (ssize_t)sizeof(MOUNTINFO) - 1);
	lseek(fd, 0, SEEK_SET);
	t = fusemnt_table_read(fd);
	assert_non_null(t);
	assert_int_equal(fusemnt_table_count(t), 4);
	assert_false(fusemnt_table_covers(t, "/usr/lib/x"));
	fusemnt_table_free(t);
	line = malloc(FUSEMNT_MAX_LINE + 100);
	assert_non_null(line);
	memset(line, 'a', FUSEMNT_MAX_LINE + 99);
	line[FUSEMNT_MAX_LINE + 99] = '\n';
	assert_int_equal(write(fd, line, FUSEMNT_MAX_LINE + 100), FUSEMNT_MAX_LINE + 100);
	free(line);
	lseek(fd, 0, SEEK_SET);
	t = fusemnt_table_read(fd);
	assert_non_null(t);
	assert_true(fusemnt_table_covers(t, "/usr/lib/x")); /* read in part */
	fusemnt_table_free(t);
	close(fd);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The agent's own namespace: read once, then cached; its cost per call. */
static void test_cache(void **state)
{
	enum { N = 20000 };
	int first, cls;
	double t0, t1;

	(void)state;
	fusemnt_cache_reset();
	first = fusemnt_classify(0, "/usr/bin/true");
	assert_true(first >= 0);
	assert_int_equal(fusemnt_tables_read(), 1);
	t0 = now_ns();
	for (int i = 0; i < N; i++) {
		cls = fusemnt_classify(0, "/usr/bin/true");
		assert_int_equal(cls, first);
	}
	t1 = now_ns();
	/* the TTL may have passed on a loaded host: at most one more read */
	assert_true(fusemnt_tables_read() <= 2);
	assert_int_equal(fusemnt_classify(getpid(), "/usr/bin/true"), first); /* same namespace */
	assert_int_equal(fusemnt_classify(2147483646, "/x"), -ESRCH);
	printf("# fusemnt_classify: %.0f ns per call (cached, %s), mountinfo reads %llu\n",
	       (t1 - t0) / N, first == FUSEMNT_NONE ? "no FUSE here" : "FUSE mounts here",
	       (unsigned long long)fusemnt_tables_read());
	fusemnt_cache_reset();
}

static int never_slow(pid_t pid, const char *path, uint64_t max_size, struct stat *st)
{
	(void)pid;
	(void)max_size;
	(void)st;
	fail_msg("%s routed to the slow opener on a host without FUSE", path);
	return -EIO;
}

static double open_cost(const char *path)
{
	enum { N = 5000 };
	double t0 = now_ns();

	for (int i = 0; i < N; i++) {
		int fd = rootfs_open_path(path, ROOTFS_ELF_MAX, NULL);

		assert_true(fd >= 0);
		close(fd);
	}
	return (now_ns() - t0) / N;
}

/* The common case: an open through /proc/PID/root with the router on. */
static void test_open_cost(void **state)
{
	char path[64];
	double plain, routed, plain2;

	(void)state;
	if (fusemnt_classify(0, "/") != FUSEMNT_NONE)
		skip(); /* this host has FUSE mounts: not the common case */
	snprintf(path, sizeof(path), "/proc/%d/root/usr/bin/true", (int)getpid());
	plain = open_cost(path);
	rootfs_set_slow_opener(never_slow);
	routed = open_cost(path);
	rootfs_set_slow_opener(NULL);
	plain2 = open_cost(path);
	printf("# rootfs_open_path of a binary: %.1f us plain, %.1f us with the FUSE router "
	       "(%.1f us plain again; noisy on a shared host)\n",
	       plain / 1e3, routed / 1e3, plain2 / 1e3);
}

TL_MAIN(test_covers, test_read, test_cache, test_open_cost)
