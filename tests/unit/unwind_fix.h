/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the unwinder's tests (test_unwind.c, test_unwind_proc.c):
 * this process's executable mappings as unwind_maps, and the snapshot, a
 * sample-like copy of the registers and stack of a chain of functions
 * built without frame pointers, with the reference unwind of it
 * (fixture_chain(), run first by each test binary). Static: each test
 * binary has its own copy.
 */
#ifndef CGPERF_TESTS_UNWIND_FIX_H
#define CGPERF_TESTS_UNWIND_FIX_H

/* Each binary uses part of the fixture. */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <asm/perf_regs.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "agent/stacks/unwind.h"
#include "tests/unit/testlib.h"

#define MAX_FRAMES 64
#define STACK_COPY (16 * 1024)
#define NREGS PERF_REG_X86_64_MAX

/* ---- this process's executable mappings ---- */

struct test_maps {
	struct unwind_map *v;
	size_t n;
	struct { uint64_t start, end; } *any; /* every mapping, to bound stack copies */
	size_t nany;
};

static struct test_maps self_maps;

static void maps_load(struct test_maps *tm)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t cap = 0;

	assert_non_null(f);
	while (getline(&line, &cap, f) > 0) {
		uint64_t start, end, off, ino;
		unsigned int maj, min;
		char perms[5];
		int pos = 0;
		char *path;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, perms, &off, &maj, &min, &ino, &pos) < 7 ||
		    !pos)
			continue;
		path = line + pos;
		path[strcspn(path, "\n")] = '\0';
		tm->any = realloc(tm->any, (tm->nany + 1) * sizeof(*tm->any));
		assert_non_null(tm->any);
		tm->any[tm->nany].start = start;
		tm->any[tm->nany++].end = end;
		if (perms[2] != 'x' || path[0] != '/')
			continue;
		tm->v = realloc(tm->v, (tm->n + 1) * sizeof(*tm->v));
		assert_non_null(tm->v);
		tm->v[tm->n++] = (struct unwind_map){
			.start = start,
			.end = end,
			.pgoff = off,
			.path = strdup(path),
			.dev = makedev(maj, min),
			.ino = ino,
		};
	}
	free(line);
	fclose(f);
	assert_true(tm->n > 0);
}

/* End of the mapping holding @addr (a stack pointer), or @addr itself. */
static uint64_t maps_end_of(const struct test_maps *tm, uint64_t addr)
{
	for (size_t i = 0; i < tm->nany; i++)
		if (addr >= tm->any[i].start && addr < tm->any[i].end)
			return tm->any[i].end;
	return addr;
}

static void maps_free(struct test_maps *tm)
{
	for (size_t i = 0; i < tm->n; i++)
		free((char *)tm->v[i].path);
	free(tm->v);
	free(tm->any);
	memset(tm, 0, sizeof(*tm));
}

static const struct unwind_map *maps_find(void *ctx, uint64_t ip)
{
	const struct test_maps *tm = ctx;

	for (size_t i = 0; i < tm->n; i++)
		if (ip >= tm->v[i].start && ip < tm->v[i].end)
			return &tm->v[i];
	return NULL;
}

/* The mapping of this test's own code (not /proc/self/exe: valgrind is that). */
static const struct unwind_map *maps_self_exe(const struct test_maps *tm)
{
	const struct unwind_map *m = maps_find((void *)tm, (uintptr_t)&maps_find);

	assert_non_null(m);
	return m;
}

/* A copy of @src whose mappings of this executable point at @path, keyed (dev, ino). */
static void maps_redirect(struct test_maps *dst, const struct test_maps *src, const char *path,
			  uint64_t dev, uint64_t ino)
{
	const struct unwind_map *exe = maps_self_exe(src);
	uint64_t exe_dev = exe->dev, exe_ino = exe->ino;

	memset(dst, 0, sizeof(*dst));
	dst->n = src->n;
	dst->v = calloc(src->n, sizeof(*dst->v));
	assert_non_null(dst->v);
	for (size_t i = 0; i < src->n; i++) {
		dst->v[i] = src->v[i];
		if (src->v[i].dev == exe_dev && src->v[i].ino == exe_ino) {
			dst->v[i].path = path;
			dst->v[i].dev = dev;
			dst->v[i].ino = ino;
		}
		dst->v[i].path = strdup(dst->v[i].path);
	}
}

