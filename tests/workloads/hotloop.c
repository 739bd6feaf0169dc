// SPDX-License-Identifier: MIT
/*
 * hotloop [SECONDS]: run hotloop_sum(), a noinline function whose time goes
 * to one tight arithmetic loop, for SECONDS (default 2), for annotate's
 * tests: nearly all samples land on the loop's few instructions, between
 * its backward branch's target and the branch. hotloop_idle() is never
 * called: a function that exists and has no samples.
 */
#include <stdio.h>
#include <stdlib.h>

#include "workload.h"

volatile unsigned long hotloop_sink;

NOINLINE unsigned long hotloop_sum(unsigned long n, unsigned long k)
{
	unsigned long acc = 0;

	for (unsigned long i = 0; i < n; i++) {
		acc += i * k;
		acc ^= acc >> 7;
	}
	return acc;
}

NOINLINE unsigned long hotloop_idle(unsigned long x)
{
	return x * 31 + 7;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? strtod(argv[1], NULL) : 2, end = now() + secs;

	do
		hotloop_sink += hotloop_sum(20000000, hotloop_sink | 3);
	while (now() < end);
	if (argc > 2)
		hotloop_sink += hotloop_idle(hotloop_sink);
	return 0;
}
