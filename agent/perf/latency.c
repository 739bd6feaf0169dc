// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/perf/latency.h"
#include "agent/stacks/fold.h"
#include "lib/grow.h"

struct endpoint {
	uint64_t time, cgroup;
	uint32_t pid, tid, pair;
	bool end;
};

struct latency {
	struct endpoint *v;
	size_t n, cap, max;
	struct fold *open; /* (pair, tid) -> start time of the open interval, 0: none */
};

struct latency *latency_new(size_t max_held)
{
	struct latency *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->max = max_held;
	l->open = fold_new();
	if (!l->open) {
		free(l);
		return NULL;
	}
	return l;
}

void latency_free(struct latency *l)
{
	if (!l)
		return;
	fold_free(l->open);
	free(l->v);
	free(l);
}

int latency_add(struct latency *l, uint32_t pair, bool end, uint64_t time, uint64_t cgroup,
		uint32_t pid, uint32_t tid)
{
	if (l->n >= l->max)
		return -ENOSPC;
	if (GROW_ARRAY(l->v, l->n, l->cap, 4096) < 0)
		return -ENOMEM;
	l->v[l->n++] = (struct endpoint){time, cgroup, pid, tid, pair, end};
	return 0;
}

static int cmp_endpoint(const void *a, const void *b)
{
	const struct endpoint *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->end - y->end; /* a start and an end at the same instant: start first */
}

uint64_t latency_pair(struct latency *l, uint64_t upto, latency_fn fn, void *ctx)
{
	uint64_t unpaired = 0;
	size_t done = 0;

	if (!l->n)
		return 0;
	qsort(l->v, l->n, sizeof(*l->v), cmp_endpoint);
	for (; done < l->n && l->v[done].time < upto; done++) {
		const struct endpoint *e = &l->v[done];
		struct {
			uint32_t pair, tid;
		} k = {e->pair, e->tid};
		uint64_t *slot = fold_slot(l->open, &k, sizeof(k));

		if (!slot)
			continue;
		if (!e->end) {
			*slot = e->time ? e->time : 1;
		} else if (*slot && e->time >= *slot) {
			fn(ctx, e->pair, e->cgroup, e->pid, e->time - *slot);
			*slot = 0;
		} else {
			unpaired++;
		}
	}
	memmove(l->v, l->v + done, (l->n - done) * sizeof(*l->v));
	l->n -= done;
	return unpaired;
}

size_t latency_held(const struct latency *l)
{
	return l->n;
}
