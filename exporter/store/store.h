/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_STORE_H
#define CGPERF_EXPORTER_STORE_H

/*
 * The exporter's durable store, behind one interface so that backends can
 * be swapped (perf's unwind ops): struct store_ops holds the calls, a
 * backend fills one (store_sqlite_ops: SQLite in the data directory;
 * store_clickhouse_ops: a ClickHouse server or cluster over HTTP) and
 * callers use only the store_*() wrappers below, never a backend's name.
 *
 * What every backend must guarantee:
 *  - put() is durable: when it returns 0 the batch is stored and survives
 *    a crash (kill -9, power loss as far as fsync goes). A batch is known
 *    by (agent_id, seq); a second put() of it returns 1, or 0 on a shared
 *    store that cannot tell, and changes no answer. On error nothing of it
 *    is visible (SQLite), or what was written is counted once the batch
 *    is put again (ClickHouse: answers dedupe by the batch key). -EAGAIN
 *    says the backend is unreachable for now: the agent should retry.
 *  - A shared store (ops->shared) may be written by other exporters too:
 *    load() then gives what every exporter stored, and the exporter
 *    reloads its totals from it before answering instead of trusting what
 *    it added itself.
 *  - Running totals (counters per cgroup and event, probe hits and
 *    histograms, agents' figures) are kept in the same transaction as the
 *    batch, so that load() gives back exactly what was summed, whatever
 *    retention() has deleted since: counters on /metrics never go back.
 *  - Calls are thread-safe: the backend serializes writers (put,
 *    retention, expire) and readers (stacks, module, load) as it needs;
 *    readers should not wait for a writer's fsync.
 *  - Nothing prints; errors come back as -errno with a one-line reason.
 *
 * Ownership: strings in the structs handed to callbacks live until the
 * callback returns.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/hist.h"
#include "wire/wire.h"
#include "proto/cgperf.pb-c.h"

struct store;

/* What is known of a cgroup (as last pushed), and when it was last seen. */
struct store_cgroup {
	const char *host, *path;
	uint64_t cgroup_id;
	const char *container_id, *runtime, *pod_uid, *qos, *k8s_namespace, *pod_name,
		*container_name, *unit, *slice;
	const char *image; /* NULL from a store that does not keep it */
	uint64_t last_seen_ns;
};

/* The running total of one counting event of one cgroup (scaled for
 * multiplexing; ns for task-clock). */
struct store_counter_total {
	const char *host, *path, *event;
	double total;
	uint64_t last_seen_ns;
};

/* The running totals of one probe in one cgroup. */
struct store_probe_total {
	const char *host, *path, *label;
	uint64_t hits;
	struct hist values, latency_ns; /* count 0: none seen */
	uint64_t last_seen_ns;
};

/* Stacks of one cgroup the agents could not complete, summed by reason
 * (WIRE_TRUNC_*: Profile.truncated_*), and when some were last counted. */
struct store_truncated {
	const char *host, *path;
	uint64_t count[WIRE_TRUNC_REASONS];
	uint64_t last_seen_ns;
};

/* An agent: its last header, its summed counts and last gauges. */
struct store_agent {
	const char *agent_id, *host, *version;
	uint64_t first_seen_ns, last_push_ns, batches, stack_samples;
	struct wire_self self; /* counts summed; spool_bytes, spool_batches last */
};

/* Called by load() for every persistent row; a non-zero return stops the
 * walk and is returned. Any member may be NULL. */
struct store_visitor {
	int (*cgroup)(void *arg, const struct store_cgroup *c);
	int (*counter)(void *arg, const struct store_counter_total *t);
	int (*probe)(void *arg, const struct store_probe_total *t);
	int (*agent)(void *arg, const struct store_agent *a);
	int (*truncated)(void *arg, const struct store_truncated *t);
	void *arg;
};

/* Which stacks to sum; NULL or "" fields match everything. */
struct store_selection {
	const char *host;
	const char *cgroup;    /* exact cgroup path */
	const char *container; /* container id (or a prefix of >= 12), or container name */
	const char *pod;       /* pod UID or pod name */
	const char *event;     /* sampling event */
	uint64_t from_ns, to_ns; /* [from, to): buckets that start in it, widened to buckets */
};

/* One stored stack summed over a selection, per sampling rate. */
struct store_stack {
	const char *folded; /* "root;...;leaf" */
	const char *event;
	uint64_t count;
	uint64_t frequency, period; /* as the profile said; both 0 unknown */
	const char *modules; /* per frame the module id (store_module), space-separated,
			      * 0 = none; "" when not known */
};

