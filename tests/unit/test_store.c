// SPDX-License-Identifier: MIT
/*
 * exporter/store (SQLite backend) through its ops interface: a batch and
 * its running totals in, duplicates ignored, stack selections by every
 * field, module lookups, totals reloaded equal after a reopen, retention
 * deleting raw rows but no totals (and turning old sequence numbers into
 * duplicates), expiry deleting totals, and the first slice's database
 * migrated in place. Review regressions: the WAL stays bounded over many
 * batches, counts summed past INT64_MAX saturate (stacks query and running
 * totals), a batch dated in the future cannot escape retention, and query
 * times past 2262 are refused instead of wrapping.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wire/wire.h"
#include "exporter/config.h"
#include "exporter/store/store.h"
#include "tests/unit/testlib.h"

#define NS 1000000000ull
#define T0 (1700000000ull * NS) /* 20 s into its minute bucket */

static char *dir;

static int setup(void **state)
{
	dir = tl_tmpdir("test_store");
	return 0;
}

static int teardown(void **state)
{
	tl_rmtree(dir);
	dir = NULL;
	return 0;
}

static struct store *open_store(void)
{
	char err[256] = "";
	struct store *s = store_open(store_backend("sqlite"), dir, err, sizeof(err));

	if (!s)
		fail_msg("store_open: %s", err);
	return s;
}

/*
 * A batch of agent "a1" on @host: cgroup /web (container c0ffee..., pod
 * p-1) and /db, counters on both, stacks on cpu-clock at 99 Hz (2 on /web,
 * 1 on /db) with modules, one probe with histograms.
 */
static Cgperf__V1__Batch *batch(const char *host, uint64_t seq, uint64_t start, uint64_t scale)
{
	struct wire_cgroup_info web = { .container_id = "c0ffee0123456789abcdef",
					.container_name = "nginx",
					.pod_uid = "p-1",
					.pod_name = "web-0",
					.image = "nginx:1.25",
					.runtime = "docker" };
	struct wire_batch *b = wire_batch_new(host, NULL, "a1", "9.9", seq, start, start + NS);
	const char *s1[] = { "nginx", "main", "serve", "read_[k]" };
	const char *s2[] = { "nginx", "main", "idle" };
	const char *s3[] = { "postgres", "main", "exec" };
	int m1[] = { -1, 0, 0, 1 }, m2[] = { -1, 0, 0 };
	struct hist v = { 0 }, l = { 0 };
	struct wire_self self = { .samples = 10 * scale, .lost_samples = scale, .spool_bytes = 7 };
	int cw, cd, pw, pd, mod0, mod1;

	assert_non_null(b);
	cw = wire_add_cgroup(b, "/web", 11, &web);
	cd = wire_add_cgroup(b, "/db", 12, NULL);
	assert_true(cw >= 0 && cd >= 0);
	assert_int_equal(wire_add_counter(b, cw, "task-clock", 1000000000 * scale, 100, 50, true),
			 0);
	assert_int_equal(wire_add_counter(b, cd, "task-clock", 3 * scale, 10, 10, true), 0);
	assert_int_equal(wire_add_counter(b, cd, "cycles", 0, 0, 0, false), 0);
	mod0 = wire_add_module(b, "/usr/sbin/nginx", "abcd");
	mod1 = wire_add_module(b, "[kernel.kallsyms]", NULL);
	assert_true(mod0 >= 0 && mod1 >= 0);
	m1[1] = m1[2] = m2[1] = m2[2] = mod0;
	m1[3] = mod1;
	pw = wire_add_profile(b, cw, "cpu-clock", 0, 99);
	pd = wire_add_profile(b, cd, "cpu-clock", 0, 99);
	assert_int_equal(wire_add_stack_mod(b, pw, s1, m1, 4, 5 * scale), 0);
	assert_int_equal(wire_add_stack_mod(b, pw, s2, m2, 3, 2 * scale), 0);
	assert_int_equal(wire_add_stack(b, pd, s3, 3, 4 * scale), 0);
	hist_add(&v, 3);
	hist_add(&v, 100);
	hist_add(&v, -1);
	hist_add(&l, 1500);
	assert_int_equal(wire_add_probe(b, cd, "sdt:pg:query", 7 * scale, &v, &l), 0);
	wire_set_self(b, &self);
	return tl_wire_roundtrip(b);
}

static int put(struct store *s, Cgperf__V1__Batch *m, uint64_t now)
{
	char err[256] = "";
	int ret = store_put(s, m, now, err, sizeof(err));

	if (ret < 0)
		fail_msg("store_put: %s", err);
	wire_batch_decoded_free(m);
	return ret;
}

