// SPDX-License-Identifier: MIT
/*
 * agent/unwind: DWARF unwinding of a sample-like snapshot of this very
 * process. A chain of functions built without frame pointers (and with
 * junk in RBP while they run, so a frame-pointer walk cannot succeed)
 * captures its registers and a copy of its stack, the way the kernel does
 * for PERF_SAMPLE_REGS_USER/STACK_USER; the test then unwinds the copy
 * after the chain has returned and compares the result with the return
 * addresses each function recorded. Around that: short and hostile stacks,
 * junk registers, damaged and stripped binaries, the cache's bounds and
 * reuse, per-process state (another binary at the same addresses in
 * another "process", forgetting, recycling, bins overflowing), PLT stubs
 * and signal frames (CFI that reads DWARF expressions out of .eh_frame),
 * frames whose address sits on a function boundary (where the lookup must
 * be at the return address minus 1, or exactly at a signal's IP), CIEs
 * with a personality and FDEs with an LSDA (C++'s "zPLR", hand-built and
 * compiled: this file is built with -fexceptions), and a small benchmark
 * (printed, not asserted).
 *
 * Every stack handed to unwind_dwarf() is a heap block of exactly
 * stack_size bytes, so under ASan a read past the copy is caught.
 */
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

#include "agent/unwind.h"

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

NOFP static int chain_c(int x)
{
	int r;

	SMASH_RBP(JUNK_RBP + 3);
	r = chain_leaf(x + 1) * 3;
	snap.ret[1] = (uintptr_t)__builtin_return_address(0);
	return r;
}

NOFP static int chain_b(int x)
{
	int r;

	SMASH_RBP(JUNK_RBP + 2);
	r = chain_c(x + 1) * 5;
	snap.ret[2] = (uintptr_t)__builtin_return_address(0);
	return r;
}

NOFP static int chain_a(int x)
{
	int r;

	SMASH_RBP(JUNK_RBP + 1);
	r = chain_b(x + 1) * 7;
	snap.ret[3] = (uintptr_t)__builtin_return_address(0);
	return r;
}

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

static void test_chain(void **state)
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

/* ---- registers and arguments ---- */

static void test_regs_mask(void **state)
{
	uint64_t m = unwind_dwarf_regs_mask();
	const int need[] = {
		PERF_REG_X86_IP,  PERF_REG_X86_SP,  PERF_REG_X86_BP,  PERF_REG_X86_BX,
		PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15,
	};

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		assert_true(m & (1ull << need[i]));
	/* Nothing perf would reject on x86_64. */
	assert_int_equal(m & ~((1ull << PERF_REG_X86_64_MAX) - 1), 0);
}

static void test_masks_and_args(void **state)
{
	struct unwind_cache *c = unwind_cache_new(16);
	uint64_t ips[MAX_FRAMES], all = (1ull << PERF_REG_X86_64_MAX) - 1, mask;
	struct sample_buf b;

	assert_non_null(c);
	assert_true(full_n >= 5);

	/* Every register, flags and segments included: same chain. */
	sample_make(&b, snap.regs, all, snap.stack, snap.stack_size, &self_maps);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	sample_release(&b);

	/* XMM bits above the GPRs do not shift the GPRs' positions. */
	sample_make(&b, snap.regs, all | (3ull << PERF_REG_X86_XMM0), snap.stack, snap.stack_size,
		    &self_maps);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	sample_release(&b);

	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	/* The cap. */
	assert_int_equal(unwind_dwarf(c, &b.s, ips, 0), 0);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, 1), 1);
	assert_int_equal(ips[0], full_ips[0]);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, 3), 3);
	assert_memory_equal(ips, full_ips, 3 * sizeof(ips[0]));
	/* Bad arguments. */
	assert_int_equal(unwind_dwarf(NULL, &b.s, ips, MAX_FRAMES), -EINVAL);
	assert_int_equal(unwind_dwarf(c, NULL, ips, MAX_FRAMES), -EINVAL);
	assert_int_equal(unwind_dwarf(c, &b.s, NULL, MAX_FRAMES), -EINVAL);
	sample_release(&b);

	/* No IP: nothing to say. */
	mask = unwind_dwarf_regs_mask() & ~(1ull << PERF_REG_X86_IP);
	sample_make(&b, snap.regs, mask, snap.stack, snap.stack_size, &self_maps);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), -EINVAL);
	sample_release(&b);

	/* No SP: the IP alone. */
	mask = unwind_dwarf_regs_mask() & ~(1ull << PERF_REG_X86_SP);
	sample_make(&b, snap.regs, mask, snap.stack, snap.stack_size, &self_maps);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), 1);
	assert_int_equal(ips[0], full_ips[0]);
	sample_release(&b);

	/* No callee-saved registers: still no crash, still the leaf. */
	mask = (1ull << PERF_REG_X86_IP) | (1ull << PERF_REG_X86_SP);
	sample_make(&b, snap.regs, mask, snap.stack, snap.stack_size, &self_maps);
	assert_in_range(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), 1, MAX_FRAMES);
	assert_int_equal(ips[0], full_ips[0]);
	sample_release(&b);
	unwind_cache_free(c);
}

/* ---- short, hostile and junk stacks ---- */

static void test_truncated(void **state)
{
	static const size_t sizes[] = { 0, 1, 7, 8, 64, 100, 256, 1024, 4096 };
	struct unwind_cache *c = unwind_cache_new(16);
	uint64_t ips[MAX_FRAMES];

	assert_non_null(c);
	/* Without a process, and with one whose rule cache fills up along the way. */
	for (size_t i = 0; i < 2 * sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t size = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
		struct sample_buf b;
		int n;

		if (size > snap.stack_size)
			continue;
		sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, size, &self_maps);
		b.s.pid = i < sizeof(sizes) / sizeof(sizes[0]) ? 0 : 42;
		n = unwind_dwarf(c, &b.s, ips, MAX_FRAMES);
		assert_in_range(n, 1, full_n);
		/* What it finds before running out of stack is the true chain. */
		assert_memory_equal(ips, full_ips, (size_t)n * sizeof(ips[0]));
		if (size == 64)
			assert_true(n < full_n);
		sample_release(&b);
	}
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

