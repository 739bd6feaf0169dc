/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_ANNOTATE_H
#define CGPERF_AGENT_ANNOTATE_H

/*
 * The output of `cgperf-agent annotate` (annotate_print.c), apart from the
 * sampling and the lookups (cmd_annotate.c) so it can be tested on its own.
 * Internal to agent/cmd/.
 *
 * The shape follows `perf annotate --stdio`: a header, one line per
 * instruction "PERCENT : ADDRESS: INSTRUCTION", the source line above the
 * instructions it produced when DWARF says, then a sorted summary of the
 * hottest source lines (or instructions, without DWARF). Percentages are of
 * the symbol's own samples, in hundredths rounded by largest remainder so
 * the printed figures add up to exactly 100.00.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct annot_line {
	uint64_t addr;	   /* link-time address */
	const char *text;  /* the instruction */
	uint64_t count;	   /* samples at it */
	const char *file;  /* its source file (as DWARF names it), or NULL */
	int line;	   /* its source line, 0 unknown */
	const char *src;   /* that line's text, or NULL when unreadable */
};

struct annot_view {
	const char *symbol;  /* "hash_search_with_hash_value", "postgres+0x4a3f10" */
	const char *module;  /* the binary's path */
	const char *event;   /* "cpu-clock" */
	const struct annot_line *v;
	size_t n;
	size_t top;	     /* entries of the sorted summary (0: none) */
};

/*
 * Shares of @counts[0..@n) in hundredths of a percent into @out, rounded so
 * that they add up to exactly 10000 when any count is not 0 (largest
 * remainder; ties to the earlier entry); all 0 otherwise. Returns the total
 * of @counts.
 */
uint64_t annot_percents(const uint64_t *counts, size_t n, uint32_t *out);

/* Print @a to @f as described above. 0, or -ENOMEM. */
int annot_print(FILE *f, const struct annot_view *a);

#endif
