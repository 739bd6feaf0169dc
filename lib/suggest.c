// SPDX-License-Identifier: MIT
#include "lib/suggest.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t suggest_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[256];

	if (la > 255 || lb > 255)
		return 1000;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

size_t suggest_limit(size_t len)
{
	return len < 6 ? 1 : len < 10 ? 2 : 3;
}

const char *suggest_best(const char *want, const char *const *names, size_t n, size_t maxd)
{
	const char *best = NULL;
	size_t bestd = SIZE_MAX;

	for (size_t i = 0; i < n && names[i]; i++) {
		size_t d = suggest_distance(want, names[i]);

		if (d < bestd) {
			bestd = d;
			best = names[i];
		}
	}
	return best && bestd <= maxd && bestd < strlen(want) ? best : NULL;
}

/* @part inside @whole, and long enough to mean something there. */
static bool within(const char *whole, size_t lwhole, const char *part, size_t lpart)
{
	return lpart >= 3 && (lpart >= 6 || 2 * lpart >= lwhole) && strstr(whole, part);
}

size_t suggest_score(const char *want, const char *have)
{
	size_t lw = strlen(want), lh = strlen(have);
	size_t limit = lw / 3 + 1 < 2 ? 2 : lw / 3 + 1;
	bool sub = within(have, lh, want, lw) || within(want, lw, have, lh);
	size_t d;

	/* the distance is at least the length difference: skip the work */
	if (!sub && (lw > lh ? lw - lh : lh - lw) > limit)
		return SIZE_MAX;
	d = suggest_distance(want, have);
	if (sub && d > 2)
		d = 2;
	return d <= limit ? d : SIZE_MAX;
}

void suggest_init(struct suggest *s, size_t max)
{
	s->n = 0;
	s->max = max < SUGGEST_MAX ? max : SUGGEST_MAX;
}

void suggest_add(struct suggest *s, const char *name, size_t score)
{
	size_t pos = s->n;
	char *dup;

	if (score == SIZE_MAX)
		return;
	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->name[i], name) == 0)
			return;
	}
	while (pos > 0 && (s->score[pos - 1] > score ||
			   (s->score[pos - 1] == score && strcmp(s->name[pos - 1], name) > 0)))
		pos--;
	if (pos >= s->max)
		return;
	dup = strdup(name);
	if (!dup)
		return;
	if (s->n == s->max)
		free(s->name[--s->n]);
	memmove(&s->name[pos + 1], &s->name[pos], (s->n - pos) * sizeof(s->name[0]));
	memmove(&s->score[pos + 1], &s->score[pos], (s->n - pos) * sizeof(s->score[0]));
	s->name[pos] = dup;
	s->score[pos] = score;
	s->n++;
}

void suggest_consider(struct suggest *s, const char *want, const char *have)
{
	suggest_add(s, have, suggest_score(want, have));
}

size_t suggest_take(struct suggest *s, char **out)
{
	size_t n = s->n;

	for (size_t i = 0; i < n; i++)
		out[i] = s->name[i];
	s->n = 0;
	return n;
}

void suggest_release(struct suggest *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->name[i]);
	s->n = 0;
}
