// SPDX-License-Identifier: MIT
/*
 * deepstack MODE DEPTH SECONDS: stacks that cannot be unwound completely,
 * for the truncation tests.
 *
 *   rec   main -> deep_rec x DEPTH -> deep_leaf. Each deep_rec frame holds
 *         a 256-byte buffer, so 40 levels already pass the 8 KiB user stack
 *         a DWARF sample copies, and DEPTH above the kernel's
 *         perf_event_max_stack cuts a frame-pointer callchain.
 *   junk  main -> junk_caller -> junk_leaf, where junk_leaf spins with RBP
 *         pointing at text, as code built with -fomit-frame-pointer may
 *         leave RBP holding any pointer: a frame-pointer walk takes the
 *         text's bytes for a return address.
 *
 * Built twice: deepstack-fp (frame pointers) and deepstack-nofp
 * (-fomit-frame-pointer).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workload.h"

static volatile unsigned long sink;
static double deadline;

NOINLINE void deep_touch(void)
{
	sink++;
}

NOINLINE void deep_leaf(void)
{
	deep_touch();
	while (now() < deadline)
		for (unsigned long i = 0; i < 1000000; i++)
			sink = sink * 6364136223846793005ul + 1442695040888963407ul;
}

NOINLINE unsigned long deep_rec(int depth)
{
	volatile char pad[256];

	memset((char *)pad, depth, sizeof(pad));
	if (depth > 0)
		sink += deep_rec(depth - 1);
	else
		deep_leaf();
	return pad[depth & 255] + 1; /* work after the call: no tail call */
}

/* What a return address read through RBP will be: ASCII. */
static const char junk_text[64] = "/usr/share/ne2c/junk/frames/are/text/here/and/not/code/at/all/";

NOINLINE void junk_leaf(void)
{
	while (now() < deadline) {
		unsigned long n = 20000000;

		/* RBP saved below the red zone, pointed at text while spinning. */
		__asm__ volatile("sub $256, %%rsp\n\t"
				 "push %%rbp\n\t"
				 "mov %1, %%rbp\n\t"
				 "1: dec %0\n\t"
				 "jnz 1b\n\t"
				 "pop %%rbp\n\t"
				 "add $256, %%rsp"
				 : "+r"(n)
				 : "r"(junk_text)
				 : "memory", "cc");
	}
}

NOINLINE void junk_caller(void)
{
	junk_leaf();
	sink++;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "rec";
	int depth = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 200;
	double secs = argc > 3 ? strtod(argv[3], NULL) : 2.0;

	deadline = now() + secs;
	if (!strcmp(mode, "junk"))
		junk_caller();
	else
		sink += deep_rec(depth);
	return 0;
}
