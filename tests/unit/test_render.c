// SPDX-License-Identifier: MIT
/*
 * exporter/render: fold_set summing and refusals; folded text summed and in
 * byte order (checked against strcmp on random stacks whose names prefix
 * each other); pprof decoded back by a small protobuf reader (string table,
 * sample and period types, functions, locations per (function, mapping),
 * mappings with build-ids, samples leaf first); the SVG checked by xmllint
 * with hostile frame names and title, its frames' totals checked against a
 * brute-force count of every stack prefix, its geometry (children inside
 * their parent), narrow frames left out; every allocation failed in turn
 * (no crash, nothing left allocated; not under ASan, which owns malloc);
 * and 100k stacks of depth 30 timed (printed, not asserted).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "exporter/render.h"
#include "tests/unit/testalloc.h"

/* ---- helpers ------------------------------------------------------------ */

static char *render_to_string(int (*fn)(const struct fold_set *, FILE *), const struct fold_set *fs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(fs, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static int svg_default(const struct fold_set *fs, FILE *f)
{
	struct flame_opts o = { .title = "test" };

	return render_svg(fs, &o, f);
}

/* ---- fold_set and folded text ------------------------------------------- */

static void test_folded_sum_sort(void **state)
{
	struct fold_set *fs = fold_set_new();
	char *out;

	assert_non_null(fs);
	assert_int_equal(fold_set_add(fs, "main;b;c", 3, 30), 0);
	assert_int_equal(fold_set_add(fs, "main;b", 2, 0), 0);
	assert_int_equal(fold_set_add(fs, "main;b;c", 4, 40), 0);
	assert_int_equal(fold_set_add(fs, "x;y_[k]", 1, 0), 0);
	assert_int_equal(fold_set_add(fs, "main!;z", 5, 0), 0);
	assert_int_equal(fold_set_add(fs, "main", 6, 0), 0);
	assert_int_equal(fold_set_add(fs, "main b;q", 1, 0), 0);
	assert_int_equal(fold_set_stacks(fs), 6);
	assert_int_equal(fold_set_samples(fs), 22);

	out = render_to_string(render_folded, fs);
	/* bytewise: ' ' < '!' < ';', and a stack before its extensions */
	assert_string_equal(out, "main 6\n"
				 "main b;q 1\n"
				 "main!;z 5\n"
				 "main;b 2\n"
				 "main;b;c 7\n"
				 "x;y_[k] 1\n");
	free(out);
	fold_set_free(fs);
	fold_set_free(NULL);
}

static void test_add_refused(void **state)
{
	struct fold_set *fs = fold_set_new();
	size_t n = 8193 * 2;
	char *deep = malloc(n + 1);
	char *out;

	assert_non_null(fs);
	assert_non_null(deep);
	assert_int_equal(fold_set_add(fs, "", 1, 0), -EINVAL);
	assert_int_equal(fold_set_add(fs, "a;;b", 1, 0), -EINVAL);
	assert_int_equal(fold_set_add(fs, ";a", 1, 0), -EINVAL);
	assert_int_equal(fold_set_add(fs, "a;", 1, 0), -EINVAL);
	for (size_t i = 0; i < n; i += 2) {
		deep[i] = 'f';
		deep[i + 1] = ';';
	}
	deep[n - 1] = '\0'; /* 8193 frames */
	assert_int_equal(fold_set_add(fs, deep, 1, 0), -E2BIG);
	deep[n - 3] = '\0'; /* 8192 frames: the cap itself is fine */
	assert_int_equal(fold_set_add(fs, deep, 1, 0), 0);
	assert_int_equal(fold_set_stacks(fs), 1);
	assert_int_equal(fold_set_samples(fs), 1);

	/* A refused stack leaves nothing behind in the outputs. */
	fold_set_free(fs);
	fs = fold_set_new();
	assert_int_equal(fold_set_add(fs, "a;;b", 1, 0), -EINVAL);
	assert_int_equal(fold_set_add(fs, "ok", 1, 0), 0);
	out = render_to_string(render_folded, fs);
	assert_string_equal(out, "ok 1\n");
	free(out);
	free(deep);
	fold_set_free(fs);
}

static void test_folded_control_bytes(void **state)
{
	struct fold_set *fs = fold_set_new();
	char *out;

	assert_int_equal(fold_set_add(fs, "/pg\n.slice;a\tb\x7f", 2, 0), 0);
	out = render_to_string(render_folded, fs);
	assert_string_equal(out, "/pg?.slice;a?b? 2\n");
	free(out);
	fold_set_free(fs);
}

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Names that prefix each other and hold bytes on both sides of ';'. */
static const char *const tricky[] = { "a", "a!", "a b", "ab", "a~", "b", "B", "\xc3\xa9", "a_[k]", "zz" };
#define NTRICKY (sizeof(tricky) / sizeof(tricky[0]))

static void random_stack(char *buf, size_t cap)
{
	uint32_t depth = 1 + rnd(5);
	size_t off = 0;

	for (uint32_t d = 0; d < depth; d++)
		off += (size_t)snprintf(buf + off, cap - off, "%s%s", d ? ";" : "", tricky[rnd(NTRICKY)]);
}

static void test_folded_order_random(void **state)
{
	struct fold_set *fs = fold_set_new();
	char buf[256], *out, *line, *save = NULL, *prev = NULL;
	uint64_t total = 0;
	size_t lines = 0;

	for (int i = 0; i < 3000; i++) {
		random_stack(buf, sizeof(buf));
		assert_int_equal(fold_set_add(fs, buf, 1 + rnd(3), 0), 0);
	}
	out = render_to_string(render_folded, fs);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');

		assert_non_null(sp);
		total += strtoull(sp + 1, NULL, 10);
		*sp = '\0';
		if (prev && strcmp(prev, line) >= 0)
			fail_msg("not in byte order: \"%s\" then \"%s\"", prev, line);
		prev = line;
		lines++;
	}
	assert_int_equal(lines, fold_set_stacks(fs));
	assert_int_equal(total, fold_set_samples(fs));
	free(out);
	fold_set_free(fs);
}

/* ---- pprof, decoded back ------------------------------------------------ */

#define DMAX 64

struct dsample {
	uint64_t loc[DMAX];
	size_t nloc;
	uint64_t v[4];
	size_t nv;
};

struct dprof {
	char *str[DMAX * 4];
	size_t nstr;
	uint64_t st_type[4], st_unit[4];
	size_t nst;
	uint64_t pt_type, pt_unit, period, time, duration, default_st;
	struct {
		uint64_t id, name, sysname;
	} fn[DMAX];
	size_t nfn;
	struct {
		uint64_t id, mapping, fnid;
		size_t nlines;
	} loc[DMAX];
	size_t nloc;
	struct {
		uint64_t id, file, build, hasfn;
	} map[DMAX];
	size_t nmap;
	struct dsample sample[DMAX];
	size_t nsample;
};

struct rd {
	const uint8_t *p, *end;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		assert_true(r->p < r->end);
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	fail_msg("varint too long");
	return 0;
}

/* The next field: its number, and its varint value or its bytes in *sub. */
static bool rd_field(struct rd *r, unsigned *field, uint64_t *v, struct rd *sub, unsigned *wt)
{
	uint64_t key, len;

	if (r->p == r->end)
		return false;
	key = rd_varint(r);
	*field = (unsigned)(key >> 3);
	*wt = key & 7;
	if (*wt == 0) {
		*v = rd_varint(r);
	} else if (*wt == 2) {
		len = rd_varint(r);
		assert_true(len <= (uint64_t)(r->end - r->p));
		sub->p = r->p;
		sub->end = r->p + len;
		r->p += len;
	} else {
		fail_msg("unexpected wire type %u", *wt);
	}
	return true;
}

/* A repeated varint field, packed or not. */
static void rd_repeated(unsigned wt, uint64_t v, struct rd *sub, uint64_t *out, size_t *n, size_t max)
{
	if (wt == 0) {
		assert_true(*n < max);
		out[(*n)++] = v;
		return;
	}
	while (sub->p < sub->end) {
		assert_true(*n < max);
		out[(*n)++] = rd_varint(sub);
	}
}

static void decode_profile(const uint8_t *gz, size_t gzlen, struct dprof *d)
{
	z_stream z = { 0 };
	size_t cap = 1 << 20;
	uint8_t *raw = malloc(cap);
	struct rd r, sub, s2, s3;
	unsigned f, wt, f2, wt2, f3, wt3;
	uint64_t v, v2, v3;

	memset(d, 0, sizeof(*d));
	assert_non_null(raw);
	assert_true(gzlen > 2 && gz[0] == 0x1f && gz[1] == 0x8b); /* gzip magic */
	assert_int_equal(inflateInit2(&z, 31), Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)gzlen;
	z.next_out = raw;
	z.avail_out = (uInt)cap;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	r.p = raw;
	r.end = raw + z.total_out;
	inflateEnd(&z);

	while (rd_field(&r, &f, &v, &sub, &wt)) {
		switch (f) {
		case 1: /* sample_type */
		case 11: /* period_type */
			assert_int_equal(wt, 2);
			{
				uint64_t t = 0, u = 0;

				while (rd_field(&sub, &f2, &v2, &s2, &wt2)) {
					if (f2 == 1)
						t = v2;
					else if (f2 == 2)
						u = v2;
				}
				if (f == 1) {
					assert_true(d->nst < 4);
					d->st_type[d->nst] = t;
					d->st_unit[d->nst++] = u;
				} else {
					d->pt_type = t;
					d->pt_unit = u;
				}
			}
			break;
		case 2: { /* sample */
			struct dsample *s = &d->sample[d->nsample++];

			assert_true(d->nsample <= DMAX);
			while (rd_field(&sub, &f2, &v2, &s2, &wt2)) {
				if (f2 == 1)
					rd_repeated(wt2, v2, &s2, s->loc, &s->nloc, DMAX);
				else if (f2 == 2)
					rd_repeated(wt2, v2, &s2, s->v, &s->nv, 4);
			}
			break;
		}
		case 3: /* mapping */
			assert_true(d->nmap < DMAX);
			while (rd_field(&sub, &f2, &v2, &s2, &wt2)) {
				if (f2 == 1)
					d->map[d->nmap].id = v2;
				else if (f2 == 5)
					d->map[d->nmap].file = v2;
				else if (f2 == 6)
					d->map[d->nmap].build = v2;
				else if (f2 == 7)
					d->map[d->nmap].hasfn = v2;
			}
			d->nmap++;
			break;
		case 4: /* location */
			assert_true(d->nloc < DMAX);
			while (rd_field(&sub, &f2, &v2, &s2, &wt2)) {
				if (f2 == 1) {
					d->loc[d->nloc].id = v2;
				} else if (f2 == 2) {
					d->loc[d->nloc].mapping = v2;
				} else if (f2 == 4) {
					d->loc[d->nloc].nlines++;
					while (rd_field(&s2, &f3, &v3, &s3, &wt3))
						if (f3 == 1)
							d->loc[d->nloc].fnid = v3;
				}
			}
			d->nloc++;
			break;
		case 5: /* function */
			assert_true(d->nfn < DMAX);
			while (rd_field(&sub, &f2, &v2, &s2, &wt2)) {
				if (f2 == 1)
					d->fn[d->nfn].id = v2;
				else if (f2 == 2)
					d->fn[d->nfn].name = v2;
				else if (f2 == 3)
					d->fn[d->nfn].sysname = v2;
			}
			d->nfn++;
			break;
		case 6: /* string_table */
			assert_int_equal(wt, 2);
			assert_true(d->nstr < DMAX * 4);
			d->str[d->nstr] = strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
			d->nstr++;
			break;
		case 9:
			d->time = v;
			break;
		case 10:
			d->duration = v;
			break;
		case 12:
			d->period = v;
			break;
		case 14:
			d->default_st = v;
			break;
		default:
			fail_msg("unexpected Profile field %u", f);
		}
	}
	free(raw);
}

static void dprof_free(struct dprof *d)
{
	for (size_t i = 0; i < d->nstr; i++)
		free(d->str[i]);
}

static const char *dstr(const struct dprof *d, uint64_t i)
{
	assert_true(i < d->nstr);
	return d->str[i];
}

static size_t find_loc(const struct dprof *d, uint64_t id)
{
	for (size_t i = 0; i < d->nloc; i++)
		if (d->loc[i].id == id)
			return i;
	fail_msg("no location %" PRIu64, id);
	return 0;
}

static size_t find_fn(const struct dprof *d, uint64_t id)
{
	for (size_t i = 0; i < d->nfn; i++)
		if (d->fn[i].id == id)
			return i;
	fail_msg("no function %" PRIu64, id);
	return 0;
}

/* Modules as a server might know them. */
static int test_lookup(void *arg, const char *frame, uint32_t module, struct render_module *out)
{
	size_t len = strlen(frame);
	int *calls = arg;

	(*calls)++;
	if (len > 4 && !strcmp(frame + len - 4, "_[k]")) {
		*out = (struct render_module){ "[kernel.kallsyms]", "" };
		return 0;
	}
	if (!strcmp(frame, "main") || !strcmp(frame, "exec_simple_query")) {
		*out = (struct render_module){ "/usr/lib/postgresql/15/bin/postgres", "0badc0de" };
		return 0;
	}
	if (!strncmp(frame, "/usr/lib/libc.so.6+0x", 21)) {
		*out = (struct render_module){ "/usr/lib/libc.so.6", "c0ffee" };
		return 0;
	}
	return -1;
}

static const struct {
	const char *stack;
	uint64_t count, ns;
} pprof_in[] = {
	{ "postgres;main;exec_simple_query;schedule_[k]", 3, 30 },
	{ "postgres;main;exec_simple_query;schedule_[k]", 2, 20 },
	{ "postgres;main;schedule", 1, 10 },
	{ "/system.slice/\"pg\".service;postgres;/usr/lib/libc.so.6+0x1f2e;memcpy", 4, 40 },
	{ "x", 7, 70 },
};

/* The same stacks as pprof should tell them: "_[k]" off, summed. */
static const char *const pprof_want[] = {
	"/system.slice/\"pg\".service;postgres;/usr/lib/libc.so.6+0x1f2e;memcpy 4 40",
	"postgres;main;exec_simple_query;schedule 5 50",
	"postgres;main;schedule 1 10",
	"x 7 70",
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_pprof_decoded(void **state)
{
	struct fold_set *fs = fold_set_new();
	struct pprof_opts o = { .time_ns = 1700000000000000000ull, .duration_ns = 60000000000ull,
				.period_ns = 10101010 };
	struct dprof *d = calloc(1, sizeof(*d));
	uint8_t *buf = NULL;
	size_t len = 0;
	char *got[DMAX];
	int calls = 0;

	for (size_t i = 0; i < sizeof(pprof_in) / sizeof(pprof_in[0]); i++)
		assert_int_equal(fold_set_add(fs, pprof_in[i].stack, pprof_in[i].count, pprof_in[i].ns), 0);
	assert_int_equal(render_pprof(fs, &o, test_lookup, &calls, &buf, &len), 0);
	/* once per distinct frame */
	assert_int_equal(calls, 9);
	decode_profile(buf, len, d);

	assert_true(d->nstr > 0);
	assert_string_equal(d->str[0], "");
	assert_int_equal(d->nst, 2);
	assert_string_equal(dstr(d, d->st_type[0]), "samples");
	assert_string_equal(dstr(d, d->st_unit[0]), "count");
	assert_string_equal(dstr(d, d->st_type[1]), "cpu");
	assert_string_equal(dstr(d, d->st_unit[1]), "nanoseconds");
	assert_string_equal(dstr(d, d->pt_type), "cpu");
	assert_string_equal(dstr(d, d->pt_unit), "nanoseconds");
	assert_int_equal(d->period, 10101010);
	assert_int_equal(d->time, 1700000000000000000ull);
	assert_int_equal(d->duration, 60000000000ull);
	assert_int_equal(d->default_st, 0); /* CPU time known: pprof's default */

	/* functions: one per plain name; schedule_[k] and schedule are one */
	assert_int_equal(d->nfn, 8);
	for (size_t i = 0; i < d->nfn; i++) {
		assert_int_equal(d->fn[i].id, i + 1);
		assert_int_equal(d->fn[i].name, d->fn[i].sysname);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(dstr(d, d->fn[i].name), dstr(d, d->fn[j].name));
		assert_null(strstr(dstr(d, d->fn[i].name), "_[k]"));
	}

	/* mappings: one per module, ids from 1, build-ids kept */
	assert_int_equal(d->nmap, 3);
	for (size_t i = 0; i < d->nmap; i++) {
		const char *file = dstr(d, d->map[i].file), *bid = dstr(d, d->map[i].build);

		assert_int_equal(d->map[i].id, i + 1);
		assert_int_equal(d->map[i].hasfn, 1);
		if (!strcmp(file, "[kernel.kallsyms]"))
			assert_string_equal(bid, "");
		else if (!strcmp(file, "/usr/lib/postgresql/15/bin/postgres"))
			assert_string_equal(bid, "0badc0de");
		else if (!strcmp(file, "/usr/lib/libc.so.6"))
			assert_string_equal(bid, "c0ffee");
		else
			fail_msg("unexpected mapping %s", file);
	}

	/* locations: one per (function, mapping); schedule twice (kernel, none) */
	assert_int_equal(d->nloc, 9);
	for (size_t i = 0; i < d->nloc; i++) {
		const char *name = dstr(d, d->fn[find_fn(d, d->loc[i].fnid)].name);
		uint64_t m = d->loc[i].mapping;
		const char *file = m ? dstr(d, d->map[m - 1].file) : NULL;

		assert_int_equal(d->loc[i].id, i + 1);
		assert_int_equal(d->loc[i].nlines, 1);
		if (!strcmp(name, "main") || !strcmp(name, "exec_simple_query"))
			assert_string_equal(file, "/usr/lib/postgresql/15/bin/postgres");
		else if (!strcmp(name, "/usr/lib/libc.so.6+0x1f2e"))
			assert_string_equal(file, "/usr/lib/libc.so.6");
		else if (strcmp(name, "schedule"))
			assert_int_equal(m, 0);
	}

	/* samples, leaf first, back to folded text */
	assert_int_equal(d->nsample, 4);
	for (size_t i = 0; i < d->nsample; i++) {
		const struct dsample *s = &d->sample[i];
		char line[1024];
		size_t off = 0;

		assert_int_equal(s->nv, 2);
		for (size_t k = s->nloc; k-- > 0;) {
			const char *name = dstr(d, d->fn[find_fn(d, d->loc[find_loc(d, s->loc[k])].fnid)].name);

			off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s", k + 1 < s->nloc ? ";" : "",
						name);
		}
		snprintf(line + off, sizeof(line) - off, " %" PRIu64 " %" PRIu64, s->v[0], s->v[1]);
		got[i] = strdup(line);
	}
	qsort(got, d->nsample, sizeof(got[0]), cmp_str);
	for (size_t i = 0; i < d->nsample; i++) {
		assert_string_equal(got[i], pprof_want[i]);
		free(got[i]);
	}
	/* the kernel's schedule is a location of the kernel mapping */
	for (size_t i = 0; i < d->nsample; i++) {
		const struct dsample *s = &d->sample[i];
		const char *leaf = dstr(d, d->fn[find_fn(d, d->loc[find_loc(d, s->loc[0])].fnid)].name);

		if (!strcmp(leaf, "schedule") && s->nloc == 4) {
			uint64_t m = d->loc[find_loc(d, s->loc[0])].mapping;

			assert_true(m > 0);
			assert_string_equal(dstr(d, d->map[m - 1].file), "[kernel.kallsyms]");
		} else if (!strcmp(leaf, "schedule")) {
			assert_int_equal(d->loc[find_loc(d, s->loc[0])].mapping, 0);
		}
	}
	dprof_free(d);
	free(d);
	free(buf);
	fold_set_free(fs);
}

/* Module keys: a key per frame; the lookup answers by key. */
static int key_lookup(void *arg, const char *frame, uint32_t module, struct render_module *out)
{
	if (module == 1)
		*out = (struct render_module){ "/bin/alpha", "aa" };
	else if (module == 2)
		*out = (struct render_module){ "/bin/beta", "bb" };
	else
		return -1;
	return 0;
}

/* "main" of two programs is one function in two mappings, and each
 * sample's leaf is in its own program's mapping. */
static void test_pprof_module_keys(void **state)
{
	struct fold_set *fs = fold_set_new();
	struct dprof *d = calloc(1, sizeof(*d));
	const uint32_t ma[] = { 0, 1 }, mb[] = { 0, 2 }, bad[] = { 0 };
	uint8_t *buf = NULL;
	size_t len = 0;

	assert_non_null(d);
	assert_int_equal(fold_set_add_mod(fs, "alpha;main", ma, 2, 3, 0), 0);
	assert_int_equal(fold_set_add_mod(fs, "beta;main", mb, 2, 5, 0), 0);
	/* Added again without keys, or with the wrong count: keeps its keys. */
	assert_int_equal(fold_set_add(fs, "alpha;main", 1, 0), 0);
	assert_int_equal(fold_set_add_mod(fs, "beta;main", bad, 1, 1, 0), 0);
	assert_int_equal(render_pprof(fs, NULL, key_lookup, NULL, &buf, &len), 0);
	decode_profile(buf, len, d);

	assert_int_equal(d->nmap, 2);
	/* The heavier program's mapping first: pprof shows it as the file. */
	assert_string_equal(dstr(d, d->map[0].file), "/bin/beta");
	assert_string_equal(dstr(d, d->map[1].file), "/bin/alpha");
	assert_int_equal(d->nsample, 2);
	for (size_t i = 0; i < d->nsample; i++) {
		uint64_t leaf = d->sample[i].loc[0], root = d->sample[i].loc[1];
		const char *file = NULL, *comm = NULL;

		for (size_t k = 0; k < d->nloc; k++) {
			if (d->loc[k].id == leaf) {
				assert_true(d->loc[k].mapping >= 1 && d->loc[k].mapping <= 2);
				file = dstr(d, d->map[d->loc[k].mapping - 1].file);
				assert_string_equal(dstr(d, d->fn[d->loc[k].fnid - 1].name), "main");
			}
			if (d->loc[k].id == root) {
				assert_int_equal(d->loc[k].mapping, 0);
				comm = dstr(d, d->fn[d->loc[k].fnid - 1].name);
			}
		}
		assert_non_null(file);
		assert_non_null(comm);
		if (d->sample[i].v[0] == 4)
			assert_true(!strcmp(comm, "alpha") && !strcmp(file, "/bin/alpha"));
		else if (d->sample[i].v[0] == 6)
			assert_true(!strcmp(comm, "beta") && !strcmp(file, "/bin/beta"));
		else
			fail_msg("unexpected sample count %llu", (unsigned long long)d->sample[i].v[0]);
	}
	/* main: one function, two locations */
	assert_int_equal(d->nfn, 3);
	assert_int_equal(d->nloc, 4);
	free(buf);
	dprof_free(d);
	free(d);
	fold_set_free(fs);
}

static void test_pprof_no_lookup_no_time(void **state)
{
	struct fold_set *fs = fold_set_new();
	struct dprof *d = calloc(1, sizeof(*d));
	uint8_t *buf = NULL;
	size_t len = 0;

	/* no module lookup, no options, an event without CPU time */
	assert_int_equal(fold_set_add(fs, "a;b_[k]", 2, 0), 0);
	assert_int_equal(render_pprof(fs, NULL, NULL, NULL, &buf, &len), 0);
	decode_profile(buf, len, d);
	assert_int_equal(d->nmap, 0);
	assert_int_equal(d->nloc, 2);
	for (size_t i = 0; i < d->nloc; i++)
		assert_int_equal(d->loc[i].mapping, 0);
	assert_string_equal(dstr(d, d->default_st), "samples");
	assert_int_equal(d->period, 0);
	assert_int_equal(d->nsample, 1);
	assert_int_equal(d->sample[0].v[0], 2);
	assert_int_equal(d->sample[0].v[1], 0);
	dprof_free(d);
	free(buf);

	/* nothing at all: still a profile */
	fold_set_free(fs);
	fs = fold_set_new();
	assert_int_equal(render_pprof(fs, NULL, NULL, NULL, &buf, &len), 0);
	decode_profile(buf, len, d);
	assert_int_equal(d->nsample, 0);
	assert_int_equal(d->nst, 2);
	assert_string_equal(d->str[0], "");
	dprof_free(d);
	free(d);
	free(buf);
	fold_set_free(fs);
}

/* ---- SVG ---------------------------------------------------------------- */

static void xmllint_ok(const char *svg)
{
	char path[] = "/tmp/test_render-XXXXXX.svg", cmd[128];
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

static void test_svg_hostile(void **state)
{
	struct fold_set *fs = fold_set_new();
	struct flame_opts o = { .title = "cg <\"/a&b'\x01\xff\">", .subtitle = "sub \xe2\x82\xac ]]>" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	assert_int_equal(fold_set_add(fs, "/system.slice/we\"ird \\name\n.service;<script>alert(1)</script>;"
					  "a&b;caf\xc3\xa9;\xff\xfe\xc3;\x01\x02\x1f\x7f;]]>;\xef\xbf\xbe;"
					  "\xed\xa0\x80;\xf4\x90\x80\x80;\xc0\xaf;'q'",
				  5, 0),
			 0);
	assert_int_equal(fold_set_add(fs, "k_[k];lib.so+0x1f;\xe2\x82\xac\xf0\x9f\x94\xa5", 3, 0), 0);
	f = open_memstream(&buf, &len);
	assert_int_equal(render_svg(fs, &o, f), 0);
	fclose(f);
	xmllint_ok(buf);

	/* self-contained: no external reference besides the namespace */
	assert_null(strstr(buf, "<!DOCTYPE"));
	assert_null(strstr(buf, "href"));
	assert_non_null(strstr(buf, "<![CDATA["));
	/* names escaped, kept where valid, replaced where not */
	assert_non_null(strstr(buf, "<title>&lt;script&gt;alert(1)&lt;/script&gt; (5 samples, 62.50%)</title>"));
	assert_non_null(strstr(buf, "<title>/system.slice/we&quot;ird \\name?.service (5 samples"));
	assert_non_null(strstr(buf, "<title>a&amp;b (5 samples"));
	assert_non_null(strstr(buf, "<title>caf\xc3\xa9 (5 samples"));
	assert_non_null(strstr(buf, "<title>\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd (5 samples"));
	assert_non_null(strstr(buf, "<title>???? (5 samples"));
	assert_non_null(strstr(buf, "<title>]]&gt; (5 samples"));
	assert_non_null(strstr(buf, "<title>&apos;q&apos; (5 samples"));
	assert_non_null(strstr(buf, "<title>\xe2\x82\xac\xf0\x9f\x94\xa5 (3 samples, 37.50%)"));
	assert_non_null(strstr(buf, ">cg &lt;&quot;/a&amp;b&apos;?\xef\xbf\xbd&quot;&gt;</text>"));
	assert_non_null(strstr(buf, ">sub \xe2\x82\xac ]]&gt;</text>"));
	/* colours by kind: kernel orange, unnamed grey */
	{
		const char *k = strstr(buf, "<title>k_[k] ");
		const char *u = strstr(buf, "<title>lib.so+0x1f ");
		unsigned r, g, b;

		assert_non_null(k);
		assert_non_null(u);
		assert_int_equal(sscanf(strstr(k, "fill=\"") + 6, "rgb(%u,%u,%u)", &r, &g, &b), 3);
		assert_true(r >= 215 && g >= 120 && g <= 180 && b <= 60);
		assert_int_equal(sscanf(strstr(u, "fill=\"") + 6, "rgb(%u,%u,%u)", &r, &g, &b), 3);
		assert_true(r == g && b == r + 10);
	}
	free(buf);
	fold_set_free(fs);
}

struct sframe {
	char name[64];
	uint64_t samples;
	double x, y, w;
};

/* The frames of an SVG: name from the title, samples, geometry. */
static size_t parse_svg(const char *svg, struct sframe *out, size_t max)
{
	size_t n = 0;

	for (const char *p = strstr(svg, "<g class=\"f\"><title>"); p;
	     p = strstr(p + 1, "<g class=\"f\"><title>")) {
		const char *t = p + strlen("<g class=\"f\"><title>"), *end = strstr(t, "</title>");
		const char *paren = end;

		assert_true(n < max);
		while (paren > t && strncmp(paren, " (", 2))
			paren--;
		assert_true((size_t)(paren - t) < sizeof(out[n].name));
		memcpy(out[n].name, t, (size_t)(paren - t));
		out[n].name[paren - t] = '\0';
		assert_int_equal(sscanf(paren, " (%" SCNu64 " samples", &out[n].samples), 1);
		assert_int_equal(sscanf(strstr(end, "x=\""), "x=\"%lf\" y=\"%lf\" width=\"%lf\"", &out[n].x,
					&out[n].y, &out[n].w),
				 3);
		n++;
	}
	return n;
}

static int cmp_frame(const void *a, const void *b)
{
	const struct sframe *x = a, *y = b;
	int r = (x->y > y->y) - (x->y < y->y);

	if (!r)
		r = strcmp(x->name, y->name);
	if (!r)
		r = (x->samples > y->samples) - (x->samples < y->samples);
	return r;
}

/*
 * Random stacks over a small alphabet: each frame's samples must equal the
 * brute-force sum over stacks having its path as a prefix, and each frame
 * must lie within one frame of the level below.
 */
static void test_svg_trie_random(void **state)
{
	enum { N = 400, MAXF = 4000 };
	static char stacks[N][64];
	static uint64_t counts[N];
	static struct sframe got[MAXF], want[MAXF];
	static const char *const names[] = { "a", "b", "c", "a!", "ab" };
	struct fold_set *fs = fold_set_new();
	size_t ngot, nwant = 0;
	char *svg;

	for (int i = 0; i < N; i++) {
		uint32_t depth = 1 + rnd(4);
		size_t off = 0;

		for (uint32_t d = 0; d < depth; d++)
			off += (size_t)snprintf(stacks[i] + off, sizeof(stacks[i]) - off, "%s%s", d ? ";" : "",
						names[rnd(5)]);
		counts[i] = 1 + rnd(9);
		assert_int_equal(fold_set_add(fs, stacks[i], counts[i], 0), 0);
	}
	svg = render_to_string(svg_default, fs);
	xmllint_ok(svg);
	ngot = parse_svg(svg, got, MAXF);

	/* Every distinct prefix of every stack once, with its samples. */
	for (int i = 0; i < N; i++) {
		for (size_t end = 0; end <= strlen(stacks[i]); end++) {
			if (stacks[i][end] != ';' && stacks[i][end] != '\0')
				continue;
			bool seen = false;
			for (int j = 0; j < i && !seen; j++)
				seen = !strncmp(stacks[j], stacks[i], end) &&
				       (stacks[j][end] == ';' || stacks[j][end] == '\0');
			if (seen)
				continue;
			uint64_t sum = 0;
			for (int j = 0; j < N; j++)
				if (!strncmp(stacks[j], stacks[i], end) &&
				    (stacks[j][end] == ';' || stacks[j][end] == '\0'))
					sum += counts[j];
			const char *leaf = stacks[i] + end;
			size_t depth = 0;
			while (leaf > stacks[i] && leaf[-1] != ';')
				leaf--;
			for (size_t k = 0; k < end; k++)
				depth += stacks[i][k] == ';';
			assert_true(nwant < MAXF);
			snprintf(want[nwant].name, sizeof(want[nwant].name), "%.*s", (int)(stacks[i] + end - leaf),
				 leaf);
			want[nwant].samples = sum;
			want[nwant].y = -(double)depth; /* sorted like the SVG: deeper first */
			nwant++;
		}
	}
	/* The SVG's "all" root, then frames; y decreases with depth. */
	assert_string_equal(got[0].name, "all");
	assert_int_equal(got[0].samples, fold_set_samples(fs));
	assert_int_equal(ngot - 1, nwant);
	for (size_t i = 1; i < ngot; i++) {
		double below = got[i].y + 16;
		bool inside = false;

		for (size_t j = 0; j < ngot && !inside; j++)
			inside = got[j].y == below && got[j].x <= got[i].x + 0.02 &&
				 got[j].x + got[j].w >= got[i].x + got[i].w - 0.02;
		if (!inside)
			fail_msg("frame %s at x=%.2f y=%.0f is over no frame", got[i].name, got[i].x, got[i].y);
	}
	for (size_t i = 1; i < ngot; i++)
		got[i].x = got[i].w = 0;
	qsort(got + 1, ngot - 1, sizeof(got[0]), cmp_frame);
	qsort(want, nwant, sizeof(want[0]), cmp_frame);
	for (size_t i = 0; i < nwant; i++) {
		if (strcmp(got[i + 1].name, want[i].name) || got[i + 1].samples != want[i].samples)
			fail_msg("frame %zu: %s %" PRIu64 ", want %s %" PRIu64, i, got[i + 1].name,
				 got[i + 1].samples, want[i].name, want[i].samples);
	}
	free(svg);
	fold_set_free(fs);
}

static void test_svg_layout(void **state)
{
	struct fold_set *fs = fold_set_new();
	struct sframe fr[16];
	char *svg;
	size_t n;

	assert_int_equal(fold_set_add(fs, "m;a;x", 300000, 0), 0);
	assert_int_equal(fold_set_add(fs, "m;b", 100000, 0), 0);
	/* 1 of 1e6 samples on a 1180 px axis: 0.00118 px, left out with its child */
	assert_int_equal(fold_set_add(fs, "tiny;tinier", 1, 0), 0);
	assert_int_equal(fold_set_add(fs, "big", 599999, 0), 0);
	svg = render_to_string(svg_default, fs);
	xmllint_ok(svg);
	n = parse_svg(svg, fr, 16);
	assert_int_equal(n, 6); /* all, m, a, x, b, big */
	assert_null(strstr(svg, "tiny"));
	assert_string_equal(fr[0].name, "all");
	assert_true(fr[0].x == 10 && fr[0].w == 1180);
	/* preorder, siblings by name: big, then m with a (with x) and b */
	assert_string_equal(fr[1].name, "big");
	assert_string_equal(fr[2].name, "m");
	assert_string_equal(fr[3].name, "a");
	assert_string_equal(fr[4].name, "x");
	assert_string_equal(fr[5].name, "b");
	assert_true(fr[2].x == fr[3].x && fr[3].x == fr[4].x);
	assert_true(fr[5].x > fr[3].x + fr[3].w - 0.02 && fr[5].x < fr[3].x + fr[3].w + 0.02);
	assert_true(fr[3].y == fr[5].y && fr[4].y == fr[3].y - 16 && fr[2].y == fr[0].y - 16);
	free(svg);

	/* the width option; nothing to draw is still a document */
	fold_set_free(fs);
	fs = fold_set_new();
	{
		struct flame_opts o = { .title = "empty", .width = 500 };
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_int_equal(render_svg(fs, &o, f), 0);
		fclose(f);
		xmllint_ok(buf);
		assert_non_null(strstr(buf, "width=\"500\""));
		assert_non_null(strstr(buf, "No samples"));
		assert_null(strstr(buf, "<g class=\"f\">"));
		free(buf);
	}
	fold_set_free(fs);
}

/* ---- allocation failures ------------------------------------------------ */

static int run_all(FILE *sink)
{
	struct fold_set *fs = fold_set_new();
	struct flame_opts fo = { .title = "t" };
	uint8_t *pb = NULL;
	size_t len;
	char name[32];
	int ret = -ENOMEM;

	if (!fs)
		return -ENOMEM;
	/* enough frames and stacks to make every table grow at least once */
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "r;m%d;f%d_[k];x.so+0x%x", i % 7, i, i);
		ret = fold_set_add(fs, name, 1, 1);
		if (ret < 0)
			goto out;
	}
	ret = render_folded(fs, sink);
	if (!ret)
		ret = render_pprof(fs, NULL, NULL, NULL, &pb, &len);
	if (!ret)
		ret = render_svg(fs, &fo, sink);
out:
	free(pb);
	fold_set_free(fs);
	return ret;
}

static void test_alloc_failures(void **state)
{
	FILE *sink;
	long i;

	if (!tl_alloc_available())
		skip(); /* ASan owns malloc; the plain build runs this */
	sink = fopen("/dev/null", "w");
	assert_non_null(sink);
	assert_int_equal(run_all(sink), 0); /* sink's buffer allocated once */
	for (i = 0; i < 100000; i++) {
		int ret;

		tl_alloc_fail_at(i);
		ret = run_all(sink);
		tl_alloc_reset();
		if (tl_alloc_live())
			fail_msg("allocation %ld failed: %ld allocations leaked", i, tl_alloc_live());
		if (!tl_alloc_failed()) {
			assert_int_equal(ret, 0);
			break;
		}
		/* 0: an allocation with a fallback (qsort's scratch) */
		if (ret != -ENOMEM && ret != 0)
			fail_msg("allocation %ld failed: %d, want -ENOMEM", i, ret);
	}
	print_message("     %ld allocations failed in turn\n", i);
	assert_true(i > 20);
	fclose(sink);
}

/* ---- scale -------------------------------------------------------------- */

/* CPU time of this process: what the code costs, whatever else runs on
 * the machine (wall time on a loaded 2-vCPU VM says little). */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_100k_stacks(void **state)
{
	struct fold_set *fs = fold_set_new();
	struct pprof_opts po = { .period_ns = 10000000 };
	struct flame_opts fo = { .title = "100k" };
	FILE *sink = fopen("/dev/null", "w");
	char buf[30 * 24];
	uint8_t *pb = NULL;
	size_t pblen;
	double t0, t1, t2, t3, t4;

	assert_non_null(sink);
	t0 = now();
	for (unsigned s = 0; s < 100000; s++) {
		size_t off = 0;

		for (unsigned d = 0; d < 30; d++) {
			unsigned v = d < 3 ? s % 4 : d < 29 ? rnd(3 + d * 2) : s;

			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%sfn_%u_%u", d ? ";" : "", d, v);
		}
		assert_int_equal(fold_set_add(fs, buf, 1 + s % 5, 0), 0);
	}
	t1 = now();
	assert_int_equal(fold_set_stacks(fs), 100000);
	assert_int_equal(render_folded(fs, sink), 0);
	t2 = now();
	assert_int_equal(render_pprof(fs, &po, NULL, NULL, &pb, &pblen), 0);
	t3 = now();
	assert_int_equal(render_svg(fs, &fo, sink), 0);
	t4 = now();
	print_message("     100k stacks x 30, CPU time: add %.3f s, folded %.3f s, pprof %.3f s (%zu bytes), "
		      "svg %.3f s\n",
		      t1 - t0, t2 - t1, t3 - t2, pblen, t4 - t3);
	free(pb);
	fclose(sink);
	fold_set_free(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_sum_sort),
		cmocka_unit_test(test_add_refused),
		cmocka_unit_test(test_folded_control_bytes),
		cmocka_unit_test(test_folded_order_random),
		cmocka_unit_test(test_pprof_decoded),
		cmocka_unit_test(test_pprof_module_keys),
		cmocka_unit_test(test_pprof_no_lookup_no_time),
		cmocka_unit_test(test_svg_hostile),
		cmocka_unit_test(test_svg_trie_random),
		cmocka_unit_test(test_svg_layout),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_100k_stacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
