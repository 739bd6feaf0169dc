// SPDX-License-Identifier: MIT
/*
 * cgroup/mount: cg_mounts_parse() over mountinfo texts as hybrid, pure v2
 * and pure v1 hosts write them (and as nothing writes them: short lines,
 * missing separators, escapes), which hierarchy cg_mounts_perf() picks, and
 * cg_mounts_read() against a file and the real /proc/self/mountinfo.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cgroup/mount.h"
#include "tests/unit/testlib.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* Debian 11/12 with systemd.unified_cgroup_hierarchy=0: v1 controllers,
 * cpu and cpuacct co-mounted, v2 at /sys/fs/cgroup/unified, no perf_event. */
#define HYBRID_HEAD                                                                              \
	"21 26 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"           \
	"26 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro\n"             \
	"25 21 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs "              \
	"ro,size=4096k,nr_inodes=1024,mode=755\n"                                                  \
	"27 25 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - "        \
	"cgroup2 cgroup2 rw,nsdelegate\n"                                                          \
	"28 25 0:24 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - "        \
	"cgroup cgroup rw,xattr,name=systemd\n"                                                    \
	"31 25 0:27 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:12 - "         \
	"cgroup cgroup rw,cpuset\n"                                                                \
	"32 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - "    \
	"cgroup cgroup rw,cpu,cpuacct\n"                                                           \
	"33 25 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - "         \
	"cgroup cgroup rw,memory\n"                                                                \
	"34 25 0:30 / /sys/fs/cgroup/net_cls,net_prio rw,nosuid,nodev,noexec,relatime "           \
	"shared:15 - cgroup cgroup rw,net_cls,net_prio\n"

#define PERF_V1_LINE                                                                             \
	"35 25 0:31 / /sys/fs/cgroup/perf_event rw,nosuid,nodev,noexec,relatime shared:16 - "     \
	"cgroup cgroup rw,perf_event\n"

static const char hybrid[] = HYBRID_HEAD "42 26 0:13 / /sys/kernel/tracing rw,relatime - "
				      "tracefs none rw\n";

static const char hybrid_perf[] = HYBRID_HEAD PERF_V1_LINE;

/* Debian 12 default: the unified hierarchy alone, at /sys/fs/cgroup. */
static const char pure_v2[] =
	"22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
	"28 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro\n"
	"26 21 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
	"rw,nsdelegate,memory_recursiveprot\n"
	"27 21 0:25 / /sys/fs/pstore rw,nosuid,nodev,noexec,relatime shared:5 - pstore pstore rw\n";

/* CentOS 7 style: v1 only, perf_event in its own hierarchy. */
static const char pure_v1[] =
	"18 61 0:18 / /sys rw,nosuid,nodev,noexec,relatime shared:6 - sysfs sysfs rw\n"
	"23 18 0:19 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:7 - tmpfs tmpfs ro,mode=755\n"
	"24 23 0:20 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:8 - cgroup "
	"cgroup rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd\n"
	"27 23 0:23 / /sys/fs/cgroup/perf_event rw,nosuid,nodev,noexec,relatime shared:9 - "
	"cgroup cgroup rw,perf_event\n"
	"28 23 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:10 - "
	"cgroup cgroup rw,cpuacct,cpu\n";

/* Inside a container: cgroup namespaces give a non-"/" root; no
 * propagation fields at all; and a master: field next to shared:. */
static const char container[] =
	"600 550 0:51 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/l,upperdir=/u\n"
	"610 600 0:55 /docker/0123abcd /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - "
	"cgroup2 cgroup rw\n"
	"611 600 0:56 /docker/0123abcd /sys/fs/cgroup/perf_event rw,relatime shared:1 master:2 - "
	"cgroup cgroup rw,perf_event\n";

