// SPDX-License-Identifier: MIT
/*
 * agent/unwind: DWARF unwinding of a sample-like snapshot of this very
 * process. A chain of functions built without frame pointers (and with
 * junk in RBP while they run, so a frame-pointer walk cannot succeed)
 * captures its registers and a copy of its stack, the way the kernel does
 * for PERF_SAMPLE_REGS_USER/STACK_USER; the test then unwinds the copy
 * after the chain has returned and compares the result with the return
 * addresses each function recorded (the fixture: unwind_fix.h). Here:
 * short and hostile stacks, junk registers, damaged and stripped binaries,
 * CIEs with a personality and FDEs with an LSDA (C++'s "zPLR", hand-built
 * and compiled: this file is built with -fexceptions). The cache, the
 * per-process state, signal frames, function boundaries and epilogues are
 * test_unwind_proc.c.
 *
 * Every stack handed to unwind_dwarf() is a heap block of exactly
 * stack_size bytes, so under ASan a read past the copy is caught.
 */
#include "tests/unit/unwind_fix.h"

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

/* fixture_chain takes the snapshot the others use: keep it first. */
TL_MAIN_GROUP(group_setup, group_teardown, fixture_chain, test_regs_mask, test_masks_and_args,
	test_truncated, test_junk, test_damaged_binaries, test_cfi_zplr, test_cleanup_frame)
