// SPDX-License-Identifier: MIT
/*
 * agent/usdt on synthetic ELF files built here byte by byte (64- and
 * 32-bit, little- and big-endian, moved .stapsdt.base, semaphores in and
 * out of sections, malformed notes). The fixture is usdt_fix.h.
 */
#include "tests/unit/usdt_fix.h"

/* ---- synthetic ELF files ---- */

/*
 * Layout, the same for both classes (addresses fit 32 bits):
 *   PT_LOAD R+X  off 0      vaddr 0x400000 filesz 0x400
 *   PT_LOAD RW   off 0x1000 vaddr 0x601000 filesz data_filesz, memsz 0x110
 *   0x200  16 NOPs (probe sites at SYN_PC..)
 *   0x300  .stapsdt.base (1 byte)
 *   0x1000 .probes (0x10 bytes of semaphores), then .bss (NOBITS) at 0x601010
 *   0x1100 the note section(s), .shstrtab, section headers
 */
#define SYN_PC 0x400200ull
#define SYN_BASE 0x400300ull
#define SYN_PROBES 0x601000ull
#define SYN_BSS 0x601010ull

struct syn_note {
	const char *owner; /* NULL = "stapsdt" */
	uint32_t type;     /* 0 = 3 */
	uint64_t pc, base, sema;
	const char *provider, *name, *args;
	size_t trim;       /* bytes cut from the end of the descriptor */
	int32_t descsz_add; /* added to the recorded descsz only */
};

struct syn {
	bool is32, msb;
	uint16_t machine;   /* 0 = EM_X86_64 / EM_386 */
	bool no_base_sec, no_probes_sec, dup_note_sec, decoys;
	bool no_data_bytes; /* data PT_LOAD with filesz 0 */
	const struct syn_note *notes;
	size_t nnotes;
};

struct sbuf {
	uint8_t *b;
	size_t len, cap;
	bool msb;
};

static void sb_reserve(struct sbuf *s, size_t end)
{
	if (end <= s->cap)
		return;
	s->b = realloc(s->b, end + 4096);
	assert_non_null(s->b);
	memset(s->b + s->cap, 0, end + 4096 - s->cap);
	s->cap = end + 4096;
}

static void sb_put(struct sbuf *s, size_t off, uint64_t v, unsigned n)
{
	sb_reserve(s, off + n);
	for (unsigned i = 0; i < n; i++)
		s->b[off + (s->msb ? n - 1 - i : i)] = (uint8_t)(v >> (8 * i));
	if (off + n > s->len)
		s->len = off + n;
}

static void sb_bytes(struct sbuf *s, size_t off, const void *p, size_t n)
{
	sb_reserve(s, off + n);
	memcpy(s->b + off, p, n);
	if (off + n > s->len)
		s->len = off + n;
}

static size_t align4(size_t x)
{
	return (x + 3) & ~(size_t)3;
}

/* Notes at @off; returns their size. */
static size_t syn_notes(struct sbuf *s, const struct syn *y, size_t off)
{
	unsigned as = y->is32 ? 4 : 8;
	size_t start = off;

	for (size_t i = 0; i < y->nnotes; i++) {
		const struct syn_note *n = &y->notes[i];
		const char *owner = n->owner ? n->owner : "stapsdt";
		const char *str[3] = { n->provider, n->name, n->args ? n->args : "" };
		size_t namesz = strlen(owner) + 1, descsz = 3 * (size_t)as, d;

		for (int k = 0; k < 3; k++)
			descsz += strlen(str[k]) + 1;
		assert_true(n->trim <= descsz);
		descsz -= n->trim;
		sb_put(s, off, namesz, 4);
		sb_put(s, off + 4, (uint64_t)((int64_t)descsz + n->descsz_add) & 0xffffffffu, 4);
		sb_put(s, off + 8, n->type ? n->type : 3, 4);
		sb_bytes(s, off + 12, owner, namesz);
		d = off + 12 + align4(namesz);
		/* the descriptor is built whole, then cut: the cut bytes are zeroed */
		sb_put(s, d, n->pc, as);
		sb_put(s, d + as, n->base, as);
		sb_put(s, d + 2 * as, n->sema, as);
		{
			size_t p = d + 3 * (size_t)as;

			for (int k = 0; k < 3; k++) {
				sb_bytes(s, p, str[k], strlen(str[k]) + 1);
				p += strlen(str[k]) + 1;
			}
			sb_reserve(s, p);
			memset(s->b + d + descsz, 'Z', p - (d + descsz));
		}
		off = d + align4(descsz);
	}
	return off - start;
}