/* ---- stacks ---- */

struct got {
	char text[4096];
	uint64_t total;
	uint64_t freq;
	char mods_read[128], mods_exec[128]; /* modules of the stacks ending so */
};

static int collect(void *arg, const struct store_stack *st)
{
	struct got *g = arg;
	size_t n = strlen(g->text);

	snprintf(g->text + n, sizeof(g->text) - n, "%s %s %llu;", st->event, st->folded,
		 (unsigned long long)st->count);
	g->total += st->count;
	g->freq = st->frequency;
	if (strstr(st->folded, ";read_[k]"))
		snprintf(g->mods_read, sizeof(g->mods_read), "%s", st->modules);
	if (strstr(st->folded, ";exec"))
		snprintf(g->mods_exec, sizeof(g->mods_exec), "%s", st->modules);
	return 0;
}

static uint64_t sel_total(struct store *s, struct store_selection sel)
{
	struct got g = { 0 };

	if (!sel.to_ns)
		sel.to_ns = T0 + 3600 * NS;
	if (!sel.from_ns)
		sel.from_ns = T0 - 3600 * NS;
	assert_int_equal(store_stacks(s, &sel, collect, &g), 0);
	return g.total;
}

static void test_put_and_select(void **state)
{
	struct store *s = open_store();
	struct store_module mod;
	struct got g = { 0 };

	assert_int_equal(put(s, batch("h1", 1, T0, 1), T0), 0);
	assert_int_equal(put(s, batch("h1", 1, T0, 1), T0), 1); /* duplicate */
	assert_int_equal(put(s, batch("h1", 2, T0 + NS, 2), T0 + NS), 0);
	assert_int_equal(put(s, batch("h2", 3, T0 + 120 * NS, 1), T0 + 120 * NS), 0);

	/* Batches 1 and 2 fall in one minute bucket: summed rows. */
	struct store_selection all = { .from_ns = T0 - 3600 * NS, .to_ns = T0 + 3600 * NS };

	assert_int_equal(store_stacks(s, &all, collect, &g), 0);
	assert_int_equal(g.total, 3 * 11 + 11);
	assert_int_equal(g.freq, 99);
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "h1" }), 33);
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "h1", .cgroup = "/web" }),
			 21);
	assert_int_equal(sel_total(s, (struct store_selection){ .cgroup = "/db" }), 12 + 4);
	assert_int_equal(sel_total(s, (struct store_selection){ .container = "nginx" }), 21 + 7);
	assert_int_equal(sel_total(s, (struct store_selection){ .container = "c0ffee012345" }),
			 28);
	assert_int_equal(sel_total(s, (struct store_selection){ .container = "c0ffee" }), 0);
	assert_int_equal(sel_total(s, (struct store_selection){ .pod = "web-0", .host = "h2" }),
			 7);
	assert_int_equal(sel_total(s, (struct store_selection){ .pod = "p-1" }), 28);
	assert_int_equal(sel_total(s, (struct store_selection){ .event = "cycles" }), 0);
	/* Time: h2's batch is two minutes later. */
	assert_int_equal(sel_total(s, (struct store_selection){ .from_ns = T0 + 100 * NS }), 11);
	assert_int_equal(sel_total(s, (struct store_selection){ .to_ns = T0 + 60 * NS -
									T0 % (60 * NS) }),
			 33);

	/* Each stack keeps the modules of its own frames: "main" is nginx's
	 * in nginx's stack; postgres's stack came without modules. */
	long long id[4];

	assert_int_equal(sscanf(g.mods_read, "%lld %lld %lld %lld", &id[0], &id[1], &id[2], &id[3]),
			 4);
	assert_int_equal(id[0], 0);
	assert_int_equal(id[1], id[2]);
	assert_true(id[1] > 0 && id[3] > 0 && id[1] != id[3]);
	assert_string_equal(g.mods_exec, "");
	assert_int_equal(store_module(s, id[3], &mod), 0);
	assert_string_equal(mod.path, "[kernel.kallsyms]");
	assert_string_equal(mod.build_id, "");
	free(mod.path);
	free(mod.build_id);
	assert_int_equal(store_module(s, id[1], &mod), 0);
	assert_string_equal(mod.path, "/usr/sbin/nginx");
	assert_string_equal(mod.build_id, "abcd");
	free(mod.path);
	free(mod.build_id);
	assert_int_equal(store_module(s, 0, &mod), -ENOENT);
	assert_int_equal(store_module(s, 99999, &mod), -ENOENT);
	store_close(s);
}

