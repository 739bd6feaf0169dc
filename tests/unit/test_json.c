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

static const struct {
	const char *in, *want;
} strings[] = {
	{ "", "\"\"" },
	{ "plain", "\"plain\"" },
	{ "/system.slice/nginx.service", "\"/system.slice/nginx.service\"" },
	{ "say \"hi\"", "\"say \\\"hi\\\"\"" },
	{ "back\\slash", "\"back\\\\slash\"" },
	{ "\\\"", "\"\\\\\\\"\"" },
	{ "a\nb\rc\td", "\"a\\nb\\rc\\td\"" },
	{ "\x01", "\"\\u0001\"" },
	{ "\b\f\v", "\"\\u0008\\u000c\\u000b\"" },
	{ "\x1b[31mred", "\"\\u001b[31mred\"" },
	{ "\x1f", "\"\\u001f\"" },
	{ " ~", "\" ~\"" }, /* the printable edges stay */
	{ "\x7f", "\"\\u007f\"" },
	/* valid UTF-8 passes through byte for byte */
	{ "caf\xc3\xa9", "\"caf\xc3\xa9\"" },
	{ "\xc2\x80", "\"\xc2\x80\"" },                         /* U+0080, first 2-byte */
	{ "\xe6\x97\xa5\xe6\x9c\xac", "\"\xe6\x97\xa5\xe6\x9c\xac\"" }, /* 日本 */
	{ "\xe0\xa0\x80", "\"\xe0\xa0\x80\"" },                 /* U+0800, first 3-byte */
	{ "\xef\xbf\xbd", "\"\xef\xbf\xbd\"" },                 /* U+FFFD itself */
	{ "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"" },         /* U+1F600 emoji */
	{ "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"" },         /* U+10FFFF, the last */
	{ "x\xf0\x9f\x90\xb3\"y", "\"x\xf0\x9f\x90\xb3\\\"y\"" },
	/* invalid UTF-8: each offending byte becomes U+FFFD */
	{ "\xff", "\"" FFFD "\"" },
	{ "a\xff" "b", "\"a" FFFD "b\"" },
	{ "\x80", "\"" FFFD "\"" },                             /* lone continuation */
	{ "\xe6\x97", "\"" FFFD FFFD "\"" },                   /* truncated at the end */
	{ "\xe6\x97x", "\"" FFFD FFFD "x\"" },                 /* truncated mid-string */
	{ "\xc0\xaf", "\"" FFFD FFFD "\"" },                   /* overlong '/' */
	{ "\xe0\x80\xaf", "\"" FFFD FFFD FFFD "\"" },          /* overlong '/', 3 bytes */
	{ "\xf0\x80\x80\xaf", "\"" FFFD FFFD FFFD FFFD "\"" }, /* overlong '/', 4 bytes */
	{ "\xed\xa0\x80", "\"" FFFD FFFD FFFD "\"" },          /* surrogate U+D800 */
	{ "\xed\xbf\xbf", "\"" FFFD FFFD FFFD "\"" },          /* surrogate U+DFFF */
	{ "\xf4\x90\x80\x80", "\"" FFFD FFFD FFFD FFFD "\"" }, /* U+110000 */
	{ "\xf8\x88\x80\x80\x80", "\"" FFFD FFFD FFFD FFFD FFFD "\"" }, /* 5-byte form */
	{ "\xc3", "\"" FFFD "\"" },
	{ "\xc3\n", "\"" FFFD "\\n\"" }, /* a control byte ends a sequence */
};

static void test_write_string(void **state)
{
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		char *got = string_out(strings[i].in);

		if (strcmp(got, strings[i].want))
			fail_msg("case %zu: got %s, want %s", i, got, strings[i].want);
		free(got);
	}
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
 * writer writes, for every case above. */
static void test_string_to_sink(void **state)
{
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		struct tl_text k = { 0 };

		json_string_to(tl_text_put, &k, strings[i].in);
		if (strcmp(k.s, strings[i].want))
			fail_msg("case %zu: got %s, want %s", i, k.s, strings[i].want);
		free(k.s);
	}
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
