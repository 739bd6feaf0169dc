// SPDX-License-Identifier: MIT
/*
 * The ClickHouse store's pieces that need no server (the server-side
 * behaviour is tests/integration/exporter_clickhouse*.sh): TabSeparated
 * escaping and its parse back, hostile strings included; SQL string
 * literals; Array(UInt64) words; the exporter settings of the store; and
 * open() refusing bad settings or an unreachable server with a reason.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "exporter/config.h"
#include "exporter/store/store.h"
#include "exporter/store/store_clickhouse_internal.h"
#include "tests/unit/testlib.h"

static void test_tsv_round_trip(void **state)
{
	static const char *const cases[] = {
		"", "plain", "tab\there", "new\nline", "back\\slash", "cr\rlf\n",
		"quote'\"", "\\t literally", "caf\xc3\xa9 \xe2\x9c\x93", "\\", "end\\",
	};
	struct page p;
	char *cur, *f[3];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		page_init(&p, 0);
		ch_tsv(&p, cases[i]);
		page_putc(&p, '\t');
		ch_tsv(&p, "x");
		page_putc(&p, '\n');
		cur = ch_text(&p);
		assert_non_null(cur);
		assert_null(memchr(cur, '\t', strlen(cur) - 3)); /* only the separator */
		assert_int_equal(ch_row(&cur, f, 3), 2);
		assert_string_equal(f[0], cases[i]);
		assert_string_equal(f[1], "x");
		assert_string_equal(f[2], ""); /* a missing field */
		assert_int_equal(ch_row(&cur, f, 3), 0);
		page_release(&p);
	}
}

static void test_rows(void **state)
{
	char text[] = "a\tb\\tc\t1\nd\t\t2\n\nlast\twithout\tnewline";
	char *cur = text, *f[3];

	(void)state;
	assert_int_equal(ch_row(&cur, f, 3), 3);
	assert_string_equal(f[1], "b\tc");
	assert_int_equal(ch_u64(f[2]), 1);
	assert_int_equal(ch_row(&cur, f, 3), 3);
	assert_string_equal(f[0], "d");
	assert_string_equal(f[1], "");
	assert_int_equal(ch_row(&cur, f, 3), 1); /* an empty line: one empty field */
	assert_string_equal(f[0], "");
	assert_int_equal(ch_row(&cur, f, 3), 3);
	assert_string_equal(f[2], "newline");
	assert_int_equal(ch_row(&cur, f, 3), 0);
}

/* SQL string literals of hostile strings (tests/unit/data/clickhouse_quote.tsv). */
static void test_quote(void **state)
{
	struct tl_table *t = tl_table_load("clickhouse_quote.tsv", 2);
	struct page p;

	(void)state;
	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *const *c = tl_table_row(t, i);

		page_init(&p, 0);
		ch_quote(&p, c[0]);
		if (strcmp(ch_text(&p), c[1]))
			fail_msg("%s: %s, want %s", tl_table_where(t, i), ch_text(&p), c[1]);
		page_release(&p);
	}
	tl_table_free(t);
}

static void test_words(void **state)
{
	uint64_t w[4] = { 9, 9, 9, 9 };

	(void)state;
	assert_int_equal(ch_words("[]", w, 4), 0);
	assert_int_equal(ch_words("[1,2,18446744073709551615]", w, 4), 3);
	assert_int_equal(w[2], UINT64_MAX);
	assert_int_equal(ch_words("[1,2,3,4,5,6]", w, 4), 4); /* capped */
	assert_int_equal(w[3], 4);
	assert_int_equal(ch_words("[x]", w, 4), 0);
}

