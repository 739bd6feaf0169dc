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
#include <stdbool.h>
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

/* An endpoint of pair @pair on thread @tid of process 5 in cgroup 1. */
struct ev {
	uint32_t pair;
	bool end;
	uint64_t t;
	uint32_t tid;
};

struct want {
	uint32_t pair;
	uint64_t ns;
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Add @n endpoints, in this order, as the rings gave them. */
static void feed(struct latency *l, const struct ev *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(latency_add(l, e[i].pair, e[i].end, e[i].t, 1, 5, e[i].tid), 0);
}

/* Pair up to @upto: @unpaired ends without a start, then these latencies. */
static void expect(struct pairing *x, uint64_t upto, int unpaired, const struct want *w, size_t n)
{
	x->g.n = 0;
	assert_int_equal(latency_pair(x->l, upto, collect, &x->g), unpaired);
	assert_int_equal(x->g.n, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(x->g.pair[i], w[i].pair);
		assert_int_equal(x->g.ns[i], w[i].ns);
	}
}

static void test_threads_and_pairs_apart(void **state)
{
	static const struct ev ev[] = {
		{ 0, false, 100, 5 },
		{ 0, false, 200, 6 }, /* another thread */
		{ 1, false, 300, 5 }, /* another pair, same thread */
		{ 0, true, 1000, 6 },
		{ 1, true, 1100, 5 },
		{ 0, true, 1200, 5 },
	};
	/* tid 6; pair 1, tid 5; pair 0, tid 5 */
	static const struct want w[] = { { 0, 800 }, { 1, 800 }, { 0, 1100 } };

	feed(((struct pairing *)*state)->l, ev, N(ev));
	expect(*state, UINT64_MAX, 0, w, N(w));
}

static void test_unpaired_and_upto(void **state)
{
	static const struct ev ev[] = {
		{ 0, true, 50, 5 }, /* an end before any start */
		{ 0, false, 100, 5 },
		{ 0, true, 900, 5 }, /* not yet: after @upto */
	};
	static const struct ev again = { 0, true, 1000, 5 };
	struct pairing *x = *state;

	feed(x->l, ev, N(ev));
	expect(x, 500, 1, NULL, 0);
	assert_int_equal(latency_held(x->l), 1);
	expect(x, UINT64_MAX, 0, (const struct want[]){ { 0, 800 } }, 1);
	/* the interval is closed: a second end has no start */
	feed(x->l, &again, 1);
	expect(x, UINT64_MAX, 1, NULL, 0);
}

static void test_same_instant_and_restart(void **state)
{
	static const struct ev ev[] = {
		/* an end and a start at one instant: the start goes first (0 ns) */
		{ 0, true, 100, 5 },
		{ 0, false, 100, 5 },
		/* a second start replaces the open one, as a recursive entry would */
		{ 0, false, 200, 5 },
		{ 0, false, 300, 5 },
		{ 0, true, 350, 5 },
	};
	static const struct want w[] = { { 0, 0 }, { 0, 50 } };

	feed(((struct pairing *)*state)->l, ev, N(ev));
	expect(*state, UINT64_MAX, 0, w, N(w));
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