struct syn_sec {
	const char *name;
	uint32_t type;
	uint64_t flags, addr, off, size;
};

/* Where p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_flags and
 * p_align sit in a 32-bit and a 64-bit program header. */
static const uint8_t ph32_at[8] = { 0, 4, 8, 12, 16, 20, 24, 28 };
static const uint8_t ph64_at[8] = { 0, 8, 16, 24, 32, 40, 4, 48 };
/* Where the ten fields of Elf64_Shdr sit (Elf32_Shdr: 4 bytes each, in order). */
static const uint8_t sh64_at[10] = { 0, 4, 8, 16, 24, 32, 40, 44, 48, 56 };

static void syn_write(const struct syn *y, const char *path)
{
	struct sbuf s = { .msb = y->msb };
	struct syn_sec secs[12];
	char shstr[256];
	size_t nsec = 0, shstr_len = 1, off, notes_len, shoff;
	unsigned as = y->is32 ? 4 : 8;
	size_t ehsize = y->is32 ? 52 : 64, phsize = y->is32 ? 32 : 56, shsize = y->is32 ? 40 : 64;
	uint32_t names[12];
	uint16_t machine = y->machine ? y->machine : y->is32 ? EM_386 : EM_X86_64;

	/* contents */
	{
		uint8_t nops[16];

		memset(nops, 0x90, sizeof(nops));
		sb_bytes(&s, 0x200, nops, sizeof(nops));
		sb_put(&s, 0x300, 0, 1);
		sb_put(&s, 0x1000, 0, 8);
		sb_put(&s, 0x1008, 0, 8);
	}
	notes_len = syn_notes(&s, y, 0x1100);
	off = 0x1100 + notes_len;

	secs[nsec++] = (struct syn_sec){ "", SHT_NULL, 0, 0, 0, 0 };
	if (!y->no_base_sec)
		secs[nsec++] = (struct syn_sec){ ".stapsdt.base", SHT_PROGBITS, SHF_ALLOC, SYN_BASE, 0x300, 1 };
	if (!y->no_probes_sec)
		secs[nsec++] = (struct syn_sec){ ".probes", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, SYN_PROBES, 0x1000, 0x10 };
	secs[nsec++] = (struct syn_sec){ ".bss", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, SYN_BSS, 0x1010, 0x100 };
	secs[nsec++] = (struct syn_sec){ ".note.stapsdt", SHT_NOTE, 0, 0, 0x1100, notes_len };
	if (y->dup_note_sec)
		secs[nsec++] = (struct syn_sec){ ".note.stapsdt", SHT_NOTE, 0, 0, 0x1100, notes_len };
	if (y->decoys) {
		secs[nsec++] = (struct syn_sec){ ".note.other", SHT_NOTE, 0, 0, 0x1100, notes_len };
		secs[nsec++] = (struct syn_sec){ ".note.stapsdt", SHT_PROGBITS, 0, 0, 0x1100, notes_len };
	}
	secs[nsec++] = (struct syn_sec){ ".shstrtab", SHT_STRTAB, 0, 0, 0, 0 };

	/* section names */
	shstr[0] = '\0';
	for (size_t i = 0; i < nsec; i++) {
		size_t n = strlen(secs[i].name) + 1;

		if (i == 0) {
			names[i] = 0;
			continue;
		}
		assert_true(shstr_len + n <= sizeof(shstr));
		memcpy(shstr + shstr_len, secs[i].name, n);
		names[i] = (uint32_t)shstr_len;
		shstr_len += n;
	}
	secs[nsec - 1].off = off;
	secs[nsec - 1].size = shstr_len;
	sb_bytes(&s, off, shstr, shstr_len);
	shoff = (off + shstr_len + 7) & ~(size_t)7;

	/* ELF header */
	{
		uint8_t ident[EI_NIDENT] = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3 };

		ident[EI_CLASS] = y->is32 ? ELFCLASS32 : ELFCLASS64;
		ident[EI_DATA] = y->msb ? ELFDATA2MSB : ELFDATA2LSB;
		ident[EI_VERSION] = EV_CURRENT;
		sb_bytes(&s, 0, ident, sizeof(ident));
		sb_put(&s, 16, ET_EXEC, 2);
		sb_put(&s, 18, machine, 2);
		sb_put(&s, 20, EV_CURRENT, 4);
		sb_put(&s, 24, SYN_PC, as);                 /* e_entry */
		sb_put(&s, 24 + as, 0x40, as);              /* e_phoff */
		sb_put(&s, 24 + 2 * as, shoff, as);         /* e_shoff */
		sb_put(&s, 24 + 3 * as, 0, 4);              /* e_flags */
		sb_put(&s, 28 + 3 * as, ehsize, 2);
		sb_put(&s, 30 + 3 * as, phsize, 2);
		sb_put(&s, 32 + 3 * as, 2, 2);              /* e_phnum */
		sb_put(&s, 34 + 3 * as, shsize, 2);
		sb_put(&s, 36 + 3 * as, nsec, 2);
		sb_put(&s, 38 + 3 * as, nsec - 1, 2);       /* e_shstrndx */
	}

	/* program headers */
	for (int i = 0; i < 2; i++) {
		size_t p = 0x40 + (size_t)i * phsize;
		uint64_t poff = i ? 0x1000 : 0, vaddr = i ? SYN_PROBES : 0x400000;
		uint64_t filesz = i ? (y->no_data_bytes ? 0 : 0x10) : 0x400, memsz = i ? 0x110 : 0x400;
		uint32_t flags = i ? PF_R | PF_W : PF_R | PF_X;

		const uint64_t v[] = { PT_LOAD, poff, vaddr, vaddr, filesz, memsz, flags, 0x1000 };

		/* Elf32_Phdr and Elf64_Phdr order their fields differently */
		for (size_t k = 0; k < 8; k++)
			sb_put(&s, p + (y->is32 ? ph32_at[k] : ph64_at[k]), v[k],
			       y->is32 || k == 0 || k == 6 ? 4 : 8);
	}

	/* section headers */
	for (size_t i = 0; i < nsec; i++) {
		size_t p = shoff + i * shsize;
		uint64_t align = secs[i].type == SHT_NOTE ? 4 : 1;

		const uint64_t v[] = { names[i], secs[i].type, secs[i].flags, secs[i].addr,
				       secs[i].off, secs[i].size, 0, 0, align, 0 };

		/* sh_name, sh_type, sh_link and sh_info are 4 bytes in both */
		for (size_t k = 0; k < 10; k++)
			sb_put(&s, p + (y->is32 ? 4 * k : sh64_at[k]), v[k],
			       y->is32 || k < 2 || k == 6 || k == 7 ? 4 : 8);
	}
	write_file(path, s.b, s.len);
	free(s.b);
}

