// SPDX-License-Identifier: MIT
/*
 * annotate's output (see annotate.h): percentages, the instruction lines
 * with their source lines, and the summary of the hottest lines.
 */
#include "agent/cmd/annotate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"

struct rem {
	size_t i;
	uint64_t frac; /* the remainder of count * 10000 / total */
};

static int rem_cmp(const void *pa, const void *pb)
{
	const struct rem *a = pa, *b = pb;

	if (a->frac != b->frac)
		return a->frac > b->frac ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

uint64_t annot_percents(const uint64_t *counts, size_t n, uint32_t *out)
{
	uint64_t total = 0, given = 0;
	struct rem *r;

	for (size_t i = 0; i < n; i++)
		total += counts[i];
	if (!total) {
		memset(out, 0, n * sizeof(*out));
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		/* counts are samples: far below 2^64 / 10000 */
		out[i] = (uint32_t)(counts[i] * 10000 / total);
		given += out[i];
	}
	r = malloc(n * sizeof(*r));
	if (!r) {
		/* without the sort, the leftover goes to the first counted entries */
		for (size_t i = 0; i < n && given < 10000; i++)
			if (counts[i]) {
				out[i]++;
				given++;
			}
		return total;
	}
	for (size_t i = 0; i < n; i++)
		r[i] = (struct rem){i, counts[i] * 10000 % total};
	qsort(r, n, sizeof(*r), rem_cmp);
	for (size_t k = 0; k < n && given < 10000; k++, given++)
		out[r[k].i]++;
	free(r);
	return total;
}

/*
 * Text from the binary or its container (module paths, symbol and file
 * names, source lines) goes to a terminal: control characters, ESC above
 * all, become '?' (a tab a space), so no escape sequence passes through.
 */
static void put_clean(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fputc(*p == '\t' ? ' ' : *p < 0x20 || *p == 0x7f ? '?' : *p, f);
}

/* The last component of a source path, for the margin. */
static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool same_line(const struct annot_line *a, const struct annot_line *b)
{
	if (!a->file || !b->file)
		return a->file == b->file && a->line == b->line;
	return a->line == b->line && !strcmp(a->file, b->file);
}

/* One entry of the summary: an instruction or a source line, its share. */
struct hot {
	size_t first; /* its first instruction */
	uint32_t pct;
};

static int hot_cmp(const void *pa, const void *pb)
{
	const struct hot *a = pa, *b = pb;

	if (a->pct != b->pct)
		return a->pct > b->pct ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

/* The hottest source lines (or instructions, @by_src false), sorted. */
static int print_summary(FILE *f, const struct annot_view *a, const uint32_t *pct, bool by_src)
{
	struct hot *h = NULL;
	size_t nh = 0, cap = 0;

	for (size_t i = 0; i < a->n; i++) {
		size_t k = nh;

		if (by_src && a->v[i].file)
			for (k = 0; k < nh && !same_line(&a->v[h[k].first], &a->v[i]); k++)
				;
		if (k == nh) {
			if (GROW_ARRAY(h, nh, cap, 64) < 0) {
				free(h);
				return -ENOMEM;
			}
			h[nh++] = (struct hot){i, 0};
		}
		h[k].pct += pct[i];
	}
	qsort(h, nh, sizeof(*h), hot_cmp);
	fputs("\n Sorted summary for ", f);
	put_clean(f, a->symbol);
	fprintf(f, " (hottest %s first):\n", by_src ? "source lines" : "instructions");
	for (size_t k = 0; k < nh && k < a->top && h[k].pct; k++) {
		const struct annot_line *l = &a->v[h[k].first];

		fprintf(f, " %7.2f  ", h[k].pct / 100.0);
		if (by_src && l->file) {
			put_clean(f, base_of(l->file));
			fprintf(f, ":%d%s", l->line, l->src ? "  " : "");
			put_clean(f, l->src ? l->src : "");
		} else {
			fprintf(f, "%" PRIx64 ": ", l->addr);
			put_clean(f, l->text);
		}
		fputc('\n', f);
	}
	free(h);
	return 0;
}

int annot_print(FILE *f, const struct annot_view *a)
{
	uint64_t *counts = calloc(a->n ? a->n : 1, sizeof(*counts));
	uint32_t *pct = calloc(a->n ? a->n : 1, sizeof(*pct));
	bool any_src = false;
	uint64_t total;
	int err = 0;

	if (!counts || !pct) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < a->n; i++) {
		counts[i] = a->v[i].count;
		any_src |= a->v[i].file != NULL;
	}
	total = annot_percents(counts, a->n, pct);
	fputs(" Percent |\tSource code & Disassembly of ", f);
	put_clean(f, a->module);
	fputs(" for ", f);
	put_clean(f, a->event);
	fprintf(f, " (%" PRIu64 " samples)\n", total);
	fputs("------------------------------------------------------------------------------\n", f);
	fprintf(f, "         :\t%016" PRIx64 " <", a->n ? a->v[0].addr : 0);
	put_clean(f, a->symbol);
	fputs(">:\n", f);
	for (size_t i = 0; i < a->n; i++) {
		const struct annot_line *l = &a->v[i];

		if (l->file && (i == 0 || !same_line(&a->v[i - 1], l))) {
			fputs("         :\t", f);
			put_clean(f, base_of(l->file));
			fprintf(f, ":%d%s", l->line, l->src ? "\t" : "");
			put_clean(f, l->src ? l->src : "");
			fputc('\n', f);
		}
		fprintf(f, " %7.2f :\t%8" PRIx64 ":\t", pct[i] / 100.0, l->addr);
		put_clean(f, l->text);
		fputc('\n', f);
	}
	if (a->top && total)
		err = print_summary(f, a, pct, any_src);
out:
	free(counts);
	free(pct);
	return err;
}
