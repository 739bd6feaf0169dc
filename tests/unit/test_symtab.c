// SPDX-License-Identifier: MIT
/*
 * agent/symtab: ELF symbols by file offset and kernel symbols.
 *
 * Expected answers never come from symtab itself: offsets of functions in
 * this process come from /proc/self/maps, symbols and program headers of
 * fixture files from libelf read here. Fixtures: this test binary (built
 * -g, with inlined helpers below), the symfix workload ($BUILD/workloads,
 * -O1 -g), stripped and debuginfo copies of it made with objcopy in a temp
 * dir (build-id and debuglink lookups, CRC check), corrupted copies of it,
 * the host's libc (and its debuginfo when installed) and PostgreSQL's
 * stripped server binary, /proc/kallsyms and fake kallsyms files.
 */
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
#include "tests/unit/testlib.h"

#define POSTGRES "/usr/lib/postgresql/15/bin/postgres"

/* ---- functions of this binary with a known shape ---- */

static volatile unsigned long st_sink;

__attribute__((noinline, noclone)) void st_leaf(unsigned long n);
__attribute__((noinline, noclone)) void st_outer(unsigned long n);

__attribute__((noinline, noclone)) void st_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		st_sink += i * 11;
}

static inline __attribute__((always_inline)) void st_inl_inner(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		st_sink ^= i * 13;
}

static inline __attribute__((always_inline)) void st_inl_mid(unsigned long n)
{
	st_inl_inner(n);
	for (unsigned long i = 0; i < n; i++)
		st_sink += i * 17;
}

__attribute__((noinline, noclone)) void st_outer(unsigned long n)
{
	st_inl_mid(n);
	st_sink -= n;
}

/* ---- helpers ---- */

static const char *build_dir(void)
{
	const char *b = getenv("BUILD");

	return b && *b ? b : "build";
}

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
	snprintf(buf, size, "%s/workloads/symfix", build_dir());
	if (access(buf, R_OK) != 0)
		fail_msg("%s missing: build it with `make build-tests` (BUILD=%s)", buf, build_dir());
}

/* ---- this process ---- */

static void test_self_lookup(void **state)
{
	char path[PATH_MAX];
	uint64_t off, vaddr, back;
	struct symtab *s;
	const char *name;

	s = symtab_open("/proc/self/exe", "");
	assert_non_null(s);
	assert_string_equal(symtab_source(s), "symtab");
	assert_true(symtab_count(s) > 10);
	assert_true(is_hex_id(symtab_build_id(s), 40));

	assert_int_equal(map_offset((const void *)(uintptr_t)st_leaf, path, sizeof(path), &off), 0);
	assert_lookup(s, off, "st_leaf", 0);
	assert_lookup(s, off + 1, "st_leaf", 1);
	assert_int_equal(map_offset((const void *)(uintptr_t)st_outer, path, sizeof(path), &off), 0);
	assert_lookup(s, off, "st_outer", 0);

	assert_int_equal(symtab_off_to_vaddr(s, off, &vaddr), 0);
	assert_int_equal(symtab_vaddr_to_off(s, vaddr, &back), 0);
	assert_int_equal(back, off);
	assert_int_equal(symtab_off_to_vaddr(s, UINT64_MAX - 1, &vaddr), -ENOENT);
	assert_int_equal(symtab_vaddr_to_off(s, UINT64_MAX - 1, &back), -ENOENT);
	assert_int_equal(symtab_lookup(s, UINT64_MAX - 1, &name, &back), -ENOENT);
	symtab_free(s);
}

static void test_self_inlines(void **state)
{
	static const char *const two[] = { "st_inl_inner", "st_inl_mid" };
	static const char *const one[] = { "st_inl_mid" };
	char path[PATH_MAX];
	const char *names[4];
	struct symtab *s;
	uint64_t off;

	s = symtab_open("/proc/self/exe", "");
	assert_non_null(s);
	assert_int_equal(map_offset((const void *)(uintptr_t)st_outer, path, sizeof(path), &off), 0);
	assert_true(has_inline_chain(s, off, "st_outer", two, 2));
	assert_true(has_inline_chain(s, off, "st_outer", one, 1));
	assert_int_equal(symtab_inlines(s, off, names, 0), 0);

	assert_int_equal(map_offset((const void *)(uintptr_t)st_leaf, path, sizeof(path), &off), 0);
	assert_int_equal(symtab_inlines(s, off, names, 4), 0);
	symtab_free(s);
}

/* ---- the symfix workload and copies of it ---- */

static void check_symfix(const char *path, const char *debug_root, const char *source)
{
	static const char *const two[] = { "symfix_inl_leaf", "symfix_inl_mid" };
	static const char *const one[] = { "symfix_inl_mid" };
	struct symtab *s = symtab_open(path, debug_root);
	char orig[PATH_MAX];
	uint64_t off, value;

	assert_non_null(s);
	assert_string_equal(symtab_source(s), source);
	assert_true(is_hex_id(symtab_build_id(s), 40));

	/* the original knows the addresses; the copy's headers give offsets */
	symfix_path(orig, sizeof(orig));
	assert_int_equal(elf_func(orig, "symfix_leaf", &value), 0);
	assert_int_equal(elf_vaddr_off(path, value, &off), 0);
	assert_lookup(s, off, "symfix_leaf", 0);
	assert_lookup(s, off + 3, "symfix_leaf", 3);
	assert_int_equal(elf_func(orig, "main", &value), 0);
	assert_int_equal(elf_vaddr_off(path, value, &off), 0);
	assert_lookup(s, off, "main", 0);
	assert_int_equal(elf_func(orig, "symfix_outer", &value), 0);
	assert_int_equal(elf_vaddr_off(path, value, &off), 0);
	assert_lookup(s, off, "symfix_outer", 0);
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	assert_true(has_inline_chain(s, off, "symfix_outer", one, 1));
	symtab_free(s);
}

