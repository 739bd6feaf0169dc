// SPDX-License-Identifier: MIT
/*
 * The SQLite store's writes: one batch, or a group of them, in one
 * transaction on the writer connection (each batch in a savepoint, so a
 * batch that fails leaves the others in). Stacks and modules are interned,
 * the raw rows and the running totals written, the agent's row moved on.
 * The schema and the design note are in store_sqlite.c.
 */
#include "exporter/store/store_sqlite_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- put ---- */

/* Room for @need bytes in the scratch buffer *@buf of *@cap. 0 or -ENOMEM. */
static int scratch(char **buf, size_t *cap, size_t need)
{
	char *p;

	if (need <= *cap)
		return 0;
	p = realloc(*buf, need);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = need;
	return 0;
}

/* Fold @st's frames root first into s->folded ("a;b;c"). 0 or -ENOMEM. */
static int fold(struct sqlite_store *s, const Cgperf__V1__Batch *m, const Cgperf__V1__Stack *st)
{
	size_t need = 1, off = 0;

	for (size_t i = 0; i < st->n_frames; i++)
		need += strlen(wire_string(m, st->frames[i])) + 1;
	if (scratch(&s->folded, &s->folded_cap, need))
		return -ENOMEM;
	for (size_t i = 0; i < st->n_frames; i++) {
		const char *f = wire_string(m, st->frames[i]);
		size_t l = strlen(f);

		if (i)
			s->folded[off++] = ';';
		memcpy(s->folded + off, f, l);
		off += l;
	}
	s->folded[off] = '\0';
	return 0;
}

/* Per-batch memory: modules table ids by module index (0 = not yet), and
 * scratch for a stack's modules text. */
struct put_ctx {
	int64_t *module_id;
	char *mods; /* scratch: a stack's modules text */
	size_t mods_cap;
};

/* The modules table id of module index @mi of @m. >0, or -EIO. */
static int64_t module_id(struct sqlite_store *s, struct put_ctx *pc, const Cgperf__V1__Batch *m,
			 size_t mi)
{
	const Cgperf__V1__Module *mod = m->modules[mi];
	/* wire_decode() checked the build-id (lowercase hex, bounded). */
	const char *bid = mod->build_id ? mod->build_id : "";
	sqlite3_stmt *q;

	if (pc->module_id[mi])
		return pc->module_id[mi];
	q = stmt(s, ST_MODULE_INTERN);
	bind_text(q, 1, wire_string(m, mod->path));
	bind_text(q, 2, bid);
	if (run(q))
		return -EIO;
	q = stmt(s, ST_MODULE_ID);
	bind_text(q, 1, wire_string(m, mod->path));
	bind_text(q, 2, bid);
	if (one_row(q, &pc->module_id[mi]) != 1)
		return -EIO;
	return pc->module_id[mi];
}

/*
 * The modules of @st's frames as stored with the stack: the modules table
 * ids, space-separated, 0 for a frame without one; "" when the agent sent
 * none (old agents) or none is known. Into pc->mods. 0 or -errno.
 */
static int stack_modules(struct sqlite_store *s, struct put_ctx *pc, const Cgperf__V1__Batch *m,
			 const Cgperf__V1__Stack *st)
{
	size_t need = st->n_frames * 21 + 1, off = 0;
	bool any = false;

	if (scratch(&pc->mods, &pc->mods_cap, need))
		return -ENOMEM;
	pc->mods[0] = '\0';
	if (st->n_modules != st->n_frames)
		return 0;
	for (size_t i = 0; i < st->n_frames; i++) {
		uint32_t mi = st->modules[i];
		int64_t id = 0;

		if (mi && mi <= m->n_modules) {
			id = module_id(s, pc, m, mi - 1);
			if (id < 0)
				return (int)id;
			any = true;
		}
		off += (size_t)snprintf(pc->mods + off, pc->mods_cap - off, "%s%lld", i ? " " : "",
					(long long)id);
	}
	if (!any)
		pc->mods[0] = '\0';
	return 0;
}

