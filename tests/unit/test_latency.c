// SPDX-License-Identifier: MIT
/*
 * agent/perf/latency: endpoints read out of order from several rings are
 * paired in time order per thread and pair; ends without a start are
 * counted; nothing newer than the drain instant is paired early. Keyed pairs
 * (block requests by dev, sector): out of order, the start's cgroup, unpaired
 * ends, replaced, timed-out and refused starts.
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

static void collect(void *ctx, uint32_t pair, uint64_t cgroup, uint32_t pid, uint64_t end,
		    uint64_t ns)
{
	struct got *g = ctx;

	(void)end;
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
	/* Nothing held yet: pairing is a no-op (no array at all). */
	assert_int_equal(latency_pair(l, 1000, NULL, NULL), 0);
	assert_int_equal(latency_add(l, 0, false, 1, 1, 1, 1), 0);
	assert_int_equal(latency_add(l, 0, true, 2, 1, 1, 1), 0);
	assert_int_equal(latency_add(l, 0, false, 3, 1, 1, 1), -ENOSPC);
	assert_int_equal(latency_held(l), 2);
	latency_free(l);
	latency_free(NULL);
}

/* What test_rounds saw: intervals, their sum, the last end time. */
struct rounds_got {
	uint64_t n, ns, last_end;
	bool in_order;
};

static void rounds_collect(void *ctx, uint32_t pair, uint64_t cgroup, uint32_t pid, uint64_t end,
			   uint64_t ns)
{
	struct rounds_got *g = ctx;

	(void)pair, (void)cgroup, (void)pid;
	g->in_order &= end >= g->last_end;
	g->last_end = end;
	g->n++;
	g->ns += ns;
}

/*
 * Many rounds as trace runs them: 4 threads each call in a loop (start,
 * end 1..64 ns later, the next start 1..64 ns after that), each hit on one
 * of 3 rings and written up to 100 ns after its time; at each drain
 * instant the rings are read one after the other and the endpoints older
 * than the instant - 300 ns (the slack) are paired. Every call is paired,
 * to its own duration, in time order: the held ones, merged with each
 * round's new runs, stay sorted.
 */
static void test_rounds(void **state)
{
	enum { THREADS = 4, RINGS = 3, HITS = 4000, SLACK = 300 };
	struct { uint64_t t, seen; bool end; uint32_t tid; } *e = calloc(HITS, sizeof(*e));
	struct latency *l = latency_new(HITS);
	struct rounds_got g = {.in_order = true};
	struct latency_stats st;
	uint64_t next[THREADS] = {0}, want_ns = 0, rng = 42, drained = 0;
	size_t n = 0;

	(void)state;
	assert_non_null(e);
	assert_non_null(l);
	for (uint32_t tid = 0; n + 2 <= HITS; tid = (tid + 1) % THREADS) {
		for (int k = 0; k < 2; k++, n++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			next[tid] += 1 + (rng >> 33) % 64;
			e[n].t = next[tid];
			e[n].seen = e[n].t + (rng >> 20) % 100;
			e[n].end = k;
			e[n].tid = tid;
			if (k)
				want_ns += e[n].t - e[n - 1].t;
		}
	}
	for (uint64_t now = 500; drained < n; now += 500) {
		for (int ring = 0; ring < RINGS; ring++)
			for (size_t i = 0; i < n; i++)
				if (i % RINGS == (size_t)ring && e[i].seen < now && e[i].seen >= now - 500) {
					assert_int_equal(latency_add(l, 0, e[i].end, e[i].t, 1, 1, e[i].tid), 0);
					drained++;
				}
		assert_int_equal(latency_pair(l, now - SLACK, rounds_collect, &g), 0);
	}
	assert_int_equal(latency_pair(l, UINT64_MAX, rounds_collect, &g), 0);
	assert_int_equal(g.n, n / 2);
	assert_int_equal(g.ns, want_ns);
	assert_true(g.in_order);
	assert_int_equal(latency_held(l), 0);
	latency_stats(l, &st);
	assert_int_equal(st.late, 0);
	latency_free(l);
	free(e);
}

/* A keyed endpoint of pair 0: (dev, sector) = (8, @sector), from cgroup
 * @cg (starts) or from interrupt context, cgroup 99 (ends). */
static void keyed(struct latency *l, bool end, uint64_t t, uint64_t sector, uint64_t cg)
{
	const uint64_t key[2] = {8, sector};

	assert_int_equal(latency_add_key(l, 0, end, t, end ? 99 : cg, end ? 0 : 42, key, 2), 0);
}

/* The table's figures now. */
static struct latency_stats stats(struct pairing *x)
{
	struct latency_stats st;

	latency_stats(x->l, &st);
	return st;
}

