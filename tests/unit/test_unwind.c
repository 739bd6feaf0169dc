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
 * reuse, and a small benchmark (printed, not asserted).
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
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct sample_buf b;
		int n;

		if (sizes[i] > snap.stack_size)
			continue;
		sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, sizes[i],
			    &self_maps);
		n = unwind_dwarf(c, &b.s, ips, MAX_FRAMES);
		assert_in_range(n, 1, full_n);
		/* What it finds before running out of stack is the true chain. */
		assert_memory_equal(ips, full_ips, (size_t)n * sizeof(ips[0]));
		if (sizes[i] == 64)
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
	uint64_t ips[MAX_FRAMES], loads;
	struct sample_buf b;
	const int rounds = 10000;
	double t0, dt;

	assert_non_null(c);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	loads = unwind_cache_loads(c);
	t0 = now();
	for (int i = 0; i < rounds; i++)
		if (unwind_dwarf(c, &b.s, ips, MAX_FRAMES) != full_n)
			fail_msg("round %d: chain changed", i);
	dt = now() - t0;
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	/* The whole point of the cache: no file read after the first unwind. */
	assert_int_equal(unwind_cache_loads(c), loads);
	print_message("unwind: %d unwinds of %d frames in %.3f s: %.0f unwinds/s, %.2f us/frame\n",
		      rounds, full_n, dt, rounds / dt, dt * 1e6 / rounds / full_n);
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
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
