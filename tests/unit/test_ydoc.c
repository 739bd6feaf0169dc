// SPDX-License-Identifier: MIT
/*
 * lib/ydoc: loading (syntax errors, caps on nesting and anchors, one
 * document), positioned messages, and each typed read on good and bad
 * values, table-driven over small documents of one key.
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

#include "lib/ydoc.h"
#include "tests/unit/testlib.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

static const struct ydoc_limits lim = { .depth = 4, .anchors = 2, .string = 16 };

static struct ydoc *load_ok(const char *text, char *err, size_t errlen)
{
	struct ydoc *d = NULL;
	int rc = ydoc_load("t.yaml", text, strlen(text), &lim, err, errlen, &d);

	if (rc)
		fail_msg("\"%s\": %d (%s)", text, rc, err);
	return d;
}

/* Documents refused as a whole (tests/unit/data/ydoc_load_errors.tsv);
 * the caller's pointer untouched. */
static void test_load_errors(void **state)
{
	struct tl_table *t = tl_table_load("ydoc_load_errors.tsv", 2);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *text = tl_table_row(t, i)[0], *want = tl_table_row(t, i)[1];
		struct ydoc *d = (struct ydoc *)0x1;
		char err[256] = "";
		int rc = ydoc_load("t.yaml", text, strlen(text), &lim, err, sizeof(err), &d);

		if (rc != -EINVAL || strcmp(err, want))
			fail_msg("%s: %d \"%s\", want \"%s\"", tl_table_where(t, i), rc, err, want);
		assert_ptr_equal(d, (struct ydoc *)0x1);
	}
	tl_table_free(t);
}

static void test_empty(void **state)
{
	char err[128];
	struct ydoc *d = load_ok("", err, sizeof(err));

	assert_null(ydoc_root(d));
	assert_string_equal(ydoc_file(d), "t.yaml");
	ydoc_free(d);
	d = NULL;
	assert_int_equal(ydoc_load("n", NULL, 0, &lim, err, sizeof(err), &d), 0);
	assert_null(ydoc_root(d));
	ydoc_free(d);
	ydoc_free(NULL);
}

static void hint(void *ctx, const char *key, const char *where, char *buf, size_t len)
{
	snprintf(buf, len, " (%s from %s)", key, *where ? where : "top");
}

static void test_keys(void **state)
{
	static const char *const keys[] = { "frequency", "enabled", "sub", NULL };
	static const char *const sub_keys[] = { "x", NULL };
	struct tl_table *t = tl_table_load("ydoc_key_errors.tsv", 2);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *text = tl_table_row(t, i)[0], *want = tl_table_row(t, i)[1];
		char err[256] = "";
		struct ydoc *d = load_ok(text, err, sizeof(err));
		const yaml_node_t *sub;
		int rc;

		ydoc_set_hint(d, hint, NULL);
		rc = ydoc_check_keys(d, ydoc_root(d), "", keys);
		if (!rc)
			rc = ydoc_section(d, ydoc_root(d), "", "sub", sub_keys, &sub);
		if (rc != -EINVAL || strcmp(err, want))
			fail_msg("%s: %d \"%s\", want \"%s\"", tl_table_where(t, i), rc, err, want);
		ydoc_free(d);
	}
	tl_table_free(t);
}

/* One read of key "v" in "v: TEXT"; the names of the kinds in
 * tests/unit/data/ydoc_reads.tsv. */
enum kind { K_BOOL, K_UINT, K_DUR, K_SIZE, K_ENUM, K_STR, K_NSTR, K_LIST };
static const char *const kind_names[] = { "bool", "uint",   "duration", "size",
					  "enum", "string", "nullable", "list" };

static enum kind kind_of(const char *name)
{
	for (size_t k = 0; k < NCASES(kind_names); k++) {
		if (!strcmp(name, kind_names[k]))
			return (enum kind)k;
	}
	fail_msg("unknown kind '%s'", name);
	return K_BOOL;
}

static int read_v(const char *text, enum kind k, char *err, size_t errlen, uint64_t *num,
		  char **str)
{
	static const char *const levels[] = { "debug", "info", "error", NULL };
	struct ydoc *d = load_ok(text, err, errlen);
	const yaml_node_t *v = ydoc_get(d, ydoc_root(d), "v");
	char **list = NULL;
	size_t nlist = 0;
	unsigned u = 0;
	bool b = false;
	int e = 0, rc;

	assert_non_null(v);
	switch (k) {
	case K_BOOL: rc = ydoc_bool(d, v, "v", &b); *num = b; break;
	case K_UINT: rc = ydoc_uint(d, v, "v", 1, 100, &u); *num = u; break;
	case K_DUR: rc = ydoc_duration_ms(d, v, "v", 10, 3600000, num); break;
	case K_SIZE: rc = ydoc_size(d, v, "v", 1024, 1 << 20, num); break;
	case K_ENUM: rc = ydoc_enum(d, v, "v", levels, &e); *num = (uint64_t)e; break;
	case K_STR: rc = ydoc_string(d, v, "v", 0, "a name", str); break;
	case K_NSTR: rc = ydoc_string(d, v, "v", YDOC_NULLABLE, "a name", str); break;
	default:
		rc = ydoc_list(d, v, "v", 2, NULL, "[a, b]", &list, &nlist);
		*num = nlist;
		for (size_t i = 0; i < nlist; i++)
			free(list[i]);
		free(list);
		break;
	}
	ydoc_free(d);
	return rc;
}

