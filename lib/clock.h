/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_CLOCK_H
#define CGPERF_LIB_CLOCK_H

/*
 * Nanosecond clocks, one place for the clock_gettime() arithmetic the
 * commands, the exporter and the test tools each had a copy of.
 * clock_mono_ns() measures intervals and deadlines (never jumps);
 * clock_real_ns() is wall time since the epoch, for timestamps that leave
 * the process (batches, the exporter's "last seen").
 */

#include <pthread.h>
#include <stdint.h>
#include <time.h>

uint64_t clock_mono_ns(void);
uint64_t clock_real_ns(void);
/* clock_mono_ns() in milliseconds. */
uint64_t clock_mono_ms(void);

/*
 * Timed waits on the monotonic clock: clock_cond_init() makes a condition
 * whose pthread_cond_timedwait() takes CLOCK_MONOTONIC deadlines (0 or an
 * errno value, as pthread_cond_init()); clock_abstime_ms() is the deadline
 * @ms (a clock_mono_ms() value) in the timespec such a wait takes.
 */
int clock_cond_init(pthread_cond_t *c);
struct timespec clock_abstime_ms(uint64_t ms);

#endif
