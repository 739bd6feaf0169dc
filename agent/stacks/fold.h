/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_FOLD_H
#define CGPERF_AGENT_FOLD_H

/*
 * Folding: counting identical stacks. A hash table from byte keys to a
 * 64-bit value (lib/hashmap.h's map, same contract), used twice by
 * `record`: first keyed by raw stacks (object ids and file offsets, cheap
 * to build per sample), then keyed by the folded text "comm;root;...;leaf"
 * once every distinct frame has been named.
 *
 * Folded text is what flamegraph.pl, speedscope and Pyroscope read: frames
 * root first, ';' between them, one space, an integer count.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fold;

struct fold *fold_new(void);
void fold_free(struct fold *f);

/* The value for @key, inserted as 0 when new. NULL when out of memory or
 * when the table holds @max_keys (see fold_set_limit) and @key is new. */
uint64_t *fold_slot(struct fold *f, const void *key, size_t len);
/* Cap the number of distinct keys (0 = no cap); refused inserts are counted. */
void fold_set_limit(struct fold *f, size_t max_keys);
uint64_t fold_refused(const struct fold *f);

size_t fold_count(const struct fold *f);
/* Visit every entry, in no particular order. */
void fold_foreach(const struct fold *f,
		  void (*cb)(void *ctx, const void *key, size_t len, uint64_t value), void *ctx);

/* Write string-keyed entries as "KEY VALUE\n", sorted by key. 0 or -errno. */
int fold_write(const struct fold *f, FILE *out);

/*
 * Make a frame name safe inside a folded line, in place: ';' becomes ':',
 * control characters (newlines included) become '?', and a trailing
 * space-digits tail cannot be confused with the count because the count is
 * always the text after the last space of the line.
 */
void fold_sanitize(char *name);

#endif