static void test_symfix(void **state)
{
	char path[PATH_MAX];

	symfix_path(path, sizeof(path));
	check_symfix(path, "", "symtab");
	check_symfix(path, NULL, "symtab");
}

static void objcopy(const char *const argv[])
{
	int rc = run(argv);

	if (rc == 127)
		fail_msg("cannot run %s (binutils)", argv[0]);
	assert_int_equal(rc, 0);
}

/* A stripped copy keeps only .dynsym, where symfix exports no function. */
static void check_no_debuginfo(const char *path, const char *debug_root)
{
	struct symtab *s = symtab_open(path, debug_root);
	char orig[PATH_MAX];
	uint64_t off, value, so;
	const char *name;

	assert_non_null(s);
	assert_string_not_equal(symtab_source(s), "debuginfo");
	symfix_path(orig, sizeof(orig));
	assert_int_equal(elf_func(orig, "symfix_leaf", &value), 0);
	assert_int_equal(elf_vaddr_off(path, value, &off), 0);
	if (symtab_lookup(s, off, &name, &so) == 0)
		assert_string_not_equal(name, "symfix_leaf");
	symtab_free(s);
}

static void test_debuginfo_build_id(void **state)
{
	char orig[PATH_MAX], bin[PATH_MAX], dbg[PATH_MAX], dir[PATH_MAX];
	char *root = tl_tmpdir("cgperf-symtab");
	struct symtab *s;
	const char *id;

	symfix_path(orig, sizeof(orig));
	s = symtab_open(orig, "");
	assert_non_null(s);
	id = symtab_build_id(s);
	assert_true(is_hex_id(id, 40));
	tl_pathf(dir, sizeof(dir), "%s/usr/lib/debug/.build-id/%.2s", root, id);
	tl_pathf(dbg, sizeof(dbg), "%s/%s.debug", dir, id + 2);
	symtab_free(s);

	mkdirs(dir);
	tl_pathf(bin, sizeof(bin), "%s/bin", root);
	mkdirs(bin);
	tl_pathf(bin, sizeof(bin), "%s/bin/symfix", root);
	objcopy((const char *const[]){ "objcopy", "--only-keep-debug", orig, dbg, NULL });
	objcopy((const char *const[]){ "objcopy", "--strip-all", orig, bin, NULL });

	check_symfix(bin, root, "debuginfo");
	/* the host's /usr/lib/debug has no such file */
	check_no_debuginfo(bin, "");
	tl_rmtree(root);
}

static void test_debuginfo_debuglink(void **state)
{
	char orig[PATH_MAX], bin[PATH_MAX], dbg[PATH_MAX], dotdebug[PATH_MAX];
	char beside[PATH_MAX], mirror[PATH_MAX];
	char *root = tl_tmpdir("cgperf-symtab");
	size_t len;
	char *bytes;

	symfix_path(orig, sizeof(orig));
	tl_pathf(dotdebug, sizeof(dotdebug), "%s/bin/.debug", root);
	mkdirs(dotdebug);
	tl_pathf(dbg, sizeof(dbg), "%s/symfix.debug", dotdebug);
	tl_pathf(bin, sizeof(bin), "%s/bin/symfix", root);
	tl_pathf(beside, sizeof(beside), "%s/bin/symfix.debug", root);
	tl_pathf(mirror, sizeof(mirror), "%s/usr/lib/debug/bin", root);
	mkdirs(mirror);
	tl_pathf(mirror, sizeof(mirror), "%s/usr/lib/debug/bin/symfix.debug", root);

	/* without a build-id in the debug file, only the CRC vouches for it */
	objcopy((const char *const[]){ "objcopy", "--only-keep-debug", "--remove-section=.note.gnu.build-id",
				       orig, dbg, NULL });
	{
		char link[PATH_MAX + 32];

		tl_pathf(link, sizeof(link), "--add-gnu-debuglink=%s", dbg);
		objcopy((const char *const[]){ "objcopy", "--strip-all", link, orig, bin, NULL });
	}
	check_symfix(bin, "", "debuginfo");

	assert_int_equal(rename(dbg, beside), 0);
	check_symfix(bin, "", "debuginfo");

	/* /usr/lib/debug/<dir> of the root, <dir> as seen inside the root */
	assert_int_equal(rename(beside, mirror), 0);
	check_symfix(bin, root, "debuginfo");
	check_no_debuginfo(bin, "");

	/* one more byte: same name, different file */
	bytes = read_all(mirror, &len);
	bytes[len] = 0;
	write_file(mirror, bytes, len + 1);
	free(bytes);
	check_no_debuginfo(bin, root);
	tl_rmtree(root);
}

/*
 * A "container": a child chrooted into @root, so /proc/CHILD/root is
 * @root as the agent meets it. Its pid, or 0 when chroot is not allowed.
 */
