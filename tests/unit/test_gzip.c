// SPDX-License-Identifier: MIT
/*
 * lib/gzip: what it writes is one gzip member that zlib reads back to the
 * same bytes, at every level, for empty, small, incompressible and large
 * inputs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/gzip.h"
#include "tests/unit/testlib.h"

/* Inflate @z (gzip wrapper required) and compare with @want. */
static void check_roundtrip(const uint8_t *z, size_t zlen, const uint8_t *want, size_t len)
{
	z_stream s = {0};
	uint8_t *back = malloc(len + 16);

	assert_non_null(back);
	assert_true(zlen >= 18);
	assert_int_equal(z[0], 0x1f); /* gzip magic */
	assert_int_equal(z[1], 0x8b);
	assert_int_equal(inflateInit2(&s, 16 + MAX_WBITS), Z_OK);
	s.next_in = (Bytef *)z;
	s.avail_in = (uInt)zlen;
	s.next_out = back;
	s.avail_out = (uInt)(len + 16);
	assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
	assert_int_equal(s.total_out, len);
	assert_int_equal(s.avail_in, 0); /* one member, nothing after it */
	assert_memory_equal(back, want, len);
	inflateEnd(&s);
	free(back);
}

static void roundtrip(const uint8_t *in, size_t len, int level)
{
	uint8_t *z = NULL;
	size_t zlen = 0;

	assert_int_equal(gzip_compress(in, len, level, &z, &zlen), 0);
	check_roundtrip(z, zlen, in, len);
	free(z);
}

static void test_small_and_empty(void **state)
{
	static const char text[] = "main;work;leaf 42\nmain;idle 7\n";

	(void)state;
	roundtrip((const uint8_t *)"", 0, GZIP_DEFAULT);
	roundtrip((const uint8_t *)text, sizeof(text) - 1, GZIP_DEFAULT);
	roundtrip((const uint8_t *)text, sizeof(text) - 1, GZIP_FASTEST);
	roundtrip((const uint8_t *)text, sizeof(text) - 1, 9);
}

static void test_large_and_random(void **state)
{
	size_t len = 3u << 20;
	uint8_t *buf = malloc(len), *z = NULL;
	size_t zlen = 0;
	uint32_t x = 12345;

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 24);
	}
	roundtrip(buf, len, GZIP_FASTEST); /* incompressible: bound holds it */
	memset(buf, 'a', len);
	assert_int_equal(gzip_compress(buf, len, GZIP_DEFAULT, &z, &zlen), 0);
	assert_true(zlen < len / 100); /* repetitive text shrinks */
	check_roundtrip(z, zlen, buf, len);
	free(z);
	free(buf);
}

static void test_bad_level(void **state)
{
	uint8_t *z = (uint8_t *)"untouched";
	size_t zlen = 0;

	(void)state;
	assert_int_equal(gzip_compress("x", 1, 42, &z, &zlen), -EIO);
	assert_string_equal((const char *)z, "untouched");
}

TL_MAIN(test_small_and_empty, test_large_and_random, test_bad_level)
