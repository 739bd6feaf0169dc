// SPDX-License-Identifier: MIT
/*
 * The runtime-identity cache: lookups on one worker thread, so that a
 * slow engine socket costs that thread a timeout and nobody else anything.
 *
 * Callers (the agent's cgroup watch, each interval's batch) say which
 * paths they care about with cg_rtcache_want(), as often as they like: a
 * path is queued only when it was never looked up, when its answer is older
 * than the refresh period, or when its retry time after a failure has come.
 * Failures back off from 1 s, doubling to 60 s, so a dead socket is asked
 * about once a minute at most per cgroup. Readers copy an entry under the
 * lock; the worker holds the lock only to pick a path and to store a result,
 * never across a lookup, and finds the entry again by its path when the
 * lookup is done (the entry may have been forgotten meanwhile).
 *
 * Containers come and go for the life of the agent, each with a new cgroup
 * path: forgotten entries are dropped by rebuilding the table once they
 * outnumber the live ones, so memory follows the live cgroups.
 */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroup/runtime.h"
#include "lib/clock.h"
#include "lib/hashmap.h"

#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000

struct rt_entry {
	char *path;
	struct cg_rtinfo info;
	bool known, queued, answered, dead;
	uint64_t due_ms;     /* next lookup not before this (monotonic ms) */
	unsigned backoff_ms; /* after the last failure; 0 after a success */
};

struct cg_rtcache {
	struct cg_rt_sources src; /* owned copies */
	size_t max_entries;
	uint64_t refresh_ms;

	pthread_mutex_t mu;
	pthread_cond_t wake, idle;
	pthread_t worker;
	bool started, stop, busy;
	struct hashmap *index; /* path -> entry index + 1 */
	struct rt_entry *ents;
	size_t nents, cap, ndead;
	size_t *queue;
	size_t qhead, qlen, qcap;
	uint64_t generation;
};

static int queue_push(struct cg_rtcache *c, size_t idx)
{
	if (c->qlen == c->qcap) {
		size_t ncap = c->qcap ? c->qcap * 2 : 16;
		size_t *nq = calloc(ncap, sizeof(*nq));

		if (!nq)
			return -ENOMEM;
		for (size_t i = 0; i < c->qlen; i++)
			nq[i] = c->queue[(c->qhead + i) % c->qcap];
		free(c->queue);
		c->queue = nq;
		c->qcap = ncap;
		c->qhead = 0;
	}
	c->queue[(c->qhead + c->qlen) % c->qcap] = idx;
	c->qlen++;
	return 0;
}

/* The next try after a failure: 1 s, doubling up to 60 s. */
static void back_off(struct rt_entry *e, uint64_t now)
{
	e->backoff_ms = e->backoff_ms ? e->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (e->backoff_ms > BACKOFF_MAX_MS)
		e->backoff_ms = BACKOFF_MAX_MS;
	e->due_ms = now + e->backoff_ms;
}

static void store_result(struct cg_rtcache *c, struct rt_entry *e, int ret,
			 struct cg_rtinfo *info)
{
	uint64_t now = clock_mono_ms();

	if (ret == -EAGAIN || ret == -ENOMEM) {
		back_off(e, now);
		cg_rtinfo_release(info);
		return;
	}
	if (info->partial) {
		/* an answer to keep, from a fallback: the source that failed
		 * is asked again as a failure would be */
		back_off(e, now);
	} else {
		e->backoff_ms = 0;
		e->due_ms = now + c->refresh_ms;
	}
	e->answered = true;
	cg_rtinfo_release(&e->info);
	e->info = *info; /* moved */
	memset(info, 0, sizeof(*info));
	e->known = ret == 1;
}

/* The live entry of @path, or NULL. */
static struct rt_entry *live_entry(struct cg_rtcache *c, const char *path)
{
	uint64_t *slot = hashmap_find(c->index, path, strlen(path));

	return slot && *slot && !c->ents[*slot - 1].dead ? &c->ents[*slot - 1] : NULL;
}

/* Drop the forgotten entries: a new table and index of the live ones, the
 * queue renumbered. Nothing changes when memory runs out. */