static void test_junk(void **state)
{
	struct unwind_cache *c = unwind_cache_new(16);
	static uint8_t junk[STACK_COPY];
	uint64_t ips[MAX_FRAMES], regs[NREGS];
	double t0 = now(), dt;
	int rounds = 3000;
	long frames[3] = { 0 };

	assert_non_null(c);
	for (int i = 0; i < rounds; i++) {
		struct sample_buf b;
		size_t size = rng() % 4097;
		int kind = i % 3, n;

		for (int r = 0; r < NREGS; r++)
			regs[r] = rng();
		for (size_t k = 0; k < size; k += 8) {
			uint64_t v = rng();

			memcpy(junk + k, &v, 8);
		}
		if (kind == 1) {
			/* A real code address, junk everywhere else. */
			const struct unwind_map *m = &self_maps.v[rng() % self_maps.n];

			regs[PERF_REG_X86_IP] = m->start + rng() % (m->end - m->start);
			/* Junk words that look like return addresses too. */
			for (size_t k = 0; k + 8 <= size; k += 64) {
				uint64_t v = m->start + rng() % (m->end - m->start);

				memcpy(junk + k, &v, 8);
			}
		} else if (kind == 2) {
			/* The real snapshot with a few words overwritten. */
			memcpy(regs, snap.regs, sizeof(regs));
			size = snap.stack_size;
			memcpy(junk, snap.stack, size);
			for (int k = 0; k < 8; k++) {
				uint64_t v = rng();

				memcpy(junk + (rng() % (size / 8)) * 8, &v, 8);
			}
		}
		if (i == 7)
			regs[PERF_REG_X86_SP] = UINT64_MAX - 3; /* SP + 8 wraps */
		sample_make(&b, regs, unwind_dwarf_regs_mask(), junk, size, &self_maps);
		b.s.pid = (uint32_t)(i / 3 % 4); /* 0: none; rules of junk IPs cached for 1..3 */
		n = unwind_dwarf(c, &b.s, ips, MAX_FRAMES);
		assert_in_range(n, 1, MAX_FRAMES);
		assert_int_equal(ips[0], regs[PERF_REG_X86_IP]);
		frames[kind] += n;
		sample_release(&b);
	}
	dt = now() - t0;
	print_message("unwind: %d junk samples in %.3f s; frames per sample: junk %.2f, "
		      "junk from real code %.2f, damaged snapshot %.2f\n",
		      rounds, dt, frames[0] * 3.0 / rounds, frames[1] * 3.0 / rounds,
		      frames[2] * 3.0 / rounds);
	assert_true(dt < 60.0);
	/* The junk did not grow the cache past its bound. */
	assert_true(unwind_cache_entries(c) <= 16);
	unwind_cache_free(c);
}

/* ---- damaged and stripped copies of this executable ---- */

struct exe_layout {
	uint8_t *bytes;
	size_t size;
	uint64_t hdr_off, hdr_size, eh_off, eh_size;
};

static void exe_read(struct exe_layout *l)
{
	int fd = open(maps_self_exe(&self_maps)->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	l->size = (size_t)st.st_size;
	l->bytes = malloc(l->size);
	assert_non_null(l->bytes);
	assert_int_equal(pread(fd, l->bytes, l->size, 0), (ssize_t)l->size);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame_hdr")) {
			l->hdr_off = sh.sh_offset;
			l->hdr_size = sh.sh_size;
		} else if (name && !strcmp(name, ".eh_frame")) {
			l->eh_off = sh.sh_offset;
			l->eh_size = sh.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(l->hdr_size >= 12 && l->eh_size > 0);
}

enum damage {
	DAMAGE_NONE_STRIPPED, /* no section headers: PT_GNU_EH_FRAME only */
	DAMAGE_FDE_COUNT,     /* fde_count far past the section */
	DAMAGE_VERSION,
	DAMAGE_TABLE,         /* binary-search table is junk */
	DAMAGE_EH_FRAME,      /* CIEs and FDEs are junk */
	DAMAGE_TRUNCATED,     /* the file stops after 4 KiB */
	DAMAGE_NOT_ELF,
	DAMAGE_MISSING,       /* no such file */
	DAMAGE_COUNT,
};

static char *write_damaged(const struct exe_layout *l, enum damage d, const char *dir)
{
	uint8_t *b = malloc(l->size);
	size_t size = l->size;
	char *path = NULL;
	int fd;

	assert_non_null(b);
	memcpy(b, l->bytes, l->size);
	switch (d) {
	case DAMAGE_NONE_STRIPPED:
		memset(b + 0x28, 0, 8); /* e_shoff */
		memset(b + 0x3c, 0, 4); /* e_shnum, e_shstrndx */
		break;
	case DAMAGE_FDE_COUNT:
		/* eh_frame_ptr is sdata4 here, so fde_count sits at 8. */
		assert_int_equal(b[l->hdr_off + 1], 0x1b);
		assert_int_equal(b[l->hdr_off + 2], 0x03);
		memset(b + l->hdr_off + 8, 0xff, 4);
		break;
	case DAMAGE_VERSION:
		b[l->hdr_off] = 2;
		break;
	case DAMAGE_TABLE:
		for (uint64_t i = 12; i < l->hdr_size; i++)
			b[l->hdr_off + i] = (uint8_t)rng();
		break;
	case DAMAGE_EH_FRAME:
		for (uint64_t i = 0; i < l->eh_size; i++)
			b[l->eh_off + i] = (uint8_t)rng();
		break;
	case DAMAGE_TRUNCATED:
		size = 4096;
		break;
	case DAMAGE_NOT_ELF:
		for (size_t i = 0; i < 8192 && i < size; i++)
			b[i] = (uint8_t)rng();
		size = 8192;
		break;
	default:
		break;
	}
	assert_true(asprintf(&path, "%s/exe-%d", dir, (int)d) > 0);
	if (d != DAMAGE_MISSING) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, b, size), (ssize_t)size);
		close(fd);
	}
	free(b);
	return path;
}

static void test_damaged_binaries(void **state)
{
	char dir[] = "/tmp/test_unwind.XXXXXX";
	struct unwind_cache *c = unwind_cache_new(64);
	struct exe_layout l = { 0 };
	uint64_t ips[MAX_FRAMES];

	assert_non_null(c);
	assert_non_null(mkdtemp(dir));
	exe_read(&l);
	for (int d = 0; d < DAMAGE_COUNT; d++) {
		char *path = write_damaged(&l, (enum damage)d, dir);
		struct test_maps maps;
		struct sample_buf b;
		uint64_t loads;
		int n;

		maps_redirect(&maps, &self_maps, path, 0xdead, 1000 + (uint64_t)d);
		sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
			    &maps);
		/* Odd rounds in a process of their own, all at this test's addresses. */
		b.s.pid = d % 2 ? 1000 + (uint32_t)d : 0;
		n = unwind_dwarf(c, &b.s, ips, MAX_FRAMES);
		assert_in_range(n, 1, MAX_FRAMES);
		assert_int_equal(ips[0], full_ips[0]);
		if (d == DAMAGE_NONE_STRIPPED) {
			/* Found through the program headers alone: the very same chain. */
			assert_int_equal(n, full_n);
			assert_memory_equal(ips, full_ips, (size_t)n * sizeof(ips[0]));
		}
		/* Loaded, or found wanting, once: the answer is cached either way. */
		loads = unwind_cache_loads(c);
		for (int k = 0; k < 3; k++)
			assert_in_range(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), 1, MAX_FRAMES);
		assert_int_equal(unwind_cache_loads(c), loads);
		sample_release(&b);
		maps_free(&maps);
		unlink(path);
		free(path);
	}
	rmdir(dir);
	free(l.bytes);
	unwind_cache_free(c);
}

