// SPDX-License-Identifier: MIT
/*
 * The explorer's stack APIs through a real server over the SQLite store
 * (http_fixture.h): GET /api/v1/stacks?format=json and GET /api/v1/diff.
 *
 * Pushed: cgroup /db at 600 s (exec_simple_query 30, vacuum 5) and at
 * 1800 s (exec_simple_query 10, vacuum 15, checkpoint 20); /web at 600 s
 * (one kernel stack, 7); /kinds at 600 s, stacks whose frames are of every
 * kind (comm, marker, binary, library, kernel, unnamed, JIT) and one
 * hostile name (a quote, '<', a backslash, a newline, a control byte).
 *
 * Checked: the JSON parses (json-c), its rows give back exactly the
 * folded lines and totals of format=folded, kinds and modules are right,
 * the hostile name survives escaping; the diff's folded lines for stacks
 * of one side only (0 on the other), its column sums equal each side's
 * folded total, base_* default to the target's values (and an empty one
 * matches everything), normalize, 400s with the reason, 404 for two empty
 * sides; the diff SVG is well-formed (xmllint) and coloured the right way
 * (grown red, shrunk blue, only-in-target yellow).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exporter/render/render.h"
#include "tests/unit/http_fixture.h"
#include "tests/unit/testlib.h"
#include "wire/wire.h"

#define EVIL "evil\"<\\\n\x01x"
#define POSTGRES "/usr/lib/postgresql/15/bin/postgres"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define A_SPAN "from=0&to=1200"
#define B_SPAN "from=1200&to=3000"

struct stk {
	const char *const *frames;
	const int *mods; /* indexes into the batch's modules array, -1 none */
	size_t n;
	uint64_t count;
};

/* Push stacks @s[0..n) of cgroup @cg (cpu-clock at 100 Hz) in a batch
 * over [@start, @start + 1) s, the modules of @paths registered first. */
static void push(const char *cg, uint64_t start, const struct stk *s, size_t n)
{
	static const char *const paths[] = { POSTGRES, LIBC, "[kernel.kallsyms]", "[jit]",
					     "/usr/lib/libfoo.so.1", "/usr/bin/bash" };
	struct wire_batch *b = wire_batch_new("h1", NULL, "agent-1", "9.9", hf_next_seq(),
					      start * NS, start * NS + NS);
	int mod[6], c, p;
	uint8_t *buf;
	size_t len;

	assert_non_null(b);
	for (size_t i = 0; i < 6; i++)
		assert_true((mod[i] = wire_add_module(b, paths[i], i ? "" : "0badc0de")) >= 0);
	c = wire_add_cgroup(b, cg, 11, NULL);
	p = wire_add_profile(b, c, "cpu-clock", 0, 100);
	assert_true(c >= 0 && p >= 0);
	for (size_t i = 0; i < n; i++) {
		int m[16];

		for (size_t k = 0; k < s[i].n; k++)
			m[k] = s[i].mods[k] < 0 ? -1 : mod[s[i].mods[k]];
		assert_int_equal(wire_add_stack_mod(b, p, s[i].frames, m, s[i].n, s[i].count), 0);
	}
	assert_int_equal(wire_encode(b, &buf, &len), 0);
	wire_batch_free(b);
	hf_expect(hf_post(buf, len, TOKEN, NULL), 200, "stored\n");
	free(buf);
}

#define STK(m, c, ...) \
	{ (const char *const[]){ __VA_ARGS__ }, m, sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *), c }

