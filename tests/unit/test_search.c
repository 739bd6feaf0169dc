// SPDX-License-Identifier: MIT
/*
 * lib/search: the count of keys at or below a value, over plain uint64_t
 * arrays and over structs with the key inside, with duplicates, the ends
 * and empty tables.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/search.h"
#include "tests/unit/testlib.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

static void test_plain(void **state)
{
	static const uint64_t v[] = { 10, 20, 20, 30, UINT64_MAX };
	static const struct {
		uint64_t key;
		size_t want;
	} cases[] = {
		{ 0, 0 }, { 9, 0 }, { 10, 1 }, { 19, 1 }, { 20, 3 },
		{ 29, 3 }, { 30, 4 }, { UINT64_MAX - 1, 4 }, { UINT64_MAX, 5 },
	};

	(void)state;
	for (size_t i = 0; i < NCASES(cases); i++)
		assert_int_equal(search_upper_u64(v, NCASES(v), sizeof(v[0]), 0, cases[i].key),
				 cases[i].want);
	assert_int_equal(search_upper_u64(NULL, 0, 8, 0, 5), 0);
	assert_int_equal(search_upper_u64(v, 1, sizeof(v[0]), 0, 10), 1);
}

struct span {
	uint32_t tag;
	uint64_t start; /* the key, not at offset 0 */
	char pad[3];
};

static void test_struct(void **state)
{
	const struct span v[] = { { 1, 0x1000, "" }, { 2, 0x2000, "" }, { 3, 0x3000, "" } };
	size_t n = sizeof(v) / sizeof(v[0]);

	(void)state;
	assert_int_equal(search_upper_u64(v, n, sizeof(v[0]), offsetof(struct span, start), 0xfff), 0);
	assert_int_equal(search_upper_u64(v, n, sizeof(v[0]), offsetof(struct span, start), 0x2000), 2);
	assert_int_equal(search_upper_u64(v, n, sizeof(v[0]), offsetof(struct span, start), 0x2fff), 2);
	assert_int_equal(search_upper_u64(v, n, sizeof(v[0]), offsetof(struct span, start), 0x9000), 3);
}

TL_MAIN(test_plain, test_struct)
