// SPDX-License-Identifier: MIT
/*
 * lib/grow: capacities double from the first size, elements survive each
 * move, a count below the capacity changes nothing, an overflowing size
 * fails with the array untouched, and a failed allocation likewise.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "lib/grow.h"
#include "tests/unit/testalloc.h"
#include "tests/unit/testlib.h"

struct big {
	char b[1 << 20];
};

static void test_doubling(void **state)
{
	uint32_t *v = NULL, cap_seen[8];
	size_t n = 0, cap = 0, ncaps = 0;

	(void)state;
	for (uint32_t i = 0; i < 100; i++) {
		size_t before = cap;

		assert_int_equal(GROW_ARRAY(v, n, cap, 16), 0);
		if (cap != before && ncaps < 8)
			cap_seen[ncaps++] = (uint32_t)cap;
		v[n++] = i * 3;
	}
	assert_int_equal(ncaps, 4);
	assert_int_equal(cap_seen[0], 16);
	assert_int_equal(cap_seen[1], 32);
	assert_int_equal(cap_seen[2], 64);
	assert_int_equal(cap_seen[3], 128);
	for (uint32_t i = 0; i < 100; i++)
		assert_int_equal(v[i], i * 3);
	/* room already: nothing moves */
	{
		uint32_t *old = v;

		assert_int_equal(GROW_ARRAY(v, 5, cap, 16), 0);
		assert_ptr_equal(v, old);
		assert_int_equal(cap, 128);
	}
	free(v);
}

static void test_overflow(void **state)
{
	struct big *v = NULL;
	size_t cap = SIZE_MAX / sizeof(struct big) / 2 + 1;

	(void)state;
	/* doubling would pass SIZE_MAX bytes: refused, nothing changed */
	assert_int_equal(GROW_ARRAY(v, cap, cap, 1), -ENOMEM);
	assert_null(v);
	assert_int_equal(cap, SIZE_MAX / sizeof(struct big) / 2 + 1);
	assert_null(grow_array(NULL, &(size_t){ 0 }, 0, 4));
}

static void test_alloc_failure(void **state)
{
	int *v = NULL;
	size_t n = 0, cap = 0;

	(void)state;
	tl_alloc_require();
	assert_int_equal(GROW_ARRAY(v, n, cap, 4), 0);
	v[n++] = 7;
	n = cap;
	tl_alloc_fail_at(0);
	assert_int_equal(GROW_ARRAY(v, n, cap, 4), -ENOMEM);
	assert_true(tl_alloc_failed());
	tl_alloc_reset();
	assert_int_equal(cap, 4);
	assert_int_equal(v[0], 7);
	free(v);
}

TL_MAIN(test_doubling, test_overflow, test_alloc_failure)
