// SPDX-License-Identifier: MIT
/*
 * lib/suggest: the edit distance, the one-best pick of config keys and enum
 * values, the score of a long scan's candidates and the ranked few kept.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/suggest.h"
#include "tests/unit/testlib.h"

static void test_distance(void **state)
{
	struct tl_table *t = tl_table_load("suggest_distance.tsv", 3);
	char long_a[257], long_b[256];

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *a = tl_table_row(t, i)[0], *b = tl_table_row(t, i)[1];
		size_t d = tl_table_u64(t, i, 2);
		size_t ab = suggest_distance(a, b), ba = suggest_distance(b, a);

		if (ab != d || ba != d)
			fail_msg("%s: (\"%s\", \"%s\"): %zu/%zu, want %zu", tl_table_where(t, i), a, b,
				 ab, ba, d);
	}
	tl_table_free(t);
	/* 255 bytes is still measured; 256 is "far". */
	memset(long_b, 'x', 255);
	long_b[255] = '\0';
	assert_int_equal(suggest_distance(long_b, ""), 255);
	assert_int_equal(suggest_distance(long_b, long_b), 0);
	memset(long_a, 'x', 256);
	long_a[256] = '\0';
	assert_true(suggest_distance(long_a, long_b) > 255);
	assert_true(suggest_distance("", long_a) > 255);
}

static void test_best(void **state)
{
	static const char *const keys[] = { "frequency", "verify", "stacks", "demangle", NULL };
	static const char *const levels[] = { "debug", "info", "warn", "error" };

	assert_int_equal(suggest_limit(5), 1);
	assert_int_equal(suggest_limit(6), 2);
	assert_int_equal(suggest_limit(10), 3);
	assert_string_equal(suggest_best("frequncy", keys, SIZE_MAX, suggest_limit(8)),
			    "frequency");
	assert_string_equal(suggest_best("stack", keys, SIZE_MAX, suggest_limit(5)), "stacks");
	assert_null(suggest_best("zzzz", keys, SIZE_MAX, suggest_limit(4)));
	/* the distance must stay under the length: "x" does not suggest "y" */
	assert_null(suggest_best("x", (const char *const[]){ "y", NULL }, SIZE_MAX, 5));
	/* a count stops before the NULL */
	assert_null(suggest_best("demangel", keys, 3, 2));
	assert_string_equal(suggest_best("eror", levels, 4, 2), "error");
	assert_null(suggest_best("critical", levels, 4, 2));
}

static void test_score(void **state)
{
	assert_int_equal(suggest_score("malloc", "malloc"), 0);
	assert_int_equal(suggest_score("mallok", "malloc"), 1);
	/* contained, long enough to mean it */
	assert_int_equal(suggest_score("malloc", "__libc_malloc"), 2);
	/* "main" is in there by accident */
	assert_int_equal(suggest_score("main", "PyNumber_InPlaceRemainder"), SIZE_MAX);
	assert_int_equal(suggest_score("ab", "xyz"), SIZE_MAX);
}

static void test_rank(void **state)
{
	struct suggest s = { 0 };
	char *out[SUGGEST_MAX];
	size_t n;

	suggest_init(&s, 3);
	suggest_add(&s, "d", 4);
	suggest_add(&s, "b", 1);
	suggest_add(&s, "a", 1);
	suggest_add(&s, "b", 0); /* already there: kept once, first score */
	suggest_add(&s, "c", 2);
	suggest_add(&s, "e", SIZE_MAX);
	suggest_add(&s, "f", 9); /* worse than the three kept */
	n = suggest_take(&s, out);
	assert_int_equal(n, 3);
	assert_string_equal(out[0], "a"); /* ties by name */
	assert_string_equal(out[1], "b");
	assert_string_equal(out[2], "c");
	assert_int_equal(s.n, 0);
	for (size_t i = 0; i < n; i++)
		free(out[i]);

	suggest_init(&s, 100); /* capped */
	assert_int_equal(s.max, SUGGEST_MAX);
	for (int i = 0; i < 20; i++) {
		char name[8];

		snprintf(name, sizeof(name), "n%02d", 20 - i);
		suggest_consider(&s, "n00", name);
	}
	assert_true(s.n <= SUGGEST_MAX);
	suggest_release(&s);
	assert_int_equal(s.n, 0);
	suggest_release(&s);
}

TL_MAIN(test_distance, test_best, test_score, test_rank)
