/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_SEARCH_H
#define CGPERF_LIB_SEARCH_H

/*
 * Binary search over sorted tables keyed by a uint64_t (an address, an
 * offset): the one loop behind every "which symbol, FDE, span or row holds
 * this address" question.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * In the array @base of @n elements of @size bytes, each holding a uint64_t
 * key at byte offset @off and sorted by it (ascending; equal keys allowed):
 * how many elements have a key <= @key. The last such element, if any, is
 * at index (result - 1). @base may be NULL when @n is 0.
 *
 * Inline, so each call site's constant @size and @off fold into its loop:
 * the unwinder runs it several times a frame, and as an out-of-line call
 * with a multiply per step it took 5% of `record --call-graph dwarf`'s CPU
 * on PostgreSQL (bench/RESULTS-issue11.md).
 */
static inline size_t search_upper_u64(const void *base, size_t n, size_t size, size_t off,
				      uint64_t key)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, b + mid * size + off, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
