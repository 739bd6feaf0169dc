// SPDX-License-Identifier: MIT
/*
 * exporter/render: pprof decoded back by a small protobuf reader (string
 * table, sample and period types, functions, locations per (function,
 * mapping), mappings with build-ids, samples leaf first), with and without
 * a module lookup.
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

#include "exporter/render/render.h"
#include "tests/unit/testlib.h"
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

/* A message of varint fields: field @fields[k] into *@dst[k], others skipped. */
static void rd_scalars(struct rd *r, size_t n, const unsigned fields[], uint64_t *const dst[])
{
	struct rd sub;
	unsigned f, wt;
	uint64_t v;

	while (rd_field(r, &f, &v, &sub, &wt))
		for (size_t k = 0; k < n; k++)
			if (f == fields[k])
				*dst[k] = v;
}

static void decode_profile(const uint8_t *gz, size_t gzlen, struct dprof *d)
{
	z_stream z = { 0 };
	size_t cap = 1 << 20;
	uint8_t *raw = malloc(cap);
	struct rd r, sub, s2;
	unsigned f, wt, f2, wt2;
	uint64_t v, v2;

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

				rd_scalars(&sub, 2, (const unsigned[]){ 1, 2 }, (uint64_t *const[]){ &t, &u });
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
			rd_scalars(&sub, 4, (const unsigned[]){ 1, 5, 6, 7 },
				   (uint64_t *const[]){ &d->map[d->nmap].id, &d->map[d->nmap].file,
							&d->map[d->nmap].build, &d->map[d->nmap].hasfn });
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
					rd_scalars(&s2, 1, (const unsigned[]){ 1 },
						   (uint64_t *const[]){ &d->loc[d->nloc].fnid });
				}
			}
			d->nloc++;
			break;
		case 5: /* function */
			assert_true(d->nfn < DMAX);
			rd_scalars(&sub, 3, (const unsigned[]){ 1, 2, 3 },
				   (uint64_t *const[]){ &d->fn[d->nfn].id, &d->fn[d->nfn].name,
							&d->fn[d->nfn].sysname });
			d->nfn++;
			break;
		case 6: /* string_table */
			assert_int_equal(wt, 2);
			assert_true(d->nstr < DMAX * 4);
			d->str[d->nstr] = strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
			d->nstr++;
			break;
		default: { /* the Profile's own varint fields */
			static const unsigned top[] = { 9, 10, 12, 14 };
			uint64_t *const dst[] = { &d->time, &d->duration, &d->period, &d->default_st };
			size_t k = 0;

			while (k < 4 && top[k] != f)
				k++;
			if (k == 4)
				fail_msg("unexpected Profile field %u", f);
			*dst[k] = v;
		}
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

/* The name of the function of location @id, and the location's mapping
 * in *@mapping (0: none) when not NULL. */
static const char *loc_frame(const struct dprof *d, uint64_t id, uint64_t *mapping)
{
	size_t l = 0, f = 0;

	while (l < d->nloc && d->loc[l].id != id)
		l++;
	if (l == d->nloc)
		fail_msg("no location %" PRIu64, id);
	while (f < d->nfn && d->fn[f].id != d->loc[l].fnid)
		f++;
	if (f == d->nfn)
		fail_msg("no function %" PRIu64, d->loc[l].fnid);
	if (mapping)
		*mapping = d->loc[l].mapping;
	return dstr(d, d->fn[f].name);
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
		uint64_t m;
		const char *name = loc_frame(d, d->loc[i].id, &m);
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
			const char *name = loc_frame(d, s->loc[k], NULL);

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
		uint64_t m;
		const char *leaf = loc_frame(d, s->loc[0], &m);

		if (!strcmp(leaf, "schedule") && s->nloc == 4) {
			assert_true(m > 0);
			assert_string_equal(dstr(d, d->map[m - 1].file), "[kernel.kallsyms]");
		} else if (!strcmp(leaf, "schedule")) {
			assert_int_equal(m, 0);
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

TL_MAIN(test_pprof_decoded, test_pprof_module_keys, test_pprof_no_lookup_no_time)
