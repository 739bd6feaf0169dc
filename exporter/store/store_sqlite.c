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
 * their series expire: cgroup_totals, probe_totals, agents; cgroups keeps
 * identities (for selections by container and pod) until retention.
 *
 * Counter totals are REAL sums of store_scaled() values added in commit
 * order, which is the order the exporter's in-memory totals add them, so a
 * restart reloads bit-identical values.
 *
 * Schema versions (PRAGMA user_version): 0 and no tables = new; 0 with
 * tables = the first slice (stack_samples without rates, no totals),
 * migrated in place; 2 = frames' modules by frame name, stacks without
 * modules (the column is added); 3 = this file's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wire/wire.h"
#include "exporter/store/store.h"

/*
 * Integer sums in SQL saturate here, as sat_add() does in C and totals.c
 * does in memory: SQLite turns an overflowing integer sum into a REAL (and
 * sum() fails with "integer overflow"), which would read back as a
 * different number than the one /metrics showed before a restart.
 */
#define I64_MAX "9223372036854775807"
/* Stack sample counts are summed per bucket of this many ns. */
#define BUCKET_NS 60000000000ull
#define SCHEMA_VERSION 3
/* Interned stacks checked for being unreferenced per retention call. */
#define PRUNE_CHUNK 2000

enum stmt {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_SAVEPOINT,
	ST_RELEASE,
	ST_ROLLBACK_TO,
	ST_RETIRED,
	ST_BATCH,
	ST_CGROUP,
	ST_COUNTER,
	ST_COUNTER_TOTAL,
	ST_STACK_INTERN,
	ST_STACK_ID,
	ST_STACK_SAMPLE,
	ST_MODULE_INTERN,
	ST_MODULE_ID,
	ST_PROBE,
	ST_PROBE_GET,
	ST_PROBE_TOTAL,
	ST_AGENT,
	ST_N
};

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
		      " k8s_namespace, pod_name, container_name, unit, slice, last_seen_ns)"
		      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
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
	" slice TEXT NOT NULL, last_seen_ns INTEGER NOT NULL, PRIMARY KEY(host, path));"
	"CREATE TABLE IF NOT EXISTS cgroup_totals(host TEXT NOT NULL, path TEXT NOT NULL,"
	" event TEXT NOT NULL, total REAL NOT NULL, last_seen_ns INTEGER NOT NULL,"
	" PRIMARY KEY(host, path, event));"
	"CREATE TABLE IF NOT EXISTS probe_totals(host TEXT NOT NULL, path TEXT NOT NULL,"
	" label TEXT NOT NULL, hits INTEGER NOT NULL, vals BLOB, latency BLOB,"
	" last_seen_ns INTEGER NOT NULL, PRIMARY KEY(host, path, label));"
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

struct sqlite_store {
	struct store base;
	char *path;
	pthread_mutex_t wlock, rlock;
	sqlite3 *db;  /* writer */
	sqlite3 *rdb; /* reader */
	sqlite3_stmt *st[ST_N];
	sqlite3_stmt *module_q; /* on the reader */
	char *folded; /* scratch for folding a stack */
	size_t folded_cap;
	int64_t prune_cursor; /* next stacks.id to check; -1 none pending */
	uint64_t stack_rows, deleted_rows;
};

static struct sqlite_store *ss(struct store *s)
{
	return (struct sqlite_store *)s;
}

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
			   " c.container_id, '', c.pod_uid, '', '', '', '', c.unit, '', b.received_ns"
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

