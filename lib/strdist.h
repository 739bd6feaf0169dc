/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_STRDIST_H
#define CGPERF_LIB_STRDIST_H

/*
 * Edit distance between two names, for "did you mean" hints (event names,
 * config keys of the agent and of the exporter). It keeps the ev_ prefix of
 * events.c, where it was first written, so its callers need no change.
 */

#include <stddef.h>

/* Levenshtein distance, exposed for tests. Strings over 255 bytes compare as far. */
size_t ev_distance(const char *a, const char *b);

#endif