/* ---- the cache ---- */

static void test_cache_bounds(void **state)
{
	struct unwind_cache *c = unwind_cache_new(1);
	uint64_t ips[MAX_FRAMES], loads;
	struct sample_buf b;

	errno = 0;
	assert_null(unwind_cache_new(0));
	assert_int_equal(errno, EINVAL);
	unwind_cache_free(NULL);
	unwind_cache_forget(NULL, 1, 2);

	/* One entry for a stack through several binaries: right, then trimmed. */
	assert_non_null(c);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	assert_int_equal(unwind_cache_entries(c), 1);
	loads = unwind_cache_loads(c);
	assert_true(loads >= 2); /* the test, libcmocka, libc */
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	assert_true(unwind_cache_loads(c) > loads); /* evicted, so read again */
	unwind_cache_free(c);

	/* Forgetting a binary makes the next unwind read it again, once. */
	c = unwind_cache_new(16);
	assert_non_null(c);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	loads = unwind_cache_loads(c);
	assert_int_equal(unwind_cache_entries(c), loads);
	unwind_cache_forget(c, maps_self_exe(&self_maps)->dev, maps_self_exe(&self_maps)->ino);
	assert_int_equal(unwind_cache_entries(c), loads - 1);
	unwind_cache_forget(c, 12345, 67890); /* unknown: nothing happens */
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	assert_int_equal(unwind_cache_loads(c), loads + 1);
	sample_release(&b);
	unwind_cache_free(c);
}

static void test_cache_reuse_and_speed(void **state)
{
	struct unwind_cache *c = unwind_cache_new(64);
	uint64_t ips[MAX_FRAMES], loads, fills;
	struct sample_buf b;
	const int rounds = 10000;
	double t0, dt;

	assert_non_null(c);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	/* Without a process (tables cached), then with one (its rules cached too). */
	for (uint32_t pid = 0; pid < 2; pid++) {
		b.s.pid = pid;
		assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
		loads = unwind_cache_loads(c);
		fills = unwind_cache_rule_fills(c);
		t0 = now();
		for (int i = 0; i < rounds; i++)
			if (unwind_dwarf(c, &b.s, ips, MAX_FRAMES) != full_n)
				fail_msg("round %d: chain changed", i);
		dt = now() - t0;
		assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
		/* The whole point of the cache: no file read after the first unwind. */
		assert_int_equal(unwind_cache_loads(c), loads);
		/* Nor any FDE read: every frame's rows were cached the first time. */
		assert_int_equal(unwind_cache_rule_fills(c), fills);
		print_message("unwind (%s): %d unwinds of %d frames in %.3f s: %.0f unwinds/s, "
			      "%.2f us/frame\n", pid ? "one process" : "no pid", rounds, full_n, dt,
			      rounds / dt, dt * 1e6 / rounds / full_n);
	}
	sample_release(&b);
	unwind_cache_free(c);
}

/* ---- per-process address spaces ---- */

/*
 * This test's mappings, with its own executable's replaced by another
 * binary (chain-nofp) at the very same addresses: another process, same
 * layout, different code. What that makes of the snapshot, computed without
 * a pid (nothing cached), goes in ref/ref_n.
 */
struct other_proc {
	char *path;
	struct test_maps maps;
	uint64_t ref[MAX_FRAMES];
	int ref_n;
};

static void other_setup(struct other_proc *o)
{
	struct unwind_cache *c = unwind_cache_new(16);
	struct sample_buf b;
	struct stat st;

	assert_non_null(c);
	o->path = sibling_workload("chain-nofp");
	assert_int_equal(stat(o->path, &st), 0);
	maps_redirect(&o->maps, &self_maps, o->path, st.st_dev, st.st_ino);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size, &o->maps);
	o->ref_n = unwind_dwarf(c, &b.s, o->ref, MAX_FRAMES);
	assert_in_range(o->ref_n, 1, MAX_FRAMES);
	assert_int_equal(o->ref[0], full_ips[0]);
	/* Or the test below could not tell the two apart. */
	assert_false(o->ref_n == full_n &&
		     !memcmp(o->ref, full_ips, (size_t)full_n * sizeof(full_ips[0])));
	sample_release(&b);
	unwind_cache_free(c);
}

