// SPDX-License-Identifier: MIT
/*
 * remote_write: a ticker thread and one sender thread per URL.
 *
 * The ticker takes a snapshot every interval (the callback renders the
 * totals under the server's lock; the encoding runs outside it), encodes it
 * once (rw_encode) and appends the same reference-counted request to every
 * URL's queue. Each sender sends its queue head with lib/httpc (the agent's
 * push uses the same client), so a slow or dead receiver only holds back
 * its own queue. One mutex guards the queues and counters; it is never held
 * across network I/O or encoding.
 *
 * The sample time is the snapshot's wall-clock time, so a request retried
 * later still carries the time its values were true, and the receiver sees
 * each series' samples in order (a queue is sent in order; a dropped
 * request leaves a gap, not a disorder).
 */
#include "exporter/remote_write.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporter/rw_encode.h"
#include "lib/clock.h"
#include "lib/httpc.h"
#include "lib/log.h"

#define DEFAULT_RETRY_INITIAL_MS 500u
#define DEFAULT_RETRY_MAX_MS 5000u

struct rw_req {
	atomic_uint refs;
	void *body;
	size_t len, nseries;
};

enum rw_state { S_OK, S_FAILING, S_REJECTING };

struct rw_target {
	struct rw *rw;
	struct httpc *http;
	char *name; /* URL without credentials */
	pthread_t thread;
	bool started;
	uint64_t rng; /* sender thread only */

	/* Guarded by rw->lock. */
	struct rw_req **q; /* ring of queue_max */
	size_t head, len;
	struct rw_req *inflight; /* the head while its sender sends it, or NULL */
	uint64_t next_ms; /* no request before this (monotonic) */
	unsigned attempts;
	enum rw_state state;
	uint64_t sent, samples_sent, failed, dropped_full, dropped_rejected, samples_dropped;
};

struct rw {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	atomic_bool stopping;
	char *auth_header;
	char *instance;
	uint64_t interval_ms;
	size_t queue_max;
	uint64_t retry_initial_ms, retry_max_ms;
	rw_snapshot_fn *snap;
	void *snap_arg;
	pthread_t ticker;
	bool ticker_started;

	/* Guarded by lock. */
	uint64_t snapshots, snapshot_errors;

	size_t n;
	struct rw_target t[];
};

static void req_put(struct rw_req *r)
{
	if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
		free(r->body);
		free(r);
	}
}

/* ---- the queue, under rw->lock --------------------------------------- */

static struct rw_req *q_head(struct rw_target *t)
{
	return t->len ? t->q[t->head] : NULL;
}

static void q_pop(struct rw_target *t)
{
	req_put(t->q[t->head]);
	t->q[t->head] = NULL;
	t->head = (t->head + 1) % t->rw->queue_max;
	t->len--;
}

/* Append @r; a full queue drops its oldest request but the one in flight
 * (unless that is all it holds): its outcome is still to be counted. */
static void q_push(struct rw_target *t, struct rw_req *r)
{
	struct rw *rw = t->rw;

	if (t->len == rw->queue_max) {
		size_t second = (t->head + 1) % rw->queue_max;
		bool keep = t->q[t->head] == t->inflight && t->len > 1;
		struct rw_req *victim = t->q[keep ? second : t->head];

		t->dropped_full++;
		t->samples_dropped += victim->nseries;
		if (keep) { /* the head moves into the second slot */
			req_put(victim);
			t->q[second] = t->q[t->head];
			t->q[t->head] = NULL;
			t->head = second;
			t->len--;
		} else {
			q_pop(t);
		}
	}
	atomic_fetch_add(&r->refs, 1);
	t->q[(t->head + t->len) % rw->queue_max] = r;
	t->len++;
}

/* ---- snapshots ---------------------------------------------------------- */

