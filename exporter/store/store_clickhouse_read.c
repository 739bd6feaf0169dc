// SPDX-License-Identifier: MIT
/*
 * The ClickHouse store's reads: the totals (what /metrics, targets and the
 * index show; loaded at start and, the store being shared, whenever the
 * exporter's copy is stale) and the stacks and module queries. The totals
 * collapse rows by their row key first (any() per row: a hash of
 * agent_id, seq and the index in the batch), then sum; the stacks sum the
 * rows of one insert per batch: a batch stored twice counts once
 * (store_clickhouse.c).
 * Answers are read whole into a page capped at CH_ANSWER_MAX and parsed in
 * place.
 */
#include "exporter/store/store_clickhouse_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hist.h"

/* Run @sql (FORMAT TabSeparated) on the reader and call @row for each row
 * with its @nf fields, then @end (may be NULL) while they still live; a
 * non-zero return stops and is returned. */
static int query(struct ch_store *s, const char *sql, size_t nf,
		 int (*row)(void *arg, char **f), int (*end)(void *arg), void *arg)
{
	char err[256], *cur, *f[20];
	struct page ans;
	int ret;

	if (nf > sizeof(f) / sizeof(f[0]))
		return -EINVAL;
	page_init(&ans, CH_ANSWER_MAX);
	pthread_mutex_lock(&s->r.lock);
	ret = ch_run(s, &s->r, sql, NULL, 0, &ans, err, sizeof(err));
	pthread_mutex_unlock(&s->r.lock);
	cur = ch_text(&ans);
	if (!ret && !cur)
		ret = -ENOMEM;
	while (!ret && ch_row(&cur, f, nf))
		ret = row(arg, f);
	if (!ret && end)
		ret = end(arg);
	page_release(&ans);
	return ret;
}

/* @fmt with the database name for its %s: a statement, malloc'd. */
static char *with_db(struct ch_store *s, const char *fmt)
{
	struct page p;
	const char *at = fmt, *pct;

	page_init(&p, 0);
	if ((pct = strstr(at, "%s"))) {
		page_putn(&p, at, (size_t)(pct - at));
		page_put(&p, s->db);
		at = pct + 2;
	}
	page_put(&p, at);
	if (!ch_text(&p)) {
		page_release(&p);
		return NULL;
	}
	return page_take(&p, NULL);
}

/* ---- load ---- */

static int row_cgroup(void *arg, char **f)
{
	const struct store_visitor *v = arg;
	struct store_cgroup c = {
		.host = f[0], .path = f[1], .cgroup_id = ch_u64(f[2]),
		.container_id = f[3], .runtime = f[4], .pod_uid = f[5], .qos = f[6],
		.k8s_namespace = f[7], .pod_name = f[8], .container_name = f[9],
		.unit = f[10], .slice = f[11], .last_seen_ns = ch_u64(f[12]), .image = f[13],
	};

	return v->cgroup(v->arg, &c);
}

static int row_counter(void *arg, char **f)
{
	const struct store_visitor *v = arg;
	struct store_counter_total t = {
		.host = f[0], .path = f[1], .event = f[2], .total = strtod(f[3], NULL),
		.last_seen_ns = ch_u64(f[4]),
	};

	return v->counter(v->arg, &t);
}

/* Probe rows come one per batch, sorted by series: merged here. */
struct probe_acc {
	const struct store_visitor *v;
	struct store_probe_total t;
	bool have;
};

static void unpack_hist(const char *s, struct hist *h)
{
	uint64_t w[STORE_HIST_WORDS];

	memset(h, 0, sizeof(*h));
	if (ch_words(s, w, STORE_HIST_WORDS) == STORE_HIST_WORDS)
		store_hist_from_words(w, h);
}

static int probe_flush(void *arg)
{
	struct probe_acc *a = arg;
	int ret = a->have ? a->v->probe(a->v->arg, &a->t) : 0;

	a->have = false;
	return ret;
}

static int row_probe(void *arg, char **f)
{
	struct probe_acc *a = arg;
	struct hist v, l;
	uint64_t hits = ch_u64(f[3]), seen = ch_u64(f[6]);
	int ret = 0;

	if (a->have && (strcmp(a->t.host, f[0]) || strcmp(a->t.path, f[1]) ||
			strcmp(a->t.label, f[2])))
		ret = probe_flush(a);
	if (ret)
		return ret;
	unpack_hist(f[4], &v);
	unpack_hist(f[5], &l);
	if (!a->have) {
		memset(&a->t, 0, sizeof(a->t));
		a->t.host = f[0];
		a->t.path = f[1];
		a->t.label = f[2];
		a->have = true;
	}
	a->t.hits = a->t.hits + hits < hits ? UINT64_MAX : a->t.hits + hits;
	hist_merge(&a->t.values, &v);
	hist_merge(&a->t.latency_ns, &l);
	if (seen > a->t.last_seen_ns)
		a->t.last_seen_ns = seen;
	return 0;
}