/* @y written to @dir/syn and read back: a sane list of @count probes. */
static struct usdt_list *syn_read(const struct syn *y, const char *dir, size_t count)
{
	char path[PATH_MAX];
	struct usdt_list *l;
	struct stat st;

	tl_pathf(path, sizeof(path), "%s/syn", dir);
	syn_write(y, path);
	l = usdt_read(path);
	assert_non_null(l);
	assert_int_equal(stat(path, &st), 0);
	assert_sane(l, (size_t)st.st_size);
	assert_int_equal(usdt_count(l), count);
	return l;
}

#define NOTES(...)                                                                \
	.notes = (const struct syn_note[]){ __VA_ARGS__ },                        \
	.nnotes = sizeof((const struct syn_note[]){ __VA_ARGS__ }) / sizeof(struct syn_note)

static int syn_setup(void **state)
{
	*state = tl_tmpdir("cgperf-usdt");
	return 0;
}

static int syn_teardown(void **state)
{
	tl_rmtree(*state);
	return 0;
}

/* the plain case, a moved .stapsdt.base, none */
static void test_syn_placement(void **state)
{
	const char *dir = *state;
	const struct usdt_probe *p;
	struct usdt_list *l;

	/* the plain case: 64-bit, a semaphore in .probes, base as linked */
	{
		struct syn y = { NOTES({ .pc = SYN_PC + 3, .base = SYN_BASE, .sema = SYN_PROBES + 2,
					 .provider = "prov", .name = "hit",
					 .args = "-4@%eax 8@$0x10 -4@-20(%rbp)" }) };

		l = syn_read(&y, dir, 1);
		assert_int_equal(usdt_skipped(l), 0);
		p = usdt_find(l, "prov", "hit");
		assert_non_null(p);
		assert_ptr_equal(p, usdt_get(l, 0));
		assert_string_equal(p->provider, "prov");
		assert_string_equal(p->name, "hit");
		assert_int_equal(p->pc_vaddr, SYN_PC + 3);
		assert_int_equal(p->pc_off, 0x203);
		assert_int_equal(p->sema_vaddr, SYN_PROBES + 2);
		assert_int_equal(p->sema_off, 0x1002);
		assert_string_equal(p->arg_spec, "-4@%eax 8@$0x10 -4@-20(%rbp)");
		assert_int_equal(p->nargs, 3);
		assert_int_equal(p->args[0].kind, USDT_ARG_REG);
		assert_int_equal(p->args[1].kind, USDT_ARG_CONST);
		assert_true(p->args[1].value == 16);
		assert_int_equal(p->args[2].kind, USDT_ARG_MEM);
		assert_true(p->args[2].value == -20);
		assert_null(usdt_find(l, "prov", "miss"));
		assert_null(usdt_find(l, "other", "hit"));
		assert_ptr_equal(usdt_find(l, NULL, "hit"), p);
		assert_null(usdt_find_next(l, p, "prov", "hit"));
		usdt_free(l);
	}

	/* .stapsdt.base moved by 0x100 after linking: pc and semaphore follow */
	{
		struct syn y = { NOTES({ .pc = SYN_PC + 1 - 0x100, .base = SYN_BASE - 0x100,
					 .sema = SYN_PROBES + 4 - 0x100, .provider = "p", .name = "moved" },
				       { .pc = SYN_PC + 2 + 0x5000, .base = SYN_BASE + 0x5000,
					 .sema = 0, .provider = "p", .name = "moved_up" }) };

		l = syn_read(&y, dir, 2);
		p = usdt_find(l, "p", "moved");
		assert_int_equal(p->pc_vaddr, SYN_PC + 1);
		assert_int_equal(p->pc_off, 0x201);
		assert_int_equal(p->sema_vaddr, SYN_PROBES + 4);
		assert_int_equal(p->sema_off, 0x1004);
		p = usdt_find(l, "p", "moved_up");
		assert_int_equal(p->pc_off, 0x202);
		/* no semaphore stays no semaphore */
		assert_int_equal(p->sema_vaddr, 0);
		assert_int_equal(p->sema_off, 0);
		assert_int_equal(p->nargs, 0);
		assert_string_equal(p->arg_spec, "");
		usdt_free(l);
	}

	/* the same notes without a .stapsdt.base section: taken as they are,
	 * so they point outside the file and are dropped; a note base of 0
	 * means "no base" and is not adjusted against the section either */
	{
		struct syn y = { .no_base_sec = true,
				 NOTES({ .pc = SYN_PC + 1 - 0x1000, .base = SYN_BASE - 0x1000,
					 .provider = "p", .name = "moved" },
				       { .pc = SYN_PC + 5, .base = SYN_BASE - 0x1000, .provider = "p",
					 .name = "asis" }) };
		struct syn z = { NOTES({ .pc = SYN_PC + 6, .base = 0, .provider = "p", .name = "nobase" }) };

		l = syn_read(&y, dir, 1);
		assert_int_equal(usdt_skipped(l), 1);
		assert_int_equal(usdt_get(l, 0)->pc_off, 0x205);
		usdt_free(l);
		l = syn_read(&z, dir, 1);
		assert_int_equal(usdt_get(l, 0)->pc_off, 0x206);
		usdt_free(l);
	}
}

