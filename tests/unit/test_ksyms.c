// SPDX-License-Identifier: MIT
/*
 * agent/symbols/ksyms: kernel symbols from /proc/kallsyms and from fake
 * kallsyms files (hidden addresses, long lines, modules), and their copy
 * in the symbolization cache (per boot; modules loaded later; corrupt
 * cache files). Shares the fixture of the symbol tests (symtab_fix.h).
 */
#include "tests/unit/symtab_fix.h"

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

/*
 * The kallsyms fixture of the fake-file and cache tests: core symbols with
 * data, weak, alias and malformed lines among them, then modules out of
 * order; and the names it must give.
 */
static const char kallsyms_text[] =
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
	"ffffffffc0002000 T other_fn\t[othermod]\n"
	"ffffffffc0001000 t mod_fn\t[mymod]\n"
	"ffffffffc0001100 T mod_fn2\t[mymod]\n"
	"ffffffffc0003000 t broken_mod\t[]\n";

#define KALLSYMS_ALL 8  /* text symbols with a name and an address */
#define KALLSYMS_CORE 5 /* of which vmlinux's (no module) */

static const struct ksym_case {
	uint64_t addr;
	const char *name, *module; /* name NULL: no symbol */
} kallsyms_cases[] = {
	{ 0xffffffff80ffffffull, NULL, NULL },
	{ 0xffffffff81000000ull, "_stext", NULL },
	{ 0xffffffff810000ffull, "_stext", NULL },
	{ 0xffffffff81000150ull, "local_fn", NULL },
	/* data is not text: local_fn reaches to weak_fn */
	{ 0xffffffff81000250ull, "local_fn", NULL },
	{ 0xffffffff81000300ull, "weak_fn", NULL },
	{ 0xffffffff81000400ull, "alias_a", NULL },
	{ 0xffffffff81000401ull, "alias_a", NULL },
	{ 0xffffffff810004ffull, "alias_a", NULL },
	/* from here on outside the cached core range: answered by a live read */
	{ 0xffffffff81000500ull, "after_alias", NULL },
	/* malformed lines add nothing */
	{ 0xffffffff81000650ull, "after_alias", NULL },
	{ 0xffffffff81000950ull, "after_alias", NULL },
	{ 0xffffffffc0001000ull, "mod_fn", "mymod" },
	{ 0xffffffffc0001010ull, "mod_fn", "mymod" },
	{ 0xffffffffc0001180ull, "mod_fn2", "mymod" },
	{ 0xffffffffc0002010ull, "other_fn", "othermod" },
	{ 0xffffffffc0003010ull, "other_fn", "othermod" },
	/* the last symbol does not reach to the end of memory */
	{ 0xffffffffffff0000ull, NULL, NULL },
};

static void check_ksym_cases(struct ksyms *k)
{
	for (size_t i = 0; i < sizeof(kallsyms_cases) / sizeof(kallsyms_cases[0]); i++) {
		const struct ksym_case *c = &kallsyms_cases[i];
		const char *module = "unset", *name = ksyms_lookup(k, c->addr, &module);

		if (!c->name) {
			assert_null(name);
			continue;
		}
		assert_non_null(name);
		assert_string_equal(name, c->name);
		if (c->module)
			assert_string_equal(module, c->module);
		else
			assert_null(module);
	}
}

/* A temporary directory with @text as its kallsyms and an empty cache/. */
struct kfix {
	char *root;
	char path[PATH_MAX], dir[PATH_MAX];
};

static void kfix_make(struct kfix *f, const char *text, size_t len)
{
	f->root = tl_tmpdir("cgperf-symtab");
	tl_pathf(f->path, sizeof(f->path), "%s/kallsyms", f->root);
	tl_pathf(f->dir, sizeof(f->dir), "%s/cache", f->root);
	write_file(f->path, text, len);
	assert_int_equal(mkdir(f->dir, 0700), 0);
}

static struct ksyms *ksyms_from_text(const char *text)
{
	struct kfix f;
	struct ksyms *k;

	kfix_make(&f, text, strlen(text));
	k = ksyms_load(f.path);
	tl_rmtree(f.root);
	return k;
}

