// SPDX-License-Identifier: MIT
/*
 * symfix [N]: a fixture with known symbols for the symtab tests, and a
 * workload with a known shape (symfix.h):
 *
 *   main -> symfix_leaf
 *   main -> symfix_outer -> symfix_inl_mid (inlined) -> symfix_inl_leaf (inlined)
 */
#include <stdlib.h>

#include "symfix.h"

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;

	symfix_leaf(n);
	symfix_outer(n);
	return 0;
}