static int group_setup(void **state)
{
	static const int pg[] = { -1, 0, 0 }, web[] = { -1, -1, 2 };
	static const int k1[] = { -1, -1, 5, 5, 1, 2 }, k2[] = { -1, 5, 4, -1 }, k3[] = { -1, 5, 3 };
	const struct stk a[] = {
		STK(pg, 30, "postgres", "main", "exec_simple_query"),
		STK(pg, 5, "postgres", "main", "vacuum"),
	};
	const struct stk b[] = {
		STK(pg, 10, "postgres", "main", "exec_simple_query"),
		STK(pg, 15, "postgres", "main", "vacuum"),
		STK(pg, 20, "postgres", "main", "checkpoint"),
	};
	const struct stk w[] = { STK(web, 7, "nginx", "ngx_worker", "write_[k]") };
	const struct stk k[] = {
		STK(k1, 4, "bash", "[truncated: max stack]", "main", EVIL, "__libc_write",
		    "entry_SYSCALL_64_[k]"),
		STK(k2, 3, "bash", "main", "libfoo.so.1+0x1a2b", "[unmapped]+0x1234"),
		STK(k3, 2, "bash", "main", "LazyCompile:foo"),
	};
	int ret = hf_setup(state);

	if (ret)
		return ret;
	push("/db", 600, a, 2);
	push("/db", 1800, b, 3);
	push("/web", 600, w, 1);
	push("/kinds", 600, k, 3);
	return 0;
}

/* GET @path: status @status with a Content-Type starting with @type. */
static struct resp get(const char *path, int status, const char *type)
{
	struct resp r = hf_get(path, NULL);
	char want[128];

	tl_pathf(want, sizeof(want), "Content-Type: %s", type);
	if (r.status != status || !strcasestr(r.head, want))
		fail_msg("GET %s: %d, want %d with %s:\n%s%.300s", path, r.status, status, want,
			 r.head, r.body);
	return r;
}

static json_object *get_json(const char *path)
{
	struct resp r = get(path, 200, "application/json");
	json_object *j = json_tokener_parse(r.body);

	if (!j)
		fail_msg("GET %s: not JSON: %.300s", path, r.body);
	hf_resp_free(&r);
	return j;
}

static json_object *member(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("no member %s", k);
	return v;
}

static uint64_t u64_at(json_object *o, const char *k)
{
	return (uint64_t)json_object_get_int64(member(o, k));
}

/* The folded text of the rows of answer @j, as render_folded writes it
 * (control bytes '?'); with @diff "STACK BASE TARGET" lines. Sums the
 * count columns into @sum[0..2). malloc'd. */
static char *rows_folded(json_object *j, bool diff, uint64_t sum[2])
{
	json_object *names = member(j, "names"), *stacks = member(j, "stacks");
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	sum[0] = sum[1] = 0;
	for (size_t i = 0; i < json_object_array_length(stacks); i++) {
		json_object *row = json_object_array_get_idx(stacks, i);
		size_t nc = diff ? 2 : 1;
		json_object *ids = json_object_array_get_idx(row, nc);

		assert_int_equal(json_object_array_length(row), nc + 1);
		for (size_t d = 0; d < json_object_array_length(ids); d++) {
			int id = json_object_get_int(json_object_array_get_idx(ids, d));
			const char *s = json_object_get_string(json_object_array_get_idx(names, id));

			assert_true(id >= 0 && (size_t)id < json_object_array_length(names));
			if (d)
				putc(';', f);
			for (; *s; s++)
				putc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
		}
		for (size_t c = 0; c < nc; c++) {
			uint64_t v = (uint64_t)json_object_get_int64(json_object_array_get_idx(row, c));

			fprintf(f, " %llu", (unsigned long long)v);
			sum[c] += v;
		}
		putc('\n', f);
	}
	assert_int_equal(fclose(f), 0);
	return text;
}

/* The JSON of /api/v1/stacks?@query gives back its folded text exactly. */
static void check_roundtrip(const char *query, uint64_t want_samples)
{
	char path[512];
	json_object *j, *tot;
	struct resp r;
	uint64_t sum[2];
	char *text;

	tl_pathf(path, sizeof(path), "/api/v1/stacks?%s&format=json", query);
	j = get_json(path);
	text = rows_folded(j, false, sum);
	tot = member(j, "totals");
	assert_int_equal(u64_at(tot, "samples"), want_samples);
	assert_int_equal(sum[0], want_samples);
	/* 100 Hz cpu-clock: 10 ms a sample */
	assert_int_equal(u64_at(tot, "cpu_ns"), want_samples * 10000000);
	tl_pathf(path, sizeof(path), "/api/v1/stacks?%s", query);
	r = get(path, 200, "text/plain");
	assert_string_equal(text, r.body);
	hf_resp_free(&r);
	free(text);
	json_object_put(j);
}

