// SPDX-License-Identifier: MIT
/*
 * The ClickHouse store: a server, or a cluster of shards, that several
 * exporters write to and read from, over ClickHouse's HTTP interface
 * (libcurl; no client library). Made to work with Debian's
 * clickhouse-server 18.16 and later: no TTL clause, no lightweight
 * deletes, no ON CLUSTER without ZooKeeper.
 *
 * Exactly once. An agent may send one batch to several exporters (its
 * fan-out), again after a timeout, or to another exporter after a
 * failover; any of these may reach the cluster twice, even at the same
 * moment through two exporters, and no exporter can know of the other's
 * write in time. So nothing is decided at write time; a put() asks first
 * which of its batches the cluster has and skips them (answered
 * "duplicate"), which saves space, and the reads cover the races it cannot
 * see, in two ways:
 *  - samples (the big table, read for every flame graph): each write of a
 *    batch carries an insert id "ins" (64 random-seeded bits, unique per
 *    write) on its rows and on its batches row, which goes last. A read
 *    takes, per batch, the smallest ins that batches holds (a complete
 *    write; a write that failed before its batches row is never one) and
 *    sums the samples rows of those ins directly: no GROUP BY per row.
 *    batches and samples share the sharding key, so each shard filters
 *    with its own batches_local. Copies stay on disk (plain MergeTree)
 *    until their day is dropped; they come from races only. (Measured
 *    on 18.16: 10 M rows in 0.6 s; bench/bench_exporter.sh.) batches
 *    replaces by (agent_id, seq) in its merges: the row it keeps is a
 *    complete write too.
 *  - counters and probes (small; the running totals): every row carries a
 *    row key, a 64-bit hash of (agent_id, seq, its index in the batch); a
 *    copy writes identical rows and the read collapses them by the row
 *    key with any() before it sums; ReplacingMergeTree ordered by a key
 *    that ends with the row key drops copies from disk in its merges.
 * A put() that fails half-way leaves rows that the agent's retry completes
 * under another ins, counted once.
 *
 * Tables (database --clickhouse-database, "cgperf" by default):
 *   batches   one row per write of a batch: its header, the agent's own
 *             figures and the write's insert id;
 *             the agents of /metrics and targets are summed from it
 *   cgroups   one row per cgroup per batch: identity and when seen;
 *             the last non-empty value of each field wins
 *   counters  raw counter values with their scaled value; the running
 *             totals of /metrics are their deduped sums
 *   probes    raw probe hits and histograms (Array(UInt64) words of
 *             lib/hist), merged in C after the dedupe
 *   samples   per (minute bucket, host, cgroup, event, rate, stack) a
 *             count, partitioned by day of bucket, ordered by bucket,
 *             host, cgroup: time-range and per-cgroup reads skip the rest
 *   stacks    folded text and frame modules, interned by a 64-bit FNV-1a
 *             hash of the text (ReplacingMergeTree by hash)
 *   modules   (path, build-id) by a 64-bit hash id
 *   expiry    what expiry and retention forgot (store_clickhouse_expire.c)
 *   cgperf_schema  the schema versions written, on each server
 *             (store_clickhouse_schema.c)
 * With --clickhouse-cluster each other is NAME_local on every shard plus a
 * Distributed table NAME over them (sharded by the batch key, or by the
 * intern key), written with insert_distributed_sync so that a 200 means
 * every shard has its rows. The tables are created on every server of
 * --clickhouse-shard-urls, else on the server the exporter talks to
 * (store_clickhouse_schema.c).
 *
 * Retention and series expiry are recorded in the expiry table and the
 * reads leave out what they forgot, so that answers equal SQLite's at
 * once and after restarts; retention also drops whole day partitions of
 * samples and cgroups (store_clickhouse_expire.c).
 *
 * Writes: a put() sends its tables' INSERTs at once over a few kept-alive
 * connections (one round trip instead of six), then the batches rows.
 */
#include "exporter/store/store_clickhouse_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/hashmap.h"
#include "lib/httpc.h"

