// SPDX-License-Identifier: MIT
/*
 * Series expiry and retention on the ClickHouse store, answering as the
 * SQLite store does, before and after a restart.
 *
 * SQLite deletes an expired series' running total, so a series seen again
 * starts from zero, and deletes raw rows past retention. Here the totals
 * are sums over raw rows, and 18.16 offers no way to delete rows that is
 * both immediate and exact: no TTL (19.6), ALTER TABLE ... DELETE is a
 * mutation that rewrites parts in the background (answers would change
 * some time later, shard by shard), and partitions are whole days. So
 * what is forgotten is recorded, and the reads leave it out:
 *
 *   expiry(kind, host, path, name, cutoff)   ReplacingMergeTree(cutoff)
 *
 * A row says "rows of this series received before cutoff do not count":
 * kind 0 a counter series (host, path, event), 1 a probe series (host,
 * path, label), 2 an agent (agent_id in host), 3 retention (the cutoff
 * alone). expire() adds, for each series last seen before its cutoff
 * and not yet forgotten, a row whose cutoff is just past its last row
 * (rows of the series received later start it again, from zero, as in
 * SQLite); a second exporter finds nothing left to add. The totals'
 * reads join max(cutoff) per series and keep the rows at or past it.
 * retention() records its cutoff (kind 3): stacks are read from the first
 * minute bucket at or past it and cgroups seen since, exactly what SQLite
 * keeps; then it drops whole day partitions of samples and cgroups older
 * than it on every server (space; the answers do not wait for it).
 *
 * The answers are the same at once, on every exporter, and after any
 * restart, since the record is in the cluster; the cost is a row per
 * expired series (a series that comes back and expires again adds
 * another), which the engine collapses to one in its merges, and the raw
 * counter rows, which stay until the month partition is dropped by hand.
 * With several exporters on one database the shortest --series-expiry
 * and --retention win for all.
 */
#include "exporter/store/store_clickhouse_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { EXP_COUNTER, EXP_PROBE, EXP_AGENT, EXP_RETAINED };

void ch_expiry_join(struct ch_store *s, struct page *q, int kind, const char *cols,
		    const char *recv)
{
	static const char *const from[] = { "host", "path", "name" };
	char names[64], *save = NULL, *tok;
	size_t k = 0;

	snprintf(names, sizeof(names), "%s", cols);
	page_put(q, " ANY LEFT JOIN (SELECT ");
	for (tok = strtok_r(names, ", ", &save); tok && k < 3; tok = strtok_r(NULL, ", ", &save))
		page_printf(q, "%s AS %s, ", from[k++], tok);
	page_printf(q, "max(cutoff) AS cut FROM %s.expiry WHERE kind = %d GROUP BY ", s->db, kind);
	for (size_t i = 0; i < k; i++)
		page_printf(q, "%s%s", i ? ", " : "", from[i]);
	page_printf(q, ") USING (%s) WHERE %s >= cut", cols, recv);
}

/* Each kind of series as (h, p, e, r): its key, from which table, and
 * when its last row was received. */
static const struct {
	const char *key, *table, *where, *group;
} series[] = {
	/* supported = 2: truncation counts (store_clickhouse_put.c), expired alike */
	[EXP_COUNTER] = { "host AS h, path AS p, event AS e", "counters", " WHERE supported >= 1",
			  "host, path, event" },
	[EXP_PROBE] = { "host AS h, path AS p, label AS e", "probes", "", "host, path, label" },
	[EXP_AGENT] = { "agent_id AS h, '' AS p, '' AS e", "batches", "", "agent_id" },
};

int ch_expire(struct store *base, uint64_t before_ns)
{
	struct ch_store *s = chs(base);
	char err[256];
	struct page q;
	int ret = 0;

	page_init(&q, 0);
	pthread_mutex_lock(&s->w.lock);
	for (int k = EXP_COUNTER; !ret && k <= EXP_AGENT; k++) {
		q.len = 0;
		page_printf(&q,
			    "INSERT INTO %s.expiry SELECT %d, h, p, e, r + 1 FROM (SELECT %s,"
			    " max(received_ns) AS r FROM %s.%s%s GROUP BY %s)",
			    s->db, k, series[k].key, s->db, series[k].table, series[k].where,
			    series[k].group);
		ch_expiry_join(s, &q, k, "h, p, e", "r");
		page_printf(&q, " AND r < %" PRIu64, before_ns);
		ret = ch_run_page(s, &s->w, &q, err, sizeof(err));
	}
	pthread_mutex_unlock(&s->w.lock);
	page_release(&q);
	return ret;
}

