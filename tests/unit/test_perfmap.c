// SPDX-License-Identifier: MIT
/*
 * agent/symbols/perfmap: JIT maps ("START SIZE NAME" lines, hex) as a
 * container's process writes them. Table-driven: well-formed and malformed
 * lines (what is kept, what is skipped), lookups at the edges of entries,
 * nested entries, unsorted input; the file rules (a FIFO or a directory is
 * refused, a missing map is ENOENT, a pipe read by fd); the path of a
 * process's map from a fake procfs (NSpid of the innermost namespace).
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

#include "agent/symbols/perfmap.h"
#include "tests/unit/testlib.h"

/* ---- lines ---- */

struct line_case {
	const char *text; /* one or more lines */
	size_t count;     /* entries kept */
};

static const struct line_case lines[] = {
	{ "1000 10 one\n", 1 },
	{ "1000 10 name with spaces\n", 1 },
	{ "1000 10 last line without newline", 1 },
	{ "0x1000 10 prefixed\n", 1 },		/* strtoull takes 0x in base 16 */
	{ "1000 0 empty\n", 0 },		/* size 0 */
	{ "zz 10 nothex\n", 0 },
	{ "1000\n", 0 },			/* no size */
	{ "1000 10\n", 0 },			/* no space before a name */
	{ "1000\t10 tab\n", 0 },		/* fields are one space apart */
	{ "ffffffffffffffff 2 wraps\n", 0 },	/* start + size overflows */
	{ "1000 10 a\n\n2000 10 b\n", 2 },	/* blank line skipped */
	{ "1000 10 a\ngarbage\n2000 10 b\n", 2 },
	{ "", 0 },
};

static struct perfmap *load_text(const char *dir, const char *text)
{
	char path[PATH_MAX];
	struct perfmap *m;

	tl_write_file(dir, "perf-1.map", text);
	tl_pathf(path, sizeof(path), "%s/perf-1.map", dir);
	m = perfmap_load(path);
	assert_non_null(m);
	return m;
}

static void test_lines(void **state)
{
	char *dir = tl_tmpdir("cgperf-perfmap");

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct perfmap *m = load_text(dir, lines[i].text);

		if (perfmap_count(m) != lines[i].count)
			fail_msg("case %zu (%s): %zu entries, want %zu", i, lines[i].text,
				 perfmap_count(m), lines[i].count);
		perfmap_free(m);
	}
	tl_rmtree(dir);
}

/* ---- lookups ---- */

struct lookup_case {
	uint64_t addr;
	const char *want; /* NULL: no entry covers it */
};

/* Unsorted on purpose; "outer" holds "inner" (as a JIT may re-emit code). */
static const char lookup_map[] = "3000 100 third\n"
				 "1000 100 first\n"
				 "2000 1000 outer\n"
				 "2100 10 inner\n"
				 "1100 20 adjacent\n";

static const struct lookup_case lookups[] = {
	{ 0xfff, NULL },
	{ 0x1000, "first" },
	{ 0x10ff, "first" },
	{ 0x1100, "adjacent" }, /* an end is exclusive: the next entry's start */
	{ 0x111f, "adjacent" },
	{ 0x1120, NULL },
	{ 0x2000, "outer" },
	{ 0x2105, "inner" },
	{ 0x2110, "outer" }, /* past the nested one: the enclosing entry again */
	{ 0x2fff, "outer" },
	{ 0x3000, "third" },
	{ 0x30ff, "third" },
	{ 0x3100, NULL },
	{ UINT64_MAX, NULL },
};

static void test_lookup(void **state)
{
	char *dir = tl_tmpdir("cgperf-perfmap");
	struct perfmap *m = load_text(dir, lookup_map);

	(void)state;
	assert_int_equal(perfmap_count(m), 5);
	for (size_t i = 0; i < sizeof(lookups) / sizeof(lookups[0]); i++) {
		const char *got = perfmap_lookup(m, lookups[i].addr);

		if (lookups[i].want ? !got || strcmp(got, lookups[i].want) : got != NULL)
			fail_msg("%#llx: got %s, want %s", (unsigned long long)lookups[i].addr,
				 got ? got : "(none)", lookups[i].want ? lookups[i].want : "(none)");
	}
	perfmap_free(m);
	tl_rmtree(dir);
}

