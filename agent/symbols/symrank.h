/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_SYMRANK_H
#define CGPERF_AGENT_SYMRANK_H

/*
 * Which of several names at one address a profile shows, one rule for ELF
 * symbols (symtab.c) and kernel symbols (ksyms.c): the lower rank (where
 * the name came from and its binding, graded by the caller), then fewer
 * leading underscores (malloc, not __libc_malloc), then the shorter name,
 * then byte order, so the choice never depends on the order of the input.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct symrank {
	uint8_t rank;
	uint8_t unders; /* symrank_unders() */
	const char *name;
	size_t len;
};

/* The leading underscores of @name (@len bytes), counted up to 255. */
static inline uint8_t symrank_unders(const char *name, size_t len)
{
	uint8_t n = 0;

	while (n < len && n < 255 && name[n] == '_')
		n++;
	return n;
}

/* <0 when @a is the better name, >0 when @b is, 0 for the same name. */
static inline int symrank_cmp(const struct symrank *a, const struct symrank *b)
{
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->unders != b->unders)
		return a->unders < b->unders ? -1 : 1;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return memcmp(a->name, b->name, a->len);
}

#endif