/* semaphores and pcs in and out of the file's bytes */
static void test_syn_semaphores(void **state)
{
	const char *dir = *state;
	struct usdt_list *l;

	/* semaphore: in .probes whose segment has no file bytes (found by
	 * section); with no section covering it (found by PT_LOAD); in .bss
	 * or nowhere (dropped: an attach would never fire) */
	{
		struct syn sec = { .no_data_bytes = true,
				   NOTES({ .pc = SYN_PC, .base = SYN_BASE, .sema = SYN_PROBES + 6,
					   .provider = "p", .name = "n" }) };
		struct syn load = { .no_probes_sec = true,
				    NOTES({ .pc = SYN_PC, .base = SYN_BASE, .sema = SYN_PROBES + 8,
					    .provider = "p", .name = "n" }) };
		struct syn bss = { NOTES({ .pc = SYN_PC, .base = SYN_BASE, .sema = SYN_BSS + 2,
					   .provider = "p", .name = "bss" },
					 { .pc = SYN_PC, .base = SYN_BASE, .sema = 0x900000,
					   .provider = "p", .name = "nowhere" },
					 /* straddles the end of .probes and of the segment */
					 { .pc = SYN_PC, .base = SYN_BASE, .sema = SYN_PROBES + 0xf,
					   .provider = "p", .name = "edge" }) };
		struct syn none = { .no_data_bytes = true, .no_probes_sec = true,
				    NOTES({ .pc = SYN_PC, .base = SYN_BASE, .sema = SYN_PROBES,
					    .provider = "p", .name = "n" }) };

		l = syn_read(&sec, dir, 1);
		assert_int_equal(usdt_get(l, 0)->sema_off, 0x1006);
		usdt_free(l);
		l = syn_read(&load, dir, 1);
		assert_int_equal(usdt_get(l, 0)->sema_off, 0x1008);
		usdt_free(l);
		l = syn_read(&bss, dir, 0);
		assert_int_equal(usdt_skipped(l), 3);
		usdt_free(l);
		l = syn_read(&none, dir, 0);
		assert_int_equal(usdt_skipped(l), 1);
		usdt_free(l);
	}

	/* pc outside any segment's file bytes: dropped */
	{
		struct syn y = { NOTES({ .pc = 0x400400, .base = SYN_BASE, .provider = "p", .name = "past" },
				       { .pc = 0x3fffff, .base = SYN_BASE, .provider = "p", .name = "before" },
				       { .pc = SYN_BSS, .base = SYN_BASE, .provider = "p", .name = "bss" },
				       { .pc = SYN_PC + 15, .base = SYN_BASE, .provider = "p", .name = "last" }) };

		l = syn_read(&y, dir, 1);
		assert_int_equal(usdt_skipped(l), 3);
		assert_int_equal(usdt_get(l, 0)->pc_off, 0x20f);
		usdt_free(l);
	}
}

