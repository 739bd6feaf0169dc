// SPDX-License-Identifier: MIT
/*
 * The SQLite store: DIR/cgperf.db in WAL mode with synchronous=FULL.
 *
 * Two connections. The writer takes put(), expire() and retention(), one
 * transaction each (BEGIN IMMEDIATE ... COMMIT), serialized by wlock. The
 * reader (read-only) takes the queries under rlock; WAL lets it read the
 * last committed state while the writer waits for its fsync, so a flame
 * graph never waits for ingest.
 *
 * Raw rows, deleted by retention():
 *   batches        one per accepted batch; (agent_id, seq) makes a resent
 *                  batch a no-op. A batch older than retention is dropped
 *                  by agents.retired_seq instead (seq at most the highest
 *                  deleted one is a duplicate).
 *   counter_samples, probe_samples   the batch's counters and probes, raw
 *   stack_samples  sample counts per (minute bucket of the batch start,
 *                  host, cgroup, event, frequency, period, stack)
 * Interned once: stacks (folded text), modules (path, build-id) and
 * each stack's modules (the modules table id of each frame, 0 = none, as the
 * stack was first stored with some).
 * Running totals, written in the batch's transaction, deleted only when
 * their series expire: cgroup_totals, probe_totals, truncation_totals
 * (stacks cut short, per cgroup and reason), agents; cgroups keeps
 * identities (for selections by container and pod) until retention.
 *
 * Counter totals are REAL sums of store_scaled() values added in commit
 * order, which is the order the exporter's in-memory totals add them, so a
 * restart reloads bit-identical values.
 *
 * Schema versions (PRAGMA user_version): 0 and no tables = new; 0 with
 * tables = the first slice (stack_samples without rates, no totals),
 * migrated in place; 2 = frames' modules by frame name, stacks without
 * modules (the column is added); 3 = this file's. cgroups.image is added
 * to a version 3 database that lacks it.
 */
#include "exporter/store/store_sqlite_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* Summed as the agents' counts are: saturated at INT64_MAX. */
#define SAT_ADD(col) " " col " = min(" col " + excluded." col ", " I64_MAX "),"