static const char none[] =
	"26 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro\n"
	"22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
	"21 26 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n";

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static const char escapes[] =
	"40 25 0:40 / /mnt/my\\040cgroup rw,relatime shared:20 - cgroup2 cgroup2 rw\n"
	"41 25 0:41 /a\\011b /mnt/tab\\011and\\012nl\\134 rw - cgroup cgroup rw,pids\n"
	"42 25 0:42 / /mnt/trail\\040 rw - cgroup cgroup rw,freezer\n"
	/* not escapes: a digit past 7, a first digit past 3, a cut sequence */
	"43 25 0:43 / /mnt/x\\08y\\400\\04 rw - cgroup cgroup rw,devices\n";

/* Lines nothing sane writes: all must be ignored, the good one kept. */
static const char malformed[] =
	"garbage\n"
	"1 2 3\n"
	"\n"
	"   \n"
	/* no separator */
	"36 25 0:31 / /sys/fs/cgroup/pids rw,relatime shared:1 cgroup cgroup rw,pids\n"
	/* separator with nothing, or only a type, after it */
	"37 25 0:32 / /sys/fs/cgroup/a rw,relatime -\n"
	"38 25 0:33 / /sys/fs/cgroup/b rw,relatime - cgroup2\n"
	/* too few fields before the separator: the '-' is taken as options */
	"39 25 0:34 / - cgroup2 cgroup2 rw\n"
	"40 25 0:35 / /sys/fs/cgroup/unified rw,relatime shared:3 - cgroup2 cgroup2 rw\n"
	/* no super options: a v1 mount naming no controllers */
	"41 25 0:36 / /sys/fs/cgroup/bare rw,relatime - cgroup cgroup\n"
	/* last line without a newline */
	"42 25 0:37 / /sys/fs/cgroup/perf_event rw - cgroup cgroup rw,perf_event";

struct want_mount {
	const char *path, *root;
	int version;
	const char *controllers; /* NULL for v2 */
};

#define MAX_WANT 8

struct mount_case {
	const char *name;
	const char *text;
	size_t count;
	struct want_mount m[MAX_WANT]; /* the first min(count, MAX_WANT) mounts, in order */
	const char *v2;                /* path of cg_mounts_v2(), NULL for none */
	const char *perf;              /* path of cg_mounts_perf(), NULL for none */
	int perf_version;
};

static const struct mount_case cases[] = {
	{ "hybrid", hybrid, 6,
	  { { "/sys/fs/cgroup/unified", "/", 2, NULL },
	    { "/sys/fs/cgroup/systemd", "/", 1, "rw,xattr,name=systemd" },
	    { "/sys/fs/cgroup/cpuset", "/", 1, "rw,cpuset" },
	    { "/sys/fs/cgroup/cpu,cpuacct", "/", 1, "rw,cpu,cpuacct" },
	    { "/sys/fs/cgroup/memory", "/", 1, "rw,memory" },
	    { "/sys/fs/cgroup/net_cls,net_prio", "/", 1, "rw,net_cls,net_prio" } },
	  "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified", 2 },
	{ "hybrid with v1 perf_event", hybrid_perf, 7,
	  { [6] = { "/sys/fs/cgroup/perf_event", "/", 1, "rw,perf_event" } },
	  "/sys/fs/cgroup/unified", "/sys/fs/cgroup/perf_event", 1 },
	{ "pure v2", pure_v2, 1,
	  { { "/sys/fs/cgroup", "/", 2, NULL } },
	  "/sys/fs/cgroup", "/sys/fs/cgroup", 2 },
	{ "pure v1", pure_v1, 3,
	  { { "/sys/fs/cgroup/systemd", "/", 1,
	      "rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd" },
	    { "/sys/fs/cgroup/perf_event", "/", 1, "rw,perf_event" },
	    { "/sys/fs/cgroup/cpu,cpuacct", "/", 1, "rw,cpuacct,cpu" } },
	  NULL, "/sys/fs/cgroup/perf_event", 1 },
	{ "container", container, 2,
	  { { "/sys/fs/cgroup", "/docker/0123abcd", 2, NULL },
	    { "/sys/fs/cgroup/perf_event", "/docker/0123abcd", 1, "rw,perf_event" } },
	  "/sys/fs/cgroup", "/sys/fs/cgroup/perf_event", 1 },
	{ "no cgroup at all", none, 0, { { 0 } }, NULL, NULL, 0 },
	{ "escapes", escapes, 4,
	  { { "/mnt/my cgroup", "/", 2, NULL },
	    { "/mnt/tab\tand\nnl\\", "/a\tb", 1, "rw,pids" },
	    { "/mnt/trail ", "/", 1, "rw,freezer" },
	    { "/mnt/x\\08y\\400\\04", "/", 1, "rw,devices" } },
	  "/mnt/my cgroup", "/mnt/my cgroup", 2 },
	{ "malformed lines", malformed, 3,
	  { { "/sys/fs/cgroup/unified", "/", 2, NULL },
	    { "/sys/fs/cgroup/bare", "/", 1, "" },
	    { "/sys/fs/cgroup/perf_event", "/", 1, "rw,perf_event" } },
	  "/sys/fs/cgroup/unified", "/sys/fs/cgroup/perf_event", 1 },
	{ "empty", "", 0, { { 0 } }, NULL, NULL, 0 },
	{ "newlines only", "\n\n\n", 0, { { 0 } }, NULL, NULL, 0 },
};

