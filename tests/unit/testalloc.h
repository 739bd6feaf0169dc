/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_TESTS_TESTALLOC_H
#define CGPERF_TESTS_TESTALLOC_H

/*
 * The failing-allocation injector, as curl's torture tests do it: linked into
 * a test (TESTALLOC_TESTS in the Makefile), testalloc.c replaces malloc,
 * calloc, realloc and free with glibc's own behind a countdown, so that a test
 * can fail the first, second, ... allocation of a call and check that the
 * call fails cleanly and leaves nothing allocated.
 *
 * Under ASan (which owns malloc) the replacement is compiled out and
 * tl_alloc_available() is false: such tests skip that part. Not thread-safe:
 * arm it around single-threaded code only.
 */

#include <stdbool.h>

/* False when the injector is compiled out (ASan). */
bool tl_alloc_available(void);

/* Skip the running cmocka test when the injector is compiled out (ASan
 * owns malloc; the plain build runs the test). */
void tl_alloc_require(void);

/* Fail the allocation @n calls from now (0: the next one), once; -1 disarms.
 * Also starts counting live blocks from zero. */
void tl_alloc_fail_at(long n);

/* Whether the armed failure happened since tl_alloc_fail_at(). */
bool tl_alloc_failed(void);

/* Blocks allocated and not freed since tl_alloc_fail_at() (realloc of an
 * existing block does not count). */
long tl_alloc_live(void);

/* Disarm and stop counting. */
void tl_alloc_reset(void);

/*
 * Curl's torture loop: @step(@ctx) runs with allocation 0, 1, 2, ... of it
 * failing, until a run in which no allocation failed; each run must leave
 * nothing allocated (the test fails, naming the allocation, otherwise), and
 * the step asserts what a failed and what the whole run gives
 * (tl_alloc_failed() tells which it is in). Stops the test after @max runs.
 * Returns the number of runs that had a failure.
 */
long tl_alloc_torture(void (*step)(void *ctx), void *ctx, long max);

#endif