static void compact(struct cg_rtcache *c)
{
	struct hashmap *index = hashmap_new();
	size_t *map = calloc(c->nents, sizeof(*map)), n = 0, q = 0;

	if (!index || !map)
		goto out;
	for (size_t i = 0; i < c->nents; i++) {
		struct rt_entry *e = &c->ents[i];
		uint64_t *slot;

		if (e->dead)
			continue;
		slot = hashmap_slot(index, e->path, strlen(e->path));
		if (!slot)
			goto out;
		*slot = n + 1;
		map[i] = n + 1;
		n++;
	}
	for (size_t i = 0, k = 0; i < c->nents; i++) {
		if (c->ents[i].dead) {
			free(c->ents[i].path);
			cg_rtinfo_release(&c->ents[i].info);
		} else {
			c->ents[k++] = c->ents[i];
		}
	}
	for (size_t i = 0; i < c->qlen; i++) {
		size_t old = c->queue[(c->qhead + i) % c->qcap];

		if (map[old])
			c->queue[q++] = map[old] - 1;
	}
	c->qhead = 0;
	c->qlen = q;
	c->nents = n;
	c->ndead = 0;
	hashmap_free(c->index);
	c->index = index;
	index = NULL;
out:
	hashmap_free(index);
	free(map);
}

static void *worker_main(void *arg)
{
	struct cg_rtcache *c = arg;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		struct cg_identity id;
		struct cg_rtinfo info;
		struct rt_entry *e;
		size_t idx;
		char *path;
		int ret;

		while (!c->stop && c->qlen == 0) {
			c->busy = false;
			pthread_cond_broadcast(&c->idle);
			pthread_cond_wait(&c->wake, &c->mu);
		}
		if (c->stop)
			break;
		c->busy = true;
		idx = c->queue[c->qhead];
		c->qhead = (c->qhead + 1) % c->qcap;
		c->qlen--;
		c->ents[idx].queued = false;
		c->ents[idx].due_ms = UINT64_MAX; /* in flight: not queued again */
		path = strdup(c->ents[idx].path);
		pthread_mutex_unlock(&c->mu);

		ret = path ? cg_identity_parse(path, &id) : -ENOMEM;
		if (ret == 0)
			ret = cg_rt_lookup(&c->src, &id, &info);
		else
			memset(&info, 0, sizeof(info));

		pthread_mutex_lock(&c->mu);
		e = path ? live_entry(c, path) : NULL;
		if (e)
			store_result(c, e, ret, &info);
		else
			cg_rtinfo_release(&info);
		free(path);
		c->generation++;
	}
	c->busy = false;
	pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

struct cg_rtcache *cg_rtcache_new(const struct cg_rt_sources *src, size_t max_entries,
				  uint64_t refresh_ms)
{
	struct cg_rtcache *c = calloc(1, sizeof(*c));
	sigset_t all, old;
	int err;

	if (!c)
		return NULL;
	if (cg_rt_sources_dup(&c->src, src) < 0)
		goto fail;
	c->max_entries = max_entries ? max_entries : 65536;
	c->refresh_ms = refresh_ms ? refresh_ms : 300000;
	c->index = hashmap_new();
	if (!c->index)
		goto fail;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->wake, NULL);
	if ((err = clock_cond_init(&c->idle))) { /* settle()'s deadline is monotonic */
		errno = err;
		goto fail;
	}
	/* The worker takes no signal: the commands wait for theirs on a
	 * signalfd, which only sees signals no thread has unblocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&c->worker, NULL, worker_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		errno = err;
		goto fail;
	}
	c->started = true;
	return c;
fail:
	err = errno;
	cg_rtcache_free(c);
	errno = err;
	return NULL;
}

void cg_rtcache_free(struct cg_rtcache *c)
{
	if (!c)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->mu);
		c->stop = true;
		pthread_cond_signal(&c->wake);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->worker, NULL);
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->wake);
		pthread_cond_destroy(&c->idle);
	}
	for (size_t i = 0; i < c->nents; i++) {
		free(c->ents[i].path);
		cg_rtinfo_release(&c->ents[i].info);
	}
	free(c->ents);
	free(c->queue);
	hashmap_free(c->index);
	cg_rt_sources_release(&c->src);
	free(c);
}

/* The entry of @path, created when @create; NULL when absent or full. */
static struct rt_entry *entry_of(struct cg_rtcache *c, const char *path, bool create, int *err)
{
	uint64_t *slot;

