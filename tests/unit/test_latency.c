// SPDX-License-Identifier: MIT
/*
 * agent/perf/latency: endpoints read out of order from several rings are
 * paired in time order per thread and pair; ends without a start are
 * counted; nothing newer than the drain instant is paired early.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "agent/perf/latency.h"
#include "tests/unit/testlib.h"

struct got {
	uint32_t pair[16], pid[16];
	uint64_t cgroup[16], ns[16];
	size_t n;
};

static void collect(void *ctx, uint32_t pair, uint64_t cgroup, uint32_t pid, uint64_t ns)
{
	struct got *g = ctx;

	assert_true(g->n < 16);
	g->pair[g->n] = pair;
	g->cgroup[g->n] = cgroup;
	g->pid[g->n] = pid;
	g->ns[g->n++] = ns;
}

/* A latency pairing of 100 held events and what it paired: a fixture. */
struct pairing {
	struct latency *l;
	struct got g;
};

static int pairing_setup(void **state)
{
	struct pairing *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	x->l = latency_new(100);
	assert_non_null(x->l);
	*state = x;
	return 0;
}

static int pairing_teardown(void **state)
{
	struct pairing *x = *state;

	latency_free(x->l);
	free(x);
	return 0;
}

static void test_out_of_order(void **state)
{
	struct pairing *x = *state;
	struct latency *l = x->l;
	struct got *g = &x->g;

	/* CPU 0's ring: the end; CPU 1's ring, read later: the start. */
	assert_int_equal(latency_add(l, 0, true, 1500, 7, 10, 11), 0);
	assert_int_equal(latency_add(l, 0, false, 1000, 7, 10, 11), 0);
	assert_int_equal(latency_pair(l, UINT64_MAX, collect, g), 0);
	assert_int_equal(g->n, 1);
	assert_int_equal(g->ns[0], 500);
	assert_int_equal(g->cgroup[0], 7);
	assert_int_equal(g->pid[0], 10);
	assert_int_equal(latency_held(l), 0);
}

static void test_threads_and_pairs_apart(void **state)
{
	struct pairing *x = *state;
	struct latency *l = x->l;
	struct got *g = &x->g;

	latency_add(l, 0, false, 100, 1, 5, 5);
	latency_add(l, 0, false, 200, 1, 5, 6);  /* another thread */
	latency_add(l, 1, false, 300, 1, 5, 5);  /* another pair, same thread */
	latency_add(l, 0, true, 1000, 1, 5, 6);
	latency_add(l, 1, true, 1100, 1, 5, 5);
	latency_add(l, 0, true, 1200, 1, 5, 5);
	assert_int_equal(latency_pair(l, UINT64_MAX, collect, g), 0);
	assert_int_equal(g->n, 3);
	assert_int_equal(g->pair[0], 0);
	assert_int_equal(g->ns[0], 800);  /* tid 6 */
	assert_int_equal(g->pair[1], 1);
	assert_int_equal(g->ns[1], 800);  /* pair 1, tid 5 */
	assert_int_equal(g->pair[2], 0);
	assert_int_equal(g->ns[2], 1100); /* pair 0, tid 5 */
}

static void test_unpaired_and_upto(void **state)
{
	struct pairing *x = *state;
	struct latency *l = x->l;
	struct got *g = &x->g;

	latency_add(l, 0, true, 50, 1, 5, 5);    /* an end before any start */
	latency_add(l, 0, false, 100, 1, 5, 5);
	latency_add(l, 0, true, 900, 1, 5, 5);   /* not yet: after @upto */
	assert_int_equal(latency_pair(l, 500, collect, g), 1);
	assert_int_equal(g->n, 0);
	assert_int_equal(latency_held(l), 1);
	assert_int_equal(latency_pair(l, UINT64_MAX, collect, g), 0);
	assert_int_equal(g->n, 1);
	assert_int_equal(g->ns[0], 800);
	/* the interval is closed: a second end has no start */
	latency_add(l, 0, true, 1000, 1, 5, 5);
	assert_int_equal(latency_pair(l, UINT64_MAX, collect, g), 1);
}

static void test_same_instant_and_restart(void **state)
{
	struct pairing *x = *state;
	struct latency *l = x->l;
	struct got *g = &x->g;

	/* an end and a start at one instant: the start goes first (0 ns) */
	latency_add(l, 0, true, 100, 1, 5, 5);
	latency_add(l, 0, false, 100, 1, 5, 5);
	/* a second start replaces the open one, as a recursive entry would */
	latency_add(l, 0, false, 200, 1, 5, 5);
	latency_add(l, 0, false, 300, 1, 5, 5);
	latency_add(l, 0, true, 350, 1, 5, 5);
	assert_int_equal(latency_pair(l, UINT64_MAX, collect, g), 0);
	assert_int_equal(g->n, 2);
	assert_int_equal(g->ns[0], 0);
	assert_int_equal(g->ns[1], 50);
}

static void test_cap(void **state)
{
	struct latency *l = latency_new(2);

	(void)state;
	assert_int_equal(latency_add(l, 0, false, 1, 1, 1, 1), 0);
	assert_int_equal(latency_add(l, 0, true, 2, 1, 1, 1), 0);
	assert_int_equal(latency_add(l, 0, false, 3, 1, 1, 1), -ENOSPC);
	assert_int_equal(latency_held(l), 2);
	latency_free(l);
	latency_free(NULL);
}

int main(void)
{
	int failed = tl_run(TL_TESTS(test_out_of_order, test_threads_and_pairs_apart,
				     test_unpaired_and_upto, test_same_instant_and_restart),
			    NULL, NULL, pairing_setup, pairing_teardown);

	return failed + tl_run(TL_TESTS(test_cap), NULL, NULL, NULL, NULL);
}