static pid_t chrooted_child(const char *root)
{
	int pfd[2];
	char ok = 0;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		/* gone with the test, even when an assertion cut it short */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		ok = chroot(root) == 0 && chdir("/") == 0;
		(void)!write(pfd[1], &ok, 1);
		if (ok)
			pause();
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &ok, 1) != 1)
		ok = 0;
	close(pfd[0]);
	if (!ok) {
		waitpid(pid, NULL, 0);
		return 0;
	}
	return pid;
}

/*
 * Debuginfo and binaries of a container are resolved inside its root: a
 * build-id link that points to an absolute host path (where a matching
 * debuginfo sits) must not reach it, an absolute link that stays inside
 * the root works, and a binary that is a link to a host file is not found.
 */
static void test_debuginfo_container(void **state)
{
	char orig[PATH_MAX], bin[PATH_MAX], dbg[PATH_MAX], dir[PATH_MAX], hostdbg[PATH_MAX];
	char croot[64], cbin[PATH_MAX];
	char *root = tl_tmpdir("cgperf-symtab"), *host = tl_tmpdir("cgperf-symtab");
	struct symtab *s;
	char id[41];
	pid_t child;

	symfix_path(orig, sizeof(orig));
	s = symtab_open(orig, "");
	assert_non_null(s);
	snprintf(id, sizeof(id), "%s", symtab_build_id(s));
	symtab_free(s);
	tl_pathf(dir, sizeof(dir), "%s/usr/lib/debug/.build-id/%.2s", root, id);
	tl_pathf(dbg, sizeof(dbg), "%s/%s.debug", dir, id + 2);
	mkdirs(dir);
	tl_pathf(bin, sizeof(bin), "%s/bin", root);
	mkdirs(bin);
	tl_pathf(bin, sizeof(bin), "%s/bin/symfix", root);
	objcopy((const char *const[]){ "objcopy", "--strip-all", orig, bin, NULL });
	/* the matching debuginfo, on the host only */
	tl_pathf(hostdbg, sizeof(hostdbg), "%s/symfix.debug", host);
	objcopy((const char *const[]){ "objcopy", "--only-keep-debug", orig, hostdbg, NULL });
	assert_int_equal(symlink(hostdbg, dbg), 0);
	tl_pathf(cbin, sizeof(cbin), "%s/bin/evil", root);
	assert_int_equal(symlink(orig, cbin), 0);

	child = chrooted_child(root);
	if (!child) {
		tl_rmtree(host);
		tl_rmtree(root);
		skip(); /* chroot needs CAP_SYS_CHROOT */
	}
	snprintf(croot, sizeof(croot), "/proc/%d/root", (int)child);
	tl_pathf(cbin, sizeof(cbin), "%s/bin/symfix", croot);
	check_no_debuginfo(cbin, croot);
	/* the same debuginfo inside the root, by an absolute link in it */
	tl_pathf(dir, sizeof(dir), "%s/dbg", root);
	mkdirs(dir);
	tl_pathf(dir, sizeof(dir), "%s/dbg/symfix.debug", root);
	objcopy((const char *const[]){ "objcopy", "--only-keep-debug", orig, dir, NULL });
	assert_int_equal(unlink(dbg), 0);
	assert_int_equal(symlink("/dbg/symfix.debug", dbg), 0);
	check_symfix(cbin, croot, "debuginfo");
	/* a binary that is a link to the host's (unstripped) file */
	tl_pathf(cbin, sizeof(cbin), "%s/bin/evil", croot);
	errno = 0;
	assert_null(symtab_open(cbin, croot));
	assert_int_equal(errno, ENOENT);

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	tl_rmtree(host);
	tl_rmtree(root);
}

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

/* ---- libraries of the host ---- */

static void test_libc(void **state)
{
	char libc[PATH_MAX], path[PATH_MAX], dbg[PATH_MAX];
	void *h, *fn;
	struct symtab *s;
	const char *id, *inl[8];
	uint64_t off;

	assert_int_equal(map_find("/libc.so.6", libc, sizeof(libc)), 0);
	/* libc's own malloc, not a sanitizer's interposed one */
	h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	fn = dlsym(h, "malloc");
	assert_non_null(fn);
	assert_int_equal(map_offset(fn, path, sizeof(path), &off), 0);
	assert_string_equal(path, libc);

	s = symtab_open(libc, "");
	assert_non_null(s);
	assert_lookup(s, off, "malloc", 0);
	assert_lookup(s, off + 5, "malloc", 5);
	id = symtab_build_id(s);
	assert_true(is_hex_id(id, 40));
	tl_pathf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
	if (access(dbg, R_OK) == 0) {
		assert_string_equal(symtab_source(s), "debuginfo");
		assert_true(symtab_count(s) > 3000);
		/* DWARF from the debuginfo answers without crashing */
		for (uint64_t o = off; o < off + 64; o++)
			symtab_inlines(s, o, inl, 8);
	} else {
		print_message("no %s: libc6-dbg not installed, .dynsym only\n", dbg);
		assert_string_equal(symtab_source(s), "dynsym");
	}
	fn = dlsym(h, "free");
	assert_int_equal(map_offset(fn, path, sizeof(path), &off), 0);
	assert_lookup(s, off, "free", 0);
	symtab_free(s);
	dlclose(h);
}