static void test_settings(void **state)
{
	static const struct {
		const char *key, *value;
		int ret;
	} cases[] = {
		{ "store", "clickhouse", 0 },
		{ "store", "sqlite", 0 },
		{ "store", "mysql", -EINVAL },
		{ "clickhouse_url", "http://127.0.0.1:8123", 0 },
		{ "clickhouse_url", "https://ch.example:8443/", 0 },
		{ "clickhouse_url", "127.0.0.1:8123", -EINVAL },
		{ "clickhouse_database", "cgperf_prod", 0 },
		{ "clickhouse_database", "", -EINVAL },
		{ "clickhouse_cluster", "fleet", 0 },
		{ "clickhouse_user", "cgperf", 0 },
		{ "clickhouse_password_file", "/etc/cgperf/ch.pw", 0 },
		{ "clickhouse_shard_urls", "http://a:8123,http://b:8123", 0 },
		{ "clickhouse_port", "8123", -ENOENT },
	};
	struct exporter_config c;
	char err[256];

	(void)state;
	assert_int_equal(exporter_config_defaults(&c), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		assert_int_equal(exporter_config_set(&c, cases[i].key, cases[i].value, err,
						     sizeof(err)),
				 cases[i].ret);
		if (cases[i].ret)
			assert_non_null(strstr(err, cases[i].key));
	}
	assert_string_equal(c.clickhouse_url, "https://ch.example:8443/");
	assert_string_equal(c.clickhouse_cluster, "fleet");
	exporter_config_release(&c);
}

static void test_settings_file(void **state)
{
	static const char yaml[] = "listen: \":9464\"\n"
				   "store: clickhouse\n"
				   "clickhouse_url: http://127.0.0.1:8123\n"
				   "clickhouse_database: db1\n"
				   "clickhouse_custer: two\n";
	struct exporter_config c;
	char err[256];

	(void)state;
	assert_int_equal(exporter_config_defaults(&c), 0);
	assert_int_equal(exporter_config_parse(&c, "x.yaml", yaml, strlen(yaml), err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "x.yaml:5:1: unknown key 'clickhouse_custer' (did you mean "
				    "'clickhouse_cluster'?)"));
	assert_int_equal(exporter_config_parse(&c, "x.yaml", yaml, strlen(yaml) - 24, err,
					       sizeof(err)),
			 0);
	assert_string_equal(c.store, "clickhouse");
	assert_string_equal(c.clickhouse_database, "db1");
	exporter_config_release(&c);
}

static void test_open_refused(void **state)
{
	static const struct {
		struct store_config cfg;
		const char *why;
	} cases[] = {
		{ { .url = NULL }, "--clickhouse-url" },
		{ { .url = "ftp://x" }, "--clickhouse-url" },
		{ { .url = "http://127.0.0.1:1", .database = "x; DROP" }, "letters, digits" },
		{ { .url = "http://127.0.0.1:1", .cluster = "a-b" }, "letters, digits" },
		{ { .url = "http://127.0.0.1:1", .shard_urls = "http://a:1" }, "needs --clickhouse-cluster" },
		{ { .url = "http://127.0.0.1:1", .cluster = "c", .shard_urls = "http://a:1,b:2" },
		  "'b:2' is not http://HOST:PORT" },
		/* Nothing listens on port 1: the reason says where it tried. */
		{ { .url = "http://127.0.0.1:1" }, "127.0.0.1:1" },
	};
	const struct store_ops *ops = store_backend("clickhouse");
	char err[256];

	(void)state;
	assert_non_null(ops);
	assert_true(ops->shared);
	assert_false(store_backend("sqlite")->shared);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		assert_null(store_open_config(ops, &cases[i].cfg, err, sizeof(err)));
		assert_non_null(strstr(err, cases[i].why));
	}
}

/* The expiry join's SQL (store_clickhouse_expire.c), and the shard list
 * split into connections (store_clickhouse_schema.c). */
