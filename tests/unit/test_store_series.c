// SPDX-License-Identifier: MIT
/*
 * store_series() of the SQLite store: counter deltas of two cgroups over
 * several batches summed per step (by the batch's end, or its arrival
 * when earlier), the steps of a series adding up to its running total
 * (what /metrics shows), the top series by sum, a duplicate batch counted
 * once, unsupported counters and empty ranges giving nothing, and a zero
 * step or top refused. /api/v1/series over it is test_http_series.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "wire/wire.h"
#include "exporter/store/store.h"
#include "tests/unit/testlib.h"

#define NS 1000000000ull
#define T0 (1700000000ull * NS) /* a multiple of 20 s */

static char *dir;

static int setup(void **state)
{
	dir = tl_tmpdir("test_store_series");
	return 0;
}

static int teardown(void **state)
{
	tl_rmtree(dir);
	dir = NULL;
	return 0;
}

/* Batch @seq over [@start, @start + 1 s): task-clock 2 x @k s on /web
 * (counted half the time), 3 @k ns on /db; cycles not supported on /db. */
static void put_batch(struct store *s, uint64_t seq, uint64_t start, uint64_t k, uint64_t now)
{
	struct wire_cgroup_info web = { .container_name = "nginx", .image = "nginx:1.25" };
	struct wire_batch *b = wire_batch_new("h1", NULL, "a1", "9.9", seq, start, start + NS);
	Cgperf__V1__Batch *m;
	char err[256] = "";
	int cw, cd;

	assert_non_null(b);
	cw = wire_add_cgroup(b, "/web", 11, &web);
	cd = wire_add_cgroup(b, "/db", 12, NULL);
	assert_int_equal(wire_add_counter(b, cw, "task-clock", k * NS, 100, 50, true), 0);
	assert_int_equal(wire_add_counter(b, cd, "task-clock", 3 * k, 10, 10, true), 0);
	assert_int_equal(wire_add_counter(b, cd, "cycles", 7, 0, 0, false), 0);
	m = tl_wire_roundtrip(b);
	if (store_put(s, m, now, err, sizeof(err)) < 0)
		fail_msg("store_put: %s", err);
	wire_batch_decoded_free(m);
}

struct rows {
	size_t n;
	char path[16][16], event[16][16], container[16][16];
	uint64_t t[16];
	double v[16];
};

static int take(void *arg, const struct store_series_row *r)
{
	struct rows *x = arg;

	if (x->n >= 16)
		return -ENOSPC;
	snprintf(x->path[x->n], sizeof(x->path[0]), "%s", r->cgroup->path);
	snprintf(x->event[x->n], sizeof(x->event[0]), "%s", r->event);
	snprintf(x->container[x->n], sizeof(x->container[0]), "%s", r->cgroup->container_name);
	x->t[x->n] = r->t_ns;
	x->v[x->n++] = r->value;
	return 0;
}

static int rows(struct store *s, const char *event, uint64_t from, uint64_t to, uint64_t step,
		size_t top, struct rows *x)
{
	struct store_selection sel = { .event = event, .from_ns = from, .to_ns = to };

	memset(x, 0, sizeof(*x));
	return store_series(s, &sel, step, top, take, x);
}

static int total_of(void *arg, const struct store_counter_total *t)
{
	if (!strcmp(t->path, "/web") && !strcmp(t->event, "task-clock"))
		*(double *)arg = t->total;
	return 0;
}

static void test_steps(void **state)
{
	char err[256];
	struct store *s = store_open(store_backend("sqlite"), dir, err, sizeof(err));
	struct rows x;
	double web = 0, sum = 0;

	assert_non_null(s);
	/* batches ending at T0 + 1, 11, 21, 31 s, the last arriving at T0 + 5 s
	 * (its agent's clock ahead): read at T0 + 5 s */
	for (uint64_t k = 1; k <= 4; k++)
		put_batch(s, k, T0 + (10 * k - 10) * NS, k, k < 4 ? T0 + 40 * NS : T0 + 5 * NS);
	put_batch(s, 2, T0 + 10 * NS, 2, T0 + 40 * NS); /* a duplicate: nothing */

	assert_int_equal(rows(s, "task-clock", T0, T0 + 100 * NS, 20 * NS, 10, &x), 0);
	assert_int_equal(x.n, 4); /* /db then /web, each in order of time */
	assert_string_equal(x.path[0], "/db");
	assert_int_equal(x.t[0], T0);
	assert_true(x.v[0] == 3 * (1 + 2 + 4));
	assert_int_equal(x.t[1], T0 + 20 * NS);
	assert_true(x.v[1] == 3 * 3);
	assert_string_equal(x.path[2], "/web");
	assert_string_equal(x.container[2], "nginx");
	assert_string_equal(x.container[0], "");
	assert_true(x.v[2] == 2e9 * (1 + 2 + 4));
	assert_true(x.v[3] == 2e9 * 3);
	/* the steps add up to the running total */
	assert_int_equal(store_load(s, &(struct store_visitor){ .counter = total_of, .arg = &web }),
			 0);
	sum = x.v[2] + x.v[3];
	assert_true(sum == web);

	/* the top one, by sum */
	assert_int_equal(rows(s, "task-clock", T0, T0 + 100 * NS, 60 * NS, 1, &x), 0);
	assert_int_equal(x.n, 1);
	assert_string_equal(x.path[0], "/web");
	assert_true(x.v[0] == web);
	/* every event: cycles was not counted, so it has no series */
	assert_int_equal(rows(s, NULL, T0, T0 + 100 * NS, 60 * NS, 10, &x), 0);
	assert_int_equal(x.n, 2);
	/* [from, to) by the read time */
	assert_int_equal(rows(s, "task-clock", T0 + 2 * NS, T0 + 22 * NS, 20 * NS, 10, &x), 0);
	assert_int_equal(x.n, 4);
	assert_true(x.v[2] == 2e9 * (2 + 4) && x.v[3] == 2e9 * 3);
	assert_int_equal(rows(s, "task-clock", T0 + 50 * NS, T0 + 100 * NS, 20 * NS, 10, &x), 0);
	assert_int_equal(x.n, 0);
	assert_int_equal(rows(s, "no-such", T0, T0 + 100 * NS, 20 * NS, 10, &x), 0);
	assert_int_equal(x.n, 0);
	assert_int_equal(rows(s, "task-clock", T0, T0 + 100 * NS, 0, 10, &x), -EINVAL);
	assert_int_equal(rows(s, "task-clock", T0, T0 + 100 * NS, NS, 0, &x), -EINVAL);
	store_close(s);
}

int main(void)
{
	return tl_run(TL_TESTS(test_steps), NULL, NULL, setup, teardown);
}
