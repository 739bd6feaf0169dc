// SPDX-License-Identifier: MIT
#include "tests/unit/testlib.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/gzip.h"
#include "lib/slurp.h"
#include "wire/wire.h"

char *tl_tmpdir(const char *name)
{
	size_t n = strlen(name) + sizeof("/tmp/.XXXXXX");
	char *path = malloc(n);

	if (!path) {
		fail_msg("tl_tmpdir: out of memory");
		return NULL;
	}
	snprintf(path, n, "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(path))
		fail_msg("mkdtemp %s: %s", path, strerror(errno));
	return path;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) ? -errno : 0;
}

int tl_rmtree(char *path)
{
	int ret, err;

	if (!path)
		return 0;
	ret = nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	err = errno;
	free(path);
	/* nftw's own failure is -1 with errno; below that, rm_entry's -errno */
	if (ret == 0)
		return 0;
	return ret < -1 ? ret : -err;
}

static void join(char *out, size_t cap, const char *dir, const char *rel)
{
	int n = rel ? snprintf(out, cap, "%s/%s", dir, rel) : snprintf(out, cap, "%s", dir);

	if (n < 0 || (size_t)n >= cap)
		fail_msg("path too long: %s/%s", dir, rel ? rel : "");
}

static void mkdir_or_exists(const char *path)
{
	if (mkdir(path, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

void tl_mkdirs(const char *dir, const char *rel)
{
	char path[PATH_MAX];

	join(path, sizeof(path), dir, rel);
	for (char *p = path + strlen(dir) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir_or_exists(path);
		*p = '/';
	}
	mkdir_or_exists(path);
}

void tl_write_data(const char *dir, const char *rel, const void *data, size_t len)
{
	char path[PATH_MAX];
	int fd;

	join(path, sizeof(path), dir, rel);
	if (rel && strrchr(rel, '/')) {
		char sub[PATH_MAX];
		size_t n = (size_t)(strrchr(rel, '/') - rel);

		memcpy(sub, rel, n);
		sub[n] = '\0';
		tl_mkdirs(dir, sub);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	if (write(fd, data, len) != (ssize_t)len)
		fail_msg("write %s: %s", path, strerror(errno));
	if (close(fd))
		fail_msg("close %s: %s", path, strerror(errno));
}

void tl_write_file(const char *dir, const char *rel, const char *text)
{
	tl_write_data(dir, rel, text, strlen(text));
}

void tl_symlink(const char *dir, const char *rel, const char *target)
{
	char path[PATH_MAX];

	join(path, sizeof(path), dir, rel);
	if (symlink(target, path))
		fail_msg("symlink %s: %s", path, strerror(errno));
}

void *tl_fake_new(const char *name, size_t size)
{
	struct tl_fake *f = calloc(1, size);

	if (!f)
		fail_msg("out of memory");
	f->root = tl_tmpdir(name);
	return f;
}

int tl_fake_teardown(void **state)
{
	struct tl_fake *f = *state;
	int ret = tl_rmtree(f->root);

	free(f);
	return ret ? -1 : 0;
}

char *tl_read_file(const char *path, size_t cap, size_t *len)
{
	char *buf;
	size_t n;
	int err = slurp_at(AT_FDCWD, path, cap, &buf, &n, NULL);

	if (err) {
		errno = -err;
		return NULL;
	}
	if (len)
		*len = n;
	return buf;
}

FILE *tl_capture_begin(void)
{
	FILE *f = tmpfile();

	if (!f)
		fail_msg("tmpfile: %s", strerror(errno));
	return f;
}

char *tl_capture_end(FILE *f)
{
	long size = -1;
	char *buf;

	if (fflush(f) || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0)
		fail_msg("capture: %s", strerror(errno));
	buf = malloc((size_t)size + 1);
	if (!buf) {
		fail_msg("capture: out of memory");
		return NULL;
	}
	rewind(f);
	if (fread(buf, 1, (size_t)size, f) != (size_t)size)
		fail_msg("capture: short read");
	buf[size] = '\0';
	fclose(f);
	return buf;
}

size_t tl_count_lines(const char *text)
{
	size_t n = 0;
	const char *p = text;

	for (; *p; p++)
		n += *p == '\n';
	if (p > text && p[-1] != '\n')
		n++;
	return n;
}

void tl_text_put(void *ctx, const char *s, size_t n)
{
	struct tl_text *t = ctx;
	char *v = realloc(t->s, t->len + n + 1);

	if (!v)
		fail_msg("out of memory");
	memcpy(v + t->len, s, n);
	t->s = v;
	t->len += n;
	t->s[t->len] = '\0';
}

struct Cgperf__V1__Batch *tl_wire_roundtrip(struct wire_batch *b)
{
	uint8_t *buf;
	size_t len;
	char err[256];
	Cgperf__V1__Batch *m;

	if (wire_encode(b, &buf, &len))
		fail_msg("wire_encode failed");
	wire_batch_free(b);
	m = wire_decode(buf, len, 0, err, sizeof(err));
	free(buf);
	if (!m)
		fail_msg("wire_decode: %s", err);
	return m;
}

void tl_pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size)
		fail_msg("tl_pathf: \"%s\" does not fit %zu bytes", fmt, size);
}

uint64_t tl_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

bool tl_ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

bool tl_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* @dir/@rel when readable, else NULL. */
static char *readable(const char *dir, const char *rel)
{
	char *out;

	if (asprintf(&out, "%s/%s", dir, rel) < 0)
		return NULL;
	if (access(out, R_OK) == 0)
		return out;
	free(out);
	return NULL;
}

char *tl_tree_path(const char *rel)
{
	const char *env = getenv("CGPERF_ROOT");
	char exe[PATH_MAX], *p, *out = NULL;
	ssize_t n;

	if (env && (out = readable(env, rel)))
		return out;
	if (access(rel, R_OK) == 0)
		return realpath(rel, NULL);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	for (int i = 0; i < 3 && (p = strrchr(exe, '/')); i++)
		*p = '\0';
	return readable(exe, rel);
}

char *tl_tree_file(const char *rel)
{
	char *path = tl_tree_path(rel);

	if (!path)
		fail_msg("cannot find %s (set CGPERF_ROOT to the source tree)", rel);
	return path;
}

char *tl_read_text(const char *path)
{
	char *text = tl_read_file(path, 64u << 20, NULL);

	if (!text)
		fail_msg("cannot read %s: %s", path, strerror(errno));
	return text;
}

uint8_t *tl_gzip(const void *in, size_t len, size_t *outlen)
{
	uint8_t *out = NULL;
	int ret = gzip_compress(in, len, 9, &out, outlen);

	if (ret)
		fail_msg("gzip_compress of %zu bytes: %d", len, ret);
	return out;
}

FILE *tl_devnull(void)
{
	FILE *f = fopen("/dev/null", "we");

	assert_non_null(f);
	fputs("stdio allocates its buffer now\n", f);
	return f;
}

int tl_run(const tl_test_fn *fns, const char *names, tl_fixture_fn group_setup,
	   tl_fixture_fn group_teardown, tl_fixture_fn setup, tl_fixture_fn teardown)
{
	char *list = strdup(names), *save = NULL;
	struct CMUnitTest *tests;
	size_t n = 1, i = 0;
	int ret;

	for (const char *p = names; *p; p++)
		n += *p == ',';
	tests = calloc(n, sizeof(*tests));
	if (!list || !tests) {
		fprintf(stderr, "tl_run: out of memory\n");
		return 1;
	}
	for (char *name = strtok_r(list, ", \t\n", &save); name && i < n;
	     name = strtok_r(NULL, ", \t\n", &save), i++)
		tests[i] = (struct CMUnitTest){ .name = name,
						.test_func = fns[i],
						.setup_func = setup,
						.teardown_func = teardown };
	ret = _cmocka_run_group_tests("tests", tests, i, group_setup, group_teardown);
	free(tests);
	free(list);
	return ret;
}

int tl_count_batch_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) == 20 && strspn(de->d_name, "0123456789") == 20)
			n++;
	}
	closedir(d);
	return n;
}