static const char *const stmt_sql[ST_N] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_SAVEPOINT] = "SAVEPOINT one_batch",
	[ST_RELEASE] = "RELEASE one_batch",
	[ST_ROLLBACK_TO] = "ROLLBACK TO one_batch",
	[ST_RETIRED] = "SELECT retired_seq FROM agents WHERE agent_id = ?",
	[ST_BATCH] = "INSERT OR IGNORE INTO batches(agent_id, seq, host, start_ns, end_ns, "
		     "received_ns) VALUES (?, ?, ?, ?, ?, ?)",
	[ST_CGROUP] = "INSERT INTO cgroups(host, path, cgroup_id, container_id, runtime, pod_uid, qos,"
		      " k8s_namespace, pod_name, container_name, unit, slice, last_seen_ns, image)"
		      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		      " ON CONFLICT(host, path) DO UPDATE SET"
		      " cgroup_id = coalesce(nullif(excluded.cgroup_id, 0), cgroup_id),"
		      " container_id = coalesce(nullif(excluded.container_id, ''), container_id),"
		      " runtime = coalesce(nullif(excluded.runtime, ''), runtime),"
		      " pod_uid = coalesce(nullif(excluded.pod_uid, ''), pod_uid),"
		      " qos = coalesce(nullif(excluded.qos, ''), qos),"
		      " k8s_namespace = coalesce(nullif(excluded.k8s_namespace, ''), k8s_namespace),"
		      " pod_name = coalesce(nullif(excluded.pod_name, ''), pod_name),"
		      " container_name = coalesce(nullif(excluded.container_name, ''), container_name),"
		      " unit = coalesce(nullif(excluded.unit, ''), unit),"
		      " image = coalesce(nullif(excluded.image, ''), image),"
		      " slice = coalesce(nullif(excluded.slice, ''), slice),"
		      " last_seen_ns = max(last_seen_ns, excluded.last_seen_ns)",
	[ST_COUNTER] = "INSERT INTO counter_samples(host, agent_id, seq, cgroup_path, "
		       "container_id, pod_uid, unit, event, value, time_enabled, time_running, "
		       "supported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[ST_COUNTER_TOTAL] = "INSERT INTO cgroup_totals(host, path, event, total, last_seen_ns)"
			     " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET"
			     " total = total + excluded.total,"
			     " last_seen_ns = max(last_seen_ns, excluded.last_seen_ns)",
	/* The modules a stack was first stored with, unless that was none. */
	[ST_STACK_INTERN] = "INSERT INTO stacks(folded, modules) VALUES (?, ?)"
			    " ON CONFLICT(folded) DO UPDATE SET modules = excluded.modules"
			    " WHERE stacks.modules = '' AND excluded.modules != ''",
	[ST_STACK_ID] = "SELECT id FROM stacks WHERE folded = ?",
	[ST_STACK_SAMPLE] = "INSERT INTO stack_samples(bucket_start, host, cgroup_path, event, "
			    "frequency, period, stack_id, count) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
			    "ON CONFLICT DO UPDATE SET count = min(count + excluded.count, " I64_MAX ")",
	[ST_MODULE_INTERN] = "INSERT OR IGNORE INTO modules(path, build_id) VALUES (?, ?)",
	[ST_MODULE_ID] = "SELECT id FROM modules WHERE path = ? AND build_id = ?",
	[ST_PROBE] = "INSERT INTO probe_samples(agent_id, seq, host, cgroup_path, label, hits,"
		     " vals, latency) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
	[ST_PROBE_GET] = "SELECT hits, vals, latency FROM probe_totals"
			 " WHERE host = ? AND path = ? AND label = ?",
	[ST_PROBE_TOTAL] = "INSERT OR REPLACE INTO probe_totals(host, path, label, hits, vals,"
			   " latency, last_seen_ns) VALUES (?, ?, ?, ?, ?, ?, ?)",
	[ST_AGENT] = "INSERT INTO agents(agent_id, host, version, first_seen_ns, last_push_ns,"
		     " batches, stack_samples, samples, lost_samples, unwind_failures,"
		     " push_failures, push_rejected, spool_dropped_batches, stacks_refused,"
		     " spool_bytes, spool_batches, retired_seq)"
		     " VALUES (?1, ?2, ?3, ?4, ?4, 1, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 0)"
		     " ON CONFLICT(agent_id) DO UPDATE SET host = excluded.host,"
		     " version = excluded.version,"
		     " last_push_ns = max(last_push_ns, excluded.last_push_ns),"
		     " batches = batches + 1,"
		     " stack_samples = min(stack_samples + excluded.stack_samples, " I64_MAX "),"
		     " samples = min(samples + excluded.samples, " I64_MAX "),"
		     " lost_samples = min(lost_samples + excluded.lost_samples, " I64_MAX "),"
		     " unwind_failures = min(unwind_failures + excluded.unwind_failures, " I64_MAX "),"
		     " push_failures = min(push_failures + excluded.push_failures, " I64_MAX "),"
		     " push_rejected = min(push_rejected + excluded.push_rejected, " I64_MAX "),"
		     " spool_dropped_batches = min(spool_dropped_batches"
		     " + excluded.spool_dropped_batches, " I64_MAX "),"
		     " stacks_refused = min(stacks_refused + excluded.stacks_refused, " I64_MAX "),"
		     " spool_bytes = excluded.spool_bytes, spool_batches = excluded.spool_batches",
	[ST_TRUNCATED] = "INSERT INTO truncation_totals(host, path, stack_copy, max_stack,"
			 " bad_return_address, last_seen_ns) VALUES (?, ?, ?, ?, ?, ?)"
			 " ON CONFLICT(host, path) DO UPDATE SET"
			 SAT_ADD("stack_copy") SAT_ADD("max_stack") SAT_ADD("bad_return_address")
			 " last_seen_ns = max(last_seen_ns, excluded.last_seen_ns)",
};

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS batches(agent_id TEXT NOT NULL, seq INTEGER NOT NULL,"
	" host TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
	" received_ns INTEGER NOT NULL, PRIMARY KEY(agent_id, seq));"
	"CREATE INDEX IF NOT EXISTS batches_received ON batches(received_ns);"
	"CREATE TABLE IF NOT EXISTS counter_samples(host TEXT NOT NULL, agent_id TEXT NOT NULL,"
	" seq INTEGER NOT NULL, cgroup_path TEXT NOT NULL, container_id TEXT NOT NULL,"
	" pod_uid TEXT NOT NULL, unit TEXT NOT NULL, event TEXT NOT NULL, value INTEGER NOT NULL,"
	" time_enabled INTEGER NOT NULL, time_running INTEGER NOT NULL,"
	" supported INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS counter_samples_batch ON counter_samples(agent_id, seq);"
	"CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY, folded TEXT NOT NULL UNIQUE,"
	" modules TEXT NOT NULL DEFAULT '');"
	"CREATE TABLE IF NOT EXISTS stack_samples(bucket_start INTEGER NOT NULL,"
	" host TEXT NOT NULL, cgroup_path TEXT NOT NULL, event TEXT NOT NULL,"
	" frequency INTEGER NOT NULL, period INTEGER NOT NULL,"
	" stack_id INTEGER NOT NULL REFERENCES stacks(id), count INTEGER NOT NULL,"
	" PRIMARY KEY(bucket_start, host, cgroup_path, event, frequency, period, stack_id));"
	"CREATE INDEX IF NOT EXISTS stack_samples_stack ON stack_samples(stack_id);"
	"CREATE TABLE IF NOT EXISTS probe_samples(agent_id TEXT NOT NULL, seq INTEGER NOT NULL,"
	" host TEXT NOT NULL, cgroup_path TEXT NOT NULL, label TEXT NOT NULL,"
	" hits INTEGER NOT NULL, vals BLOB, latency BLOB);"
	"CREATE INDEX IF NOT EXISTS probe_samples_batch ON probe_samples(agent_id, seq);"
	"CREATE TABLE IF NOT EXISTS modules(id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
	" build_id TEXT NOT NULL, UNIQUE(path, build_id));"
	"CREATE TABLE IF NOT EXISTS cgroups(host TEXT NOT NULL, path TEXT NOT NULL,"
	" cgroup_id INTEGER NOT NULL, container_id TEXT NOT NULL, runtime TEXT NOT NULL,"
	" pod_uid TEXT NOT NULL, qos TEXT NOT NULL, k8s_namespace TEXT NOT NULL,"
	" pod_name TEXT NOT NULL, container_name TEXT NOT NULL, unit TEXT NOT NULL,"
	" slice TEXT NOT NULL, last_seen_ns INTEGER NOT NULL, image TEXT NOT NULL DEFAULT '',"
	" PRIMARY KEY(host, path));"
	"CREATE TABLE IF NOT EXISTS cgroup_totals(host TEXT NOT NULL, path TEXT NOT NULL,"
	" event TEXT NOT NULL, total REAL NOT NULL, last_seen_ns INTEGER NOT NULL,"
	" PRIMARY KEY(host, path, event));"
	"CREATE TABLE IF NOT EXISTS probe_totals(host TEXT NOT NULL, path TEXT NOT NULL,"
	" label TEXT NOT NULL, hits INTEGER NOT NULL, vals BLOB, latency BLOB,"
	" last_seen_ns INTEGER NOT NULL, PRIMARY KEY(host, path, label));"
	"CREATE TABLE IF NOT EXISTS truncation_totals(host TEXT NOT NULL, path TEXT NOT NULL,"
	" stack_copy INTEGER NOT NULL, max_stack INTEGER NOT NULL,"
	" bad_return_address INTEGER NOT NULL, last_seen_ns INTEGER NOT NULL,"
	" PRIMARY KEY(host, path));"
	"CREATE TABLE IF NOT EXISTS agents(agent_id TEXT PRIMARY KEY, host TEXT NOT NULL,"
	" version TEXT NOT NULL, first_seen_ns INTEGER NOT NULL, last_push_ns INTEGER NOT NULL,"
	" batches INTEGER NOT NULL, stack_samples INTEGER NOT NULL, samples INTEGER NOT NULL,"
	" lost_samples INTEGER NOT NULL, unwind_failures INTEGER NOT NULL,"
	" push_failures INTEGER NOT NULL, push_rejected INTEGER NOT NULL,"
	" spool_dropped_batches INTEGER NOT NULL, stacks_refused INTEGER NOT NULL,"
	" spool_bytes INTEGER NOT NULL, spool_batches INTEGER NOT NULL,"
	" retired_seq INTEGER NOT NULL);";

/* The first slice's database: stack_samples gains its rates (0 = unknown),
 * and the counter totals are summed once from the raw rows. */
static const char migrate_v1[] =
	"ALTER TABLE stack_samples RENAME TO stack_samples_v1;"
	"%s" /* the schema */
	"INSERT INTO stack_samples SELECT bucket_start, host, cgroup_path, event, 0, 0, stack_id,"
	" count FROM stack_samples_v1;"
	"DROP TABLE stack_samples_v1;";

static void sq_close(struct store *base)
{
	struct sqlite_store *s = ss(base);

	if (!s)
		return;
	for (int i = 0; i < ST_N; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_finalize(s->module_q);
	sqlite3_close(s->rdb);
	sqlite3_close(s->db);
	pthread_mutex_destroy(&s->wlock);
	pthread_mutex_destroy(&s->rlock);
	free(s->folded);
	free(s->path);
	free(s);
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen, const char *path)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	return -EIO;
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

/* Create or bring the schema to SCHEMA_VERSION in one transaction. */
static int setup_schema(struct sqlite_store *s, char *err, size_t errlen)
{
	int64_t version = one_int(s->db, "PRAGMA user_version");
	int64_t tables = one_int(s->db, "SELECT count(*) FROM sqlite_master WHERE name = 'batches'");
	char *sql = NULL;
	int ret;

	if (version < 0 || tables < 0) {
		snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
		return -EIO;
	}
	if (version > SCHEMA_VERSION) {
		snprintf(err, errlen, "%s: schema version %lld is newer than this exporter's (%d)",
			 s->path, (long long)version, SCHEMA_VERSION);
		return -EPROTO;
	}
	if (version == 0 && tables) {
		if (asprintf(&sql, migrate_v1, schema) < 0)
			return -ENOMEM;
	}
	ret = exec(s->db, "BEGIN IMMEDIATE", err, errlen, s->path);
	if (ret)
		goto out;
	ret = exec(s->db, sql ? sql : schema, err, errlen, s->path);
	if (!ret && sql)
		/* Totals from the raw counters, in the order they were stored. */
		ret = exec(s->db,
			   "INSERT INTO cgroup_totals SELECT c.host, c.cgroup_path, c.event,"
			   " sum(CASE WHEN c.time_running > 0 THEN c.value * (c.time_enabled * 1.0"
			   " / c.time_running) ELSE 0 END), max(b.received_ns)"
			   " FROM counter_samples c JOIN batches b USING(agent_id, seq)"
			   " WHERE c.supported GROUP BY 1, 2, 3 ORDER BY min(c.rowid);"
			   "INSERT OR IGNORE INTO cgroups SELECT c.host, c.cgroup_path, 0,"
			   " c.container_id, '', c.pod_uid, '', '', '', '', c.unit, '', b.received_ns, ''"
			   " FROM counter_samples c JOIN batches b USING(agent_id, seq)"
			   " ORDER BY c.rowid DESC;",
			   err, errlen, s->path);
	/* Up to version 2 a frame's module was kept by frame name, which a
	 * "main" of every program shares: stacks now keep their own. */
	if (!ret && one_int(s->db, "SELECT count(*) FROM pragma_table_info('stacks')"
				   " WHERE name = 'modules'") == 0)
		ret = exec(s->db,
			   "ALTER TABLE stacks ADD COLUMN modules TEXT NOT NULL DEFAULT '';"
			   "DROP TABLE IF EXISTS frame_modules;",
			   err, errlen, s->path);
	/* The runtime's image came with the wire's field 12 (same version:
	 * an older exporter ignores the column). */
	if (!ret && one_int(s->db, "SELECT count(*) FROM pragma_table_info('cgroups')"
				   " WHERE name = 'image'") == 0)
		ret = exec(s->db, "ALTER TABLE cgroups ADD COLUMN image TEXT NOT NULL DEFAULT '';",
			   err, errlen, s->path);
	if (!ret) {
		char v[64];

		snprintf(v, sizeof(v), "PRAGMA user_version = %d", SCHEMA_VERSION);
		ret = exec(s->db, v, err, errlen, s->path);
	}
	if (!ret)
		ret = exec(s->db, "COMMIT", err, errlen, s->path);
	else
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
out:
	free(sql);
	return ret;
}

static struct store *sq_open(const struct store_config *cfg, char *err, size_t errlen)
{
	const char *dir = cfg->dir;
	struct sqlite_store *s;
	int ret;

	if (!dir || !*dir) {
		snprintf(err, errlen, "the sqlite store needs a data directory");
		errno = EINVAL;
		return NULL;
	}

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->wlock, NULL);
	pthread_mutex_init(&s->rlock, NULL);
	s->prune_cursor = -1;
	if (asprintf(&s->path, "%s/cgperf.db", dir) < 0) {
		s->path = NULL;
		errno = ENOMEM;
		goto err_free;
	}
	if (sqlite3_open_v2(s->path, &s->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s: %s", s->path,
			 s->db ? sqlite3_errmsg(s->db) : "out of memory");
		errno = EIO;
		goto err_free;
	}
	sqlite3_busy_timeout(s->db, 5000);
	if (exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", err, errlen,
		 s->path)) {
		errno = EIO;
		goto err_free;
	}
	ret = setup_schema(s, err, errlen);
	if (ret) {
		errno = -ret;
		goto err_free;
	}
	for (int i = 0; i < ST_N; i++) {
		if (sqlite3_prepare_v2(s->db, stmt_sql[i], -1, &s->st[i], NULL) != SQLITE_OK) {
			snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
			errno = EIO;
			goto err_free;
		}
	}
	if (sqlite3_open_v2(s->path, &s->rdb, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s for reading: %s", s->path,
			 s->rdb ? sqlite3_errmsg(s->rdb) : "out of memory");
		errno = EIO;
		goto err_free;
	}
	sqlite3_busy_timeout(s->rdb, 5000);
	if (sqlite3_prepare_v2(s->rdb,
			       "SELECT path, build_id FROM modules WHERE id = ?",
			       -1, &s->module_q, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->rdb));
		errno = EIO;
		goto err_free;
	}
	return &s->base;