/* ---- totals through load() ---- */

struct loaded {
	double web_total, db_total;
	int counters, cgroups, probes, agents, unsupported;
	uint64_t hits, lat_count, val_count, val_neg, agent_batches, agent_samples, agent_lost,
		agent_stack;
	char web_container[80], web_name[80], web_image[80];
};

static int l_cgroup(void *arg, const struct store_cgroup *c)
{
	struct loaded *l = arg;

	l->cgroups++;
	if (!strcmp(c->path, "/web") && !strcmp(c->host, "h1")) {
		snprintf(l->web_container, sizeof(l->web_container), "%s", c->container_id);
		snprintf(l->web_name, sizeof(l->web_name), "%s", c->container_name);
		snprintf(l->web_image, sizeof(l->web_image), "%s", c->image ? c->image : "(null)");
	}
	return 0;
}

static int l_counter(void *arg, const struct store_counter_total *t)
{
	struct loaded *l = arg;

	l->counters++;
	l->unsupported += !strcmp(t->event, "cycles");
	if (!strcmp(t->host, "h1") && !strcmp(t->path, "/web"))
		l->web_total = t->total;
	if (!strcmp(t->host, "h1") && !strcmp(t->path, "/db"))
		l->db_total = t->total;
	return 0;
}

static int l_probe(void *arg, const struct store_probe_total *t)
{
	struct loaded *l = arg;

	l->probes++;
	if (!strcmp(t->host, "h1")) {
		l->hits = t->hits;
		l->val_count = t->values.count;
		l->val_neg = t->values.negative;
		l->lat_count = t->latency_ns.count;
	}
	return 0;
}

static int l_agent(void *arg, const struct store_agent *a)
{
	struct loaded *l = arg;

	l->agents++;
	l->agent_batches = a->batches;
	l->agent_samples = a->self.samples;
	l->agent_lost = a->self.lost_samples;
	l->agent_stack = a->stack_samples;
	return 0;
}

static struct loaded load(struct store *s)
{
	struct loaded l = { 0 };
	struct store_visitor v = { .cgroup = l_cgroup, .counter = l_counter, .probe = l_probe,
				   .agent = l_agent, .arg = &l };

	assert_int_equal(store_load(s, &v), 0);
	return l;
}

static void test_totals_survive(void **state)
{
	struct store *s = open_store();
	size_t n, deleted = 0;
	int ret;
	struct loaded l;
	uint64_t web = 0;

	for (uint64_t i = 1; i <= 4; i++)
		assert_int_equal(put(s, batch("h1", i, T0 + i * NS, i), T0 + i * NS), 0);
	store_close(s);
	s = open_store();
	l = load(s);
	for (uint64_t i = 1; i <= 4; i++)
		web += 1000000000 * i * 2; /* enabled / running = 2 */
	assert_true(l.web_total == (double)web);
	assert_true(l.db_total == 30.0);
	assert_int_equal(l.cgroups, 2);
	assert_int_equal(l.counters, 2); /* cycles unsupported: no total */
	assert_int_equal(l.unsupported, 0);
	assert_string_equal(l.web_container, "c0ffee0123456789abcdef");
	assert_string_equal(l.web_name, "nginx");
	assert_string_equal(l.web_image, "nginx:1.25");
	assert_int_equal(l.probes, 1);
	assert_int_equal(l.hits, 70);
	assert_int_equal(l.val_count, 12);
	assert_int_equal(l.val_neg, 4);
	assert_int_equal(l.lat_count, 4);
	assert_int_equal(l.agents, 1);
	assert_int_equal(l.agent_batches, 4);
	assert_int_equal(l.agent_samples, 100);
	assert_int_equal(l.agent_lost, 10);
	assert_int_equal(l.agent_stack, 110);

	/* Retention of everything raw, a few rows per transaction. */
	do {
		ret = store_retention(s, T0 + 3600 * NS, 3, &n);
		assert_true(ret >= 0);
		assert_true(n <= 3);
		deleted += n;
	} while (ret == 1);
	assert_true(deleted >= 4 + 8 + 4); /* batches, counter rows, probe rows at least */
	assert_int_equal(sel_total(s, (struct store_selection){ 0 }), 0);
	l = load(s);
	assert_true(l.web_total == (double)web);
	assert_int_equal(l.hits, 70);
	assert_int_equal(l.agent_batches, 4);
	/* A batch older than what retention deleted is a duplicate now. */
	assert_int_equal(put(s, batch("h1", 2, T0, 1), T0 + 3600 * NS), 1);
	assert_int_equal(put(s, batch("h1", 9, T0, 1), T0 + 3601 * NS), 0);

	/* Expiry: everything last seen before the last batch goes. */
	assert_int_equal(store_expire(s, T0 + 3601 * NS), 0);
	l = load(s);
	assert_int_equal(l.counters, 2);
	assert_true(l.db_total == 33.0); /* seen at the cutoff: kept */
	assert_int_equal(store_expire(s, T0 + 3602 * NS), 0);
	l = load(s);
	assert_int_equal(l.counters, 0);
	assert_int_equal(l.probes, 0);
	assert_int_equal(l.agents, 0);
	store_close(s);
}

