// SPDX-License-Identifier: MIT
/*
 * annotate's pieces without sampling: agent/symbols/disasm (capstone over
 * x86_64 and aarch64 bytes, undecodable bytes, caps, a range of a real
 * binary through its dso) and agent/cmd/annotate_print (percentages by
 * largest remainder that add up to 100.00, the perf-like listing, source
 * lines, the sorted summary).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/annotate.h"
#include "agent/symbols/disasm.h"
#include "agent/symbols/dso.h"
#include "agent/symbols/srcline.h"
#include "agent/symbols/symtab.h"
#include "tests/unit/testlib.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

/* The bytes of case @row of @t ("48 01 c8") appended at @code + *@len,
 * below @cap: how many. */
static uint32_t hex_bytes(const struct tl_table *t, size_t row, uint8_t *code, size_t *len,
			  size_t cap)
{
	const char *s = tl_table_row(t, row)[1];
	uint32_t n = 0;

	while (*s) {
		char *end = NULL;
		unsigned long b = isxdigit((unsigned char)*s) ? strtoul(s, &end, 16) : 0;

		if (end != s + 2 || (*end && *end != ' ') || *len == cap)
			fail_msg("%s: bytes '%s'", tl_table_where(t, row), tl_table_row(t, row)[1]);
		code[(*len)++] = (uint8_t)b;
		n++;
		s = *end ? end + 1 : end;
	}
	if (n == 0)
		fail_msg("%s: no bytes", tl_table_where(t, row));
	return n;
}

/*
 * Decodes the listing tests/unit/data/@name (address, bytes, text: see the
 * file) for @machine: the bytes of all its lines from the first line's
 * address must come back as its instructions, one a line.
 */
static void check_decode(uint16_t machine, const char *name)
{
	struct tl_table *t = tl_table_load(name, 3);
	size_t nwant = tl_table_rows(t), len = 0, n = 0;
	uint8_t code[256];
	uint32_t *sizes = calloc(nwant, sizeof(*sizes));
	struct disasm_insn *v = NULL;

	assert_non_null(sizes);
	for (size_t i = 0; i < nwant; i++)
		sizes[i] = hex_bytes(t, i, code, &len, sizeof(code));
	assert_int_equal(disasm_bytes(machine, code, len, tl_table_u64(t, 0, 0), &v, &n), 0);
	for (size_t i = 0; i < n && i < nwant; i++) {
		const char *const *w = tl_table_row(t, i);
		uint64_t addr = tl_table_u64(t, i, 0);

		if (v[i].addr != addr || v[i].size != sizes[i] || strcmp(v[i].text, w[2]))
			fail_msg("%s: %#llx/%u '%s', want %#llx/%u '%s'", tl_table_where(t, i),
				 (unsigned long long)v[i].addr, v[i].size, v[i].text,
				 (unsigned long long)addr, sizes[i], w[2]);
	}
	if (n != nwant)
		fail_msg("%s: %zu instructions, want %zu", name, n, nwant);
	free(v);
	free(sizes);
	tl_table_free(t);
}

static void test_x86(void **state)
{
	check_decode(EM_X86_64, "disasm_x86_64.tsv");
}

static void test_aarch64(void **state)
{
	check_decode(EM_AARCH64, "disasm_aarch64.tsv");
}

static void test_refusals(void **state)
{
	static const uint8_t one = 0xc3;
	struct disasm_insn *v = NULL;
	size_t n = 0;
	uint8_t *big = calloc(DISASM_MAX_BYTES + 1, 1);

	assert_non_null(big);
	assert_int_equal(disasm_bytes(EM_386, &one, 1, 0, &v, &n), -ENOTSUP);
	assert_int_equal(disasm_bytes(EM_RISCV, &one, 1, 0, &v, &n), -ENOTSUP);
	assert_int_equal(disasm_bytes(EM_X86_64, &one, 0, 0, &v, &n), -EINVAL);
	assert_int_equal(disasm_bytes(EM_X86_64, big, DISASM_MAX_BYTES + 1, 0, &v, &n), -EFBIG);
	assert_null(v);
	/* exactly the cap is fine: a megabyte of "addb %al, (%rax)" */
	assert_int_equal(disasm_bytes(EM_X86_64, big, DISASM_MAX_BYTES, 0, &v, &n), 0);
	assert_int_equal(n, DISASM_MAX_BYTES / 2);
	free(v);
	free(big);
}