static int row_agent(void *arg, char **f)
{
	const struct store_visitor *v = arg;
	struct store_agent a = {
		.agent_id = f[0], .host = f[1], .version = f[2],
		.first_seen_ns = ch_u64(f[3]), .last_push_ns = ch_u64(f[4]),
		.batches = ch_u64(f[5]), .stack_samples = ch_u64(f[6]),
		.self = {
			.samples = ch_u64(f[7]),
			.lost_samples = ch_u64(f[8]),
			.unwind_failures = ch_u64(f[9]),
			.push_failures = ch_u64(f[10]),
			.push_rejected = ch_u64(f[11]),
			.spool_dropped_batches = ch_u64(f[12]),
			.stacks_refused = ch_u64(f[13]),
			.spool_bytes = ch_u64(f[14]),
			.spool_batches = ch_u64(f[15]),
		},
	};

	return v->agent(v->arg, &a);
}

/* Cgroups seen since the retention cutoff (SQLite deletes the others). */
static int load_cgroups(struct ch_store *s, const struct store_visitor *v)
{
	uint64_t since = 0;
	struct page q;
	int ret = ch_retained(s, &since);
	char *h = ret ? NULL
		      : with_db(s, "SELECT host, path, argMaxIf(cgroup_id, last_seen_ns, cgroup_id != 0), "
				CH_LAST_SET("container_id") ", " CH_LAST_SET("runtime") ", "
				CH_LAST_SET("pod_uid") ", " CH_LAST_SET("qos") ", "
				CH_LAST_SET("k8s_namespace") ", " CH_LAST_SET("pod_name") ", "
				CH_LAST_SET("container_name") ", " CH_LAST_SET("unit") ", "
				CH_LAST_SET("slice") ", max(last_seen_ns), " CH_LAST_SET("image")
				" FROM %s.cgroups GROUP BY host, path");

	if (ret)
		return ret;
	page_init(&q, 0);
	if (h)
		page_put(&q, h);
	page_printf(&q, " HAVING max(last_seen_ns) >= %" PRIu64 " FORMAT TabSeparated", since);
	ret = h && ch_text(&q) ? query(s, q.buf, 14, row_cgroup, NULL, (void *)v) : -ENOMEM;
	free(h);
	page_release(&q);
	return ret;
}

/* The totals' queries, by expiry kind (store_clickhouse_expire.c: 0
 * counters, 1 probes, 2 agents): the rows collapsed by their row key (or
 * batch key), the expiry join on @cols, then @tail. */
struct totals_q {
	const char *head, *cols, *tail;
	size_t nf;
};

static const struct totals_q totals_sql[] = {
	{ "SELECT h, p, e, sum(x), max(r) FROM (SELECT any(host) AS h, any(path) AS p,"
	  " any(event) AS e, any(scaled) AS x, max(received_ns) AS r FROM %s.counters"
	  " WHERE supported = 1 GROUP BY row)",
	  "h, p, e", " GROUP BY h, p, e FORMAT TabSeparated", 5 },
	{ "SELECT h, p, l, x, vs, la, r FROM (SELECT any(host) AS h, any(path) AS p,"
	  " any(label) AS l, any(hits) AS x, any(vals) AS vs, any(latency) AS la,"
	  " max(received_ns) AS r FROM %s.probes GROUP BY row)",
	  "h, p, l", " ORDER BY h, p, l FORMAT TabSeparated", 7 },
	{ "SELECT agent_id, argMax(h, r), argMax(ver, r), min(r), max(r), count(),"
	  " sum(ss), sum(sa), sum(lo), sum(uf), sum(pf), sum(pr), sum(sd), sum(sr),"
	  " argMax(sb, r), argMax(sn, r) FROM (SELECT agent_id, any(host) AS h,"
	  " any(version) AS ver, min(received_ns) AS r, any(stack_samples) AS ss,"
	  " any(samples) AS sa, any(lost_samples) AS lo, any(unwind_failures) AS uf,"
	  " any(push_failures) AS pf, any(push_rejected) AS pr,"
	  " any(spool_dropped_batches) AS sd, any(stacks_refused) AS sr,"
	  " any(spool_bytes) AS sb, any(spool_batches) AS sn FROM %s.batches"
	  " GROUP BY agent_id, seq)",
	  "agent_id", " GROUP BY agent_id FORMAT TabSeparated", 16 },
};