err_free:
	sq_close(&s->base);
	return NULL;
}

/* ---- histograms as blobs: count, negative, sum, min, max, 65 buckets, LE ---- */


static void hist_pack(const struct hist *h, uint8_t out[HIST_WORDS * 8])
{
	uint64_t w[HIST_WORDS];

	store_hist_words(h, w);
	for (size_t i = 0; i < HIST_WORDS; i++)
		for (int k = 0; k < 8; k++)
			out[i * 8 + (size_t)k] = (uint8_t)(w[i] >> (8 * k));
}

int sq_hist_unpack(const void *blob, int len, struct hist *h)
{
	const uint8_t *b = blob;
	uint64_t w[HIST_WORDS];

	memset(h, 0, sizeof(*h));
	if (!blob || len != HIST_WORDS * 8)
		return blob ? -EINVAL : 0;
	for (size_t i = 0; i < HIST_WORDS; i++) {
		w[i] = 0;
		for (int k = 0; k < 8; k++)
			w[i] |= (uint64_t)b[i * 8 + (size_t)k] << (8 * k);
	}
	store_hist_from_words(w, h);
	return 0;
}

void sq_bind_hist(sqlite3_stmt *q, int i, const struct hist *h, uint8_t *buf)
{
	if (!h->count) {
		sqlite3_bind_null(q, i);
		return;
	}
	hist_pack(h, buf);
	sqlite3_bind_blob(q, i, buf, HIST_WORDS * 8, SQLITE_STATIC);
}

