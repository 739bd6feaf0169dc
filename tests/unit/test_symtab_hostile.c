// SPDX-License-Identifier: MIT
/*
 * agent/symtab on hostile files (the fixture: symtab_fix.h): what is not
 * ELF or not a regular file, truncated copies of the symfix workload, and
 * copies corrupted one field at a time (section links, counts, sizes,
 * names, program headers, notes): each opens with what can be trusted, or
 * fails cleanly, never reads out of bounds (run it under ASan).
 */
#include "tests/unit/symtab_fix.h"

/* ---- hostile files ---- */

static void assert_opens_empty_or_fails(const char *path)
{
	struct symtab *s;
	const char *name, *inl[4];
	uint64_t so, v;

	errno = 0;
	s = symtab_open(path, "");
	if (!s) {
		assert_true(errno == ENOEXEC || errno == ENOENT || errno == EINVAL);
		return;
	}
	/* whatever survived must be usable */
	for (uint64_t off = 0; off < 1 << 20; off += 61) {
		if (symtab_lookup(s, off, &name, &so) == 0)
			assert_non_null(name);
		symtab_inlines(s, off, inl, 4);
		symtab_off_to_vaddr(s, off, &v);
	}
	assert_non_null(symtab_build_id(s));
	assert_non_null(symtab_source(s));
	symtab_free(s);
}

static void test_not_elf(void **state)
{
	char *root = tl_tmpdir("cgperf-symtab");
	char path[PATH_MAX];
	unsigned char junk[65536];
	uint32_t x = 12345;

	errno = 0;
	assert_null(symtab_open("/nonexistent/libfoo.so", ""));
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_null(symtab_open(root, ""));
	assert_int_equal(errno, ENOEXEC);
	errno = 0;
	assert_null(symtab_open(NULL, ""));
	assert_int_equal(errno, EINVAL);

	tl_pathf(path, sizeof(path), "%s/empty", root);
	write_file(path, "", 0);
	errno = 0;
	assert_null(symtab_open(path, ""));
	assert_int_equal(errno, ENOEXEC);

	for (size_t i = 0; i < sizeof(junk); i++) {
		x = x * 1103515245u + 12345u;
		junk[i] = (unsigned char)(x >> 16);
	}
	tl_pathf(path, sizeof(path), "%s/random", root);
	write_file(path, junk, sizeof(junk));
	errno = 0;
	assert_null(symtab_open(path, ""));
	assert_int_equal(errno, ENOEXEC);

	/* ELF magic followed by noise */
	memcpy(junk, ELFMAG, SELFMAG);
	write_file(path, junk, sizeof(junk));
	assert_opens_empty_or_fails(path);

	/* a FIFO must not block the open */
	tl_pathf(path, sizeof(path), "%s/fifo", root);
	assert_int_equal(mkfifo(path, 0600), 0);
	errno = 0;
	assert_null(symtab_open(path, ""));
	assert_int_equal(errno, ENOEXEC);
	tl_rmtree(root);
}

static void test_truncated(void **state)
{
	static const size_t cuts[] = { 3000, 64, 63, 200, 4096, 10000 };
	char orig[PATH_MAX], path[PATH_MAX];
	char *root = tl_tmpdir("cgperf-symtab");
	size_t len;
	char *bytes;

	symfix_path(orig, sizeof(orig));
	bytes = read_all(orig, &len);
	tl_pathf(path, sizeof(path), "%s/cut", root);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_file(path, bytes, cuts[i] < len ? cuts[i] : len);
		assert_opens_empty_or_fails(path);
	}
	/* the whole file but its last bytes: the section headers sit there */
	write_file(path, bytes, len - 10);
	assert_opens_empty_or_fails(path);
	free(bytes);

	/* and a big real library cut after its first 3000 bytes */
	bytes = read_all("/proc/self/exe", &len);
	write_file(path, bytes, 3000);
	assert_opens_empty_or_fails(path);
	free(bytes);
	tl_rmtree(root);
}

struct corruption {
	const char *what;
	void (*apply)(unsigned char *elf, size_t len, Elf64_Shdr *symtab, Elf64_Shdr *shdrs);
};

static void c_link_out_of_range(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	sym->sh_link = 0xfff0;
}

static void c_link_to_self(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	sym->sh_link = (Elf64_Word)(sym - sh);
}

static void c_huge_count(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	sym->sh_size = 0x7fffffffffffff00ull;
}

static void c_size_past_eof(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	sym->sh_size = n - sym->sh_offset + 24 * 100;
}

static void c_zero_entsize(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	sym->sh_entsize = 0;
}

static void c_values_outside(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	Elf64_Sym *s = (Elf64_Sym *)(e + sym->sh_offset);

	for (size_t i = 0; i < sym->sh_size / sizeof(*s); i++) {
		s[i].st_value ^= 0xdead00000000ull;
		s[i].st_size = ~0ull;
	}
}

static void c_shndx_wild(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	Elf64_Sym *s = (Elf64_Sym *)(e + sym->sh_offset);

	for (size_t i = 0; i < sym->sh_size / sizeof(*s); i++)
		s[i].st_shndx = (Elf64_Section)(0xff00 + i % 0x100);
}

