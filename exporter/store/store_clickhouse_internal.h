/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_STORE_CLICKHOUSE_INTERNAL_H
#define CGPERF_EXPORTER_STORE_CLICKHOUSE_INTERNAL_H

/*
 * Shared by the ClickHouse store's files (the design note is at the head
 * of store_clickhouse.c): store_clickhouse.c opens, closes and holds the
 * tables' DDL; store_clickhouse_schema.c checks versions and makes the
 * tables on every shard; store_clickhouse_http.c talks to the servers
 * (libcurl) and reads and writes TabSeparated text;
 * store_clickhouse_put.c writes batches; store_clickhouse_read.c loads the
 * totals and answers the queries; store_clickhouse_expire.c records what
 * expiry and retention forget. Not an interface for anything else:
 * store.h is.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter/page.h"
#include "exporter/store/store.h"

/* Stack sample counts are summed per bucket of this many ns (as SQLite). */
#define CH_BUCKET_NS 60000000000ull
/* What one answer of the server may take in memory: errors and inserts
 * answer a line; a query's rows are capped here. */
#define CH_ANSWER_MAX ((size_t)1 << 30)
/* Stack and module keys known to be in the cluster, at most: past it they
 * are sent again (harmless: their tables replace by key). */
#define CH_KNOWN_MAX 1000000u

struct hashmap;

/* One HTTP connection to a server (libcurl easy handle, kept alive
 * between statements), one user at a time. */
struct ch_conn {
	void *curl; /* CURL * */
	const char *url; /* base URL, without a trailing '/'; borrowed from the store */
	pthread_mutex_t lock;
};

/* Statements a put() sends at the same time, at most: one per table it
 * writes before the batches rows. */
#define CH_PARALLEL_MAX 6

struct ch_store {
	struct store base;
	/* The settings, held in one block (settings) that ch_close() frees: */
	const char *url;     /* base URL without a trailing '/' */
	const char *db;      /* database name (checked: [A-Za-z0-9_]) */
	const char *cluster; /* NULL: one server */
	const char *user, *password; /* NULL: none given */
	char *settings;
	struct ch_conn w, r; /* writer (put, retention), reader (queries) */
	/* The writer's extra connections: a put() sends its tables' INSERTs
	 * over them at once (store_clickhouse_http.c ch_run_parallel);
	 * npar 0: one after the other on w. Under w.lock. */
	struct ch_conn par[CH_PARALLEL_MAX];
	size_t npar;
	void *multi; /* CURLM * driving them: its connection cache keeps them alive */
	/* --clickhouse-shard-urls: every shard's own HTTP interface, where
	 * the local tables are made and retention drops partitions
	 * (store_clickhouse_schema.c); under w.lock. */
	char **shard_urls;
	struct ch_conn *shards;
	size_t nshards;
	uint64_t retained_ns; /* the retention cutoff last recorded; under w.lock */
	struct hashmap *known; /* stack hashes and module ids inserted, under w.lock */
	/* Insert ids: hash_mix64(ins_seed + ++ins_count), one per batch
	 * written, unique across exporters (a random seed); under w.lock. */
	uint64_t ins_seed, ins_count;
};

static inline struct ch_store *chs(struct store *s)
{
	return (struct ch_store *)s;
}

/* The tables, by what they hold; written and read under their plain name
 * (a Distributed table over NAME_local when there is a cluster). */
enum ch_table { CT_BATCHES, CT_CGROUPS, CT_COUNTERS, CT_SAMPLES, CT_STACKS, CT_MODULES, CT_PROBES,
		CT_EXPIRY, CT_N };
extern const char *const ch_table_name[CT_N];

/* ---- store_clickhouse_http.c ---- */

/* @c to the server at @url (NULL: s->url). */
int ch_conn_init(struct ch_store *s, struct ch_conn *c, const char *url);
void ch_conn_release(struct ch_conn *c);

/*
 * Run @sql on the server over @c (its lock is the caller's); with @body
 * (@len bytes, TabSeparated rows) @sql is an INSERT ... FORMAT
 * TabSeparated and the rows its data. The answer goes to @out when not
 * NULL. 0; -EAGAIN when the server cannot be reached or says it is
 * overloaded or a shard is down (try again later); -EIO for any other
 * error; the reason in @err.
 */
int ch_run(struct ch_store *s, struct ch_conn *c, const char *sql, const char *body, size_t len,
	   struct page *out, char *err, size_t errlen);

/*
 * ch_run() of the INSERTs @sql[i] with rows @body[i] (@len[i] bytes), at
 * most s->npar of them, all at once over s->par (w.lock is the caller's).
 * 0 when every one succeeded, else the first failure's -errno and reason
 * (-EAGAIN wins: any unreachable server makes the whole try again).
 */
