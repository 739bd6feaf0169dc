// SPDX-License-Identifier: MIT
#include "lib/hist.h"

#include <inttypes.h>
#include <string.h>

int hist_bucket(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

void hist_bounds(int k, uint64_t *lo, uint64_t *hi)
{
	if (k <= 0) {
		*lo = *hi = 0;
		return;
	}
	*lo = 1ull << (k - 1);
	*hi = k == 64 ? UINT64_MAX : (1ull << k) - 1;
}

void hist_add(struct hist *h, int64_t v)
{
	uint64_t u;

	if (v < 0) {
		h->negative++;
		h->count++;
		return;
	}
	u = (uint64_t)v;
	if (!h->count || (h->count == h->negative) || u < h->min)
		h->min = u;
	if (u > h->max)
		h->max = u;
	h->sum = h->sum + u < h->sum ? UINT64_MAX : h->sum + u;
	h->b[hist_bucket(u)]++;
	h->count++;
}

/* Counts stop at INT64_MAX, the wire's and the stores' largest value,
 * rather than wrap (which Prometheus would read as a reset). */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > (uint64_t)INT64_MAX - b || b > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : a + b;
}

void hist_merge(struct hist *into, const struct hist *from)
{
	if (!from->count)
		return;
	if (into->count == into->negative || (from->count > from->negative && from->min < into->min))
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
	into->sum = into->sum + from->sum < into->sum ? UINT64_MAX : into->sum + from->sum;
	into->count = sat_add(into->count, from->count);
	into->negative = sat_add(into->negative, from->negative);
	for (int i = 0; i < HIST_BUCKETS; i++)
		into->b[i] = sat_add(into->b[i], from->b[i]);
}

double hist_mean(const struct hist *h)
{
	uint64_t n = h->count - h->negative;

	return n ? (double)h->sum / (double)n : 0.0;
}

bool hist_span(const struct hist *h, int *first, int *last)
{
	*first = *last = -1;
	for (int i = 0; i < HIST_BUCKETS; i++) {
		if (!h->b[i])
			continue;
		if (*first < 0)
			*first = i;
		*last = i;
	}
	return *first >= 0;
}

void hist_print(const struct hist *h, FILE *f, const char *indent, const char *unit)
{
	int first, last;
	uint64_t top = 0;

	hist_span(h, &first, &last);
	for (int i = first; i >= 0 && i <= last; i++)
		if (h->b[i] > top)
			top = h->b[i];
	fprintf(f, "%s%-*s : %-10s |%-40s|\n", indent, 27, unit, "count", "distribution");
	if (h->negative)
		fprintf(f, "%s%27s : %-10" PRIu64 " |%-40s|\n", indent, "< 0", h->negative, "");
	for (int i = first; i >= 0 && i <= last; i++) {
		uint64_t lo, hi;
		char range[64], bar[41];
		int n = top ? (int)((h->b[i] * 40 + top - 1) / top) : 0;

		hist_bounds(i, &lo, &hi);
		snprintf(range, sizeof(range), "%" PRIu64 " -> %" PRIu64, lo, hi);
		memset(bar, '*', (size_t)n);
		bar[n] = '\0';
		fprintf(f, "%s%27s : %-10" PRIu64 " |%-40s|\n", indent, range, h->b[i], bar);
	}
}

void hist_json(const struct hist *h, FILE *f)
{
	int first = 1;

	fprintf(f, "{\"count\":%" PRIu64 ",\"negative\":%" PRIu64 ",\"sum\":%" PRIu64
		   ",\"min\":%" PRIu64 ",\"max\":%" PRIu64 ",\"mean\":%.3f,\"buckets\":[",
		h->count, h->negative, h->sum, h->count > h->negative ? h->min : 0, h->max,
		hist_mean(h));
	for (int i = 0; i < HIST_BUCKETS; i++) {
		uint64_t lo, hi;

		if (!h->b[i])
			continue;
		hist_bounds(i, &lo, &hi);
		fprintf(f, "%s{\"ge\":%" PRIu64 ",\"le\":%" PRIu64 ",\"count\":%" PRIu64 "}",
			first ? "" : ",", lo, hi, h->b[i]);
		first = 0;
	}
	fputs("]}", f);
}
