// SPDX-License-Identifier: MIT
/*
 * The SQLite store's heat map rows: each batch's latency histogram of one
 * probe (probe_samples.latency), with the batch's interval (batches), for
 * the exporter's /api/v1/heatmap. The raw rows live as long as retention
 * keeps their batch.
 */
#include "exporter/store/store_sqlite_internal.h"

#include <errno.h>

int sq_latency_rows(struct store *base, const struct store_selection *sel, const char *probe,
		    int (*fn)(void *arg, const struct store_latency_row *r), void *arg)
{
	struct sqlite_store *s = ss(base);
	sqlite3_stmt *q;
	int rc, ret = 0;

	pthread_mutex_lock(&s->rlock);
	if (sqlite3_prepare_v2(s->rdb,
			       "SELECT p.host, p.cgroup_path, b.start_ns, b.end_ns, p.latency"
			       " FROM probe_samples p JOIN batches b USING(agent_id, seq)"
			       " WHERE p.label = ?1 AND p.latency IS NOT NULL"
			       " AND b.start_ns >= ?2 AND b.start_ns < ?3"
			       " AND (?4 IS NULL OR p.host = ?4)"
			       " AND (?5 IS NULL OR p.cgroup_path = ?5)"
			       " ORDER BY b.start_ns",
			       -1, &q, NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&s->rlock);
		return -EIO;
	}
	sqlite3_bind_text(q, 1, probe, -1, SQLITE_STATIC);
	bind_u64(q, 2, sel->from_ns);
	bind_u64(q, 3, sel->to_ns);
	sq_bind_opt(q, "?4", sel->host);
	sq_bind_opt(q, "?5", sel->cgroup);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_latency_row r = {
			.host = col(q, 0),
			.path = col(q, 1),
			.start_ns = col_u64(q, 2),
			.end_ns = col_u64(q, 3),
		};

		if (sq_hist_unpack(sqlite3_column_blob(q, 4), sqlite3_column_bytes(q, 4),
				   &r.latency_ns) < 0 || !r.latency_ns.count)
			continue;
		ret = fn(arg, &r);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = -EIO;
	sqlite3_finalize(q);
	pthread_mutex_unlock(&s->rlock);
	return ret;
}
