/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_PROCMETRICS_H
#define CGPERF_EXPORTER_PROCMETRICS_H

/*
 * The standard process_* metrics of the exporter itself, as Prometheus
 * client libraries export them, read from /proc/self: CPU seconds,
 * resident and virtual memory, open and maximum file descriptors, start
 * time. A figure that cannot be read is left out.
 */

#include <stdbool.h>

#include "exporter/page.h"

void procmetrics_render(struct page *p, bool openmetrics);

#endif