/* Bytes malloc() has handed out, big (mmap()ed) blocks included; 0 under ASan. */
static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void test_postgres(void **state)
{
	size_t before, after, exact = 0, total = 0;
	struct elf_view v;
	Elf_Scn *scn = NULL;
	struct symtab *s;

	if (access(POSTGRES, R_OK) != 0) {
		print_message("%s missing: PostgreSQL 15 not installed\n", POSTGRES);
		skip();
	}
	before = heap_bytes();
	s = symtab_open(POSTGRES, "");
	after = heap_bytes();
	assert_non_null(s);
	assert_string_equal(symtab_source(s), "dynsym");
	assert_true(symtab_count(s) > 1000);
	assert_true(is_hex_id(symtab_build_id(s), 40));
	if (after > before) {
		print_message("postgres: %zu symbols, %zu bytes (%.1f per symbol)\n", symtab_count(s),
			      after - before, (double)(after - before) / (double)symtab_count(s));
		assert_true((after - before) / symtab_count(s) < 64);
	}

	/* every exported function round-trips through its offset */
	assert_int_equal(view_open(&v, POSTGRES), 0);
	while ((scn = elf_nextscn(v.elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *want, *name;
			uint64_t off, so;
			GElf_Sym sym;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || sym.st_value == 0 || sym.st_size == 0)
				continue;
			want = elf_strptr(v.elf, sh.sh_link, sym.st_name);
			assert_int_equal(symtab_vaddr_to_off(s, sym.st_value, &off), 0);
			assert_int_equal(symtab_lookup(s, off, &name, &so), 0);
			assert_int_equal(so, 0);
			assert_int_equal(symtab_lookup(s, off + sym.st_size - 1, &name, &so), 0);
			assert_int_equal(so, sym.st_size - 1);
			total++;
			if (strcmp(name, want) == 0)
				exact++;
		}
	}
	view_close(&v);
	/* the rest are aliases at one address, where one name is kept */
	assert_true(total > 1000);
	assert_true(exact * 100 >= total * 95);
	symtab_free(s);
}

/* ---- kernel ---- */

static void test_kallsyms_host(void **state)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[1024], modname[256] = "", modsym[256] = "";
	uint64_t sched = 0, modaddr = 0;
	const char *module = "unset", *name;
	struct ksyms *k;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, sym[256], mod[256];
		int n = sscanf(line, "%llx %c %255s [%255[^]]]", &a, &type, sym, mod);

		if (n >= 3 && (type == 'T' || type == 't') && strcmp(sym, "schedule") == 0)
			sched = a;
		if (n == 4 && !modname[0] && (type == 'T' || type == 't') && a != 0 &&
		    strcmp(mod, "bpf") != 0) {
			tl_pathf(modname, sizeof(modname), "%s", mod);
			tl_pathf(modsym, sizeof(modsym), "%s", sym);
			modaddr = a;
		}
	}
	fclose(f);
	if (sched == 0) {
		print_message("/proc/kallsyms addresses hidden (kptr_restrict)\n");
		skip();
	}

	k = ksyms_load("/proc/kallsyms");
	assert_non_null(k);
	assert_true(ksyms_count(k) > 1000);
	name = ksyms_lookup(k, sched, &module);
	assert_non_null(name);
	assert_string_equal(name, "schedule");
	assert_null(module);
	assert_string_equal(ksyms_lookup(k, sched + 1, NULL), "schedule");
	if (modname[0]) {
		name = ksyms_lookup(k, modaddr, &module);
		assert_non_null(name);
		assert_non_null(module);
		assert_string_equal(module, modname);
	}
	ksyms_free(k);
}

struct ksym_case {
	uint64_t addr;
	const char *name, *module; /* name NULL: no symbol */
};

static struct ksyms *ksyms_from_text(const char *text)
{
	char *root = tl_tmpdir("cgperf-symtab");
	char path[PATH_MAX];
	struct ksyms *k;

	tl_pathf(path, sizeof(path), "%s/kallsyms", root);
	write_file(path, text, strlen(text));
	k = ksyms_load(path);
	tl_rmtree(root);
	return k;
}