static void other_release(struct other_proc *o)
{
	maps_free(&o->maps);
	free(o->path);
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

static void test_process_spaces(void **state)
{
	struct unwind_cache *c = unwind_cache_new(64);
	struct other_proc o;
	struct counted_maps ca = { .tm = &self_maps }, cb;
	struct sample_buf a, b;
	uint64_t fills;

	assert_non_null(c);
	other_setup(&o);
	cb = (struct counted_maps){ .tm = &o.maps };
	sample_make(&a, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	a.s.find_map = counted_find;
	a.s.ctx = &ca;
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size, &o.maps);
	b.s.find_map = counted_find;
	b.s.ctx = &cb;

	/* Process 100 runs this test; the second time every step is a cache hit. */
	expect_unwind(c, &a, 100, full_ips, full_n);
	ca.calls = 0;
	expect_unwind(c, &a, 100, full_ips, full_n);
	assert_int_equal(ca.calls, 0);

	/*
	 * Process 300 is a fork of 100: the same binaries at the same addresses.
	 * It asks find_map for its own mappings, but reads no FDE again.
	 */
	fills = unwind_cache_rule_fills(c);
	assert_true(fills >= (uint64_t)full_n - 1);
	ca.calls = 0;
	expect_unwind(c, &a, 300, full_ips, full_n);
	assert_true(ca.calls > 0);
	assert_int_equal(unwind_cache_rule_fills(c), fills);

	/* Process 200 has the other binary at the same addresses: none of 100's rules. */
	expect_unwind(c, &b, 200, o.ref, o.ref_n);
	expect_unwind(c, &b, 200, o.ref, o.ref_n);
	expect_unwind(c, &a, 100, full_ips, full_n);
	assert_int_equal(unwind_cache_processes(c), 3);
	unwind_forget_process(c, 300);
	assert_int_equal(unwind_cache_processes(c), 2);
	/* Nor do samples without a pid use them. */
	expect_unwind(c, &b, 0, o.ref, o.ref_n);

	/* Process 100 execs the other binary: forgotten, then unwound as that one. */
	unwind_forget_process(c, 100);
	assert_int_equal(unwind_cache_processes(c), 1);
	expect_unwind(c, &b, 100, o.ref, o.ref_n);
	/* And back (a new exec, or pid 100 reused). */
	unwind_forget_process(c, 100);
	ca.calls = 0;
	expect_unwind(c, &a, 100, full_ips, full_n);
	assert_true(ca.calls > 0); /* asked afresh */
	expect_unwind(c, &b, 200, o.ref, o.ref_n);

	/* Unknown pids, pid 0 and no cache: nothing happens. */
	unwind_forget_process(c, 12345);
	unwind_forget_process(c, 0);
	unwind_forget_process(NULL, 100);
	assert_int_equal(unwind_cache_processes(c), 2);
	assert_int_equal(unwind_cache_processes(NULL), 0);

	sample_release(&a);
	sample_release(&b);
	other_release(&o);
	unwind_cache_free(c);
}

static void test_process_lru(void **state)
{
	struct unwind_cache *c = unwind_cache_new(64);
	struct other_proc o;
	struct sample_buf a, b;

	assert_non_null(c);
	other_setup(&o);
	sample_make(&a, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size, &o.maps);

	/* More processes than spaces: the least recently unwound are recycled. */
	for (uint32_t pid = 1; pid <= 150; pid++)
		expect_unwind(c, &a, pid, full_ips, full_n);
	assert_int_equal(unwind_cache_processes(c), 64);
	/* A recycled space keeps nothing of its last process: 1000 runs the other binary. */
	expect_unwind(c, &b, 1000, o.ref, o.ref_n);
	assert_int_equal(unwind_cache_processes(c), 64);
	for (uint32_t pid = 1; pid <= 150; pid += 7)
		expect_unwind(c, &a, pid, full_ips, full_n);
	expect_unwind(c, &b, 1000, o.ref, o.ref_n);
	for (uint32_t pid = 1; pid <= 150; pid++)
		unwind_forget_process(c, pid);
	assert_int_equal(unwind_cache_processes(c), 1);

	sample_release(&a);
	sample_release(&b);
	other_release(&o);
	unwind_cache_free(c);
}

/* Runtime address of this executable's first PLT entry (after PLT0). */
static uint64_t self_plt_entry(void)
{
	const struct unwind_map *exe = maps_self_exe(&self_maps);
	int fd = open(exe->path, O_RDONLY | O_CLOEXEC);
	uint64_t addr = 0;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf;

	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".plt") || sh.sh_size < 32)
			continue;
		/* The executable mapping holding that file offset. */
		for (size_t i = 0; i < self_maps.n; i++) {
			const struct unwind_map *m = &self_maps.v[i];

			if (m->dev == exe->dev && m->ino == exe->ino && sh.sh_offset >= m->pgoff &&
			    sh.sh_offset + 16 - m->pgoff < m->end - m->start)
				addr = m->start + (sh.sh_offset - m->pgoff) + 16;
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(addr != 0);
	return addr;
}

/*
 * A sample taken in a PLT stub called from chain_leaf. The linker's CFI
 * for .plt computes the CFA with a DWARF expression that sits in .eh_frame,
 * outside every executable mapping: a step served from the rule cache
 * (which never looks the FDE up) must still read it.
 */
static void test_process_plt_expression(void **state)
{
	uint64_t regs[NREGS], want[MAX_FRAMES], ret = snap.regs[PERF_REG_X86_IP] + 1;
	size_t size = snap.stack_size + 8;
	uint8_t *stack = malloc(size);
	struct unwind_cache *c = unwind_cache_new(64), *tiny = unwind_cache_new(1);
	struct counted_maps cm = { .tm = &self_maps };
	struct sample_buf b;

	assert_non_null(stack);
	assert_non_null(c);
	assert_non_null(tiny);
	/* Entered from chain_leaf (return address one past the snapshot's IP: same rules). */
	memcpy(regs, snap.regs, sizeof(regs));
	regs[PERF_REG_X86_IP] = self_plt_entry();
	regs[PERF_REG_X86_SP] -= 8;
	memcpy(stack, &ret, 8);
	memcpy(stack + 8, snap.stack, snap.stack_size);
	want[0] = regs[PERF_REG_X86_IP];
	want[1] = ret;
	memcpy(want + 2, full_ips + 1, (size_t)(full_n - 1) * sizeof(want[0]));
	sample_make(&b, regs, unwind_dwarf_regs_mask(), stack, size, &self_maps);
	b.s.find_map = counted_find;
	b.s.ctx = &cm;

	expect_unwind(c, &b, 0, want, full_n + 1);
	expect_unwind(c, &b, 7, want, full_n + 1);
	cm.calls = 0;
	expect_unwind(c, &b, 7, want, full_n + 1); /* from the rule cache */
	assert_int_equal(cm.calls, 0);

	/*
	 * A cache of one binary evicts this executable's tables after every
	 * unwind: the rules pointing into them must go with them.
	 */
	for (int i = 0; i < 3; i++)
		expect_unwind(tiny, &b, 7, want, full_n + 1);

	sample_release(&b);
	free(stack);
	unwind_cache_free(tiny);
	unwind_cache_free(c);
}

/* @src with every executable mapping cut into 4 KiB mappings of the same file. */
static void maps_paged(struct test_maps *dst, const struct test_maps *src)
{
	memset(dst, 0, sizeof(*dst));
	for (size_t i = 0; i < src->n; i++) {
		const struct unwind_map *m = &src->v[i];

		for (uint64_t a = m->start; a < m->end; a += 4096) {
			dst->v = realloc(dst->v, (dst->n + 1) * sizeof(*dst->v));
			assert_non_null(dst->v);
			dst->v[dst->n] = *m;
			dst->v[dst->n].start = a;
			dst->v[dst->n].end = a + 4096 < m->end ? a + 4096 : m->end;
			dst->v[dst->n].pgoff = m->pgoff + (a - m->start);
			dst->v[dst->n++].path = strdup(m->path);
		}
	}
}

