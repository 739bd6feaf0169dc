// SPDX-License-Identifier: MIT
/*
 * agent/demangle: one line per mangled name, with what perf prints for it
 * with -v (full) and without (short). The first rows were read off
 * `perf report -v` / `perf script -v` on this project's C++ workload
 * (tests/workloads/cxx.cpp); the rest cover the other kinds of names a
 * profile meets (clones, lambdas, operators, the standard library, Rust).
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

struct dm_case {
	const char *in, *full, *brief; /* NULL: shown as it is */
};

static const struct dm_case cases[] = {
	/* what perf printed for build/workloads/cxx */
	{ "_ZN5outer5inner5KlassIiE6methodEii.constprop.0",
	  "outer::inner::Klass<int>::method(int, int) [clone .constprop.0]",
	  "outer::inner::Klass<int>::method" },
	{ "_ZZ10run_lambdaiENKUliE_clEi", "run_lambda(int)::{lambda(int)#1}::operator()(int) const",
	  "run_lambda(int)::{lambda(int)#1}::operator()" },
	{ "_ZN12_GLOBAL__N_111hidden_workEi", "(anonymous namespace)::hidden_work(int)",
	  "(anonymous namespace)::hidden_work" },
	{ "_ZN5outerL9sum_partsERKNS_5PartsE", "outer::sum_parts(outer::Parts const&)",
	  "outer::sum_parts" },
	{ "_ZN5outer5scaleIdEET_S1_", "double outer::scale<double>(double)", "outer::scale<double>" },
	{ "_Z9leaf_worki", "leaf_work(int)", "leaf_work" },
	{ "_ZN5GuardD2Ev.constprop.0", "Guard::~Guard() [clone .constprop.0]", "Guard::~Guard" },
	/* clones */
	{ "_ZN5outer5inner5KlassIiE6methodEi.isra.0",
	  "outer::inner::Klass<int>::method(int) [clone .isra.0]", "outer::inner::Klass<int>::method" },
	{ "_Z3fooi.part.0", "foo(int) [clone .part.0]", "foo" },
	{ "_Z9leaf_worki.cold", "leaf_work(int) [clone .cold]", "leaf_work" },
	{ "_Z3fooi.isra.0.cold", "foo(int) [clone .isra.0] [clone .cold]", "foo" },
	{ "_ZN12_GLOBAL__N_15Thing4pokeEv.cold", "(anonymous namespace)::Thing::poke() [clone .cold]",
	  "(anonymous namespace)::Thing::poke" },
	/* lambdas, constructors, operators, variadic templates */
	{ "_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()() const",
	  "main::{lambda()#1}::operator()" },
	{ "_ZZN5outer3runEvENKUliE0_clEi", "outer::run()::{lambda(int)#2}::operator()(int) const",
	  "outer::run()::{lambda(int)#2}::operator()" },
	{ "_ZN5GuardC1EPi", "Guard::Guard(int*)", "Guard::Guard" },
	{ "_Znwm", "operator new(unsigned long)", "operator new" },
	{ "_ZdlPv", "operator delete(void*)", "operator delete" },
	{ "_ZN3foo3barIJidEEEvDpT_", "void foo::bar<int, double>(int, double)", "foo::bar<int, double>" },
	{ "_ZL4burnm", "burn(unsigned long)", "burn" },
	/* PLT stubs and versioned names: the suffix stays */
	{ "_ZNSt13runtime_errorC1EPKc@plt", "std::runtime_error::runtime_error(char const*)@plt",
	  "std::runtime_error::runtime_error@plt" },
	{ "_ZNSt9exceptionD2Ev@@GLIBCXX_3.4", "std::exception::~exception()@@GLIBCXX_3.4",
	  "std::exception::~exception@@GLIBCXX_3.4" },
	{ "_Zfoo@plt", NULL, NULL },
	{ "malloc@plt", NULL, NULL },
	/* the standard library */
	{ "_ZNSt6vectorIiSaIiEE9push_backERKi",
	  "std::vector<int, std::allocator<int> >::push_back(int const&)",
	  "std::vector<int, std::allocator<int> >::push_back" },
	{ "_ZNKSt8functionIFviEEclEi", "std::function<void (int)>::operator()(int) const",
	  "std::function<void (int)>::operator()" },
	/* Rust v0 */
	{ "_RNvNtCs1234_7mycrate3mod3run", "mycrate::mod::run", "mycrate::mod::run" },
	/* not mangled, or not parseable: as is */
	{ "main", NULL, NULL },
	{ "__libc_start_call_main", NULL, NULL },
	{ "_Z", NULL, NULL },
	{ "_Zfoo", NULL, NULL },
	{ "_ZN5outer", NULL, NULL },
	{ "finish_task_switch.isra.0", NULL, NULL },
	{ "", NULL, NULL },
};

static void test_table(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct dm_case *t = &cases[i];
		char *full = demangle_name(t->in, DEMANGLE_FULL);
		char *brief = demangle_name(t->in, DEMANGLE_SHORT);
		char *none = demangle_name(t->in, DEMANGLE_NONE);

		if (t->full)
			assert_non_null(full);
		if (t->full && strcmp(full, t->full))
			fail_msg("%s: full '%s', want '%s'", t->in, full, t->full);
		if (!t->full && full)
			fail_msg("%s: demangled to '%s', want it as is", t->in, full);
		if (t->brief && (!brief || strcmp(brief, t->brief)))
			fail_msg("%s: short '%s', want '%s'", t->in, brief ? brief : "(null)",
				 t->brief);
		if (!t->brief)
			assert_null(brief);
		assert_null(none);
		free(full);
		free(brief);
	}
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
