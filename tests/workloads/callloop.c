// SPDX-License-Identifier: MIT
/*
 * callloop [N [-t] [-n]]: exactly N calls (default 2000000) of the global,
 * noinline function callloop_fn(long x) with x = the call's index, for the
 * cost of a uprobe per hit. No stdio in the loop and nothing printed by
 * default; with -t, one line on stderr after the loop:
 *
 *   callloop N calls wall_s W cpu_s C
 *
 * W: CLOCK_MONOTONIC around the loop; C: CLOCK_PROCESS_CPUTIME_ID (user +
 * system, so the kernel's uprobe handling counts) around the loop. Both
 * leave out exec, the dynamic loader and exit, so a tracer's set-up of the
 * process does not blur the per-call figure.
 *
 * With -n the loop calls callloop_nop(long x) instead: the same body behind
 * a one-byte nop at the function's address (like a USDT site). x86 uprobes
 * emulate a nop (and push) in the trap, but must single-step most other
 * first instructions, such as callloop_fn's mov, out of line: a second trap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The sink keeps the call and its argument alive under -O1. */
volatile long callloop_sink;

__attribute__((noinline, used, visibility("default"))) long callloop_fn(long x);

long callloop_fn(long x)
{
	callloop_sink += x;
	/* An empty asm: the compiler may not fold repeated calls together. */
	__asm__ volatile("" ::: "memory");
	return x;
}

__attribute__((noinline, used, visibility("default"), patchable_function_entry(1, 0))) long
callloop_nop(long x);

long callloop_nop(long x)
{
	callloop_sink += x;
	__asm__ volatile("" ::: "memory");
	return x;
}

static double ts(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000000;
	int report = 0, nop = 0;

	for (int a = 2; a < argc; a++) {
		if (strcmp(argv[a], "-t") == 0)
			report = 1;
		else if (strcmp(argv[a], "-n") == 0)
			nop = 1;
	}
	long (*fn)(long) = nop ? callloop_nop : callloop_fn;
	double w0 = ts(CLOCK_MONOTONIC), c0 = ts(CLOCK_PROCESS_CPUTIME_ID);

	for (long i = 0; i < n; i++)
		fn(i);
	if (report)
		fprintf(stderr, "callloop %ld calls wall_s %.6f cpu_s %.6f\n", n,
			ts(CLOCK_MONOTONIC) - w0, ts(CLOCK_PROCESS_CPUTIME_ID) - c0);
	return 0;
}
