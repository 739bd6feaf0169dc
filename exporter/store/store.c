// SPDX-License-Identifier: MIT
/*
 * The store's front: every call goes through the backend's ops, so callers
 * never name a backend. See store.h for the contract backends keep.
 */
#include "exporter/store/store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct store_ops *const backends[] = { &store_sqlite_ops, &store_clickhouse_ops };

const struct store_ops *store_backend(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (!strcmp(backends[i]->name, name))
			return backends[i];
	return NULL;
}

struct store *store_open_config(const struct store_ops *ops, const struct store_config *cfg,
				char *err, size_t errlen)
{
	struct store *s = ops->open(cfg, err, errlen);

	if (s)
		s->ops = ops;
	return s;
}

struct store *store_open(const struct store_ops *ops, const char *dir, char *err, size_t errlen)
{
	return store_open_config(ops, &(struct store_config){ .dir = dir }, err, errlen);
}

bool store_shared(const struct store *s)
{
	return s->ops->shared;
}

void store_close(struct store *s)
{
	if (s)
		s->ops->close(s);
}

int store_put(struct store *s, const Cgperf__V1__Batch *m, uint64_t received_ns, char *err,
	      size_t errlen)
{
	int res = 0, ret = store_put_many(s, &m, 1, received_ns, &res, err, errlen);

	return ret ? ret : res;
}

int store_put_many(struct store *s, const Cgperf__V1__Batch *const *m, size_t n,
		   uint64_t received_ns, int *res, char *err, size_t errlen)
{
	for (size_t i = 0; i < n && errlen; i++)
		err[i * errlen] = '\0';
	return s->ops->put_many(s, m, n, received_ns, res, err, errlen);
}

int store_load(struct store *s, const struct store_visitor *v)
{
	return s->ops->load(s, v);
}

int store_expire(struct store *s, uint64_t before_ns)
{
	return s->ops->expire(s, before_ns);
}

int store_retention(struct store *s, uint64_t before_ns, size_t max_rows, size_t *deleted)
{
	int ret = s->ops->retention(s, before_ns, max_rows, deleted);

	if (ret >= 0)
		atomic_fetch_add_explicit(&s->deleted_rows, *deleted, memory_order_relaxed);
	return ret;
}

int store_stacks(struct store *s, const struct store_selection *sel,
		 int (*fn)(void *arg, const struct store_stack *st), void *arg)
{
	return s->ops->stacks(s, sel, fn, arg);
}

int store_module(struct store *s, int64_t id, struct store_module *out)
{
	return s->ops->module ? s->ops->module(s, id, out) : -ENOENT;
}

int store_latency_rows(struct store *s, const struct store_selection *sel, const char *probe,
		       int (*fn)(void *arg, const struct store_latency_row *r), void *arg)
{
	return s->ops->latency_rows ? s->ops->latency_rows(s, sel, probe, fn, arg) : -EOPNOTSUPP;
}

int store_series(struct store *s, const struct store_selection *sel, uint64_t step_ns, size_t top,
		 int (*fn)(void *arg, const struct store_series_row *r), void *arg)
{
	if (!step_ns || !top)
		return -EINVAL;
	return s->ops->series ? s->ops->series(s, sel, step_ns, top, fn, arg) : -EOPNOTSUPP;
}

void store_stats(struct store *s, struct store_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->stack_rows = atomic_load_explicit(&s->stack_rows, memory_order_relaxed);
	out->deleted_rows = atomic_load_explicit(&s->deleted_rows, memory_order_relaxed);
	if (s->ops->stats)
		s->ops->stats(s, out);
}

void store_count_rows(struct store *s, uint64_t n)
{
	atomic_fetch_add_explicit(&s->stack_rows, n, memory_order_relaxed);
}

double store_scaled(uint64_t value, uint64_t enabled, uint64_t running)
{
	if (!running)
		return 0;
	return (double)value * ((double)enabled / (double)running);
}

void store_hist_words(const struct hist *h, uint64_t w[STORE_HIST_WORDS])
{
	w[0] = h->count;
	w[1] = h->negative;
	w[2] = h->sum;
	w[3] = h->min;
	w[4] = h->max;
	memcpy(w + 5, h->b, sizeof(h->b));
}

void store_hist_from_words(const uint64_t w[STORE_HIST_WORDS], struct hist *h)
{
	h->count = w[0];
	h->negative = w[1];
	h->sum = w[2];
	h->min = w[3];
	h->max = w[4];
	memcpy(h->b, w + 5, sizeof(h->b));
}
