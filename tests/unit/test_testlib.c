// SPDX-License-Identifier: MIT
/*
 * tests/unit/testlib: the reader of case tables kept as data
 * (tests/unit/data/NAME.tsv): fields, escapes, NULL, comments, line numbers,
 * numbers, the refusals with their file:line, and a real table found from
 * another working directory without $CGPERF_ROOT.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/testlib.h"

static void test_table_parse(void **state)
{
	static const char text[] = "# in\tout\tn\n"
				   "plain\tx\t0\n"
				   "\n"
				   "tab\\there\t\\N\t18446744073709551615\n"
				   "\\x23 not a comment\t\\\\\\\"\\'\\?\t7\n"
				   "\\a\\b\\f\\n\\r\\v\t\\xffb\\xA\\x7f\t42\n"
				   "\\101\\7\\0101\t\t1"; /* an empty field; no final newline */
	char err[256];
	struct tl_table *t = tl_table_parse(text, "t.tsv", 3, err, sizeof(err));
	const char *const *f;

	if (!t)
		fail_msg("%s", err);
	assert_int_equal(tl_table_rows(t), 5);
	f = tl_table_row(t, 0);
	assert_string_equal(f[0], "plain");
	assert_string_equal(f[1], "x");
	assert_int_equal(tl_table_u64(t, 0, 2), 0);
	assert_string_equal(tl_table_where(t, 0), "t.tsv:2");
	f = tl_table_row(t, 1);
	assert_string_equal(f[0], "tab\there");
	assert_null(f[1]);
	assert_int_equal(tl_table_u64(t, 1, 2), UINT64_MAX);
	assert_string_equal(tl_table_where(t, 1), "t.tsv:4");
	f = tl_table_row(t, 2);
	assert_string_equal(f[0], "# not a comment");
	assert_string_equal(f[1], "\\\"'?");
	f = tl_table_row(t, 3);
	assert_string_equal(f[0], "\a\b\f\n\r\v");
	assert_string_equal(f[1], "\xff" "b\n\x7f"); /* at most two hex digits */
	f = tl_table_row(t, 4);
	assert_string_equal(f[0], "A\a\b" "1"); /* octal: at most three digits */
	assert_string_equal(f[1], "");
	assert_string_equal(tl_table_where(t, 4), "t.tsv:7");
	tl_table_free(t);
	tl_table_free(NULL);
	t = tl_table_parse("0x1A2\t0xffffffffffffffff\t0x0\n", "hex.tsv", 3, err, sizeof(err));
	assert_non_null(t);
	assert_int_equal(tl_table_u64(t, 0, 0), 0x1a2);
	assert_int_equal(tl_table_u64(t, 0, 1), UINT64_MAX);
	assert_int_equal(tl_table_u64(t, 0, 2), 0);
	tl_table_free(t);
}

static void test_table_refused(void **state)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
		{ "a\tb\n", "t.tsv:1: 2 fields, want 3" },
		{ "# a\tb\tc\na\tb\tc\td\n", "t.tsv:2: more than 3 fields" },
		{ "a\tb\\q\tc\n", "t.tsv:1: field 2: cannot decode \"\\q\"" },
		{ "a\tb\tc\\\n", "t.tsv:1: field 3: cannot decode \"\\\"" },
		{ "a\t\\x\tc\n", "t.tsv:1: field 2: cannot decode \"\\x\"" },
		{ "a\t\\0\tc\n", "t.tsv:1: field 2: cannot decode \"\\0\"" },
		{ "a\t\\x00\tc\n", "t.tsv:1: field 2: cannot decode \"\\x00\"" },
		{ "a\t\\400\tc\n", "t.tsv:1: field 2: cannot decode \"\\400\"" },
		{ "", "t.tsv: no case" },
		{ "# only a header\n\n", "t.tsv: no case" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256] = "";
		struct tl_table *t = tl_table_parse(cases[i].text, "t.tsv", 3, err, sizeof(err));

		assert_null(t);
		assert_string_equal(err, cases[i].err);
	}
}

/* A table of the tree from "/" with no $CGPERF_ROOT: found beside the
 * binary (BUILD/tests/..), as when a unit test is run by hand. */
static void test_table_load_anywhere(void **state)
{
	char *cwd = getcwd(NULL, 0), *root = getenv("CGPERF_ROOT");
	struct tl_table *t;

	root = root ? strdup(root) : NULL;
	assert_non_null(cwd);
	unsetenv("CGPERF_ROOT");
	assert_int_equal(chdir("/"), 0);
	t = tl_table_load("fold_sanitize.tsv", 2);
	assert_true(tl_table_rows(t) > 0);
	tl_table_free(t);
	assert_int_equal(chdir(cwd), 0);
	if (root)
		setenv("CGPERF_ROOT", root, 1);
	free(root);
	free(cwd);
}

TL_MAIN(test_table_parse, test_table_refused, test_table_load_anywhere)
