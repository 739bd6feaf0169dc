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

static void test_load_errors(void **state)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
		{ "a: [1, 2\n", "t.yaml:2:1: YAML syntax error: did not find expected ',' or ']' "
				"(while parsing a flow sequence at line 1)" },
		{ "a: [[[[[1]]]]]\n", "t.yaml:1:7: nested more than 4 levels deep" },
		{ "a: &x 1\nb: &y 2\nc: &z 3\n", "t.yaml:3:4: more than 2 anchors (&)" },
		{ "a: 1\n---\nb: 2\n",
		  "t.yaml:3:1: a second YAML document; the configuration is one document" },
		{ "a: \xff\n", "t.yaml: not YAML text: invalid leading UTF-8 octet (byte 0xff at "
			    "offset 3)" },
	};

	for (size_t i = 0; i < NCASES(cases); i++) {
		struct ydoc *d = (struct ydoc *)0x1;
		char err[256] = "";
		int rc = ydoc_load("t.yaml", cases[i].text, strlen(cases[i].text), &lim, err,
				   sizeof(err), &d);

		if (rc != -EINVAL || strcmp(err, cases[i].err))
			fail_msg("case %zu: %d \"%s\", want \"%s\"", i, rc, err, cases[i].err);
		assert_ptr_equal(d, (struct ydoc *)0x1);
	}
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
	static const struct {
		const char *text, *err;
	} cases[] = {
		{ "frequncy: 1\n", "t.yaml:1:1: unknown key 'frequncy' at the top level "
				   "(did you mean 'frequency'?)" },
		{ "zzz: 1\n", "t.yaml:1:1: unknown key 'zzz' at the top level (zzz from top)" },
		{ "enabled: 1\nenabled: 2\n",
		  "t.yaml:2:1: duplicate key 'enabled' at the top level (first at line 1)" },
		{ "[a]: 1\n", "t.yaml:1:1: keys at the top level must be names, got a list" },
		{ "sub: 1\n", "t.yaml:1:6: sub: expected a mapping of keys (x: ...), got '1'" },
		{ "sub: {y: 1}\n", "t.yaml:1:7: unknown key 'y' in sub (y from sub)" },
	};

	for (size_t i = 0; i < NCASES(cases); i++) {
		char err[256] = "";
		struct ydoc *d = load_ok(cases[i].text, err, sizeof(err));
		const yaml_node_t *sub;
		int rc;

		ydoc_set_hint(d, hint, NULL);
		rc = ydoc_check_keys(d, ydoc_root(d), "", keys);
		if (!rc)
			rc = ydoc_section(d, ydoc_root(d), "", "sub", sub_keys, &sub);
		if (rc != -EINVAL || strcmp(err, cases[i].err))
			fail_msg("case %zu: %d \"%s\", want \"%s\"", i, rc, err, cases[i].err);
		ydoc_free(d);
	}
}

/* One read of key "v" in "v: TEXT". */
enum kind { K_BOOL, K_UINT, K_DUR, K_SIZE, K_ENUM, K_STR, K_NSTR, K_LIST };

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

static void test_reads(void **state)
{
	static const struct {
		const char *text;
		enum kind k;
		const char *err; /* NULL: accepted with @num */
		uint64_t num;
	} cases[] = {
		{ "v: true", K_BOOL, NULL, 1 },
		{ "v: False", K_BOOL, NULL, 0 },
		{ "v: yes", K_BOOL, "t.yaml:1:4: v: expected true or false, got 'yes'", 0 },
		{ "v: 42", K_UINT, NULL, 42 },
		{ "v: 0", K_UINT, "t.yaml:1:4: v: '0' is out of range (1..100)", 0 },
		{ "v: -1", K_UINT, "t.yaml:1:4: v: expected an integer, got '-1'", 0 },
		{ "v: 1m30s", K_DUR, NULL, 90000 },
		{ "v: 15", K_DUR, "t.yaml:1:4: v: '15' has no unit (ms, s, m or h, like '15s')", 0 },
		{ "v: 2h", K_DUR, "t.yaml:1:4: v: '2h' is out of range (10ms..1h)", 0 },
		{ "v: 64KiB", K_SIZE, NULL, 65536 },
		{ "v: 2MiB", K_SIZE, "t.yaml:1:4: v: '2MiB' is out of range (1KiB..1MiB)", 0 },
		{ "v: info", K_ENUM, NULL, 1 },
		{ "v: eror", K_ENUM, "t.yaml:1:4: v: expected debug, info or error, got 'eror' "
				     "(did you mean 'error'?)", 0 },
		{ "v: abc", K_STR, NULL, 0 },
		{ "v: \"\"", K_STR, "t.yaml:1:4: v: must not be empty", 0 },
		{ "v: null", K_STR, "t.yaml:1:4: v: expected a name, got nothing (null)", 0 },
		{ "v: null", K_NSTR, NULL, 0 },
		{ "v: \"a\\x01\"", K_STR, "t.yaml:1:4: v: contains a control character (at byte 1)", 0 },
		{ "v: 01234567890123456", K_STR, "t.yaml:1:4: v: longer than 16 bytes", 0 },
		{ "v: [a, b]", K_LIST, NULL, 2 },
		{ "v: null", K_LIST, NULL, 0 },
		{ "v: [a, a]", K_LIST, "t.yaml:1:8: v[1]: 'a' is already listed as v[0]", 0 },
		{ "v: [a, b, c]", K_LIST, "t.yaml:1:4: v: 3 items, at most 2 are allowed", 0 },
		{ "v: a", K_LIST, "t.yaml:1:4: v: expected a list, got 'a' (write ['a'])", 0 },
	};

	for (size_t i = 0; i < NCASES(cases); i++) {
		char err[256] = "", *str = NULL;
		uint64_t num = 0;
		int rc = read_v(cases[i].text, cases[i].k, err, sizeof(err), &num, &str);

		if (!cases[i].err && (rc || num != cases[i].num))
			fail_msg("\"%s\": %d (%s), %llu", cases[i].text, rc, err,
				 (unsigned long long)num);
		if (cases[i].err && (rc != -EINVAL || strcmp(err, cases[i].err)))
			fail_msg("\"%s\": %d \"%s\", want \"%s\"", cases[i].text, rc, err,
				 cases[i].err);
		if (cases[i].k == K_STR && !rc)
			assert_string_equal(str, "abc");
		free(str);
	}
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
