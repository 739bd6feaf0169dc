// SPDX-License-Identifier: MIT
/*
 * Push: set-up, the API, and the spool shared by the sender threads
 * (push_send.c, whose opening note says how batches move).
 *
 * The spool is the queue: push_submit writes the batch there (durable before
 * it returns) and broadcasts p->wake. A batch stays until every lane's
 * cursor is at or past it (spool_remove_upto of the smallest cursor), so a
 * collector that is down keeps the batches, up to the spool cap, for when it
 * returns; one that is up is not held back. Cursors are written to the spool
 * directory after each ack so a restart resumes where each lane was: a
 * fan-out lane's cursor is keyed by its collector's URL (as it always was),
 * the failover lane's by the list of URLs, in order.
 *
 * Connections. Each collector's connection is kept alive between pushes
 * (a handshake per push costs the collector more CPU than the push
 * itself), and closed by the agent once it has been idle for idle_close_ms
 * (default 60 s): longer than a usual push interval, so a pushing agent
 * keeps its connection, and shorter than the exporter's idle timeout
 * (120 s), so it is the agent that closes, never the server under a
 * request being written. An agent that pushes rarely, or waits out a
 * long backoff, holds no socket on the collector meanwhile.
 */
#include "agent/ship/push_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/ship/spool.h"
#include "lib/clock.h"
#include "lib/hashmap.h"

#define DEFAULT_TIMEOUT_MS 10000u
#define DEFAULT_RETRY_INITIAL_MS 500u
#define DEFAULT_RETRY_MAX_MS 60000u
#define DEFAULT_SPOOL_MAX_BYTES (64ull << 20)
#define DEFAULT_IDLE_CLOSE_MS 60000u

uint64_t push_min_cursor(const struct push *p)
{
	uint64_t m = UINT64_MAX;

	for (size_t i = 0; i < p->nlanes; i++) {
		if (p->lanes[i].cursor < m)
			m = p->lanes[i].cursor;
	}
	return m;
}

/* ---- setup ---------------------------------------------------------- */

static int collector_setup(struct push *p, struct collector *c, const char *url,
			   const struct push_opts *o)
{
	c->p = p;
	c->name = httpc_redact_url(url);
	if (!c->name)
		return -ENOMEM;
	c->rng = httpc_rng_seed(url);
	c->http = httpc_new(&(struct httpc_opts){
		.url = url,
		.timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS,
		.connect_timeout_ms = o->connect_timeout_ms,
		.ca_file = o->ca_file,
		.cert_file = o->cert_file,
		.key_file = o->key_file,
		.tls_no_verify = o->tls_no_verify,
		.user_agent = o->user_agent ? o->user_agent : "cgperf-agent",
		.stop = &p->stopping,
	});
	return c->http ? 0 : -errno;
}

/* The lanes: one per collector (fan-out), or one over all (failover). */
static int lanes_setup(struct push *p, const struct push_opts *o)
{
	p->nlanes = p->mode == PUSH_FAILOVER ? 1 : p->n;
	p->lanes = calloc(p->nlanes, sizeof(*p->lanes));
	if (!p->lanes)
		return -ENOMEM;
	for (size_t i = 0; i < p->nlanes; i++) {
		struct lane *l = &p->lanes[i];
		uint64_t h = HASH_FNV_OFFSET;

		l->p = p;
		l->c = &p->c[i];
		l->n = p->mode == PUSH_FAILOVER ? p->n : 1;
		if (p->mode == PUSH_FAILOVER) {
			h = hash_fnv1a_str(h, "failover");
			for (size_t k = 0; k < p->n; k++)
				h = hash_fnv1a_str(hash_fnv1a_str(h, "\n"), o->urls[k]);
			l->name = strdup("failover service");
		} else {
			h = hash_fnv1a_str(h, o->urls[i]);
			l->name = strdup(p->c[i].name);
		}
		if (!l->name)
			return -ENOMEM;
		snprintf(l->key, sizeof(l->key), "%016" PRIx64, h);
		for (size_t k = 0; k < l->n; k++)
			l->c[k].lane = l;
	}
	return 0;
}

static int check_opts(const struct push_opts *o)
{
	if (!o || !o->spool_dir || !o->urls || o->n_urls < 1 || o->n_urls > PUSH_MAX_COLLECTORS)
		return -EINVAL;
	if (o->mode != PUSH_FANOUT && o->mode != PUSH_FAILOVER)
		return -EINVAL;
	for (size_t i = 0; i < o->n_urls; i++) {
		if (!o->urls[i] || !httpc_is_http_url(o->urls[i]))
			return -EINVAL;
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(o->urls[i], o->urls[j]))
				return -EINVAL;
		}
	}
	if (o->key_file && !o->cert_file)
		return -EINVAL; /* a key without a certificate */
	return 0;
}

