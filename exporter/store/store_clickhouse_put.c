// SPDX-License-Identifier: MIT
/*
 * The ClickHouse store's writes: a group of batches becomes one INSERT per
 * table (TabSeparated rows built in memory, bounded by the batches
 * themselves, which the exporter caps), the interned stacks and modules
 * first and the batches rows last: a batches row says that every row of
 * its insert (its insert id, "ins") is stored. Batches the cluster already
 * has are skipped; what makes a second copy harmless is the read side's
 * dedupe (store_clickhouse.c).
 */
#include "exporter/store/store_clickhouse_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "lib/hist.h"
#include "wire/wire.h"

/* What a group of batches writes: one body per table, and the interned
 * keys it sends (remembered in s->known once stored). */
struct put_group {
	struct page body[CT_N];
	struct hashmap *sent;
	struct page folded; /* scratch */
	uint64_t stack_rows;
};

static const char *cg_path(const Cgperf__V1__Batch *m, uint32_t cg)
{
	return cg < m->n_cgroups ? wire_string(m, m->cgroups[cg]->path) : "";
}

static void tsv_u64(struct page *p, uint64_t v, char sep)
{
	page_u64(p, v);
	page_putc(p, sep);
}

/* @n numbers, tab-separated, then @sep. */
static void tsv_u64s(struct page *p, const uint64_t *v, size_t n, char sep)
{
	for (size_t i = 0; i < n; i++)
		tsv_u64(p, v[i], i + 1 < n ? '\t' : sep);
}

static void tsv_str(struct page *p, const char *v, char sep)
{
	ch_tsv(p, v ? v : "");
	page_putc(p, sep);
}

/* True when @key (a stack hash or module id) needs no row: known to be
 * stored, or sent in this group already. Else it is marked as sent. */
static bool seen(struct ch_store *s, struct put_group *g, uint64_t key)
{
	uint64_t *v;

	if (hashmap_find(s->known, &key, sizeof(key)) || hashmap_find(g->sent, &key, sizeof(key)))
		return true;
	v = hashmap_slot(g->sent, &key, sizeof(key));
	if (v)
		*v = 1;
	return false;
}

/* A module's id: a 31-bit hash of (path, build-id), as the renderers take
 * module ids of 32 bits (a collision names one of two binaries wrongly:
 * about 1 in 400 with a thousand distinct binaries in the cluster). */
static uint64_t module_key(const char *path, const char *build_id)
{
	uint64_t h = hash_fnv1a(hash_fnv1a_str(HASH_FNV_OFFSET, path), "", 1);

	h = hash_mix64(hash_fnv1a_str(h, build_id)) & 0x7fffffffu;
	return h ? h : 1;
}

/* The module id of module index @mi (1-based) of @m, its row sent once. */
static uint64_t put_module(struct ch_store *s, struct put_group *g, const Cgperf__V1__Batch *m,
			   uint32_t mi)
{
	const Cgperf__V1__Module *mod = m->modules[mi - 1];
	const char *path = wire_string(m, mod->path), *bid = mod->build_id ? mod->build_id : "";
	uint64_t id = module_key(path, bid);
	struct page *p = &g->body[CT_MODULES];

	if (!seen(s, g, id)) {
		tsv_u64(p, id, '\t');
		tsv_str(p, path, '\t');
		tsv_str(p, bid, '\n');
	}
	return id;
}

/* The hash of @st's folded text, its stacks row sent once. */
static uint64_t put_stack(struct ch_store *s, struct put_group *g, const Cgperf__V1__Batch *m,
			  const Cgperf__V1__Stack *st)
{
	struct page *p = &g->body[CT_STACKS], *f = &g->folded;
	bool mods = st->n_modules == st->n_frames, any = false;
	uint64_t h;

	f->len = 0;
	for (size_t i = 0; i < st->n_frames; i++) {
		if (i)
			page_putc(f, ';');
		page_put(f, wire_string(m, st->frames[i]));
	}
	/* The folded text alone names a stack: the same text with other
	 * modules keeps one of them, as in SQLite. */
	h = hash_fnv1a(HASH_FNV_OFFSET, f->buf ? f->buf : "", f->len);
	if (seen(s, g, h) || page_failed(f))
		return h;
	tsv_u64(p, h, '\t');
	ch_tsv(p, ch_text(f));
	page_putc(p, '\t');
	for (size_t i = 0; mods && i < st->n_frames; i++)
		any |= st->modules[i] && st->modules[i] <= m->n_modules;
	for (size_t i = 0; any && i < st->n_frames; i++) {
		uint32_t mi = st->modules[i];

		if (i)
			page_putc(p, ' ');
		page_u64(p, mi && mi <= m->n_modules ? put_module(s, g, m, mi) : 0);
	}
	page_putc(p, '\n');
	return h;
}