/* A function of the test binary itself, read through its dso. */
static void test_dso_range(void **state)
{
	struct dso *d = dso_open("/proc/self/exe", 0, 0);
	struct symtab *st;
	struct disasm_insn *v = NULL;
	uint64_t off, size, vaddr;
	size_t n = 0;

	assert_non_null(d);
	st = dso_symtab(d, "");
	assert_non_null(st);
	assert_int_equal(symtab_find_sized(st, "test_dso_range", &off, &size), 0);
	assert_true(size > 8 && size < 4096);
	assert_int_equal(dso_off_to_vaddr(d, off, &vaddr), 0);
	assert_int_equal(disasm_dso(d, off, size, &v, &n), 0);
	assert_true(n > 4);
	assert_int_equal(v[0].addr, vaddr);
	/* the instructions tile the range */
	for (size_t i = 1; i < n; i++)
		assert_int_equal(v[i].addr, v[i - 1].addr + v[i - 1].size);
	assert_int_equal(v[n - 1].addr + v[n - 1].size, vaddr + size);
	free(v);
	assert_int_equal(disasm_dso(d, off, DISASM_MAX_BYTES + 1ull, &v, &n), -EFBIG);
	assert_int_equal(disasm_dso(d, (uint64_t)dso_stat(d)->st_size + 4096, 16, &v, &n) < 0, 1);
	dso_put(d);
}

/* Source lines of this very file from the test binary's DWARF (built -g):
 * absolute (joined to the compile directory), with plausible numbers. */
static void test_srcline(void **state)
{
	struct dso *d = dso_open("/proc/self/exe", 0, 0);
	struct symtab *st = d ? dso_symtab(d, "") : NULL;
	struct srcline *sl;
	uint64_t off, size, vaddr;
	const char *file, *again;
	int line, line2;

	assert_non_null(st);
	sl = srcline_open(st);
	assert_non_null(sl);
	assert_int_equal(symtab_find_sized(st, "test_srcline", &off, &size), 0);
	assert_int_equal(dso_off_to_vaddr(d, off, &vaddr), 0);
	assert_int_equal(srcline_find(sl, vaddr, &file, &line), 0);
	assert_true(file[0] == '/');
	assert_non_null(strstr(file, "tests/unit/test_annotate.c"));
	assert_true(line > 100 && line < __LINE__);
	/* the same file interned once */
	assert_int_equal(srcline_find(sl, vaddr + size / 2, &again, &line2), 0);
	assert_ptr_equal(file, again);
	assert_true(line2 >= line);
	assert_int_equal(srcline_find(sl, 0, &file, &line), -ENOENT);
	srcline_free(sl);
	srcline_free(NULL);
	dso_put(d);
}

static uint32_t sum32(const uint32_t *v, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	return s;
}

static void test_percents(void **state)
{
	static const struct {
		uint64_t counts[6];
		size_t n;
		uint32_t want[6];
	} cases[] = {
		{{1, 1, 1}, 3, {3334, 3333, 3333}}, /* the tie goes to the first */
		{{2, 1}, 2, {6667, 3333}},
		{{0, 5, 0}, 3, {0, 10000, 0}},
		{{1, 2, 3, 4, 5, 6}, 6, {476, 952, 1429, 1905, 2381, 2857}},
		{{7, 0, 0, 0, 0, 1}, 6, {8750, 0, 0, 0, 0, 1250}},
		{{0, 0}, 2, {0, 0}},
		{{999999, 1}, 2, {10000, 0}}, /* 0.0001%: 0.00, as it rounds */
	};

	for (size_t c = 0; c < NCASES(cases); c++) {
		uint32_t out[6];

		annot_percents(cases[c].counts, cases[c].n, out);
		for (size_t i = 0; i < cases[c].n; i++)
			if (out[i] != cases[c].want[i])
				fail_msg("case %zu entry %zu: %u, want %u", c, i, out[i],
					 cases[c].want[i]);
	}
	/* many small shares: still exactly 100.00 */
	uint64_t counts[997];
	uint32_t out[997];

	for (size_t i = 0; i < NCASES(counts); i++)
		counts[i] = (i * 7919) % 13;
	assert_int_equal(annot_percents(counts, NCASES(counts), out) > 0, 1);
	assert_int_equal(sum32(out, NCASES(out)), 10000);
}

