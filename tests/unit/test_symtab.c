// SPDX-License-Identifier: MIT
/*
 * agent/symtab: ELF symbols by file offset (the fixture and how answers
 * are checked: symtab_fix.h). This process's functions and inlined
 * frames, the symfix workload with its build-id and debuglink debuginfo
 * (also inside a container's root), the host's libc and PostgreSQL, DWARF
 * inflated into the symbolization cache. Hostile files are
 * test_symtab_hostile.c, kernel symbols test_ksyms.c.
 */
#include "agent/symbols/srcline.h"
#include "tests/unit/symtab_fix.h"

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

	assert_int_equal(map_offset((const void *)(uintptr_t)symfix_leaf, path, sizeof(path), &off), 0);
	assert_lookup(s, off, "symfix_leaf", 0);
	assert_lookup(s, off + 1, "symfix_leaf", 1);
	assert_int_equal(map_offset((const void *)(uintptr_t)symfix_outer, path, sizeof(path), &off), 0);
	assert_lookup(s, off, "symfix_outer", 0);

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
	static const char *const two[] = { "symfix_inl_leaf", "symfix_inl_mid" };
	static const char *const one[] = { "symfix_inl_mid" };
	char path[PATH_MAX];
	const char *names[4];
	struct symtab *s;
	uint64_t off;

	s = symtab_open("/proc/self/exe", "");
	assert_non_null(s);
	assert_int_equal(map_offset((const void *)(uintptr_t)symfix_outer, path, sizeof(path), &off), 0);
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	assert_true(has_inline_chain(s, off, "symfix_outer", one, 1));
	assert_int_equal(symtab_inlines(s, off, names, 0), 0);

	assert_int_equal(map_offset((const void *)(uintptr_t)symfix_leaf, path, sizeof(path), &off), 0);
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



/* @s's DWARF places link-time address @vaddr in a file named *@file. */
static void assert_srcline(struct symtab *s, uint64_t vaddr, const char *file)
{
	struct srcline *sl = srcline_open(s);
	const char *f;
	int line;

	assert_non_null(sl);
	assert_int_equal(srcline_find(sl, vaddr, &f, &line), 0);
	assert_non_null(strstr(f, file));
	assert_true(line > 0);
	srcline_free(sl);
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

	/* hit: the same file, not rewritten; source lines, which the copy
	 * leaves out, come from the debuginfo file the symtab holds */
	s = symtab_open(bin, root);
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	assert_true(symtab_dwarf_cached(s));
	assert_srcline(s, value, "symfix.h");
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

	/* cache off: the compressed file itself, same names, its lines too */
	assert_int_equal(setenv("CGPERF_CACHE_DIR", "off", 1), 0);
	s = symtab_open(bin, root);
	assert_true(has_inline_chain(s, off, "symfix_outer", two, 2));
	assert_false(symtab_dwarf_cached(s));
	assert_srcline(s, value, "symfix.h");
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
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_postgres),
		cmocka_unit_test(test_dwarf_cache),
		cmocka_unit_test(test_null_handles),
	};

	return fixture_run("symtab", tests, sizeof(tests) / sizeof(tests[0]));
}
