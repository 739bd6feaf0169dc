// SPDX-License-Identifier: MIT
/*
 * agent/symbols/dso: one object per binary. The sdtprobe workload
 * ($BUILD/workloads: symbols, DWARF, .eh_frame_hdr, SDT notes) is opened
 * once and then read for symbols, SDT notes, unwind tables, source lines
 * and inlined frames: the count of files opened (dso_opens()) and of this
 * process's fds must not grow.
 * Interning by key and by inode, references, a file deleted while open,
 * what .eh_frame_hdr parses to (checked against libelf read here), the
 * refusals of the open (FIFO, directory, not ELF) and members (built once,
 * an error remembered).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/perf/usdt.h"
#include "agent/stacks/unwind.h"
#include "agent/symbols/dso.h"
#include "agent/symbols/srcline.h"
#include "agent/symbols/symtab.h"
#include "tests/unit/usdt_fix.h"

static size_t count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* ---- one open for every reader ---- */

static const struct unwind_map *one_map(void *ctx, uint64_t ip)
{
	const struct unwind_map *m = ctx;

	return ip >= m->start && ip < m->end ? m : NULL;
}

/* Unwind a sample whose IP is @d's first executable byte: enough for the
 * unwinder to look the binary up and read its tables. */
static void unwind_touch(struct dso *d, struct unwind_cache *c)
{
	const struct stat *st = dso_stat(d);
	const struct elfobj_load *l;
	struct unwind_map m = { .path = dso_path(d), .dev = st->st_dev, .ino = st->st_ino };
	uint64_t regs[64] = { 0 }, ips[4]; /* one per bit of the mask */
	uint8_t stack[64] = { 0 };
	size_t n;
	struct unwind_sample s = {
		.regs = regs,
		.regs_mask = unwind_dwarf_regs_mask(),
		.stack = stack,
		.stack_size = sizeof(stack),
		.find_map = one_map,
		.ctx = &m,
	};

	l = dso_loads(d, &n, NULL);
	for (size_t i = 0; i < n; i++) {
		if (!l[i].exec)
			continue;
		m.start = 0x10000000 + l[i].offset;
		m.end = m.start + l[i].filesz;
		m.pgoff = l[i].offset;
		break;
	}
	assert_true(m.end > m.start);
	/* every register at the IP: a walk that goes nowhere, but it looked */
	for (size_t i = 0; i < 64; i++)
		regs[i] = m.start;
	(void)unwind_dwarf(c, &s, ips, 4);
	assert_int_equal(unwind_cache_entries(c), 1);
}

/* Source lines and inlined frames of @s's main(): one libdw handle on the
 * dso's own fd, shared (srcline borrows the symtab's): no fd is added. */
static void dwarf_touch(struct dso *d, struct symtab *s)
{
	size_t fds = count_fds();
	struct srcline *sl = srcline_open(s);
	const char *file, *names[4];
	uint64_t off, vaddr;
	int line;

	assert_non_null(sl);
	assert_int_equal(symtab_find(s, "main", &off), 0);
	assert_int_equal(dso_off_to_vaddr(d, off, &vaddr), 0);
	assert_int_equal(srcline_find(sl, vaddr, &file, &line), 0);
	assert_non_null(strstr(file, "sdtprobe.c"));
	(void)symtab_inlines(s, off, names, 4);
	assert_int_equal(count_fds(), fds);
	srcline_free(sl);
}

static void test_one_open(void **state)
{
	char path[PATH_MAX];
	struct unwind_cache *c = unwind_cache_new(4);
	struct usdt_list *ul;
	struct symtab *s;
	struct dso *d, *again;
	uint64_t opens;
	size_t fds;

	(void)state;
	sdtprobe_path(path, sizeof(path));
	assert_non_null(c);
	opens = dso_opens();
	d = dso_open(path, 0, 0);
	assert_non_null(d);
	assert_int_equal(dso_opens(), opens + 1);
	fds = count_fds();

	s = dso_symtab(d, "");
	assert_non_null(s);
	assert_true(symtab_count(s) > 0);
	assert_ptr_equal(dso_symtab(d, ""), s); /* a member: built once */
	assert_string_equal(symtab_build_id(s), dso_build_id_hex(d));
	ul = usdt_read_dso(d);
	assert_non_null(ul);
	assert_true(usdt_count(ul) > 0);
	usdt_free(ul);
	unwind_touch(d, c);
	dwarf_touch(d, s);

	/* the same file by path, by its key: the same object, no new open */
	again = dso_open(path, dso_stat(d)->st_dev, dso_stat(d)->st_ino);
	assert_ptr_equal(again, d);
	dso_put(again);
	ul = usdt_read(path); /* by path: opened to learn its inode, then shared */
	assert_non_null(ul);
	usdt_free(ul);
	assert_true(dso_opens() <= opens + 2);
	assert_int_equal(count_fds(), fds);

	unwind_cache_free(c); /* its reference goes */
	assert_int_equal(dso_live(), 1);
	dso_put(d);
	assert_int_equal(dso_live(), 0);
	assert_int_equal(count_fds(), fds - 1);
}

/* ---- interning, references, a deleted file ---- */

static void copy_file(const char *from, const char *to)
{
	size_t len;
	char *buf = tl_read_file(from, 64u << 20, &len);
	int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	assert_non_null(buf);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	free(buf);
}

