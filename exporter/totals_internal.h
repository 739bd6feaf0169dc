/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_TOTALS_INTERNAL_H
#define CGPERF_EXPORTER_TOTALS_INTERNAL_H

/*
 * The totals' state, shared by totals.c (the tables, adding batches,
 * expiry, restoring from the store) and totals_expo.c (writing them as
 * Prometheus or OpenMetrics text). Nothing else sees it: totals.h is the
 * interface. Read under the caller's lock, as totals.h says.
 */

#include <stddef.h>
#include <stdint.h>

#include "lib/hist.h"
#include "wire/wire.h"
#include "exporter/totals.h"


/* Identity fields in store_cgroup order; then ID_CLABELS, the container
 * labels the agent sent (its allow-list) as written label text
 * (",container_label_KEY=\"VALUE\"..."), which the store does not keep. */
enum { ID_CONTAINER, ID_RUNTIME, ID_POD, ID_QOS, ID_NS, ID_POD_NAME, ID_CONTAINER_NAME, ID_UNIT,
       ID_SLICE, ID_IMAGE, ID_CLABELS, ID_N };

struct counter_series {
	char *event;
	double total; /* scaled events; ns for task-clock */
	uint64_t last_seen;
};

struct probe_series {
	char *label;
	uint64_t hits;
	struct hist values, latency;
	uint64_t last_seen;
};

struct cg {
	char *host, *path;
	uint64_t cgroup_id, last_seen;
	char *id[ID_N];
	char *labels; /* escaped, shared by every series of the cgroup */
	size_t charged; /* bytes of the cgroup and its strings, in totals.bytes */
	struct counter_series *counters;
	size_t ncounters, ccap;
	struct probe_series *probes;
	size_t nprobes, pcap;
	/* Stacks cut short (Profile.truncated_*), by reason: kept here only,
	 * not in the store, so they start from 0 when the exporter restarts
	 * (a counter reset to Prometheus). */
	uint64_t truncated[WIRE_TRUNC_REASONS];
	uint64_t truncated_seen;
	struct cg *next;
};

struct agent {
	char *agent_id, *host, *version;
	uint64_t first_seen, last_push, batches, stack_samples;
	struct wire_self self;
	size_t charged;
	struct agent *next;
};

/* Where a series is: kind SK_COUNTER or SK_PROBE, index in its array. */
enum { SK_COUNTER, SK_PROBE };

struct sref {
	struct cg *cg; /* NULL: an empty slot */
	uint32_t idx, kind;
	uint64_t hash;
};

struct totals {
	struct cg **cgs;
	size_t ncg, cg_buckets;
	struct agent *agents;
	size_t nagents, nseries;
	struct sref *sidx; /* open addressing, at most half full */
	size_t nslots;     /* a power of two, or 0 */
	size_t bytes;      /* held for cgroups, series and agents (see charge) */
};

/* Every cgroup @c of @t, in table order. */
#define EACH_CG(t, c)                                           \
	for (size_t b_ = 0; b_ < (t)->cg_buckets; b_++)         \
		for (const struct cg *c = (t)->cgs[b_]; c; c = c->next)

#endif
