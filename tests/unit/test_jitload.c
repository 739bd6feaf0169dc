// SPDX-License-Identifier: MIT
/*
 * agent/jitload: perf maps loaded by the loader thread, taken with a
 * bounded wait; a job dropped before it is done; a refused map; the helper
 * process (the agent's binary, when built beside this test) giving the
 * same map and reporting its refusals to the agent's hook.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/symbols/jitload.h"
#include "agent/symbols/refusals.h"
#include "tests/unit/testlib.h"

static char dir[64], mappath[PATH_MAX], fifopath[PATH_MAX];

static uint64_t in_ms(unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + ms * 1000000ull;
}

static int setup(void **state)
{
	char p[256];
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cgperf-jitload.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/perf-1.map", dir);
	f = fopen(p, "we");
	assert_non_null(f);
	fputs("7f0000001000 100 jit_one\n7f0000002000 80 jit_two\n", f);
	fclose(f);
	snprintf(mappath, sizeof(mappath), "/proc/%d/root%s", (int)getpid(), p);
	snprintf(p, sizeof(p), "%s/fifo.map", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	snprintf(fifopath, sizeof(fifopath), "/proc/%d/root%s", (int)getpid(), p);
	return 0;
}

static int teardown(void **state)
{
	char p[PATH_MAX];

	(void)state;
	jitload_set_helper(NULL);
	snprintf(p, sizeof(p), "%s/perf-1.map", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/fifo.map", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

/* Submit the map and the FIFO, take both; the refusal is counted. */
static void load_both(void)
{
	struct jitload *l = jitload_new();
	struct jitload_job *a, *b, *c;
	struct perfmap *m = NULL;
	struct refusals_figures f;
	int err = -1;

	assert_non_null(l);
	assert_int_equal(refusals_start(NULL, NULL), 0);
	a = jitload_submit(l, mappath);
	b = jitload_submit(l, fifopath);
	c = jitload_submit(l, mappath);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	jitload_job_free(c); /* dropped whatever its state: no leak (ASan) */
	assert_int_equal(jitload_wait(a, in_ms(5000), &m, &err), 1);
	assert_non_null(m);
	assert_int_equal(err, 0);
	assert_string_equal(perfmap_lookup(m, 0x7f0000001010), "jit_one");
	assert_string_equal(perfmap_lookup(m, 0x7f000000207f), "jit_two");
	assert_null(perfmap_lookup(m, 0x7f0000002080));
	perfmap_free(m);
	/* taken once */
	assert_int_equal(jitload_wait(a, 0, &m, &err), 1);
	assert_null(m);
	jitload_job_free(a);
	assert_int_equal(jitload_wait(b, in_ms(5000), &m, &err), 1);
	assert_null(m);
	assert_int_equal(err, EINVAL);
	jitload_job_free(b);
	refusals_figures(&f);
	assert_int_equal(f.by_reason[ROOTFS_R_SPECIAL], 1);
	refusals_stop();
	assert_true(jitload_done(l) >= 2);
	jitload_free(l);
}

static void test_thread(void **state)
{
	(void)state;
	jitload_set_helper(NULL);
	load_both();
}

static void test_helper(void **state)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	(void)state;
	assert_true(n > 0);
	exe[n] = '\0';
	/* build/tests/test_jitload -> build/cgperf-agent */
	slash = strrchr(exe, '/');
	assert_non_null(slash);
	*slash = '\0';
	slash = strrchr(exe, '/');
	assert_non_null(slash);
	snprintf(slash, sizeof(exe) - (size_t)(slash - exe), "/cgperf-agent");
	if (access(exe, X_OK) != 0)
		skip(); /* the agent is built with the tests (make build-tests) */
	jitload_set_helper(exe);
	load_both();
}

/* An empty loader, and one whose jobs are all dropped unfinished. */
static void test_lifecycle(void **state)
{
	struct jitload *l = jitload_new();

	(void)state;
	jitload_free(NULL);
	jitload_job_free(NULL);
	jitload_free(l);
	l = jitload_new();
	for (int i = 0; i < 10; i++)
		jitload_job_free(jitload_submit(l, mappath));
	jitload_free(l);
}

TL_MAIN_FIXTURE(setup, teardown, test_thread, test_helper, test_lifecycle)