static void test_interning(void **state)
{
	char path[PATH_MAX], copy[PATH_MAX];
	char *dir = tl_tmpdir("cgperf-dso");
	struct dso *a, *b, *k1, *k2;
	struct symtab *s;
	size_t live = dso_live();

	(void)state;
	sdtprobe_path(path, sizeof(path));
	tl_pathf(copy, sizeof(copy), "%s/copy", dir);
	copy_file(path, copy);

	a = dso_open(path, 0, 0);
	b = dso_open(copy, 0, 0);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b); /* the same bytes, another inode */
	assert_string_equal(dso_build_id_hex(a), dso_build_id_hex(b));
	assert_ptr_equal(dso_get(a), a);
	dso_put(a);

	/* keys given by the caller (a mapping's dev:ino) are the identity */
	k1 = dso_open(copy, 1, 2);
	k2 = dso_open(path, 1, 2); /* found by its key: not opened */
	assert_ptr_equal(k1, k2);
	assert_string_equal(dso_path(k2), copy);
	dso_put(k2);
	dso_put(k1);
	/* dso_open_exact() only takes the file when it is that inode */
	errno = 0;
	assert_null(dso_open_exact(copy, 1, 3));
	assert_int_equal(errno, ESTALE);
	k1 = dso_open_exact(copy, dso_stat(b)->st_dev, dso_stat(b)->st_ino);
	assert_ptr_equal(k1, b);
	dso_put(k1);

	/* deleted after the open: still read through the kept fd */
	assert_int_equal(unlink(copy), 0);
	s = dso_symtab(b, "");
	assert_non_null(s);
	assert_true(symtab_count(s) > 0);
	dso_put(b);
	dso_put(a);
	assert_int_equal(dso_live(), live);
	tl_rmtree(dir);
}

/* ---- .eh_frame_hdr, read here with libelf ---- */

static void test_eh_frame(void **state)
{
	char path[PATH_MAX];
	const struct dso_eh *e;
	struct elf_view v;
	GElf_Shdr hdr, eh;
	uint8_t p[12];
	struct dso *d;

	(void)state;
	sdtprobe_path(path, sizeof(path));
	d = dso_open(path, 0, 0);
	assert_non_null(d);
	assert_int_equal(dso_eh_frame(d, &e), 0);
	ev_open(&v, path);
	assert_true(ev_section(&v, ".eh_frame", &eh));
	assert_int_equal(e->eh_vaddr, eh.sh_addr);
	assert_int_equal(e->eh_size, eh.sh_size);
	assert_true(ev_section(&v, ".eh_frame_hdr", &hdr));
	assert_int_equal(pread(v.fd, p, sizeof(p), (off_t)hdr.sh_offset), (ssize_t)sizeof(p));
	/* version 1, table datarel|sdata4, count udata4 at offset 8 */
	assert_int_equal(p[0], 1);
	assert_int_equal(p[3], 0x3b);
	assert_int_equal(e->hdr_vaddr, hdr.sh_addr);
	assert_int_equal(e->table_vaddr, hdr.sh_addr + 12);
	assert_int_equal(e->fde_count,
			 (uint32_t)(p[8] | p[9] << 8 | p[10] << 16 | (uint32_t)p[11] << 24));
	ev_close(&v);
	dso_put(d);
}

/* ---- refusals and members ---- */

static int builds;

static int failing_build(struct dso *d, void *arg, void **out)
{
	(void)d;
	(void)arg;
	(void)out;
	builds++;
	return -EPROTO;
}

static void no_free(void *p)
{
	(void)p;
}

static const struct dso_member_ops failing = { .build = failing_build, .free = no_free };

static void test_refusals_and_members(void **state)
{
	char *dir = tl_tmpdir("cgperf-dso");
	char path[PATH_MAX];
	struct dso *d;
	void *p;

	(void)state;
	tl_pathf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	errno = 0;
	assert_null(dso_open(path, 0, 0)); /* never opened for reading: no wait */
	assert_int_equal(errno, ENOEXEC);
	errno = 0;
	assert_null(dso_open(dir, 0, 0));
	assert_int_equal(errno, ENOEXEC);
	tl_write_file(dir, "text", "not an ELF file\n");
	tl_pathf(path, sizeof(path), "%s/text", dir);
	errno = 0;
	assert_null(dso_open(path, 0, 0));
	assert_int_equal(errno, ENOEXEC);
	tl_pathf(path, sizeof(path), "%s/missing", dir);
	errno = 0;
	assert_null(dso_open(path, 0, 0));
	assert_int_equal(errno, ENOENT);
	assert_null(dso_open(NULL, 0, 0));

	sdtprobe_path(path, sizeof(path));
	d = dso_open(path, 0, 0);
	assert_non_null(d);
	builds = 0;
	assert_int_equal(dso_member(d, &failing, NULL, &p), -EPROTO);
	assert_int_equal(dso_member(d, &failing, NULL, &p), -EPROTO);
	assert_int_equal(builds, 1); /* the error is remembered */
	dso_put(d);
	dso_put(NULL);
	assert_null(dso_get(NULL));
	tl_rmtree(dir);
}

TL_MAIN(test_one_open, test_interning, test_eh_frame, test_refusals_and_members)
