/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the symbol tests (test_symtab.c, test_symtab_hostile.c,
 * test_ksyms.c). Expected answers never come from symtab itself: offsets
 * of functions in this process come from /proc/self/maps, symbols and
 * program headers of fixture files from libelf read here. Fixtures: the
 * test binary (built -g, with the symfix workload's functions: symfix.h),
 * the symfix workload ($BUILD/workloads, -O1 -g), copies of it made with
 * objcopy in a temp dir, the host's libc and PostgreSQL's stripped server
 * binary. Static: each test binary has its own copy.
 */
#ifndef CGPERF_TESTS_SYMTAB_FIX_H
#define CGPERF_TESTS_SYMTAB_FIX_H

/* Each binary uses part of the fixture. */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/symbols/ksyms.h"
#include "agent/symbols/symtab.h"
#include "tests/unit/testfix.h"
#include "tests/unit/testlib.h"

#define POSTGRES "/usr/lib/postgresql/15/bin/postgres"

/* ---- functions of this binary with a known shape: the symfix workload's,
 * built with this binary's flags ---- */

#include "tests/workloads/symfix.h"

/* ---- helpers ---- */

/* File offset of @addr in this process and the file mapped there. */
static int map_offset(const void *addr, char *path, size_t size, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 256];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, pgoff;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &pgoff, &pos) < 3 || pos == 0)
			continue;
		if ((uintptr_t)addr < lo || (uintptr_t)addr >= hi)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(path, size, "%s", line + pos);
		*off = (uintptr_t)addr - lo + pgoff;
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/* Path of the first mapping whose file name ends in @suffix. */
static int map_find(const char *suffix, char *path, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 256];
	size_t sl = strlen(suffix);
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		size_t len;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		len = strlen(p);
		if (len >= sl && strcmp(p + len - sl, suffix) == 0) {
			snprintf(path, size, "%s", p);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

struct elf_view {
	int fd;
	Elf *elf;
};

static int view_open(struct elf_view *v, const char *path)
{
	elf_version(EV_CURRENT);
	v->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (v->fd < 0)
		return -errno;
	v->elf = elf_begin(v->fd, ELF_C_READ, NULL);
	if (!v->elf) {
		close(v->fd);
		return -ENOEXEC;
	}
	return 0;
}

static void view_close(struct elf_view *v)
{
	elf_end(v->elf);
	close(v->fd);
}

/* Value of function symbol @name in @path's .symtab or .dynsym. */
static int elf_func(const char *path, const char *name, uint64_t *value)
{
	struct elf_view v;
	Elf_Scn *scn = NULL;
	int ret = -ENOENT;

	if (view_open(&v, path) < 0)
		return -ENOENT;
	while (ret < 0 && (scn = elf_nextscn(v.elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			n = elf_strptr(v.elf, sh.sh_link, sym.st_name);
			if (n && strcmp(n, name) == 0) {
				*value = sym.st_value;
				ret = 0;
				break;
			}
		}
	}
	view_close(&v);
	return ret;
}

/* File offset of @vaddr by @path's PT_LOAD headers. */
static int elf_vaddr_off(const char *path, uint64_t vaddr, uint64_t *off)
{
	struct elf_view v;
	size_t n = 0;
	int ret = -ENOENT;

	if (view_open(&v, path) < 0)
		return -ENOENT;
	elf_getphdrnum(v.elf, &n);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(v.elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			ret = 0;
			break;
		}
	}
	view_close(&v);
	return ret;
}

static void assert_lookup(const struct symtab *s, uint64_t off, const char *want, uint64_t want_off)
{
	const char *name = NULL;
	uint64_t so = ~0ull;

	assert_int_equal(symtab_lookup(s, off, &name, &so), 0);
	assert_string_equal(name, want);
	assert_int_equal(so, want_off);
}

static bool is_hex_id(const char *s, size_t len)
{
	if (strlen(s) != len)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s) || isupper((unsigned char)*s))
			return false;
	return true;
}

/*
 * Is there an offset inside function @func (starting at @off) whose inline
 * chain is exactly @want, innermost first?
 */
static bool has_inline_chain(struct symtab *s, uint64_t off, const char *func,
			     const char *const *want, size_t nwant)
{
	for (uint64_t o = off; o < off + 4096; o++) {
		const char *got[8], *name;
		uint64_t so;
		size_t n;
		bool same;

		if (symtab_lookup(s, o, &name, &so) < 0 || strcmp(name, func) != 0)
			break;
		n = symtab_inlines(s, o, got, 8);
		same = n == nwant;
		for (size_t i = 0; same && i < n; i++)
			same = strcmp(got[i], want[i]) == 0;
		if (same)
			return true;
	}
	return false;
}

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(buf, 0755);
		*p = '/';
	}
	mkdir(buf, 0755);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void *read_all(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Run a tool; its exit status, 127 when it cannot be run. */
static int run(const char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 127;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return 127;
	return WEXITSTATUS(status);
}

static void symfix_path(char *buf, size_t size)
{
	tf_workload(buf, size, "symfix");
}


/* Run @tests with the symbolization cache in a temp dir: the host's cache
 * is not a test's to fill. */
static int fixture_run(const char *name, const struct CMUnitTest *tests, size_t n)
{
	char *cache = tl_tmpdir("cgperf-symtab");
	int rc;

	setenv("CGPERF_CACHE_DIR", cache, 1);
	rc = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	tl_rmtree(cache);
	return rc;
}

#endif
