// SPDX-License-Identifier: MIT
/*
 * agent/symbols/elfobj: this test's own binary opened both ways (segments,
 * an executable one, .eh_frame_hdr inside a segment, the build-id that
 * readelf would print), the refusals (missing file, directory, text file,
 * truncated ELF header), a close that can be repeated, and the hex helper.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/elfobj.h"
#include "tests/unit/testlib.h"

static void check_self(Elf_Cmd cmd)
{
	struct elfobj o;
	bool exec = false, hdr_in_load = false;
	uint8_t bid[ELFOBJ_MAX_BUILD_ID];
	size_t n;

	assert_int_equal(elfobj_open(&o, "/proc/self/exe", cmd), 0);
	assert_true(o.fd >= 0);
	assert_non_null(o.elf);
	assert_true(o.nloads >= 2);
	assert_false(o.loads_cut);
	assert_false(o.phdrs_bad);
	for (size_t i = 0; i < o.nloads; i++) {
		const struct elfobj_load *l = &o.loads[i];

		exec |= l->exec;
		if (o.eh_frame_hdr_vaddr >= l->vaddr && o.eh_frame_hdr_vaddr - l->vaddr < l->filesz)
			hdr_in_load = true;
	}
	assert_true(exec);
	assert_true(o.eh_frame_hdr_size > 0);
	assert_true(hdr_in_load);
	n = elfobj_build_id(o.elf, bid);
	assert_true(n == 0 || n == 20 || n == 16 || n == 8);
	elfobj_close(&o);
	elfobj_close(&o);
	assert_int_equal(o.fd, -1);
	assert_null(o.elf);
}

static void test_self(void **state)
{
	(void)state;
	check_self(ELF_C_READ_MMAP);
	check_self(ELF_C_READ);
}

static void test_refusals(void **state)
{
	char *dir = tl_tmpdir("cgperf-elfobj");
	char path[4096];
	struct elfobj o;

	(void)state;
	tl_pathf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(elfobj_open(&o, path, ELF_C_READ_MMAP), -ENOENT);
	assert_int_equal(o.fd, -1);
	assert_int_equal(elfobj_open(&o, dir, ELF_C_READ_MMAP), -ENOEXEC);
	tl_write_file(dir, "text", "not an ELF file\n");
	tl_pathf(path, sizeof(path), "%s/text", dir);
	assert_int_equal(elfobj_open(&o, path, ELF_C_READ_MMAP), -ENOEXEC);
	assert_int_equal(o.fd, -1);
	/* the magic, then nothing: a header libelf cannot read */
	tl_write_file(dir, "short", "\177ELF\002\001\001");
	tl_pathf(path, sizeof(path), "%s/short", dir);
	assert_int_equal(elfobj_open(&o, path, ELF_C_READ), -ENOEXEC);
	elfobj_close(&o);
	tl_rmtree(dir);
}

/* One note: header (namesz, descsz, type), name, desc, each 4-aligned. */
static size_t put_note(uint8_t *p, uint32_t type, const char *name, const uint8_t *desc,
		       uint32_t descsz)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1;
	size_t at = 12;

	memcpy(p, &namesz, 4);
	memcpy(p + 4, &descsz, 4);
	memcpy(p + 8, &type, 4);
	memcpy(p + at, name, namesz);
	at += (namesz + 3u) & ~3u;
	memcpy(p + at, desc, descsz);
	return at + ((descsz + 3u) & ~3u);
}

static void test_notes(void **state)
{
	uint8_t buf[256] = { 0 }, out[ELFOBJ_MAX_BUILD_ID], id[20];
	size_t len = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(id); i++)
		id[i] = (uint8_t)(0xa0 + i);
	/* another vendor's note first, then an ABI tag, then the build-id */
	len += put_note(buf + len, NT_GNU_BUILD_ID, "Xen", id, 4);
	len += put_note(buf + len, NT_GNU_ABI_TAG, "GNU", id, 16);
	assert_int_equal(elfobj_notes_build_id(buf, len, out), 0);
	len += put_note(buf + len, NT_GNU_BUILD_ID, "GNU", id, sizeof(id));
	assert_int_equal(elfobj_notes_build_id(buf, len, out), sizeof(id));
	assert_memory_equal(out, id, sizeof(id));
	/* cut inside the last note: not found */
	assert_int_equal(elfobj_notes_build_id(buf, len - 4, out), 0);
	assert_int_equal(elfobj_notes_build_id(NULL, 0, out), 0);
}

static void test_hex(void **state)
{
	const uint8_t b[] = { 0x00, 0x0f, 0xa5, 0xff };
	char hex[2 * sizeof(b) + 1];

	(void)state;
	elfobj_hex(b, sizeof(b), hex);
	assert_string_equal(hex, "000fa5ff");
	elfobj_hex(b, 0, hex);
	assert_string_equal(hex, "");
}

TL_MAIN(test_self, test_refusals, test_notes, test_hex)