static void test_expiry_join_and_shards(void **state)
{
	struct ch_store s = { .db = "d", .cluster = "two" };
	char err[128] = "";
	struct page q;

	(void)state;
	page_init(&q, 0);
	ch_expiry_join(&s, &q, 2, "agent_id", "r");
	assert_string_equal(ch_text(&q), " ANY LEFT JOIN (SELECT host AS agent_id, max(cutoff) AS cut"
					 " FROM d.expiry WHERE kind = 2 GROUP BY host)"
					 " USING (agent_id) WHERE r >= cut");
	q.len = 0;
	ch_expiry_join(&s, &q, 0, "h, p, e", "r");
	assert_string_equal(ch_text(&q),
			    " ANY LEFT JOIN (SELECT host AS h, path AS p, name AS e, max(cutoff) AS cut"
			    " FROM d.expiry WHERE kind = 0 GROUP BY host, path, name)"
			    " USING (h, p, e) WHERE r >= cut");
	page_release(&q);
	s.url = "http://own:1";
	assert_int_equal(ch_shards_open(&s, " http://a:8123/, ,http://b:8124", err, sizeof(err)), 0);
	assert_int_equal(s.nshards, 2);
	assert_string_equal(s.shard_urls[0], "http://a:8123");
	assert_string_equal(s.shards[1].url, "http://b:8124");
	ch_shards_close(&s);
	assert_int_equal(s.nshards, 0);
}

/* The series query (store_clickhouse_series.c): steps by intDiv on the
 * read time, the top by a ranked IN, values quoted, GLOBAL joins on a
 * cluster, the retention cutoff raising from. */
static void test_series_sql(void **state)
{
	struct ch_store s = { .db = "d", .cluster = "two" };
	struct store_selection sel = { .host = "h'1\\", .cgroup = "/a", .event = "task-clock",
				       .pod = "web-0", .from_ns = 1000, .to_ns = 5000 };
	const char *t;
	struct page q;

	(void)state;
	page_init(&q, 0);
	ch_series_sql(&s, &sel, 2000, 60000000000ull, 7, &q);
	t = ch_text(&q);
	assert_non_null(t);
	assert_non_null(strstr(t, "SELECT h, p, e, bt, v, cid, ci, rt, pu, qs, ns, pn, cn, un, sl, im"
				  " FROM (SELECT h, p, e, intDiv(tt, 60000000000) * 60000000000 AS bt,"
				  " sum(x) AS v FROM (SELECT h, p, e, x, tt FROM (SELECT any(host) AS h,"));
	assert_non_null(strstr(t, " FROM d.counters WHERE supported = 1 AND host = 'h\\'1\\\\'"
				  " AND path = '/a' AND event = 'task-clock' AND (host, path) GLOBAL IN"
				  " (SELECT host, path FROM d.cgroups WHERE 1 AND (pod_uid = 'web-0'"
				  " OR pod_name = 'web-0')) GROUP BY row) GLOBAL ANY INNER JOIN"));
	assert_non_null(strstr(t, " FROM d.batches WHERE received_ns >= 2000"
				  " AND least(end_ns, received_ns) >= 2000"
				  " AND least(end_ns, received_ns) < 5000 GROUP BY agent_id, seq)"));
	assert_non_null(strstr(t, " GROUP BY h, p, e ORDER BY sum(x) DESC, h, p, e LIMIT 7)"
				  " GROUP BY h, p, e, bt) GLOBAL ANY LEFT JOIN (SELECT host AS h,"));
	assert_non_null(strstr(t, " FROM d.cgroups WHERE 1 AND host = 'h\\'1\\\\' AND path = '/a'"
				  " GROUP BY host, path) USING (h, p) ORDER BY h, p, e, bt"
				  " FORMAT TabSeparated"));
	page_release(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tsv_round_trip), cmocka_unit_test(test_rows),
		cmocka_unit_test(test_quote),	       cmocka_unit_test(test_words),
		cmocka_unit_test(test_settings),       cmocka_unit_test(test_settings_file),
		cmocka_unit_test(test_open_refused),   cmocka_unit_test(test_expiry_join_and_shards),
		cmocka_unit_test(test_series_sql),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
