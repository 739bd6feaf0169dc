// SPDX-License-Identifier: MIT
/*
 * lib/hashmap: FNV-1a against published vectors and in pieces, and the map:
 * insert and find, growth past the first table, binary keys, the key cap,
 * foreach, removal (against a plain array, through long probe runs and
 * their wrap at the table's end), interning (the copy keeps its address
 * while the table grows, its value serves as a reference count), and every
 * allocation of an insert failed in turn; the pooled map (keys from
 * chunks, the long ones alone) the same way.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "tests/unit/testalloc.h"
#include "tests/unit/testlib.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

static void test_fnv_vectors(void **state)
{
	/* FNV-1a 64 test vectors (Fowler, Noll, Vo) */
	static const struct {
		const char *s;
		uint64_t h;
	} cases[] = {
		{ "", 0xcbf29ce484222325ull },
		{ "a", 0xaf63dc4c8601ec8cull },
		{ "foobar", 0x85944171f73967e8ull },
	};

	(void)state;
	for (size_t i = 0; i < NCASES(cases); i++) {
		assert_true(hash_fnv1a(HASH_FNV_OFFSET, cases[i].s, strlen(cases[i].s)) == cases[i].h);
		assert_true(hash_fnv1a_str(HASH_FNV_OFFSET, cases[i].s) == cases[i].h);
	}
	/* in pieces as in one go */
	assert_true(hash_fnv1a(hash_fnv1a(HASH_FNV_OFFSET, "foo", 3), "bar", 3) == 0x85944171f73967e8ull);
	assert_true(hash_fnv1a_str(hash_fnv1a_str(HASH_FNV_OFFSET, "foo"), "bar") == 0x85944171f73967e8ull);
	/* the finisher moves high bits down */
	assert_true((hash_mix64(1ull << 63) & 0xffff) != 0);
	assert_true(hash_mix64(0) == 0);
}

static void test_map_basic(void **state)
{
	struct hashmap *m = hashmap_new();
	char key[32];
	uint64_t *v;

	(void)state;
	assert_non_null(m);
	assert_null(hashmap_find(m, "x", 1));
	v = hashmap_slot(m, "x", 1);
	assert_non_null(v);
	assert_true(*v == 0);
	*v = 7;
	assert_true(*hashmap_find(m, "x", 1) == 7);
	assert_true(*hashmap_slot(m, "x", 1) == 7);
	/* prefixes and binary keys are distinct keys */
	assert_null(hashmap_find(m, "x\0", 2));
	(*hashmap_slot(m, "x\0", 2))++;
	(*hashmap_slot(m, "", 0))++;
	assert_int_equal(hashmap_count(m), 3);
	/* past the first table (1024 slots at 3/4 load) */
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		v = hashmap_slot(m, key, strlen(key));
		assert_non_null(v);
		*v = (uint64_t)i + 1;
	}
	assert_int_equal(hashmap_count(m), 5003);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		v = hashmap_find(m, key, strlen(key));
		assert_non_null(v);
		assert_true(*v == (uint64_t)i + 1);
	}
	assert_true(*hashmap_find(m, "x", 1) == 7);
	hashmap_free(m);
	hashmap_free(NULL);
}

/* ctx: uint64_t[3] = sum of values, keys seen, keys followed by a NUL */
static void add_up(void *ctx, const void *key, size_t len, uint64_t value)
{
	uint64_t *acc = ctx;

	acc[0] += value;
	acc[1]++;
	acc[2] += ((const char *)key)[len] == '\0';
}

static void test_map_limit_foreach(void **state)
{
	struct hashmap *m = hashmap_new();
	uint64_t acc[3] = { 0 };

	(void)state;
	assert_non_null(m);
	hashmap_set_limit(m, 3);
	for (uint64_t i = 1; i <= 5; i++) {
		uint64_t *v = hashmap_slot(m, &i, sizeof(i));

		if (i <= 3) {
			assert_non_null(v);
			*v = i * 10;
		} else {
			assert_null(v);
		}
	}
	/* known keys are still found at the cap */
	assert_non_null(hashmap_slot(m, &(uint64_t){ 2 }, sizeof(uint64_t)));
	assert_true(hashmap_refused(m) == 2);
	assert_int_equal(hashmap_count(m), 3);
	hashmap_foreach(m, add_up, acc);
	assert_true(acc[0] == 60 && acc[1] == 3 && acc[2] == 3);
	hashmap_free(m);
}

/*
 * Random inserts and removals over 1000 small keys, holding about 700 of
 * them in the first 1024 slots (below the 3/4 growth point, so probe runs
 * grow long and wrap at the end), checked against a plain array of what
 * should be there.
 */
