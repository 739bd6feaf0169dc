// SPDX-License-Identifier: MIT
/*
 * agent/demangle: one line per mangled name (tests/unit/data/demangle.tsv),
 * with what perf prints for it with -v (full) and without (short). The
 * first rows were read off `perf report -v` / `perf script -v` on this
 * project's C++ workload (tests/workloads/cxx.cpp); the rest cover the
 * other kinds of names a profile meets (clones, lambdas, operators, the
 * standard library, Rust).
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

#include "agent/symbols/demangle.h"
#include "tests/unit/testlib.h"

/* Each mangled name of tests/unit/data/demangle.tsv, with what perf shows
 * for it in full and short (NULL: shown as it is, no demangled copy). */
static void test_table(void **state)
{
	struct tl_table *t = tl_table_load("demangle.tsv", 3);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *const *c = tl_table_row(t, i);
		const char *in = c[0], *want_full = c[1], *want_brief = c[2];
		char *full = demangle_name(in, DEMANGLE_FULL);
		char *brief = demangle_name(in, DEMANGLE_SHORT);
		char *none = demangle_name(in, DEMANGLE_NONE);

		if (want_full)
			assert_non_null(full);
		if (want_full && strcmp(full, want_full))
			fail_msg("%s: %s: full '%s', want '%s'", tl_table_where(t, i), in, full,
				 want_full);
		if (!want_full && full)
			fail_msg("%s: %s: demangled to '%s', want it as is", tl_table_where(t, i), in,
				 full);
		if (want_brief && (!brief || strcmp(brief, want_brief)))
			fail_msg("%s: %s: short '%s', want '%s'", tl_table_where(t, i), in,
				 brief ? brief : "(null)", want_brief);
		if (!want_brief)
			assert_null(brief);
		assert_null(none);
		free(full);
		free(brief);
	}
	tl_table_free(t);
}

static void test_cache(void **state)
{
	struct demangle_cache *c = demangle_cache_new(DEMANGLE_FULL, 4);
	const char *mangled = "_Z9leaf_worki", *plain = "leaf_work";
	const char *a, *b;
	char name[32];

	assert_non_null(c);
	assert_int_equal(demangle_cache_style(c), DEMANGLE_FULL);
	a = demangle_cache_get(c, mangled);
	assert_string_equal(a, "leaf_work(int)");
	/* The same name again: the same string, not a second demangling. */
	b = demangle_cache_get(c, mangled);
	assert_ptr_equal(a, b);
	/* Unmangled names come back as themselves. */
	assert_ptr_equal(demangle_cache_get(c, plain), plain);
	assert_ptr_equal(demangle_cache_get(c, "_Zfoo"), demangle_cache_get(c, "_Zfoo"));
	/* Past its bound it starts over and still answers right. */
	for (int i = 0; i < 20; i++) {
		/* _Z4fn00i .. _Z4fn19i: fn00(int) .. fn19(int) */
		snprintf(name, sizeof(name), "_Z4fn%02di", i);
		a = demangle_cache_get(c, name);
		assert_non_null(a);
		assert_non_null(strstr(a, "(int)"));
	}
	assert_string_equal(demangle_cache_get(c, mangled), "leaf_work(int)");
	assert_null(demangle_cache_get(c, NULL));
	demangle_cache_free(c);

	c = demangle_cache_new(DEMANGLE_NONE, 0);
	assert_non_null(c);
	assert_ptr_equal(demangle_cache_get(c, mangled), mangled);
	demangle_cache_free(c);
	demangle_cache_free(NULL);
}

static void test_caps(void **state)
{
	/* A name past the input cap (a template the symbol table cut, or a
	 * hostile one) is shown as it is, not parsed. */
	size_t n = DEMANGLE_MAX_IN + 100;
	char *big = malloc(n + 1);
	struct demangle_cache *c = demangle_cache_new(DEMANGLE_SHORT, 0);

	assert_non_null(big);
	assert_non_null(c);
	memset(big, 'a', n);
	memcpy(big, "_Z3fooi", 7);
	big[n] = '\0';
	assert_null(demangle_name(big, DEMANGLE_FULL));
	assert_ptr_equal(demangle_cache_get(c, big), big);
	/* Deep nesting: bounded by the demangler's recursion limit, no crash. */
	{
		size_t depth = 3000, k = 0;
		char *deep = malloc(depth * 4 + 16);

		assert_non_null(deep);
		memcpy(deep, "_Z1fI", 5);
		k = 5;
		for (size_t i = 0; i < depth && k < DEMANGLE_MAX_IN - 8; i++)
			deep[k++] = 'P';
		memcpy(deep + k, "iEvv", 5);
		free(demangle_name(deep, DEMANGLE_FULL));
		free(deep);
	}
	demangle_cache_free(c);
	free(big);
}

static void test_styles(void **state)
{
	enum demangle_style s;

	assert_int_equal(demangle_style_parse("full", &s), 0);
	assert_int_equal(s, DEMANGLE_FULL);
	assert_int_equal(demangle_style_parse("short", &s), 0);
	assert_int_equal(s, DEMANGLE_SHORT);
	assert_int_equal(demangle_style_parse("none", &s), 0);
	assert_int_equal(s, DEMANGLE_NONE);
	assert_int_equal(demangle_style_parse("true", &s), 0);
	assert_int_equal(s, DEMANGLE_FULL);
	assert_int_equal(demangle_style_parse("false", &s), 0);
	assert_int_equal(s, DEMANGLE_NONE);
	assert_int_equal(demangle_style_parse("Full", &s), -EINVAL);
	assert_int_equal(demangle_style_parse("", &s), -EINVAL);
	assert_int_equal(demangle_style_parse(NULL, &s), -EINVAL);
	assert_string_equal(demangle_style_name(DEMANGLE_FULL), "full");
	assert_string_equal(demangle_style_name(DEMANGLE_SHORT), "short");
	assert_string_equal(demangle_style_name(DEMANGLE_NONE), "none");
}

TL_MAIN(test_table, test_cache, test_caps, test_styles)
