// SPDX-License-Identifier: MIT
#include "exporter/store.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/wire.h"

/* Stack sample counts are summed per bucket of this many ns. */
#define STORE_BUCKET_NS 60000000000ull

enum stmt {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_BATCH,
	ST_COUNTER,
	ST_STACK_INTERN,
	ST_STACK_ID,
	ST_STACK_SAMPLE,
	ST_N
};

static const char *const stmt_sql[ST_N] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_BATCH] = "INSERT OR IGNORE INTO batches(agent_id, seq, host, start_ns, end_ns, "
		     "received_ns) VALUES (?, ?, ?, ?, ?, ?)",
	[ST_COUNTER] = "INSERT INTO counter_samples(host, agent_id, seq, cgroup_path, "
		       "container_id, pod_uid, unit, event, value, time_enabled, time_running, "
		       "supported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[ST_STACK_INTERN] = "INSERT OR IGNORE INTO stacks(folded) VALUES (?)",
	[ST_STACK_ID] = "SELECT id FROM stacks WHERE folded = ?",
	[ST_STACK_SAMPLE] = "INSERT INTO stack_samples(bucket_start, host, cgroup_path, event, "
			    "stack_id, count) VALUES (?, ?, ?, ?, ?, ?) "
			    "ON CONFLICT DO UPDATE SET count = count + excluded.count",
};

static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=FULL;"
	"CREATE TABLE IF NOT EXISTS batches(agent_id TEXT NOT NULL, seq INTEGER NOT NULL,"
	" host TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
	" received_ns INTEGER NOT NULL, PRIMARY KEY(agent_id, seq));"
	"CREATE TABLE IF NOT EXISTS counter_samples(host TEXT NOT NULL, agent_id TEXT NOT NULL,"
	" seq INTEGER NOT NULL, cgroup_path TEXT NOT NULL, container_id TEXT NOT NULL,"
	" pod_uid TEXT NOT NULL, unit TEXT NOT NULL, event TEXT NOT NULL, value INTEGER NOT NULL,"
	" time_enabled INTEGER NOT NULL, time_running INTEGER NOT NULL,"
	" supported INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY, folded TEXT NOT NULL UNIQUE);"
	"CREATE TABLE IF NOT EXISTS stack_samples(bucket_start INTEGER NOT NULL,"
	" host TEXT NOT NULL, cgroup_path TEXT NOT NULL, event TEXT NOT NULL,"
	" stack_id INTEGER NOT NULL REFERENCES stacks(id), count INTEGER NOT NULL,"
	" PRIMARY KEY(bucket_start, host, cgroup_path, event, stack_id));";

struct store {
	sqlite3 *db;
	sqlite3_stmt *st[ST_N];
	char *folded; /* scratch for folding a stack */
	size_t folded_cap;
};

void store_close(struct store *s)
{
	if (!s)
		return;
	for (int i = 0; i < ST_N; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_close(s->db);
	free(s->folded);
	free(s);
}

struct store *store_open(const char *dir, char *err, size_t errlen)
{
	struct store *s;
	char *path = NULL;
	char *msg = NULL;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (asprintf(&path, "%s/cgperf.db", dir) < 0) {
		path = NULL;
		errno = ENOMEM;
		goto err_free;
	}
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
						 SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s: %s", path,
			 s->db ? sqlite3_errmsg(s->db) : "out of memory");
		errno = EIO;
		goto err_free;
	}
	sqlite3_busy_timeout(s->db, 5000);
	if (sqlite3_exec(s->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, msg ? msg : "schema failed");
		sqlite3_free(msg);
		errno = EIO;
		goto err_free;
	}
	for (int i = 0; i < ST_N; i++) {
		if (sqlite3_prepare_v2(s->db, stmt_sql[i], -1, &s->st[i], NULL) != SQLITE_OK) {
			snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(s->db));
			errno = EIO;
			goto err_free;
		}
	}
	free(path);
	return s;

err_free:
	free(path);
	store_close(s);
	return NULL;
}

static sqlite3_stmt *stmt(struct store *s, enum stmt i)
{
	sqlite3_reset(s->st[i]);
	sqlite3_clear_bindings(s->st[i]);
	return s->st[i];
}

static void bind_text(sqlite3_stmt *q, int i, const char *v)
{
	sqlite3_bind_text(q, i, v, -1, SQLITE_STATIC);
}

