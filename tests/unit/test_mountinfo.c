// SPDX-License-Identifier: MIT
/*
 * lib/mountinfo: one line per case, what a mount line gives (root and
 * mount point decoded, optional fields skipped, super options optional)
 * and which lines are not mount lines; the walk over a text stops where
 * the callback says.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mountinfo.h"
#include "tests/unit/testlib.h"

static const struct {
	const char *line;
	int ret;
	const char *root, *point, *fstype, *source, *super;
} cases[] = {
	{"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue", 0,
	 "/mnt1", "/mnt2", "ext3", "/dev/root", "rw,errors=continue"},
	{"22 1 0:21 / / rw - ext4 /dev/vda1 rw", 0, "/", "/", "ext4", "/dev/vda1", "rw"},
	/* several optional fields, runs of spaces */
	{"30  22 0:25 / /proc rw shared:7 master:3 propagate_from:2 -  proc proc rw", 0, "/",
	 "/proc", "proc", "proc", "rw"},
	/* no super options */
	{"41 25 0:36 / /sys/fs/cgroup/bare rw - cgroup cgroup", 0, "/", "/sys/fs/cgroup/bare",
	 "cgroup", "cgroup", ""},
	/* escapes decoded in root and point, not elsewhere */
	{"41 25 0:41 /a\\011b /mnt/tab\\011and\\012nl\\134 rw - fuse.x\\040y src rw", 0, "/a\tb",
	 "/mnt/tab\tand\nnl\\", "fuse.x\\040y", "src", "rw"},
	/* not escapes: a digit past 7, a first digit past 3, a cut sequence */
	{"43 25 0:43 / /mnt/x\\08y\\400\\04 rw - cgroup cgroup rw", 0, "/", "/mnt/x\\08y\\400\\04",
	 "cgroup", "cgroup", "rw"},
	/* not mount lines */
	{"", -EINVAL, NULL, NULL, NULL, NULL, NULL},
	{"   ", -EINVAL, NULL, NULL, NULL, NULL, NULL},
	{"garbage", -EINVAL, NULL, NULL, NULL, NULL, NULL},
	{"1 2 3", -EINVAL, NULL, NULL, NULL, NULL, NULL},
	{"36 25 0:31 / /sys/fs/cgroup/pids rw,relatime shared:1 cgroup cgroup rw", -EINVAL, NULL, NULL, NULL, NULL, NULL},
	{"37 25 0:32 / /sys/fs/cgroup/a rw,relatime -", -EINVAL, NULL, NULL, NULL, NULL, NULL},
	{"38 25 0:33 / /sys/fs/cgroup/b rw,relatime - cgroup2", -EINVAL, NULL, NULL, NULL, NULL, NULL},
	{"39 25 0:34 / - cgroup2 cgroup2 rw", -EINVAL, NULL, NULL, NULL, NULL, NULL}, /* the '-' is the options field */
	{"40 25 0:35 / /x rw,relatime -x cgroup2 cgroup2 rw", -EINVAL, NULL, NULL, NULL, NULL, NULL},
};

static void test_lines(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *line = strdup(cases[i].line);
		struct mountinfo_entry e = {0};
		int r;

		assert_non_null(line);
		r = mountinfo_parse_line(line, &e);
		if (r != cases[i].ret)
			fail_msg("'%s': %d, want %d", cases[i].line, r, cases[i].ret);
		if (!r) {
			assert_string_equal(e.root, cases[i].root);
			assert_string_equal(e.point, cases[i].point);
			assert_int_equal(e.point_len, strlen(cases[i].point));
			assert_string_equal(e.fstype, cases[i].fstype);
			assert_string_equal(e.source, cases[i].source);
			assert_string_equal(e.super, cases[i].super);
		} else {
			assert_null(e.point);
		}
		free(line);
	}
}

struct seen {
	int n, stop_at;
	char points[4][32];
};

static int collect(void *ctx, const struct mountinfo_entry *e)
{
	struct seen *s = ctx;

	if (s->n < 4)
		strncpy(s->points[s->n], e->point, sizeof(s->points[0]) - 1);
	return ++s->n == s->stop_at ? 42 : 0;
}

static void test_foreach(void **state)
{
	char text[] = "1 0 0:1 / / rw - ext4 a rw\n"
		      "garbage\n"
		      "\n"
		      "2 1 0:2 / /b\\040c rw - tmpfs t rw\n"
		      "3 1 0:3 / /last rw - proc p";
	char again[sizeof(text)];
	struct seen s = {0};

	(void)state;
	memcpy(again, text, sizeof(text));
	assert_int_equal(mountinfo_foreach(text, collect, &s), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.points[0], "/");
	assert_string_equal(s.points[1], "/b c");
	assert_string_equal(s.points[2], "/last");
	/* a non-zero return stops the walk and comes back */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(mountinfo_foreach(again, collect, &s), 42);
	assert_int_equal(s.n, 2);
	memset(&s, 0, sizeof(s));
	assert_int_equal(mountinfo_foreach((char[]){""}, collect, &s), 0);
	assert_int_equal(s.n, 0);
}

TL_MAIN(test_lines, test_foreach)