int rw_snapshot_now(struct rw *rw, rw_snapshot_fn *snap, void *arg)
{
	struct rw_label extra[] = { { "instance", rw->instance }, { "job", "cgperf-exporter" } };
	struct rw_req *r;
	struct page p;
	int64_t ts = (int64_t)(clock_real_ns() / 1000000);
	int ret;

	page_init(&p, 0);
	ret = snap(arg, &p);
	if (!ret && page_failed(&p))
		ret = -ENOMEM;
	r = ret ? NULL : calloc(1, sizeof(*r));
	if (!ret && !r)
		ret = -ENOMEM;
	if (!ret) {
		ret = rw_encode(p.buf ? p.buf : "", p.len, extra, 2, ts, &r->body, &r->len, &r->nseries);
		if (ret == -EINVAL) {
			char line[24];

			snprintf(line, sizeof(line), "%zu", r->nseries);
			log_kv(LOG_ERROR, "remote_write: cannot read the exposition text", "line", line, NULL);
		}
	}
	page_release(&p);
	pthread_mutex_lock(&rw->lock);
	rw->snapshots++;
	if (ret) {
		rw->snapshot_errors++;
	} else {
		atomic_init(&r->refs, 1);
		for (size_t i = 0; i < rw->n; i++)
			q_push(&rw->t[i], r);
		pthread_cond_broadcast(&rw->wake);
	}
	pthread_mutex_unlock(&rw->lock);
	if (r && !ret)
		req_put(r); /* the queues hold it now */
	else
		free(r);
	return ret;
}

static void *ticker_main(void *arg)
{
	struct rw *rw = arg;
	uint64_t next = clock_mono_ms();

	while (!atomic_load(&rw->stopping)) {
		if (clock_mono_ms() >= next) {
			rw_snapshot_now(rw, rw->snap, rw->snap_arg);
			next += rw->interval_ms;
			if (next < clock_mono_ms()) /* a slow round: no burst to catch up */
				next = clock_mono_ms() + rw->interval_ms;
			continue;
		}
		struct timespec ts = clock_abstime_ms(next);

		pthread_mutex_lock(&rw->lock);
		if (!atomic_load(&rw->stopping))
			pthread_cond_timedwait(&rw->wake, &rw->lock, &ts);
		pthread_mutex_unlock(&rw->lock);
	}
	return NULL;
}

/* ---- senders ------------------------------------------------------------ */

static void log_state(struct rw_target *t, enum rw_state s, const struct httpc_result *r)
{
	if (s == t->state)
		return;
	t->state = s;
	if (s == S_OK)
		log_kv(LOG_INFO, "remote_write: receiver accepts requests again", "url", t->name, NULL);
	else
		log_kv(s == S_FAILING ? LOG_WARN : LOG_ERROR,
		       s == S_FAILING ? "remote_write: receiver failing; retrying with backoff"
				      : "remote_write: receiver rejected a request; dropped, not retried",
		       "url", t->name, "error", r->text, NULL);
}

/* The outcome of sending @req, the head of @t's queue. Under rw->lock. */
static void on_result(struct rw_target *t, struct rw_req *req, const struct httpc_result *r)
{
	struct rw *rw = t->rw;
	uint64_t delay;

	if (r->kind == HTTPC_STOPPED)
		return;
	if (r->kind == HTTPC_RETRY) {
		t->failed++;
		t->attempts++;
		delay = httpc_backoff_ms(&t->rng, t->attempts, rw->retry_initial_ms, rw->retry_max_ms, false);
		if (r->retry_after_ms >= 0 && (uint64_t)r->retry_after_ms > delay)
			delay = (uint64_t)r->retry_after_ms;
		t->next_ms = clock_mono_ms() + delay;
		return;
	}
	if (r->kind == HTTPC_ACK) {
		t->sent++;
		t->samples_sent += req->nseries;
	} else {
		t->failed++;
		t->dropped_rejected++;
		t->samples_dropped += req->nseries;
	}
	t->attempts = 0;
	t->next_ms = 0;
	/* A full queue may have dropped it meanwhile. */
	if (q_head(t) == req)
		q_pop(t);
}