void tl_assert_str_or_null(const char *got, const char *want)
{
	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
}

/* ---- tables of cases kept as data (tests/unit/data/NAME.tsv) ---- */

/* One allocation: the struct, then its arrays and strings. */
struct tl_table {
	size_t ncols, nrows;
	const char **fields; /* nrows * ncols, case by case, into text */
	unsigned *lines;     /* the line of each case */
	char *text, *name;   /* text: the copy of the table, decoded in place */
};

/* The byte that the escape at @s (just after its backslash) stands for,
 * *@used set to the characters it takes; -1 when it is none of C's. */
static int unescape_one(const char *s, size_t *used)
{
	static const char simple[] = "\\\\\"\"''??a\ab\bf\fn\nr\rt\tv\v";
	int v = 0;
	size_t n = 0;

	for (const char *p = simple; *p; p += 2) {
		if (*s == p[0]) {
			*used = 1;
			return (unsigned char)p[1];
		}
	}
	if (*s == 'x') {
		char hex[3] = "";

		for (; n < 2 && isxdigit((unsigned char)s[1 + n]); n++)
			hex[n] = s[1 + n];
		*used = 1 + n;
		return n ? (int)strtol(hex, NULL, 16) : -1;
	}
	for (; n < 3 && s[n] >= '0' && s[n] <= '7'; n++)
		v = v * 8 + (s[n] - '0');
	*used = n;
	return n && v <= 0xff ? v : -1;
}