static void c_names_unterminated(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	Elf64_Shdr *str = &sh[sym->sh_link];

	memset(e + str->sh_offset, 'A', str->sh_size);
}

static void c_name_offsets_wild(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	Elf64_Sym *s = (Elf64_Sym *)(e + sym->sh_offset);

	for (size_t i = 0; i < sym->sh_size / sizeof(*s); i++)
		s[i].st_name = 0xfffffff0u - (Elf64_Word)i;
}

static void c_shnum_huge(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	((Elf64_Ehdr *)e)->e_shnum = 0xfeff;
}

static void c_phdrs_wild(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)e;
	Elf64_Phdr *ph = (Elf64_Phdr *)(e + eh->e_phoff);

	for (size_t i = 0; i < eh->e_phnum; i++) {
		ph[i].p_offset = ~0ull - i;
		ph[i].p_filesz = ~0ull;
		ph[i].p_vaddr = ~0ull - 100;
	}
}

static void c_notes_wild(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)e;

	for (size_t i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_NOTE || sh[i].sh_size < 12)
			continue;
		/* namesz and descsz far past the section */
		memset(e + sh[i].sh_offset, 0x7f, 8);
	}
}

static void c_strtab_index_wild(unsigned char *e, size_t n, Elf64_Shdr *sym, Elf64_Shdr *sh)
{
	((Elf64_Ehdr *)e)->e_shstrndx = 0xfffe;
}

static const struct corruption corruptions[] = {
	{ "sh_link out of range", c_link_out_of_range },
	{ "sh_link to itself", c_link_to_self },
	{ "huge symbol count", c_huge_count },
	{ "symbols past EOF", c_size_past_eof },
	{ "sh_entsize 0", c_zero_entsize },
	{ "values outside sections", c_values_outside },
	{ "wild section indexes", c_shndx_wild },
	{ "unterminated strings", c_names_unterminated },
	{ "wild name offsets", c_name_offsets_wild },
	{ "e_shnum huge", c_shnum_huge },
	{ "wild program headers", c_phdrs_wild },
	{ "wild notes", c_notes_wild },
	{ "wild e_shstrndx", c_strtab_index_wild },
};

static Elf64_Shdr *find_symtab(unsigned char *e, size_t len, Elf64_Shdr **shdrs)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)e;

	assert_true(eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len);
	*shdrs = (Elf64_Shdr *)(e + eh->e_shoff);
	for (size_t i = 0; i < eh->e_shnum; i++)
		if ((*shdrs)[i].sh_type == SHT_SYMTAB)
			return &(*shdrs)[i];
	fail_msg("no .symtab");
	return NULL;
}

static void test_corrupt(void **state)
{
	char orig[PATH_MAX], path[PATH_MAX];
	char *root = tl_tmpdir("cgperf-symtab");
	size_t len, symoff, symsize, shoff, shsize;
	unsigned char *bytes, *copy;
	uint32_t x = 777;

	symfix_path(orig, sizeof(orig));
	bytes = read_all(orig, &len);
	copy = malloc(len);
	assert_non_null(copy);
	assert_int_equal(bytes[EI_CLASS], ELFCLASS64);
	tl_pathf(path, sizeof(path), "%s/bad", root);

	for (size_t i = 0; i < sizeof(corruptions) / sizeof(corruptions[0]); i++) {
		Elf64_Shdr *shdrs, *sym;

		memcpy(copy, bytes, len);
		sym = find_symtab(copy, len, &shdrs);
		corruptions[i].apply(copy, len, sym, shdrs);
		write_file(path, copy, len);
		print_message("corruption: %s\n", corruptions[i].what);
		assert_opens_empty_or_fails(path);
	}

	/* random bytes into the headers, the symbols and anywhere */
	memcpy(copy, bytes, len);
	{
		Elf64_Shdr *shdrs, *sym = find_symtab(copy, len, &shdrs);

		symoff = sym->sh_offset;
		symsize = sym->sh_size;
	}
	shoff = ((Elf64_Ehdr *)bytes)->e_shoff;
	shsize = ((Elf64_Ehdr *)bytes)->e_shnum * sizeof(Elf64_Shdr);
	for (int round = 0; round < 300; round++) {
		memcpy(copy, bytes, len);
		for (int k = 0; k < 8; k++) {
			size_t where;

			x = x * 1103515245u + 12345u;
			switch (k % 4) {
			case 0:
				where = (x >> 8) % 64;
				break;
			case 1:
				where = shoff + (x >> 8) % shsize;
				break;
			case 2:
				where = symoff + (x >> 8) % symsize;
				break;
			default:
				where = (x >> 8) % len;
				break;
			}
			x = x * 1103515245u + 12345u;
			copy[where] = (unsigned char)(x >> 16);
		}
		write_file(path, copy, len);
		assert_opens_empty_or_fails(path);
	}
	free(copy);
	free(bytes);
	tl_rmtree(root);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),
	};

	return fixture_run("symtab_hostile", tests, sizeof(tests) / sizeof(tests[0]));
}