static void put_hist(struct page *p, const Cgperf__V1__Histogram *w, char sep)
{
	uint64_t words[STORE_HIST_WORDS];
	struct hist h;

	wire_hist(w, &h);
	store_hist_words(&h, words);
	page_putc(p, '[');
	for (size_t i = 0; h.count && i < STORE_HIST_WORDS; i++) {
		if (i)
			page_putc(p, ',');
		page_u64(p, words[i]);
	}
	page_putc(p, ']');
	page_putc(p, sep);
}

/* The row key of row @idx of @m's rows of a table: what duplicates of a
 * batch share and reads collapse (store_clickhouse.c). */
static uint64_t row_key(const Cgperf__V1__Batch *m, uint64_t idx)
{
	uint8_t b[16]; /* seq and idx little-endian: every exporter computes the same */

	for (int i = 0; i < 8; i++) {
		b[i] = (uint8_t)(m->seq >> (8 * i));
		b[8 + i] = (uint8_t)(idx >> (8 * i));
	}
	return hash_mix64(hash_fnv1a(hash_fnv1a_str(HASH_FNV_OFFSET, m->agent_id), b, sizeof(b)));
}

/* The first columns of a counters or probes row. */
static void put_head(struct page *p, const Cgperf__V1__Batch *m, size_t idx, uint32_t cgroup,
		     uint32_t name)
{
	tsv_str(p, m->agent_id, '\t');
	tsv_u64(p, m->seq, '\t');
	tsv_u64(p, row_key(m, idx), '\t');
	tsv_str(p, m->host, '\t');
	tsv_str(p, cg_path(m, cgroup), '\t');
	tsv_str(p, wire_string(m, name), '\t');
}

static void put_counters_probes(struct put_group *g, const Cgperf__V1__Batch *m, uint64_t now)
{
	struct page *p = &g->body[CT_COUNTERS];

	for (size_t i = 0; i < m->n_counters; i++) {
		const Cgperf__V1__Counter *c = m->counters[i];

		const uint64_t v[] = { c->value, c->time_enabled, c->time_running,
				       c->supported ? 1 : 0 };

		put_head(p, m, i, c->cgroup, c->event);
		tsv_u64s(p, v, sizeof(v) / sizeof(v[0]), '\t');
		page_printf(p, "%.17g\t", store_scaled(c->value, c->time_enabled, c->time_running));
		tsv_u64(p, now, '\n');
	}
	p = &g->body[CT_PROBES];
	for (size_t i = 0; i < m->n_probes; i++) {
		const Cgperf__V1__Probe *pr = m->probes[i];

		put_head(p, m, i, pr->cgroup, pr->label);
		tsv_u64(p, pr->hits, '\t');
		put_hist(p, pr->values, '\t');
		put_hist(p, pr->latency_ns, '\t');
		tsv_u64(p, now, '\n');
	}
}

/*
 * Each profile's truncated stacks (store_truncated), as counters rows
 * marked supported = 2: one per reason with a count, the event column
 * naming the reason, row keys after the batch's counters'. The counter
 * totals read supported = 1 rows only; load_truncated() reads these.
 */
static void put_truncated(struct put_group *g, const Cgperf__V1__Batch *m, uint64_t now)
{
	static const char *const reason[WIRE_TRUNC_REASONS] = { "stack_copy", "max_stack",
								"bad_return_address" };
	struct page *p = &g->body[CT_COUNTERS];

	for (size_t k = 0; k < m->n_profiles; k++) {
		const Cgperf__V1__Profile *pr = m->profiles[k];
		const uint64_t cut[WIRE_TRUNC_REASONS] = { pr->truncated_stack_copy,
							   pr->truncated_max_stack,
							   pr->truncated_bad_return_address };

		for (int r = 0; r < WIRE_TRUNC_REASONS; r++) {
			if (!cut[r])
				continue;
			tsv_str(p, m->agent_id, '\t');
			tsv_u64(p, m->seq, '\t');
			tsv_u64(p, row_key(m, m->n_counters + k * WIRE_TRUNC_REASONS + (size_t)r), '\t');
			tsv_str(p, m->host, '\t');
			tsv_str(p, cg_path(m, pr->cgroup), '\t');
			tsv_str(p, reason[r], '\t');
			tsv_u64s(p, (const uint64_t[]){ cut[r], 0, 0, 2 }, 4, '\t');
			page_printf(p, "%.17g\t", (double)cut[r]);
			tsv_u64(p, now, '\n');
		}
	}
}

