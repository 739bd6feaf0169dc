/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_SELFMETRICS_H
#define CGPERF_AGENT_SELFMETRICS_H

/*
 * The continuous agent's own /metrics (Prometheus text format 0.0.4), for
 * users who scrape hosts directly: a libmicrohttpd thread serves the last
 * page the main loop published, so a scrape never touches the sampling
 * state. Naming follows docs/metrics.md (cgperf_ prefix, base units,
 * _total on counters, every label value escaped).
 */

#include <stddef.h>
#include <stdio.h>

struct selfmetrics;

/* Listen on "HOST:PORT" (IPv4 or [IPv6]). NULL + errno, with a reason in
 * @err. */
struct selfmetrics *selfmetrics_start(const char *listen, char *err, size_t errlen);
/* Replace the page served (copied). */
void selfmetrics_publish(struct selfmetrics *m, const char *text, size_t len);
void selfmetrics_stop(struct selfmetrics *m);

/* Write @v as a Prometheus label value (without the quotes): backslash,
 * double quote and newline escaped. lib/prom.h's prom_label(), under the
 * name the run command's writer calls; new code calls prom_label(). */
void selfmetrics_label(FILE *f, const char *v);

#endif