/* ---- expiry and retention ---- */

/* Run @sql (one statement, ?1 = @a, ?2 = @b) on the writer; its changes. */
static int64_t change(struct sqlite_store *s, const char *sql, int64_t a, int64_t b)
{
	sqlite3_stmt *q;
	int64_t n = -EIO;

	if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(q, 1, a);
	sqlite3_bind_int64(q, 2, b);
	if (run(q) == 0)
		n = sqlite3_changes(s->db);
	sqlite3_finalize(q);
	return n;
}

static int sq_expire(struct store *base, uint64_t before_ns)
{
	static const char *const sql[] = {
		"DELETE FROM cgroup_totals WHERE last_seen_ns < ?1",
		"DELETE FROM probe_totals WHERE last_seen_ns < ?1",
		"DELETE FROM truncation_totals WHERE last_seen_ns < ?1",
		"DELETE FROM agents WHERE last_push_ns < ?1",
	};
	struct sqlite_store *s = ss(base);
	int ret = 0;

	pthread_mutex_lock(&s->wlock);
	if (run(stmt(s, ST_BEGIN)))
		ret = -EIO;
	for (size_t i = 0; !ret && i < sizeof(sql) / sizeof(sql[0]); i++)
		if (change(s, sql[i], (int64_t)before_ns, 0) < 0)
			ret = -EIO;
	if (!ret && run(stmt(s, ST_COMMIT)))
		ret = -EIO;
	if (ret)
		run(stmt(s, ST_ROLLBACK));
	pthread_mutex_unlock(&s->wlock);
	return ret;
}

