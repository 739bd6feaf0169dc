/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_TARGETS_H
#define CGPERF_EXPORTER_TARGETS_H

/*
 * What the exporter knows of its agents and cgroups, for people and tools:
 * GET /api/v1/targets (JSON) and GET / (a small HTML page with links to
 * every host's, cgroup's and container's flame graph, folded stacks and
 * pprof profile). Both are built from the in-memory totals (callers hold
 * their lock); every string from an agent is escaped for its context.
 */

#include <stdint.h>

#include "exporter/page.h"
#include "exporter/totals.h"

/* {"agents":[...],"cgroups":[...]}, what was seen at or after @cutoff_ns.
 * 0 (a page that ran out of memory says so itself, page_take()). */
int targets_json(const struct totals *t, uint64_t cutoff_ns, struct page *p);

/* The index page. 0 or -ENOMEM. */
int targets_index(const struct totals *t, uint64_t cutoff_ns, struct page *p);

/* @ns as RFC 3339 UTC with milliseconds ("2024-05-01T12:00:00.123Z"). */
void targets_time(uint64_t ns, char *buf, size_t len);

#endif