/* The first slice's schema, with a row in each table, opens migrated. */
static void test_migrate_v1(void **state)
{
	char path[128], *msg = NULL;
	sqlite3 *db;
	struct store *s;
	struct loaded l;

	snprintf(path, sizeof(path), "%s/cgperf.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
		sqlite3_exec(
			db,
			"CREATE TABLE batches(agent_id TEXT NOT NULL, seq INTEGER NOT NULL,"
			" host TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
			" received_ns INTEGER NOT NULL, PRIMARY KEY(agent_id, seq));"
			"CREATE TABLE counter_samples(host TEXT NOT NULL, agent_id TEXT NOT NULL,"
			" seq INTEGER NOT NULL, cgroup_path TEXT NOT NULL, container_id TEXT NOT NULL,"
			" pod_uid TEXT NOT NULL, unit TEXT NOT NULL, event TEXT NOT NULL,"
			" value INTEGER NOT NULL, time_enabled INTEGER NOT NULL,"
			" time_running INTEGER NOT NULL, supported INTEGER NOT NULL);"
			"CREATE TABLE stacks(id INTEGER PRIMARY KEY, folded TEXT NOT NULL UNIQUE);"
			"CREATE TABLE stack_samples(bucket_start INTEGER NOT NULL,"
			" host TEXT NOT NULL, cgroup_path TEXT NOT NULL, event TEXT NOT NULL,"
			" stack_id INTEGER NOT NULL REFERENCES stacks(id), count INTEGER NOT NULL,"
			" PRIMARY KEY(bucket_start, host, cgroup_path, event, stack_id));"
			"INSERT INTO batches VALUES('a0', 1, 'old', 1700000000000000000,"
			" 1700000001000000000, 1700000001000000000);"
			"INSERT INTO counter_samples VALUES('old', 'a0', 1, '/x', 'cid', '', 'x.service',"
			" 'task-clock', 500, 10, 5, 1);"
			"INSERT INTO stacks VALUES(1, 'a;b');"
			"INSERT INTO stack_samples VALUES(1699999980000000000, 'old', '/x', 'cpu-clock',"
			" 1, 6);",
			NULL, NULL, &msg),
		SQLITE_OK);
	sqlite3_close(db);
	s = open_store();
	l = load(s);
	assert_int_equal(l.counters, 1);
	assert_int_equal(l.cgroups, 1);
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "old",
								 .container = "cid",
								 .from_ns = 1699999900000000000ull,
								 .to_ns = 1700000100000000000ull }),
			 6);
	/* New batches go in next to the migrated rows. */
	assert_int_equal(put(s, batch("h1", 1, T0, 1), T0), 0);
	store_close(s);
	s = open_store(); /* a second open does not migrate again */
	assert_int_equal(load(s).counters, 3);
	store_close(s);
}

/* A version 3 database from before cgroups.image: the column is added,
 * rows kept, and images stored from then on survive a reopen. */
static void test_image_column_added(void **state)
{
	char path[128], *msg = NULL;
	sqlite3 *db;
	struct store *s = open_store();
	struct loaded l;

	assert_int_equal(put(s, batch("h1", 1, T0, 1), T0), 0);
	store_close(s);
	snprintf(path, sizeof(path), "%s/cgperf.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "ALTER TABLE cgroups DROP COLUMN image", NULL, NULL, &msg),
			 SQLITE_OK);
	sqlite3_close(db);
	s = open_store();
	l = load(s);
	assert_int_equal(l.cgroups, 2);
	assert_string_equal(l.web_name, "nginx");
	assert_string_equal(l.web_image, "");
	assert_int_equal(put(s, batch("h1", 2, T0 + NS, 1), T0 + NS), 0);
	store_close(s);
	s = open_store();
	assert_string_equal(load(s).web_image, "nginx:1.25");
	store_close(s);
}