int ch_run_parallel(struct ch_store *s, const char *const *sql, const char *const *body,
		    const size_t *len, size_t n, char *err, size_t errlen);

/* The text of @p NUL-terminated (not counted in len), or NULL when an
 * append failed. */
char *ch_text(struct page *p);
/* @v as a TabSeparated field (\\, \t, \n, \r, \0 escaped). */
void ch_tsv(struct page *p, const char *v);
/* @v as a quoted SQL string literal. */
void ch_quote(struct page *p, const char *v);

/*
 * The next row of TabSeparated text at *@cur: its fields unescaped in
 * place into @f (at most @nf; missing ones ""), *@cur moved past it.
 * The number of fields read, or 0 at the end.
 */
size_t ch_row(char **cur, char **f, size_t nf);
uint64_t ch_u64(const char *s);
/* A TabSeparated Array(UInt64) "[1,2,3]" into @w (at most @n words);
 * the count read. */
size_t ch_words(const char *s, uint64_t *w, size_t n);

/* ---- store_clickhouse.c ---- */

/* Run @q's text on @c. */
int ch_run_page(struct ch_store *s, struct ch_conn *c, struct page *q, char *err, size_t errlen);
/* CREATE the database and every table on the server of @c if missing,
 * and ADD the columns an older table lacks. */
int ch_create_tables(struct ch_store *s, struct ch_conn *c, char *err, size_t errlen);

/* ---- store_clickhouse_schema.c: versions and shards ---- */

/* The schema this exporter writes; a database of a later one is refused. */
#define CH_SCHEMA_VERSION 3u
/* Check the schema version on the server and on every shard, create or
 * upgrade the tables there, and record the version. 0 or -errno with the
 * reason in @err (-EPROTO: the database is of a newer schema). */
int ch_schema_setup(struct ch_store *s, char *err, size_t errlen);
/* Split the comma-separated --clickhouse-shard-urls @list into
 * s->shard_urls and open a connection to each. */
int ch_shards_open(struct ch_store *s, const char *list, char *err, size_t errlen);
void ch_shards_close(struct ch_store *s);

/* ---- store_clickhouse_expire.c: series expiry and retention ---- */

int ch_expire(struct store *base, uint64_t before_ns);
int ch_retention(struct store *base, uint64_t before_ns, size_t max_rows, size_t *deleted);
/* The retention cutoff recorded in the cluster (0: none): stacks read
 * from it on. 0 or -errno. */
int ch_retained(struct ch_store *s, uint64_t *out);
/* SQL pieces that leave out what expiry forgot: a JOIN of the cutoffs of
 * kind @kind (see store_clickhouse_expire.c) on the columns @cols of the
 * subquery before it, and the WHERE that applies them on its column
 * @recv, into @q. */
void ch_expiry_join(struct ch_store *s, struct page *q, int kind, const char *cols,
		    const char *recv);

/* ---- the ops (store_clickhouse_put.c, store_clickhouse_read.c) ---- */

int ch_put_many(struct store *base, const Cgperf__V1__Batch *const *m, size_t n,
		uint64_t received_ns, int *res, char *err, size_t errlen);
int ch_load(struct store *base, const struct store_visitor *v);
int ch_stacks(struct store *base, const struct store_selection *sel,
	      int (*fn)(void *arg, const struct store_stack *st), void *arg);
int ch_module(struct store *base, int64_t id, struct store_module *out);
/* Run @sql (FORMAT TabSeparated) on the reader, @row for each row of @nf
 * fields (store_clickhouse_read.c); a non-zero return stops and is returned. */
int ch_select(struct ch_store *s, const char *sql, size_t nf, int (*row)(void *arg, char **f),
	      void *arg);
/* " AND ..." clauses of @sel's host, cgroup (path) and event, and of its
 * container and pod (through the cgroups table), for a query of a table
 * with host, path and event columns, into @q. */
void ch_where_selection(struct ch_store *s, struct page *q, const struct store_selection *sel);
/* A cgroups column's last non-empty value (GROUP BY host, path). */
#define CH_LAST_SET(col) "argMaxIf(" col ", last_seen_ns, " col " != '')"
/* store_clickhouse_heat.c */
int ch_latency_rows(struct store *base, const struct store_selection *sel, const char *probe,
		    int (*fn)(void *arg, const struct store_latency_row *r), void *arg);
/* store_clickhouse_series.c: the query of store_series() (steps from
 * @kept, the retention cutoff, on), and the call */
void ch_series_sql(struct ch_store *s, const struct store_selection *sel, uint64_t kept,
		   uint64_t step_ns, size_t top, struct page *q);
int ch_series(struct store *base, const struct store_selection *sel, uint64_t step_ns, size_t top,
	      int (*fn)(void *arg, const struct store_series_row *r), void *arg);

#endif