	*err = 0;
	if (!create) {
		slot = hashmap_find(c->index, path, strlen(path));
		return slot && *slot ? &c->ents[*slot - 1] : NULL;
	}
	slot = hashmap_slot(c->index, path, strlen(path));
	if (!slot) {
		*err = -ENOMEM;
		return NULL;
	}
	if (*slot) {
		struct rt_entry *e = &c->ents[*slot - 1];

		if (e->dead) {
			e->dead = false; /* the same path again */
			c->ndead--;
		}
		return e;
	}
	if (c->nents - c->ndead >= c->max_entries) {
		*err = -ENOSPC;
		return NULL;
	}
	if (c->nents == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct rt_entry *ne = reallocarray(c->ents, ncap, sizeof(*ne));

		if (!ne) {
			*err = -ENOMEM;
			return NULL;
		}
		c->ents = ne;
		c->cap = ncap;
	}
	memset(&c->ents[c->nents], 0, sizeof(c->ents[0]));
	c->ents[c->nents].path = strdup(path);
	if (!c->ents[c->nents].path) {
		*err = -ENOMEM;
		return NULL;
	}
	*slot = ++c->nents;
	return &c->ents[c->nents - 1];
}

int cg_rtcache_want(struct cg_rtcache *c, const char *path)
{
	struct rt_entry *e;
	int err;

	if (!c || !path)
		return -EINVAL;
	pthread_mutex_lock(&c->mu);
	e = entry_of(c, path, true, &err);
	if (e && !e->queued && clock_mono_ms() >= e->due_ms) {
		err = queue_push(c, (size_t)(e - c->ents));
		if (err == 0) {
			e->queued = true;
			pthread_cond_signal(&c->wake);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return err;
}

int cg_rtcache_get(struct cg_rtcache *c, const char *path, struct cg_rtinfo *out)
{
	struct rt_entry *e;
	int ret = 0, err;

	memset(out, 0, sizeof(*out));
	if (!c || !path)
		return -EAGAIN;
	pthread_mutex_lock(&c->mu);
	e = entry_of(c, path, false, &err);
	if (!e || !e->answered)
		ret = -EAGAIN;
	else if (e->known)
		ret = cg_rtinfo_copy(out, &e->info) < 0 ? -ENOMEM : 1;
	pthread_mutex_unlock(&c->mu);
	return ret;
}

void cg_rtcache_forget(struct cg_rtcache *c, const char *path)
{
	struct rt_entry *e;
	int err;

	if (!c || !path)
		return;
	pthread_mutex_lock(&c->mu);
	e = entry_of(c, path, false, &err);
	if (e && !e->dead) {
		cg_rtinfo_release(&e->info);
		e->known = false;
		e->answered = false;
		e->dead = true;
		e->due_ms = 0;
		e->backoff_ms = 0;
		if (++c->ndead > 64 && c->ndead > c->nents / 2)
			compact(c);
	}
	pthread_mutex_unlock(&c->mu);
}

uint64_t cg_rtcache_generation(struct cg_rtcache *c)
{
	uint64_t g;

	pthread_mutex_lock(&c->mu);
	g = c->generation;
	pthread_mutex_unlock(&c->mu);
	return g;
}

int cg_rtcache_settle(struct cg_rtcache *c, unsigned timeout_ms)
{
	struct timespec ts = clock_abstime_ms(clock_mono_ms() + timeout_ms);
	int ret = 0;

	pthread_mutex_lock(&c->mu);
	while ((c->qlen || c->busy) && ret == 0)
		ret = pthread_cond_timedwait(&c->idle, &c->mu, &ts);
	pthread_mutex_unlock(&c->mu);
	return ret ? -ETIMEDOUT : 0;
}
