// SPDX-License-Identifier: MIT
/*
 * lib/json: string literals for hostile text (quotes, backslashes,
 * control characters, valid and invalid UTF-8, as cgroup and process names
 * can hold) and numbers that are not finite.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "tests/unit/testlib.h"

/* What json_write_string(@s) writes, as a malloc'd string. */
static char *string_out(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	json_write_string(f, s);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(strlen(buf), len);
	return buf;
}

static char *double_out(double v, int prec)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	json_write_double(f, v, prec);
	assert_int_equal(fclose(f), 0);
	return buf;
}

#define FFFD "\\ufffd"

/* What json_string_to(@s) appends, as a malloc'd string. */
static char *sink_out(const char *s)
{
	struct tl_text k = { 0 };

	json_string_to(tl_text_put, &k, s);
	return k.s;
}

/* Strings, and the JSON literals that @out gives for them: hostile text,
 * valid UTF-8 kept byte for byte, invalid UTF-8 as U+FFFD for each
 * offending byte (tests/unit/data/json_strings.tsv). */
static void check_strings(char *(*out)(const char *s))
{
	struct tl_table *t = tl_table_load("json_strings.tsv", 2);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *const *c = tl_table_row(t, i);
		char *got = out(c[0]);

		if (strcmp(got, c[1]))
			fail_msg("%s: got %s, want %s", tl_table_where(t, i), got, c[1]);
		free(got);
	}
	tl_table_free(t);
}

static void test_write_string(void **state)
{
	check_strings(string_out);
}

/* NULL is written as the empty string, not "null" and not a crash. */
static void test_write_null_string(void **state)
{
	char *got = string_out(NULL);

	assert_string_equal(got, "\"\"");
	free(got);
}

/* Every byte value on its own: the output is always valid JSON text, i.e.
 * nothing below 0x20 and no stray quote or backslash escapes. */
static void test_every_byte(void **state)
{
	for (int b = 1; b < 256; b++) {
		char in[2] = { (char)b, '\0' };
		char *got = string_out(in);
		size_t len = strlen(got);

		assert_true(len >= 2 && got[0] == '"' && got[len - 1] == '"');
		for (size_t i = 1; i + 1 < len; i++) {
			assert_true((unsigned char)got[i] >= 0x20 && got[i] != 0x7f);
			if (got[i] == '"')
				fail_msg("byte 0x%02x: unescaped quote in %s", b, got);
			if (got[i] == '\\')
				i++; /* the escaped character */
		}
		if (b >= 0x80 && strcmp(got, "\"" FFFD "\""))
			fail_msg("byte 0x%02x alone: %s", b, got);
		free(got);
	}
}

/* The append-function sink (the exporter's pages) writes what the stream
 * writer writes, for every case. */
static void test_string_to_sink(void **state)
{
	check_strings(sink_out);
}

static void test_write_double(void **state)
{
	static const struct {
		double v;
		int prec;
		const char *want;
	} cases[] = {
		{ NAN, 2, "null" },
		{ -NAN, 2, "null" },
		{ INFINITY, 2, "null" },
		{ -INFINITY, 0, "null" },
		{ 0.0, 0, "0" },
		{ 1.5, 2, "1.50" },
		{ -2.25, 1, "-2.2" }, /* round half to even, as printf does */
		{ 1234567.891, 3, "1234567.891" },
		{ 1e-9, 2, "0.00" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = double_out(cases[i].v, cases[i].prec);

		if (strcmp(got, cases[i].want))
			fail_msg("case %zu: got %s, want %s", i, got, cases[i].want);
		free(got);
	}
}

TL_MAIN(test_write_string, test_write_null_string, test_every_byte, test_write_double,
	test_string_to_sink)
