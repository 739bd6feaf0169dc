/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_STORE_H
#define CGPERF_EXPORTER_STORE_H

/*
 * The exporter's durable store: SQLite in the data directory (WAL mode,
 * synchronous=FULL), one transaction per batch. A batch is known by
 * (agent_id, seq); storing one a second time changes nothing.
 *
 * Tables: batches (one row per accepted batch), counter_samples (one row per
 * counter of a batch, raw values), stacks (folded stacks, interned once) and
 * stack_samples (sample counts per minute bucket, host, cgroup, event and
 * stack). Not thread-safe: callers serialize. Nothing here prints.
 */

#include <stdint.h>
#include <stddef.h>

#include "proto/cgperf.pb-c.h"

struct store;

/*
 * Open (creating if needed) @dir/cgperf.db. NULL + errno on failure, with
 * a one-line reason in @err.
 */
struct store *store_open(const char *dir, char *err, size_t errlen);
void store_close(struct store *s);

/*
 * Store the decoded, validated batch @m received at @received_ns in one
 * transaction. Returns 0 once committed, 1 if (agent_id, seq) was stored
 * before (nothing written), or -errno (-EIO for an SQLite error, reason in
 * @err) with nothing written.
 */
int store_put(struct store *s, const Cgperf__V1__Batch *m, uint64_t received_ns, char *err,
	      size_t errlen);

/* One stored counter row, as store_each_counter() hands it out. */
struct store_counter {
	const char *host, *cgroup_path, *container_id, *pod_uid, *unit, *event;
	uint64_t value, time_enabled, time_running;
	int supported;
};

/*
 * Call @fn for every stored counter row, in the order they were stored; a
 * non-zero return of @fn stops the walk and is returned. The strings live
 * until @fn returns. 0, or -errno.
 */
int store_each_counter(struct store *s, int (*fn)(void *arg, const struct store_counter *c),
		       void *arg);

#endif
