// SPDX-License-Identifier: MIT
/* lib/clock: the monotonic clock never goes back and moves with sleeps; the
 * wall clock is in this century; a timed wait on a clock_cond_init()
 * condition ends at its clock_abstime_ms() deadline on the monotonic clock. */
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "lib/clock.h"
#include "tests/unit/testlib.h"

static void test_mono(void **state)
{
	struct timespec ts = {0, 2000000};
	uint64_t a, b;

	(void)state;
	a = clock_mono_ns();
	nanosleep(&ts, NULL);
	b = clock_mono_ns();
	assert_true(b >= a + 2000000);
	assert_true(b - a < 10ull * 1000000000ull);
}

static void test_real(void **state)
{
	uint64_t now = clock_real_ns();

	(void)state;
	assert_true(now > 1600000000ull * 1000000000ull);   /* after 2020 */
	assert_true(now < 4102444800ull * 1000000000ull);   /* before 2100 */
	/* time() reads the coarse clock, up to a tick behind: a second apart
	 * either way */
	assert_true(llabs((long long)time(NULL) - (long long)(now / 1000000000ull)) <= 1);
}

static void test_timed_wait(void **state)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c;
	uint64_t start, deadline, ms = clock_mono_ms();
	struct timespec ts = clock_abstime_ms(1234567);

	(void)state;
	assert_int_equal(ts.tv_sec, 1234);
	assert_int_equal(ts.tv_nsec, 567000000);
	assert_true(llabs((long long)ms - (long long)(clock_mono_ns() / 1000000)) <= 1);
	assert_int_equal(clock_cond_init(&c), 0);
	start = clock_mono_ms();
	deadline = start + 20;
	ts = clock_abstime_ms(deadline);
	pthread_mutex_lock(&mu);
	while (pthread_cond_timedwait(&c, &mu, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&mu);
	/* a realtime deadline of 1970 + 20 ms would have returned at once,
	 * and a wait on the wrong clock would not end near it */
	assert_true(clock_mono_ms() >= deadline);
	assert_true(clock_mono_ms() - start < 10000);
	pthread_cond_destroy(&c);
}

TL_MAIN(test_mono, test_real, test_timed_wait)
