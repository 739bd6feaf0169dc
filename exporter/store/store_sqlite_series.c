// SPDX-License-Identifier: MIT
/*
 * The SQLite store's counter series, for GET /api/v1/series: the raw
 * counter rows (counter_samples) of the batches (batches) whose read time
 * falls in the range, scaled as the running totals are, summed per step
 * and series by the query itself. The top series are ranked in the same
 * statement (a CTE read twice: once to rank, once to bucket), so only
 * the steps of the series answered come back. A delta is read at its
 * batch's end_ns, or at received_ns when that is earlier (an agent's
 * clock ahead cannot move it into the future), so the rows of one batch
 * land in one step. The raw rows live as long as retention keeps their
 * batch.
 */
#include "exporter/store/store_sqlite_internal.h"

#include <errno.h>

/*
 * store_scaled() in SQL: value x (enabled / running), in that order of
 * operations, so each row's double is the one the totals added. The
 * bound on received_ns follows from the one on t (t <= received_ns) and
 * lets the batches_received index narrow the scan.
 */
static const char series_sql[] =
	"WITH d AS (SELECT c.host AS host, c.cgroup_path AS path, c.event AS event,"
	" min(b.end_ns, b.received_ns) AS t,"
	" CASE WHEN c.time_running > 0 THEN c.value * (c.time_enabled * 1.0 / c.time_running)"
	" ELSE 0 END AS v"
	" FROM batches b JOIN counter_samples c USING(agent_id, seq)"
	" LEFT JOIN cgroups g ON g.host = c.host AND g.path = c.cgroup_path"
	" WHERE c.supported AND b.received_ns >= :from"
	" AND min(b.end_ns, b.received_ns) >= :from AND min(b.end_ns, b.received_ns) < :to"
	" AND (:host IS NULL OR c.host = :host)"
	" AND (:cgroup IS NULL OR c.cgroup_path = :cgroup)"
	" AND (:event IS NULL OR c.event = :event)"
	" AND (:container IS NULL OR g.container_id = :container"
	"  OR g.container_name = :container OR (length(:container) >= 12"
	"  AND substr(g.container_id, 1, length(:container)) = :container))"
	" AND (:pod IS NULL OR g.pod_uid = :pod OR g.pod_name = :pod)),"
	" top AS (SELECT host, path, event FROM d GROUP BY host, path, event"
	" ORDER BY total(v) DESC, host, path, event LIMIT :top)"
	" SELECT d.host, d.path, d.event, d.t - d.t % :step AS bt, total(d.v),"
	" ifnull(g.cgroup_id, 0), ifnull(g.container_id, ''), ifnull(g.runtime, ''),"
	" ifnull(g.pod_uid, ''), ifnull(g.qos, ''), ifnull(g.k8s_namespace, ''),"
	" ifnull(g.pod_name, ''), ifnull(g.container_name, ''), ifnull(g.unit, ''),"
	" ifnull(g.slice, ''), ifnull(g.image, '')"
	" FROM d JOIN top USING(host, path, event)"
	" LEFT JOIN cgroups g ON g.host = d.host AND g.path = d.path"
	" GROUP BY d.host, d.path, d.event, bt ORDER BY d.host, d.path, d.event, bt";

int sq_series(struct store *base, const struct store_selection *sel, uint64_t step_ns, size_t top,
	      int (*fn)(void *arg, const struct store_series_row *r), void *arg)
{
	struct sqlite_store *s = ss(base);
	sqlite3_stmt *q;
	int rc, ret = 0;

	pthread_mutex_lock(&s->rlock);
	if (sqlite3_prepare_v2(s->rdb, series_sql, -1, &q, NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&s->rlock);
		return -EIO;
	}
	bind_u64(q, sqlite3_bind_parameter_index(q, ":from"), sel->from_ns);
	bind_u64(q, sqlite3_bind_parameter_index(q, ":to"), sel->to_ns);
	bind_u64(q, sqlite3_bind_parameter_index(q, ":step"), step_ns);
	bind_u64(q, sqlite3_bind_parameter_index(q, ":top"), top);
	sq_bind_opt(q, ":host", sel->host);
	sq_bind_opt(q, ":cgroup", sel->cgroup);
	sq_bind_opt(q, ":event", sel->event);
	sq_bind_opt(q, ":container", sel->container);
	sq_bind_opt(q, ":pod", sel->pod);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_cgroup c = {
			.host = col(q, 0),
			.path = col(q, 1),
			.cgroup_id = col_u64(q, 5),
			.container_id = col(q, 6),
			.runtime = col(q, 7),
			.pod_uid = col(q, 8),
			.qos = col(q, 9),
			.k8s_namespace = col(q, 10),
			.pod_name = col(q, 11),
			.container_name = col(q, 12),
			.unit = col(q, 13),
			.slice = col(q, 14),
			.image = col(q, 15),
		};
		struct store_series_row r = {
			.cgroup = &c,
			.event = col(q, 2),
			.t_ns = col_u64(q, 3),
			.value = sqlite3_column_double(q, 4),
		};

		ret = fn(arg, &r);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(q);
	pthread_mutex_unlock(&s->rlock);
	return ret;
}