/* ---- review regressions ---- */

/*
 * Agent @agent's batch @seq starting at @start: @nstacks stacks
 * "main;<tag>_<i>" of @count samples each on cgroup /x (stack i on event
 * "cpu-clock" or "ev<i>": one profile each, as the wire caps the sum of a
 * profile's counts), @hits probe hits and @samples self samples.
 */
static Cgperf__V1__Batch *raw_batch(const char *agent, uint64_t seq, uint64_t start,
				    uint64_t count, int nstacks, const char *tag, uint64_t hits,
				    uint64_t samples)
{
	struct wire_batch *b = wire_batch_new("h1", NULL, agent, "1", seq, start, start + NS);
	struct wire_self self = { .samples = samples };
	char f[64], ev[32];
	const char *frames[] = { "main", f };
	int cg;

	assert_non_null(b);
	cg = wire_add_cgroup(b, "/x", 1, NULL);
	assert_true(cg >= 0);
	for (int i = 0; i < nstacks; i++) {
		int pr;

		snprintf(ev, sizeof(ev), "ev%d", i);
		pr = wire_add_profile(b, cg, i ? ev : "cpu-clock", 0, 99);
		snprintf(f, sizeof(f), "%s_%d", tag, i);
		assert_int_equal(wire_add_stack(b, pr, frames, 2, count), 0);
	}
	assert_int_equal(wire_add_counter(b, cg, "task-clock", 5, 1, 1, true), 0);
	if (hits)
		assert_int_equal(wire_add_probe(b, cg, "u:x:y", hits, NULL, NULL), 0);
	wire_set_self(b, &self);
	return tl_wire_roundtrip(b);
}

static uint64_t wal_bytes(void)
{
	char p[128];
	struct stat st;

	snprintf(p, sizeof(p), "%s/cgperf.db-wal", dir);
	return stat(p, &st) ? 0 : (uint64_t)st.st_size;
}

/*
 * A statement left on its row after COMMIT kept the writer's read
 * transaction open, so no checkpoint could recycle the WAL: it grew by
 * ~80 KB per batch (~100 MB after these 1200) until the disk filled.
 * SQLite checkpoints at 1000 pages (4 MB); allow four times that.
 */
static void test_wal_bounded(void **state)
{
	struct store *s = open_store();
	uint64_t wal;
	char tag[32];

	for (uint64_t i = 1; i <= 1200; i++) {
		snprintf(tag, sizeof(tag), "fn%llu", (unsigned long long)i);
		assert_int_equal(put(s, raw_batch("a1", i, T0 + i * NS, 3, 20, tag, 1, 1),
				     T0 + i * NS),
				 0);
	}
	wal = wal_bytes();
	print_message("WAL after 1200 batches: %llu bytes\n", (unsigned long long)wal);
	assert_true(wal > 0);
	assert_true(wal < 16u << 20);
	store_close(s);
}

struct one_stack {
	int rows;
	uint64_t count;
};

static int one_stack(void *arg, const struct store_stack *st)
{
	struct one_stack *o = arg;

	o->rows++;
	o->count = st->count;
	return 0;
}

/*
 * Counts summed past INT64_MAX: the stacks query used sum(), which fails
 * with "integer overflow" (the whole query answered -EIO, so one agent's
 * counts broke every flame graph that included them); the running totals
 * turned into REALs read back as INT64_MAX while /metrics had wrapped.
 * Now every sum saturates at INT64_MAX, in SQL and in C alike.
 */
