// SPDX-License-Identifier: MIT
/*
 * The SQLite store's reads: the totals loaded at start (the writer's
 * connection, nothing else runs then) and the queries of GET
 * /api/v1/stacks and of the modules of a stack (the read-only connection
 * under rlock, which WAL lets read the last commit while a write waits
 * for its fsync).
 */
#include "exporter/store/store_sqlite_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- load ---- */

static int walk(sqlite3 *db, const char *sql, int (*row)(sqlite3_stmt *q, void *arg), void *arg)
{
	sqlite3_stmt *q;
	int rc, ret = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		ret = row(q, arg);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(q);
	return ret;
}

static int row_cgroup(sqlite3_stmt *q, void *arg)
{
	const struct store_visitor *v = arg;
	struct store_cgroup c = {
		.host = col(q, 0),
		.path = col(q, 1),
		.cgroup_id = col_u64(q, 2),
		.container_id = col(q, 3),
		.runtime = col(q, 4),
		.pod_uid = col(q, 5),
		.qos = col(q, 6),
		.k8s_namespace = col(q, 7),
		.pod_name = col(q, 8),
		.container_name = col(q, 9),
		.unit = col(q, 10),
		.slice = col(q, 11),
		.last_seen_ns = col_u64(q, 12),
		.image = col(q, 13),
	};

	return v->cgroup(v->arg, &c);
}

static int row_counter(sqlite3_stmt *q, void *arg)
{
	const struct store_visitor *v = arg;
	struct store_counter_total t = {
		.host = col(q, 0),
		.path = col(q, 1),
		.event = col(q, 2),
		.total = sqlite3_column_double(q, 3),
		.last_seen_ns = col_u64(q, 4),
	};

	return v->counter(v->arg, &t);
}

static int row_probe(sqlite3_stmt *q, void *arg)
{
	const struct store_visitor *v = arg;
	struct store_probe_total t = {
		.host = col(q, 0),
		.path = col(q, 1),
		.label = col(q, 2),
		.hits = col_u64(q, 3),
		.last_seen_ns = col_u64(q, 6),
	};

	sq_hist_unpack(sqlite3_column_blob(q, 4), sqlite3_column_bytes(q, 4), &t.values);
	sq_hist_unpack(sqlite3_column_blob(q, 5), sqlite3_column_bytes(q, 5), &t.latency_ns);
	return v->probe(v->arg, &t);
}

static int row_agent(sqlite3_stmt *q, void *arg)
{
	const struct store_visitor *v = arg;
	struct store_agent a = {
		.agent_id = col(q, 0),
		.host = col(q, 1),
		.version = col(q, 2),
		.first_seen_ns = col_u64(q, 3),
		.last_push_ns = col_u64(q, 4),
		.batches = col_u64(q, 5),
		.stack_samples = col_u64(q, 6),
		.self = {
			.samples = col_u64(q, 7),
			.lost_samples = col_u64(q, 8),
			.unwind_failures = col_u64(q, 9),
			.push_failures = col_u64(q, 10),
			.push_rejected = col_u64(q, 11),
			.spool_dropped_batches = col_u64(q, 12),
			.stacks_refused = col_u64(q, 13),
			.spool_bytes = col_u64(q, 14),
			.spool_batches = col_u64(q, 15),
		},
	};

	return v->agent(v->arg, &a);
}

static int row_truncated(sqlite3_stmt *q, void *arg)
{
	const struct store_visitor *v = arg;
	struct store_truncated t = {
		.host = col(q, 0),
		.path = col(q, 1),
		.count = { col_u64(q, 2), col_u64(q, 3), col_u64(q, 4) },
		.last_seen_ns = col_u64(q, 5),
	};

	return v->truncated(v->arg, &t);
}