static void test_kallsyms_fake(void **state)
{
	struct ksyms *k = ksyms_from_text(kallsyms_text);

	assert_non_null(k);
	assert_int_equal(ksyms_count(k), KALLSYMS_ALL);
	check_ksym_cases(k);
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

/*
 * @f's kallsyms loaded through the cache @dir (NULL: none) for @boot: it
 * names kallsyms_cases, holds @count symbols (0: any), and came from the
 * cache exactly when @cached; @what names the step in a failure.
 */
static void load_check(const struct kfix *f, const char *dir, const char *boot, bool cached,
		       size_t count, const char *what)
{
	struct ksyms *k = ksyms_load_cached(f->path, dir, boot);

	assert_non_null(k);
	if (ksyms_cached(k) != cached)
		fail_msg("%s: cache %s", what, cached ? "not used" : "used");
	if (count)
		assert_int_equal(ksyms_count(k), count);
	check_ksym_cases(k);
	ksyms_free(k);
}

static void test_kallsyms_cache(void **state)
{
	struct kfix f;
	const char *dir = f.dir;
	char entry[PATH_MAX], other[PATH_MAX];
	struct stat st;
	size_t len;
	char *bytes;

	kfix_make(&f, kallsyms_text, strlen(kallsyms_text));
	tl_pathf(entry, sizeof(entry), "%s/kallsyms-" BOOT_A, dir);
	tl_pathf(other, sizeof(other), "%s/kallsyms-" BOOT_B, dir);

	/* the first reader reads and writes the core symbols, private */
	load_check(&f, dir, BOOT_A, false, KALLSYMS_ALL, "first read");
	assert_int_equal(stat(entry, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	/* later readers map it; only vmlinux is in it, modules come live */
	load_check(&f, dir, BOOT_A, true, KALLSYMS_CORE, "second read");

	/* a cache entry is for its boot only; a new boot's entry replaces it */
	load_check(&f, dir, BOOT_B, false, 0, "new boot");
	assert_int_equal(stat(other, &st), 0);
	assert_int_equal(stat(entry, &st), -1);

	/* damaged entries are not trusted: the file is read again */
	bytes = read_all(other, &len);
	assert_true(len > 100);
	bytes[len - 1] = 'x'; /* the name arena loses its last NUL */
	write_file(other, bytes, len);
	chmod(other, 0600);
	load_check(&f, dir, BOOT_B, false, 0, "arena not terminated");
	write_file(other, bytes, 40); /* truncated */
	chmod(other, 0600);
	load_check(&f, dir, BOOT_B, false, 0, "truncated");
	free(bytes);

	/* an entry others may write is not used */
	load_check(&f, dir, BOOT_B, true, 0, "rewritten entry");
	assert_int_equal(chmod(other, 0666), 0);
	load_check(&f, dir, BOOT_B, false, 0, "entry others may write");

	/* no cache, or a bad boot id: plain reads */
	load_check(&f, NULL, BOOT_A, false, 0, "no cache");
	load_check(&f, dir, "../../x", false, 0, "bad boot id");
	tl_rmtree(f.root);
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
	struct kfix f;
	const char *path = f.path, *dir = f.dir, *mod;
	struct ksyms *k;

	kfix_make(&f, before, strlen(before));
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
	tl_rmtree(f.root);
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
	struct kfix f;
	const char *dir = f.dir;
	char entry[PATH_MAX];
	size_t len;
	char *good;

	kfix_make(&f, kallsyms_text, strlen(kallsyms_text));
	tl_pathf(entry, sizeof(entry), "%s/kallsyms-" BOOT_A, dir);
	load_check(&f, dir, BOOT_A, false, KALLSYMS_ALL, "first read");
	good = read_all(entry, &len);
	assert_true(len > KC_HDR + KALLSYMS_CORE * KC_SYM); /* the core symbols, then names */

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
		load_check(&f, dir, BOOT_A, false, 0, p->what);
		/* the live read wrote a good entry again: it is used */
		load_check(&f, dir, BOOT_A, true, 0, p->what);
	}
	free(good);
	tl_rmtree(f.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kallsyms_host),
		cmocka_unit_test(test_kallsyms_fake),
		cmocka_unit_test(test_kallsyms_hidden),
		cmocka_unit_test(test_kallsyms_long_lines),
		cmocka_unit_test(test_kallsyms_cache),
		cmocka_unit_test(test_kallsyms_cache_later_module),
		cmocka_unit_test(test_kallsyms_cache_corrupt),
	};

	return fixture_run("ksyms", tests, sizeof(tests) / sizeof(tests[0]));
}
