/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_STORE_SQLITE_INTERNAL_H
#define CGPERF_EXPORTER_STORE_SQLITE_INTERNAL_H

/*
 * Shared by the SQLite store's files (the design note is at the head
 * of store_sqlite.c): store_sqlite.c opens, migrates and closes the
 * database, expires and retains; store_sqlite_put.c writes batches (the
 * writer connection, under wlock); store_sqlite_read.c loads the totals at
 * start and answers the stacks and module queries (the reader, under
 * rlock); store_sqlite_heat.c and store_sqlite_series.c answer the heat
 * map and the counter series (the reader too). Not an interface for anything else: store.h is.
 */

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lib/hist.h"
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
	ST_TRUNCATED,
	ST_N
};

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
};

static inline struct sqlite_store *ss(struct store *s)
{
	return (struct sqlite_store *)s;
}

static inline sqlite3_stmt *stmt(struct sqlite_store *s, enum stmt i)
{
	sqlite3_reset(s->st[i]);
	sqlite3_clear_bindings(s->st[i]);
	return s->st[i];
}

static inline void bind_text(sqlite3_stmt *q, int i, const char *v)
{
	sqlite3_bind_text(q, i, v ? v : "", -1, SQLITE_STATIC);
}

static inline void bind_u64(sqlite3_stmt *q, int i, uint64_t v)
{
	sqlite3_bind_int64(q, i, v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* @a + @b, both at most INT64_MAX, saturated at INT64_MAX: what the SQL
 * sums above store. */
static inline uint64_t sat_add63(uint64_t a, uint64_t b)
{
	return a > INT64_MAX - (b > INT64_MAX ? INT64_MAX : b) ? INT64_MAX : a + b;
}

static inline uint64_t col_u64(sqlite3_stmt *q, int i)
{
	int64_t v = sqlite3_column_int64(q, i);

	return v < 0 ? 0 : (uint64_t)v;
}

/* A total() column: exact below 2^53, saturated at INT64_MAX above. */
static inline uint64_t col_sum(sqlite3_stmt *q, int i)
{
	double v = sqlite3_column_double(q, i);

	return v <= 0 ? 0 : v >= 9223372036854775807.0 ? INT64_MAX : (uint64_t)v;
}

static inline const char *col(sqlite3_stmt *q, int i)
{
	const unsigned char *t = sqlite3_column_text(q, i);

	return t ? (const char *)t : "";
}

/* Step a statement that returns no rows, then reset it. 0 or -EIO. */
static inline int run(sqlite3_stmt *q)
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
static inline int one_row(sqlite3_stmt *q, int64_t *v)
{
	int rc = sqlite3_step(q);

	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(q, 0);
	sqlite3_reset(q);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -EIO;
}

/* ---- histograms as blobs (store_sqlite.c) ---- */

#define HIST_WORDS STORE_HIST_WORDS

/* 0, or -EINVAL for a blob of the wrong size (left as an empty histogram). */
int sq_hist_unpack(const void *blob, int len, struct hist *h);
/* Bind @h as a blob, packed into @buf (HIST_WORDS * 8 bytes, kept until
 * the statement runs); NULL when empty. */
void sq_bind_hist(sqlite3_stmt *q, int i, const struct hist *h, uint8_t *buf);

/* ---- queries (store_sqlite_read.c) ---- */

/* Bind parameter @name (":host", "?4") of @q to @v, or NULL when @v is
 * NULL or ""; nothing when @q has no such parameter. */
void sq_bind_opt(sqlite3_stmt *q, const char *name, const char *v);

/* ---- the ops (store_sqlite_put.c, store_sqlite_read.c) ---- */

int sq_put_many(struct store *base, const Cgperf__V1__Batch *const *m, size_t n,
		uint64_t received_ns, int *results, char *err, size_t errlen);
int sq_load(struct store *base, const struct store_visitor *v);
int sq_stacks(struct store *base, const struct store_selection *sel,
	      int (*fn)(void *arg, const struct store_stack *st), void *arg);
int sq_module(struct store *base, int64_t id, struct store_module *out);
/* store_sqlite_heat.c */
int sq_latency_rows(struct store *base, const struct store_selection *sel, const char *probe,
		    int (*fn)(void *arg, const struct store_latency_row *r), void *arg);
/* store_sqlite_series.c */
int sq_series(struct store *base, const struct store_selection *sel, uint64_t step_ns, size_t top,
	      int (*fn)(void *arg, const struct store_series_row *r), void *arg);

#endif
