// SPDX-License-Identifier: MIT
/*
 * agent/perf/offcpu: switch-outs and switch-ins read out of order from
 * several rings become waits in time order per thread; the threshold; a
 * thread that never wakes is counted up to the flush, once, and again in
 * the next interval; stacks are copied; caps refuse and count.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "agent/perf/offcpu.h"
#include "tests/unit/testlib.h"

#define MAXW 16

struct got {
	uint32_t tid[MAXW];
	uint64_t ns[MAXW], start[MAXW], leaf[MAXW];
	size_t n;
};

static void collect(void *ctx, const struct sample *s, uint64_t ns)
{
	struct got *g = ctx;

	assert_true(g->n < MAXW);
	g->tid[g->n] = s->tid;
	g->ns[g->n] = ns;
	g->start[g->n] = s->time;
	g->leaf[g->n] = s->nr_callchain ? s->callchain[s->nr_callchain - 1] : 0;
	g->n++;
}

/* A switch-out of @tid at @t whose stack's leaf-most entry is @leaf; the
 * callchain lives on this stack frame only: offcpu must copy it. */
static void out(struct offcpu *oc, uint32_t tid, uint64_t t, uint64_t leaf)
{
	uint64_t chain[3] = {(uint64_t)-128 /* PERF_CONTEXT_KERNEL */, 0x1000, leaf};
	struct sample s = {.pid = 100, .tid = tid, .time = t, .callchain = chain,
			   .nr_callchain = 3};

	assert_int_equal(offcpu_out(oc, &s), 0);
	memset(chain, 0xee, sizeof(chain));
}

/* Each test's state: its pairing, what came out of it, its figures. */
struct fx {
	struct offcpu *oc;
	struct got g;
	struct offcpu_stats st;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	*state = f;
	return f ? 0 : -1;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	offcpu_free(f->oc);
	free(f);
	return 0;
}

/* The fixture's pairing, with threshold @min_ns. */
static struct offcpu *fx_oc(void **state, uint64_t min_ns)
{
	struct fx *f = *state;
	struct offcpu_opts o = {.min_ns = min_ns};

	f->oc = offcpu_new(&o);
	assert_non_null(f->oc);
	return f->oc;
}

/* Pair everything before @upto into f->g, then read the figures. */
static void fx_pair(void **state, uint64_t upto)
{
	struct fx *f = *state;

	offcpu_pair(f->oc, upto, collect, &f->g);
	offcpu_stats(f->oc, &f->st);
}

/* The @i-th wait that came out: thread @tid, @ns long. */
static void want(const struct got *g, size_t i, uint32_t tid, uint64_t ns)
{
	assert_true(i < g->n);
	assert_int_equal(g->tid[i], tid);
	assert_int_equal(g->ns[i], ns);
}

/* CPU 1's ring read before CPU 0's: thread 7 blocks at 10 on CPU 0, wakes
 * at 30 on CPU 1, blocks at 40 on CPU 1 and wakes at 45 on CPU 0. Read in
 * ring order (in 30, out 40 / out 10, in 45) the pairs are still 10-30 and
 * 40-45, each with its own stack. */
static void test_out_of_order(void **state)
{
	struct offcpu *oc = fx_oc(state, 0);
	struct fx *f = *state;

	assert_int_equal(offcpu_in(oc, 100, 7, 30), 0);
	out(oc, 7, 40, 0xb);
	out(oc, 7, 10, 0xa);
	assert_int_equal(offcpu_in(oc, 100, 7, 45), 0);
	fx_pair(state, 100);
	assert_int_equal(f->g.n, 2);
	want(&f->g, 0, 7, 20);
	assert_int_equal(f->g.leaf[0], 0xa);
	assert_int_equal(f->g.start[0], 10);
	want(&f->g, 1, 7, 5);
	assert_int_equal(f->g.leaf[1], 0xb);
	assert_int_equal(f->st.waits, 2);
	assert_int_equal(f->st.total_ns, 25);
	assert_int_equal(f->st.held + f->st.open, 0);
}

/* Nothing at or after @upto is paired yet: the switch-in at 50 waits for
 * the next pairing, and pairs then. */
static void test_upto(void **state)
{
	struct offcpu *oc = fx_oc(state, 0);
	struct fx *f = *state;

	out(oc, 3, 10, 1);
	assert_int_equal(offcpu_in(oc, 100, 3, 50), 0);
	fx_pair(state, 50);
	assert_int_equal(f->g.n, 0);
	assert_int_equal(f->st.held, 1);
	assert_int_equal(f->st.open, 1);
	fx_pair(state, UINT64_MAX);
	assert_int_equal(f->g.n, 1);
	want(&f->g, 0, 3, 40);
}

/* Waits under the threshold are dropped and counted; a switch-in with no
 * open wait (a preemption) is counted as unmatched; a second switch-out
 * before any switch-in (a lost record) replaces the first. */