static void test_kallsyms_fake(void **state)
{
	static const char text[] =
		"ffffffff81000000 T _stext\n"
		"ffffffff81000100 t local_fn\n"
		"ffffffff81000200 D some_data\n"
		"ffffffff81000300 W weak_fn\n"
		"ffffffff81000400 t __alias_b\n"
		"ffffffff81000400 T alias_a\n"
		"ffffffff81000400 t alias_c\n"
		"ffffffff81000500 T after_alias\n"
		"zzzz T bad_address\n"
		"ffffffff81000600 T\n"
		"ffffffff81000700 Tno_space\n"
		"1ffffffff81000800 T seventeen_digits\n"
		"ffffffff81000900 b bss_thing\n"
		"ffffffffc0001000 t mod_fn\t[mymod]\n"
		"ffffffffc0001100 T mod_fn2\t[mymod]\n"
		"ffffffffc0002000 T other_fn\t[othermod]\n"
		"ffffffffc0003000 t broken_mod\t[]\n";
	static const struct ksym_case cases[] = {
		{ 0xffffffff80ffffffull, NULL, NULL },
		{ 0xffffffff81000000ull, "_stext", NULL },
		{ 0xffffffff810000ffull, "_stext", NULL },
		{ 0xffffffff81000150ull, "local_fn", NULL },
		/* data is not text: local_fn reaches to weak_fn */
		{ 0xffffffff81000250ull, "local_fn", NULL },
		{ 0xffffffff81000300ull, "weak_fn", NULL },
		{ 0xffffffff81000400ull, "alias_a", NULL },
		{ 0xffffffff810004ffull, "alias_a", NULL },
		/* malformed lines add nothing */
		{ 0xffffffff81000650ull, "after_alias", NULL },
		{ 0xffffffff81000950ull, "after_alias", NULL },
		{ 0xffffffffc0001000ull, "mod_fn", "mymod" },
		{ 0xffffffffc0001180ull, "mod_fn2", "mymod" },
		{ 0xffffffffc0002010ull, "other_fn", "othermod" },
		{ 0xffffffffc0003010ull, "other_fn", "othermod" },
		/* the last symbol does not reach to the end of memory */
		{ 0xffffffffffff0000ull, NULL, NULL },
	};
	struct ksyms *k = ksyms_from_text(text);

	assert_non_null(k);
	assert_int_equal(ksyms_count(k), 8);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *module = "unset", *name = ksyms_lookup(k, cases[i].addr, &module);

		if (!cases[i].name) {
			assert_null(name);
			continue;
		}
		assert_non_null(name);
		assert_string_equal(name, cases[i].name);
		if (cases[i].module)
			assert_string_equal(module, cases[i].module);
		else
			assert_null(module);
	}
	ksyms_free(k);
	assert_null(ksyms_lookup(NULL, 0, NULL));
	ksyms_free(NULL);
}

static void test_kallsyms_hidden(void **state)
{
	static const char text[] = "0000000000000000 T _stext\n"
				   "0000000000000000 T schedule\n"
				   "0000000000000000 t mod_fn\t[mymod]\n";
	struct ksyms *k = ksyms_from_text(text);

	assert_non_null(k);
	assert_null(ksyms_lookup(k, 0, NULL));
	assert_null(ksyms_lookup(k, 0xffffffff81000000ull, NULL));
	assert_int_equal(ksyms_count(k), 0);
	ksyms_free(k);
}

static void test_kallsyms_long_lines(void **state)
{
	size_t big = 5000, len;
	char *text = malloc(big + 256);
	struct ksyms *k;

	assert_non_null(text);
	/* a name longer than any line buffer must not spill into the next line */
	len = (size_t)snprintf(text, 64, "ffffffff81000000 T ");
	memset(text + len, 'x', big);
	len += big;
	len += (size_t)snprintf(text + len, 200,
				" ffffffff81000100 T fake_from_tail\n"
				"ffffffff81000200 T real_fn\n");
	k = ksyms_from_text(text);
	free(text);
	assert_non_null(k);
	assert_int_equal(ksyms_count(k), 1);
	assert_string_equal(ksyms_lookup(k, 0xffffffff81000200ull, NULL), "real_fn");
	assert_null(ksyms_lookup(k, 0xffffffff81000100ull, NULL));
	ksyms_free(k);

	k = ksyms_from_text("");
	assert_non_null(k);
	assert_int_equal(ksyms_count(k), 0);
	assert_null(ksyms_lookup(k, 1, NULL));
	ksyms_free(k);

	errno = 0;
	assert_null(ksyms_load("/nonexistent/kallsyms"));
	assert_int_equal(errno, ENOENT);
}

/* ---- the symbolization cache ---- */

#define BOOT_A "0a1b2c3d-0000-4000-8000-00000000000a"
#define BOOT_B "0a1b2c3d-0000-4000-8000-00000000000b"

