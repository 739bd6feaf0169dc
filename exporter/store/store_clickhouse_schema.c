// SPDX-License-Identifier: MIT
/*
 * The ClickHouse store's schema versions and shards.
 *
 * Versions. Each server keeps, in DB.cgperf_schema (TinyLog: a row per
 * upgrade, never on a cluster's Distributed tables), the versions of the
 * schema that exporters wrote there; the largest is the database's. At
 * start an exporter reads it before it changes anything: a version newer
 * than its own is refused (an older exporter would write rows that a
 * newer table does not expect, and not know what a newer one hides);
 * an older one, or none (a database from before versions), is upgraded
 * by the same idempotent steps that make a new one, CREATE TABLE IF NOT
 * EXISTS for tables added since and ADD COLUMN (store_clickhouse.c's
 * added_columns) for columns, and the version is recorded after they all
 * succeeded. Versions: 1 the first tables; 2 cgroups.image; 3 expiry
 * (store_clickhouse_expire.c) and cgperf_schema itself.
 *
 * Shards. Without ZooKeeper, ClickHouse 18.16 has no distributed DDL (ON
 * CLUSTER), and a server's remote_servers names its shards by their
 * native-protocol port, not their HTTP one. So --clickhouse-shard-urls
 * lists the HTTP interface of every server of the cluster, and the
 * exporter does on each what it does on its own: the version check, the
 * tables (local and Distributed: any server can then be an exporter's
 * --clickhouse-url), and later retention's partition drops. The list is
 * checked against the cluster: as many servers as system.clusters has
 * rows for it (shards times replicas).
 */
#include "exporter/store/store_clickhouse_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/httpc.h"

/* Most shard URLs taken. */
#define SHARDS_MAX 256

/* The next URL of the list at *@at, malloc'd into *@out (NULL at the end). */
static int next_url(const char **at, char **out, char *err, size_t errlen)
{
	size_t n;
	char *url;

	*out = NULL;
	*at += strspn(*at, ", ");
	n = strcspn(*at, ", ");
	if (!n)
		return 0;
	url = strndup(*at, n);
	*at += n;
	if (!url)
		return -ENOMEM;
	while (n && url[n - 1] == '/')
		url[--n] = '\0';
	if (!httpc_is_http_url(url)) {
		snprintf(err, errlen, "--clickhouse-shard-urls: '%.100s' is not http://HOST:PORT", url);
		free(url);
		return -EINVAL;
	}
	*out = url;
	return 0;
}

int ch_shards_open(struct ch_store *s, const char *list, char *err, size_t errlen)
{
	const char *at = list;
	char *url;
	int ret;

	if (!s->cluster) {
		snprintf(err, errlen, "--clickhouse-shard-urls needs --clickhouse-cluster");
		return -EINVAL;
	}
	s->shard_urls = calloc(SHARDS_MAX, sizeof(*s->shard_urls));
	if (!s->shard_urls)
		return -ENOMEM;
	while (!(ret = next_url(&at, &url, err, errlen)) && url) {
		if (s->nshards == SHARDS_MAX) {
			snprintf(err, errlen, "more than %d --clickhouse-shard-urls", SHARDS_MAX);
			free(url);
			return -EINVAL;
		}
		s->shard_urls[s->nshards++] = url;
	}
	if (!ret && s->nshards) {
		s->shards = calloc(s->nshards, sizeof(*s->shards));
		if (!s->shards)
			return -ENOMEM;
	}
	for (size_t i = 0; !ret && i < s->nshards; i++)
		ret = ch_conn_init(s, &s->shards[i], s->shard_urls[i]);
	return ret;
}

void ch_shards_close(struct ch_store *s)
{
	for (size_t i = 0; s->shards && i < s->nshards; i++)
		ch_conn_release(&s->shards[i]);
	free(s->shards);
	for (size_t i = 0; i < s->nshards; i++)
		free(s->shard_urls[i]);
	free(s->shard_urls);
	s->shards = NULL;
	s->shard_urls = NULL;
	s->nshards = 0;
}

/* The first number of the answer to @sql on @c into *@out. */
static int ask_u64(struct ch_store *s, struct ch_conn *c, struct page *q, uint64_t *out, char *err,
		   size_t errlen)
{
	struct page ans;
	int ret;

	page_init(&ans, 0);
	ret = ch_text(q) ? ch_run(s, c, q->buf, NULL, 0, &ans, err, errlen) : -ENOMEM;
	if (!ret && !ch_text(&ans))
		ret = -ENOMEM;
	if (!ret)
		*out = ch_u64(ch_text(&ans));
	page_release(&ans);
	return ret;
}

/* The version check, tables and upgrade on the server of @c. */
static int setup_node(struct ch_store *s, struct ch_conn *c, char *err, size_t errlen)
{
	struct page q;
	uint64_t v = 0;
	int ret;

	page_init(&q, 0);
	page_printf(&q, "CREATE DATABASE IF NOT EXISTS %s", s->db);
	ret = ch_run_page(s, c, &q, err, errlen);
	q.len = 0;
	page_printf(&q,
		    "CREATE TABLE IF NOT EXISTS %s.cgperf_schema (version UInt32,"
		    " written_ns UInt64) ENGINE = TinyLog",
		    s->db);
	if (!ret)
		ret = ch_run_page(s, c, &q, err, errlen);
	q.len = 0;
	page_printf(&q, "SELECT max(version) FROM %s.cgperf_schema", s->db);
	if (!ret)
		ret = ask_u64(s, c, &q, &v, err, errlen);
	if (!ret && v > CH_SCHEMA_VERSION) {
		snprintf(err, errlen,
			 "clickhouse: database %s at %s has schema version %" PRIu64
			 ", newer than this exporter's %u: run a newer cgperf-exporter",
			 s->db, c->url, v, CH_SCHEMA_VERSION);
		ret = -EPROTO;
	}
	if (!ret)
		ret = ch_create_tables(s, c, err, errlen);
	if (!ret && v < CH_SCHEMA_VERSION) {
		q.len = 0;
		page_printf(&q, "INSERT INTO %s.cgperf_schema VALUES (%u, %" PRIu64 ")", s->db,
			    CH_SCHEMA_VERSION, clock_real_ns());
		ret = ch_run_page(s, c, &q, err, errlen);
	}
	page_release(&q);
	return ret;
}

/* The shard list against the cluster's servers, as the exporter's own
 * server knows them. */
static int check_shards(struct ch_store *s, char *err, size_t errlen)
{
	struct page q;
	uint64_t n = 0;
	int ret;

	page_init(&q, 0);
	page_put(&q, "SELECT count() FROM system.clusters WHERE cluster = ");
	ch_quote(&q, s->cluster);
	ret = ask_u64(s, &s->w, &q, &n, err, errlen);
	page_release(&q);
	if (!ret && n != s->nshards) {
		snprintf(err, errlen,
			 "clickhouse: cluster %s has %" PRIu64 " servers at %s, --clickhouse-shard-urls"
			 " lists %zu: list the HTTP URL of each",
			 s->cluster, n, s->url, s->nshards);
		ret = -EINVAL;
	}
	return ret;
}

int ch_schema_setup(struct ch_store *s, char *err, size_t errlen)
{
	int ret = s->nshards ? check_shards(s, err, errlen) : 0;
	bool own = false;

	for (size_t i = 0; !ret && i < s->nshards; i++) {
		own |= !strcmp(s->shard_urls[i], s->url);
		ret = setup_node(s, &s->shards[i], err, errlen);
	}
	if (!ret && !own)
		ret = setup_node(s, &s->w, err, errlen);
	return ret;
}