/* A line over PERFMAP_MAX_LINE is skipped whole; the lines around it count. */
static void test_long_line(void **state)
{
	size_t n = PERFMAP_MAX_LINE + 100;
	char *text = malloc(n + 64);
	char *dir = tl_tmpdir("cgperf-perfmap");
	struct perfmap *m;
	int at;

	(void)state;
	assert_non_null(text);
	at = snprintf(text, 64, "1000 10 before\n4000 10 ");
	memset(text + at, 'x', n);
	snprintf(text + at + n, 64, "\n5000 10 after\n");
	m = load_text(dir, text);
	assert_int_equal(perfmap_count(m), 2);
	assert_string_equal(perfmap_lookup(m, 0x1000), "before");
	assert_null(perfmap_lookup(m, 0x4000));
	assert_string_equal(perfmap_lookup(m, 0x5000), "after");
	perfmap_free(m);
	free(text);
	tl_rmtree(dir);
}

/* ---- the file ---- */

/* @dir/@name is not loaded (errno @err, 0: any) nor present. */
static void expect_refused(const char *dir, const char *name, int err)
{
	char path[PATH_MAX];

	tl_pathf(path, sizeof(path), "%s/%s", dir, name);
	errno = 0;
	assert_null(perfmap_load(path));
	if (err)
		assert_int_equal(errno, err);
	assert_false(perfmap_present(path));
}

static void test_files(void **state)
{
	char *dir = tl_tmpdir("cgperf-perfmap");
	char path[PATH_MAX];
	struct perfmap *m;
	int p[2];

	(void)state;
	expect_refused(dir, "missing.map", ENOENT);
	/* a FIFO would block a reader until someone writes: refused unopened */
	tl_pathf(path, sizeof(path), "%s/fifo.map", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_refused(dir, "fifo.map", EINVAL);
	tl_pathf(path, sizeof(path), "%s/sub.map", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	expect_refused(dir, "sub.map", 0);

	tl_write_file(dir, "ok.map", "1000 10 f\n");
	tl_pathf(path, sizeof(path), "%s/ok.map", dir);
	assert_true(perfmap_present(path));

	/* by fd: a pipe, closed by the call */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "a000 20 piped\n", 14), 14);
	close(p[1]);
	m = perfmap_load_fd(p[0]);
	assert_non_null(m);
	assert_string_equal(perfmap_lookup(m, 0xa010), "piped");
	perfmap_free(m);
	assert_int_equal(fcntl(p[0], F_GETFD), -1);
	tl_rmtree(dir);
}

/* ---- the path of a process's map ---- */

struct path_case {
	const char *status; /* NULL: no status file */
	const char *want;   /* after "PROCFS/42/root/tmp/"; NULL: an error */
};

static const struct path_case paths[] = {
	{ "Name:\tx\nNSpid:\t42\n", "perf-42.map" },
	{ "Name:\tx\nNSpid:\t42\t7\n", "perf-7.map" },	/* innermost namespace */
	{ "Name:\tx\nNSpid:\t42\t7\t1\n", "perf-1.map" },
	{ "Name:\tx\n", "perf-42.map" },		/* old kernel: no NSpid */
	{ "NSpid:\tjunk\n", "perf-42.map" },
	{ NULL, NULL },
};

static void test_path(void **state)
{
	char buf[PATH_MAX], want[PATH_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char *dir = tl_tmpdir("cgperf-perfmap");
		int err;

		if (paths[i].status)
			tl_write_file(dir, "42/status", paths[i].status);
		err = perfmap_path(dir, 42, buf, sizeof(buf));
		if (!paths[i].want) {
			assert_int_equal(err, -ENOENT);
		} else {
			assert_int_equal(err, 0);
			tl_pathf(want, sizeof(want), "%s/42/root/tmp/%s", dir, paths[i].want);
			assert_string_equal(buf, want);
			/* a buffer one byte short is an error, not a cut path */
			assert_int_equal(perfmap_path(dir, 42, buf, strlen(want)), -ENAMETOOLONG);
		}
		tl_rmtree(dir);
	}
}

static void test_null(void **state)
{
	(void)state;
	perfmap_free(NULL);
	assert_null(perfmap_lookup(NULL, 0x1000));
	assert_int_equal(perfmap_count(NULL), 0);
}

TL_MAIN(test_lines, test_lookup, test_long_line, test_files, test_path, test_null)
