// SPDX-License-Identifier: MIT
/*
 * agent/cpumap: kernel CPU lists as /sys writes them and as nothing should,
 * and the host's online CPUs.
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
#include <unistd.h>

#include "agent/perf/cpumap.h"
#include "tests/unit/testlib.h"

#define MAX_CPUS 16

struct good_case {
	const char *text;
	int n;
	int cpus[MAX_CPUS];
};

static const struct good_case good[] = {
	{ "0", 1, { 0 } },
	{ "0\n", 1, { 0 } },
	{ "0-3", 4, { 0, 1, 2, 3 } },
	{ "0-3,8,10-11\n", 7, { 0, 1, 2, 3, 8, 10, 11 } },
	{ "5-5", 1, { 5 } },
	{ "1,3,5", 3, { 1, 3, 5 } },
	{ "007", 1, { 7 } },
	{ "65535", 1, { 65535 } },
	/* only the first line counts */
	{ "2-3\n7\n", 2, { 2, 3 } },
};

static const char *const bad[] = {
	"",
	"\n",
	"a",
	"3-1",
	"1,,2",
	",1",
	"-1",
	"1-",
	"1--2",
	"1-a",
	"0-3;4",
	" 1",
	"1 ",
	"+1",
	"0x1",
	"1.5",
	"99999999",
	"65536",
	"0-65536",
	"99999999999999999999999",
	"0-65535,0", /* more entries than the cap */
};

static void test_parse_good(void **state)
{
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int *cpus = NULL;
		int n = cpumap_parse(good[i].text, &cpus);

		if (n != good[i].n)
			fail_msg("\"%s\": %d CPUs, want %d", good[i].text, n, good[i].n);
		assert_non_null(cpus);
		for (int j = 0; j < n; j++)
			if (cpus[j] != good[i].cpus[j])
				fail_msg("\"%s\": cpu[%d] = %d, want %d", good[i].text, j, cpus[j],
					 good[i].cpus[j]);
		free(cpus);
	}
}

static void test_parse_bad(void **state)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int sentinel, *cpus = &sentinel;
		int n = cpumap_parse(bad[i], &cpus);

		if (n != -EINVAL)
			fail_msg("\"%s\": %d, want -EINVAL", bad[i], n);
		/* the out-parameter is untouched on failure */
		assert_ptr_equal(cpus, &sentinel);
	}
}

/* The largest range allowed parses whole; one CPU more is refused. */
static void test_parse_full_range(void **state)
{
	int *cpus = NULL;
	int n = cpumap_parse("0-65535", &cpus);

	assert_int_equal(n, 65536);
	assert_int_equal(cpus[0], 0);
	assert_int_equal(cpus[65535], 65535);
	free(cpus);
}

static void test_online(void **state)
{
	int *cpus = NULL;
	int n = cpumap_online(&cpus);

	if (n < 1)
		fail_msg("cpumap_online: %d", n);
	assert_non_null(cpus);
	for (int i = 0; i < n; i++) {
		assert_true(cpus[i] >= 0);
		if (i > 0)
			assert_true(cpus[i] > cpus[i - 1]);
	}
	/* Same source as glibc's count of online CPUs. */
	assert_int_equal(n, sysconf(_SC_NPROCESSORS_ONLN));
	free(cpus);
}

TL_MAIN(test_parse_good, test_parse_bad, test_parse_full_range, test_online)