static void test_threshold_unmatched_replaced(void **state)
{
	struct offcpu *oc = fx_oc(state, 1000);
	struct fx *f = *state;

	out(oc, 1, 0, 1);
	offcpu_in(oc, 100, 1, 999);   /* 999 ns: short */
	out(oc, 2, 0, 2);
	offcpu_in(oc, 100, 2, 1000);  /* exactly the threshold: counted */
	offcpu_in(oc, 100, 3, 500);   /* nothing open */
	out(oc, 4, 100, 3);
	out(oc, 4, 200, 4);           /* the first one's switch-in was lost */
	offcpu_in(oc, 100, 4, 5200);
	fx_pair(state, UINT64_MAX);
	assert_int_equal(f->g.n, 2);
	want(&f->g, 0, 2, 1000);
	want(&f->g, 1, 4, 5000);
	assert_int_equal(f->g.leaf[1], 4);
	assert_int_equal(f->st.short_waits, 1);
	assert_int_equal(f->st.unmatched, 1);
	assert_int_equal(f->st.replaced, 1);
}

/* A thread that never wakes: counted up to each flush once it passed the
 * threshold, from the last flush on, and its rest when it wakes even if the
 * rest is short. One under the threshold at the flush is not counted yet. */
static void test_never_woken(void **state)
{
	struct offcpu *oc = fx_oc(state, 100);
	struct got *g = &((struct fx *)*state)->g;

	out(oc, 9, 1000, 9);
	out(oc, 8, 1950, 8);
	fx_pair(state, 2000);
	assert_int_equal(offcpu_flush(oc, 2000, collect, g, NULL), 2);
	assert_int_equal(g->n, 1);
	want(g, 0, 9, 1000);
	assert_int_equal(g->start[0], 1000);
	/* the next interval: 9 counted from 2000 on */
	offcpu_flush(oc, 3000, collect, g, NULL);
	assert_int_equal(g->n, 3); /* 9: 1000 more; 8: 1050 */
	assert_int_equal(g->ns[1] + g->ns[2], 2050);
	/* 9 wakes 10 ns after the flush: under the threshold, counted anyway */
	offcpu_in(oc, 100, 9, 3010);
	fx_pair(state, UINT64_MAX);
	assert_int_equal(g->n, 4);
	want(g, 3, 9, 10);
	assert_int_equal(g->start[3], 3000);
}

static bool only_8_alive(uint32_t pid, uint32_t tid)
{
	(void)pid;
	return tid == 8;
}

/* A wait whose thread is gone is dropped at the flush. */
static void test_gone(void **state)
{
	struct offcpu *oc = fx_oc(state, 0);
	struct fx *f = *state;

	out(oc, 9, 10, 9);
	out(oc, 8, 10, 8);
	fx_pair(state, UINT64_MAX);
	assert_int_equal(offcpu_flush(oc, 100, collect, &f->g, only_8_alive), 1);
	assert_int_equal(f->g.n, 1);
	want(&f->g, 0, 8, 90);
	offcpu_stats(oc, &f->st);
	assert_int_equal(f->st.gone, 1);
}

/* Caps: held events past max_held, open threads past max_threads, copies
 * past max_bytes are refused and counted; registers and user stacks are
 * copied with the sample. */
static void test_caps_and_copies(void **state)
{
	struct offcpu_opts o = {.max_held = 2, .max_threads = 1, .regs_mask = 0x7};
	struct offcpu *oc = offcpu_new(&o);
	uint64_t regs[3] = {1, 2, 3};
	uint8_t stack[16] = {5};
	struct sample s = {.pid = 1, .tid = 1, .time = 5, .regs = regs, .regs_abi = 2,
			   .stack = stack, .stack_size = 16};
	struct offcpu_stats st;
	struct got g = {0};

	(void)state;
	assert_non_null(oc);
	assert_int_equal(offcpu_out(oc, &s), 0);
	s.tid = 2;
	assert_int_equal(offcpu_out(oc, &s), 0);
	assert_int_equal(offcpu_in(oc, 1, 1, 9), -ENOSPC);
	offcpu_pair(oc, UINT64_MAX, collect, &g); /* thread 2: no room */
	offcpu_stats(oc, &st);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(st.open, 1);
	offcpu_free(oc);

	struct offcpu_opts small = {.max_bytes = 64};

	oc = offcpu_new(&small);
	assert_non_null(oc);
	assert_int_equal(offcpu_out(oc, &s), -ENOSPC);
	offcpu_free(oc);
	assert_null(offcpu_new(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_out_of_order, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_upto, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_threshold_unmatched_replaced, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_never_woken, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_gone, fx_setup, fx_teardown),
		cmocka_unit_test(test_caps_and_copies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