static void test_keyed_out_of_order(void **state)
{
	struct pairing *x = *state;

	/* Completions read first (another CPU's ring), and out of issue order. */
	keyed(x->l, true, 700, 2000, 0);
	keyed(x->l, true, 500, 1000, 0);
	keyed(x->l, false, 100, 1000, 7);
	keyed(x->l, false, 200, 2000, 8);
	expect(x, UINT64_MAX, 0, (const struct want[]){ { 0, 400 }, { 0, 500 } }, 2);
	/* The start's cgroup and pid, not the completion's. */
	assert_int_equal(x->g.cgroup[0], 7);
	assert_int_equal(x->g.cgroup[1], 8);
	assert_int_equal(x->g.pid[0], 42);
	assert_int_equal(stats(x).paired, 2);
	assert_int_equal(stats(x).pending, 0);
	assert_int_equal(stats(x).unpaired_end, 0);
}

static void test_keyed_unpaired_pending_replaced(void **state)
{
	struct pairing *x = *state;
	const uint64_t other[2] = {9, 1000}; /* another device, same sector */

	keyed(x->l, true, 50, 1000, 0); /* a completion of a request issued before */
	keyed(x->l, false, 100, 1000, 7);
	keyed(x->l, false, 150, 1000, 7); /* re-issued: replaces the first */
	assert_int_equal(latency_add_key(x->l, 0, true, 300, 99, 0, other, 2), 0);
	keyed(x->l, false, 400, 3000, 7); /* never completes */
	keyed(x->l, true, 450, 1000, 0);
	expect(x, UINT64_MAX, 2, (const struct want[]){ { 0, 300 } }, 1);
	assert_int_equal(stats(x).unpaired_end, 2);
	assert_int_equal(stats(x).replaced, 1);
	assert_int_equal(stats(x).pending, 1);
	assert_int_equal(stats(x).timed_out, 0);
	assert_int_equal(latency_add_key(x->l, 0, false, 1, 1, 1, other, 0), -EINVAL);
	assert_int_equal(latency_add_key(x->l, 0, false, 1, 1, 1, other, LATENCY_KEY_MAX + 1),
			 -EINVAL);
}

static void test_keyed_timeout(void **state)
{
	struct pairing *x = *state;

	latency_set_bounds(x->l, 1000, 0);
	keyed(x->l, false, 100, 1, 7);
	keyed(x->l, false, 1500, 2, 7);
	/* At 2000 the first start waited 1900 ns: gone; the second stays. */
	expect(x, 2000, 0, NULL, 0);
	assert_int_equal(stats(x).timed_out, 1);
	assert_int_equal(stats(x).pending, 1);
	/* Its late completion is an orphan now; the second pairs. */
	keyed(x->l, true, 2100, 1, 0);
	keyed(x->l, true, 2200, 2, 0);
	expect(x, 3000, 1, (const struct want[]){ { 0, 700 } }, 1);
	assert_int_equal(stats(x).pending, 0);
	assert_int_equal(stats(x).unpaired_end, 1);
	assert_int_equal(stats(x).late, 0);
	/* A hit older than 3000, where pairing went already: late. */
	keyed(x->l, false, 2500, 9, 7);
	assert_int_equal(stats(x).late, 1);
}

static void test_keyed_bound(void **state)
{
	struct pairing *x = *state;

	latency_set_bounds(x->l, 0, 3);
	for (uint64_t s = 0; s < 5; s++)
		keyed(x->l, false, 100 + s, s, 7);
	expect(x, 1000, 0, NULL, 0);
	assert_int_equal(stats(x).pending, 3);
	assert_int_equal(stats(x).dropped, 2);
	/* The table has room again once starts complete (removal keeps the
	 * index right: the last pending start moves into the hole). */
	keyed(x->l, true, 1100, 0, 0);
	keyed(x->l, true, 1200, 2, 0);
	keyed(x->l, true, 1300, 1, 0);
	keyed(x->l, true, 1400, 4, 0); /* was dropped */
	expect(x, 2000, 1, (const struct want[]){ { 0, 1000 }, { 0, 1098 }, { 0, 1199 } }, 3);
	assert_int_equal(stats(x).pending, 0);
	assert_int_equal(stats(x).paired, 3);
}

/* Keyed and thread pairs side by side in one table. */
static void test_keyed_and_thread(void **state)
{
	struct pairing *x = *state;

	assert_int_equal(latency_add(x->l, 1, false, 100, 1, 5, 5), 0);
	keyed(x->l, false, 150, 5, 7); /* key (8, 5): not thread 5 */
	assert_int_equal(latency_add(x->l, 1, true, 300, 1, 5, 5), 0);
	keyed(x->l, true, 400, 5, 0);
	expect(x, UINT64_MAX, 0, (const struct want[]){ { 1, 200 }, { 0, 250 } }, 2);
}

int main(void)
{
	int failed = tl_run(TL_TESTS(test_out_of_order, test_threads_and_pairs_apart,
				     test_unpaired_and_upto, test_same_instant_and_restart,
				     test_keyed_out_of_order, test_keyed_unpaired_pending_replaced,
				     test_keyed_timeout, test_keyed_bound, test_keyed_and_thread),
			    NULL, NULL, pairing_setup, pairing_teardown);

	return failed + tl_run(TL_TESTS(test_cap, test_rounds), NULL, NULL, NULL, NULL);
}
