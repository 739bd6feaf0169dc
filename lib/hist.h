/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_HIST_H
#define CGPERF_AGENT_HIST_H

/*
 * Log2 histograms of probe argument values and latencies. Bucket 0 holds
 * 0; bucket k (1..64) holds values in [2^(k-1), 2^k). Negative values are
 * counted apart. Fixed size, no allocation: one per (probe, cgroup).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define HIST_BUCKETS 65

struct hist {
	uint64_t count, negative;
	uint64_t sum; /* of non-negative values, saturating */
	uint64_t min, max;
	uint64_t b[HIST_BUCKETS];
};

void hist_add(struct hist *h, int64_t v);
void hist_merge(struct hist *into, const struct hist *from);
/* Bucket index of @v (>= 0) and the bounds of bucket @k: [lo, hi]. */
int hist_bucket(uint64_t v);
void hist_bounds(int k, uint64_t *lo, uint64_t *hi);
double hist_mean(const struct hist *h);
/* The first and last non-empty buckets of @h: false (both -1) when all
 * are empty. */
bool hist_span(const struct hist *h, int *first, int *last);

/* Text rendering with bars, like funclatency/bpftrace's. @unit labels the
 * values ("bytes", "ns"). Empty leading/trailing buckets are skipped. */
void hist_print(const struct hist *h, FILE *f, const char *indent, const char *unit);
/* JSON object: {"count":..,"sum":..,"min":..,"max":..,"mean":..,
 * "buckets":[{"le":HI,"count":N},...]} (only non-empty buckets). */
void hist_json(const struct hist *h, FILE *f);

#endif
