/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_SUGGEST_H
#define CGPERF_LIB_SUGGEST_H

/*
 * "Did you mean" hints, one helper for every caller: config keys and enum
 * values of the agent and of the exporter, event names, probe symbols and
 * USDT names.
 *
 * Two shapes: suggest_best() picks the one closest name of a short list
 * (config keys, enum values); struct suggest keeps the few best of a long
 * scan (every symbol of a binary, every tracepoint), each with a score the
 * caller gives (suggest_score() or its own), ties broken by name.
 * Nothing here prints.
 */

#include <stddef.h>

/* Levenshtein distance. Strings over 255 bytes compare as far (> 255). */
size_t suggest_distance(const char *a, const char *b);

/* The distance a name of @len bytes may be from a key and still be a typo of
 * it: 1 under 6 bytes, 2 under 10, else 3. */
size_t suggest_limit(size_t len);

/*
 * The name of @names (the first @n, or up to a NULL entry) closest to @want,
 * if its distance is at most @maxd and less than @want's length (so "x" never
 * suggests "y"); NULL otherwise. Ties go to the first. The result points into
 * @names.
 */
const char *suggest_best(const char *want, const char *const *names, size_t n, size_t maxd);

/*
 * Score @have as a hint for @want, lower is closer; SIZE_MAX when too far:
 * the edit distance, up to a third of @want's length (at least 2), and a name
 * containing the other (long enough not to be there by accident: "malloc" in
 * "__libc_malloc", not "main" in "PyNumber_InPlaceRemainder") counts as 2.
 */
size_t suggest_score(const char *want, const char *have);

#define SUGGEST_MAX 8

/* The best few of a scan. Zero it, then suggest_init(). Owns its names. */
struct suggest {
	char *name[SUGGEST_MAX];
	size_t score[SUGGEST_MAX];
	size_t n, max;
};

/* Keep at most @max (capped at SUGGEST_MAX) names. */
void suggest_init(struct suggest *s, size_t max);

/* Offer @name with @score (SIZE_MAX: ignored). A name offered twice is kept
 * once; an allocation failure only loses the hint. */
void suggest_add(struct suggest *s, const char *name, size_t score);

/* suggest_add(s, have, suggest_score(want, have)). */
void suggest_consider(struct suggest *s, const char *want, const char *have);

/* Hand the names over to the caller (@out holds s->n, each to free()); @s is
 * left empty. Returns how many. */
size_t suggest_take(struct suggest *s, char **out);

/* Free the names kept; @s may be reused after suggest_init(). */
void suggest_release(struct suggest *s);

#endif