/*
 * One step of retention inside a transaction: the first kind of old row
 * there is, at most @max of them; *@more when there may be more to do.
 * Raw rows of a batch go before its batches row, whose deletion raises
 * the agent's retired_seq. Last, interned stacks no row refers to any
 * more are dropped, a chunk of ids at a time.
 */
static int64_t retention_step(struct sqlite_store *s, int64_t before, int64_t max, bool *more)
{
	static const char *const sql[] = {
		"DELETE FROM stack_samples WHERE rowid IN (SELECT rowid FROM stack_samples"
		" WHERE bucket_start < ?1 LIMIT ?2)",
		"DELETE FROM counter_samples WHERE rowid IN (SELECT c.rowid FROM batches b"
		" JOIN counter_samples c USING(agent_id, seq) WHERE b.received_ns < ?1 LIMIT ?2)",
		"DELETE FROM probe_samples WHERE rowid IN (SELECT p.rowid FROM batches b"
		" JOIN probe_samples p USING(agent_id, seq) WHERE b.received_ns < ?1 LIMIT ?2)",
		"DELETE FROM cgroups WHERE rowid IN (SELECT rowid FROM cgroups"
		" WHERE last_seen_ns < ?1 LIMIT ?2)",
	};
	int64_t n, last;

	*more = true;
	for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		n = change(s, sql[i], before, max);
		if (n != 0) {
			if (i == 0 && n > 0 && s->prune_cursor < 0)
				s->prune_cursor = 0;
			return n;
		}
	}
	n = change(s,
		   "UPDATE agents SET retired_seq = max(retired_seq, (SELECT max(seq) FROM batches b"
		   " WHERE b.agent_id = agents.agent_id AND b.received_ns < ?1))"
		   " WHERE agent_id IN (SELECT agent_id FROM batches WHERE received_ns < ?1)",
		   before, 0);
	if (n < 0)
		return n;
	n = change(s,
		   "DELETE FROM batches WHERE rowid IN (SELECT rowid FROM batches"
		   " WHERE received_ns < ?1 LIMIT ?2)",
		   before, max);
	if (n != 0)
		return n;
	if (s->prune_cursor < 0) {
		*more = false;
		return 0;
	}
	last = one_int(s->db, "SELECT ifnull(max(id), 0) FROM stacks");
	n = change(s,
		   "DELETE FROM stacks WHERE id >= ?1 AND id < ?1 + ?2 AND NOT EXISTS"
		   " (SELECT 1 FROM stack_samples WHERE stack_id = stacks.id)",
		   s->prune_cursor, PRUNE_CHUNK);
	if (n < 0)
		return n;
	s->prune_cursor += PRUNE_CHUNK;
	if (last < 0 || s->prune_cursor > last) {
		s->prune_cursor = -1;
		*more = false;
	}
	return n;
}

