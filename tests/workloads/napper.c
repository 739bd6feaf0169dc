// SPDX-License-Identifier: MIT
/*
 * napper [SECONDS [NAP_MS [WORK_MS]]]: for SECONDS (default 3), alternate
 * WORK_MS (default 1) of CPU work in work() with a NAP_MS (default 20)
 * nanosleep in nap(), the off-CPU test's known blocking function. Prints
 * "naps N nap_ms MS slept_ns NS": N naps, NS the time they took as the
 * monotonic clock saw it (a little over N x MS: timer slack).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "workload.h"

static volatile unsigned long sink;

static NOINLINE void work(double ms)
{
	double end = now() + ms / 1e3;

	while (now() < end)
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i;
}

/* One nap; the nanoseconds it took. */
static NOINLINE double nap(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	double t0 = now();

	while (nanosleep(&ts, &ts) != 0)
		;
	return (now() - t0) * 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? strtod(argv[1], NULL) : 3;
	long nap_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 20;
	double work_ms = argc > 3 ? strtod(argv[3], NULL) : 1;
	double end = now() + secs, slept = 0;
	unsigned long naps = 0;

	if (nap_ms < 0 || nap_ms > 10000)
		return 2;
	while (now() < end) {
		work(work_ms);
		slept += nap(nap_ms);
		naps++;
	}
	printf("naps %lu nap_ms %ld slept_ns %.0f\n", naps, nap_ms, slept);
	return 0;
}