/* Step a statement that returns no rows. 0 or -EIO. */
static int run(sqlite3_stmt *q)
{
	int rc = sqlite3_step(q);

	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

/* Fold @st's frames root first into s->folded ("a;b;c"). 0 or -ENOMEM. */
static int fold(struct store *s, const Cgperf__V1__Batch *m, const Cgperf__V1__Stack *st)
{
	size_t need = 1;

	for (size_t i = 0; i < st->n_frames; i++)
		need += strlen(wire_string(m, st->frames[i])) + 1;
	if (need > s->folded_cap) {
		char *p = realloc(s->folded, need);

		if (!p)
			return -ENOMEM;
		s->folded = p;
		s->folded_cap = need;
	}
	size_t off = 0;

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

static int put_stack(struct store *s, const Cgperf__V1__Batch *m, const char *path,
		     const char *event, const Cgperf__V1__Stack *st)
{
	sqlite3_stmt *q;
	int64_t id;
	int ret = fold(s, m, st);

	if (ret)
		return ret;
	q = stmt(s, ST_STACK_INTERN);
	bind_text(q, 1, s->folded);
	if (run(q))
		return -EIO;
	q = stmt(s, ST_STACK_ID);
	bind_text(q, 1, s->folded);
	if (sqlite3_step(q) != SQLITE_ROW)
		return -EIO;
	id = sqlite3_column_int64(q, 0);
	q = stmt(s, ST_STACK_SAMPLE);
	sqlite3_bind_int64(q, 1, (int64_t)(m->start_ns - m->start_ns % STORE_BUCKET_NS));
	bind_text(q, 2, m->host);
	bind_text(q, 3, path);
	bind_text(q, 4, event);
	sqlite3_bind_int64(q, 5, id);
	sqlite3_bind_int64(q, 6, (int64_t)st->count);
	return run(q);
}

static const char *cg_str(const Cgperf__V1__Batch *m, uint32_t cg, size_t field)
{
	const Cgperf__V1__Cgroup *c;

	if (cg >= m->n_cgroups)
		return "";
	c = m->cgroups[cg];
	switch (field) {
	case 0: return wire_string(m, c->path);
	case 1: return wire_string(m, c->container_id);
	case 2: return wire_string(m, c->pod_uid);
	default: return wire_string(m, c->unit);
	}
}

/* Everything of @m but the batches row, inside the open transaction. */
static int put_rows(struct store *s, const Cgperf__V1__Batch *m)
{
	for (size_t i = 0; i < m->n_counters; i++) {
		const Cgperf__V1__Counter *c = m->counters[i];
		sqlite3_stmt *q = stmt(s, ST_COUNTER);

		bind_text(q, 1, m->host);
		bind_text(q, 2, m->agent_id);
		sqlite3_bind_int64(q, 3, (int64_t)m->seq);
		for (size_t f = 0; f < 4; f++)
			bind_text(q, 4 + (int)f, cg_str(m, c->cgroup, f));
		bind_text(q, 8, wire_string(m, c->event));
		sqlite3_bind_int64(q, 9, (int64_t)c->value);
		sqlite3_bind_int64(q, 10, (int64_t)c->time_enabled);
		sqlite3_bind_int64(q, 11, (int64_t)c->time_running);
		sqlite3_bind_int(q, 12, c->supported ? 1 : 0);
		if (run(q))
			return -EIO;
	}
	for (size_t p = 0; p < m->n_profiles; p++) {
		const Cgperf__V1__Profile *pr = m->profiles[p];
		const char *path = cg_str(m, pr->cgroup, 0);
		const char *event = wire_string(m, pr->event);

		for (size_t i = 0; i < pr->n_stacks; i++) {
			int ret = put_stack(s, m, path, event, pr->stacks[i]);

			if (ret)
				return ret;
		}
	}
	return 0;
}

int store_put(struct store *s, const Cgperf__V1__Batch *m, uint64_t received_ns, char *err,
	      size_t errlen)
{
	sqlite3_stmt *q;
	int ret;

	if (run(stmt(s, ST_BEGIN))) {
		snprintf(err, errlen, "begin: %s", sqlite3_errmsg(s->db));
		return -EIO;
	}
	q = stmt(s, ST_BATCH);
	bind_text(q, 1, m->agent_id);
	sqlite3_bind_int64(q, 2, (int64_t)m->seq);
	bind_text(q, 3, m->host);
	sqlite3_bind_int64(q, 4, (int64_t)m->start_ns);
	sqlite3_bind_int64(q, 5, (int64_t)m->end_ns);
	sqlite3_bind_int64(q, 6, (int64_t)received_ns);
	if (run(q)) {
		ret = -EIO;
		goto err_rollback;
	}
	if (sqlite3_changes(s->db) == 0) {
		ret = 1;
		goto err_rollback;
	}
	ret = put_rows(s, m);
	if (ret)
		goto err_rollback;
	if (run(stmt(s, ST_COMMIT))) {
		ret = -EIO;
		goto err_rollback;
	}
	return 0;

err_rollback:
	if (ret < 0)
		snprintf(err, errlen, "%s", ret == -ENOMEM ? "out of memory" : sqlite3_errmsg(s->db));
	run(stmt(s, ST_ROLLBACK));
	return ret;
}

static const char *col(sqlite3_stmt *q, int i)
{
	const unsigned char *t = sqlite3_column_text(q, i);

	return t ? (const char *)t : "";
}

int store_each_counter(struct store *s, int (*fn)(void *arg, const struct store_counter *c),
		       void *arg)
{
	sqlite3_stmt *q;
	int rc, ret = 0;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT host, cgroup_path, container_id, pod_uid, unit, event, value,"
			       " time_enabled, time_running, supported FROM counter_samples"
			       " ORDER BY rowid",
			       -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_counter c = {
			.host = col(q, 0),
			.cgroup_path = col(q, 1),
			.container_id = col(q, 2),
			.pod_uid = col(q, 3),
			.unit = col(q, 4),
			.event = col(q, 5),
			.value = (uint64_t)sqlite3_column_int64(q, 6),
			.time_enabled = (uint64_t)sqlite3_column_int64(q, 7),
			.time_running = (uint64_t)sqlite3_column_int64(q, 8),
			.supported = sqlite3_column_int(q, 9),
		};

		ret = fn(arg, &c);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(q);
	return ret;
}