static void test_map_remove(void **state)
{
	enum { NKEYS = 1000, HOLD = 700, STEPS = 20000 };
	struct hashmap *m = hashmap_new();
	static uint64_t want[NKEYS]; /* 0 = absent, else value */
	uint64_t seed = 12345, got, acc[3] = { 0 }, sum = 0;
	size_t count = 0;

	(void)state;
	assert_non_null(m);
	assert_int_equal(hashmap_remove(m, "nope", 4, NULL), -ENOENT);
	memset(want, 0, sizeof(want));
	for (int step = 0; step < STEPS; step++) {
		bool add = count < HOLD;
		uint32_t k;

		/* a random key in the state the step needs */
		do {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			k = (uint32_t)(seed >> 33) % NKEYS;
		} while (!want[k] != add);
		if (add) {
			uint64_t *v = hashmap_slot(m, &k, sizeof(k));

			assert_non_null(v);
			assert_true(*v == 0);
			*v = want[k] = (uint64_t)step + 1;
			count++;
		} else {
			assert_int_equal(hashmap_remove(m, &k, sizeof(k), &got), 0);
			assert_true(got == want[k]);
			assert_int_equal(hashmap_remove(m, &k, sizeof(k), NULL), -ENOENT);
			want[k] = 0;
			count--;
		}
		assert_int_equal(hashmap_count(m), count);
		/* every key still reachable: a bad shift strands one behind a hole */
		if (step % 97 == 0 || step >= STEPS - 5) {
			for (uint32_t j = 0; j < NKEYS; j++) {
				uint64_t *v = hashmap_find(m, &j, sizeof(j));

				if (want[j])
					assert_true(v && *v == want[j]);
				else
					assert_null(v);
			}
		}
	}
	for (uint32_t j = 0; j < NKEYS; j++)
		sum += want[j];
	hashmap_foreach(m, add_up, acc);
	assert_true(acc[0] == sum && acc[1] == count && acc[2] == count);
	hashmap_free(m);
}

/* hashmap_intern(): one stable copy per key, through growth and removals. */
static void test_map_intern(void **state)
{
	struct hashmap *m = hashmap_new();
	const char *first[3000];
	uint64_t *v;
	char key[32];

	(void)state;
	assert_non_null(m);
	for (int i = 0; i < 3000; i++) {
		int n = snprintf(key, sizeof(key), "ev-%d", i);

		first[i] = hashmap_intern(m, key, (size_t)n, &v);
		assert_non_null(first[i]);
		assert_true(first[i] != key);
		assert_string_equal(first[i], key);
		assert_true(*v == 0);
		*v = (uint64_t)i + 1;
	}
	/* The table grew (3000 keys > 3/4 of 1024): the copies did not move. */
	for (int i = 0; i < 3000; i += 7) {
		int n = snprintf(key, sizeof(key), "ev-%d", i);

		assert_ptr_equal(hashmap_intern(m, key, (size_t)n, &v), first[i]);
		assert_true(*v == (uint64_t)i + 1);
	}
	/* As a reference count: the last release removes the key. */
	assert_non_null(hashmap_intern(m, "ev-5", 4, &v));
	(*v)++;
	assert_true(*hashmap_find(m, "ev-5", 4) == 7);
	assert_int_equal(hashmap_remove(m, "ev-5", 4, NULL), 0);
	assert_null(hashmap_find(m, "ev-5", 4));
	assert_ptr_equal(hashmap_intern(m, "ev-6", 4, NULL), first[6]);
	assert_true(hashmap_count(m) == 2999);
	/* The cap refuses new keys here too; binary keys with a NUL inside. */
	hashmap_set_limit(m, 2999);
	assert_null(hashmap_intern(m, "new", 3, NULL));
	assert_true(hashmap_refused(m) == 1);
	hashmap_set_limit(m, 0);
	assert_memory_equal(hashmap_intern(m, "a\0b", 3, NULL), "a\0b", 4);
	hashmap_free(m);
}

/* A pooled map: short keys from chunks, long ones alone, both removable;
 * foreach goes in insertion order while nothing is removed. */
static void order_cb(void *ctx, const void *key, size_t len, uint64_t value)
{
	uint64_t *next = ctx;

	(void)key;
	(void)len;
	assert_true(value == (*next)++);
}

static void test_map_pooled(void **state)
{
	struct hashmap *m = hashmap_new_pooled();
	static char big[5000];
	uint64_t next = 0, *v;
	char key[32];

	(void)state;
	assert_non_null(m);
	memset(big, 'b', sizeof(big));
	for (uint64_t i = 0; i < 20000; i++) {
		int n = snprintf(key, sizeof(key), "frame_%llu", (unsigned long long)i);
		const char *k = i % 1000 ? hashmap_intern(m, key, (size_t)n, &v) :
					   hashmap_intern(m, big, sizeof(big) - i / 1000, &v);

		assert_non_null(k);
		assert_true(((uintptr_t)k & 7) == 0); /* keys may be arrays of integers */
		*v = i;
	}
	assert_true(hashmap_count(m) == 20000);
	hashmap_foreach(m, order_cb, &next);
	assert_true(next == 20000);
	assert_int_equal(hashmap_remove(m, "frame_7", 7, NULL), 0);
	assert_int_equal(hashmap_remove(m, big, sizeof(big) - 3, NULL), 0);
	assert_null(hashmap_find(m, "frame_7", 7));
	assert_true(*hashmap_find(m, "frame_19999", 11) == 19999);
	assert_true(*hashmap_find(m, big, sizeof(big) - 4) == 4000);
	hashmap_free(m);
}

/* One run of the torture loop: a map growing to 800 keys. */
static void map_run(void *ctx)
{
	struct hashmap *m = ctx ? hashmap_new_pooled() : hashmap_new();

	if (!m)
		return;
	for (int i = 0; i < 800; i++) {
		if (!(i % 2 ? hashmap_slot(m, &i, sizeof(i)) :
			      (void *)hashmap_intern(m, &i, sizeof(i), NULL)))
			break;
	}
	hashmap_free(m);
}

static void test_map_alloc_failures(void **state)
{
	(void)state;
	tl_alloc_require();
	tl_alloc_torture(map_run, NULL, 100000);
	tl_alloc_torture(map_run, "pooled", 100000);
}

TL_MAIN(test_fnv_vectors, test_map_basic, test_map_limit_foreach, test_map_remove,
	test_map_intern, test_map_pooled, test_map_alloc_failures)