/* Each typed read on good and bad values (tests/unit/data/ydoc_reads.tsv):
 * the number read, or the error with its position. */
static void test_reads(void **state)
{
	struct tl_table *t = tl_table_load("ydoc_reads.tsv", 4);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *const *c = tl_table_row(t, i);
		const char *text = c[0], *want_err = c[2];
		enum kind k = kind_of(c[1]);
		uint64_t want_num = tl_table_u64(t, i, 3), num = 0;
		char err[256] = "", *str = NULL;
		int rc = read_v(text, k, err, sizeof(err), &num, &str);

		if (!want_err && (rc || num != want_num))
			fail_msg("%s: \"%s\": %d (%s), %llu", tl_table_where(t, i), text, rc, err,
				 (unsigned long long)num);
		if (want_err && (rc != -EINVAL || strcmp(err, want_err)))
			fail_msg("%s: \"%s\": %d \"%s\", want \"%s\"", tl_table_where(t, i), text, rc,
				 err, want_err);
		if (k == K_STR && !rc)
			assert_string_equal(str, "abc");
		free(str);
	}
	tl_table_free(t);
}

/* A table of plain keys: every kind into its field, absent keys left as
 * they were, the first bad value's error named "where.key". */
static void test_fields(void **state)
{
	static const char *const levels[] = { "debug", "info", "error", NULL };
	struct settings {
		bool on;
		unsigned n;
		uint64_t ms, bytes;
		char *name;
		int level;
		unsigned untouched;
	} st = { .untouched = 7 };
	static const struct ydoc_field f[] = {
		{ .key = "on", .kind = YDOC_F_BOOL, .off = offsetof(struct settings, on) },
		{ .key = "n", .kind = YDOC_F_UINT, .off = offsetof(struct settings, n), .min = 1,
		  .max = 9 },
		{ .key = "ms", .kind = YDOC_F_DURATION_MS, .off = offsetof(struct settings, ms),
		  .min = 10, .max = 60000 },
		{ .key = "bytes", .kind = YDOC_F_SIZE, .off = offsetof(struct settings, bytes),
		  .min = 1, .max = 1 << 20 },
		{ .key = "name", .kind = YDOC_F_STRING, .off = offsetof(struct settings, name),
		  .expected = "a name" },
		{ .key = "level", .kind = YDOC_F_ENUM, .off = offsetof(struct settings, level),
		  .names = levels },
		{ .key = "untouched", .kind = YDOC_F_UINT,
		  .off = offsetof(struct settings, untouched), .max = 100 },
	};
	char err[256] = "";
	struct ydoc *d;

	(void)state;
	d = load_ok("on: true\nn: 3\nms: 2s\nbytes: 4KiB\nname: abc\nlevel: error\n", err,
		    sizeof(err));
	assert_int_equal(ydoc_fields(d, ydoc_root(d), "s", f, NCASES(f), &st), 0);
	assert_true(st.on);
	assert_int_equal(st.n, 3);
	assert_int_equal(st.ms, 2000);
	assert_int_equal(st.bytes, 4096);
	assert_string_equal(st.name, "abc");
	assert_int_equal(st.level, 2);
	assert_int_equal(st.untouched, 7);
	assert_int_equal(ydoc_fields(d, NULL, "s", f, NCASES(f), &st), 0); /* no section */
	ydoc_free(d);
	d = load_ok("n: 2\nms: 1h30m\nname: x\n", err, sizeof(err));
	assert_int_equal(ydoc_fields(d, ydoc_root(d), "s", f, NCASES(f), &st), -EINVAL);
	assert_int_equal(st.n, 2);
	assert_string_equal(err, "t.yaml:2:5: s.ms: '1h30m' is out of range (10ms..1m)");
	assert_string_equal(st.name, "abc"); /* after the failure: not read */
	ydoc_free(d);
	free(st.name);
}

static void test_show(void **state)
{
	char long_v[100];

	memset(long_v, 'x', sizeof(long_v) - 1);
	long_v[sizeof(long_v) - 1] = '\0';
	assert_string_equal(ydoc_show("a\nb").s, "'a?b'");
	assert_int_equal(strlen(ydoc_show(long_v).s), 60 + 2 + 3);
	assert_string_equal(ydoc_key_in("", "host").s, "host");
	assert_string_equal(ydoc_key_in("push.tls", "verify").s, "push.tls.verify");
	assert_string_equal(ydoc_item_in("probes", 3).s, "probes[3]");
}

TL_MAIN(test_load_errors, test_empty, test_keys, test_reads, test_fields, test_show)