static void test_count_overflow(void **state)
{
	struct store *s = open_store();
	struct store_selection all = { .from_ns = T0 - 3600 * NS, .to_ns = T0 + 3600 * NS };
	struct one_stack o = { 0 };
	struct loaded l;

	/* Two batches a minute bucket apart (the query's sum), each with
	 * INT64_MAX hits and self samples, and three profiles of INT64_MAX
	 * samples (the batch's own sum). */
	assert_int_equal(put(s, raw_batch("a1", 1, T0, INT64_MAX, 3, "hot", INT64_MAX, INT64_MAX),
			     T0),
			 0);
	assert_int_equal(put(s, raw_batch("a1", 3, T0 + 60 * NS, INT64_MAX, 1, "hot", INT64_MAX,
					  INT64_MAX),
			     T0 + 60 * NS),
			 0);
	assert_int_equal(store_stacks(s, &(struct store_selection){ .from_ns = all.from_ns,
								      .to_ns = all.to_ns,
								      .event = "cpu-clock" },
				      one_stack, &o),
			 0);
	assert_int_equal(o.rows, 1);
	assert_int_equal(o.count, INT64_MAX);
	/* A third in the first one's bucket (the row's own sum). */
	assert_int_equal(put(s, raw_batch("a1", 2, T0 + NS, INT64_MAX, 1, "hot", INT64_MAX,
					  INT64_MAX),
			     T0 + NS),
			 0);
	o = (struct one_stack){ 0 };
	assert_int_equal(store_stacks(s, &all, one_stack, &o), 0);
	assert_int_equal(o.rows, 3); /* hot_0 on cpu-clock, hot_1 on ev1, hot_2 on ev2 */
	l = load(s);
	assert_int_equal(l.hits, INT64_MAX);
	assert_int_equal(l.agent_samples, INT64_MAX);
	assert_int_equal(l.agent_stack, INT64_MAX);
	assert_int_equal(l.agent_batches, 3);
	store_close(s);

	/* The summed stack itself, alone in a selection. */
	s = open_store();
	{
		struct got g = { 0 };

		assert_int_equal(store_stacks(s, &all, collect, &g), 0);
		if (!strstr(g.text, "cpu-clock main;hot_0 9223372036854775807;"))
			fail_msg("hot_0 not saturated: %s", g.text);
		if (!strstr(g.text, "ev2 main;hot_2 9223372036854775807;"))
			fail_msg("hot_2 wrong: %s", g.text);
	}
	store_close(s);
}

/*
 * A batch that claims to start in 2200 was bucketed there, past every
 * retention cut-off: its stacks stayed for good (and only a query of 2200
 * showed them). A batch cannot start after it arrived, so it is bucketed
 * at its arrival.
 */
static void test_future_start_retained(void **state)
{
	struct store *s = open_store();
	uint64_t future = 7258118400ull * NS; /* 2200-01-01 */
	size_t n, deleted = 0;
	int ret;

	assert_int_equal(put(s, raw_batch("a1", 1, future, 5, 2, "f", 0, 0), T0), 0);
	assert_int_equal(sel_total(s, (struct store_selection){ 0 }), 10);
	do {
		ret = store_retention(s, T0 + 3600 * NS, 1000, &n);
		assert_true(ret >= 0);
		deleted += n;
	} while (ret == 1);
	assert_true(deleted >= 2);
	assert_int_equal(sel_total(s, (struct store_selection){ .from_ns = T0 - 3600 * NS,
								 .to_ns = UINT64_MAX }),
			 0);
	store_close(s);
}

/* Query times: "20000000000" (year 2603) used to wrap to 1986 and
 * "3000-01-01T00:00:00Z" to 1846; past 2262 they cannot be ns in an int64
 * and are refused. */
/* ---- group commit ---- */

/* store_put_many(): per batch the answer store_put() gives, a duplicate
 * inside the group included, and the same rows and totals. */
static void test_put_many(void **state)
{
	struct store *s = open_store();
	Cgperf__V1__Batch *g1[] = { batch("h1", 1, T0, 1), batch("h1", 1, T0, 1),
				    batch("h1", 2, T0 + NS, 2) };
	Cgperf__V1__Batch *g2[] = { batch("h1", 2, T0 + NS, 2), batch("h1", 3, T0 + 2 * NS, 1) };
	int res[3] = { -99, -99, -99 };
	char err[3][256] = { "x", "x", "x" };
	struct loaded l;

	assert_int_equal(store_put_many(s, (const Cgperf__V1__Batch *const *)g1, 3, T0, res, err[0],
					sizeof(err[0])),
			 0);
	assert_int_equal(res[0], 0);
	assert_int_equal(res[1], 1);
	assert_int_equal(res[2], 0);
	for (int i = 0; i < 3; i++)
		assert_string_equal(err[i], "");
	assert_int_equal(store_put_many(s, (const Cgperf__V1__Batch *const *)g2, 2, T0 + NS, res,
					err[0], sizeof(err[0])),
			 0);
	assert_int_equal(res[0], 1);
	assert_int_equal(res[1], 0);
	for (int i = 0; i < 3; i++)
		wire_batch_decoded_free(g1[i]);
	for (int i = 0; i < 2; i++)
		wire_batch_decoded_free(g2[i]);
	/* Batches 1, 2 (scale 2) and 3: 11 + 22 + 11 samples. */
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "h1" }), 44);
	l = load(s);
	assert_int_equal(l.agent_batches, 3);
	assert_int_equal(l.hits, 7 * 4);
	assert_int_equal(put(s, batch("h1", 3, T0, 1), T0), 1);
	store_close(s);
}