static int put_stack(struct sqlite_store *s, struct put_ctx *pc, const Cgperf__V1__Batch *m,
		     uint64_t now, const Cgperf__V1__Profile *pr, const char *path,
		     const Cgperf__V1__Stack *st)
{
	/* A batch cannot have started after it arrived: an agent's clock
	 * ahead (by mistake or on purpose) would put its stacks where
	 * retention never reaches them. */
	uint64_t start = m->start_ns < now ? m->start_ns : now;
	sqlite3_stmt *q;
	int64_t id;
	int ret = fold(s, m, st);

	if (!ret)
		ret = stack_modules(s, pc, m, st);
	if (ret)
		return ret;
	q = stmt(s, ST_STACK_INTERN);
	bind_text(q, 1, s->folded);
	bind_text(q, 2, pc->mods);
	if (run(q))
		return -EIO;
	q = stmt(s, ST_STACK_ID);
	bind_text(q, 1, s->folded);
	if (one_row(q, &id) != 1)
		return -EIO;
	q = stmt(s, ST_STACK_SAMPLE);
	bind_u64(q, 1, start - start % BUCKET_NS);
	bind_text(q, 2, m->host);
	bind_text(q, 3, path);
	bind_text(q, 4, wire_string(m, pr->event));
	bind_u64(q, 5, pr->frequency);
	bind_u64(q, 6, pr->period);
	sqlite3_bind_int64(q, 7, id);
	bind_u64(q, 8, st->count);
	if (run(q))
		return -EIO;
	store_count_rows(&s->base, 1);
	return 0;
}

static const char *cg_path(const Cgperf__V1__Batch *m, uint32_t cg)
{
	return cg < m->n_cgroups ? wire_string(m, m->cgroups[cg]->path) : "";
}

static int put_cgroups(struct sqlite_store *s, const Cgperf__V1__Batch *m, uint64_t now)
{
	for (size_t i = 0; i < m->n_cgroups; i++) {
		const Cgperf__V1__Cgroup *c = m->cgroups[i];
		const uint32_t f[] = { c->container_id, c->runtime,	   c->pod_uid,
				       c->qos,		c->k8s_namespace,  c->pod_name,
				       c->container_name, c->unit,	   c->slice };
		sqlite3_stmt *q = stmt(s, ST_CGROUP);

		bind_text(q, 1, m->host);
		bind_text(q, 2, wire_string(m, c->path));
		bind_u64(q, 3, c->id);
		for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++)
			bind_text(q, 4 + (int)k, wire_string(m, f[k]));
		bind_u64(q, 13, now);
		bind_text(q, 14, wire_string(m, c->image));
		if (run(q))
			return -EIO;
	}
	return 0;
}

static int put_counters(struct sqlite_store *s, const Cgperf__V1__Batch *m, uint64_t now)
{
	for (size_t i = 0; i < m->n_counters; i++) {
		const Cgperf__V1__Counter *c = m->counters[i];
		const Cgperf__V1__Cgroup *g = c->cgroup < m->n_cgroups ? m->cgroups[c->cgroup] : NULL;
		sqlite3_stmt *q = stmt(s, ST_COUNTER);

		bind_text(q, 1, m->host);
		bind_text(q, 2, m->agent_id);
		bind_u64(q, 3, m->seq);
		bind_text(q, 4, cg_path(m, c->cgroup));
		bind_text(q, 5, g ? wire_string(m, g->container_id) : "");
		bind_text(q, 6, g ? wire_string(m, g->pod_uid) : "");
		bind_text(q, 7, g ? wire_string(m, g->unit) : "");
		bind_text(q, 8, wire_string(m, c->event));
		bind_u64(q, 9, c->value);
		bind_u64(q, 10, c->time_enabled);
		bind_u64(q, 11, c->time_running);
		sqlite3_bind_int(q, 12, c->supported ? 1 : 0);
		if (run(q))
			return -EIO;
		if (!c->supported)
			continue;
		q = stmt(s, ST_COUNTER_TOTAL);
		bind_text(q, 1, m->host);
		bind_text(q, 2, cg_path(m, c->cgroup));
		bind_text(q, 3, wire_string(m, c->event));
		sqlite3_bind_double(q, 4, store_scaled(c->value, c->time_enabled, c->time_running));
		bind_u64(q, 5, now);
		if (run(q))
			return -EIO;
	}
	return 0;
}

