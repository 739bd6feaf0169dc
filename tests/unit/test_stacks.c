// SPDX-License-Identifier: MIT
/*
 * agent/stacks/stacks*.c: the engine from samples to folded stacks, fed
 * samples of this very process made by hand (frame-pointer mode: the
 * callchain is what the kernel would have walked), so the expected names
 * are the test's own functions. Folding identical stacks and their counts,
 * comm names, the frames with their module and build-id (the build-id
 * being the binary's dso's), objects interned once per binary and shared
 * as dsos, a return address outside every mapping cut as "[bad return
 * address]", per-cgroup labels off, reset, the gc that drops the
 * objects of a process that exited, and the sampled addresses as annotate
 * takes them (stacks_foreach_leaf).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/stacks/stacks.h"
#include "agent/symbols/dso.h"
#include "agent/symbols/symtab.h"
#include "tests/unit/testlib.h"

/* Functions with known names: the frames of the hand-made stacks. */
int stk_leaf(int x);
int stk_mid(int x);
int stk_root(int x);

__attribute__((noinline, noclone)) int stk_leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline, noclone)) int stk_mid(int x)
{
	return stk_leaf(x) + 2;
}

__attribute__((noinline, noclone)) int stk_root(int x)
{
	return stk_mid(x) + 5;
}

#define AT(fn) ((uint64_t)(uintptr_t)(fn) + 4) /* an address inside @fn */

struct hand_sample {
	uint64_t chain[8];
	struct sample s;
};

/* A user-mode sample of this process whose stack is @n addresses, leaf first. */
static void hand_make(struct hand_sample *h, const uint64_t *ips, size_t n)
{
	h->chain[0] = PERF_CONTEXT_USER;
	memcpy(h->chain + 1, ips, n * sizeof(*ips));
	h->s = (struct sample){
		.pid = (uint32_t)getpid(),
		.tid = (uint32_t)syscall(SYS_gettid),
		.ip = ips[0],
		.user_mode = true,
		.callchain = h->chain,
		.nr_callchain = n + 1,
	};
}

static char *folded(struct stacks *st, size_t *nlines)
{
	FILE *f = tl_capture_begin();

	assert_int_equal(stacks_write(st, f, nlines), 0);
	return tl_capture_end(f);
}

static struct stacks *engine(void)
{
	struct stacks *st = stacks_new(STACKS_FP, false, NULL);

	assert_non_null(st);
	stacks_comm(st, (uint32_t)getpid(), (uint32_t)syscall(SYS_gettid), "stktest", false, 0);
	return st;
}

static void test_fold(void **state)
{
	const uint64_t full[] = { AT(stk_leaf), AT(stk_mid), AT(stk_root) };
	const uint64_t part[] = { AT(stk_mid), AT(stk_root) };
	struct stacks *st = engine();
	struct hand_sample a, b;
	struct stacks_stats stats;
	size_t n;
	char *text;

	(void)state;
	assert_int_equal(stk_root(1), 11);
	hand_make(&a, full, 3);
	hand_make(&b, part, 2);
	stacks_add(st, &a.s, NULL);
	stacks_add(st, &b.s, NULL);
	stacks_add(st, &a.s, NULL);
	stacks_add(st, &a.s, "probe:x");
	text = folded(st, &n);
	assert_int_equal(n, 3);
	assert_non_null(strstr(text, "stktest;stk_root;stk_mid;stk_leaf 2\n"));
	assert_non_null(strstr(text, "stktest;stk_root;stk_mid 1\n"));
	assert_non_null(strstr(text, "probe:x;stktest;stk_root;stk_mid;stk_leaf 1\n"));
	free(text);

	stacks_stats(st, &stats);
	assert_int_equal(stats.kept, 4);
	assert_int_equal(stats.distinct, 3);
	assert_int_equal(stats.objects, 1); /* one binary: this test */
	assert_int_equal(stats.processes, 1);

	/* a new interval: counts go, objects stay */
	assert_int_equal(stacks_reset(st), 0);
	text = folded(st, &n);
	assert_int_equal(n, 0);
	free(text);
	stacks_stats(st, &stats);
	assert_int_equal(stats.objects, 1);
	stacks_free(st);
}

struct frames_seen {
	size_t stacks;
	char module[4096];
	char build_id[130];
	const char *names[8];
	size_t n;
};

static void on_frames(void *ctx, uint64_t cgroup_id, const struct stacks_frame *frames, size_t n,
		      uint64_t count)
{
	struct frames_seen *fs = ctx;

	(void)cgroup_id;
	assert_int_equal(count, 1);
	fs->stacks++;
	assert_int_equal(n, 4);
	assert_string_equal(frames[0].name, "stktest");
	assert_null(frames[0].module);
	assert_string_equal(frames[3].name, "stk_leaf");
	assert_non_null(frames[3].module);
	snprintf(fs->module, sizeof(fs->module), "%s", frames[3].module);
	snprintf(fs->build_id, sizeof(fs->build_id), "%s", frames[3].build_id);
}