/* SQL on the store's file through a connection of the test's own. */
static void side_sql(const char *sql)
{
	char path[128], *msg = NULL;
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/cgperf.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg ? msg : "?");
	sqlite3_close(db);
}

/* Batches the store fails on inside a group (triggers refuse their probe
 * rows, written after their cgroups, counters and stacks, each with its
 * own message): each of them gets -EIO and its own reason, nothing of them
 * stays, the batches around them are committed; once the triggers are gone
 * the same batches are stored, not taken for duplicates. */
static void test_put_many_one_fails(void **state)
{
	struct store *s = open_store();
	Cgperf__V1__Batch *g[] = { batch("h1", 1, T0, 1), batch("bad", 2, T0, 1),
				   batch("h1", 3, T0 + NS, 1), batch("worse", 4, T0, 1) };
	int res[4] = { -99, -99, -99, -99 };
	char err[4][256] = { "x", "x", "x", "x" };
	struct loaded l;

	side_sql("CREATE TRIGGER test_refuse BEFORE INSERT ON probe_samples WHEN NEW.host = 'bad' "
		 "BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END;"
		 "CREATE TRIGGER test_refuse2 BEFORE INSERT ON probe_samples WHEN NEW.host = 'worse' "
		 "BEGIN SELECT RAISE(ABORT, 'refused by the second trigger'); END;");
	assert_int_equal(store_put_many(s, (const Cgperf__V1__Batch *const *)g, 4, T0, res, err[0],
					sizeof(err[0])),
			 0);
	assert_int_equal(res[0], 0);
	assert_int_equal(res[1], -EIO);
	assert_int_equal(res[2], 0);
	assert_int_equal(res[3], -EIO);
	assert_string_equal(err[0], "");
	assert_string_equal(err[1], "refused by the test trigger");
	assert_string_equal(err[2], "");
	assert_string_equal(err[3], "refused by the second trigger");
	for (int i = 0; i < 4; i++)
		wire_batch_decoded_free(g[i]);
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "h1" }), 22);
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "bad" }), 0);
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "worse" }), 0);
	l = load(s);
	assert_int_equal(l.cgroups, 2); /* h1's /web and /db: none of "bad" */
	assert_int_equal(l.agent_batches, 2);
	assert_int_equal(l.hits, 7 * 2);
	side_sql("DROP TRIGGER test_refuse; DROP TRIGGER test_refuse2;");
	assert_int_equal(put(s, batch("bad", 2, T0, 1), T0), 0);
	assert_int_equal(put(s, batch("worse", 4, T0, 1), T0), 0);
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "bad" }), 11);
	l = load(s);
	assert_int_equal(l.cgroups, 6);
	assert_int_equal(l.agent_batches, 4);

	/* A batch alone (no savepoint: its transaction is rolled back) fails
	 * the same way, and is stored once the trigger is gone, then seen as a
	 * duplicate. */
	Cgperf__V1__Batch *one = batch("alone", 5, T0, 1);

	side_sql("CREATE TRIGGER test_refuse3 BEFORE INSERT ON probe_samples WHEN NEW.host = 'alone' "
		 "BEGIN SELECT RAISE(ABORT, 'refused alone'); END;");
	assert_int_equal(store_put_many(s, (const Cgperf__V1__Batch *const *)&one, 1, T0, res, err[0],
					sizeof(err[0])),
			 0);
	wire_batch_decoded_free(one);
	assert_int_equal(res[0], -EIO);
	assert_string_equal(err[0], "refused alone");
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "alone" }), 0);
	l = load(s);
	assert_int_equal(l.cgroups, 6);
	assert_int_equal(l.agent_batches, 4);
	side_sql("DROP TRIGGER test_refuse3;");
	assert_int_equal(put(s, batch("alone", 5, T0, 1), T0), 0);
	assert_int_equal(sel_total(s, (struct store_selection){ .host = "alone" }), 11);
	assert_int_equal(put(s, batch("alone", 5, T0, 1), T0), 1);
	l = load(s);
	assert_int_equal(l.agent_batches, 5);
	store_close(s);
}

