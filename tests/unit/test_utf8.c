// SPDX-License-Identifier: MIT
/*
 * lib/utf8: one table of sequences, well-formed or not, with the length
 * and code point utf8_decode() must give, and utf8_valid() over prefixes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "lib/utf8.h"
#include "tests/unit/testlib.h"

static const struct {
	const char *in;
	size_t n;     /* bytes offered; 0: strlen */
	size_t len;   /* what utf8_decode() returns */
	uint32_t cp;  /* and its code point, when len > 0 */
} seqs[] = {
	{ "A", 0, 1, 'A' },
	{ "\x01", 0, 1, 1 },
	{ "\x7f", 0, 1, 0x7f },
	{ "\xc2\x80", 0, 2, 0x80 },
	{ "\xc3\xa9", 0, 2, 0xe9 },
	{ "\xdf\xbf", 0, 2, 0x7ff },
	{ "\xe0\xa0\x80", 0, 3, 0x800 },
	{ "\xe6\x97\xa5", 0, 3, 0x65e5 },
	{ "\xef\xbf\xbd", 0, 3, 0xfffd },
	{ "\xef\xbf\xbf", 0, 3, 0xffff }, /* a noncharacter, but UTF-8 */
	{ "\xf0\x90\x80\x80", 0, 4, 0x10000 },
	{ "\xf0\x9f\x98\x80", 0, 4, 0x1f600 },
	{ "\xf4\x8f\xbf\xbf", 0, 4, 0x10ffff },
	{ "\x80", 0, 0, 0 },             /* lone continuation */
	{ "\xbf", 0, 0, 0 },
	{ "\xc0\xaf", 0, 0, 0 },         /* overlong */
	{ "\xc1\xbf", 0, 0, 0 },
	{ "\xe0\x80\xaf", 0, 0, 0 },
	{ "\xe0\x9f\xbf", 0, 0, 0 },
	{ "\xf0\x80\x80\xaf", 0, 0, 0 },
	{ "\xf0\x8f\xbf\xbf", 0, 0, 0 },
	{ "\xed\xa0\x80", 0, 0, 0 },     /* surrogates */
	{ "\xed\xbf\xbf", 0, 0, 0 },
	{ "\xf4\x90\x80\x80", 0, 0, 0 }, /* past U+10FFFF */
	{ "\xf5\x80\x80\x80", 0, 0, 0 },
	{ "\xf8\x88\x80\x80", 0, 0, 0 },
	{ "\xff", 0, 0, 0 },
	{ "\xc3", 0, 0, 0 },             /* truncated */
	{ "\xe6\x97", 0, 0, 0 },
	{ "\xe6\x97x", 0, 0, 0 },
	{ "\xc3\xa9", 1, 0, 0 },         /* well-formed, but cut by @n */
	{ "\xf0\x9f\x98\x80", 3, 0, 0 },
};

static void test_decode(void **state)
{
	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		size_t n = seqs[i].n ? seqs[i].n : strlen(seqs[i].in);
		uint32_t cp = 0xdeadbeef;
		size_t len = utf8_decode(seqs[i].in, n, &cp);

		if (len != seqs[i].len)
			fail_msg("case %zu: length %zu, want %zu", i, len, seqs[i].len);
		if (len && cp != seqs[i].cp)
			fail_msg("case %zu: U+%04X, want U+%04X", i, cp, seqs[i].cp);
		if (!len && cp != 0xdeadbeef)
			fail_msg("case %zu: code point written on failure", i);
		assert_int_equal(utf8_decode(seqs[i].in, n, NULL), len);
	}
}

static void test_valid(void **state)
{
	static const struct {
		const char *in;
		size_t want;
	} cases[] = {
		{ "", 0 },
		{ "plain", 5 },
		{ "caf\xc3\xa9", 5 },
		{ "caf\xc3", 3 },
		{ "ab\xff" "cd", 2 },
		{ "\xe6\x97\xa5\xe6\x9c\xac!", 7 },
		{ "x\xed\xa0\x80y", 1 },
		{ "\x80", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (utf8_valid(cases[i].in, strlen(cases[i].in)) != cases[i].want)
			fail_msg("case %zu: %zu, want %zu", i,
				 utf8_valid(cases[i].in, strlen(cases[i].in)), cases[i].want);
	/* a NUL is a valid byte: the length given counts, not strlen */
	assert_int_equal(utf8_valid("a\0b", 3), 3);
}

/* Every lead byte with every second byte: the decoder agrees with the
 * rule "0xC2..0xDF then a continuation" for two-byte forms. */
static void test_two_byte_table(void **state)
{
	for (int a = 0x80; a < 0x100; a++)
		for (int b = 0; b < 0x100; b++) {
			char s[2] = { (char)a, (char)b };
			size_t want = a >= 0xc2 && a <= 0xdf && (b & 0xc0) == 0x80 ? 2 : 0;

			if (a < 0xe0 && utf8_decode(s, 2, NULL) != want)
				fail_msg("%02x %02x", a, b);
		}
}

TL_MAIN(test_decode, test_valid, test_two_byte_table)
