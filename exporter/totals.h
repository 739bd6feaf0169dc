/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_TOTALS_H
#define CGPERF_EXPORTER_TOTALS_H

/*
 * What /metrics shows, in memory: per cgroup (host, path) its identity and
 * its series (counter totals per event, probe hits and histograms per
 * label), and per agent its summed figures. Built from the store at start
 * (totals_visitor()), then moved forward by each committed batch
 * (totals_add_batch()) in commit order, which keeps it equal to the
 * store's running totals, bit for bit. A scrape renders from here only:
 * no SQL per scrape.
 *
 * Not thread-safe: callers serialize. Nothing here prints to a stream; the
 * render calls append to a struct page.
 */

#include <stdbool.h>
#include <stdint.h>

#include "exporter/page.h"
#include "exporter/store/store.h"
#include "proto/cgperf.pb-c.h"

struct totals;

struct totals *totals_new(void);
void totals_free(struct totals *t);

/* A visitor for store_load() that restores @t. */
void totals_visitor(struct totals *t, struct store_visitor *v);

/*
 * Make @t what @fresh holds (built by a store_load() of a shared store,
 * where other exporters write too: the store keeps every figure, stack
 * truncations included); @fresh gets @t's old tables, for totals_free().
 */
void totals_replace(struct totals *t, struct totals *fresh);

/* Add a batch the store committed at @now_ns. 0 or -ENOMEM (then the
 * totals lack part of it; /metrics is short until a restart). */
int totals_add_batch(struct totals *t, const Cgperf__V1__Batch *m, uint64_t now_ns);

/* Drop cgroups, series and agents last seen before @before_ns. */
void totals_expire(struct totals *t, uint64_t before_ns);

/* Counter series + probe series + agents held. */
size_t totals_series(const struct totals *t);

/*
 * What bounds the memory of the totals: the entries held (cgroups +
 * counter series + probe series + agents) and the bytes they take. A push
 * must be refused before it is stored when totals_entries() or
 * totals_bytes() plus what totals_batch_growth() says would pass the
 * exporter's caps (the defaults below unless configured). Else agents
 * sending ever new cgroup paths, events or probe labels grow the exporter
 * without limit until series expire; and as a cgroup's identity fields
 * may take 8 KiB each, one 40 KB gzip'd push of 10,000 cgroups that share
 * one long string used to take 1.3 GB.
 */
#define TOTALS_ENTRIES_MAX_DEFAULT 1000000
#define TOTALS_BYTES_MAX_DEFAULT ((size_t)1 << 30)
size_t totals_entries(const struct totals *t);
size_t totals_bytes(const struct totals *t);
/* The entries totals_add_batch(@t, @m) would add, and in *@bytes (may be
 * NULL) the bytes: upper bounds (a cgroup or series repeated within @m
 * counts each time). One hash lookup per cgroup, counter and probe of @m. */
size_t totals_batch_growth(const struct totals *t, const Cgperf__V1__Batch *m, size_t *bytes);

/*
 * Append the cgroup, probe and agent families to @p, skipping what was
 * last seen before @cutoff_ns; @openmetrics names counter families
 * without _total in HELP/TYPE, as OpenMetrics 1.0 wants.
 */
void totals_render(const struct totals *t, struct page *p, bool openmetrics, uint64_t cutoff_ns);

/* Walk cgroups and agents seen at or after @cutoff_ns; a non-zero return
 * of @fn stops the walk and is returned. Strings live until @fn returns. */
int totals_each_cgroup(const struct totals *t, uint64_t cutoff_ns,
		       int (*fn)(void *arg, const struct store_cgroup *c), void *arg);
int totals_each_agent(const struct totals *t, uint64_t cutoff_ns,
		      int (*fn)(void *arg, const struct store_agent *a), void *arg);

#endif