const char *const ch_table_name[CT_N] = {
	[CT_BATCHES] = "batches", [CT_CGROUPS] = "cgroups", [CT_COUNTERS] = "counters",
	[CT_SAMPLES] = "samples", [CT_STACKS] = "stacks",   [CT_MODULES] = "modules",
	[CT_PROBES] = "probes",	  [CT_EXPIRY] = "expiry",
};

#define DAY_OF(col) "toDate(toDateTime(intDiv(" col ", 1000000000)))"
#define MONTH_OF(col) "toYYYYMM(toDateTime(intDiv(" col ", 1000000000)))"

/* Columns, engine and keys of each table; the sharding key of its
 * Distributed table. */
static const struct {
	const char *columns, *engine, *shard;
} table_def[CT_N] = {
	[CT_BATCHES] = {
		"agent_id String, seq UInt64, host String, version String, start_ns UInt64,"
		" end_ns UInt64, received_ns UInt64, stack_samples UInt64, samples UInt64,"
		" lost_samples UInt64, unwind_failures UInt64, push_failures UInt64,"
		" push_rejected UInt64, spool_dropped_batches UInt64, stacks_refused UInt64,"
		" spool_bytes UInt64, spool_batches UInt64, ins UInt64",
		"ReplacingMergeTree PARTITION BY " MONTH_OF("received_ns") " ORDER BY (agent_id, seq)",
		"cityHash64(agent_id, seq)",
	},
	[CT_CGROUPS] = {
		"host String, path String, cgroup_id UInt64, container_id String, runtime String,"
		" pod_uid String, qos String, k8s_namespace String, pod_name String,"
		" container_name String, unit String, slice String, last_seen_ns UInt64,"
		" image String",
		"MergeTree PARTITION BY " DAY_OF("last_seen_ns") " ORDER BY (host, path)",
		"cityHash64(host, path)",
	},
	[CT_COUNTERS] = {
		"agent_id String, seq UInt64, row UInt64, host String, path String, event String,"
		" value UInt64, time_enabled UInt64, time_running UInt64, supported UInt8,"
		" scaled Float64, received_ns UInt64",
		"ReplacingMergeTree PARTITION BY " MONTH_OF("received_ns")
		" ORDER BY (host, path, event, row)",
		"cityHash64(agent_id, seq)",
	},
	[CT_SAMPLES] = {
		"bucket UInt64, host String, path String, event String, frequency UInt64,"
		" period UInt64, stack UInt64, count UInt64, agent_id String, seq UInt64,"
		" ins UInt64",
		"MergeTree PARTITION BY " DAY_OF("bucket")
		" ORDER BY (bucket, host, path, event, stack)",
		"cityHash64(agent_id, seq)",
	},
	[CT_STACKS] = {
		"hash UInt64, folded String, modules String",
		"ReplacingMergeTree ORDER BY hash",
		"hash",
	},
	[CT_MODULES] = {
		"id UInt64, path String, build_id String",
		"ReplacingMergeTree ORDER BY id",
		"id",
	},
	[CT_PROBES] = {
		"agent_id String, seq UInt64, row UInt64, host String, path String, label String,"
		" hits UInt64, vals Array(UInt64), latency Array(UInt64), received_ns UInt64",
		"ReplacingMergeTree PARTITION BY " MONTH_OF("received_ns")
		" ORDER BY (host, path, label, row)",
		"cityHash64(agent_id, seq)",
	},
	[CT_EXPIRY] = { /* store_clickhouse_expire.c */
		"kind UInt8, host String, path String, name String, cutoff UInt64",
		"ReplacingMergeTree(cutoff) ORDER BY (kind, host, path, name)",
		"cityHash64(host, path)",
	},
};

static void ch_close(struct store *base)
{
	struct ch_store *s = chs(base);

	if (!s)
		return;
	ch_conn_release(&s->w);
	ch_conn_release(&s->r);
	for (size_t i = 0; i < s->npar; i++)
		ch_conn_release(&s->par[i]);
	curl_multi_cleanup(s->multi);
	ch_shards_close(s);
	hashmap_free(s->known);
	free(s->settings);
	free(s);
	curl_global_cleanup();
}