static void check_case(const struct mount_case *c)
{
	struct cg_mounts *m = cg_mounts_parse(c->text);
	const struct cg_mount *got;

	if (!m)
		fail_msg("%s: parse failed: %s", c->name, strerror(errno));
	if (cg_mounts_count(m) != c->count)
		fail_msg("%s: %zu mounts, want %zu", c->name, cg_mounts_count(m), c->count);
	for (size_t i = 0; i < c->count && i < MAX_WANT; i++) {
		const struct want_mount *w = &c->m[i];

		got = cg_mounts_get(m, i);
		assert_non_null(got);
		if (!w->path) /* not checked by this case */
			continue;
		if (strcmp(got->path, w->path) || strcmp(got->root, w->root) ||
		    got->version != w->version)
			fail_msg("%s: mount %zu is v%d \"%s\" root \"%s\", want v%d \"%s\" root \"%s\"",
				 c->name, i, got->version, got->path, got->root, w->version,
				 w->path, w->root);
		if (!w->controllers)
			assert_null(got->controllers);
		else if (!got->controllers || strcmp(got->controllers, w->controllers))
			fail_msg("%s: mount %zu controllers \"%s\", want \"%s\"", c->name, i,
				 got->controllers ? got->controllers : "(null)", w->controllers);
	}
	assert_null(cg_mounts_get(m, c->count));

	got = cg_mounts_v2(m);
	if (!c->v2 != !got || (got && strcmp(got->path, c->v2)))
		fail_msg("%s: v2 mount \"%s\", want \"%s\"", c->name, got ? got->path : "(none)",
			 c->v2 ? c->v2 : "(none)");
	got = cg_mounts_perf(m);
	if (!c->perf != !got || (got && (strcmp(got->path, c->perf) || got->version != c->perf_version)))
		fail_msg("%s: perf mount \"%s\", want v%d \"%s\"", c->name,
			 got ? got->path : "(none)", c->perf_version, c->perf ? c->perf : "(none)");
	cg_mounts_free(m);
}

static void test_parse_table(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(&cases[i]);
}