static const char cache_kallsyms[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 t local_fn\n"
	"ffffffff81000200 D some_data\n"
	"ffffffff81000400 t __alias_b\n"
	"ffffffff81000400 T alias_a\n"
	"ffffffff81000500 T last_core\n"
	"ffffffffc0002000 T other_fn\t[othermod]\n"
	"ffffffffc0001000 t mod_fn\t[mymod]\n";

static const struct ksym_case cache_cases[] = {
	{ 0xffffffff80ffffffull, NULL, NULL },
	{ 0xffffffff81000000ull, "_stext", NULL },
	{ 0xffffffff81000250ull, "local_fn", NULL },
	{ 0xffffffff81000401ull, "alias_a", NULL },
	/* from here on outside the core range: answered by a live read */
	{ 0xffffffff81000500ull, "last_core", NULL },
	{ 0xffffffff81000600ull, "last_core", NULL },
	{ 0xffffffffc0001010ull, "mod_fn", "mymod" },
	{ 0xffffffffc0002010ull, "other_fn", "othermod" },
	{ 0xffffffffffff0000ull, NULL, NULL },
};

static void check_ksym_cases(struct ksyms *k)
{
	for (size_t i = 0; i < sizeof(cache_cases) / sizeof(cache_cases[0]); i++) {
		const char *module = "unset", *name = ksyms_lookup(k, cache_cases[i].addr, &module);

		if (!cache_cases[i].name) {
			assert_null(name);
			continue;
		}
		assert_non_null(name);
		assert_string_equal(name, cache_cases[i].name);
		if (cache_cases[i].module)
			assert_string_equal(module, cache_cases[i].module);
		else
			assert_null(module);
	}
}

static void test_kallsyms_cache(void **state)
{
	char *root = tl_tmpdir("cgperf-symtab");
	char path[PATH_MAX], dir[PATH_MAX], entry[PATH_MAX], other[PATH_MAX];
	struct ksyms *k;
	struct stat st;
	size_t len;
	char *bytes;

	tl_pathf(path, sizeof(path), "%s/kallsyms", root);
	tl_pathf(dir, sizeof(dir), "%s/cache", root);
	tl_pathf(entry, sizeof(entry), "%s/kallsyms-" BOOT_A, dir);
	tl_pathf(other, sizeof(other), "%s/kallsyms-" BOOT_B, dir);
	write_file(path, cache_kallsyms, strlen(cache_kallsyms));
	assert_int_equal(mkdir(dir, 0700), 0);

	/* the first reader reads and writes the core symbols, private */
	k = ksyms_load_cached(path, dir, BOOT_A);
	assert_non_null(k);
	assert_false(ksyms_cached(k));
	assert_int_equal(ksyms_count(k), 6);
	check_ksym_cases(k);
	ksyms_free(k);
	assert_int_equal(stat(entry, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	/* later readers map it; only vmlinux is in it, modules come live */
	k = ksyms_load_cached(path, dir, BOOT_A);
	assert_non_null(k);
	assert_true(ksyms_cached(k));
	assert_int_equal(ksyms_count(k), 4);
	check_ksym_cases(k);
	ksyms_free(k);

	/* a cache entry is for its boot only; a new boot's entry replaces it */
	k = ksyms_load_cached(path, dir, BOOT_B);
	assert_non_null(k);
	assert_false(ksyms_cached(k));
	ksyms_free(k);
	assert_int_equal(stat(other, &st), 0);
	assert_int_equal(stat(entry, &st), -1);

	/* damaged entries are not trusted: the file is read again */
	bytes = read_all(other, &len);
	assert_true(len > 100);
	bytes[len - 1] = 'x'; /* the name arena loses its last NUL */
	write_file(other, bytes, len);
	chmod(other, 0600);
	k = ksyms_load_cached(path, dir, BOOT_B);
	assert_non_null(k);
	assert_false(ksyms_cached(k));
	check_ksym_cases(k);
	ksyms_free(k);
	write_file(other, bytes, 40); /* truncated */
	chmod(other, 0600);
	k = ksyms_load_cached(path, dir, BOOT_B);
	assert_non_null(k);
	assert_false(ksyms_cached(k));
	ksyms_free(k);
	free(bytes);

	/* an entry others may write is not used */
	k = ksyms_load_cached(path, dir, BOOT_B); /* valid again */
	ksyms_free(k);
	assert_int_equal(chmod(other, 0666), 0);
	k = ksyms_load_cached(path, dir, BOOT_B);
	assert_non_null(k);
	assert_false(ksyms_cached(k));
	check_ksym_cases(k);
	ksyms_free(k);

	/* no cache, or a bad boot id: plain reads */
	k = ksyms_load_cached(path, NULL, BOOT_A);
	assert_false(ksyms_cached(k));
	check_ksym_cases(k);
	ksyms_free(k);
	k = ksyms_load_cached(path, dir, "../../x");
	assert_false(ksyms_cached(k));
	ksyms_free(k);
	tl_rmtree(root);
}

/*
 * A module loaded after the cache was written (same boot) is still named:
 * the cached core does not cover it, so a live read answers. Kernel
 * pointers hidden in the live read (kptr_restrict) give no module names,
 * never wrong ones, while the cached core still names vmlinux.
 */
static void test_kallsyms_cache_later_module(void **state)
{
	static const char before[] = "ffffffff81000000 T _stext\n"
				     "ffffffff81000100 t local_fn\n"
				     "ffffffff81000500 T last_core\n";
	static const char after[] = "ffffffff81000000 T _stext\n"
				    "ffffffff81000100 t local_fn\n"
				    "ffffffff81000500 T last_core\n"
				    "ffffffffc0005000 t late_fn\t[latemod]\n"
				    "ffffffffc0005100 t late_fn2\t[latemod]"; /* no newline */
	static const char hidden[] = "0000000000000000 T _stext\n"
				     "0000000000000000 t local_fn\n"
				     "0000000000000000 T last_core\n"
				     "0000000000000000 t late_fn\t[latemod]\n";
	char *root = tl_tmpdir("cgperf-symtab");
	char path[PATH_MAX], dir[PATH_MAX];
	const char *mod;
	struct ksyms *k;

	tl_pathf(path, sizeof(path), "%s/kallsyms", root);
	tl_pathf(dir, sizeof(dir), "%s/cache", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	write_file(path, before, strlen(before));
	k = ksyms_load_cached(path, dir, BOOT_A);
	assert_non_null(k);
	assert_false(ksyms_cached(k));
	ksyms_free(k);

	write_file(path, after, strlen(after)); /* insmod latemod */
	k = ksyms_load_cached(path, dir, BOOT_A);
	assert_non_null(k);
	assert_true(ksyms_cached(k));
	assert_string_equal(ksyms_lookup(k, 0xffffffff81000104ull, NULL), "local_fn");
	mod = NULL;
	assert_string_equal(ksyms_lookup(k, 0xffffffffc0005010ull, &mod), "late_fn");
	assert_non_null(mod);
	assert_string_equal(mod, "latemod");
	assert_string_equal(ksyms_lookup(k, 0xffffffffc0005108ull, &mod), "late_fn2");
	assert_string_equal(ksyms_lookup(k, 0xffffffff81000104ull, &mod), "local_fn");
	assert_null(mod);
	ksyms_free(k);

	write_file(path, hidden, strlen(hidden));
	k = ksyms_load_cached(path, dir, BOOT_A);
	assert_non_null(k);
	assert_true(ksyms_cached(k));
	assert_string_equal(ksyms_lookup(k, 0xffffffff81000104ull, NULL), "local_fn");
	assert_null(ksyms_lookup(k, 0xffffffffc0005010ull, NULL));
	ksyms_free(k);
	/* and with no cache, hidden pointers name nothing at all */
	k = ksyms_load_cached(path, NULL, NULL);
	assert_non_null(k);
	assert_int_equal(ksyms_count(k), 0);
	assert_null(ksyms_lookup(k, 0xffffffff81000104ull, NULL));
	assert_null(ksyms_lookup(k, 0, NULL));
	ksyms_free(k);
	tl_rmtree(root);
}

/*
 * A cache entry whose header or records lie (a tampered or torn file the
 * ownership check let through) is refused whole: the live read answers,
 * with the same names. Under ASan any offset trusted unchecked shows here.
 */
struct kcache_patch {
	const char *what;
	size_t at;     /* byte offset into the entry (from its end with from_end) */
	bool from_end;
	size_t width;  /* bytes of value written there: 1, 2, 4 or 8 */
	uint64_t value;
	bool cut;      /* instead: the file cut to @at bytes */
};

#define KC_HDR 72u   /* magic 8, sym_size 4, reserved 4, nsyms 8, names_len 8, boot_id 40 */
#define KC_SYM 16u   /* addr 8, name 4, module 2, rank 1, unders 1 */

static void test_kallsyms_cache_corrupt(void **state)
{
	static const struct kcache_patch patches[] = {
		{ "magic", 0, false, 1, 'X', false },
		{ "record size", 8, false, 4, 24, false },
		{ "nsyms 0", 16, false, 8, 0, false },
		{ "nsyms past the file", 16, false, 8, 1000, false },
		{ "nsyms huge", 16, false, 8, UINT64_MAX / 2, false },
		{ "names_len short", 24, false, 8, 3, false },
		{ "names_len huge", 24, false, 8, UINT64_MAX, false },
		{ "boot id", 32, false, 1, 'f', false },
		{ "name offset past the arena", KC_HDR + 8, false, 4, 100000, false },
		{ "name offset max", KC_HDR + KC_SYM + 8, false, 4, UINT32_MAX, false },
		{ "module index", KC_HDR + 12, false, 2, 7, false },
		{ "rank", KC_HDR + 14, false, 1, 200, false },
		{ "address 0", KC_HDR, false, 8, 0, false },
		{ "addresses out of order", KC_HDR + KC_SYM, false, 8, 1, false },
		{ "arena not terminated", 1, true, 1, 'x', false },
		{ "header only", KC_HDR, false, 0, 0, true },
		{ "half a header", KC_HDR / 2, false, 0, 0, true },
		{ "a record cut", KC_HDR + KC_SYM + 3, false, 0, 0, true },
		{ "empty", 0, false, 0, 0, true },
	};
	char *root = tl_tmpdir("cgperf-symtab");
	char path[PATH_MAX], dir[PATH_MAX], entry[PATH_MAX];
	struct ksyms *k;
	size_t len;
	char *good;

	tl_pathf(path, sizeof(path), "%s/kallsyms", root);
	tl_pathf(dir, sizeof(dir), "%s/cache", root);
	tl_pathf(entry, sizeof(entry), "%s/kallsyms-" BOOT_A, dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	write_file(path, cache_kallsyms, strlen(cache_kallsyms));
	ksyms_free(ksyms_load_cached(path, dir, BOOT_A));
	good = read_all(entry, &len);
	assert_true(len > KC_HDR + 4 * KC_SYM); /* the 4 core symbols, then names */

	for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++) {
		const struct kcache_patch *p = &patches[i];
		char *bad = malloc(len);
		size_t at = p->from_end ? len - p->at : p->at, n = len;

		assert_non_null(bad);
		memcpy(bad, good, len);
		if (p->cut)
			n = at;
		else
			memcpy(bad + at, &p->value, p->width); /* little-endian host */
		write_file(entry, bad, n);
		assert_int_equal(chmod(entry, 0600), 0);
		free(bad);
		k = ksyms_load_cached(path, dir, BOOT_A);
		assert_non_null(k);
		if (ksyms_cached(k))
			fail_msg("cache entry with a bad %s was used", p->what);
		check_ksym_cases(k);
		ksyms_free(k);
		/* the live read wrote a good entry again: it is used */
		k = ksyms_load_cached(path, dir, BOOT_A);
		assert_true(ksyms_cached(k));
		check_ksym_cases(k);
		ksyms_free(k);
	}
	free(good);
	tl_rmtree(root);
}

/*
 * Compressed debuginfo (as Debian ships libc6-dbg) is inflated once into
 * the cache by build-id; names are those of the uncompressed original.
 */
static void test_dwarf_cache(void **state)
{
	static const char *const two[] = { "symfix_inl_leaf", "symfix_inl_mid" };
	char orig[PATH_MAX], bin[PATH_MAX], dbg[PATH_MAX], dir[PATH_MAX], cache[PATH_MAX];
	char entry[PATH_MAX], *saved = getenv("CGPERF_CACHE_DIR");
	char *root = tl_tmpdir("cgperf-symtab");
	struct stat st, st2;
	struct symtab *s;
	uint64_t value, off;
	char id[64];

	saved = saved ? strdup(saved) : NULL;
	symfix_path(orig, sizeof(orig));
	s = symtab_open(orig, "");
	assert_non_null(s);
	tl_pathf(id, sizeof(id), "%s", symtab_build_id(s));
	/* plain DWARF is read in place: nothing to inflate */
	assert_int_equal(elf_func(orig, "symfix_outer", &value), 0);
	assert_int_equal(elf_vaddr_off(orig, value, &off), 0);
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	assert_false(symtab_dwarf_cached(s));
	symtab_free(s);

	tl_pathf(dir, sizeof(dir), "%s/usr/lib/debug/.build-id/%.2s", root, id);
	tl_pathf(dbg, sizeof(dbg), "%s/%s.debug", dir, id + 2);
	mkdirs(dir);
	tl_pathf(bin, sizeof(bin), "%s/symfix", root);
	objcopy((const char *const[]){ "objcopy", "--only-keep-debug",
				      "--compress-debug-sections=zlib", orig, dbg, NULL });
	objcopy((const char *const[]){ "objcopy", "--strip-all", orig, bin, NULL });
	tl_pathf(cache, sizeof(cache), "%s/cache", root);
	tl_pathf(entry, sizeof(entry), "%s/dwarf-%s", cache, id);
	assert_int_equal(setenv("CGPERF_CACHE_DIR", cache, 1), 0);
	assert_int_equal(elf_vaddr_off(bin, value, &off), 0);

	/* miss: inflated, written, used */
	s = symtab_open(bin, root);
	assert_non_null(s);
	assert_string_equal(symtab_source(s), "debuginfo");
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	assert_true(symtab_dwarf_cached(s));
	symtab_free(s);
	assert_int_equal(stat(entry, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(cache, &st2), 0);
	assert_int_equal(st2.st_mode & 0777, 0700);

	/* hit: the same file, not rewritten */
	s = symtab_open(bin, root);
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	assert_true(symtab_dwarf_cached(s));
	symtab_free(s);
	assert_int_equal(stat(entry, &st2), 0);
	assert_int_equal(st2.st_ino, st.st_ino);

	/* a damaged entry (cut short) is replaced, names unchanged */
	assert_int_equal(truncate(entry, 64), 0);
	s = symtab_open(bin, root);
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	assert_true(symtab_dwarf_cached(s));
	symtab_free(s);
	assert_int_equal(stat(entry, &st2), 0);
	assert_true(st2.st_size > 64);

	/* an entry others may write is not used, and is replaced */
	assert_int_equal(chmod(entry, 0666), 0);
	s = symtab_open(bin, root);
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	symtab_free(s);
	assert_int_equal(stat(entry, &st2), 0);
	assert_int_equal(st2.st_mode & 0777, 0600);

	/* cache off: the compressed file itself, same names */
	assert_int_equal(setenv("CGPERF_CACHE_DIR", "off", 1), 0);
	s = symtab_open(bin, root);
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	assert_false(symtab_dwarf_cached(s));
	symtab_free(s);

	if (saved)
		setenv("CGPERF_CACHE_DIR", saved, 1);
	else
		unsetenv("CGPERF_CACHE_DIR");
	free(saved);
	tl_rmtree(root);
}

static void test_null_handles(void **state)
{
	const char *name, *inl[2];
	uint64_t v;

	symtab_free(NULL);
	assert_int_equal(symtab_count(NULL), 0);
	assert_string_equal(symtab_build_id(NULL), "");
	assert_int_equal(symtab_lookup(NULL, 0, &name, &v), -ENOENT);
	assert_int_equal(symtab_inlines(NULL, 0, inl, 2), 0);
	assert_int_equal(symtab_off_to_vaddr(NULL, 0, &v), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_lookup),
		cmocka_unit_test(test_self_inlines),
		cmocka_unit_test(test_symfix),
		cmocka_unit_test(test_debuginfo_build_id),
		cmocka_unit_test(test_debuginfo_debuglink),
		cmocka_unit_test(test_debuginfo_container),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_postgres),
		cmocka_unit_test(test_kallsyms_host),
		cmocka_unit_test(test_kallsyms_fake),
		cmocka_unit_test(test_kallsyms_hidden),
		cmocka_unit_test(test_kallsyms_long_lines),
		cmocka_unit_test(test_kallsyms_cache),
		cmocka_unit_test(test_kallsyms_cache_later_module),
		cmocka_unit_test(test_kallsyms_cache_corrupt),
		cmocka_unit_test(test_dwarf_cache),
		cmocka_unit_test(test_null_handles),
	};
	char *cache = tl_tmpdir("cgperf-symtab");
	int rc;

	/* the host's cache is not this test's to fill */
	setenv("CGPERF_CACHE_DIR", cache, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	tl_rmtree(cache);
	return rc;
}
