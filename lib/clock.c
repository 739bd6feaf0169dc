// SPDX-License-Identifier: MIT
#include <pthread.h>
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

uint64_t clock_mono_ms(void)
{
	return clock_mono_ns() / 1000000;
}

int clock_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	int ret = pthread_condattr_init(&ca);

	if (ret)
		return ret;
	ret = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!ret)
		ret = pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
	return ret;
}

struct timespec clock_abstime_ms(uint64_t ms)
{
	return (struct timespec){ .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };
}
