/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_CPUMAP_H
#define CGPERF_AGENT_CPUMAP_H

#include <stddef.h>

/*
 * Parse a kernel CPU list ("0-3,8,10-11") into a malloc'd sorted array.
 * Returns the count (> 0) or -errno (-EINVAL for malformed text).
 */
int cpumap_parse(const char *text, int **out);

/* The online CPUs, from /sys/devices/system/cpu/online. Count or -errno. */
int cpumap_online(int **out);

#endif