/* Run totals query @t, joined with the expiry of kind @kind, as query() does. */
static int run_totals_q(struct ch_store *s, const struct totals_q *t, int kind,
			int (*row)(void *, char **), int (*end)(void *), void *arg)
{
	char *h = with_db(s, t->head);
	struct page q;
	int ret;

	page_init(&q, 0);
	if (h)
		page_put(&q, h);
	ch_expiry_join(s, &q, kind, t->cols, "r");
	page_put(&q, t->tail);
	ret = h && ch_text(&q) ? query(s, q.buf, t->nf, row, end, arg) : -ENOMEM;
	free(h);
	page_release(&q);
	return ret;
}

/* Run the totals query of expiry kind @kind. */
static int run_totals(struct ch_store *s, int kind, int (*row)(void *, char **),
		      int (*end)(void *), void *arg)
{
	return run_totals_q(s, &totals_sql[kind], kind, row, end, arg);
}

static int row_truncated(void *arg, char **f)
{
	const struct store_visitor *v = arg;
	struct store_truncated t = {
		.host = f[0], .path = f[1],
		.count = { ch_u64(f[2]), ch_u64(f[3]), ch_u64(f[4]) },
		.last_seen_ns = ch_u64(f[5]),
	};

	return v->truncated(v->arg, &t);
}

/* The truncated stacks per cgroup and reason: the counters rows of
 * put_truncated() (supported = 2), deduped by row key, past their
 * series' expiry (kind 0, as counters: the reason in the event column),
 * then summed per cgroup. */
static int load_truncated(struct ch_store *s, const struct store_visitor *v)
{
	static const struct totals_q q = {
		"SELECT h, p, sumIf(x, e = 'stack_copy'), sumIf(x, e = 'max_stack'),"
		" sumIf(x, e = 'bad_return_address'), max(r) FROM (SELECT h, p, e, x, r FROM"
		" (SELECT any(host) AS h, any(path) AS p, any(event) AS e, any(value) AS x,"
		" max(received_ns) AS r FROM %s.counters WHERE supported = 2 GROUP BY row)",
		"h, p, e", ") GROUP BY h, p FORMAT TabSeparated", 6 };

	return run_totals_q(s, &q, 0, row_truncated, NULL, (void *)v);
}

int ch_load(struct store *base, const struct store_visitor *v)
{
	struct ch_store *s = chs(base);
	struct probe_acc pa = { .v = v };
	int ret = 0;

	if (v->cgroup)
		ret = load_cgroups(s, v);
	if (!ret && v->counter)
		ret = run_totals(s, 0, row_counter, NULL, (void *)v);
	if (!ret && v->probe)
		ret = run_totals(s, 1, row_probe, probe_flush, &pa);
	if (!ret && v->agent)
		ret = run_totals(s, 2, row_agent, NULL, (void *)v);
	if (!ret && v->truncated)
		ret = load_truncated(s, v);
	return ret;
}

/* ---- queries ---- */

struct stacks_ctx {
	int (*fn)(void *arg, const struct store_stack *st);
	void *arg;
};

static int row_stack(void *arg, char **f)
{
	struct stacks_ctx *x = arg;
	struct store_stack st = {
		.folded = f[0], .event = f[1], .frequency = ch_u64(f[2]), .period = ch_u64(f[3]),
		.count = ch_u64(f[4]), .modules = f[5],
	};

	return x->fn(x->arg, &st);
}

/* " AND col = 'v'" when @v is set. */
static void where_eq(struct page *q, const char *col, const char *v)
{
	if (!v || !*v)
		return;
	page_printf(q, " AND %s = ", col);
	ch_quote(q, v);
}

