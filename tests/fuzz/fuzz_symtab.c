// SPDX-License-Identifier: MIT
/*
 * libFuzzer over symtab_open(): the ELF reading behind every symbol name
 * (.symtab/.dynsym, section and program headers, the build-id note, the
 * .gnu_debuglink name, .eh_frame_hdr's table of function starts), run on
 * every binary a profiled container maps, so its bytes are hostile. The
 * input is the file. Debuginfo is looked up under a root that does not
 * exist (no host file joins in); DWARF inline names (libdw) are not driven.
 * Properties, beyond no crash and no sanitizer report: every symbol listed
 * has a name, listing stops at the count, a build-id is lowercase hex, and
 * lookups and conversions at offsets across the file return 0 or -ENOENT.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symtab.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ret)
{
	if (ret != 0 && ret != -ENOENT)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size), *id, *name;
	struct symtab *s;
	size_t n;

	if (!path)
		return 0;
	s = symtab_open(path, "/nonexistent/cgperf-fuzz-debug-root");
	if (!s)
		return 0;
	n = symtab_count(s);
	if (!symtab_source(s))
		abort();
	id = symtab_build_id(s);
	if (!id || strlen(id) % 2 || strspn(id, "0123456789abcdef") != strlen(id))
		abort();
	for (size_t i = 0; i < n && i < 4096; i++) {
		uint64_t off, found, sym_off;
		const char *hit;

		name = symtab_name_at(s, i, &off);
		if (!name)
			abort();
		(void)strlen(name);
		check(symtab_find(s, name, &found));
		if (off != UINT64_MAX)
			check(symtab_lookup(s, off, &hit, &sym_off));
	}
	if (symtab_name_at(s, n, NULL))
		abort();
	for (uint64_t k = 0; k <= 64; k++) {
		uint64_t off = size * k / 64, vaddr, back, start, sym_off;
		const char *hit;
		int ret = symtab_lookup(s, off, &hit, &sym_off);

		check(ret);
		/* (sym_off may exceed off: a segment may map an offset to a
		 * higher address, and a symbol's extent is not bounded by its
		 * segment, so only the name is checked) */
		if (!ret && !hit)
			abort();
		if (!ret)
			(void)strlen(hit);
		check(symtab_func_start(s, off, &start));
		ret = symtab_off_to_vaddr(s, off, &vaddr);
		check(ret);
		if (!ret)
			check(symtab_vaddr_to_off(s, vaddr, &back));
	}
	symtab_free(s);
	return 0;
}