/* One pushed interval's latency histogram of a probe in a cgroup (a row
 * of a heat map). */
struct store_latency_row {
	const char *host, *path;
	uint64_t start_ns, end_ns; /* the batch's interval, as the agent said */
	struct hist latency_ns;
};

/* One step of one counter series (store_series()): a series is a
 * (host, cgroup, event). */
struct store_series_row {
	/* host, path and the identity last stored for the cgroup; fields not
	 * known are "" (cgroup_id 0), last_seen_ns is not set */
	const struct store_cgroup *cgroup;
	const char *event;
	uint64_t t_ns; /* the step's start: a multiple of the step (Unix time) */
	/* store_scaled() of every supported counter delta of the series read
	 * in [t_ns, t_ns + step), summed */
	double value;
};

/* A binary frames were found in. */
struct store_module {
	char *path, *build_id; /* malloc'd, the caller frees both */
};

struct store_stats {
	uint64_t bytes;       /* on disk */
	uint64_t stack_rows;  /* stack_samples rows written (summed or new) since open */
	uint64_t deleted_rows; /* deleted by retention since open */
};

/* Where a store is: the backend reads what it needs. */
struct store_config {
	const char *dir;      /* sqlite: the data directory */
	const char *url;      /* clickhouse: http://HOST:PORT of its HTTP interface */
	const char *database; /* clickhouse: NULL or "" = "cgperf" */
	const char *cluster;  /* clickhouse: remote_servers cluster; NULL or "": one server */
	const char *user, *password; /* clickhouse: NULL = the server's default user */
	/* clickhouse with a cluster: each shard's HTTP URL, comma-separated
	 * (tables and retention on each); NULL or "": the server's only */
	const char *shard_urls;
};

struct store_ops {
	const char *name;
	/* Answers come from the store (see above), not from the process. */
	bool shared;
	/* Open or create the store of @cfg. NULL + errno, reason in @err. */
	struct store *(*open)(const struct store_config *cfg, char *err, size_t errlen);
	void (*close)(struct store *s);
	/* See store_put_many() (store_put() is a put_many() of one). */
	int (*put_many)(struct store *s, const Cgperf__V1__Batch *const *m, size_t n,
			uint64_t received_ns, int *res, char *err, size_t errlen);
	int (*load)(struct store *s, const struct store_visitor *v);
	int (*expire)(struct store *s, uint64_t before_ns);
	int (*retention)(struct store *s, uint64_t before_ns, size_t max_rows, size_t *deleted);
	int (*stacks)(struct store *s, const struct store_selection *sel,
		      int (*fn)(void *arg, const struct store_stack *st), void *arg);
	int (*module)(struct store *s, int64_t id, struct store_module *out);
	/* What only the backend knows (bytes); the row counts are the
	 * front's (store_count_rows()). NULL: nothing. */
	void (*stats)(struct store *s, struct store_stats *out);
	/* See store_latency_rows(). */
	int (*latency_rows)(struct store *s, const struct store_selection *sel, const char *probe,
			    int (*fn)(void *arg, const struct store_latency_row *r), void *arg);
	/* See store_series(); @step_ns > 0 and @top > 0 (the front checks). */
	int (*series)(struct store *s, const struct store_selection *sel, uint64_t step_ns,
		      size_t top, int (*fn)(void *arg, const struct store_series_row *r),
		      void *arg);
};