static void *sender_main(void *arg)
{
	struct rw_target *t = arg;
	struct rw *rw = t->rw;
	const char *hdrs[] = { "Content-Type: application/x-protobuf", "Content-Encoding: snappy",
			       "X-Prometheus-Remote-Write-Version: 0.1.0", "Expect:", rw->auth_header };

	pthread_mutex_lock(&rw->lock);
	while (!atomic_load(&rw->stopping)) {
		struct rw_req *req = q_head(t);
		struct httpc_result r;
		uint64_t now = clock_mono_ms();

		if (!req || now < t->next_ms) {
			struct timespec ts = clock_abstime_ms(req ? t->next_ms : now + 60000);

			pthread_cond_timedwait(&rw->wake, &rw->lock, &ts);
			continue;
		}
		atomic_fetch_add(&req->refs, 1);
		t->inflight = req;
		pthread_mutex_unlock(&rw->lock);
		httpc_post(t->http, hdrs, sizeof(hdrs) / sizeof(hdrs[0]), req->body, req->len, &r);
		pthread_mutex_lock(&rw->lock);
		t->inflight = NULL;
		on_result(t, req, &r);
		if (r.kind != HTTPC_STOPPED)
			log_state(t, r.kind == HTTPC_ACK ? S_OK : r.kind == HTTPC_RETRY ? S_FAILING : S_REJECTING,
				  &r);
		req_put(req);
	}
	pthread_mutex_unlock(&rw->lock);
	return NULL;
}

/* ---- life cycle --------------------------------------------------------- */

static int target_setup(struct rw *rw, struct rw_target *t, const char *url, const struct rw_opts *o)
{
	t->rw = rw;
	t->name = httpc_redact_url(url);
	t->q = calloc(rw->queue_max, sizeof(*t->q));
	if (!t->name || !t->q)
		return -ENOMEM;
	t->rng = httpc_rng_seed(url);
	t->http = httpc_new(&(struct httpc_opts){
		.url = url,
		.timeout_ms = o->timeout_ms,
		.user_agent = "cgperf-exporter",
		.basic_user = o->basic_user,
		.basic_password = o->basic_password,
		.stop = &rw->stopping,
	});
	return t->http ? 0 : -errno;
}

struct rw *rw_new(const struct rw_opts *o)
{
	struct rw *rw = NULL;
	int ret = -EINVAL;

	if (!o || !o->nurls || !o->urls || !o->instance || !o->interval_ms || !o->queue_max)
		goto err;
	rw = calloc(1, sizeof(*rw) + o->nurls * sizeof(rw->t[0]));
	ret = -ENOMEM;
	if (!rw)
		goto err;
	pthread_mutex_init(&rw->lock, NULL);
	clock_cond_init(&rw->wake);
	atomic_init(&rw->stopping, false);
	rw->n = o->nurls;
	rw->interval_ms = o->interval_ms;
	rw->queue_max = o->queue_max;
	rw->retry_initial_ms = o->retry_initial_ms ? o->retry_initial_ms : DEFAULT_RETRY_INITIAL_MS;
	rw->retry_max_ms = o->retry_max_ms ? o->retry_max_ms : DEFAULT_RETRY_MAX_MS;
	rw->instance = strdup(o->instance);
	if (!rw->instance)
		goto err;
	if (o->bearer_token && (ret = httpc_auth_header(o->bearer_token, &rw->auth_header)))
		goto err;
	for (size_t i = 0; i < rw->n; i++) {
		ret = target_setup(rw, &rw->t[i], o->urls[i], o);
		if (ret)
			goto err;
	}
	return rw;
err:
	rw_free(rw);
	errno = -ret;
	return NULL;
}

int rw_start(struct rw *rw, rw_snapshot_fn *snap, void *arg)
{
	int ret;

	rw->snap = snap;
	rw->snap_arg = arg;
	for (size_t i = 0; i < rw->n; i++) {
		ret = -pthread_create(&rw->t[i].thread, NULL, sender_main, &rw->t[i]);
		if (ret)
			return ret;
		rw->t[i].started = true;
	}
	ret = -pthread_create(&rw->ticker, NULL, ticker_main, rw);
	if (!ret)
		rw->ticker_started = true;
	return ret;
}

