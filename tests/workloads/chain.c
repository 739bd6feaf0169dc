// SPDX-License-Identifier: MIT
/*
 * chain [SECONDS]: a known call chain for the unwinding tests,
 *   main -> chain_a -> chain_b -> chain_c -> chain_leaf
 * with nearly all time spent in chain_leaf. Built twice: with frame
 * pointers (chain-fp) and without (chain-nofp, for DWARF unwinding).
 */
#include <stdlib.h>
#include <time.h>

#include "workload.h"

static volatile unsigned long sink;

/* Called once per chain_leaf so that chain_leaf is not a leaf function:
 * GCC omits the frame pointer of leaves even with -fno-omit-frame-pointer,
 * and the FP build must keep every frame. */
NOINLINE void chain_touch(void)
{
	sink++;
}

NOINLINE unsigned long chain_leaf(unsigned long n)
{
	unsigned long x = n;

	chain_touch();
	for (unsigned long i = 0; i < 2000000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

/* Each level does work after the call, so no call becomes a tail call. */
NOINLINE unsigned long chain_c(unsigned long n)
{
	unsigned long r = chain_leaf(n);

	sink += r;
	return r ^ n;
}

NOINLINE unsigned long chain_b(unsigned long n)
{
	unsigned long r = chain_c(n + 1);

	sink += r;
	return r + n;
}

NOINLINE unsigned long chain_a(unsigned long n)
{
	unsigned long r = chain_b(n * 3);

	sink += r;
	return r - n;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? strtod(argv[1], NULL) : 2.0, end = now() + secs;
	unsigned long n = 0;

	while (now() < end)
		n += chain_a(n);
	sink += n;
	return 0;
}
