/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_TESTS_WORKLOAD_H
#define CGPERF_TESTS_WORKLOAD_H

/*
 * What the test workloads share: NOINLINE for the functions whose frames a
 * test expects to see, and clocks in seconds. Header-only: each workload
 * is one .c file built alone (with its own flags: frame pointers or not).
 */

#include <time.h>

#define NOINLINE __attribute__((noinline))

/* Clock @c in seconds. */
static inline double wl_seconds(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Monotonic seconds, for deadlines. */
static inline double now(void)
{
	return wl_seconds(CLOCK_MONOTONIC);
}

#endif