/*
 * A process that has met more mappings than its space remembers: the rules
 * of the ones it drops must go too. The PLT rule reads its expression from
 * this executable's .eh_frame; after 40 other mappings no bin holds that.
 */
static void test_process_bins_overflow(void **state)
{
	uint64_t regs[NREGS], want[MAX_FRAMES], ret = snap.regs[PERF_REG_X86_IP] + 1, leaf[8];
	const struct unwind_map *exe = maps_self_exe(&self_maps);
	size_t size = snap.stack_size + 8, far = 0;
	uint8_t *stack = malloc(size);
	struct unwind_cache *c = unwind_cache_new(64);
	struct test_maps paged;
	struct sample_buf b;

	assert_non_null(stack);
	assert_non_null(c);
	maps_paged(&paged, &self_maps);
	memcpy(regs, snap.regs, sizeof(regs));
	regs[PERF_REG_X86_IP] = self_plt_entry();
	regs[PERF_REG_X86_SP] -= 8;
	memcpy(stack, &ret, 8);
	memcpy(stack + 8, snap.stack, snap.stack_size);
	want[0] = regs[PERF_REG_X86_IP];
	want[1] = ret;
	memcpy(want + 2, full_ips + 1, (size_t)(full_n - 1) * sizeof(want[0]));
	sample_make(&b, regs, unwind_dwarf_regs_mask(), stack, size, &paged);
	expect_unwind(c, &b, 9, want, full_n + 1);
	sample_release(&b);

	/* 40 leaf-only samples in 40 pages of other binaries. */
	for (size_t i = 0; i < paged.n && far < 40; i++) {
		if (paged.v[i].dev == exe->dev && paged.v[i].ino == exe->ino)
			continue;
		memcpy(regs, snap.regs, sizeof(regs));
		regs[PERF_REG_X86_IP] = paged.v[i].start + 64;
		sample_make(&b, regs, unwind_dwarf_regs_mask(), stack, 0, &paged);
		b.s.pid = 9;
		assert_int_equal(unwind_dwarf(c, &b.s, leaf, 8), 1);
		sample_release(&b);
		far++;
	}
	assert_int_equal(far, 40);

	/* The PLT sample again, in the same process. */
	memcpy(regs, snap.regs, sizeof(regs));
	regs[PERF_REG_X86_IP] = want[0];
	regs[PERF_REG_X86_SP] -= 8;
	sample_make(&b, regs, unwind_dwarf_regs_mask(), stack, size, &paged);
	expect_unwind(c, &b, 9, want, full_n + 1);
	sample_release(&b);
	maps_free(&paged);
	free(stack);
	unwind_cache_free(c);
}

/* A binary forgotten (changed on disk) leaves no rules behind in any process. */
static void test_process_binary_forget(void **state)
{
	struct unwind_cache *c = unwind_cache_new(16);
	const struct unwind_map *exe = maps_self_exe(&self_maps);
	struct sample_buf b;
	uint64_t loads;

	assert_non_null(c);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	expect_unwind(c, &b, 5, full_ips, full_n);
	expect_unwind(c, &b, 6, full_ips, full_n);
	loads = unwind_cache_loads(c);
	unwind_cache_forget(c, exe->dev, exe->ino);
	/* Both processes read the tables again (once), rather than trust old rules. */
	expect_unwind(c, &b, 5, full_ips, full_n);
	expect_unwind(c, &b, 6, full_ips, full_n);
	assert_int_equal(unwind_cache_loads(c), loads + 1);
	sample_release(&b);
	unwind_cache_free(c);
}

/* ---- through a signal frame ---- */

static uint64_t sig_restorer;     /* the handler's return address: the trampoline */
static uint64_t sig_caller_ret;   /* where sig_caller returns to */
static volatile int sig_seen;

NOFP static void sig_handler(int sig)
{
	SMASH_RBP(JUNK_RBP + 4);
	sig_restorer = (uintptr_t)__builtin_return_address(0);
	sig_seen = chain_leaf(sig); /* not a tail call: keep this frame */
}

NOFP static int sig_caller(int sig)
{
	SMASH_RBP(JUNK_RBP + 5);
	sig_caller_ret = (uintptr_t)__builtin_return_address(0);
	return raise(sig) + 1;
}

/*
 * A sample in a signal handler: the unwind goes through the kernel's
 * signal frame (__restore_rt's CFI: DWARF expressions over the saved
 * ucontext, and an 'S' CIE, after which the interrupted IP is taken as is)
 * back into the code that raised the signal. With rows cached, then for
 * another process sharing them.
 */
static void test_signal_frame(void **state)
{
	struct unwind_cache *c = unwind_cache_new(64);
	static struct snapshot saved, sig;
	struct sigaction sa = { .sa_handler = sig_handler }, old;
	uint64_t ips[MAX_FRAMES], first[MAX_FRAMES];
	struct sample_buf b;
	int n, k;

	assert_non_null(c);
	saved = snap; /* the other tests' snapshot */
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	assert_int_equal(sig_caller(SIGUSR1), 1);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
	sig = snap;
	snap = saved;
	assert_true(sig.stack_size > 256);

	sample_make(&b, sig.regs, unwind_dwarf_regs_mask(), sig.stack, sig.stack_size, &self_maps);
	n = unwind_dwarf(c, &b.s, first, MAX_FRAMES);
	print_message("unwind: %d frames through a signal frame\n", n);
	for (int i = 0; i < n; i++) {
		const struct unwind_map *m = maps_find(&self_maps, first[i]);

		print_message("  #%-2d %#" PRIx64 " %s+%#" PRIx64 "\n", i, first[i],
			      m ? m->path : "?", m ? first[i] - m->start + m->pgoff : 0);
	}
	assert_true(n >= 5);
	assert_int_equal(first[0], sig.regs[PERF_REG_X86_IP]);
	assert_int_equal(first[1], sig.ret[0]);      /* chain_leaf -> sig_handler */
	assert_int_equal(first[2], sig_restorer);    /* sig_handler -> __restore_rt */
	/* Past the signal frame, through libc's raise(), back to sig_caller's caller. */
	for (k = 3; k < n && first[k] != sig_caller_ret; k++)
		;
	assert_true(k < n);

	for (uint32_t pid = 0; pid < 3; pid++) {
		b.s.pid = pid;
		assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), n);
		assert_memory_equal(ips, first, (size_t)n * sizeof(ips[0]));
	}
	sample_release(&b);
	unwind_cache_free(c);
}

