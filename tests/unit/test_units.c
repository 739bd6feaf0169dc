// SPDX-License-Identifier: MIT
/*
 * lib/units: durations and sizes as the agent's and the exporter's settings
 * take them, table-driven (tests/unit/data/units_*.tsv); the value is
 * untouched on every refusal.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "lib/units.h"
#include "tests/unit/testlib.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

/* The error a case wants: "-EINVAL" or "-ERANGE"; 0 for a value. */
static int want_error(const char *want)
{
	if (!strcmp(want, "-EINVAL"))
		return -EINVAL;
	return strcmp(want, "-ERANGE") ? 0 : -ERANGE;
}

/* The cases of tests/unit/data/@name through @parse: a text, then the
 * value it parses to or the error (-EINVAL, -ERANGE); the value is
 * untouched on a refusal. */
static void run_cases(const char *name, int (*parse)(const char *, uint64_t *))
{
	struct tl_table *t = tl_table_load(name, 2);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *text = tl_table_row(t, i)[0], *want = tl_table_row(t, i)[1];
		int want_rc = want_error(want);
		uint64_t v = 12345;
		int rc = parse(text, &v);

		if (rc != want_rc)
			fail_msg("%s: \"%s\": rc %d, want %s", tl_table_where(t, i), text, rc, want);
		if (!rc && v != tl_table_u64(t, i, 1))
			fail_msg("%s: \"%s\": %llu, want %s", tl_table_where(t, i), text,
				 (unsigned long long)v, want);
		if (rc)
			assert_int_equal(v, 12345);
	}
	tl_table_free(t);
}

static void test_durations(void **state)
{
	run_cases("units_duration_ms.tsv", units_duration_ms);
}

static void test_sizes(void **state)
{
	run_cases("units_size.tsv", units_size);
}

/* The exporter's durations: days too, in nanoseconds. */
static void test_durations_ns(void **state)
{
	run_cases("units_duration_ns.tsv", units_duration_ns);
	assert_int_equal(units_duration_ns(NULL, &(uint64_t){ 0 }), -EINVAL);
}

static void test_digits(void **state)
{
	const char *s = "8080x";
	uint64_t v = 0;

	assert_int_equal(units_digits(&s, &v), 0);
	assert_int_equal(v, 8080);
	assert_string_equal(s, "x");
	assert_int_equal(units_digits(&s, &v), -EINVAL);
	s = "99999999999999999999";
	assert_int_equal(units_digits(&s, &v), -ERANGE);
}

/* Formatting gives the shortest exact spelling, and it parses back. */
static void test_format(void **state)
{
	static const struct {
		bool size; /* else a duration in ms */
		uint64_t v;
		const char *text;
	} cases[] = {
		{ false, 0, "0s" },	    { false, 1, "1ms" },	 { false, 999, "999ms" },
		{ false, 1000, "1s" },	    { false, 1500, "1500ms" },	 { false, 60000, "1m" },
		{ false, 90000, "90s" },    { false, 3600000, "1h" },	 { false, 7200000, "2h" },
		{ true, 0, "0" },	    { true, 1000, "1000" },	 { true, 1024, "1KiB" },
		{ true, 1536, "1536" },	    { true, UNITS_MIB * 256, "256MiB" },
		{ true, UNITS_GIB, "1GiB" }, { true, UNITS_TIB * 3, "3TiB" },
	};

	for (size_t i = 0; i < NCASES(cases); i++) {
		uint64_t back = 0;
		char buf[32];

		if (cases[i].size)
			units_format_size(cases[i].v, buf, sizeof(buf));
		else
			units_format_duration_ms(cases[i].v, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
		assert_int_equal(cases[i].size ? units_size(buf, &back)
					       : units_duration_ms(buf, &back), 0);
		assert_int_equal(back, cases[i].v);
	}
}

TL_MAIN(test_durations, test_durations_ns, test_sizes, test_digits, test_format)