void rw_free(struct rw *rw)
{
	if (!rw)
		return;
	pthread_mutex_lock(&rw->lock);
	atomic_store(&rw->stopping, true);
	pthread_cond_broadcast(&rw->wake);
	pthread_mutex_unlock(&rw->lock);
	for (size_t i = 0; i < rw->n; i++)
		if (rw->t[i].http)
			httpc_wakeup(rw->t[i].http);
	if (rw->ticker_started)
		pthread_join(rw->ticker, NULL);
	for (size_t i = 0; i < rw->n; i++) {
		struct rw_target *t = &rw->t[i];

		if (t->started)
			pthread_join(t->thread, NULL);
		while (t->q && t->len)
			q_pop(t);
		httpc_free(t->http);
		free(t->q);
		free(t->name);
	}
	pthread_cond_destroy(&rw->wake);
	pthread_mutex_destroy(&rw->lock);
	free(rw->auth_header);
	free(rw->instance);
	free(rw);
}

/* ---- metrics ------------------------------------------------------------ */

void rw_render(struct rw *rw, struct page *p, bool om)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} f[] = {
#define F(m) offsetof(struct rw_target, m)
		{ "cgperf_exporter_remote_write_requests_sent_total", "counter",
		  "remote_write requests the receiver accepted (2xx).", F(sent) },
		{ "cgperf_exporter_remote_write_samples_sent_total", "counter",
		  "Samples in the accepted remote_write requests.", F(samples_sent) },
		{ "cgperf_exporter_remote_write_requests_failed_total", "counter",
		  "remote_write requests that failed (retried, or rejected with a 4xx).", F(failed) },
		{ "cgperf_exporter_remote_write_samples_dropped_total", "counter",
		  "Samples in remote_write requests dropped (queue full or rejected).",
		  F(samples_dropped) },
#undef F
	};

	if (!rw)
		return;
	pthread_mutex_lock(&rw->lock);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		page_family(p, om, f[i].name, f[i].type, f[i].help);
		for (size_t k = 0; k < rw->n; k++) {
			uint64_t v;

			memcpy(&v, (const char *)&rw->t[k] + f[i].off, sizeof(v));
			page_printf(p, "%s{url=\"", f[i].name);
			page_label(p, rw->t[k].name);
			page_put(p, "\"} ");
			page_u64(p, v);
			page_putc(p, '\n');
		}
	}
	page_family(p, om, "cgperf_exporter_remote_write_requests_dropped_total", "counter",
		    "remote_write requests dropped, by reason: queue_full (the oldest made room), "
		    "rejected (a 4xx other than 408/429).");
	for (size_t k = 0; k < rw->n; k++) {
		for (int why = 0; why < 2; why++) {
			page_put(p, "cgperf_exporter_remote_write_requests_dropped_total{url=\"");
			page_label(p, rw->t[k].name);
			page_printf(p, "\",reason=\"%s\"} ", why ? "rejected" : "queue_full");
			page_u64(p, why ? rw->t[k].dropped_rejected : rw->t[k].dropped_full);
			page_putc(p, '\n');
		}
	}
	page_family(p, om, "cgperf_exporter_remote_write_queue_length", "gauge",
		    "remote_write requests waiting for the receiver (the one being sent included).");
	for (size_t k = 0; k < rw->n; k++) {
		page_put(p, "cgperf_exporter_remote_write_queue_length{url=\"");
		page_label(p, rw->t[k].name);
		page_put(p, "\"} ");
		page_u64(p, rw->t[k].len);
		page_putc(p, '\n');
	}
	page_family(p, om, "cgperf_exporter_remote_write_snapshot_errors_total", "counter",
		    "remote_write rounds skipped because the series could not be taken or encoded.");
	page_printf(p, "cgperf_exporter_remote_write_snapshot_errors_total %" PRIu64 "\n", rw->snapshot_errors);
	pthread_mutex_unlock(&rw->lock);
}
