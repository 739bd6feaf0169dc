// SPDX-License-Identifier: MIT
/*
 * lib/strv: setting, copying and replacing owned strings and string lists;
 * on failure nothing changes (the failing allocation injector).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/strv.h"
#include "tests/unit/testalloc.h"
#include "tests/unit/testlib.h"

static void test_set(void **state)
{
	char *s = NULL;

	assert_int_equal(strv_set(&s, "a"), 0);
	assert_string_equal(s, "a");
	assert_int_equal(strv_set(&s, "bc"), 0);
	assert_string_equal(s, "bc");
	if (tl_alloc_available()) {
		tl_alloc_fail_at(0);
		assert_int_equal(strv_set(&s, "d"), -ENOMEM);
		tl_alloc_reset();
		assert_string_equal(s, "bc");
	}
	assert_int_equal(strv_set(&s, NULL), 0);
	assert_null(s);
}

static void test_dup(void **state)
{
	static const char *const src[] = { "x", "y", "z" };
	char **v = NULL;
	size_t n = 0;

	assert_int_equal(strv_dup(&v, &n, src, 3), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[2], "z");
	/* every allocation of a copy failing in turn leaves the old list */
	for (long k = 0; tl_alloc_available() && k < 3; k++) {
		tl_alloc_fail_at(k);
		assert_int_equal(strv_dup(&v, &n, src, 2), -ENOMEM);
		assert_int_equal(tl_alloc_live(), 0);
		tl_alloc_reset();
		assert_int_equal(n, 3);
		assert_string_equal(v[0], "x");
	}
	assert_int_equal(strv_dup(&v, &n, NULL, 0), 0);
	assert_int_equal(n, 0);
	assert_non_null(v);
	assert_int_equal(strv_replace(&v, &n, NULL, 5), -ENOMEM);
	assert_non_null(v);
	strv_free(v, n);
	strv_free(NULL, 3);
}

TL_MAIN(test_set, test_dup)
