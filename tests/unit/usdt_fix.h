/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the USDT tests (test_usdt.c, test_usdt_syn.c): files
 * written and read whole, the sdtprobe workload's path, the sanity every
 * list must have, and an ELF view made with libelf independently of usdt
 * (expected answers never come from usdt itself). Static: each test
 * binary has its own copy.
 */
#ifndef CGPERF_TESTS_USDT_FIX_H
#define CGPERF_TESTS_USDT_FIX_H

/* Each binary uses part of the fixture. */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <asm/perf_regs.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/perf/usdt.h"
#include "tests/unit/testfix.h"
#include "tests/unit/testlib.h"

#define POSTGRES "/usr/lib/postgresql/15/bin/postgres"

/* ---- helpers ---- */

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static unsigned char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	unsigned char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void sdtprobe_path(char *buf, size_t size)
{
	tf_workload(buf, size, "sdtprobe");
}

/* Every probe of a list looks sane against a file of @file_len bytes. */
static void assert_sane(const struct usdt_list *l, size_t file_len)
{
	for (size_t i = 0; i < usdt_count(l); i++) {
		const struct usdt_probe *p = usdt_get(l, i);

		assert_non_null(p);
		assert_non_null(p->provider);
		assert_non_null(p->name);
		assert_non_null(p->arg_spec);
		assert_true(strlen(p->provider) > 0 && strlen(p->name) > 0);
		assert_null(strchr(p->provider, ':'));
		assert_true(p->nargs >= 0 && p->nargs <= USDT_MAX_ARGS);
		assert_true(p->pc_off > 0 && p->pc_off < file_len);
		assert_true(p->sema_off == 0 || p->sema_off + 2 <= file_len);
		assert_true((p->sema_off == 0) == (p->sema_vaddr == 0));
		for (int k = 0; k < p->nargs; k++) {
			int s = p->args[k].size;

			assert_true(s == 1 || s == 2 || s == 4 || s == 8);
		}
	}
	assert_null(usdt_get(l, usdt_count(l)));
}

/* ---- independent ELF reading (libelf) ---- */

struct elf_view {
	int fd;
	Elf *elf;
};

static void ev_open(struct elf_view *v, const char *path)
{
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	v->fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(v->fd >= 0);
	v->elf = elf_begin(v->fd, ELF_C_READ, NULL);
	assert_non_null(v->elf);
}

static void ev_close(struct elf_view *v)
{
	elf_end(v->elf);
	close(v->fd);
}

static bool ev_in_exec_load(struct elf_view *v, uint64_t off)
{
	size_t n;

	assert_int_equal(elf_getphdrnum(v->elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(v->elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && off >= ph.p_offset &&
		    off < ph.p_offset + ph.p_filesz)
			return true;
	}
	return false;
}

static bool ev_section(struct elf_view *v, const char *name, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	assert_int_equal(elf_getshdrstrndx(v->elf, &shstrndx), 0);
	while ((scn = elf_nextscn(v->elf, scn))) {
		const char *n;

		assert_non_null(gelf_getshdr(scn, out));
		n = elf_strptr(v->elf, shstrndx, out->sh_name);
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

static bool ev_symbol(struct elf_view *v, const char *name, GElf_Sym *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(v->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		assert_non_null(d);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const char *n;

			assert_non_null(gelf_getsym(d, (int)i, out));
			n = elf_strptr(v->elf, sh.sh_link, out->st_name);
			if (n && strcmp(n, name) == 0)
				return true;
		}
	}
	return false;
}

#endif
