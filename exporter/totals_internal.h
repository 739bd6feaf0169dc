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

/*
 * Series names live in totals.names, interned: a name pushed by every
 * agent for every cgroup ("cpu-clock") is held once, and its escaped label
 * form (the same pointer when nothing needs escaping) is made once, so a
 * scrape writes it with one copy instead of escaping it per series.
 */
struct counter_series {
	const char *event, *elabel; /* interned: the name; its escaped label text */
	double total; /* scaled events; ns for task-clock */
	uint64_t last_seen;
};

struct probe_series {
	const char *label, *elabel; /* interned, as counter_series */
	uint64_t hits;
	struct hist values, latency;
	uint64_t last_seen;
};

/* The fields a scrape reads first: one cache line per cgroup and family. */
struct cg {
	char *labels; /* escaped, shared by every series of the cgroup */
	struct counter_series *counters;
	size_t ncounters, ccap;
	struct probe_series *probes;
	size_t nprobes, pcap;
	uint32_t cpu; /* 1 + the index of the task-clock counter; 0: none */
	uint64_t truncated_seen;
	uint64_t last_seen;
	/* Stacks cut short (Profile.truncated_*), by reason; kept in the store
	 * as the counters are. */
	uint64_t truncated[WIRE_TRUNC_REASONS];
	const char *host, *path; /* in totals.cgmap's key "host\0path" */
	uint64_t cgroup_id;
	char *id[ID_N];
	size_t charged; /* bytes of the cgroup and its strings, in totals.bytes */
};

struct agent {
	char *agent_id, *host, *version;
	uint64_t first_seen, last_push, batches, stack_samples;
	struct wire_self self;
	size_t charged;
	struct agent *next;
};

/* Kinds of series, a byte of their key in totals.sidx. */
enum { SK_COUNTER, SK_PROBE };

/*
 * Three lib/hashmap tables: cgmap ("host\0path" -> the struct cg), sidx
 * ((cgroup address, kind, name) -> index in the cgroup's array) and names
 * (interned series names and label texts -> reference count). cgv holds
 * the cgroups in the order they came, for the scrape to walk.
 */
struct totals {
	struct hashmap *cgmap, *sidx, *names;
	struct cg **cgv;
	size_t ncg, cgcap;
	size_t ntrunc; /* cgroups with truncated_seen set */
	struct agent *agents;
	size_t nagents, nseries;
	size_t bytes; /* held for cgroups, series and agents (see charge) */
};

/* Every cgroup @c of @t, in the order they came. */
#define EACH_CG(t, c) EACH_CG_IF(t, c, true)
/* The same, or none when @cond (evaluated once) is false. */
#define EACH_CG_IF(t, c, cond)                                                     \
	for (size_t b_ = 0, n_ = (cond) ? (t)->ncg : 0; b_ < n_; b_++)            \
		for (const struct cg *c = (t)->cgv[b_]; c; c = NULL)

/* Exposition text made once and kept in the state (totals_expo.c). */
/* The escaped label text of @c: host, id, container, container_name, pod,
 * pod_name, namespace, unit, runtime, and image and container labels when
 * known (an empty label is no label to Prometheus; older series keep their
 * text), in c->labels. 0 or -ENOMEM. */
int totals_expo_labels(struct cg *c);
/* @raw as a label value: *@out NULL when it is its own (nothing to
 * escape), else the escaped text, malloc'd, @len bytes. 0 or -ENOMEM. */
int totals_expo_value(const char *raw, char **out, size_t *len);
/* The container labels of @g (only those the agent's allow-list names
 * travel) as label text in *@out, "" for none. 0 or -ENOMEM. */
int totals_expo_clabels(const Cgperf__V1__Batch *m, const Cgperf__V1__Cgroup *g, char **out);

#endif