void ch_where_selection(struct ch_store *s, struct page *q, const struct store_selection *sel)
{
	where_eq(q, "host", sel->host);
	where_eq(q, "path", sel->cgroup);
	where_eq(q, "event", sel->event);
	if ((!sel->container || !*sel->container) && (!sel->pod || !*sel->pod))
		return;
	page_printf(q, " AND (host, path) GLOBAL IN (SELECT host, path FROM %s.cgroups WHERE 1",
		    s->db);
	if (sel->container && *sel->container) {
		page_put(q, " AND (container_id = ");
		ch_quote(q, sel->container);
		page_put(q, " OR container_name = ");
		ch_quote(q, sel->container);
		if (strlen(sel->container) >= 12) {
			page_printf(q, " OR substring(container_id, 1, %zu) = ",
				    strlen(sel->container));
			ch_quote(q, sel->container);
		}
		page_putc(q, ')');
	}
	if (sel->pod && *sel->pod) {
		page_put(q, " AND (pod_uid = ");
		ch_quote(q, sel->pod);
		page_put(q, " OR pod_name = ");
		ch_quote(q, sel->pod);
		page_putc(q, ')');
	}
	page_putc(q, ')');
}

int ch_stacks(struct store *base, const struct store_selection *sel,
	      int (*fn)(void *arg, const struct store_stack *st), void *arg)
{
	struct ch_store *s = chs(base);
	struct stacks_ctx x = { fn, arg };
	uint64_t from = sel->from_ns - sel->from_ns % CH_BUCKET_NS, kept;
	struct page q;
	int ret = ch_retained(s, &kept);

	if (ret)
		return ret;
	/* Buckets at or past the retention cutoff, as SQLite keeps them. */
	if (kept % CH_BUCKET_NS)
		kept += CH_BUCKET_NS - kept % CH_BUCKET_NS;
	if (kept > from)
		from = kept;
	page_init(&q, 0);
	/* The rows of the first complete insert of each batch in range (its
	 * batches row is written last), summed directly: batches sit with
	 * their samples on one shard (one sharding key), so each shard
	 * filters by its own batches_local. Grouped by a hash of the event
	 * name: fixed-size keys are a third faster on 18.16 than a String
	 * (the alias is not "event": 18.16 would take any(event) for the
	 * column of the WHERE clause). */
	page_printf(&q,
		    "SELECT st.folded, sm.e, sm.fq, sm.pd, sm.c, st.modules FROM"
		    " (SELECT stack, any(event) AS e, frequency AS fq, period AS pd, sum(count) AS c"
		    " FROM %s.samples WHERE bucket >= %" PRIu64 " AND bucket < %" PRIu64
		    " AND ins IN (SELECT min(ins) FROM %s.batches%s WHERE"
		    " least(start_ns, received_ns) >= %" PRIu64
		    " AND least(start_ns, received_ns) < %" PRIu64 " GROUP BY agent_id, seq)",
		    s->db, from, sel->to_ns, s->db, s->cluster ? "_local" : "", from,
		    (uint64_t)(sel->to_ns > UINT64_MAX - CH_BUCKET_NS ? UINT64_MAX
									   : sel->to_ns + CH_BUCKET_NS));
	ch_where_selection(s, &q, sel);
	page_printf(&q,
		    " GROUP BY stack, cityHash64(event), fq, pd) AS sm"
		    " ANY LEFT JOIN (SELECT hash AS stack, any(folded) AS folded,"
		    " minIf(modules, modules != '') AS modules FROM %s.stacks GROUP BY hash) AS st"
		    " USING stack FORMAT TabSeparated",
		    s->db);
	ret = ch_text(&q) ? query(s, q.buf, 6, row_stack, NULL, &x) : -ENOMEM;
	page_release(&q);
	return ret;
}

struct module_ctx {
	struct store_module *out;
	int found;
};

static int row_module(void *arg, char **f)
{
	struct module_ctx *x = arg;

	x->out->path = strdup(f[0]);
	x->out->build_id = strdup(f[1]);
	if (!x->out->path || !x->out->build_id) {
		free(x->out->path);
		free(x->out->build_id);
		return -ENOMEM;
	}
	x->found = 1;
	return 1; /* one row */
}

int ch_module(struct store *base, int64_t id, struct store_module *out)
{
	struct ch_store *s = chs(base);
	struct module_ctx x = { out, 0 };
	char sql[200];
	int ret;

	if (id <= 0)
		return -ENOENT;
	snprintf(sql, sizeof(sql),
		 "SELECT path, build_id FROM %s.modules WHERE id = %" PRId64
		 " LIMIT 1 FORMAT TabSeparated",
		 s->db, id);
	ret = query(s, sql, 2, row_module, NULL, &x);
	if (ret == 1)
		return 0;
	return ret ? ret : -ENOENT;
}

int ch_select(struct ch_store *s, const char *sql, size_t nf, int (*row)(void *arg, char **f),
	      void *arg)
{
	return query(s, sql, nf, row, NULL, arg);
}
