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

#include <stdint.h>

uint64_t clock_mono_ns(void);
uint64_t clock_real_ns(void);

#endif