static void test_json_roundtrip(void **state)
{
	json_object *j, *sel, *rates, *rate;

	check_roundtrip("cgroup=/db&" A_SPAN, 35);
	check_roundtrip("cgroup=/db&from=0&to=3000", 80);
	check_roundtrip("from=0&to=3000", 96);
	check_roundtrip("cgroup=/kinds&from=0&to=3000", 9);
	j = get_json("/api/v1/stacks?cgroup=/db&" A_SPAN "&format=json");
	sel = member(j, "selection");
	assert_string_equal(json_object_get_string(member(sel, "cgroup")), "/db");
	assert_true(json_object_is_type(member(sel, "host"), json_type_null));
	assert_int_equal(json_object_get_double(member(sel, "to")), 1200);
	assert_string_equal(json_object_get_string(member(j, "unit")), "samples");
	rates = member(j, "rates");
	assert_int_equal(json_object_array_length(rates), 1);
	rate = json_object_array_get_idx(rates, 0);
	assert_string_equal(json_object_get_string(member(rate, "event")), "cpu-clock");
	assert_int_equal(u64_at(rate, "frequency"), 100);
	assert_int_equal(u64_at(rate, "samples"), 35);
	json_object_put(j);
}

/* Kinds and modules per name, and the hostile name as it was pushed. */
static void test_json_kinds(void **state)
{
	static const struct {
		const char *name, *kind, *module;
	} want[] = {
		{ "bash", "comm", NULL },
		{ "[truncated: max stack]", "marker", NULL },
		{ "main", "binary", "/usr/bin/bash" },
		{ EVIL, "binary", "/usr/bin/bash" },
		{ "__libc_write", "library", LIBC },
		{ "entry_SYSCALL_64_[k]", "kernel", "[kernel.kallsyms]" },
		{ "libfoo.so.1+0x1a2b", "unnamed", "/usr/lib/libfoo.so.1" },
		{ "[unmapped]+0x1234", "unnamed", NULL },
		{ "LazyCompile:foo", "jit", "[jit]" },
	};
	json_object *j = get_json("/api/v1/stacks?cgroup=/kinds&" A_SPAN "&format=json");
	json_object *names = member(j, "names"), *kinds = member(j, "kinds");
	json_object *nm = member(j, "name_modules"), *mods = member(j, "modules");
	size_t n = json_object_array_length(names);

	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	assert_int_equal(json_object_array_length(kinds), n);
	assert_int_equal(json_object_array_length(nm), n);
	for (size_t w = 0; w < n; w++) {
		size_t i;
		int m;

		for (i = 0; i < n; i++)
			if (!strcmp(json_object_get_string(json_object_array_get_idx(names, i)),
				    want[w].name))
				break;
		if (i == n)
			fail_msg("no name %s", want[w].name);
		assert_string_equal(json_object_get_string(json_object_array_get_idx(kinds, i)),
				    want[w].kind);
		m = json_object_get_int(json_object_array_get_idx(nm, i));
		if (!want[w].module) {
			assert_int_equal(m, -1);
			continue;
		}
		assert_true(m >= 0 && (size_t)m < json_object_array_length(mods));
		assert_string_equal(
			json_object_get_string(member(json_object_array_get_idx(mods, m), "path")),
			want[w].module);
	}
	json_object_put(j);
}

