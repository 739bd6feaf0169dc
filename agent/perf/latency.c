// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/perf/latency.h"
#include "agent/stacks/fold.h"
#include "lib/grow.h"
#include "lib/hashmap.h"

struct endpoint {
	uint64_t time, cgroup;
	uint64_t key[LATENCY_KEY_MAX];
	uint32_t pid, tid, pair;
	uint8_t end, nkey; /* nkey 0: paired by thread */
};

/* A keyed start waiting for its end. */
struct pend {
	uint64_t time, cgroup;
	uint64_t key[LATENCY_KEY_MAX];
	uint32_t pid, pair;
	uint8_t nkey;
};

/* The hash key of a keyed endpoint: its pair, then its values. */
struct pkey {
	uint32_t pair, nkey;
	uint64_t key[LATENCY_KEY_MAX];
};

struct latency {
	struct endpoint *v; /* held: [head, sorted) in time order, [sorted, n) as added */
	size_t head, sorted, n, cap, max;
	struct fold *open; /* (pair, tid) -> start time of the open interval, 0: none */
	struct hashmap *keyed; /* pkey -> index + 1 in pend */
	struct pend *pend;
	size_t npend, cappend, max_pending;
	uint64_t timeout_ns;
	uint64_t done_upto; /* every endpoint before this instant has been paired */
	struct latency_stats st;
};

struct latency *latency_new(size_t max_held)
{
	struct latency *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->max = max_held;
	l->timeout_ns = LATENCY_DEFAULT_TIMEOUT_NS;
	l->max_pending = LATENCY_DEFAULT_MAX_PENDING;
	l->open = fold_new();
	l->keyed = hashmap_new();
	if (!l->open || !l->keyed) {
		latency_free(l);
		return NULL;
	}
	return l;
}

void *latency_cell(struct fold *idx, const void *key, size_t klen, void **v, size_t *n, size_t *cap,
		   size_t size, bool *fresh)
{
	uint64_t *slot = fold_slot(idx, key, klen);

	*fresh = false;
	if (!slot) {
		errno = ENOSPC;
		return NULL;
	}
	if (!*slot) {
		if (*n >= *cap) {
			void *nv = grow_array(*v, cap, size, 64);

			if (!nv) {
				errno = ENOMEM;
				return NULL;
			}
			*v = nv;
		}
		memset((char *)*v + *n * size, 0, size);
		*slot = ++*n;
		*fresh = true;
	}
	return (char *)*v + (*slot - 1) * size;
}

void latency_free(struct latency *l)
{
	if (!l)
		return;
	fold_free(l->open);
	hashmap_free(l->keyed);
	free(l->pend);
	free(l->v);
	free(l);
}

void latency_set_bounds(struct latency *l, uint64_t timeout_ns, size_t max_pending)
{
	l->timeout_ns = timeout_ns;
	l->max_pending = max_pending ? max_pending : LATENCY_DEFAULT_MAX_PENDING;
}

static int hold(struct latency *l, const struct endpoint *e)
{
	if (l->n - l->head >= l->max)
		return -ENOSPC;
	if (e->time < l->done_upto)
		l->st.late++;
	if (GROW_ARRAY(l->v, l->n, l->cap, 4096) < 0)
		return -ENOMEM;
	l->v[l->n++] = *e;
	return 0;
}

int latency_add(struct latency *l, uint32_t pair, bool end, uint64_t time, uint64_t cgroup,
		uint32_t pid, uint32_t tid)
{
	struct endpoint e = {.time = time, .cgroup = cgroup, .pid = pid, .tid = tid,
			     .pair = pair, .end = end};

	return hold(l, &e);
}

int latency_add_key(struct latency *l, uint32_t pair, bool end, uint64_t time, uint64_t cgroup,
		    uint32_t pid, const uint64_t *key, size_t nkey)
{
	struct endpoint e = {.time = time, .cgroup = cgroup, .pid = pid, .pair = pair,
			     .end = end, .nkey = (uint8_t)nkey};

	if (!nkey || nkey > LATENCY_KEY_MAX)
		return -EINVAL;
	memcpy(e.key, key, nkey * sizeof(*key));
	return hold(l, &e);
}