static int put_probes(struct sqlite_store *s, const Cgperf__V1__Batch *m, uint64_t now)
{
	uint8_t vb[HIST_WORDS * 8], lb[HIST_WORDS * 8];

	for (size_t i = 0; i < m->n_probes; i++) {
		const Cgperf__V1__Probe *p = m->probes[i];
		const char *path = cg_path(m, p->cgroup), *label = wire_string(m, p->label);
		struct hist v, l, tv, tl;
		uint64_t hits = 0;
		sqlite3_stmt *q = stmt(s, ST_PROBE);
		int rc;

		wire_hist(p->values, &v);
		wire_hist(p->latency_ns, &l);
		bind_text(q, 1, m->agent_id);
		bind_u64(q, 2, m->seq);
		bind_text(q, 3, m->host);
		bind_text(q, 4, path);
		bind_text(q, 5, label);
		bind_u64(q, 6, p->hits);
		sq_bind_hist(q, 7, &v, vb);
		sq_bind_hist(q, 8, &l, lb);
		if (run(q))
			return -EIO;
		q = stmt(s, ST_PROBE_GET);
		bind_text(q, 1, m->host);
		bind_text(q, 2, path);
		bind_text(q, 3, label);
		memset(&tv, 0, sizeof(tv));
		memset(&tl, 0, sizeof(tl));
		rc = sqlite3_step(q);
		if (rc == SQLITE_ROW) {
			hits = col_u64(q, 0);
			sq_hist_unpack(sqlite3_column_blob(q, 1), sqlite3_column_bytes(q, 1), &tv);
			sq_hist_unpack(sqlite3_column_blob(q, 2), sqlite3_column_bytes(q, 2), &tl);
		}
		sqlite3_reset(q);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return -EIO;
		hist_merge(&tv, &v);
		hist_merge(&tl, &l);
		hits = sat_add63(hits, p->hits);
		q = stmt(s, ST_PROBE_TOTAL);
		bind_text(q, 1, m->host);
		bind_text(q, 2, path);
		bind_text(q, 3, label);
		bind_u64(q, 4, hits);
		sq_bind_hist(q, 5, &tv, vb);
		sq_bind_hist(q, 6, &tl, lb);
		bind_u64(q, 7, now);
		if (run(q))
			return -EIO;
	}
	return 0;
}

/* Profile @pr's truncated stacks added to its cgroup's totals; 0 when none. */
static int put_truncated(struct sqlite_store *s, const Cgperf__V1__Batch *m, uint64_t now,
			 const Cgperf__V1__Profile *pr)
{
	sqlite3_stmt *q;

	if (!pr->truncated_stack_copy && !pr->truncated_max_stack &&
	    !pr->truncated_bad_return_address)
		return 0;
	q = stmt(s, ST_TRUNCATED);
	bind_text(q, 1, m->host);
	bind_text(q, 2, cg_path(m, pr->cgroup));
	bind_u64(q, 3, pr->truncated_stack_copy);
	bind_u64(q, 4, pr->truncated_max_stack);
	bind_u64(q, 5, pr->truncated_bad_return_address);
	bind_u64(q, 6, now);
	return run(q) ? -EIO : 0;
}

static int put_agent(struct sqlite_store *s, const Cgperf__V1__Batch *m, uint64_t now,
		     uint64_t stack_samples)
{
	const Cgperf__V1__AgentStats *a = m->self; /* present: checked by wire_decode */
	static const Cgperf__V1__AgentStats none = CGPERF__V1__AGENT_STATS__INIT;
	sqlite3_stmt *q = stmt(s, ST_AGENT);

	if (!a)
		a = &none;
	bind_text(q, 1, m->agent_id);
	bind_text(q, 2, m->host);
	bind_text(q, 3, m->agent_version);
	bind_u64(q, 4, now);
	bind_u64(q, 5, stack_samples);
	bind_u64(q, 6, a->samples);
	bind_u64(q, 7, a->lost_samples);
	bind_u64(q, 8, a->unwind_failures);
	bind_u64(q, 9, a->push_failures);
	bind_u64(q, 10, a->push_rejected);
	bind_u64(q, 11, a->spool_dropped_batches);
	bind_u64(q, 12, a->stacks_refused);
	bind_u64(q, 13, a->spool_bytes);
	bind_u64(q, 14, a->spool_batches);
	return run(q);
}

/* Everything of @m but the batches row, inside the open transaction. */
static int put_rows(struct sqlite_store *s, const Cgperf__V1__Batch *m, uint64_t now)
{
	struct put_ctx pc = { 0 };
	uint64_t samples = 0;
	int ret;

	pc.module_id = calloc(m->n_modules ? m->n_modules : 1, sizeof(*pc.module_id));
	if (!pc.module_id) {
		ret = -ENOMEM;
		goto out;
	}
	ret = put_cgroups(s, m, now);
	if (!ret)
		ret = put_counters(s, m, now);
	for (size_t p = 0; !ret && p < m->n_profiles; p++) {
		const Cgperf__V1__Profile *pr = m->profiles[p];
		const char *path = cg_path(m, pr->cgroup);

		ret = put_truncated(s, m, now, pr);
		for (size_t i = 0; !ret && i < pr->n_stacks; i++) {
			ret = put_stack(s, &pc, m, now, pr, path, pr->stacks[i]);
			samples = sat_add63(samples, pr->stacks[i]->count);
		}
	}
	if (!ret)
		ret = put_probes(s, m, now);
	if (!ret)
		ret = put_agent(s, m, now, samples);
out:
	free(pc.mods);
	free(pc.module_id);
	return ret;
}

