// SPDX-License-Identifier: MIT
/*
 * agent/stacks/idtab: the pid- and tid-keyed tables of the stacks engine.
 * Insert, find and delete across rebuilds, entries keeping their bytes when
 * they move, probe chains that run through tombstones, pids that come and
 * go without growing the table, and a failed allocation (NULL, the table
 * unchanged).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/stacks/idtab.h"
#include "tests/unit/testalloc.h"
#include "tests/unit/testlib.h"

struct ent {
	struct idtab_key key;
	uint64_t payload;
};

static size_t live_slots(const struct idtab *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->cap; i++)
		n += idtab_at(t, i) != NULL;
	return n;
}

static void test_insert_find_delete(void **state)
{
	struct idtab t;
	struct ent *e;

	(void)state;
	idtab_init(&t, sizeof(struct ent));
	assert_null(idtab_find(&t, 1));
	assert_null(idtab_get(&t, 0)); /* 0 marks free slots: never a key */
	for (uint32_t id = 1; id <= 1000; id++) {
		e = idtab_get(&t, id);
		assert_non_null(e);
		assert_int_equal(e->key.id, id);
		assert_int_equal(e->payload, 0);
		e->payload = id * 3u;
	}
	assert_int_equal(t.count, 1000);
	assert_true(t.count * 4 <= t.cap * 3);
	/* every entry moved through several rebuilds, bytes intact */
	for (uint32_t id = 1; id <= 1000; id++) {
		e = idtab_find(&t, id);
		assert_non_null(e);
		assert_int_equal(e->payload, id * 3u);
		assert_ptr_equal(idtab_get(&t, id), e); /* found, not inserted */
	}
	/* delete the odd ones: the even ones behind their tombstones stay found */
	for (uint32_t id = 1; id <= 1000; id += 2)
		idtab_del(&t, idtab_find(&t, id));
	assert_int_equal(t.count, 500);
	assert_int_equal(live_slots(&t), 500);
	for (uint32_t id = 1; id <= 1000; id++)
		assert_true((idtab_find(&t, id) != NULL) == (id % 2 == 0));
	/* a deleted id comes back zeroed */
	e = idtab_get(&t, 7);
	assert_non_null(e);
	assert_int_equal(e->payload, 0);
	idtab_release(&t);
	assert_null(idtab_find(&t, 8));
	idtab_release(&t);
}

/* pids that come and go (a fork storm) reuse tombstones: the table is
 * rebuilt at its size, never grown for them */
static void test_churn(void **state)
{
	struct idtab t;

	(void)state;
	idtab_init(&t, sizeof(struct ent));
	for (uint32_t id = 1; id <= 10; id++)
		assert_non_null(idtab_get(&t, id));
	for (uint32_t id = 100; id < 100000; id++) {
		assert_non_null(idtab_get(&t, id));
		idtab_del(&t, idtab_find(&t, id));
	}
	assert_int_equal(t.count, 10);
	assert_int_equal(t.cap, 64);
	for (uint32_t id = 1; id <= 10; id++)
		assert_non_null(idtab_find(&t, id));
	idtab_release(&t);
}

static void test_alloc_failure(void **state)
{
	struct idtab t;
	size_t cap;

	(void)state;
	tl_alloc_require();
	idtab_init(&t, sizeof(struct ent));
	tl_alloc_fail_at(0);
	assert_null(idtab_get(&t, 5));
	tl_alloc_reset();
	assert_int_equal(t.count, 0);
	for (uint32_t id = 1; (t.count + 1) * 4 <= t.cap * 3 || t.cap == 0; id++)
		assert_non_null(idtab_get(&t, id));
	cap = t.cap;
	tl_alloc_fail_at(0);
	assert_null(idtab_get(&t, 100000)); /* the rebuild fails: nothing lost */
	tl_alloc_reset();
	assert_int_equal(t.cap, cap);
	for (uint32_t id = 1; id <= t.count; id++)
		assert_non_null(idtab_find(&t, id));
	assert_non_null(idtab_get(&t, 100000));
	idtab_release(&t);
}

TL_MAIN(test_insert_find_delete, test_churn, test_alloc_failure)