/* ---- frames whose address sits on a function boundary ---- */

/*
 * Hand-made functions, so the layout is known. test_bnd_pre ends in a row
 * whose CFA is RSP + 16; test_bnd_ud2 starts right after it with a ud2:
 * the SIGILL it raises is reported at test_bnd_ud2 itself, and only an
 * exact lookup (after a signal frame) finds its rows, not the previous
 * function's. test_bnd_call ends with a call that never returns, so its
 * return address is test_bnd_next, the first byte of the next function:
 * only a lookup at the address minus 1 finds the caller's rows.
 */
void test_bnd_ud2(void);
void test_bnd_call(void);
void test_bnd_next(void);
void test_bnd_noreturn(void) __attribute__((noreturn));
uint64_t test_bnd_call_ret;

__asm__(".text\n"
	".type test_bnd_pre, @function\n"
	"test_bnd_pre:\n"
	".cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rbx, 0\n"
	"	nop\n"
	".cfi_endproc\n"
	".size test_bnd_pre, .-test_bnd_pre\n"
	".globl test_bnd_ud2\n"
	".hidden test_bnd_ud2\n"
	".type test_bnd_ud2, @function\n"
	"test_bnd_ud2:\n"
	".cfi_startproc\n"
	"	ud2\n"
	".cfi_endproc\n"
	".size test_bnd_ud2, .-test_bnd_ud2\n"
	".globl test_bnd_call\n"
	".hidden test_bnd_call\n"
	".type test_bnd_call, @function\n"
	"test_bnd_call:\n"
	".cfi_startproc\n"
	"	movq (%rsp), %rax\n"
	"	movq %rax, test_bnd_call_ret(%rip)\n"
	"	subq $24, %rsp\n"
	"	.cfi_adjust_cfa_offset 24\n"
	"	call test_bnd_noreturn\n"
	".cfi_endproc\n"
	".size test_bnd_call, .-test_bnd_call\n"
	".globl test_bnd_next\n"
	".hidden test_bnd_next\n"
	".type test_bnd_next, @function\n"
	"test_bnd_next:\n"
	".cfi_startproc\n"
	"	ret\n"
	".cfi_endproc\n"
	".size test_bnd_next, .-test_bnd_next\n");

static sigjmp_buf bnd_jmp;
static uint64_t bnd_restorer, bnd_ud2_ret;

NOFP static void bnd_sigill(int sig)
{
	SMASH_RBP(JUNK_RBP + 6);
	bnd_restorer = (uintptr_t)__builtin_return_address(0);
	sig_seen = chain_leaf(sig);
	siglongjmp(bnd_jmp, 1);
}

NOFP static void bnd_ud2_caller(void)
{
	SMASH_RBP(JUNK_RBP + 7);
	bnd_ud2_ret = (uintptr_t)__builtin_return_address(0);
	test_bnd_ud2();
	sig_seen++;
}

NOFP void test_bnd_noreturn(void)
{
	SMASH_RBP(JUNK_RBP + 8);
	sig_seen = chain_leaf(0);
	siglongjmp(bnd_jmp, 1);
}

/* Unwind @sn twice (filling rows, then from them) and once more as a process. */
static int unwind_twice(const struct snapshot *sn, uint64_t *ips)
{
	struct unwind_cache *c = unwind_cache_new(64);
	uint64_t again[MAX_FRAMES];
	struct sample_buf b;
	int n;

	assert_non_null(c);
	sample_make(&b, sn->regs, unwind_dwarf_regs_mask(), sn->stack, sn->stack_size, &self_maps);
	n = unwind_dwarf(c, &b.s, ips, MAX_FRAMES);
	assert_in_range(n, 1, MAX_FRAMES);
	for (uint32_t pid = 0; pid < 2; pid++) {
		b.s.pid = pid;
		assert_int_equal(unwind_dwarf(c, &b.s, again, MAX_FRAMES), n);
		assert_memory_equal(again, ips, (size_t)n * sizeof(ips[0]));
	}
	sample_release(&b);
	unwind_cache_free(c);
	return n;
}

static void test_function_boundaries(void **state)
{
	struct sigaction sa = { .sa_handler = bnd_sigill }, old;
	static struct snapshot saved, sn;
	uint64_t ips[MAX_FRAMES];
	int n, k;

	saved = snap;

	/* A fault on a function's first byte: after the signal frame, that very address. */
	assert_int_equal(sigaction(SIGILL, &sa, &old), 0);
	if (!sigsetjmp(bnd_jmp, 1))
		bnd_ud2_caller();
	assert_int_equal(sigaction(SIGILL, &old, NULL), 0);
	sn = snap;
	n = unwind_twice(&sn, ips);
	assert_true(n >= 6);
	assert_int_equal(ips[1], sn.ret[0]);     /* chain_leaf -> bnd_sigill */
	assert_int_equal(ips[2], bnd_restorer); /* bnd_sigill -> __restore_rt */
	assert_int_equal(ips[3], (uintptr_t)test_bnd_ud2);
	/* ips[4] is in bnd_ud2_caller; then its caller. */
	assert_int_equal(ips[5], bnd_ud2_ret);

	/* A call as a function's last instruction: the return address is the next function. */
	if (!sigsetjmp(bnd_jmp, 1))
		test_bnd_call();
	sn = snap;
	n = unwind_twice(&sn, ips);
	assert_true(n >= 5);
	assert_int_equal(ips[1], sn.ret[0]); /* chain_leaf -> test_bnd_noreturn */
	assert_int_equal(ips[2], (uintptr_t)test_bnd_next);
	for (k = 3; k < n && ips[k] != test_bnd_call_ret; k++)
		;
	assert_int_equal(k, 3);

	snap = saved;
}

/* ---- C++-style CFI: personality and LSDA (CIE augmentation "zPLR") ---- */

/* A little .eh_frame writer: bytes at link-time address EH_VADDR. */
#define EH_VADDR 0x2000ull

struct ehbuf {
	uint8_t b[1024];
	size_t n;
};

static void eh_u8(struct ehbuf *e, uint8_t v)
{
	assert_true(e->n < sizeof(e->b));
	e->b[e->n++] = v;
}

static void eh_u32(struct ehbuf *e, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		eh_u8(e, (uint8_t)(v >> (8 * i)));
}

static void eh_u64(struct ehbuf *e, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		eh_u8(e, (uint8_t)(v >> (8 * i)));
}

static void eh_str(struct ehbuf *e, const char *s)
{
	do
		eh_u8(e, (uint8_t)*s);
	while (*s++);
}