/* Time order; a start and an end at the same instant: the start first. */
static bool before(const struct endpoint *x, const struct endpoint *y)
{
	return x->time < y->time || (x->time == y->time && x->end < y->end);
}

static int cmp_endpoint(const void *a, const void *b)
{
	return before(a, b) ? -1 : before(b, a);
}

/* The end of the run in time order that starts at @i (< @n). */
static size_t run_end(const struct endpoint *v, size_t i, size_t n)
{
	while (i + 1 < n && !before(&v[i + 1], &v[i]))
		i++;
	return i + 1;
}

/* Merge the runs v[lo, mid) and v[mid, hi) in place, stably. Only the part
 * of the first run after v[mid] moves out, to the room behind the held
 * endpoints (v[n, cap)). 0 or -ENOMEM. */
static int merge_runs(struct latency *l, size_t lo, size_t mid, size_t hi)
{
	struct endpoint *v = l->v, *run;
	size_t top = mid, x = 0, r = mid, d, a;

	if (lo == mid || mid == hi || !before(&v[mid], &v[mid - 1]))
		return 0;
	while (lo < top) { /* the first of the first run after v[mid] */
		size_t m = lo + (top - lo) / 2;

		if (before(&v[mid], &v[m]))
			top = m;
		else
			lo = m + 1;
	}
	a = mid - lo;
	if (l->cap - l->n < a) { /* a <= n <= cap: twice cap has room */
		if (!(v = grow_array(l->v, &l->cap, sizeof(*v), 4096)))
			return -ENOMEM;
		l->v = v;
	}
	run = v + l->n;
	memcpy(run, v + lo, a * sizeof(*v));
	for (d = lo; x < a && r < hi; d++) /* d <= r: nothing unread is overwritten */
		v[d] = before(&v[r], &run[x]) ? v[r++] : run[x++];
	memcpy(v + d, run + x, (a - x) * sizeof(*v));
	return 0;
}

/*
 * Put the endpoints added since the last pairing in time order behind the
 * held ones, which already are. Each ring is read in the order its hits
 * were written, about their time order, so what one drain added is a few
 * long runs (one per ring read): they are merged pairwise until one is
 * left, then merged into the held ones, of which only those after the
 * earliest new one move (through the array's spare room, no other
 * buffer). Sorting all that is held at each pairing would sort an
 * endpoint again for every round it waits out LATENCY_SLACK_NS. Without
 * memory for a merge, everything held is sorted by qsort.
 */
static void sort_held(struct latency *l)
{
	size_t merged = 1;

	while (merged) {
		merged = 0;
		for (size_t a = l->sorted, mid, end; a < l->n; a = end) {
			mid = run_end(l->v, a, l->n);
			end = mid < l->n ? run_end(l->v, mid, l->n) : mid;
			if (mid == end)
				break;
			if (merge_runs(l, a, mid, end) < 0)
				goto fallback;
			merged++;
		}
	}
	if (merge_runs(l, l->head, l->sorted, l->n) < 0)
		goto fallback;
	l->sorted = l->n;
	return;
fallback:
	qsort(l->v + l->head, l->n - l->head, sizeof(*l->v), cmp_endpoint);
	l->sorted = l->n;
}

static struct pkey pkey_of(uint32_t pair, const uint64_t *key, size_t nkey)
{
	struct pkey k = {.pair = pair, .nkey = (uint32_t)nkey};

	memcpy(k.key, key, nkey * sizeof(*key));
	return k;
}

/* Remove pending start @i: the last one moves into its place. */
static void pend_remove(struct latency *l, size_t i)
{
	struct pend *p = &l->pend[i];
	struct pkey k = pkey_of(p->pair, p->key, p->nkey);

	hashmap_remove(l->keyed, &k, sizeof(k), NULL);
	if (i + 1 < l->npend) {
		struct pend *last = &l->pend[l->npend - 1];
		struct pkey lk = pkey_of(last->pair, last->key, last->nkey);
		uint64_t *slot = hashmap_find(l->keyed, &lk, sizeof(lk));

		*p = *last;
		if (slot)
			*slot = i + 1;
	}
	l->npend--;
}