/* The escaping on the wire, and gzip when asked. */
static void test_json_escaped_gzip(void **state)
{
	struct resp r = get("/api/v1/stacks?cgroup=/kinds&" A_SPAN "&format=json", 200,
			    "application/json");

	assert_non_null(strstr(r.body, "\"evil\\\"<\\\\\\n\\u0001x\""));
	for (size_t i = 0; i < r.body_len; i++)
		if ((unsigned char)r.body[i] < 0x20 && r.body[i] != '\n')
			fail_msg("a raw control byte at %zu", i);
	hf_resp_free(&r);
	r = hf_get("/api/v1/stacks?cgroup=/kinds&" A_SPAN "&format=json", "Accept-Encoding: gzip\r\n");
	assert_int_equal(r.status, 200);
	assert_non_null(strcasestr(r.head, "Content-Encoding: gzip"));
	hf_resp_free(&r);
}

/* Table-driven: render_frame_kind() alone. */
static void test_frame_kind(void **state)
{
	static const struct {
		const char *name, *module;
		bool root;
		const char *kind;
	} t[] = {
		{ "postgres", NULL, true, "comm" },
		{ "[truncated]", NULL, true, "marker" },
		{ "[truncated: stack copy]", POSTGRES, false, "marker" },
		{ "[bad return address]", NULL, false, "marker" },
		{ "schedule_[k]", NULL, false, "kernel" },
		{ "kernel+0xffffffff8100_[k]", NULL, false, "kernel" },
		{ "do_syscall_64", "[kernel.kallsyms]", false, "kernel" },
		{ "postgres+0x1a2b", POSTGRES, false, "unnamed" },
		{ "[unmapped]+0x10", NULL, false, "unnamed" },
		{ "exec_simple_query", POSTGRES, false, "binary" },
		{ "malloc", LIBC, false, "library" },
		{ "pthread_create", "/lib/libpthread-2.31.so", false, "library" },
		{ "__vdso_clock_gettime", "[vdso]", false, "library" },
		{ "main", "/opt/app.sock/bin/app", false, "binary" },
		{ "main", "/opt/x.so.d/app", false, "binary" },
		{ "Interpreter", "[jit]", false, "jit" },
		{ "foo", NULL, false, "function" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *k = render_frame_kind(t[i].name, strlen(t[i].name), t[i].module,
						  t[i].root);

		if (strcmp(k, t[i].kind))
			fail_msg("%s in %s: %s, want %s", t[i].name, t[i].module, k, t[i].kind);
	}
}

/* ---- /api/v1/diff ---- */

/* The folded sum of /api/v1/stacks?@query. */
static uint64_t folded_sum(const char *query)
{
	char path[512];
	struct resp r;
	uint64_t sum = 0;

	tl_pathf(path, sizeof(path), "/api/v1/stacks?%s", query);
	r = get(path, 200, "text/plain");
	for (char *l = r.body; *l; l = strchr(l, '\n') + 1) {
		*strchr(l, '\n') = 0;
		sum += strtoull(strrchr(l, ' ') + 1, NULL, 10);
		l[strlen(l)] = '\n';
	}
	hf_resp_free(&r);
	return sum;
}

/* /api/v1/diff?@query (folded): lines, and the two column sums. */
static struct resp diff_folded(const char *query, uint64_t sum[2])
{
	char path[512];
	struct resp r;

	tl_pathf(path, sizeof(path), "/api/v1/diff?%s", query);
	r = get(path, 200, "text/plain");
	sum[0] = sum[1] = 0;
	for (char *l = r.body; *l; l = strchr(l, '\n') + 1) {
		char *t, *b;

		*strchr(l, '\n') = 0;
		t = strrchr(l, ' ');
		for (b = t - 1; *b != ' '; b--)
			;
		sum[0] += strtoull(b + 1, NULL, 10);
		sum[1] += strtoull(t + 1, NULL, 10);
		l[strlen(l)] = '\n';
	}
	return r;
}

static void expect_lines(const struct resp *r, const char *const *lines)
{
	size_t n = 0;

	for (; *lines; lines++, n++)
		if (!strstr(r->body, *lines))
			fail_msg("lacks \"%s\":\n%s", *lines, r->body);
	assert_int_equal(tl_count_lines(r->body), n);
}

static void test_diff_folded(void **state)
{
	uint64_t sum[2];
	struct resp r;

	/* two time ranges of one cgroup: base_from and base_to only */
	r = diff_folded("cgroup=/db&" B_SPAN "&base_from=0&base_to=1200", sum);
	expect_lines(&r, (const char *const[]){ "postgres;main;checkpoint 0 20\n",
						"postgres;main;exec_simple_query 30 10\n",
						"postgres;main;vacuum 5 15\n", NULL });
	assert_string_equal(r.body, "postgres;main;checkpoint 0 20\n"
				    "postgres;main;exec_simple_query 30 10\n"
				    "postgres;main;vacuum 5 15\n");
	hf_resp_free(&r);
	assert_int_equal(sum[0], folded_sum("cgroup=/db&" A_SPAN));
	assert_int_equal(sum[1], folded_sum("cgroup=/db&" B_SPAN));
	/* two cgroups over one range: the base's only stack gets 0 target */
	r = diff_folded("cgroup=/db&" A_SPAN "&base_cgroup=/web", sum);
	expect_lines(&r, (const char *const[]){ "nginx;ngx_worker;write_[k] 7 0\n",
						"postgres;main;exec_simple_query 0 30\n",
						"postgres;main;vacuum 0 5\n", NULL });
	hf_resp_free(&r);
	assert_int_equal(sum[0], folded_sum("cgroup=/web&" A_SPAN));
	assert_int_equal(sum[1], folded_sum("cgroup=/db&" A_SPAN));
}

static void test_diff_defaults(void **state)
{
	uint64_t sum[2];
	struct resp r;

	/* no base_*: the base is the target */
	r = diff_folded("cgroup=/db&" A_SPAN, sum);
	expect_lines(&r, (const char *const[]){ "postgres;main;exec_simple_query 30 30\n",
						"postgres;main;vacuum 5 5\n", NULL });
	hf_resp_free(&r);
	/* an empty base_cgroup matches every cgroup */
	r = diff_folded("cgroup=/web&" A_SPAN "&base_cgroup=", sum);
	assert_int_equal(sum[0], folded_sum(A_SPAN));
	assert_int_equal(sum[1], 7);
	hf_resp_free(&r);
	/* base_to alone: base_from stays the target's */
	r = diff_folded("cgroup=/db&from=0&to=3000&base_to=1200", sum);
	assert_int_equal(sum[0], 35);
	assert_int_equal(sum[1], 80);
	hf_resp_free(&r);
}

static void test_diff_json(void **state)
{
	json_object *j = get_json("/api/v1/diff?cgroup=/db&" B_SPAN
				  "&base_from=0&base_to=1200&format=json");
	json_object *base = member(j, "base"), *target = member(j, "target");
	uint64_t sum[2];
	char *text = rows_folded(j, true, sum);

	assert_string_equal(text, "postgres;main;checkpoint 0 20\n"
				  "postgres;main;exec_simple_query 30 10\n"
				  "postgres;main;vacuum 5 15\n");
	assert_int_equal(sum[0], 35);
	assert_int_equal(sum[1], 45);
	assert_int_equal(u64_at(member(base, "totals"), "samples"), 35);
	assert_int_equal(u64_at(member(target, "totals"), "samples"), 45);
	assert_int_equal(json_object_get_double(member(member(base, "selection"), "to")), 1200);
	assert_int_equal(json_object_get_double(member(member(target, "selection"), "from")), 1200);
	assert_true(json_object_get_boolean(member(j, "normalize")));
	free(text);
	json_object_put(j);
}

static void test_diff_bad(void **state)
{
	static const struct {
		const char *query, *why;
	} t[] = {
		{ "base_from=junk", "base_from: 'junk' is not a time" },
		{ "from=0&to=3000&base_from=1200&base_to=600", "base_from is not before base_to" },
		{ "format=pprof", "format: 'pprof': want folded, json or svg" },
		{ "normalize=2", "normalize: '2'" },
		{ "from=5&to=1", "from is not before to" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char path[256];
		struct resp r;

		tl_pathf(path, sizeof(path), "/api/v1/diff?%s", t[i].query);
		r = hf_get(path, NULL);
		if (r.status != 400 || !strstr(r.body, t[i].why) || tl_count_lines(r.body) != 1)
			fail_msg("GET %s: %d %s", path, r.status, r.body);
		hf_resp_free(&r);
	}
	hf_expect(hf_get("/api/v1/diff?cgroup=/none&" A_SPAN, NULL), 404, "no samples");
	hf_expect(hf_get("/api/v1/diff?cgroup=/none&" A_SPAN "&format=json", NULL), 404,
		  "no samples");
	/* one side empty is a diff */
	hf_expect(hf_get("/api/v1/diff?cgroup=/none&" A_SPAN "&base_cgroup=/web", NULL), 200,
		  "nginx;ngx_worker;write_[k] 7 0\n");
}

static void xmllint_ok(const char *svg)
{
	char path[] = "/tmp/test_http_diff-XXXXXX.svg", cmd[128];
	int fd = mkstemps(path, 4);
	size_t len = strlen(svg);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, svg, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	if (system(cmd) != 0)
		fail_msg("xmllint rejects %s", path); /* kept for a look */
	unlink(path);
}

/* The fill of the frame titled "@name (" in @svg. */
static void fill_of(const char *svg, const char *name, unsigned rgb[3])
{
	char want[128];
	const char *t, *f;

	tl_pathf(want, sizeof(want), "<title>%s (", name);
	t = strstr(svg, want);
	if (!t)
		fail_msg("no frame %s", name);
	f = strstr(t, "fill=\"rgb(");
	assert_non_null(f);
	assert_int_equal(sscanf(f, "fill=\"rgb(%u,%u,%u)", &rgb[0], &rgb[1], &rgb[2]), 3);
}

static void test_diff_svg(void **state)
{
	struct resp r = get("/api/v1/diff?cgroup=/db&" B_SPAN "&base_from=0&base_to=1200&format=svg",
			    200, "image/svg+xml");
	unsigned rgb[3];

	xmllint_ok(r.body);
	/* exec_simple_query: 30/35 of the base, 10/45 of the target */
	fill_of(r.body, "exec_simple_query", rgb);
	assert_true(rgb[2] == 255 && rgb[0] < 255);
	/* vacuum: 5/35, then 15/45 */
	fill_of(r.body, "vacuum", rgb);
	assert_true(rgb[0] == 255 && rgb[2] < 255);
	/* checkpoint: only in the target */
	fill_of(r.body, "checkpoint", rgb);
	assert_true(rgb[0] == 255 && rgb[1] == 205 && rgb[2] == 0);
	assert_non_null(strstr(r.body, "only in the target)</title>"));
	hf_resp_free(&r);
	/* counts: vacuum 5 -> 15 grows, exec_simple_query 30 -> 10 shrinks */
	r = get("/api/v1/diff?cgroup=/db&" B_SPAN "&base_from=0&base_to=1200&format=svg&normalize=0",
		200, "image/svg+xml");
	xmllint_ok(r.body);
	fill_of(r.body, "main", rgb); /* 35 -> 45: grown */
	assert_true(rgb[0] == 255 && rgb[2] < 255);
	hf_resp_free(&r);
	r = get("/api/v1/diff?cgroup=/none&" A_SPAN "&format=svg", 404, "image/svg+xml");
	xmllint_ok(r.body);
	hf_resp_free(&r);
}

TL_MAIN_GROUP(group_setup, hf_teardown, test_json_roundtrip, test_json_kinds,
	      test_json_escaped_gzip, test_frame_kind, test_diff_folded, test_diff_defaults,
	      test_diff_json, test_diff_bad, test_diff_svg)