static bool ident_ok(const char *v)
{
	if (!*v || strlen(v) > 64)
		return false;
	for (; *v; v++)
		if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ||
		      (*v >= '0' && *v <= '9') || *v == '_'))
			return false;
	return true;
}

int ch_run_page(struct ch_store *s, struct ch_conn *c, struct page *q, char *err, size_t errlen)
{
	const char *sql = ch_text(q);

	if (!sql) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return ch_run(s, c, sql, NULL, 0, NULL, err, errlen);
}

/* Columns added after a table was first made: ADDed to an older table,
 * last, so rows keep the order of table_def. (ClickHouse before 19 has no
 * ADD COLUMN IF NOT EXISTS: system.columns is asked first.) */
static const struct {
	enum ch_table table;
	const char *name, *type;
} added_columns[] = {
	{ CT_CGROUPS, "image", "String" },
};

static int add_column(struct ch_store *s, struct ch_conn *c, struct page *q, const char *table,
		      size_t i, char *err, size_t errlen)
{
	struct page ans;
	int ret;

	page_init(&ans, 0);
	q->len = 0;
	page_printf(q, "SELECT count() FROM system.columns WHERE database = '%s' AND table = '%s'"
		       " AND name = '%s'", s->db, table, added_columns[i].name);
	ret = ch_text(q) ? ch_run(s, c, q->buf, NULL, 0, &ans, err, errlen) : -ENOMEM;
	if (!ret && ch_text(&ans) && ch_u64(ch_text(&ans)) == 0) {
		q->len = 0;
		page_printf(q, "ALTER TABLE %s.%s ADD COLUMN %s %s", s->db, table,
			    added_columns[i].name, added_columns[i].type);
		ret = ch_run_page(s, c, q, err, errlen);
	}
	page_release(&ans);
	return ret;
}

static int add_columns(struct ch_store *s, struct ch_conn *c, struct page *q, char *err,
		       size_t errlen)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < sizeof(added_columns) / sizeof(added_columns[0]); i++) {
		char local[128];
		const char *name = ch_table_name[added_columns[i].table];

		snprintf(local, sizeof(local), "%s_local", name);
		ret = add_column(s, c, q, s->cluster ? local : name, i, err, errlen);
		if (!ret && s->cluster)
			ret = add_column(s, c, q, name, i, err, errlen);
	}
	return ret;
}

int ch_create_tables(struct ch_store *s, struct ch_conn *c, char *err, size_t errlen)
{
	struct page q;
	int ret;

	page_init(&q, 0);
	page_printf(&q, "CREATE DATABASE IF NOT EXISTS %s", s->db);
	ret = ch_run_page(s, c, &q, err, errlen);
	for (int t = 0; !ret && t < CT_N; t++) {
		const char *name = ch_table_name[t];

		q.len = 0;
		page_printf(&q, "CREATE TABLE IF NOT EXISTS %s.%s%s (%s) ENGINE = %s", s->db, name,
			    s->cluster ? "_local" : "", table_def[t].columns, table_def[t].engine);
		ret = ch_run_page(s, c, &q, err, errlen);
		if (ret || !s->cluster)
			continue;
		q.len = 0;
		page_printf(&q,
			    "CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s_local"
			    " ENGINE = Distributed(%s, %s, %s_local, %s)",
			    s->db, name, s->db, name, s->cluster, s->db, name, table_def[t].shard);
		ret = ch_run_page(s, c, &q, err, errlen);
	}
	if (!ret)
		ret = add_columns(s, c, &q, err, errlen);
	page_release(&q);
	return ret;
}

/* Copy @cfg's settings into one block, s->settings, and point the store's
 * fields into it: the URL without its trailing '/'s, the database name
 * (default "cgperf"), the cluster (NULL for none or ""), user and
 * password (NULL when not given). */