/* find_map over a test_maps that counts its calls: a rule-cache hit makes none. */
struct counted_maps {
	struct test_maps *tm;
	unsigned long calls;
};

static const struct unwind_map *counted_find(void *ctx, uint64_t ip)
{
	struct counted_maps *cm = ctx;

	cm->calls++;
	return maps_find(cm->tm, ip);
}

/* A workload built next to this test (build/tests/.. /workloads/NAME). */
static char *sibling_workload(const char *name)
{
	const char *exe = maps_self_exe(&self_maps)->path;
	const char *slash = strrchr(exe, '/');
	char *path = NULL;

	assert_non_null(slash);
	assert_true(asprintf(&path, "%.*s/../workloads/%s", (int)(slash - exe), exe, name) > 0);
	if (access(path, R_OK) != 0)
		fail_msg("%s not built (make build-tests builds it)", path);
	return path;
}

/* ---- the snapshot: a chain without frame pointers ---- */

struct snapshot {
	uint64_t regs[NREGS]; /* by perf register number */
	uint8_t stack[STACK_COPY];
	size_t stack_size;
	uint64_t ret[4]; /* return addresses seen by leaf, c, b, a */
};

static struct snapshot snap;

#define JUNK_RBP 0x0bad0bad0bad0badull

/*
 * Copy our own stack the way the kernel does for a sample: through the
 * kernel (/proc/self/mem), blind to ASan's redzones and to which bytes
 * valgrind thinks were never written.
 */
static size_t copy_stack(uint8_t *dst, uint64_t src, size_t len)
{
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, dst, len, (off_t)src);
	close(fd);
	return n > 0 ? (size_t)n : 0;
}

#define NOFP __attribute__((noinline, noclone, optimize("omit-frame-pointer")))

/* Put junk in RBP: also fails to compile if RBP were this function's frame pointer. */
#define SMASH_RBP(v) __asm__ volatile("movq %0, %%rbp" : : "r"((uint64_t)(v)) : "rbp")

NOFP static int chain_leaf(int x)
{
	uint64_t *r = snap.regs;
	uint64_t t, len;

	/* Registers as the kernel would see them at an interrupt right here. */
	__asm__ volatile("movq %[junk], %%rbp\n\t"
			 "movq %%rax, 0(%[r])\n\t"
			 "movq %%rbx, 8(%[r])\n\t"
			 "movq %%rcx, 16(%[r])\n\t"
			 "movq %%rdx, 24(%[r])\n\t"
			 "movq %%rsi, 32(%[r])\n\t"
			 "movq %%rdi, 40(%[r])\n\t"
			 "movq %%rbp, 48(%[r])\n\t"
			 "movq %%rsp, 56(%[r])\n\t"
			 "leaq 0(%%rip), %[t]\n\t"
			 "movq %[t], 64(%[r])\n\t"
			 "movq %%r8, 128(%[r])\n\t"
			 "movq %%r9, 136(%[r])\n\t"
			 "movq %%r10, 144(%[r])\n\t"
			 "movq %%r11, 152(%[r])\n\t"
			 "movq %%r12, 160(%[r])\n\t"
			 "movq %%r13, 168(%[r])\n\t"
			 "movq %%r14, 176(%[r])\n\t"
			 "movq %%r15, 184(%[r])\n\t"
			 : [t] "=&r"(t)
			 : [r] "r"(r), [junk] "i"(JUNK_RBP)
			 : "rbp", "memory");
	snap.ret[0] = (uintptr_t)__builtin_return_address(0);
	len = maps_end_of(&self_maps, r[PERF_REG_X86_SP]) - r[PERF_REG_X86_SP];
	if (len > STACK_COPY)
		len = STACK_COPY;
	snap.stack_size = copy_stack(snap.stack, r[PERF_REG_X86_SP], len);
	return x + 1;
}

/* A link of the chain: calls @next, then records where it returns to in
 * its own caller in snap.ret[@slot]. */
#define CHAIN_LINK(name, next, slot, mul)                                     \
	NOFP static int name(int x)                                           \
	{                                                                     \
		int r;                                                        \
									      \
		SMASH_RBP(JUNK_RBP + 4 - (slot));                             \
		r = next(x + 1) * (mul);                                      \
		snap.ret[slot] = (uintptr_t)__builtin_return_address(0);      \
		return r;                                                     \
	}

