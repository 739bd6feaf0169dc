// SPDX-License-Identifier: MIT
#include <time.h>

#include "lib/clock.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t clock_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t clock_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}