static void put_cgroups(struct put_group *g, const Cgperf__V1__Batch *m, uint64_t now)
{
	struct page *p = &g->body[CT_CGROUPS];

	for (size_t i = 0; i < m->n_cgroups; i++) {
		const Cgperf__V1__Cgroup *c = m->cgroups[i];
		const uint32_t f[] = { c->container_id, c->runtime,	   c->pod_uid,
				       c->qos,		c->k8s_namespace,  c->pod_name,
				       c->container_name, c->unit,	   c->slice };

		tsv_str(p, m->host, '\t');
		tsv_str(p, wire_string(m, c->path), '\t');
		tsv_u64(p, c->id, '\t');
		for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++)
			tsv_str(p, wire_string(m, f[k]), '\t');
		tsv_u64(p, now, '\t');
		tsv_str(p, wire_string(m, c->image), '\n');
	}
}

/* Every row of @m into the group's bodies. */
static void put_batch(struct ch_store *s, struct put_group *g, const Cgperf__V1__Batch *m,
		      uint64_t now)
{
	static const Cgperf__V1__AgentStats none = CGPERF__V1__AGENT_STATS__INIT;
	const Cgperf__V1__AgentStats *a = m->self ? m->self : &none;
	/* A batch cannot have started after it arrived (see the SQLite store). */
	uint64_t start = m->start_ns < now ? m->start_ns : now, samples = 0;
	struct page *p = &g->body[CT_SAMPLES];
	uint64_t ins = hash_mix64(s->ins_seed + ++s->ins_count);

	put_cgroups(g, m, now);
	put_counters_probes(g, m, now);
	put_truncated(g, m, now);
	for (size_t k = 0; k < m->n_profiles; k++) {
		const Cgperf__V1__Profile *pr = m->profiles[k];

		for (size_t i = 0; i < pr->n_stacks; i++) {
			const Cgperf__V1__Stack *st = pr->stacks[i];
			const uint64_t v[] = { pr->frequency, pr->period, put_stack(s, g, m, st),
					       st->count };

			tsv_u64(p, start - start % CH_BUCKET_NS, '\t');
			tsv_str(p, m->host, '\t');
			tsv_str(p, cg_path(m, pr->cgroup), '\t');
			tsv_str(p, wire_string(m, pr->event), '\t');
			tsv_u64s(p, v, sizeof(v) / sizeof(v[0]), '\t');
			tsv_str(p, m->agent_id, '\t');
			tsv_u64(p, m->seq, '\t');
			tsv_u64(p, ins, '\n');
			samples = samples + st->count < samples ? UINT64_MAX : samples + st->count;
			g->stack_rows++;
		}
	}
	p = &g->body[CT_BATCHES];
	tsv_str(p, m->agent_id, '\t');
	tsv_u64(p, m->seq, '\t');
	tsv_str(p, m->host, '\t');
	tsv_str(p, m->agent_version, '\t');
	tsv_u64s(p, (const uint64_t[]){ m->start_ns, m->end_ns, now, samples, a->samples,
					a->lost_samples, a->unwind_failures, a->push_failures,
					a->push_rejected, a->spool_dropped_batches,
					a->stacks_refused, a->spool_bytes, a->spool_batches, ins },
		 14, '\n');
}

/*
 * Mark in @res (1) the batches of @m the cluster has already, or that
 * come earlier in the group. 0 or -errno (reason in @err).
 */