static void stop_senders(struct push *p)
{
	pthread_mutex_lock(&p->lock);
	atomic_store(&p->stopping, true);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (size_t i = 0; i < p->n; i++) {
		if (p->c[i].http)
			httpc_wakeup(p->c[i].http);
	}
	for (size_t i = 0; i < p->nlanes; i++) {
		if (p->lanes[i].started)
			pthread_join(p->lanes[i].thread, NULL);
		p->lanes[i].started = false;
	}
}

void push_free(struct push *p)
{
	if (!p)
		return;
	stop_senders(p);
	for (size_t i = 0; i < p->n; i++) {
		httpc_free(p->c[i].http);
		free(p->c[i].name);
	}
	for (size_t i = 0; i < p->nlanes; i++)
		free(p->lanes[i].name);
	free(p->lanes);
	spool_close(p->spool);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->progress);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->log_lock);
	free(p->spool_dir);
	free(p->auth_header);
	free(p);
}

static struct push *push_alloc(const struct push_opts *o)
{
	struct push *p = calloc(1, sizeof(*p) + o->n_urls * sizeof(p->c[0]));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->log_lock, NULL);
	clock_cond_init(&p->wake);
	clock_cond_init(&p->progress);
	atomic_init(&p->stopping, false);
	p->n = o->n_urls;
	p->mode = o->mode;
	p->log = o->log;
	p->log_arg = o->log_arg;
	p->retry_initial_ms = o->retry_initial_ms ? o->retry_initial_ms : DEFAULT_RETRY_INITIAL_MS;
	p->retry_max_ms = o->retry_max_ms ? o->retry_max_ms : DEFAULT_RETRY_MAX_MS;
	p->idle_close_ms = o->idle_close_ms ? o->idle_close_ms : DEFAULT_IDLE_CLOSE_MS;
	if (p->retry_initial_ms > p->retry_max_ms)
		p->retry_initial_ms = p->retry_max_ms;
	return p;
}

/* Open the spool and load the lanes' cursors. */
static int open_spool(struct push *p, const struct push_opts *o, struct logmsg *m)
{
	uint64_t last;
	int ret;

	p->spool = spool_open(p->spool_dir, o->spool_max_bytes ? o->spool_max_bytes : DEFAULT_SPOOL_MAX_BYTES);
	if (!p->spool)
		return -errno;
	if (spool_last(p->spool, &last) == 0)
		p->last_seq = last;
	p->dropped_seen = spool_dropped(p->spool);
	for (size_t i = 0; i < p->nlanes; i++) {
		struct lane *l = &p->lanes[i];

		ret = spool_cursor_load(p->spool, l->key, &l->cursor);
		if (ret == -EBADMSG)
			push_msg_add(m, PUSH_LOG_WARN,
				     "push: unreadable cursor for %s in %s: resending its spooled batches", l->name,
				     p->spool_dir);
		if (ret < 0)
			l->cursor = 0;
		if (l->cursor > p->last_seq)
			p->last_seq = l->cursor;
	}
	/* Batches every lane has already had (a crash between the acks and
	 * the removal) go now. */
	spool_remove_upto(p->spool, push_min_cursor(p));
	if (spool_count(p->spool))
		push_msg_add(m, PUSH_LOG_INFO,
			     "push: %zu spooled batches (%" PRIu64 " bytes) from an earlier run to send",
			     spool_count(p->spool), spool_bytes(p->spool));
	if (spool_dropped(p->spool))
		push_msg_add(m, PUSH_LOG_WARN,
			     "push: spool %s over its cap at start: dropped %" PRIu64 " oldest batches",
			     p->spool_dir, spool_dropped(p->spool));
	return 0;
}

struct push *push_new(const struct push_opts *o)
{
	struct logmsg m[MSGS_MAX] = { 0 };
	struct push *p = NULL;
	int ret;

	ret = check_opts(o);
	if (ret)
		goto err;
	p = push_alloc(o);
	if (!p) {
		ret = -ENOMEM;
		goto err;
	}
	if (o->token) {
		ret = httpc_auth_header(o->token, &p->auth_header);
		if (ret)
			goto err;
	}
	p->spool_dir = strdup(o->spool_dir);
	if (!p->spool_dir) {
		ret = -ENOMEM;
		goto err;
	}
	for (size_t i = 0; i < p->n; i++) {
		ret = collector_setup(p, &p->c[i], o->urls[i], o);
		if (ret)
			goto err;
	}
	ret = lanes_setup(p, o);
	if (!ret)
		ret = open_spool(p, o, m);
	if (ret)
		goto err;
	for (size_t i = 0; i < p->nlanes; i++) {
		ret = -pthread_create(&p->lanes[i].thread, NULL, push_sender_main, &p->lanes[i]);
		if (ret)
			goto err;
		p->lanes[i].started = true;
	}
	push_msg_flush(p, m);
	return p;

err:
	for (int i = 0; i < MSGS_MAX; i++)
		free(m[i].text);
	push_free(p);
	errno = -ret;
	return NULL;
}

