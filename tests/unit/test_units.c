// SPDX-License-Identifier: MIT
/*
 * lib/units: durations and sizes as the agent's and the exporter's settings
 * take them, table-driven; the value is untouched on every refusal.
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

struct num_case {
	const char *s;
	int rc;
	uint64_t v;
};

static const struct num_case durations[] = {
	{"500ms", 0, 500},
	{"15s", 0, 15000},
	{"1m", 0, 60000},
	{"1h", 0, 3600000},
	{"1m30s", 0, 90000},
	{"1h 30m", 0, 5400000},
	{"2s500ms", 0, 2500},
	{" 15 s ", 0, 15000},
	{"0s", 0, 0},
	{"0ms", 0, 0},
	{"18446744073709551615ms", 0, UINT64_MAX},
	{"", -EINVAL, 0},
	{"   ", -EINVAL, 0},
	{"15", -EINVAL, 0},
	{"s", -EINVAL, 0},
	{"1.5s", -EINVAL, 0},
	{"15sec", -EINVAL, 0},
	{"15S", -EINVAL, 0},
	{"1d", -EINVAL, 0},
	{"-1s", -EINVAL, 0},
	{"1m30", -EINVAL, 0},
	{"18446744073709551616ms", -ERANGE, 0},
	{"18446744073709551615s", -ERANGE, 0},
	{"18446744073709551615ms1ms", -ERANGE, 0},
};

static const struct num_case sizes[] = {
	{"0", 0, 0},
	{"4096", 0, 4096},
	{"8B", 0, 8},
	{"10MiB", 0, 10ULL << 20},
	{"256mib", 0, 256ULL << 20},
	{"1 KiB", 0, 1024},
	{"1GiB", 0, 1ULL << 30},
	{"3TiB", 0, 3ULL << 40},
	{"1kB", 0, 1000},
	{"1KB", 0, 1000},
	{"5MB", 0, 5000000},
	{"2GB", 0, 2000000000},
	{"2TB", 0, 2000000000000ULL},
	{"8388607TiB", 0, 8388607ULL << 40},
	{"9223372036854775807", 0, INT64_MAX},
	{"", -EINVAL, 0},
	{"MiB", -EINVAL, 0},
	{"1.5GiB", -EINVAL, 0},
	{"1 MiB x", -EINVAL, 0},
	{"10M", -EINVAL, 0},
	{"10k", -EINVAL, 0},
	{"-1", -EINVAL, 0},
	{"1PiB", -EINVAL, 0},
	{"9223372036854775808", -ERANGE, 0},
	{"8388608TiB", -ERANGE, 0},
	{"99999999999999999999999", -ERANGE, 0},
};

/* Each case of @cases through @parse; the value is untouched on a refusal. */
static void run_cases(const struct num_case *cases, size_t n, int (*parse)(const char *, uint64_t *))
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 12345;
		int rc = parse(cases[i].s, &v);

		if (rc != cases[i].rc)
			fail_msg("\"%s\": rc %d, want %d", cases[i].s, rc, cases[i].rc);
		if (!rc && v != cases[i].v)
			fail_msg("\"%s\": %llu, want %llu", cases[i].s, (unsigned long long)v,
				 (unsigned long long)cases[i].v);
		if (rc)
			assert_int_equal(v, 12345);
	}
}

static void test_durations(void **state)
{
	run_cases(durations, NCASES(durations), units_duration_ms);
}

static void test_sizes(void **state)
{
	run_cases(sizes, NCASES(sizes), units_size);
}

/* The exporter's durations: days too, in nanoseconds. */
static const struct num_case durations_ns[] = {
	{"7d", 0, UINT64_C(7) * 86400 * 1000000000},
	{"1h30m", 0, UINT64_C(5400) * 1000000000},
	{"250ms", 0, UINT64_C(250) * 1000000},
	{"1d 12h", 0, UINT64_C(129600) * 1000000000},
	{"", -EINVAL, 0},
	{"7", -EINVAL, 0},
	{"7days", -EINVAL, 0},
	{"1us", -EINVAL, 0},
	{"213503d", 0, UINT64_C(213503) * 86400 * 1000000000},
	{"213504d", -ERANGE, 0},
};

static void test_durations_ns(void **state)
{
	run_cases(durations_ns, NCASES(durations_ns), units_duration_ns);
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
