// SPDX-License-Identifier: MIT
/*
 * The ClickHouse store's heat map rows: each batch's latency histogram of
 * one probe (probes.latency, Array(UInt64) words of lib/hist) with its
 * batch's interval (batches.start_ns, end_ns). As everywhere in this
 * store, copies are collapsed before use: probe rows by their row key,
 * batches by (agent_id, seq). With a cluster both tables are Distributed
 * and the join is GLOBAL (the batches side is read once and shipped to
 * the shards). Aliases differ from column names (18.16 would take an
 * aggregate's alias for the column of a WHERE clause).
 */
#include "exporter/store/store_clickhouse_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

struct heat_ctx {
	int (*fn)(void *arg, const struct store_latency_row *r);
	void *arg;
};

static int row_latency(void *arg, char **f)
{
	struct heat_ctx *x = arg;
	uint64_t w[STORE_HIST_WORDS];
	struct store_latency_row r = {
		.host = f[0], .path = f[1], .start_ns = ch_u64(f[2]), .end_ns = ch_u64(f[3]),
	};

	if (ch_words(f[4], w, STORE_HIST_WORDS) != STORE_HIST_WORDS)
		return 0;
	store_hist_from_words(w, &r.latency_ns);
	return r.latency_ns.count ? x->fn(x->arg, &r) : 0;
}

int ch_latency_rows(struct store *base, const struct store_selection *sel, const char *probe,
		    int (*fn)(void *arg, const struct store_latency_row *r), void *arg)
{
	struct ch_store *s = chs(base);
	struct heat_ctx x = {fn, arg};
	struct page q;
	int ret;

	page_init(&q, 0);
	page_printf(&q,
		    "SELECT h, pa, bs, be, la FROM (SELECT any(host) AS h, any(path) AS pa,"
		    " any(agent_id) AS ag, any(seq) AS sq, any(latency) AS la FROM %s.probes"
		    " WHERE length(latency) > 0 AND label = ",
		    s->db);
	ch_quote(&q, probe);
	if (sel->host && *sel->host) {
		page_put(&q, " AND host = ");
		ch_quote(&q, sel->host);
	}
	if (sel->cgroup && *sel->cgroup) {
		page_put(&q, " AND path = ");
		ch_quote(&q, sel->cgroup);
	}
	page_printf(&q,
		    " GROUP BY row) %sANY INNER JOIN (SELECT agent_id AS ag, seq AS sq,"
		    " any(start_ns) AS bs, any(end_ns) AS be FROM %s.batches"
		    " WHERE start_ns >= %" PRIu64 " AND start_ns < %" PRIu64
		    " GROUP BY agent_id, seq) USING (ag, sq) ORDER BY bs FORMAT TabSeparated",
		    s->cluster ? "GLOBAL " : "", s->db, sel->from_ns, sel->to_ns);
	ret = ch_text(&q) ? ch_select(s, q.buf, 5, row_latency, &x) : -ENOMEM;
	page_release(&q);
	return ret;
}