static void test_print(void **state)
{
	static const struct annot_line v[] = {
		{0x1149, "testq %rdi, %rdi", 0, "/src/hotloop.c", 19, "for (i = 0; i < n; i++) {"},
		{0x115d, "addq %rcx, %rax", 1, "/src/hotloop.c", 20, "acc += i * k;"},
		{0x1160, "movq %rax, %r8", 2, "/src/hotloop.c", 20, "acc += i * k;"},
		{0x1174, "jne 0x115d <f+0x14>", 1, "/src/hotloop.c", 19, "for (i = 0; i < n; i++) {"},
		{0x1176, "retq", 0, NULL, 0, NULL},
	};
	struct annot_view a = {
		.symbol = "f", .module = "/bin/hl", .event = "cpu-clock", .v = v, .n = NCASES(v),
		.top = 10,
	};
	FILE *f = tl_capture_begin();
	char *out;

	assert_int_equal(annot_print(f, &a), 0);
	out = tl_capture_end(f);
	static const char *const want[] = {
		" Percent |\tSource code & Disassembly of /bin/hl for cpu-clock (4 samples)\n",
		"         :\t0000000000001149 <f>:\n",
		"         :\thotloop.c:19\tfor (i = 0; i < n; i++) {\n"
		"    0.00 :\t    1149:\ttestq %rdi, %rdi\n"
		"         :\thotloop.c:20\tacc += i * k;\n"
		"   25.00 :\t    115d:\taddq %rcx, %rax\n"
		"   50.00 :\t    1160:\tmovq %rax, %r8\n"
		"         :\thotloop.c:19\tfor (i = 0; i < n; i++) {\n"
		"   25.00 :\t    1174:\tjne 0x115d <f+0x14>\n"
		"    0.00 :\t    1176:\tretq\n",
		" Sorted summary for f (hottest source lines first):\n"
		"   75.00  hotloop.c:20  acc += i * k;\n"
		"   25.00  hotloop.c:19  for (i = 0; i < n; i++) {\n",
	};
	for (size_t i = 0; i < NCASES(want); i++)
		if (!strstr(out, want[i]))
			fail_msg("missing:\n%s\nin:\n%s", want[i], out);
	free(out);

	/* hostile names and source text: no control character gets through */
	static const struct annot_line hv[] = {
		{0x10, "callq 0x20 <evil\x1b]0;pwned\x07>", 1, "/src/a\x1b[2Jb.c", 3, "x;\r\x1b[31m\ty"},
	};
	struct annot_view h = {
		.symbol = "s\x1b[1m", .module = "/bin/\x7fm\nn", .event = "cpu-clock", .v = hv,
		.n = 1, .top = 5,
	};

	f = tl_capture_begin();
	assert_int_equal(annot_print(f, &h), 0);
	out = tl_capture_end(f);
	for (const char *p = out; *p; p++)
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
			fail_msg("control character %#x at %zu in:\n%s", *p, (size_t)(p - out), out);
	if (!strstr(out, "Disassembly of /bin/?m?n for") || !strstr(out, "<evil?]0;pwned?>") ||
	    !strstr(out, "a?[2Jb.c:3\tx;??[31m y"))
		fail_msg("hostile listing:\n%s", out);
	free(out);

	/* no DWARF: the summary is by instruction, and --top 1 keeps one */
	struct annot_line nv[NCASES(v)];

	memcpy(nv, v, sizeof(v));
	for (size_t i = 0; i < NCASES(nv); i++)
		nv[i].file = nv[i].src = NULL;
	a.v = nv;
	a.top = 1;
	f = tl_capture_begin();
	assert_int_equal(annot_print(f, &a), 0);
	out = tl_capture_end(f);
	if (!strstr(out, "(hottest instructions first):\n   50.00  1160: movq %rax, %r8\n") ||
	    strstr(out, "115d: addq") || strstr(out, "hotloop.c"))
		fail_msg("no-DWARF listing:\n%s", out);
	free(out);
}

TL_MAIN(test_x86, test_aarch64, test_refusals, test_dso_range, test_srcline, test_percents,
	test_print)