/* Every store starts with this; backends embed it first. */
struct store {
	const struct store_ops *ops;
	/* store_stats()'s row counts since open: stack rows added by the
	 * backend (store_count_rows()), deleted rows by store_retention(). */
	_Atomic uint64_t stack_rows, deleted_rows;
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_clickhouse_ops;

/* The backend called @name ("sqlite", "clickhouse"), or NULL. */
const struct store_ops *store_backend(const char *name);

/*
 * Open (creating if needed) the store of backend @ops in @dir. NULL + errno
 * on failure, with a one-line reason in @err.
 */
struct store *store_open(const struct store_ops *ops, const char *dir, char *err, size_t errlen);
/* The same with every setting a backend may need. */
struct store *store_open_config(const struct store_ops *ops, const struct store_config *cfg,
				char *err, size_t errlen);
/* NULL is fine. */
void store_close(struct store *s);

/* True when other exporters may write to @s (ops->shared). */
bool store_shared(const struct store *s);

/*
 * Store the decoded, validated batch @m received at @received_ns, with the
 * running totals it adds to, in one transaction. Returns 0 once committed,
 * 1 if (agent_id, seq) was stored before (nothing written), or -errno
 * (-EIO for a backend error, reason in @err) with nothing written.
 */
int store_put(struct store *s, const Cgperf__V1__Batch *m, uint64_t received_ns, char *err,
	      size_t errlen);

/*
 * store_put() of @n batches at once, in one transaction where the backend
 * can (one fsync for all: group commit). @res[i] gets what store_put()
 * would have returned for @m[i]; a batch that fails leaves nothing and the
 * others are stored. @err holds @n reasons of @errlen bytes each: the one
 * at @err + i * @errlen is @m[i]'s, empty unless @res[i] < 0. Returns
 * -errno when the transaction as a whole failed (every @res[i] is then
 * that, and every reason the transaction's), else 0.
 */
int store_put_many(struct store *s, const Cgperf__V1__Batch *const *m, size_t n,
		   uint64_t received_ns, int *res, char *err, size_t errlen);

/* Walk every persistent total, cgroup and agent (to rebuild /metrics at
 * start): cgroups first, then counters, probes, agents. 0 or -errno. */
int store_load(struct store *s, const struct store_visitor *v);

/* Forget cgroups' series and agents last seen before @before_ns: their
 * running totals are deleted (a series seen again starts from zero).
 * 0 or -errno. */
int store_expire(struct store *s, uint64_t before_ns);

/*
 * Delete raw rows (stack samples of minute buckets that start before
 * @before_ns, counter and probe rows and batches received before it,
 * cgroup identities not seen since, then unreferenced interned stacks):
 * one transaction of at most @max_rows rows, so ingest waits little.
 * *@deleted gets the rows deleted. Returns 1 when there may be more to do
 * (call again), 0 when done, or -errno. Running totals are untouched.
 */
int store_retention(struct store *s, uint64_t before_ns, size_t max_rows, size_t *deleted);

/* Call @fn for each distinct (stack, event, frequency, period) of @sel with
 * its summed count; a non-zero return of @fn stops and is returned. */
int store_stacks(struct store *s, const struct store_selection *sel,
		 int (*fn)(void *arg, const struct store_stack *st), void *arg);

/* Module @id of a store_stack's modules: 0 and *@out filled, -ENOENT when
 * unknown, or -errno. */
int store_module(struct store *s, int64_t id, struct store_module *out);

void store_stats(struct store *s, struct store_stats *out);
/* For backends: @n more stack_samples rows written (summed or new). Any
 * thread. */
void store_count_rows(struct store *s, uint64_t n);

/*
 * Call @fn for each stored interval of probe @probe (its label) whose
 * latency histogram is not empty, in the host, cgroup and time range of
 * @sel (batches that started in [from, to); sel->event, container and
 * pod are not used), in order of start. A non-zero return of @fn stops
 * and is returned. -EOPNOTSUPP when the backend keeps no intervals.
 */
int store_latency_rows(struct store *s, const struct store_selection *sel, const char *probe,
		       int (*fn)(void *arg, const struct store_latency_row *r), void *arg);

/*
 * Counters over time, for GET /api/v1/series: call @fn for each step of
 * @step_ns with data of each of the @top counter series (host, cgroup,
 * event) of @sel whose summed deltas are largest over the range (ties by
 * host, path, event), grouped by series (in no particular order of
 * series) and in order of time within one. A counter delta is read at
 * the end of its batch's interval, or when the batch arrived if that was
 * earlier (an agent's clock ahead); it counts when that time is in
 * [sel->from_ns, sel->to_ns), in the step that holds it (steps start at
 * multiples of @step_ns). Only supported counters, scaled as the totals
 * are (store_scaled()), and only raw rows retention kept. The steps and
 * the top are computed by the backend's query, not by reading every row.
 * A non-zero return of @fn stops and is returned; -EINVAL for a zero
 * @step_ns or @top, -EOPNOTSUPP when the backend keeps no raw counters.
 */
int store_series(struct store *s, const struct store_selection *sel, uint64_t step_ns, size_t top,
		 int (*fn)(void *arg, const struct store_series_row *r), void *arg);

/* A histogram as words, the way stores keep it: count, negative, sum, min,
 * max, then the HIST_BUCKETS buckets. */
#define STORE_HIST_WORDS (5 + HIST_BUCKETS)
void store_hist_words(const struct hist *h, uint64_t w[STORE_HIST_WORDS]);
void store_hist_from_words(const uint64_t w[STORE_HIST_WORDS], struct hist *h);

/* The scaled value of a counter delta, exactly as every store and the
 * /metrics totals sum it: value x enabled / running (0 when not running). */
double store_scaled(uint64_t value, uint64_t enabled, uint64_t running);

#endif