static int find_stored(struct ch_store *s, const Cgperf__V1__Batch *const *m, size_t n, int *res,
		       char *err, size_t errlen)
{
	struct page q, ans;
	char *cur, *f[2];
	int ret;

	page_init(&q, 0);
	page_init(&ans, 0);
	page_printf(&q, "SELECT agent_id, seq FROM %s.batches WHERE (agent_id, seq) IN (", s->db);
	for (size_t i = 0; i < n; i++) {
		res[i] = 0;
		for (size_t j = 0; j < i && !res[i]; j++)
			res[i] = m[j]->seq == m[i]->seq && !strcmp(m[j]->agent_id, m[i]->agent_id);
		page_put(&q, i ? ", (" : "(");
		ch_quote(&q, m[i]->agent_id);
		page_printf(&q, ", %" PRIu64 ")", m[i]->seq);
	}
	page_put(&q, ") GROUP BY agent_id, seq FORMAT TabSeparated");
	ret = ch_text(&q) ? ch_run(s, &s->w, q.buf, NULL, 0, &ans, err, errlen) : -ENOMEM;
	cur = ch_text(&ans);
	while (!ret && cur && ch_row(&cur, f, 2) == 2) {
		uint64_t seq = ch_u64(f[1]);

		for (size_t i = 0; i < n; i++)
			if (m[i]->seq == seq && !strcmp(m[i]->agent_id, f[0]))
				res[i] = 1;
	}
	page_release(&q);
	page_release(&ans);
	return ret;
}

static void remember(void *ctx, const void *key, size_t len, uint64_t value)
{
	uint64_t *v = hashmap_slot(ctx, key, len);

	(void)value;
	if (v)
		*v = 1;
}

/* The INSERTs of @g, the batches rows last: the others one after the
 * other on the writer, or at once over its extra connections (s->npar of
 * them at a time); the batches rows wait for all of them either way. */
static int insert_group(struct ch_store *s, struct put_group *g, char *err, size_t errlen)
{
	static const enum ch_table order[] = { CT_MODULES, CT_STACKS,	CT_CGROUPS, CT_SAMPLES,
					       CT_COUNTERS, CT_PROBES, CT_BATCHES };
	enum { norder = sizeof(order) / sizeof(order[0]) };
	char sql[norder][160];
	const char *q[CH_PARALLEL_MAX], *body[CH_PARALLEL_MAX];
	size_t len[CH_PARALLEL_MAX], n = 0;
	int ret = 0;

	for (size_t i = 0; !ret && i < norder; i++) {
		struct page *b = &g->body[order[i]];

		if (page_failed(b)) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		snprintf(sql[i], sizeof(sql[i]), "INSERT INTO %s.%s FORMAT TabSeparated", s->db,
			 ch_table_name[order[i]]);
		if (b->len && s->npar && order[i] != CT_BATCHES) {
			q[n] = sql[i];
			body[n] = b->buf;
			len[n++] = b->len;
		} else if (b->len) {
			ret = ch_run(s, &s->w, sql[i], b->buf, b->len, NULL, err, errlen);
		}
		if (!ret && n && (n == s->npar || order[i + 1] == CT_BATCHES)) {
			ret = ch_run_parallel(s, q, body, len, n, err, errlen);
			n = 0;
		}
	}
	return ret;
}

int ch_put_many(struct store *base, const Cgperf__V1__Batch *const *m, size_t n,
		uint64_t received_ns, int *res, char *err, size_t errlen)
{
	struct ch_store *s = chs(base);
	struct put_group g = { 0 };
	char reason[256] = "";
	int ret;

	for (int t = 0; t < CT_N; t++)
		page_init(&g.body[t], 0);
	page_init(&g.folded, 0);
	g.sent = hashmap_new();
	pthread_mutex_lock(&s->w.lock);
	ret = g.sent ? find_stored(s, m, n, res, reason, sizeof(reason)) : -ENOMEM;
	for (size_t i = 0; !ret && i < n; i++)
		if (!res[i])
			put_batch(s, &g, m[i], received_ns);
	if (!ret)
		ret = insert_group(s, &g, reason, sizeof(reason));
	if (!ret) {
		hashmap_foreach(g.sent, remember, s->known);
		store_count_rows(base, g.stack_rows);
	}
	pthread_mutex_unlock(&s->w.lock);
	if (ret == -ENOMEM && !*reason)
		snprintf(reason, sizeof(reason), "out of memory");
	for (size_t i = 0; ret && i < n; i++) {
		res[i] = ret;
		snprintf(err + i * errlen, errlen, "%s", reason);
	}
	for (int t = 0; t < CT_N; t++)
		page_release(&g.body[t]);
	page_release(&g.folded);
	hashmap_free(g.sent);
	return ret;
}