/* ---- API ------------------------------------------------------------ */

int push_next_seq(struct push *p, uint64_t *seq)
{
	uint64_t s;
	int ret;

	pthread_mutex_lock(&p->lock);
	ret = spool_next_seq(p->spool_dir, &s);
	pthread_mutex_unlock(&p->lock);
	if (!ret)
		*seq = s;
	return ret;
}

int push_submit(struct push *p, uint64_t seq, const void *gzbuf, size_t len)
{
	struct logmsg m[MSGS_MAX] = { 0 };
	uint64_t dropped;
	int ret;

	pthread_mutex_lock(&p->lock);
	if (seq <= p->last_seq) {
		ret = -EINVAL;
		goto out;
	}
	ret = spool_put(p->spool, seq, gzbuf, len);
	if (ret == 0 || ret == -EFBIG)
		p->last_seq = seq;
	if (ret && ret != -EFBIG) {
		p->submit_errors++;
		if (p->submit_err_logged != ret)
			push_msg_add(m, PUSH_LOG_ERROR, "push: cannot spool batch %" PRIu64 " in %s: %s", seq,
				p->spool_dir, strerror(-ret));
		p->submit_err_logged = ret;
		goto out;
	}
	if (!ret && p->submit_err_logged) {
		push_msg_add(m, PUSH_LOG_INFO, "push: spooling batches in %s again", p->spool_dir);
		p->submit_err_logged = 0;
	}
	dropped = spool_dropped(p->spool);
	if (ret == -EFBIG) {
		push_msg_add(m, PUSH_LOG_ERROR, "push: batch %" PRIu64 " (%zu bytes) is larger than the spool cap; dropped",
			seq, len);
	} else if (dropped > p->dropped_seen && !p->dropping) {
		/* Once when the spool starts overflowing, once when it stops. */
		push_msg_add(m, PUSH_LOG_WARN,
			"push: spool %s full (%" PRIu64 " bytes in %zu batches): dropping the oldest batches",
			p->spool_dir, spool_bytes(p->spool), spool_count(p->spool));
		p->dropping = true;
	} else if (dropped == p->dropped_seen && p->dropping) {
		push_msg_add(m, PUSH_LOG_INFO, "push: spool %s no longer full; %" PRIu64 " batches dropped in all",
			p->spool_dir, dropped);
		p->dropping = false;
	}
	p->dropped_seen = dropped;
	pthread_cond_broadcast(&p->wake);
out:
	pthread_mutex_unlock(&p->lock);
	push_msg_flush(p, m);
	return ret;
}

/* Does any lane still miss a spooled batch <= @target? */
static bool flush_pending(struct push *p, uint64_t target)
{
	for (size_t i = 0; i < p->nlanes; i++) {
		uint64_t seq;

		if (spool_next_after(p->spool, p->lanes[i].cursor, &seq) == 0 && seq <= target)
			return true;
	}
	return false;
}

int push_flush(struct push *p, unsigned timeout_ms)
{
	uint64_t deadline = clock_mono_ms() + timeout_ms, target;
	struct timespec ts = clock_abstime_ms(deadline);
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	if (spool_last(p->spool, &target) < 0)
		goto out;
	for (size_t i = 0; i < p->n; i++)
		p->c[i].next_ms = p->c[i].hold_ms; /* our backoff is skipped, a Retry-After kept */
	pthread_cond_broadcast(&p->wake);
	while (flush_pending(p, target)) {
		if (clock_mono_ms() >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		pthread_cond_timedwait(&p->progress, &p->lock, &ts);
	}
out:
	pthread_mutex_unlock(&p->lock);
	return ret;
}

void push_stats(struct push *p, struct push_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&p->lock);
	st->n_collectors = p->n;
	for (size_t i = 0; i < p->n; i++) {
		const struct collector *c = &p->c[i];
		struct push_collector_stats *cs = &st->collectors[i];

		*cs = c->st;
		cs->url = c->name;
		cs->cursor = c->lane->cursor;
		cs->pending = spool_count_after(p->spool, c->lane->cursor);
		cs->failing = c->state == C_FAILING;
		st->sent += cs->sent;
		st->acked += cs->acked;
		st->retried += cs->retried;
		st->rejected += cs->rejected;
		st->failures += cs->failures;
		st->duplicates += cs->duplicates;
		st->maybe_delivered += cs->maybe_delivered;
	}
	st->spool_bytes = spool_bytes(p->spool);
	st->spool_count = spool_count(p->spool);
	st->spool_dropped = spool_dropped(p->spool);
	st->submit_errors = p->submit_errors;
	pthread_mutex_unlock(&p->lock);
}
