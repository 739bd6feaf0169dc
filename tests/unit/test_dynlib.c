// SPDX-License-Identifier: MIT
/*
 * lib/dynlib and lib/curlapi: a library loads and its symbols land in
 * their slots; a missing library or symbol fails with the reason and
 * leaves every slot NULL; libcurl's table loads once and works.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "lib/curlapi.h"
#include "lib/dynlib.h"

static struct {
	const char *(*version)(void);
	unsigned long (*crc32)(unsigned long crc, const unsigned char *buf, unsigned int len);
} z;

static void test_loads(void **state)
{
	const struct dynlib_sym syms[] = {
		{ "zlibVersion", (void **)&z.version },
		{ "crc32", (void **)&z.crc32 },
	};
	char why[128] = "";

	(void)state;
	assert_int_equal(dynlib_load("libz.so.1", syms, 2, why, sizeof(why)), 0);
	assert_non_null(z.version);
	assert_string_equal(why, "");
	assert_int_equal(strncmp(z.version(), "1.", 2), 0);
	/* the check value of CRC-32 */
	assert_int_equal(z.crc32(0, (const unsigned char *)"123456789", 9), 0xcbf43926ul);
}

static const char *stale(void)
{
	return "stale";
}

static void test_missing_library(void **state)
{
	const struct dynlib_sym syms[] = { { "zlibVersion", (void **)&z.version } };
	char why[256];

	(void)state;
	z.version = stale; /* must be cleared */
	assert_int_equal(dynlib_load("libcgperf-absent.so.9", syms, 1, why, sizeof(why)), -1);
	assert_null(z.version);
	assert_non_null(strstr(why, "libcgperf-absent.so.9"));
	/* no room for the reason: still a clean failure */
	assert_int_equal(dynlib_load("libcgperf-absent.so.9", syms, 1, NULL, 0), -1);
}

static void test_missing_symbol(void **state)
{
	const struct dynlib_sym syms[] = {
		{ "zlibVersion", (void **)&z.version },
		{ "cgperf_no_such_function", (void **)&z.crc32 },
	};
	char why[256];

	(void)state;
	assert_int_equal(dynlib_load("libz.so.1", syms, 2, why, sizeof(why)), -1);
	assert_null(z.version); /* resolved before the missing one, cleared again */
	assert_null(z.crc32);
	assert_non_null(strstr(why, "cgperf_no_such_function"));
}

static void test_curlapi(void **state)
{
	const struct curlapi *cu = curlapi();
	CURL *h;

	(void)state;
	assert_non_null(cu);
	assert_ptr_equal(curlapi(), cu);
	assert_string_equal(curlapi_error(), "");
	assert_string_equal(cu->easy_strerror(CURLE_OK), "No error");
	h = cu->easy_init();
	assert_non_null(h);
	assert_int_equal(cu->easy_setopt(h, CURLOPT_URL, "http://127.0.0.1:1/"), CURLE_OK);
	cu->easy_cleanup(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loads),
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_missing_symbol),
		cmocka_unit_test(test_curlapi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