/* Controllers match whole comma-separated words, in any position. */
static void test_v1_controller_lookup(void **state)
{
	static const struct {
		const char *text, *controller, *path; /* path NULL: no such mount */
	} lookups[] = {
		{ hybrid, "cpu", "/sys/fs/cgroup/cpu,cpuacct" },
		{ hybrid, "cpuacct", "/sys/fs/cgroup/cpu,cpuacct" },
		{ hybrid, "cpuset", "/sys/fs/cgroup/cpuset" },
		{ hybrid, "net_prio", "/sys/fs/cgroup/net_cls,net_prio" },
		{ hybrid, "name=systemd", "/sys/fs/cgroup/systemd" },
		{ hybrid, "perf_event", NULL },
		{ hybrid, "cpu,cpuacct", NULL },
		{ hybrid, "cp", NULL },
		{ hybrid, "", NULL },
		{ pure_v1, "cpu", "/sys/fs/cgroup/cpu,cpuacct" },
		{ pure_v1, "perf_event", "/sys/fs/cgroup/perf_event" },
		/* v2 mounts never answer a v1 lookup */
		{ pure_v2, "memory", NULL },
		{ pure_v2, "perf_event", NULL },
	};

	for (size_t i = 0; i < sizeof(lookups) / sizeof(lookups[0]); i++) {
		struct cg_mounts *m = cg_mounts_parse(lookups[i].text);
		const struct cg_mount *got;

		assert_non_null(m);
		got = cg_mounts_v1(m, lookups[i].controller);
		if (!lookups[i].path != !got || (got && strcmp(got->path, lookups[i].path)))
			fail_msg("v1 \"%s\": got \"%s\", want \"%s\"", lookups[i].controller,
				 got ? got->path : "(none)",
				 lookups[i].path ? lookups[i].path : "(none)");
		cg_mounts_free(m);
	}
}

static void test_null_handles(void **state)
{
	errno = 0;
	assert_null(cg_mounts_parse(NULL));
	assert_int_equal(errno, EINVAL);

	assert_int_equal(cg_mounts_count(NULL), 0);
	assert_null(cg_mounts_get(NULL, 0));
	assert_null(cg_mounts_v2(NULL));
	assert_null(cg_mounts_v1(NULL, "cpu"));
	assert_null(cg_mounts_perf(NULL));
	cg_mounts_free(NULL);
}

/* A file gives what its text gives; a missing one fails with ENOENT. */
static void test_read_file(void **state)
{
	char path[] = "/tmp/test_mount.XXXXXX";
	int fd = mkstemp(path);
	struct cg_mounts *m;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, hybrid_perf, strlen(hybrid_perf)), (ssize_t)strlen(hybrid_perf));
	assert_int_equal(close(fd), 0);
	m = cg_mounts_read(path);
	assert_non_null(m);
	assert_int_equal(cg_mounts_count(m), 7);
	assert_string_equal(cg_mounts_perf(m)->path, "/sys/fs/cgroup/perf_event");
	cg_mounts_free(m);

	/* An empty file is a host without cgroups, not an error. */
	assert_int_equal(truncate(path, 0), 0);
	m = cg_mounts_read(path);
	assert_non_null(m);
	assert_int_equal(cg_mounts_count(m), 0);
	assert_null(cg_mounts_perf(m));
	cg_mounts_free(m);

	assert_int_equal(unlink(path), 0);
	errno = 0;
	assert_null(cg_mounts_read(path));
	assert_int_equal(errno, ENOENT);
}

static bool is_cgroup2(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

static void test_read_self(void **state)
{
	struct cg_mounts *m = cg_mounts_read("/proc/self/mountinfo");
	const struct cg_mount *v2, *perf;

	assert_non_null(m);
	v2 = cg_mounts_v2(m);
	if (!v2) {
		bool host_has_v2 = is_cgroup2("/sys/fs/cgroup") || is_cgroup2("/sys/fs/cgroup/unified");

		cg_mounts_free(m);
		if (host_has_v2)
			fail_msg("cgroup2 is mounted but /proc/self/mountinfo gave no v2 mount");
		print_message("host has no cgroup2 mount\n");
		skip();
	}
	/* What the parser found is what the kernel says is there. */
	if (!is_cgroup2(v2->path))
		fail_msg("\"%s\" is not a cgroup2 filesystem", v2->path);
	assert_non_null(v2->root);
	assert_int_equal(v2->root[0], '/');
	perf = cg_mounts_perf(m);
	assert_non_null(perf);
	if (perf->version == 2)
		assert_ptr_equal(perf, v2);
	else
		assert_non_null(cg_mounts_v1(m, "perf_event"));
	cg_mounts_free(m);
}

TL_MAIN(test_parse_table, test_v1_controller_lookup, test_null_handles, test_read_file,
	test_read_self)