int sq_load(struct store *base, const struct store_visitor *v)
{
	struct sqlite_store *s = ss(base);
	int ret = 0;

	/* The writer's connection: nothing else runs at start. */
	pthread_mutex_lock(&s->wlock);
	if (v->cgroup)
		ret = walk(s->db,
			   "SELECT host, path, cgroup_id, container_id, runtime, pod_uid, qos,"
			   " k8s_namespace, pod_name, container_name, unit, slice, last_seen_ns, image"
			   " FROM cgroups",
			   row_cgroup, (void *)v);
	if (!ret && v->counter)
		ret = walk(s->db,
			   "SELECT host, path, event, total, last_seen_ns FROM cgroup_totals",
			   row_counter, (void *)v);
	if (!ret && v->probe)
		ret = walk(s->db,
			   "SELECT host, path, label, hits, vals, latency, last_seen_ns"
			   " FROM probe_totals",
			   row_probe, (void *)v);
	if (!ret && v->agent)
		ret = walk(s->db,
			   "SELECT agent_id, host, version, first_seen_ns, last_push_ns, batches,"
			   " stack_samples, samples, lost_samples, unwind_failures, push_failures,"
			   " push_rejected, spool_dropped_batches, stacks_refused, spool_bytes,"
			   " spool_batches FROM agents",
			   row_agent, (void *)v);
	if (!ret && v->truncated)
		ret = walk(s->db,
			   "SELECT host, path, stack_copy, max_stack, bad_return_address,"
			   " last_seen_ns FROM truncation_totals",
			   row_truncated, (void *)v);
	pthread_mutex_unlock(&s->wlock);
	return ret;
}

/* ---- queries ---- */

void sq_bind_opt(sqlite3_stmt *q, const char *name, const char *v)
{
	int i = sqlite3_bind_parameter_index(q, name);

	if (!i)
		return;
	if (v && *v)
		sqlite3_bind_text(q, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, i);
}

int sq_stacks(struct store *base, const struct store_selection *sel,
		     int (*fn)(void *arg, const struct store_stack *st), void *arg)
{
	struct sqlite_store *s = ss(base);
	sqlite3_stmt *q;
	int rc, ret = 0;
	uint64_t from = sel->from_ns - sel->from_ns % BUCKET_NS;

	pthread_mutex_lock(&s->rlock);
	if (sqlite3_prepare_v2(
		    s->rdb,
		    /* total(), not sum(): sum() fails on an integer overflow, and
		     * counts of INT64_MAX in two buckets would fail the query. */
		    "SELECT st.folded, ss.event, ss.frequency, ss.period, total(ss.count), st.modules"
		    " FROM stack_samples ss JOIN stacks st ON st.id = ss.stack_id"
		    " LEFT JOIN cgroups c ON c.host = ss.host AND c.path = ss.cgroup_path"
		    " WHERE ss.bucket_start >= :from AND ss.bucket_start < :to"
		    " AND (:host IS NULL OR ss.host = :host)"
		    " AND (:cgroup IS NULL OR ss.cgroup_path = :cgroup)"
		    " AND (:event IS NULL OR ss.event = :event)"
		    " AND (:container IS NULL OR c.container_id = :container"
		    "  OR c.container_name = :container OR (length(:container) >= 12"
		    "  AND substr(c.container_id, 1, length(:container)) = :container))"
		    " AND (:pod IS NULL OR c.pod_uid = :pod OR c.pod_name = :pod)"
		    " GROUP BY ss.stack_id, ss.event, ss.frequency, ss.period",
		    -1, &q, NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&s->rlock);
		return -EIO;
	}
	bind_u64(q, sqlite3_bind_parameter_index(q, ":from"), from);
	bind_u64(q, sqlite3_bind_parameter_index(q, ":to"), sel->to_ns);
	sq_bind_opt(q, ":host", sel->host);
	sq_bind_opt(q, ":cgroup", sel->cgroup);
	sq_bind_opt(q, ":event", sel->event);
	sq_bind_opt(q, ":container", sel->container);
	sq_bind_opt(q, ":pod", sel->pod);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_stack st = {
			.folded = col(q, 0),
			.event = col(q, 1),
			.frequency = col_u64(q, 2),
			.period = col_u64(q, 3),
			.count = col_sum(q, 4),
			.modules = col(q, 5),
		};

		ret = fn(arg, &st);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(q);
	pthread_mutex_unlock(&s->rlock);
	return ret;
}

int sq_module(struct store *base, int64_t id, struct store_module *out)
{
	struct sqlite_store *s = ss(base);
	sqlite3_stmt *q;
	int rc, ret = -ENOENT;

	pthread_mutex_lock(&s->rlock);
	q = s->module_q;
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	sqlite3_bind_int64(q, 1, id);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		char *p = strdup(col(q, 0)), *b = strdup(col(q, 1));

		if (p && b) {
			out->path = p;
			out->build_id = b;
			ret = 0;
		} else {
			free(p);
			free(b);
			ret = -ENOMEM;
		}
	} else if (rc != SQLITE_DONE) {
		ret = -EIO;
	}
	sqlite3_reset(q);
	pthread_mutex_unlock(&s->rlock);
	return ret;
}