/* A pcrel sdata4 pointer to @target, at the current position. */
static void eh_pcrel(struct ehbuf *e, uint64_t target)
{
	eh_u32(e, (uint32_t)(int32_t)(target - (EH_VADDR + e->n)));
}

/* Open a record (length patched by eh_end) and return where it starts. */
static size_t eh_begin(struct ehbuf *e)
{
	size_t at = e->n;

	eh_u32(e, 0);
	return at;
}

static void eh_end(struct ehbuf *e, size_t at)
{
	while ((e->n - at) % 4)
		eh_u8(e, 0); /* DW_CFA_nop */
	uint32_t len = (uint32_t)(e->n - at - 4);

	memcpy(e->b + at, &len, 4);
}

/* A CIE with version @ver and augmentation @aug; @data: its augmentation data. */
static size_t eh_cie(struct ehbuf *e, uint8_t ver, const char *aug, const uint8_t *data,
		     size_t ndata, uint64_t pcrel_pers_at)
{
	size_t at = eh_begin(e);

	eh_u32(e, 0); /* CIE id */
	eh_u8(e, ver);
	eh_str(e, aug);
	if (ver == 4) {
		eh_u8(e, 8); /* address size */
		eh_u8(e, 0); /* segment size */
	}
	eh_u8(e, 1);    /* code alignment */
	eh_u8(e, 0x78); /* data alignment -8 */
	eh_u8(e, 16);   /* return address register */
	if (aug[0] == 'z') {
		eh_u8(e, (uint8_t)ndata);
		for (size_t i = 0; i < ndata; i++) {
			/* 0xee 0xee: a pcrel sdata4 personality pointer goes here */
			if (data[i] == 0xee && i + 1 < ndata && data[i + 1] == 0xee) {
				eh_pcrel(e, pcrel_pers_at);
				i += 3;
				continue;
			}
			eh_u8(e, data[i]);
		}
	}
	eh_u8(e, 0x0c); /* DW_CFA_def_cfa rsp+8 */
	eh_u8(e, 7);
	eh_u8(e, 8);
	eh_end(e, at);
	return at;
}

/* An FDE of the CIE at @cie (pcrel sdata4 locations), with @z a pcrel
 * sdata4 LSDA pointer to @lsda in its augmentation data. */
static void eh_fde(struct ehbuf *e, size_t cie, bool z, uint64_t lsda)
{
	size_t at = eh_begin(e);

	eh_u32(e, (uint32_t)(e->n - cie)); /* back to the CIE */
	eh_pcrel(e, 0x1000);                 /* initial location */
	eh_u32(e, 0x40);                     /* range */
	if (z) {
		eh_u8(e, 4);
		eh_pcrel(e, lsda);
	}
	eh_end(e, at);
}

static void test_cfi_zplr(void **state)
{
	struct ehbuf e = { .n = 0 };
	uint64_t slots[8];
	size_t n, c1, c2, c3, cut;

	/* GCC's C++ CIE: zPLR, personality indirect|pcrel|sdata4 -> the word at 0x4068. */
	static const uint8_t zplr[] = { 0x9b, 0xee, 0xee, 0, 0, 0x1b, 0x1b };
	c1 = eh_cie(&e, 1, "zPLR", zplr, sizeof(zplr), 0x4068);
	eh_fde(&e, c1, true, 0x3000); /* LSDA pcrel, not indirect: no slot */
	eh_fde(&e, c1, true, 0x3010);

	/* zR, no personality; and the pre-'z' "eh" form: nothing to take. */
	static const uint8_t zr[] = { 0x1b };
	c2 = eh_cie(&e, 1, "zR", zr, sizeof(zr), 0);
	eh_fde(&e, c2, true, 0);
	eh_cie(&e, 1, "eh", NULL, 0, 0);

	/* Version 3, letters S and B (no data), the personality aligned|indirect
	 * (an absolute pointer at the next 8-byte boundary) -> 0x4070, and an
	 * indirect LSDA encoding: every FDE's LSDA word counts. */
	{
		size_t at = eh_begin(&e), pad;

		eh_u32(&e, 0);
		eh_u8(&e, 3);
		eh_str(&e, "zSPLRB");
		eh_u8(&e, 1);
		eh_u8(&e, 0x78);
		eh_u8(&e, 16); /* ULEB128 in version 3: the same byte */
		/* length: P enc, padding, 8-byte pointer, L enc, R enc */
		pad = (8 - ((EH_VADDR + e.n + 2) & 7)) & 7;
		eh_u8(&e, (uint8_t)(1 + pad + 8 + 2));
		eh_u8(&e, 0xd0); /* indirect | aligned */
		for (size_t i = 0; i < pad; i++)
			eh_u8(&e, 0);
		eh_u64(&e, 0x4070);
		eh_u8(&e, 0x9b); /* L: indirect | pcrel | sdata4 */
		eh_u8(&e, 0x1b); /* R */
		eh_end(&e, at);
		c3 = at;
	}
	eh_fde(&e, c3, true, 0x4080);
	eh_fde(&e, c3, true, 0x4080); /* the same word twice: one slot */
	eh_fde(&e, c3, true, 0x4088);

	/* Version 4 (address and segment sizes), personality indirect|udata8. */
	static const uint8_t v4[] = { 0x84, 0x90, 0x40, 0, 0, 0, 0, 0, 0, 0x1b };
	eh_cie(&e, 4, "zPR", v4, sizeof(v4), 0);

	/* An unknown letter before P: what follows is not read. */
	static const uint8_t unk[] = { 0x00, 0x9b, 0xee, 0xee, 0, 0 };
	eh_cie(&e, 1, "zXP", unk, sizeof(unk), 0x5000);
	cut = e.n;
	eh_u32(&e, 0); /* terminator */

	n = unwind_cfi_indirect(e.b, e.n, EH_VADDR, slots, 8);
	print_message("cfi: %zu indirect words in %zu bytes of .eh_frame\n", n, e.n);
	assert_int_equal(n, 5);
	assert_int_equal(slots[0], 0x4068); /* C++ personality (zPLR) */
	assert_int_equal(slots[1], 0x4070); /* aligned personality */
	assert_int_equal(slots[2], 0x4080); /* indirect LSDAs */
	assert_int_equal(slots[3], 0x4088);
	assert_int_equal(slots[4], 0x4090); /* version 4, udata8 */

	/* Bounded by @max, smallest kept. */
	assert_int_equal(unwind_cfi_indirect(e.b, e.n, EH_VADDR, slots, 2), 2);
	assert_int_equal(slots[0], 0x4068);
	assert_int_equal(unwind_cfi_indirect(e.b, e.n, EH_VADDR, NULL, 0), 0);

	/* Cut anywhere: no read past the buffer, what came before is kept. */
	for (size_t len = 0; len <= cut; len++) {
		uint8_t *copy = malloc(len ? len : 1);

		assert_non_null(copy);
		memcpy(copy, e.b, len);
		n = unwind_cfi_indirect(copy, len, EH_VADDR, slots, 8);
		assert_true(n <= 5);
		free(copy);
	}
	/* A record claiming more than there is ends the scan. */
	e.b[c2] = 0xff;
	e.b[c2 + 1] = 0xff;
	n = unwind_cfi_indirect(e.b, e.n, EH_VADDR, slots, 8);
	assert_int_equal(n, 1);
	assert_int_equal(slots[0], 0x4068);
}

