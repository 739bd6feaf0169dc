// SPDX-License-Identifier: MIT
/*
 * symfix [N]: a fixture with known symbols for the symtab tests, and a
 * workload with a known shape:
 *
 *   main -> symfix_leaf
 *   main -> symfix_outer -> symfix_inl_mid (inlined) -> symfix_inl_leaf (inlined)
 *
 * The two inline functions are always_inline so they stay inlined at the
 * -O1 the workloads are built with, and each does its own work on a
 * volatile so the code attributed to it cannot be folded away.
 */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void symfix_leaf(unsigned long n);
__attribute__((noinline)) void symfix_outer(unsigned long n);

__attribute__((noinline)) void symfix_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 3;
}

static inline __attribute__((always_inline)) void symfix_inl_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink ^= i * 7;
}

static inline __attribute__((always_inline)) void symfix_inl_mid(unsigned long n)
{
	symfix_inl_leaf(n);
	for (unsigned long i = 0; i < n; i++)
		sink += i * 5;
}

__attribute__((noinline)) void symfix_outer(unsigned long n)
{
	symfix_inl_mid(n);
	sink += n;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;

	symfix_leaf(n);
	symfix_outer(n);
	return 0;
}