CHAIN_LINK(chain_c, chain_leaf, 1, 3)
CHAIN_LINK(chain_b, chain_c, 2, 5)
CHAIN_LINK(chain_a, chain_b, 3, 7)

static volatile int chain_seed = 1;

/* Registers of the snapshot packed in @mask order, as in a sample. */
static size_t pack_regs(const uint64_t *by_num, uint64_t mask, uint64_t *out)
{
	size_t n = 0;

	for (int i = 0; i < 64; i++)
		if (mask & (1ull << i))
			out[n++] = i < NREGS ? by_num[i] : 0;
	return n;
}

struct sample_buf {
	uint64_t regs[64];
	uint8_t *stack;
	struct unwind_sample s;
};

/* A sample of the snapshot whose stack is a heap block of exactly @size bytes. */
static void sample_make(struct sample_buf *b, const uint64_t *regs, uint64_t mask,
			const uint8_t *stack, size_t size, struct test_maps *maps)
{
	pack_regs(regs, mask, b->regs);
	b->stack = malloc(size ? size : 1);
	assert_non_null(b->stack);
	if (size)
		memcpy(b->stack, stack, size);
	b->s = (struct unwind_sample){
		.regs = b->regs,
		.regs_mask = mask,
		.stack = b->stack,
		.stack_size = size,
		.find_map = maps_find,
		.ctx = maps,
	};
}

static void sample_release(struct sample_buf *b)
{
	free(b->stack);
	b->stack = NULL;
}

/* The reference unwind of the snapshot, filled by test_chain. */
static uint64_t full_ips[MAX_FRAMES];
static int full_n;

static void assert_chain(const uint64_t *ips, int n)
{
	assert_true(n >= 5);
	assert_int_equal(ips[0], snap.regs[PERF_REG_X86_IP]);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ips[i + 1], snap.ret[i]);
}

static void fixture_chain(void **state)
{
	struct unwind_cache *c = unwind_cache_new(16);
	uint64_t ips[MAX_FRAMES];
	struct sample_buf b;

	assert_non_null(c);
	assert_true(chain_a(chain_seed) > 0);
	/* No frame pointer to follow: RBP held junk at the "interrupt". */
	assert_int_equal(snap.regs[PERF_REG_X86_BP], JUNK_RBP);
	assert_true(snap.stack_size > 256);

	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	full_n = unwind_dwarf(c, &b.s, ips, MAX_FRAMES);
	assert_chain(ips, full_n);
	memcpy(full_ips, ips, sizeof(ips));
	print_message("unwind: %d frames from the snapshot\n", full_n);
	for (int i = 0; i < full_n; i++) {
		const struct unwind_map *m = maps_find(&self_maps, ips[i]);

		print_message("  #%-2d %#" PRIx64 " %s+%#" PRIx64 "\n", i, ips[i],
			      m ? m->path : "?", m ? ips[i] - m->start + m->pgoff : 0);
	}

	/* Same answer again, now from the cache. */
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	sample_release(&b);
	unwind_cache_free(c);
}


static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Unwind @b as process @pid and expect @want (@want_n frames). */
static void expect_unwind(struct unwind_cache *c, struct sample_buf *b, uint32_t pid,
			  const uint64_t *want, int want_n)
{
	uint64_t ips[MAX_FRAMES];

	b->s.pid = pid;
	assert_int_equal(unwind_dwarf(c, &b->s, ips, MAX_FRAMES), want_n);
	assert_memory_equal(ips, want, (size_t)want_n * sizeof(ips[0]));
}

/* Unwind @sn twice (filling rows, then from them) and once more as a process. */
static int unwind_twice(const struct snapshot *sn, uint64_t *ips)
{
	struct unwind_cache *c = unwind_cache_new(64);
	struct sample_buf b;
	int n;

	assert_non_null(c);
	sample_make(&b, sn->regs, unwind_dwarf_regs_mask(), sn->stack, sn->stack_size, &self_maps);
	n = unwind_dwarf(c, &b.s, ips, MAX_FRAMES);
	assert_in_range(n, 1, MAX_FRAMES);
	for (uint32_t pid = 0; pid < 2; pid++)
		expect_unwind(c, &b, pid, ips, n);
	sample_release(&b);
	unwind_cache_free(c);
	return n;
}

static int group_setup(void **state)
{
	maps_load(&self_maps);
	return 0;
}

static int group_teardown(void **state)
{
	maps_free(&self_maps);
	return 0;
}

#endif