/*
 * A frame with a cleanup, as C++ RAII makes them (this file is built with
 * -fexceptions): its FDE has an LSDA and its CIE the augmentation "zPLR"
 * with __gcc_personality_v0 behind an indirect pointer in .data. The
 * unwind from chain_leaf must go through it to its caller.
 */
static volatile int cleanup_sink;
static uint64_t cleanup_ret;

static void cleanup_note(int *v)
{
	cleanup_sink += *v;
}

NOFP static int cleanup_frame(int x)
{
	int guard __attribute__((cleanup(cleanup_note))) = x;
	int r;

	SMASH_RBP(JUNK_RBP + 5);
	r = chain_a(x + 1) * 11;
	cleanup_ret = (uintptr_t)__builtin_return_address(0);
	return r + guard;
}

NOFP static int cleanup_caller(int x)
{
	return cleanup_frame(x) + 1;
}

static void test_cleanup_frame(void **state)
{
	static struct snapshot saved, sn;
	uint64_t ips[MAX_FRAMES];
	int n, k;

	saved = snap;
	cleanup_caller(chain_seed);
	sn = snap;
	snap = saved;
	n = unwind_twice(&sn, ips);
	print_message("unwind: %d frames through a frame with a personality\n", n);
	assert_true(n >= 7);
	assert_int_equal(ips[0], sn.regs[PERF_REG_X86_IP]);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ips[i + 1], sn.ret[i]);
	/* ips[4] is chain_a's return into cleanup_frame; then out of it. */
	for (k = 5; k < n && ips[k] != cleanup_ret; k++)
		;
	assert_int_equal(k, 5);
}

/* ---- a leaf sampled in its epilogue ---- */

/*
 * epi_leaf(regs, ret) keeps a frame pointer, records the registers it
 * would show at an interrupt on its final `ret` (after `pop %rbp`, when its
 * CFI still says "RBP saved at CFA-16", a slot now below SP), and the
 * return address; epi_caller, with a frame pointer and so a CFA of RBP+16,
 * makes the copy. Without the live RBP the walk stops at epi_caller.
 */
__asm__(".text\n"
	".type epi_leaf, @function\n"
	"epi_leaf:\n"
	".cfi_startproc\n"
	"pushq %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"movq %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"movq %rbx, 8(%rdi)\n"
	"movq %r12, 160(%rdi)\n"
	"movq %r13, 168(%rdi)\n"
	"movq %r14, 176(%rdi)\n"
	"movq %r15, 184(%rdi)\n"
	"movq 8(%rsp), %rax\n"
	"movq %rax, (%rsi)\n"
	"leaq 16(%rsp), %rax\n"
	"movq %rax, 56(%rdi)\n" /* SP at the ret: the return address's slot */
	"subq $8, 56(%rdi)\n"
	"popq %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"movq %rbp, 48(%rdi)\n"
	".globl test_epi_ret\n"
	".hidden test_epi_ret\n"
	"test_epi_ret:\n"
	"ret\n"
	".cfi_endproc\n"
	".size epi_leaf, .-epi_leaf\n");
void epi_leaf(uint64_t *regs, uint64_t *ret);
extern const char test_epi_ret[];

static struct snapshot epi;

__attribute__((noinline, noclone, optimize("no-omit-frame-pointer"))) static void epi_caller(void)
{
	uint64_t caller_sp;

	memset(&epi, 0, sizeof(epi));
	epi_leaf(epi.regs, &epi.ret[0]);
	epi.ret[1] = (uintptr_t)__builtin_return_address(0);
	epi.regs[PERF_REG_X86_IP] = (uintptr_t)test_epi_ret;
	/* Our frame is intact (we are in it); the return address's slot was reused. */
	caller_sp = epi.regs[PERF_REG_X86_SP] + 8;
	epi.stack_size = 8 + copy_stack(epi.stack + 8, caller_sp, STACK_COPY - 8);
	memcpy(epi.stack, &epi.ret[0], 8);
}

static void test_epilogue_leaf(void **state)
{
	struct unwind_cache *c = unwind_cache_new(16);
	uint64_t ips[MAX_FRAMES];
	struct sample_buf b;
	int n;

	assert_non_null(c);
	epi_caller();
	assert_true(epi.stack_size > 256);
	sample_make(&b, epi.regs, unwind_dwarf_regs_mask(), epi.stack, epi.stack_size,
		    &self_maps);
	n = unwind_dwarf(c, &b.s, ips, MAX_FRAMES);
	assert_true(n >= 3);
	assert_int_equal(ips[0], (uintptr_t)test_epi_ret);
	assert_int_equal(ips[1], epi.ret[0]); /* epi_leaf -> epi_caller */
	assert_int_equal(ips[2], epi.ret[1]); /* epi_caller -> this test, through the live RBP */

	sample_release(&b);
	unwind_cache_free(c);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* test_chain takes the snapshot the others use: keep it first. */
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_regs_mask),
		cmocka_unit_test(test_masks_and_args),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_junk),
		cmocka_unit_test(test_damaged_binaries),
		cmocka_unit_test(test_cache_bounds),
		cmocka_unit_test(test_cache_reuse_and_speed),
		cmocka_unit_test(test_process_spaces),
		cmocka_unit_test(test_process_lru),
		cmocka_unit_test(test_process_plt_expression),
		cmocka_unit_test(test_process_bins_overflow),
		cmocka_unit_test(test_process_binary_forget),
		cmocka_unit_test(test_signal_frame),
		cmocka_unit_test(test_function_boundaries),
		cmocka_unit_test(test_epilogue_leaf),
		cmocka_unit_test(test_cfi_zplr),
		cmocka_unit_test(test_cleanup_frame),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