static void test_parse_time_range(void **state)
{
	uint64_t ns = 0;
	const uint64_t now = T0;

	assert_int_equal(exporter_parse_time("1700000000.5", now, &ns), 0);
	assert_int_equal(ns, 1700000000500000000ull);
	assert_int_equal(exporter_parse_time("2262-04-11T00:00:00Z", now, &ns), 0);
	assert_true(ns <= INT64_MAX && ns > 9223000000000000000ull);
	assert_int_equal(exporter_parse_time("9223372035.999999999", now, &ns), 0);
	assert_true(ns <= INT64_MAX);
	assert_int_equal(exporter_parse_time("9223372036", now, &ns), -EINVAL);
	assert_int_equal(exporter_parse_time("20000000000", now, &ns), -EINVAL);
	assert_int_equal(exporter_parse_time("99999999999999999999999", now, &ns), -EINVAL);
	assert_int_equal(exporter_parse_time("3000-01-01T00:00:00Z", now, &ns), -EINVAL);
	assert_int_equal(exporter_parse_time("9999-12-31T23:59:59+01:00", now, &ns), -EINVAL);
	assert_int_equal(exporter_parse_time("-1h", now, &ns), 0);
	assert_int_equal(ns, now - 3600 * NS);
	assert_int_equal(exporter_parse_time("-100000d", now, &ns), -EINVAL);
	assert_int_equal(exporter_parse_time("", now, &ns), -EINVAL);
	assert_int_equal(exporter_parse_time("-", now, &ns), -EINVAL);
}

/* ---- heat map rows ---- */

struct lrows {
	size_t n;
	uint64_t start[8], count;
	char host[8][8];
};

static int take_lrow(void *arg, const struct store_latency_row *r)
{
	struct lrows *x = arg;

	assert_true(x->n < 8);
	x->start[x->n] = r->start_ns;
	snprintf(x->host[x->n++], sizeof(x->host[0]), "%s", r->host);
	assert_int_equal(r->end_ns, r->start_ns + NS);
	assert_int_equal(r->latency_ns.b[hist_bucket(1500)], r->latency_ns.count);
	x->count += r->latency_ns.count;
	return 0;
}

static size_t lrows(struct store *s, struct store_selection sel, const char *probe,
		    struct lrows *x)
{
	memset(x, 0, sizeof(*x));
	if (!sel.to_ns)
		sel.to_ns = T0 + 3600 * NS;
	if (!sel.from_ns)
		sel.from_ns = T0 - 3600 * NS;
	assert_int_equal(store_latency_rows(s, &sel, probe, take_lrow, x), 0);
	return x->n;
}

/* One row per batch (its interval) with the probe's latency histogram,
 * in order of start; host, cgroup and time select. */
static void test_latency_rows(void **state)
{
	struct store *s = open_store();
	struct lrows x;

	(void)state;
	assert_int_equal(put(s, batch("h2", 3, T0 + 120 * NS, 1), T0 + 120 * NS), 0);
	assert_int_equal(put(s, batch("h1", 1, T0, 1), T0), 0);
	assert_int_equal(put(s, batch("h1", 2, T0 + NS, 2), T0 + NS), 0);
	assert_int_equal(lrows(s, (struct store_selection){ 0 }, "sdt:pg:query", &x), 3);
	assert_int_equal(x.start[0], T0);
	assert_int_equal(x.start[1], T0 + NS);
	assert_string_equal(x.host[2], "h2");
	assert_int_equal(x.count, 3);
	assert_int_equal(lrows(s, (struct store_selection){ .host = "h2" }, "sdt:pg:query", &x), 1);
	assert_int_equal(lrows(s, (struct store_selection){ .cgroup = "/db" }, "sdt:pg:query", &x),
			 3);
	assert_int_equal(lrows(s, (struct store_selection){ .cgroup = "/web" }, "sdt:pg:query", &x),
			 0);
	assert_int_equal(lrows(s, (struct store_selection){ .from_ns = T0 + 100 * NS },
			       "sdt:pg:query", &x), 1);
	assert_int_equal(lrows(s, (struct store_selection){ 0 }, "sdt:pg:other", &x), 0);
	store_close(s);
}

int main(void)
{
	int failed = 0;

	failed += tl_run(TL_TESTS(test_put_and_select, test_totals_survive, test_migrate_v1,
		test_image_column_added, test_wal_bounded,
		test_count_overflow, test_future_start_retained, test_put_many,
		test_put_many_one_fails, test_latency_rows),
		NULL, NULL, setup, teardown);
	failed += tl_run(TL_TESTS(test_parse_time_range),
		NULL, NULL, NULL, NULL);
	return failed;
}
