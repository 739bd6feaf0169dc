/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_TOTALS_H
#define CGPERF_EXPORTER_TOTALS_H

/*
 * Running totals per (host, cgroup path, event), summed from counter deltas
 * scaled for multiplexing (value x time_enabled / time_running), and their
 * rendering as Prometheus text. The identity labels (container, pod, unit)
 * are the last ones seen. Not thread-safe: callers serialize. Adding the
 * same rows in the same order gives bit-identical totals, which is what
 * lets a restart rebuild them from the store.
 */

#include <stdint.h>
#include <stdio.h>

#include "proto/cgperf.pb-c.h"

struct totals;

struct totals *totals_new(void);
void totals_free(struct totals *t);

/* Add one counter delta. Unsupported counters are ignored. 0 or -ENOMEM. */
int totals_add(struct totals *t, const char *host, const char *path, const char *container,
	       const char *pod, const char *unit, const char *event, uint64_t value,
	       uint64_t enabled, uint64_t running, int supported);

/* Add every counter of a decoded batch, in batch order. 0 or -ENOMEM. */
int totals_add_batch(struct totals *t, const Cgperf__V1__Batch *m);

/*
 * Write cgperf_cgroup_perf_events_total and cgperf_cgroup_cpu_seconds_total
 * (from task-clock) to @f, every label value escaped.
 */
void totals_render(const struct totals *t, FILE *f);

#endif
