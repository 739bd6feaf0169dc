// SPDX-License-Identifier: MIT
/*
 * agent/rootfs: a temporary directory plays a container's root and holds
 * what a hostile container would put at the paths the agent opens: a
 * FIFO, links to absolute host paths, links climbing out with "../..",
 * links into /proc/self, a 2 GB sparse file, a directory, link loops.
 * Each must give its error without blocking (an alarm fails the test if
 * anything waits) and without reaching a file outside the root. Every
 * resolution case runs twice: with openat2(2) and with the user-space walk
 * kernels before 5.6 use.
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
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/symbols/refusals.h"
#include "lib/rootfs.h"
#include "lib/slurp.h"
#include "tests/unit/testlib.h"

#define SECRET "SECRETSTRING-rootfs-test"
#define VALID "7f0000000000 100 jit_function\n"

static char root[64];   /* the "container" */
static char outside[64]; /* a host directory beside it, with a secret */
static char secret[128];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	f = fopen(p, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_in(const char *rel, const char *target)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	assert_int_equal(symlink(target, p), 0);
}

static void on_alarm(int sig)
{
	(void)sig;
	/* something blocked: fail loudly rather than hang the suite */
	(void)!write(2, "test_rootfs: blocked\n", 21);
	_exit(99);
}

static int setup(void **state)
{
	char p[PATH_MAX], up[PATH_MAX];
	int fd;

	(void)state;
	signal(SIGALRM, on_alarm);
	alarm(20);
	snprintf(root, sizeof(root), "/tmp/cgperf-rootfs.XXXXXX");
	snprintf(outside, sizeof(outside), "/tmp/cgperf-rootfs-host.XXXXXX");
	assert_non_null(mkdtemp(root));
	assert_non_null(mkdtemp(outside));
	snprintf(secret, sizeof(secret), "%s/secret", outside);
	fd = open(secret, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_true(write(fd, "7f0000000000 100 " SECRET "\n", 18 + strlen(SECRET)) > 0);
	close(fd);

	snprintf(p, sizeof(p), "%s/tmp", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/tmp/dir", root);
	assert_int_equal(mkdir(p, 0755), 0);
	put("/tmp/valid.map", VALID);
	put("/inner", "inside the root\n");
	snprintf(p, sizeof(p), "%s/tmp/fifo", root);
	assert_int_equal(mkfifo(p, 0600), 0);
	/* 2 GB of nothing */
	snprintf(p, sizeof(p), "%s/tmp/sparse", root);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 2ll << 30), 0);
	close(fd);

	link_in("/tmp/abs", secret);            /* the host's file, by absolute path */
	link_in("/tmp/abs_inner", "/inner");    /* absolute, but inside: fine */
	snprintf(up, sizeof(up), "../../../../../../..%s", secret);
	link_in("/tmp/up", up);                 /* climbing out */
	link_in("/tmp/self_environ", "/proc/self/environ");
	link_in("/tmp/self_maps", "/proc/self/maps");
	link_in("/tmp/rel", "../tmp/./valid.map");
	link_in("/tmp/loop1", "loop2");
	link_in("/tmp/loop2", "loop1");
	link_in("/tmp/to_fifo", "/tmp/fifo");
	link_in("/tmp/to_dir", "dir");
	link_in("/tmpl", "/tmp");               /* a linked directory on the way */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	rootfs_force_walk(false);
	rootfs_set_refusal_hook(NULL, NULL);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	nftw(outside, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* Open @path in the root; its content when it opens, else the -errno. */
static int open_in(const char *path, uint64_t cap, char *content, size_t size)
{
	char *buf = NULL;
	size_t len = 0;
	int fd = rootfs_open(root, path, cap, NULL);

	if (fd < 0)
		return fd;
	assert_int_equal(slurp_fd(fd, size - 1, &buf, &len, NULL), 0);
	close(fd);
	memcpy(content, buf, len + 1);
	free(buf);
	return 0;
}

static int n_refused;
static enum rootfs_reason last_why;
static char last_path[PATH_MAX];

static void record_refusal(void *ctx, pid_t pid, const char *path, enum rootfs_reason why, int err)
{
	(void)ctx;
	(void)err;
	assert_int_equal(pid, 0); /* the root is a plain directory */
	n_refused++;
	last_why = why;
	snprintf(last_path, sizeof(last_path), "%s", path);
}

static void resolution_cases(void)
{
	static const struct {
		const char *path;
		int err;
		const char *content; /* when err == 0 */
		int why;             /* the refusal reported, -1 for none */
	} cases[] = {
		{ "/tmp/valid.map", 0, VALID, -1 },
		{ "tmp/valid.map", 0, VALID, -1 },
		{ "/../../../tmp/valid.map", 0, VALID, -1 }, /* ".." stops at the root */
		{ "/tmp/rel", 0, VALID, -1 },
		{ "/tmpl/valid.map", 0, VALID, -1 },
		{ "/tmp/abs_inner", 0, "inside the root\n", -1 },
		{ "/tmp/fifo", -EINVAL, NULL, ROOTFS_R_SPECIAL },
		{ "/tmp/to_fifo", -EINVAL, NULL, ROOTFS_R_SPECIAL },
		{ "/tmp/dir", -EISDIR, NULL, ROOTFS_R_OTHER },
		{ "/tmp/to_dir", -EISDIR, NULL, ROOTFS_R_OTHER },
		/* resolved inside: no such file, a link leading out */
		{ "/tmp/abs", -ENOENT, NULL, ROOTFS_R_LINK },
		{ "/tmp/up", -ENOENT, NULL, ROOTFS_R_LINK },
		{ "/tmpl/abs", -ENOENT, NULL, ROOTFS_R_LINK },
		{ "/tmp/self_environ", -ENOENT, NULL, ROOTFS_R_LINK }, /* the root has no /proc */
		{ "/tmp/self_maps", -ENOENT, NULL, ROOTFS_R_LINK },
		{ "/tmp/loop1", -ELOOP, NULL, ROOTFS_R_LINK },
		{ "/tmp/missing", -ENOENT, NULL, -1 }, /* missing is not refused */
		{ "/tmpl/missing", -ENOENT, NULL, -1 }, /* even through a link */
		{ "/tmp/valid.map/x", -ENOTDIR, NULL, -1 },
		{ "/tmp/sparse", -EFBIG, NULL, ROOTFS_R_BIG }, /* over the 64 MiB cap below */
	};
	char content[256];

	rootfs_set_refusal_hook(record_refusal, NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err;

		content[0] = '\0';
		n_refused = 0;
		err = open_in(cases[i].path, 64u << 20, content, sizeof(content));

		if (err != cases[i].err)
			fail_msg("%s: %d, want %d", cases[i].path, err, cases[i].err);
		if (n_refused != (cases[i].why >= 0) ||
		    (n_refused && ((int)last_why != cases[i].why || strcmp(last_path, cases[i].path))))
			fail_msg("%s: %d refusals (%s, %s), want %s", cases[i].path, n_refused,
				 n_refused ? rootfs_reason_name(last_why) : "-", last_path,
				 cases[i].why >= 0 ? rootfs_reason_name((enum rootfs_reason)cases[i].why) : "none");
		if (!err)
			assert_string_equal(content, cases[i].content);
		else
			assert_null(strstr(content, SECRET));
	}
}

static void test_resolve_openat2(void **state)
{
	(void)state;
	rootfs_force_walk(false);
	resolution_cases();
}

static void test_resolve_walk(void **state)
{
	(void)state;
	rootfs_force_walk(true);
	resolution_cases();
}

/* The host's own pseudo files and devices, whoever links to them. */
static void test_host_refusals(void **state)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, rootfd;

	(void)state;
	assert_int_equal(rootfs_open("", "/proc/self/environ", ROOTFS_NO_CAP, NULL), -EPERM);
	assert_int_equal(rootfs_open("/", "/proc/self/maps", ROOTFS_NO_CAP, NULL), -EPERM);
	assert_int_equal(rootfs_open("", "/dev/null", ROOTFS_NO_CAP, NULL), -EINVAL);
	assert_int_equal(rootfs_open("", "/tmp", ROOTFS_NO_CAP, NULL), -EISDIR);
	if (access("/sys/kernel/mm", F_OK) == 0) {
		fd = rootfs_open("", "/sys/kernel/mm/transparent_hugepage/enabled", ROOTFS_NO_CAP, NULL);
		assert_true(fd == -EPERM || fd == -ENOENT);
	}
	/* a magic link on the way is refused by openat2 */
	snprintf(path, sizeof(path), "%s/tmp/valid.map", root);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	assert_int_equal(rootfs_openat(rootfd, path, ROOTFS_NO_CAP, NULL), -ELOOP);
	close(rootfd);
	close(fd);
	/* the sparse file opens without a cap, and its stat says 2 GB */
	snprintf(path, sizeof(path), "%s/tmp/sparse", root);
	fd = rootfs_open("", path, ROOTFS_NO_CAP, &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_size, 2ll << 30);
	close(fd);
}

static void test_split(void **state)
{
	static const struct {
		const char *path;
		int pid;
		const char *rest; /* NULL: not a /proc/PID/root path */
	} cases[] = {
		{ "/proc/1/root", 1, "/" },
		{ "/proc/1/root/", 1, "/" },
		{ "/proc/42/root/tmp/perf-1.map", 42, "/tmp/perf-1.map" },
		{ "/proc/42/rootx/tmp", 0, NULL },
		{ "/proc/self/root/tmp", 0, NULL },
		{ "/proc/0/root/tmp", 0, NULL },
		{ "/proc/99999999999/root/tmp", 0, NULL },
		{ "/proc/12/cwd/x", 0, NULL },
		{ "/usr/lib/x", 0, NULL },
		{ "proc/1/root/x", 0, NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t pid = 0;
		const char *rest = NULL;
		int ok = rootfs_split(cases[i].path, &pid, &rest);

		if (ok != (cases[i].rest != NULL))
			fail_msg("%s: %d", cases[i].path, ok);
		if (ok) {
			assert_int_equal(pid, cases[i].pid);
			assert_string_equal(rest, cases[i].rest);
		}
	}
}

static void test_open_path(void **state)
{
	char path[PATH_MAX];
	int fd;

	(void)state;
	/* our own root is the host's: the same file either way */
	snprintf(path, sizeof(path), "/proc/%d/root%s/tmp/valid.map", (int)getpid(), root);
	fd = rootfs_open_path(path, ROOTFS_NO_CAP, NULL);
	assert_true(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "/proc/%d/root%s/tmp/fifo", (int)getpid(), root);
	assert_int_equal(rootfs_open_path(path, ROOTFS_NO_CAP, NULL), -EINVAL);
	/* no such process (pid_max is at most 4M) */
	assert_int_equal(rootfs_open_path("/proc/2147483646/root/tmp/x", ROOTFS_NO_CAP, NULL),
			 -ESRCH);
	/* a plain host path */
	snprintf(path, sizeof(path), "%s/tmp/valid.map", root);
	fd = rootfs_open_path(path, ROOTFS_NO_CAP, NULL);
	assert_true(fd >= 0);
	close(fd);
}

static int n_notices;
static char notice_path[PATH_MAX];
static pid_t notice_pid;

static void on_notice(void *ctx, pid_t pid, const char *path, const char *reason)
{
	(void)ctx;
	(void)reason;
	n_notices++;
	notice_pid = pid;
	snprintf(notice_path, sizeof(notice_path), "%s", path);
}

/* agent/refusals: counted once per (pid, path, reason), one notice each,
 * rate-limited; host paths are not container files. */
static void test_refusals(void **state)
{
	char path[PATH_MAX], esc[64];
	struct refusals_figures f;
	int fd;

	(void)state;
	n_notices = 0;
	assert_int_equal(refusals_start(on_notice, NULL), 0);
	snprintf(path, sizeof(path), "/proc/%d/root%s/tmp/fifo", (int)getpid(), root);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rootfs_open_path(path, ROOTFS_NO_CAP, NULL), -EINVAL);
	assert_int_equal(n_notices, 1);
	assert_int_equal(notice_pid, getpid());
	assert_string_equal(notice_path, strstr(path, "/root/") + 5);
	/* (our root is the host's: a link to a host path would resolve) */
	snprintf(path, sizeof(path), "/proc/%d/root%s/tmp/loop1", (int)getpid(), root);
	assert_int_equal(rootfs_open_path(path, ROOTFS_NO_CAP, NULL), -ELOOP);
	assert_int_equal(rootfs_open_path("/proc/2147483646/root/tmp/x", ROOTFS_NO_CAP, NULL), -ESRCH);
	/* not counted: a missing file, a host path */
	snprintf(path, sizeof(path), "/proc/%d/root%s/tmp/missing", (int)getpid(), root);
	assert_int_equal(rootfs_open_path(path, ROOTFS_NO_CAP, NULL), -ENOENT);
	assert_int_equal(rootfs_open("", "/proc/self/environ", ROOTFS_NO_CAP, NULL), -EPERM);
	snprintf(path, sizeof(path), "%s/tmp/valid.map", root);
	fd = rootfs_open("", path, ROOTFS_NO_CAP, NULL);
	assert_true(fd >= 0);
	close(fd);
	refusals_figures(&f);
	assert_int_equal(f.by_reason[ROOTFS_R_SPECIAL], 1);
	assert_int_equal(f.by_reason[ROOTFS_R_LINK], 1);
	assert_int_equal(f.by_reason[ROOTFS_R_GONE], 1);
	assert_int_equal(f.total, 3);
	/* a flood of distinct refusals: counted, notices capped */
	n_notices = 0;
	for (int i = 0; i < 4 * REFUSALS_BURST; i++) {
		snprintf(path, sizeof(path), "/proc/2147483646/root/tmp/x%d", i);
		rootfs_open_path(path, ROOTFS_NO_CAP, NULL);
	}
	refusals_figures(&f);
	assert_int_equal(f.total, 3 + 4 * REFUSALS_BURST);
	assert_true(n_notices <= 2 * REFUSALS_BURST);
	assert_int_equal((uint64_t)n_notices + f.notices_dropped, 4 * REFUSALS_BURST);
	refusals_stop();
	assert_int_equal(rootfs_open_path("/proc/2147483646/root/tmp/y", ROOTFS_NO_CAP, NULL), -ESRCH);
	refusals_figures(&f);
	assert_int_equal(f.total, 3 + 4 * REFUSALS_BURST); /* the hook is gone */

	/* paths are hostile: no control byte, no escape sequence gets out */
	refusals_escape("/tmp/a\x1b[31m\nb\\c\xc3\xa9", esc, sizeof(esc));
	assert_string_equal(esc, "/tmp/a\\x1b[31m\\x0ab\\\\c\\xc3\\xa9");
	refusals_escape("/0123456789abcdef", esc, 12);
	assert_string_equal(esc, "/0123456...");
	refusals_escape("\x01\x02\x03", esc, 9);
	assert_string_equal(esc, "\\x01...");
}

static void test_read_capped(void **state)
{
	char path[PATH_MAX], *buf;
	size_t len;
	bool trunc;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/tmp/valid.map", root);
	fd = rootfs_open("", path, ROOTFS_NO_CAP, NULL);
	assert_true(fd >= 0);
	assert_int_equal(slurp_fd(fd, 10, &buf, &len, &trunc), 0);
	assert_int_equal(len, 10);
	assert_true(trunc);
	assert_int_equal(buf[10], '\0');
	free(buf);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(slurp_fd(fd, 1000, &buf, &len, &trunc), 0);
	assert_int_equal(len, strlen(VALID));
	assert_false(trunc);
	free(buf);
	close(fd);
	/* 2 GB of zeros, 1 MiB read: bounded memory */
	snprintf(path, sizeof(path), "%s/tmp/sparse", root);
	fd = rootfs_open("", path, ROOTFS_NO_CAP, NULL);
	assert_true(fd >= 0);
	assert_int_equal(slurp_fd(fd, 1u << 20, &buf, &len, &trunc), 0);
	assert_int_equal(len, 1u << 20);
	assert_true(trunc);
	free(buf);
	close(fd);
}

static struct rootfs_lines *lines_of(const char *text, size_t max_line, uint64_t max_bytes)
{
	char path[PATH_MAX];
	int fd;

	put("/tmp/lines", text);
	snprintf(path, sizeof(path), "%s/tmp/lines", root);
	fd = rootfs_open("", path, ROOTFS_NO_CAP, NULL);
	assert_true(fd >= 0);
	return rootfs_lines_new(fd, max_line, max_bytes);
}

static void test_lines(void **state)
{
	struct rootfs_lines *lr;
	const char *line;
	size_t len;
	char *big;
	char path[PATH_MAX];
	int fd, n;

	(void)state;
	lr = lines_of("one\n\ntwo\nthree", 16, ROOTFS_NO_CAP);
	assert_non_null(lr);
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 1);
	assert_string_equal(line, "one");
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 1);
	assert_int_equal(len, 0);
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 1);
	assert_string_equal(line, "two");
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 1);
	assert_string_equal(line, "three");
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 0);
	assert_false(rootfs_lines_capped(lr));
	rootfs_lines_free(lr);

	/* over-long lines, short and huge, are skipped whole */
	big = malloc(300001);
	assert_non_null(big);
	memset(big, 'x', 300000);
	big[300000] = '\0';
	{
		size_t n1 = strlen(big) + 64;
		char *text = malloc(n1);

		assert_non_null(text);
		snprintf(text, n1, "a\n0123456789abcdefXYZ\nb\n%s\nc\n%s", big, big);
		lr = lines_of(text, 16, ROOTFS_NO_CAP);
		free(text);
	}
	free(big);
	assert_non_null(lr);
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 1);
	assert_string_equal(line, "a");
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 1);
	assert_string_equal(line, "b");
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 1);
	assert_string_equal(line, "c");
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 0);
	assert_int_equal(rootfs_lines_skipped(lr), 3);
	rootfs_lines_free(lr);

	/* the byte cap: the line it cuts is not returned */
	lr = lines_of("aaaa\nbbbb\ncccc\n", 16, 7);
	assert_non_null(lr);
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 1);
	assert_string_equal(line, "aaaa");
	assert_int_equal(rootfs_lines_next(lr, &line, &len), 0);
	assert_true(rootfs_lines_capped(lr));
	rootfs_lines_free(lr);

	/* 2 GB of zeros with a 4 MiB cap: no line, stops at the cap */
	snprintf(path, sizeof(path), "%s/tmp/sparse", root);
	fd = rootfs_open("", path, ROOTFS_NO_CAP, NULL);
	assert_true(fd >= 0);
	lr = rootfs_lines_new(fd, 4096, 4u << 20);
	assert_non_null(lr);
	n = rootfs_lines_next(lr, &line, &len);
	assert_int_equal(n, 0);
	assert_true(rootfs_lines_capped(lr));
	assert_int_equal(rootfs_lines_skipped(lr), 1);
	rootfs_lines_free(lr);
}

int main(void)
{
	int failed = 0;

	failed += tl_run(TL_TESTS(test_resolve_openat2, test_resolve_walk, test_host_refusals, test_open_path,
		test_refusals, test_read_capped, test_lines),
		NULL, NULL, setup, teardown);
	failed += tl_run(TL_TESTS(test_split),
		NULL, NULL, NULL, NULL);
	return failed;
}