/* Drop the pending starts older than @now - timeout. */
static void pend_expire(struct latency *l, uint64_t now)
{
	if (!l->timeout_ns || now < l->timeout_ns)
		return;
	for (size_t i = 0; i < l->npend;) {
		if (l->pend[i].time < now - l->timeout_ns) {
			pend_remove(l, i);
			l->st.timed_out++;
		} else {
			i++;
		}
	}
}

static void keyed_start(struct latency *l, const struct endpoint *e)
{
	struct pkey k = pkey_of(e->pair, e->key, e->nkey);
	uint64_t *slot = hashmap_find(l->keyed, &k, sizeof(k));
	struct pend p = {.time = e->time, .cgroup = e->cgroup, .pid = e->pid,
			 .pair = e->pair, .nkey = e->nkey};

	memcpy(p.key, e->key, sizeof(p.key));
	if (slot) {
		l->pend[*slot - 1] = p;
		l->st.replaced++;
		return;
	}
	if (l->npend >= l->max_pending)
		pend_expire(l, e->time);
	if (l->npend >= l->max_pending || GROW_ARRAY(l->pend, l->npend, l->cappend, 1024) < 0) {
		l->st.dropped++;
		return;
	}
	slot = hashmap_slot(l->keyed, &k, sizeof(k));
	if (!slot) {
		l->st.dropped++;
		return;
	}
	l->pend[l->npend++] = p;
	*slot = l->npend;
}

/* A keyed end: the interval, or false when no start waits for its key. */
static bool keyed_end(struct latency *l, const struct endpoint *e, latency_fn fn, void *ctx)
{
	struct pkey k = pkey_of(e->pair, e->key, e->nkey);
	uint64_t *slot = hashmap_find(l->keyed, &k, sizeof(k));
	struct pend p;

	if (!slot)
		return false;
	p = l->pend[*slot - 1];
	pend_remove(l, (size_t)(*slot - 1));
	fn(ctx, e->pair, p.cgroup, p.pid, e->time, e->time - p.time);
	l->st.paired++;
	return true;
}

/* By thread: the interval, or false when the thread has no open start. */
static bool thread_endpoint(struct latency *l, const struct endpoint *e, latency_fn fn, void *ctx)
{
	struct {
		uint32_t pair, tid;
	} k = {e->pair, e->tid};
	uint64_t *slot = fold_slot(l->open, &k, sizeof(k));

	if (!slot)
		return true; /* the table is full: neither paired nor an orphan */
	if (!e->end) {
		*slot = e->time ? e->time : 1;
	} else if (*slot && e->time >= *slot) {
		fn(ctx, e->pair, e->cgroup, e->pid, e->time, e->time - *slot);
		l->st.paired++;
		*slot = 0;
	} else {
		return false;
	}
	return true;
}

uint64_t latency_pair(struct latency *l, uint64_t upto, latency_fn fn, void *ctx)
{
	uint64_t unpaired = 0, last = 0;

	sort_held(l);
	for (; l->head < l->n && l->v[l->head].time < upto; l->head++) {
		const struct endpoint *e = &l->v[l->head];
		bool ok = true;

		last = e->time;
		if (!e->nkey)
			ok = thread_endpoint(l, e, fn, ctx);
		else if (!e->end)
			keyed_start(l, e);
		else
			ok = keyed_end(l, e, fn, ctx);
		unpaired += !ok;
	}
	/* The paired ones leave once they fill half the array, so a held
	 * endpoint moves a bounded number of times however many rounds it
	 * waits (LATENCY_SLACK_NS spans several). */
	if (l->head && l->head >= l->n - l->head) {
		memmove(l->v, l->v + l->head, (l->n - l->head) * sizeof(*l->v));
		l->n -= l->head;
		l->sorted -= l->head;
		l->head = 0;
	}
	if (upto != UINT64_MAX) {
		pend_expire(l, upto > last ? upto : last);
		l->done_upto = upto > l->done_upto ? upto : l->done_upto;
	}
	l->st.unpaired_end += unpaired;
	return unpaired;
}

size_t latency_held(const struct latency *l)
{
	return l->n - l->head;
}

void latency_stats(const struct latency *l, struct latency_stats *out)
{
	*out = l->st;
	out->pending = l->npend;
}
