/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_STORE_CLICKHOUSE_INTERNAL_H
#define CGPERF_EXPORTER_STORE_CLICKHOUSE_INTERNAL_H

/*
 * Shared by the ClickHouse store's files (the design note is at the head
 * of store_clickhouse.c): store_clickhouse.c opens (schema), closes,
 * retains; store_clickhouse_http.c talks to the server (libcurl) and reads
 * and writes TabSeparated text; store_clickhouse_put.c writes batches;
 * store_clickhouse_read.c loads the totals and answers the queries. Not an
 * interface for anything else: store.h is.
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

/* One HTTP connection to the server (libcurl easy handle), one user at a
 * time. */
struct ch_conn {
	void *curl; /* CURL * */
	pthread_mutex_t lock;
};

struct ch_store {
	struct store base;
	char *url;     /* base URL without a trailing '/' */
	char *db;      /* database name (checked: [A-Za-z0-9_]) */
	char *cluster; /* NULL: one server */
	char *user, *password;
	struct ch_conn w, r; /* writer (put, retention), reader (queries) */
	struct hashmap *known; /* stack hashes and module ids inserted, under w.lock */
	uint64_t stack_rows, deleted_rows; /* under w.lock */
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
		CT_N };
extern const char *const ch_table_name[CT_N];

/* ---- store_clickhouse_http.c ---- */

int ch_conn_init(struct ch_store *s, struct ch_conn *c);
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

/* ---- the ops (store_clickhouse_put.c, store_clickhouse_read.c) ---- */

int ch_put_many(struct store *base, const Cgperf__V1__Batch *const *m, size_t n,
		uint64_t received_ns, int *res, char *err, size_t errlen);
int ch_put(struct store *base, const Cgperf__V1__Batch *m, uint64_t received_ns, char *err,
	   size_t errlen);
int ch_load(struct store *base, const struct store_visitor *v);
int ch_stacks(struct store *base, const struct store_selection *sel,
	      int (*fn)(void *arg, const struct store_stack *st), void *arg);
int ch_module(struct store *base, int64_t id, struct store_module *out);
/* Run @sql (FORMAT TabSeparated) on the reader, @row for each row of @nf
 * fields (store_clickhouse_read.c); a non-zero return stops and is returned. */
int ch_select(struct ch_store *s, const char *sql, size_t nf, int (*row)(void *arg, char **f),
	      void *arg);
/* store_clickhouse_heat.c */
int ch_latency_rows(struct store *base, const struct store_selection *sel, const char *probe,
		    int (*fn)(void *arg, const struct store_latency_row *r), void *arg);

#endif
