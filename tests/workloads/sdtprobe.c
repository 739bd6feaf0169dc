// SPDX-License-Identifier: MIT
/*
 * sdtprobe [N [USEC]]: N rounds (default 1000), USEC microseconds apart
 * (default 0), each firing two USDT probes guarded by semaphores:
 *
 *   cgperf_test:hit  (long i, int -7, unsigned char i & 0xff)  registers and a constant
 *   cgperf_test:mem  (int -i, unsigned char 0xa5, unsigned long i * 3)  all in memory
 *
 * Each probe's argument constraint is chosen so that the operand kinds are
 * fixed whatever the compiler does: "nr" (constant or register) for hit,
 * "m" (memory, a stack slot) for mem. At the end it prints "armed K" with
 * K = rounds in which cgperf_test:hit's semaphore was nonzero, so a test can
 * tell that an attached uprobe raised it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short cgperf_test_hit_semaphore __attribute__((unused)) __attribute__((section(".probes")));
unsigned short cgperf_test_mem_semaphore __attribute__((unused)) __attribute__((section(".probes")));

/* volatile: the probe's code is guarded by the counter, which the kernel
 * changes behind the compiler's back */
#define SDT_ENABLED(sema) (*(volatile unsigned short *)&(sema) != 0)

struct rec {
	int neg;
	unsigned char tag;
	unsigned long big;
};

__attribute__((noinline)) static void fire(long i)
{
	volatile struct rec r = { .neg = (int)-i, .tag = 0xa5, .big = (unsigned long)i * 3 };

	if (SDT_ENABLED(cgperf_test_hit_semaphore)) {
#undef STAP_SDT_ARG_CONSTRAINT
#define STAP_SDT_ARG_CONSTRAINT nr
		STAP_PROBE3(cgperf_test, hit, i, -7, (unsigned char)(i & 0xff));
	}
	if (SDT_ENABLED(cgperf_test_mem_semaphore)) {
#undef STAP_SDT_ARG_CONSTRAINT
#define STAP_SDT_ARG_CONSTRAINT m
		STAP_PROBE3(cgperf_test, mem, r.neg, r.tag, r.big);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
	long usec = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	long armed = 0;

	for (long i = 0; i < n; i++) {
		armed += SDT_ENABLED(cgperf_test_hit_semaphore);
		fire(i);
		if (usec > 0)
			usleep((useconds_t)usec);
	}
	printf("armed %ld\n", armed);
	return 0;
}