/* Decode the escapes of @field in place (the text only shrinks): NULL, or
 * where the escape that cannot be decoded (or is a NUL) starts. */
static const char *unescape(char *field)
{
	char *out = field;
	const char *s = field;

	while (*s) {
		size_t used;
		int c;

		if (*s != '\\') {
			*out++ = *s++;
			continue;
		}
		c = unescape_one(s + 1, &used);
		if (c <= 0)
			return s;
		*out++ = (char)c;
		s += 1 + used;
	}
	*out = '\0';
	return NULL;
}

/* Split the case @line into @t's next row of fields and decode them; 0 or
 * -EINVAL with the reason in @err. */
static int table_row(struct tl_table *t, char *line, unsigned lineno, char *err, size_t errlen)
{
	const char **f = t->fields + t->nrows * t->ncols;
	size_t n = 0;
	const char *bad;

	for (char *s = line, *tab; s; s = tab, n++) {
		tab = strchr(s, '\t');
		if (tab)
			*tab++ = '\0';
		if (n == t->ncols) {
			snprintf(err, errlen, "%s:%u: more than %zu fields", t->name, lineno,
				 t->ncols);
			return -EINVAL;
		}
		if (strcmp(s, "\\N") == 0) {
			f[n] = NULL;
			continue;
		}
		bad = unescape(s);
		if (bad) {
			snprintf(err, errlen, "%s:%u: field %zu: cannot decode \"%.4s\"", t->name,
				 lineno, n + 1, bad);
			return -EINVAL;
		}
		f[n] = s;
	}
	if (n < t->ncols) {
		snprintf(err, errlen, "%s:%u: %zu fields, want %zu", t->name, lineno, n, t->ncols);
		return -EINVAL;
	}
	t->lines[t->nrows++] = lineno;
	return 0;
}

struct tl_table *tl_table_parse(const char *text, const char *name, size_t ncols, char *err,
				size_t errlen)
{
	size_t maxrows = tl_count_lines(text), nfields = maxrows * ncols;
	size_t textsize = strlen(text) + 1, namesize = strlen(name) + 1;
	struct tl_table *t = calloc(1, sizeof(*t) + nfields * sizeof(*t->fields) +
					       maxrows * sizeof(*t->lines) + textsize + namesize);
	unsigned lineno = 0;
	char *next;

	if (!t) {
		snprintf(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	t->ncols = ncols;
	t->fields = (const char **)(t + 1);
	t->lines = (unsigned *)(t->fields + nfields);
	t->text = memcpy((char *)(t->lines + maxrows), text, textsize);
	t->name = memcpy(t->text + textsize, name, namesize);
	for (char *line = t->text; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		if (*line == '\0' || *line == '#')
			continue;
		if (table_row(t, line, lineno, err, errlen))
			goto fail;
	}
	if (t->nrows == 0) {
		snprintf(err, errlen, "%s: no case", name);
		goto fail;
	}
	return t;
fail:
	free(t);
	return NULL;
}

struct tl_table *tl_table_load(const char *name, size_t ncols)
{
	char rel[PATH_MAX], err[512], *path, *text;
	struct tl_table *t;

	tl_pathf(rel, sizeof(rel), "tests/unit/data/%s", name);
	path = tl_tree_file(rel);
	text = tl_read_text(path);
	t = tl_table_parse(text, rel, ncols, err, sizeof(err));
	free(text);
	if (!t)
		fail_msg("%s", err);
	free(path);
	return t;
}

void tl_table_free(struct tl_table *t)
{
	free(t);
}

size_t tl_table_rows(const struct tl_table *t)
{
	return t->nrows;
}

const char *const *tl_table_row(const struct tl_table *t, size_t row)
{
	if (row >= t->nrows)
		fail_msg("%s: no case %zu (%zu cases)", t->name, row, t->nrows);
	return t->fields + row * t->ncols;
}

uint64_t tl_table_u64(const struct tl_table *t, size_t row, size_t col)
{
	const char *s = tl_table_row(t, row)[col], *digits = s;
	bool hex = s && s[0] == '0' && s[1] == 'x';
	unsigned long long v = 0;
	char *end = NULL;

	if (hex)
		digits = s + 2;
	errno = 0;
	if (digits && *digits &&
	    !digits[strspn(digits, hex ? "0123456789abcdefABCDEF" : "0123456789")])
		v = strtoull(digits, &end, hex ? 16 : 10);
	if (!end || *end || errno)
		fail_msg("%s: field %zu: '%s' is not a number", tl_table_where(t, row), col + 1,
			 s ? s : "\\N");
	return v;
}

const char *tl_table_where(const struct tl_table *t, size_t row)
{
	static char where[PATH_MAX];

	tl_table_row(t, row);
	snprintf(where, sizeof(where), "%s:%u", t->name, t->lines[row]);
	return where;
}