int ch_retained(struct ch_store *s, uint64_t *out)
{
	char sql[160], err[256];
	struct page ans;
	int ret;

	snprintf(sql, sizeof(sql), "SELECT max(cutoff) FROM %s.expiry WHERE kind = %d", s->db,
		 EXP_RETAINED);
	page_init(&ans, 0);
	pthread_mutex_lock(&s->r.lock);
	ret = ch_run(s, &s->r, sql, NULL, 0, &ans, err, sizeof(err));
	pthread_mutex_unlock(&s->r.lock);
	if (!ret && !ch_text(&ans))
		ret = -ENOMEM;
	*out = ret ? 0 : ch_u64(ch_text(&ans));
	page_release(&ans);
	return ret;
}

/* Record @before_ns as the retention cutoff when it is past the last one
 * recorded. */
static int record_cutoff(struct ch_store *s, uint64_t before_ns)
{
	char sql[160], err[256];
	int ret;

	if (before_ns <= s->retained_ns)
		return 0;
	snprintf(sql, sizeof(sql), "INSERT INTO %s.expiry VALUES (%d, '', '', '', %" PRIu64 ")",
		 s->db, EXP_RETAINED, before_ns);
	ret = ch_run(s, &s->w, sql, NULL, 0, NULL, err, sizeof(err));
	if (!ret)
		s->retained_ns = before_ns;
	return ret;
}

/*
 * Drop the oldest day partition of @table that ends before @before_ns on
 * the server of @c. 1 and *@deleted its rows when one was dropped, 0 when
 * there is none, or -errno.
 */
static int drop_oldest(struct ch_store *s, struct ch_conn *c, enum ch_table table,
		       uint64_t before_ns, size_t *deleted)
{
	char err[256], *cur, *f[2];
	struct page q, ans;
	int ret;

	page_init(&q, 0);
	page_init(&ans, 1 << 20);
	page_printf(&q,
		    "SELECT partition, sum(rows) FROM system.parts WHERE active AND"
		    " database = '%s' AND table = '%s%s' AND toDate(partition) <"
		    " toDate(toDateTime(intDiv(%" PRIu64 ", 1000000000)))"
		    " GROUP BY partition ORDER BY partition LIMIT 1 FORMAT TabSeparated",
		    s->db, ch_table_name[table], s->cluster ? "_local" : "",
		    before_ns / 1000000000u * 1000000000u);
	ret = !ch_text(&q) ? -ENOMEM : ch_run(s, c, q.buf, NULL, 0, &ans, err, sizeof(err));
	cur = ch_text(&ans);
	if (!ret && cur && ch_row(&cur, f, 2) && *f[0]) {
		q.len = 0;
		page_printf(&q, "ALTER TABLE %s.%s%s DROP PARTITION ", s->db, ch_table_name[table],
			    s->cluster ? "_local" : "");
		ch_quote(&q, f[0]);
		ret = ch_run_page(s, c, &q, err, sizeof(err));
		if (!ret) {
			*deleted = (size_t)ch_u64(f[1]);
			ret = 1;
		}
	}
	page_release(&q);
	page_release(&ans);
	return ret;
}

/*
 * Record the cutoff, then drop one old day partition of samples or
 * cgroups on one server (every shard of --clickhouse-shard-urls, else the
 * exporter's own), so that the caller's loop bounds the work; 1 when there
 * may be more. @max_rows does not apply: a partition drop is one metadata
 * step.
 */
int ch_retention(struct store *base, uint64_t before_ns, size_t max_rows, size_t *deleted)
{
	static const enum ch_table tables[] = { CT_SAMPLES, CT_CGROUPS };
	struct ch_store *s = chs(base);
	size_t nodes = s->nshards ? s->nshards : 1;
	int ret;

	(void)max_rows;
	*deleted = 0;
	pthread_mutex_lock(&s->w.lock);
	ret = record_cutoff(s, before_ns);
	for (size_t i = 0; !ret && i < nodes; i++) {
		struct ch_conn *c = s->nshards ? &s->shards[i] : &s->w;

		for (size_t t = 0; !ret && t < sizeof(tables) / sizeof(tables[0]); t++)
			ret = drop_oldest(s, c, tables[t], before_ns, deleted);
	}
	pthread_mutex_unlock(&s->w.lock);
	return ret;
}