/* decoy notes, several sites, argument strings */
static void test_syn_notes(void **state)
{
	const char *dir = *state;
	const struct usdt_probe *p;
	struct usdt_list *l;

	/* other owners and types are not ours, and neither are notes in a
	 * section of another name or another type; a second .note.stapsdt
	 * section is read too */
	{
		struct syn y = { .decoys = true,
				 NOTES({ .owner = "stapsdX", .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "owner" },
				       { .owner = "stapsd", .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "short" },
				       { .owner = "GNU", .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "gnu" },
				       { .type = 1, .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "type" },
				       { .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "ours" }) };
		struct syn dup = { .dup_note_sec = true,
				   NOTES({ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "twice" }) };

		l = syn_read(&y, dir, 1);
		assert_int_equal(usdt_skipped(l), 0);
		assert_string_equal(usdt_get(l, 0)->name, "ours");
		usdt_free(l);
		l = syn_read(&dup, dir, 2);
		usdt_free(l);
	}

	/* several sites of one probe */
	{
		struct syn y = { NOTES({ .pc = SYN_PC + 1, .base = SYN_BASE, .provider = "p", .name = "a" },
				       { .pc = SYN_PC + 2, .base = SYN_BASE, .provider = "p", .name = "b" },
				       { .pc = SYN_PC + 3, .base = SYN_BASE, .provider = "q", .name = "a" },
				       { .pc = SYN_PC + 4, .base = SYN_BASE, .provider = "p", .name = "a" }) };
		const struct usdt_probe *q;
		uint64_t offs[4];
		size_t n = 0;

		l = syn_read(&y, dir, 4);
		for (q = usdt_find(l, "p", "a"); q; q = usdt_find_next(l, q, "p", "a")) {
			assert_true(n < 4);
			offs[n++] = q->pc_off;
		}
		assert_int_equal(n, 2);
		assert_int_equal(offs[0], 0x201);
		assert_int_equal(offs[1], 0x204);
		n = 0;
		for (q = usdt_find(l, NULL, "a"); q; q = usdt_find_next(l, q, NULL, "a"))
			n++;
		assert_int_equal(n, 3);
		/* a pointer that is not into the list */
		assert_null(usdt_find_next(l, &(struct usdt_probe){ 0 }, "p", "a"));
		usdt_free(l);
	}

	/* argument strings: unparsed ones keep the probe with nargs = 0 */
	{
		struct syn y = { NOTES(
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "rip",
			  .args = "-4@$1 -4@NBuffers(%rip)" },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "twelve",
			  .args = "1@%al 2@%ax 4@%eax 8@%rax 1@%bl 2@%bx 4@%ebx 8@%rbx 1@%cl 2@%cx 4@%ecx 8@%rcx" },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "thirteen",
			  .args = "1@%al 2@%ax 4@%eax 8@%rax 1@%bl 2@%bx 4@%ebx 8@%rbx 1@%cl 2@%cx 4@%ecx 8@%rcx $1" },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "spaces",
			  .args = "  8@%rax   -4@$3 " },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "long",
			  .args = "8@0x0000000000000000000000000000000000000000000000000000000000000008(%rax)" }) };

		l = syn_read(&y, dir, 5);
		p = usdt_find(l, "p", "rip");
		assert_int_equal(p->nargs, 0);
		assert_string_equal(p->arg_spec, "-4@$1 -4@NBuffers(%rip)");
		assert_int_equal(usdt_find(l, "p", "twelve")->nargs, 12);
		assert_int_equal(usdt_find(l, "p", "twelve")->args[11].reg, PERF_REG_X86_CX);
		assert_int_equal(usdt_find(l, "p", "thirteen")->nargs, 0);
		p = usdt_find(l, "p", "spaces");
		assert_int_equal(p->nargs, 2);
		assert_true(p->args[1].value == 3);
		assert_int_equal(usdt_find(l, "p", "long")->nargs, 0);
		usdt_free(l);
	}
}

