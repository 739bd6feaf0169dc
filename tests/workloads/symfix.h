/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_TESTS_SYMFIX_H
#define CGPERF_TESTS_SYMFIX_H

/*
 * Functions with a known symbol and inline shape, for the symbol tests:
 *
 *   symfix_leaf
 *   symfix_outer -> symfix_inl_mid (inlined) -> symfix_inl_leaf (inlined)
 *
 * Defined here once and compiled twice: into the symfix workload (-O1 -g,
 * tests/workloads/symfix.c), whose copies the tests take apart, and into
 * the symbol tests themselves (tests/unit/symtab_fix.h, built with the
 * project's flags), which look themselves up. The two inline functions are
 * always_inline so they stay inlined at any -O, noclone keeps the outer
 * ones' names free of .constprop suffixes, and each does its own work on a
 * volatile so the code attributed to it cannot be folded away.
 */

static volatile unsigned long symfix_sink;

__attribute__((noinline, noclone)) void symfix_leaf(unsigned long n);
__attribute__((noinline, noclone)) void symfix_outer(unsigned long n);

__attribute__((noinline, noclone)) void symfix_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		symfix_sink += i * 3;
}

static inline __attribute__((always_inline)) void symfix_inl_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		symfix_sink ^= i * 7;
}

static inline __attribute__((always_inline)) void symfix_inl_mid(unsigned long n)
{
	symfix_inl_leaf(n);
	for (unsigned long i = 0; i < n; i++)
		symfix_sink += i * 5;
}

__attribute__((noinline, noclone)) void symfix_outer(unsigned long n)
{
	symfix_inl_mid(n);
	symfix_sink += n;
}

#endif