static struct store *sq_open(const char *dir, char *err, size_t errlen)
{
	struct sqlite_store *s;
	int ret;

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

static sqlite3_stmt *stmt(struct sqlite_store *s, enum stmt i)
{
	sqlite3_reset(s->st[i]);
	sqlite3_clear_bindings(s->st[i]);
	return s->st[i];
}

static void bind_text(sqlite3_stmt *q, int i, const char *v)
{
	sqlite3_bind_text(q, i, v ? v : "", -1, SQLITE_STATIC);
}

static void bind_u64(sqlite3_stmt *q, int i, uint64_t v)
{
	sqlite3_bind_int64(q, i, v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* @a + @b, both at most INT64_MAX, saturated at INT64_MAX: what the SQL
 * sums above store. */
static uint64_t sat_add63(uint64_t a, uint64_t b)
{
	return a > INT64_MAX - (b > INT64_MAX ? INT64_MAX : b) ? INT64_MAX : a + b;
}

static uint64_t col_u64(sqlite3_stmt *q, int i)
{
	int64_t v = sqlite3_column_int64(q, i);

	return v < 0 ? 0 : (uint64_t)v;
}

/* A total() column: exact below 2^53, saturated at INT64_MAX above. */
static uint64_t col_sum(sqlite3_stmt *q, int i)
{
	double v = sqlite3_column_double(q, i);

	return v <= 0 ? 0 : v >= 9223372036854775807.0 ? INT64_MAX : (uint64_t)v;
}

static const char *col(sqlite3_stmt *q, int i)
{
	const unsigned char *t = sqlite3_column_text(q, i);

	return t ? (const char *)t : "";
}

/* Step a statement that returns no rows, then reset it. 0 or -EIO. */
static int run(sqlite3_stmt *q)
{
	int rc = sqlite3_step(q);

	sqlite3_reset(q);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

/*
 * The first column of the one row @q returns, as an integer, and @q reset:
 * 1 and *@v set, 0 when there is no row, or -EIO. A statement left on a row
 * keeps its connection's read transaction open past COMMIT, and in WAL
 * mode that open snapshot stops every checkpoint from recycling the log:
 * the -wal file then grows with every batch until the disk is full.
 */
static int one_row(sqlite3_stmt *q, int64_t *v)
{
	int rc = sqlite3_step(q);

	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(q, 0);
	sqlite3_reset(q);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -EIO;
}

/* ---- histograms as blobs: count, negative, sum, min, max, 65 buckets, LE ---- */

#define HIST_WORDS (5 + HIST_BUCKETS)

static void hist_pack(const struct hist *h, uint8_t out[HIST_WORDS * 8])
{
	uint64_t w[HIST_WORDS] = { h->count, h->negative, h->sum, h->min, h->max };

	memcpy(w + 5, h->b, sizeof(h->b));
	for (size_t i = 0; i < HIST_WORDS; i++)
		for (int k = 0; k < 8; k++)
			out[i * 8 + (size_t)k] = (uint8_t)(w[i] >> (8 * k));
}

/* 0, or -EINVAL for a blob of the wrong size (left as an empty histogram). */
static int hist_unpack(const void *blob, int len, struct hist *h)
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
	h->count = w[0];
	h->negative = w[1];
	h->sum = w[2];
	h->min = w[3];
	h->max = w[4];
	memcpy(h->b, w + 5, sizeof(h->b));
	return 0;
}

static void bind_hist(sqlite3_stmt *q, int i, const struct hist *h, uint8_t *buf)
{
	if (!h->count) {
		sqlite3_bind_null(q, i);
		return;
	}
	hist_pack(h, buf);
	sqlite3_bind_blob(q, i, buf, HIST_WORDS * 8, SQLITE_STATIC);
}

/* ---- put ---- */

/* Fold @st's frames root first into s->folded ("a;b;c"). 0 or -ENOMEM. */
static int fold(struct sqlite_store *s, const Cgperf__V1__Batch *m, const Cgperf__V1__Stack *st)
{
	size_t need = 1, off = 0;

	for (size_t i = 0; i < st->n_frames; i++)
		need += strlen(wire_string(m, st->frames[i])) + 1;
	if (need > s->folded_cap) {
		char *p = realloc(s->folded, need);

		if (!p)
			return -ENOMEM;
		s->folded = p;
		s->folded_cap = need;
	}
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

	if (need > pc->mods_cap) {
		char *p = realloc(pc->mods, need);

		if (!p)
			return -ENOMEM;
		pc->mods = p;
		pc->mods_cap = need;
	}
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
	s->stack_rows++;
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
		bind_hist(q, 7, &v, vb);
		bind_hist(q, 8, &l, lb);
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
			hist_unpack(sqlite3_column_blob(q, 1), sqlite3_column_bytes(q, 1), &tv);
			hist_unpack(sqlite3_column_blob(q, 2), sqlite3_column_bytes(q, 2), &tl);
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
		bind_hist(q, 5, &tv, vb);
		bind_hist(q, 6, &tl, lb);
		bind_u64(q, 7, now);
		if (run(q))
			return -EIO;
	}
	return 0;
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

static int sq_put(struct store *base, const Cgperf__V1__Batch *m, uint64_t received_ns, char *err,
		  size_t errlen)
{
	struct sqlite_store *s = ss(base);
	int ret;

	pthread_mutex_lock(&s->wlock);
	if (run(stmt(s, ST_BEGIN))) {
		snprintf(err, errlen, "begin: %s", sqlite3_errmsg(s->db));
		pthread_mutex_unlock(&s->wlock);
		return -EIO;
	}
	ret = put_one(s, m, received_ns);
	if (ret)
		goto err_rollback;
	if (run(stmt(s, ST_COMMIT))) {
		ret = -EIO;
		goto err_rollback;
	}
	pthread_mutex_unlock(&s->wlock);
	return 0;

err_rollback:
	if (ret < 0)
		snprintf(err, errlen, "%s", ret == -ENOMEM ? "out of memory" : sqlite3_errmsg(s->db));
	run(stmt(s, ST_ROLLBACK));
	pthread_mutex_unlock(&s->wlock);
	return ret;
}

/*
 * Group commit: one transaction, one fsync, for @n batches, each inside its
 * own savepoint so that one that fails (or is a duplicate) leaves nothing
 * and the others are still stored.
 */
static int sq_put_many(struct store *base, const Cgperf__V1__Batch *const *m, size_t n,
		       uint64_t received_ns, int *res, char *err, size_t errlen)
{
	struct sqlite_store *s = ss(base);
	char reason[256] = ""; /* of a failure of the whole transaction */
	int ret = 0;

	pthread_mutex_lock(&s->wlock);
	if (run(stmt(s, ST_BEGIN))) {
		snprintf(reason, sizeof(reason), "begin: %s", sqlite3_errmsg(s->db));
		ret = -EIO;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char *why = err + i * errlen;

		if (run(stmt(s, ST_SAVEPOINT))) {
			res[i] = -EIO;
			snprintf(why, errlen, "savepoint: %s", sqlite3_errmsg(s->db));
			continue;
		}
		res[i] = put_one(s, m[i], received_ns);
		/* The reason before the rollback's own status replaces it. */
		if (res[i] < 0)
			snprintf(why, errlen, "%s",
				 res[i] == -ENOMEM ? "out of memory" : sqlite3_errmsg(s->db));
		if (res[i] && run(stmt(s, ST_ROLLBACK_TO)))
			ret = -EIO; /* the transaction cannot be trusted */
		if (!ret && run(stmt(s, ST_RELEASE)))
			ret = -EIO;
		if (ret) {
			snprintf(reason, sizeof(reason), "savepoint: %s", sqlite3_errmsg(s->db));
			break;
		}
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
	pthread_mutex_unlock(&s->wlock);
	return ret;
}

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

	hist_unpack(sqlite3_column_blob(q, 4), sqlite3_column_bytes(q, 4), &t.values);
	hist_unpack(sqlite3_column_blob(q, 5), sqlite3_column_bytes(q, 5), &t.latency_ns);
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

static int sq_load(struct store *base, const struct store_visitor *v)
{
	struct sqlite_store *s = ss(base);
	int ret = 0;

	/* The writer's connection: nothing else runs at start. */
	pthread_mutex_lock(&s->wlock);
	if (v->cgroup)
		ret = walk(s->db,
			   "SELECT host, path, cgroup_id, container_id, runtime, pod_uid, qos,"
			   " k8s_namespace, pod_name, container_name, unit, slice, last_seen_ns"
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
	pthread_mutex_unlock(&s->wlock);
	return ret;
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
	s->deleted_rows += (uint64_t)n;
	pthread_mutex_unlock(&s->wlock);
	*deleted = (size_t)n;
	return more;
}

/* ---- queries ---- */

static void bind_opt(sqlite3_stmt *q, const char *name, const char *v)
{
	int i = sqlite3_bind_parameter_index(q, name);

	if (!i)
		return;
	if (v && *v)
		sqlite3_bind_text(q, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, i);
}

static int sq_stacks(struct store *base, const struct store_selection *sel,
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
	sqlite3_bind_int64(q, sqlite3_bind_parameter_index(q, ":from"),
			   from > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)from);
	sqlite3_bind_int64(q, sqlite3_bind_parameter_index(q, ":to"),
			   sel->to_ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)sel->to_ns);
	bind_opt(q, ":host", sel->host);
	bind_opt(q, ":cgroup", sel->cgroup);
	bind_opt(q, ":event", sel->event);
	bind_opt(q, ":container", sel->container);
	bind_opt(q, ":pod", sel->pod);
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

static int sq_module(struct store *base, int64_t id, struct store_module *out)
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
	pthread_mutex_lock(&s->wlock);
	out->stack_rows = s->stack_rows;
	out->deleted_rows = s->deleted_rows;
	pthread_mutex_unlock(&s->wlock);
}

const struct store_ops store_sqlite_ops = {
	.name = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.put = sq_put,
	.put_many = sq_put_many,
	.load = sq_load,
	.expire = sq_expire,
	.retention = sq_retention,
	.stacks = sq_stacks,
	.module = sq_module,
	.stats = sq_stats,
};
