// SPDX-License-Identifier: MIT
/*
 * agent/fold: the byte-keyed counting table under `record`. Keys found
 * again, binary keys (NULs inside, empty), growth far past the first table,
 * the key cap and its refusals, sorted folded output, frame-name
 * sanitizing, and every allocation failed in turn (NULL, nothing leaked,
 * the table still usable).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/stacks/fold.h"
#include "tests/unit/testalloc.h"
#include "tests/unit/testlib.h"

static uint64_t *slot_str(struct fold *f, const char *s)
{
	return fold_slot(f, s, strlen(s));
}

static void test_counting(void **state)
{
	struct fold *f = fold_new();
	uint64_t *a, *b;

	assert_non_null(f);
	assert_int_equal(fold_count(f), 0);
	a = slot_str(f, "main;work");
	assert_non_null(a);
	assert_int_equal(*a, 0); /* new keys start at 0 */
	*a += 3;
	b = slot_str(f, "main;work");
	assert_ptr_equal(a, b);
	assert_int_equal(*b, 3);
	*slot_str(f, "main;idle") += 1;
	assert_int_equal(fold_count(f), 2);
	/* prefixes and extensions are other keys */
	assert_int_equal(*slot_str(f, "main;wor"), 0);
	assert_int_equal(*slot_str(f, "main;work;"), 0);
	assert_int_equal(fold_count(f), 4);
	assert_int_equal(fold_refused(f), 0);
	fold_free(f);
	fold_free(NULL);
}

static void test_binary_keys(void **state)
{
	static const unsigned char k1[] = { 0, 1, 2, 0 }, k2[] = { 0, 1, 2, 1 };
	struct fold *f = fold_new();

	assert_non_null(f);
	*fold_slot(f, k1, sizeof(k1)) = 10;
	*fold_slot(f, k2, sizeof(k2)) = 20;
	*fold_slot(f, k1, 3) = 30; /* the first three bytes: another key */
	*fold_slot(f, "", 0) = 40; /* the empty key is a key */
	assert_int_equal(fold_count(f), 4);
	assert_int_equal(*fold_slot(f, k1, sizeof(k1)), 10);
	assert_int_equal(*fold_slot(f, k2, sizeof(k2)), 20);
	assert_int_equal(*fold_slot(f, k1, 3), 30);
	assert_int_equal(*fold_slot(f, "", 0), 40);
	fold_free(f);
}

struct sum {
	uint64_t keys, total;
	bool bad;
};

static void sum_cb(void *ctx, const void *key, size_t len, uint64_t value)
{
	struct sum *s = ctx;
	unsigned long i;

	/* keys are "k<i>", value i + 1, and a NUL follows each key */
	if (sscanf(key, "k%lu", &i) != 1 || value != i + 1 || ((const char *)key)[len])
		s->bad = true;
	s->keys++;
	s->total += value;
}

static void test_growth(void **state)
{
	enum { N = 50000 }; /* the table starts at 1024 slots */
	struct fold *f = fold_new();
	struct sum s = { 0 };
	char key[32];

	assert_non_null(f);
	for (unsigned long i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%lu", i);
		*slot_str(f, key) += i + 1;
	}
	assert_int_equal(fold_count(f), N);
	/* every key still finds its value after the table grew */
	for (unsigned long i = 0; i < N; i += 97) {
		snprintf(key, sizeof(key), "k%lu", i);
		assert_int_equal(*slot_str(f, key), i + 1);
	}
	assert_int_equal(fold_count(f), N);
	fold_foreach(f, sum_cb, &s);
	assert_false(s.bad);
	assert_int_equal(s.keys, N);
	assert_int_equal(s.total, (uint64_t)N * (N + 1) / 2);
	fold_free(f);
}

static void test_limit(void **state)
{
	struct fold *f = fold_new();

	assert_non_null(f);
	fold_set_limit(f, 3);
	assert_non_null(slot_str(f, "a"));
	assert_non_null(slot_str(f, "b"));
	assert_non_null(slot_str(f, "c"));
	assert_null(slot_str(f, "d"));
	assert_null(slot_str(f, "e"));
	assert_null(slot_str(f, "d")); /* asked again: refused again */
	assert_int_equal(fold_refused(f), 3);
	/* known keys still count at the cap */
	*slot_str(f, "a") += 5;
	assert_int_equal(*slot_str(f, "a"), 5);
	assert_int_equal(fold_count(f), 3);
	assert_int_equal(fold_refused(f), 3);
	/* 0 lifts the cap */
	fold_set_limit(f, 0);
	assert_non_null(slot_str(f, "d"));
	assert_int_equal(fold_count(f), 4);
	fold_free(f);
}

static char *write_to_string(const struct fold *f)
{
	FILE *out = tl_capture_begin();

	assert_int_equal(fold_write(f, out), 0);
	return tl_capture_end(out);
}

static void test_write_sorted(void **state)
{
	struct fold *f = fold_new();
	char *text;

	assert_non_null(f);
	text = write_to_string(f);
	assert_string_equal(text, ""); /* empty table, empty output */
	free(text);
	*slot_str(f, "b;c") = 2;
	*slot_str(f, "a;z") = 18446744073709551615ull;
	*slot_str(f, "B") = 1;
	*slot_str(f, "a") = 0;
	text = write_to_string(f);
	/* byte order: uppercase first, a prefix before its extensions */
	assert_string_equal(text, "B 1\na 0\na;z 18446744073709551615\nb;c 2\n");
	free(text);
	fold_free(f);
}

/* Frame names as they come, and as the folded text shows them: ';' becomes
 * ':' and control bytes '?', spaces and UTF-8 stay
 * (tests/unit/data/fold_sanitize.tsv). */
static void test_sanitize(void **state)
{
	struct tl_table *t = tl_table_load("fold_sanitize.tsv", 2);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *const *c = tl_table_row(t, i);
		char buf[64];

		tl_pathf(buf, sizeof(buf), "%s", c[0]);
		fold_sanitize(buf);
		if (strcmp(buf, c[1]))
			fail_msg("%s: \"%s\", want \"%s\"", tl_table_where(t, i), buf, c[1]);
	}
	tl_table_free(t);
}

/* One run of the torture loop: 2000 keys (the table grows twice), then the
 * folded text. */
static void fold_run(void *ctx)
{
	FILE *out = ctx;
	struct fold *f = fold_new();
	char key[32];
	bool ok = true;

	for (int k = 0; f && k < 2000; k++) {
		snprintf(key, sizeof(key), "stack %d", k);
		if (!slot_str(f, key))
			ok = false;
	}
	if (f) {
		/* -ENOMEM, or 0 when only qsort's scratch failed (it falls back) */
		if (fold_write(f, out) != 0)
			ok = false;
		/* a failed insert leaves the table usable */
		if (!ok && fold_count(f) < 2000) {
			uint64_t *v = slot_str(f, "after the failure");

			assert_non_null(v);
			(*v)++;
		}
	}
	if (!tl_alloc_failed())
		assert_true(ok && f);
	fold_free(f);
}

static void test_alloc_failures(void **state)
{
	FILE *out;
	long i;

	tl_alloc_require();
	out = tl_devnull(); /* before the injector is armed */
	i = tl_alloc_torture(fold_run, out, 10000);
	fclose(out);
	print_message("     %ld allocations failed in turn\n", i);
	assert_true(i > 2000);
}

TL_MAIN(test_counting, test_binary_keys, test_growth, test_limit, test_write_sorted,
	test_sanitize, test_alloc_failures)
