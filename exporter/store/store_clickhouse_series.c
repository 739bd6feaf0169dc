// SPDX-License-Identifier: MIT
/*
 * The ClickHouse store's counter series, for GET /api/v1/series: the raw
 * counters rows, collapsed by their row key (a batch stored twice counts
 * once, as in the totals), joined with their batch's read time (batches,
 * collapsed by (agent_id, seq): least(end_ns, received_ns), as SQLite
 * takes it), summed per step and series by the server. The top series
 * are ranked by a second copy of the same subquery in an IN (18.16 has
 * no common table expressions), and the cgroups' identities joined last
 * (the last non-empty value of each field, as load() reads them). Rows
 * whose batch arrived before the retention cutoff are left out, as
 * SQLite's retention deletes them. With a cluster the joins are GLOBAL.
 * Aliases differ from column names (18.16 would take an aggregate's
 * alias for the column of a WHERE clause).
 */
#include "exporter/store/store_clickhouse_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

/* The deduped deltas of @sel in range with their read time: h, p, e, x, tt. */
static void deltas(struct ch_store *s, const struct store_selection *sel, uint64_t kept,
		   struct page *q)
{
	uint64_t from = sel->from_ns > kept ? sel->from_ns : kept;

	page_printf(q,
		    "(SELECT h, p, e, x, tt FROM (SELECT any(host) AS h, any(path) AS p,"
		    " any(event) AS e, any(scaled) AS x, any(agent_id) AS ag, any(seq) AS sq"
		    " FROM %s.counters WHERE supported = 1",
		    s->db);
	ch_where_selection(s, q, sel);
	page_printf(q,
		    " GROUP BY row) %sANY INNER JOIN (SELECT agent_id AS ag, seq AS sq,"
		    " min(least(end_ns, received_ns)) AS tt FROM %s.batches"
		    " WHERE received_ns >= %" PRIu64 " AND least(end_ns, received_ns) >= %" PRIu64
		    " AND least(end_ns, received_ns) < %" PRIu64
		    " GROUP BY agent_id, seq) USING (ag, sq))",
		    s->cluster ? "GLOBAL " : "", s->db, kept, from, sel->to_ns);
}

void ch_series_sql(struct ch_store *s, const struct store_selection *sel, uint64_t kept,
		   uint64_t step_ns, size_t top, struct page *q)
{
	page_printf(q,
		    "SELECT h, p, e, bt, v, cid, ci, rt, pu, qs, ns, pn, cn, un, sl, im FROM"
		    " (SELECT h, p, e, intDiv(tt, %" PRIu64 ") * %" PRIu64 " AS bt, sum(x) AS v"
		    " FROM ",
		    step_ns, step_ns);
	deltas(s, sel, kept, q);
	page_put(q, " WHERE (h, p, e) IN (SELECT h, p, e FROM ");
	deltas(s, sel, kept, q);
	page_printf(q,
		    " GROUP BY h, p, e ORDER BY sum(x) DESC, h, p, e LIMIT %zu)"
		    " GROUP BY h, p, e, bt) %sANY LEFT JOIN (SELECT host AS h, path AS p,"
		    " argMaxIf(cgroup_id, last_seen_ns, cgroup_id != 0) AS cid, "
		    CH_LAST_SET("container_id") " AS ci, " CH_LAST_SET("runtime") " AS rt, "
		    CH_LAST_SET("pod_uid") " AS pu, " CH_LAST_SET("qos") " AS qs, "
		    CH_LAST_SET("k8s_namespace") " AS ns, " CH_LAST_SET("pod_name") " AS pn, "
		    CH_LAST_SET("container_name") " AS cn, " CH_LAST_SET("unit") " AS un, "
		    CH_LAST_SET("slice") " AS sl, " CH_LAST_SET("image") " AS im"
		    " FROM %s.cgroups WHERE 1",
		    top, s->cluster ? "GLOBAL " : "", s->db);
	if (sel->host && *sel->host) {
		page_put(q, " AND host = ");
		ch_quote(q, sel->host);
	}
	if (sel->cgroup && *sel->cgroup) {
		page_put(q, " AND path = ");
		ch_quote(q, sel->cgroup);
	}
	page_put(q, " GROUP BY host, path) USING (h, p) ORDER BY h, p, e, bt FORMAT TabSeparated");
}

struct series_ctx {
	int (*fn)(void *arg, const struct store_series_row *r);
	void *arg;
};

static int row_series(void *arg, char **f)
{
	struct series_ctx *x = arg;
	struct store_cgroup c = {
		.host = f[0], .path = f[1], .cgroup_id = ch_u64(f[5]), .container_id = f[6],
		.runtime = f[7], .pod_uid = f[8], .qos = f[9], .k8s_namespace = f[10],
		.pod_name = f[11], .container_name = f[12], .unit = f[13], .slice = f[14],
		.image = f[15],
	};
	struct store_series_row r = {
		.cgroup = &c, .event = f[2], .t_ns = ch_u64(f[3]), .value = strtod(f[4], NULL),
	};

	return x->fn(x->arg, &r);
}

int ch_series(struct store *base, const struct store_selection *sel, uint64_t step_ns, size_t top,
	      int (*fn)(void *arg, const struct store_series_row *r), void *arg)
{
	struct ch_store *s = chs(base);
	struct series_ctx x = { fn, arg };
	uint64_t kept;
	struct page q;
	int ret = ch_retained(s, &kept);

	if (ret)
		return ret;
	page_init(&q, 0);
	ch_series_sql(s, sel, kept, step_ns, top, &q);
	ret = ch_text(&q) ? ch_select(s, q.buf, 16, row_series, &x) : -ENOMEM;
	page_release(&q);
	return ret;
}