static int sq_retention(struct store *base, uint64_t before_ns, size_t max_rows, size_t *deleted)
{
	struct sqlite_store *s = ss(base);
	bool more = false;
	int64_t n;

	*deleted = 0;
	pthread_mutex_lock(&s->wlock);
	if (run(stmt(s, ST_BEGIN))) {
		pthread_mutex_unlock(&s->wlock);
		return -EIO;
	}
	n = retention_step(s, before_ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)before_ns,
			   max_rows > (size_t)INT32_MAX ? INT32_MAX : (int64_t)max_rows, &more);
	if (n < 0 || run(stmt(s, ST_COMMIT))) {
		run(stmt(s, ST_ROLLBACK));
		pthread_mutex_unlock(&s->wlock);
		return -EIO;
	}
	pthread_mutex_unlock(&s->wlock);
	*deleted = (size_t)n;
	return more;
}

static uint64_t file_size(const char *path, const char *suffix)
{
	char p[4096];
	struct stat st;

	if ((size_t)snprintf(p, sizeof(p), "%s%s", path, suffix) >= sizeof(p) || stat(p, &st))
		return 0;
	return (uint64_t)st.st_size;
}

static void sq_stats(struct store *base, struct store_stats *out)
{
	struct sqlite_store *s = ss(base);

	out->bytes = file_size(s->path, "") + file_size(s->path, "-wal");
}

const struct store_ops store_sqlite_ops = {
	.name = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.put_many = sq_put_many,
	.load = sq_load,
	.expire = sq_expire,
	.retention = sq_retention,
	.stacks = sq_stacks,
	.module = sq_module,
	.latency_rows = sq_latency_rows,
	.series = sq_series,
	.stats = sq_stats,
};