/* Frames name their binary and its build-id: the dso's, opened once. */
static void test_frames_and_dso(void **state)
{
	const uint64_t full[] = { AT(stk_leaf), AT(stk_mid), AT(stk_root) };
	struct frames_seen fs = { 0 };
	struct stacks *st;
	struct hand_sample a;
	struct dso *self;
	char exe[4096];
	ssize_t len;
	uint64_t opens;

	(void)state;
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	st = engine();
	opens = dso_opens();
	hand_make(&a, full, 3);
	for (int i = 0; i < 100; i++)
		stacks_add(st, &a.s, NULL);
	assert_int_equal(dso_opens(), opens + 1); /* interned once, not per sample */
	assert_int_equal(stacks_reset(st), 0);
	stacks_add(st, &a.s, NULL);
	assert_int_equal(stacks_foreach_frames(st, on_frames, &fs), 0);
	assert_int_equal(fs.stacks, 1);
	assert_string_equal(fs.module, exe);

	/* the engine's object is this binary's dso: found by its key, not reopened */
	self = dso_open(exe, 0, 0);
	assert_non_null(self);
	assert_string_equal(fs.build_id, dso_build_id_hex(self));
	assert_true(strlen(fs.build_id) >= 2);
	dso_put(self);
	stacks_free(st);
}

/* A return address in no mapping of the process: the frames above it are
 * dropped and a marker takes the root's place. */
static void test_bad_return_address(void **state)
{
	const uint64_t bad[] = { AT(stk_leaf), AT(stk_mid), 0x10, AT(stk_root) };
	struct stacks *st = engine();
	struct stacks_stats stats;
	struct hand_sample a;
	size_t n;
	char *text;

	(void)state;
	hand_make(&a, bad, 4);
	stacks_add(st, &a.s, NULL);
	text = folded(st, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(text, "stktest;[bad return address];stk_mid;stk_leaf 1\n"));
	free(text);
	stacks_stats(st, &stats);
	assert_int_equal(stats.truncated[STACKS_TRUNC_BAD_ADDRESS], 1);
	stacks_free(st);
}

/* Once the process is gone and its stacks folded, its objects go, and
 * with them the dso the engine held. */
static void test_gc_drops_objects(void **state)
{
	const uint64_t full[] = { AT(stk_leaf), AT(stk_mid), AT(stk_root) };
	struct stacks *st = engine();
	struct stacks_stats stats;
	struct hand_sample a;
	size_t live;

	(void)state;
	live = dso_live();
	hand_make(&a, full, 3);
	stacks_add(st, &a.s, NULL);
	assert_int_equal(dso_live(), live + 1);
	stacks_exit(st, a.s.pid, a.s.tid);
	assert_int_equal(stacks_reset(st), 0);
	for (int i = 0; i < 3; i++)
		stacks_gc(st);
	stacks_stats(st, &stats);
	assert_int_equal(stats.objects, 0);
	assert_int_equal(stats.objects_dropped, 1);
	assert_int_equal(dso_live(), live);
	stacks_free(st);
}

struct leaves {
	uint64_t total, no_dso, at_leaf, at_mid;
	const char *root;
};

static void on_leaf(void *ctx, const struct stacks_leaf *l, uint64_t count)
{
	struct leaves *lv = ctx;
	const char *name = NULL;
	uint64_t symoff;

	lv->total += count;
	if (!l->dso) {
		lv->no_dso += count;
		return;
	}
	lv->root = l->root;
	assert_int_equal(symtab_lookup(l->symtab, l->off, &name, &symoff), 0);
	if (!strcmp(name, "stk_leaf"))
		lv->at_leaf += count;
	else if (!strcmp(name, "stk_mid"))
		lv->at_mid += count;
}

/* annotate's view: the sampled address of each stack (its first user
 * frame) as (dso, file offset) with its count; kernel samples counted
 * without a dso; this process's root is the host's (""). */
static void test_leaf(void **state)
{
	const uint64_t leaf[] = { AT(stk_leaf), AT(stk_mid), AT(stk_root) };
	const uint64_t mid[] = { AT(stk_mid), AT(stk_root) };
	struct stacks *st = engine();
	struct hand_sample a, b;
	struct leaves lv = { 0 };
	struct sample k = { .pid = (uint32_t)getpid(), .ip = 0xffffffff81000000ull };

	(void)state;
	hand_make(&a, leaf, 3);
	hand_make(&b, mid, 2);
	for (int i = 0; i < 3; i++)
		stacks_add(st, &a.s, NULL);
	stacks_add(st, &b.s, NULL);
	stacks_add(st, &k, NULL);
	assert_int_equal(stacks_foreach_leaf(st, on_leaf, &lv), 0);
	assert_int_equal(lv.total, 5);
	assert_int_equal(lv.no_dso, 1);
	assert_int_equal(lv.at_leaf, 3);
	assert_int_equal(lv.at_mid, 1);
	assert_non_null(lv.root);
	assert_string_equal(lv.root, "");
	stacks_free(st);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(stacks_mode_name(STACKS_FP), "fp");
	assert_string_equal(stacks_mode_name(STACKS_DWARF), "dwarf");
	assert_int_equal(stacks_regs_mask(STACKS_FP), 0);
	assert_true(stacks_regs_mask(STACKS_DWARF) != 0);
	assert_string_equal(stacks_trunc_name(STACKS_TRUNC_STACK_COPY), "stack_copy");
	assert_string_equal(stacks_trunc_name(STACKS_TRUNC_MAX_STACK), "max_stack");
	assert_string_equal(stacks_trunc_name(STACKS_TRUNC_BAD_ADDRESS), "bad_return_address");
	stacks_free(NULL);
}

TL_MAIN(test_fold, test_frames_and_dso, test_bad_return_address, test_gc_drops_objects, test_leaf,
	test_names)