static int set_settings(struct ch_store *s, const struct store_config *cfg, char *err,
			size_t errlen)
{
	const char *db = cfg->database && *cfg->database ? cfg->database : "cgperf";
	const char *src[] = { cfg->url, db, cfg->cluster && *cfg->cluster ? cfg->cluster : NULL,
			      cfg->user, cfg->password };
	const char **dst[] = { &s->url, &s->db, &s->cluster, &s->user, &s->password };
	size_t n = sizeof(src) / sizeof(src[0]), len[sizeof(src) / sizeof(src[0])], total = 0;
	char *p;

	if (!cfg->url || !httpc_is_http_url(cfg->url)) {
		snprintf(err, errlen, "the clickhouse store needs --clickhouse-url http://HOST:PORT");
		return -EINVAL;
	}
	if (!ident_ok(db) || (src[2] && !ident_ok(src[2]))) {
		snprintf(err, errlen,
			 "clickhouse database and cluster names: letters, digits and '_' only");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		len[i] = src[i] ? strlen(src[i]) : 0;
		total += len[i] + 1;
	}
	while (len[0] && cfg->url[len[0] - 1] == '/')
		len[0]--;
	s->settings = p = malloc(total);
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!src[i])
			continue;
		memcpy(p, src[i], len[i]);
		p[len[i]] = '\0';
		*dst[i] = p;
		p += len[i] + 1;
	}
	return 0;
}

/* The writer's extra connections (ch_run_parallel), as many as the tables
 * a put() writes before its batches rows; none with
 * CGPERF_CLICKHOUSE_SERIAL=1 (the one-at-a-time writes, for comparison in
 * bench/bench_exporter.sh). */
static int open_parallel(struct ch_store *s)
{
	const char *serial = getenv("CGPERF_CLICKHOUSE_SERIAL");

	if (serial && !strcmp(serial, "1"))
		return 0;
	s->multi = curl_multi_init();
	if (!s->multi)
		return -ENOMEM;
	for (; s->npar < CH_PARALLEL_MAX; s->npar++)
		if (ch_conn_init(s, &s->par[s->npar], NULL))
			return -ENOMEM;
	return 0;
}

static struct store *ch_open(const struct store_config *cfg, char *err, size_t errlen)
{
	struct ch_store *s;
	int ret;

	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "cannot initialize libcurl");
		errno = ENOMEM;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		curl_global_cleanup();
		errno = ENOMEM;
		return NULL;
	}
	ret = set_settings(s, cfg, err, errlen);
	if (!ret && (ch_conn_init(s, &s->w, NULL) || ch_conn_init(s, &s->r, NULL)))
		ret = -ENOMEM;
	if (!ret)
		ret = open_parallel(s);
	if (!ret && cfg->shard_urls && *cfg->shard_urls)
		ret = ch_shards_open(s, cfg->shard_urls, err, errlen);
	if (!ret) {
		s->known = hashmap_new();
		if (!s->known)
			ret = -ENOMEM;
		else
			hashmap_set_limit(s->known, CH_KNOWN_MAX);
	}
	if (!ret && getrandom(&s->ins_seed, sizeof(s->ins_seed), 0) != sizeof(s->ins_seed))
		s->ins_seed = (uint64_t)clock_real_ns() ^ ((uint64_t)getpid() << 32);
	if (!ret)
		ret = ch_schema_setup(s, err, errlen);
	if (ret) {
		if (ret == -ENOMEM && !*err)
			snprintf(err, errlen, "out of memory");
		ch_close(&s->base);
		errno = -ret;
		return NULL;
	}
	return &s->base;
}

/* No stats(): the bytes are on the cluster's disks, not this exporter's. */
const struct store_ops store_clickhouse_ops = {
	.name = "clickhouse",
	.shared = true,
	.open = ch_open,
	.close = ch_close,
	.put_many = ch_put_many,
	.load = ch_load,
	.expire = ch_expire,
	.retention = ch_retention,
	.stacks = ch_stacks,
	.module = ch_module,
	.latency_rows = ch_latency_rows,
	.series = ch_series,
};
