// SPDX-License-Identifier: MIT
/* lib/clock: the monotonic clock never goes back and moves with sleeps; the
 * wall clock is in this century. */
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

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

TL_MAIN(test_mono, test_real)