/* 1 when @m's seq is at most the highest one retention deleted. */
static int retired(struct sqlite_store *s, const Cgperf__V1__Batch *m)
{
	sqlite3_stmt *q = stmt(s, ST_RETIRED);
	int64_t seq;
	int rc;

	bind_text(q, 1, m->agent_id);
	rc = one_row(q, &seq);
	if (rc == 1)
		return seq >= (int64_t)m->seq && m->seq <= (uint64_t)INT64_MAX;
	return rc;
}

/* The rows of @m inside the open transaction: 0, 1 when it was stored
 * before (nothing written), or -errno (the caller rolls back). */
static int put_one(struct sqlite_store *s, const Cgperf__V1__Batch *m, uint64_t received_ns)
{
	sqlite3_stmt *q;
	int ret;

	ret = retired(s, m);
	if (ret)
		return ret;
	q = stmt(s, ST_BATCH);
	bind_text(q, 1, m->agent_id);
	bind_u64(q, 2, m->seq);
	bind_text(q, 3, m->host);
	bind_u64(q, 4, m->start_ns);
	bind_u64(q, 5, m->end_ns);
	bind_u64(q, 6, received_ns);
	if (run(q))
		return -EIO;
	if (sqlite3_changes(s->db) == 0)
		return 1;
	return put_rows(s, m, received_ns);
}

/*
 * Group commit: one transaction, one fsync, for @n batches, each inside its
 * own savepoint so that one that fails (or is a duplicate) leaves nothing
 * and the others are still stored. A batch alone needs no savepoint: the
 * transaction is one (a savepoint makes SQLite track which pages each
 * write touches since it opened: ~2% of the exporter's CPU per batch).
 */
int sq_put_many(struct store *base, const Cgperf__V1__Batch *const *m, size_t n,
		       uint64_t received_ns, int *res, char *err, size_t errlen)
{
	struct sqlite_store *s = ss(base);
	char reason[256] = ""; /* of a failure of the whole transaction */
	bool sp = n > 1;
	int ret = 0;

	pthread_mutex_lock(&s->wlock);
	if (run(stmt(s, ST_BEGIN))) {
		snprintf(reason, sizeof(reason), "begin: %s", sqlite3_errmsg(s->db));
		ret = -EIO;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char *why = err + i * errlen;

		if (sp && run(stmt(s, ST_SAVEPOINT))) {
			res[i] = -EIO;
			snprintf(why, errlen, "savepoint: %s", sqlite3_errmsg(s->db));
			continue;
		}
		res[i] = put_one(s, m[i], received_ns);
		/* The reason before the rollback's own status replaces it. */
		if (res[i] < 0)
			snprintf(why, errlen, "%s",
				 res[i] == -ENOMEM ? "out of memory" : sqlite3_errmsg(s->db));
		if (!sp)
			break;
		if (res[i] && run(stmt(s, ST_ROLLBACK_TO)))
			ret = -EIO; /* the transaction cannot be trusted */
		if (!ret && run(stmt(s, ST_RELEASE)))
			ret = -EIO;
		if (ret) {
			snprintf(reason, sizeof(reason), "savepoint: %s", sqlite3_errmsg(s->db));
			break;
		}
	}
	if (!sp && res[0] < 0) {
		/* the one batch failed: none of it stays, its own reason stands */
		run(stmt(s, ST_ROLLBACK));
		goto unlock;
	}
	if (!ret && run(stmt(s, ST_COMMIT))) {
		snprintf(reason, sizeof(reason), "commit: %s", sqlite3_errmsg(s->db));
		ret = -EIO;
	}
	if (ret)
		run(stmt(s, ST_ROLLBACK));
out:
	if (ret)
		for (size_t i = 0; i < n; i++) {
			res[i] = ret;
			snprintf(err + i * errlen, errlen, "%s", reason);
		}
unlock:
	pthread_mutex_unlock(&s->wlock);
	return ret;
}