/* malformed descriptors, 32-bit, big-endian, no notes */
static void test_syn_malformed(void **state)
{
	const char *dir = *state;
	const struct usdt_probe *p;
	struct usdt_list *l;

	/* malformed descriptors: dropped and counted, the rest still read */
	{
		struct syn y = { NOTES(
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p:q", .name = "colon" },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "new\nline" },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "sp ace" },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "", .name = "noprov" },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "" },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "ctl", .args = "8@%rax\t$1" },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "hi", .args = "\x80" },
			/* args not terminated, then nothing terminated, then no strings,
			 * then not even the addresses */
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "cut1", .args = "8@%rax", .trim = 1 },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "cut2", .trim = 3 },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "cut3", .trim = 7 },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "cut4", .trim = 20 },
			{ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "good" }) };

		l = syn_read(&y, dir, 1);
		assert_int_equal(usdt_skipped(l), 11);
		assert_string_equal(usdt_get(l, 0)->name, "good");
		usdt_free(l);
	}

	/* a descriptor size running past the section ends the walk */
	{
		struct syn y = { NOTES({ .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "first" },
				       { .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "huge",
					 .descsz_add = 0x7fff0000 },
				       { .pc = SYN_PC, .base = SYN_BASE, .provider = "p", .name = "after" }) };

		l = syn_read(&y, dir, 1);
		assert_string_equal(usdt_get(l, 0)->name, "first");
		assert_true(usdt_skipped(l) >= 1);
		usdt_free(l);
	}

	/* 32-bit: 4-byte addresses, args of an i386 binary */
	{
		struct syn y = { .is32 = true,
				 NOTES({ .pc = SYN_PC + 7 - 0x10, .base = SYN_BASE - 0x10, .sema = SYN_PROBES + 2 - 0x10,
					 .provider = "p32", .name = "n", .args = "-4@%eax 4@8(%esp)" }) };

		l = syn_read(&y, dir, 1);
		p = usdt_get(l, 0);
		assert_int_equal(p->pc_vaddr, SYN_PC + 7);
		assert_int_equal(p->pc_off, 0x207);
		assert_int_equal(p->sema_off, 0x1002);
		assert_int_equal(p->nargs, 2);
		assert_int_equal(p->args[1].kind, USDT_ARG_MEM);
		assert_int_equal(p->args[1].reg, PERF_REG_X86_SP);
		assert_int_equal(p->args[1].reg_bytes, 4);
		usdt_free(l);
	}

	/* big-endian 64-bit (s390x): addresses read in the file's byte order;
	 * its argument syntax is not x86's, so nothing is parsed */
	{
		struct syn y = { .msb = true, .machine = EM_S390,
				 NOTES({ .pc = SYN_PC + 9, .base = SYN_BASE, .sema = SYN_PROBES + 4,
					 .provider = "be", .name = "n", .args = "8@%r2 -4@$1" }) };

		l = syn_read(&y, dir, 1);
		p = usdt_get(l, 0);
		assert_int_equal(p->pc_off, 0x209);
		assert_int_equal(p->sema_off, 0x1004);
		assert_int_equal(p->nargs, 0);
		assert_string_equal(p->arg_spec, "8@%r2 -4@$1");
		usdt_free(l);
	}

	/* no notes at all */
	{
		struct syn y = { 0 };

		l = syn_read(&y, dir, 0);
		assert_int_equal(usdt_skipped(l), 0);
		assert_null(usdt_get(l, 0));
		assert_null(usdt_find(l, "p", "n"));
		usdt_free(l);
	}
}

TL_MAIN_FIXTURE(syn_setup, syn_teardown, test_syn_placement, test_syn_semaphores, test_syn_notes,
	test_syn_malformed)
