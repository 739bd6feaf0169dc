// SPDX-License-Identifier: MIT
/*
 * Each request keeps a small state across libmicrohttpd's calls: the
 * decision taken from the headers (route, token, Content-Length), then the
 * body as it arrives, capped at max_body whatever Content-Length said, then
 * the answer on the last call. Bad input costs at most max_body bytes of
 * memory per connection and never leaves state behind.
 *
 * Two locks. `ingest` is held across store_put() (and the commit's fsync)
 * and orders commits; `lock` guards the totals and the counts below. A
 * push takes `lock` before it lets go of `ingest`, so batches reach the
 * totals in commit order (the floating-point sums then equal the store's
 * bit for bit) while a scrape waits at most for an in-memory update,
 * never for a disk write. Series expiry goes through the same pair.
 *
 * GET /api/v1/stacks, heatmap and series read through the store's reader,
 * outside both locks.
 *
 * Nothing slow runs on libmicrohttpd's event loops. A few threads each
 * run an epoll loop over thousands of connections (kept-alive agents are
 * idle most of the time), and a loop that waits for a commit's fsync or
 * renders a flame graph stalls every connection it holds. So a loop does
 * only the cheap part: headers, the body, decoding the batch. Then the
 * request joins a bounded queue and its connection is suspended
 * (MHD_suspend_connection): pushes go to one store thread, which commits
 * them in arrival order, and read routes (/metrics, stacks, targets, the
 * index) to a few reader threads. The page and its assets (ui.c) are
 * static bytes, answered on the loop. The worker builds the answer and resumes
 * the connection; the loop sends it on the handler's next call. The ack
 * of a push is sent only after its commit: a 200 always means stored. A
 * full queue is answered at once with 503 and Retry-After, which the agent
 * retries after; /healthz never queues.
 *
 * Text answers of the read routes (/metrics, folded and SVG stacks,
 * targets, the index page) are gzip'd when the client accepts gzip:
 * Prometheus always asks, and /metrics at 100,000 series is ~16 MB of
 * text that shrinks about tenfold. The page is built first (under the
 * lock), then compressed in one deflate call at a fast level, outside any
 * lock, so a slow scrape never delays a push.
 *
 * This file is the server; building answers is http_answer.c and the read
 * routes are routes.c (http_internal.h says what they share).
 */
#include "exporter/http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "wire/wire.h"
#include "exporter/config.h"
#include "exporter/store/store.h"
#include "exporter/totals.h"
#include "exporter/ui.h"
#include "lib/clock.h"
#include "lib/netaddr.h"

const char *const http_reject_name[REJ_N] = { "auth", "too_large", "bad_request",
					  "series_limit" };

uint64_t http_now_ns(void)
{
	return clock_real_ns();
}

static void count_reject(struct http *h, enum reject why, const char *text)
{
	pthread_mutex_lock(&h->lock);
	h->rejects[why]++;
	pthread_mutex_unlock(&h->lock);
	log_kv(LOG_WARN, "push rejected", "reason", http_reject_name[why], "error", text, NULL);
}

/* Compare without leaking where the first difference is. */
static bool same_secret(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
	return d == 0;
}


/* ---- work queues ---- */

/*
 * Hand @r to @q's threads and suspend its connection until a worker has
 * built the answer; 503 with Retry-After when the queue is full or the
 * server stops. Called on an event loop, from the handler.
 */
static enum MHD_Result enqueue(struct http *h, struct workq *q, struct MHD_Connection *c,
			       struct req *r)
{
	uint64_t bytes = r->route == RT_PUSH ? r->len : 0;
	bool full;

	pthread_mutex_lock(&q->lock);
	full = q->stopping || q->n >= q->max_n ||
	       (q->n && q->bytes + bytes > q->max_bytes);
	if (!full) {
		r->deferred = true;
		r->conn = c;
		r->queued_bytes = bytes;
		r->next = NULL;
		if (q->tail)
			q->tail->next = r;
		else
			q->head = r;
		q->tail = r;
		q->n++;
		q->bytes += bytes;
		/* Suspended before a worker can resume it: under the queue's lock. */
		MHD_suspend_connection(c);
		pthread_cond_signal(&q->cond);
	}
	pthread_mutex_unlock(&q->lock);
	if (!full)
		return MHD_YES;
	if (r->m) {
		wire_batch_decoded_free(r->m);
		r->m = NULL;
	}
	pthread_mutex_lock(&h->lock);
	h->busy++;
	pthread_mutex_unlock(&h->lock);
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		sizeof("busy: queue full, retry later\n") - 1, (void *)"busy: queue full, retry later\n",
		MHD_RESPMEM_PERSISTENT);

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
	MHD_add_response_header(resp, "Retry-After", BUSY_RETRY_S);
	return http_deliver(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, resp);
}

/* A worker: serve requests until the queue stops and is empty, so that no
 * connection is left suspended. */
static void *workq_main(void *arg)
{
	struct workq *q = arg;
	struct req *rs[INGEST_GROUP_MAX];

	pthread_mutex_lock(&q->lock);
	for (;;) {
		size_t n = 0;

		if (!q->head) {
			if (q->stopping)
				break;
			pthread_cond_wait(&q->cond, &q->lock);
			continue;
		}
		while (q->head && n < q->group) {
			struct req *r = q->head;

			q->head = r->next;
			if (!q->head)
				q->tail = NULL;
			q->n--;
			q->bytes -= r->queued_bytes;
			rs[n++] = r;
		}
		pthread_mutex_unlock(&q->lock);
		q->serve(q->h, rs, n);
		for (size_t i = 0; i < n; i++) {
			struct req *r = rs[i];

			if (!r->resp) { /* out of memory building any answer */
				r->resp = MHD_create_response_from_buffer(0, (void *)"",
									  MHD_RESPMEM_PERSISTENT);
				r->status = MHD_HTTP_SERVICE_UNAVAILABLE;
			}
			MHD_resume_connection(r->conn);
		}
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static int workq_start(struct http *h, struct workq *q, unsigned threads, size_t max_n,
		       uint64_t max_bytes, size_t group,
		       void (*serve)(struct http *h, struct req **r, size_t n))
{
	int ret;

	q->h = h;
	q->group = group;
	q->max_n = max_n;
	q->max_bytes = max_bytes;
	q->serve = serve;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	for (; q->n_threads < threads; q->n_threads++) {
		ret = pthread_create(&q->threads[q->n_threads], NULL, workq_main, q);
		if (ret)
			return -ret;
	}
	return 0;
}

/* Stop taking requests, serve those queued, join the threads. */
static void workq_stop(struct workq *q)
{
	if (!q->h)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	for (unsigned i = 0; i < q->n_threads; i++)
		pthread_join(q->threads[i], NULL);
	q->n_threads = 0;
}

/* After the event loops have stopped: they take the queue's lock. */
static void workq_release(struct workq *q)
{
	if (!q->h)
		return;
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	q->h = NULL;
}

void http_workq_depth(struct http *h, size_t out[2])
{
	struct workq *qs[2] = { &h->store_q, &h->read_q };

	for (int i = 0; i < 2; i++) {
		pthread_mutex_lock(&qs[i]->lock);
		out[i] = qs[i]->n;
		pthread_mutex_unlock(&qs[i]->lock);
	}
}

/* ---- routing ---- */

static const char routes_text[] =
	"not found: POST /api/v1/push, GET /metrics, /api/v1/stacks, /api/v1/diff, "
	"/api/v1/heatmap, /api/v1/series, /api/v1/targets, / (the page), /index, /healthz\n";

/* The first call of a request: route it and check what the headers say. */
static enum MHD_Result first_call(struct http *h, struct MHD_Connection *c, struct req *r,
				  const char *url, const char *method)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	static const char *const gets[] = { "/metrics", "/healthz", "/api/v1/stacks",
					    "/api/v1/targets", "/index", "/api/v1/heatmap",
					    "/api/v1/series", "/api/v1/diff" };

	if (ui_path(url)) { /* the page and its assets: static, answered here */
		if (!get)
			return http_answer(c, r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET\n");
		return ui_serve(c, r, url, h->cfg.ui_dir);
	}
	for (size_t i = 0; i < sizeof(gets) / sizeof(gets[0]); i++) {
		static const enum route rt[] = { RT_METRICS, 0, RT_STACKS, RT_TARGETS, RT_INDEX,
						 RT_HEATMAP, RT_SERIES, RT_DIFF };
		char why[256];

		if (strcmp(url, gets[i]))
			continue;
		if (!get)
			return http_answer(c, r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET\n");
		if (i == 1) /* /healthz: at once, whatever the queues hold */
			return http_answer(c, r, MHD_HTTP_OK, "ok\n");
		r->encodable = true;
		r->gzip = http_accepts_gzip(c);
		r->om = i == 0 && routes_wants_openmetrics(c);
		r->route = rt[i];
		/* Whatever a worker needs of the request is read here: it never
		 * touches the connection. */
		if (r->route == RT_STACKS && routes_parse_stacks_query(c, &r->q, why, sizeof(why)))
			return http_answerf(c, r, MHD_HTTP_BAD_REQUEST, "%s\n", why);
		if (r->route == RT_HEATMAP &&
		    routes_parse_heatmap_query(c, &r->q, why, sizeof(why)))
			return http_answerf(c, r, MHD_HTTP_BAD_REQUEST, "%s\n", why);
		if (r->route == RT_SERIES && routes_parse_series_query(c, &r->q, why, sizeof(why)))
			return http_answerf(c, r, MHD_HTTP_BAD_REQUEST, "%s\n", why);
		if (r->route == RT_DIFF && routes_parse_diff_query(c, &r->q, why, sizeof(why)))
			return http_answerf(c, r, MHD_HTTP_BAD_REQUEST, "%s\n", why);
		return enqueue(h, &h->read_q, c, r);
	}
	if (strcmp(url, "/api/v1/push"))
		return http_answer(c, r, MHD_HTTP_NOT_FOUND, routes_text);
	if (strcmp(method, "POST"))
		return http_answer(c, r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: POST\n");
	if (h->auth) {
		const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");

		if (!a || !same_secret(a, h->auth)) {
			count_reject(h, REJ_AUTH, a ? "wrong token" : "no token");
			return http_answer(c, r, MHD_HTTP_UNAUTHORIZED, "missing or wrong bearer token\n");
		}
	}
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");

	if (cl) {
		char *end;
		unsigned long long n;

		errno = 0;
		n = strtoull(cl, &end, 10);
		if (!errno && end != cl && !*end && n > h->cfg.max_body) {
			count_reject(h, REJ_TOO_LARGE, "Content-Length over --max-body");
			return http_answer(c, r, MHD_HTTP_CONTENT_TOO_LARGE, "body too large\n");
		}
	}
	r->push = true;
	return MHD_YES;
}

static int body_append(struct http *h, struct req *r, const char *data, size_t n)
{
	if (r->too_large)
		return 0;
	if (n > h->cfg.max_body - r->len) {
		r->too_large = true;
		free(r->buf);
		r->buf = NULL;
		r->len = r->cap = 0;
		return 0;
	}
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 64 * 1024;
		uint8_t *p;

		while (cap < r->len + n)
			cap = cap > h->cfg.max_body / 2 ? h->cfg.max_body : cap * 2;
		p = realloc(r->buf, cap);
		if (!p)
			return -ENOMEM;
		r->buf = p;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, data, n);
	r->len += n;
	return 0;
}

/* @status with Retry-After: @after seconds. */
static enum MHD_Result answer_after(struct MHD_Connection *c, struct req *r, unsigned status,
				    uint64_t after_s, const char *why)
{
	char text[600], after[32];
	struct MHD_Response *resp;

	r->done = true;
	snprintf(text, sizeof(text), "%s\n", why);
	snprintf(after, sizeof(after), "%" PRIu64, after_s ? after_s : 1);
	resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
	MHD_add_response_header(resp, "Retry-After", after);
	return http_deliver(c, r, status, resp);
}

/* 429 with Retry-After: the series expiry frees room. */
static enum MHD_Result answer_retry(struct MHD_Connection *c, struct req *r, struct http *h,
				    const char *why)
{
	return answer_after(c, r, MHD_HTTP_TOO_MANY_REQUESTS,
			    h->cfg.series_expiry_ns / 1000000000u, why);
}

/* The last call of a push: the whole body is here. Decode it on the loop
 * (bounded work), then queue it for the store thread. */
static enum MHD_Result finish_push(struct http *h, struct MHD_Connection *c, struct req *r)
{
	char err[256] = "";
	Cgperf__V1__Batch *m;

	if (r->too_large) {
		count_reject(h, REJ_TOO_LARGE, "body over --max-body");
		return http_answer(c, r, MHD_HTTP_CONTENT_TOO_LARGE, "body too large\n");
	}
	m = wire_decode(r->buf ? r->buf : (const uint8_t *)"", r->len, h->cfg.max_body, err,
			sizeof(err));
	if (!m) {
		int e = errno;

		if (e == ENOMEM)
			return http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
		count_reject(h, e == EMSGSIZE ? REJ_TOO_LARGE : REJ_BAD_REQUEST, err);
		return http_answerf(c, r,
			       e == EMSGSIZE ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST,
			       "%s\n", err);
	}
	free(r->buf); /* the decoded batch is all that is needed now */
	r->buf = NULL;
	r->cap = 0;
	r->m = m;
	r->route = RT_PUSH;
	return enqueue(h, &h->store_q, c, r);
}

/*
 * The store thread: commit the batches of @rs (in queue order, in one
 * transaction: one fsync for all), then build their answers. Batches that
 * would pass the series caps, counting those before them in the group, get
 * 429 and are not stored.
 */
static void ingest(struct http *h, struct req **rs, size_t n)
{
	size_t max_n = h->cfg.max_series ? h->cfg.max_series : TOTALS_ENTRIES_MAX_DEFAULT;
	size_t max_b = h->cfg.max_series_bytes ? h->cfg.max_series_bytes : TOTALS_BYTES_MAX_DEFAULT;
	const Cgperf__V1__Batch *put[INGEST_GROUP_MAX];
	int res[INGEST_GROUP_MAX];
	size_t k = 0, held_n, held_b;
	char err[256] = "";
	char why[INGEST_GROUP_MAX][256]; /* each batch's reason when it failed */
	uint64_t now;

	pthread_mutex_lock(&h->ingest);
	pthread_mutex_lock(&h->lock);
	held_n = totals_entries(h->cfg.totals);
	held_b = totals_bytes(h->cfg.totals);
	for (size_t i = 0; i < n; i++) {
		size_t grow_b = 0, grow_n = totals_batch_growth(h->cfg.totals, rs[i]->m, &grow_b);

		if (held_n + grow_n <= max_n && held_b + grow_b <= max_b) {
			held_n += grow_n;
			held_b += grow_b;
			put[k++] = rs[i]->m;
			continue;
		}
		snprintf(err, sizeof(err),
			 "series limit: %zu entries (%zu bytes) held or committing, this batch adds "
			 "up to %zu (%zu bytes); caps %zu entries, %zu bytes",
			 held_n, held_b, grow_n, grow_b, max_n, max_b);
		h->rejects[REJ_SERIES_LIMIT]++;
		log_kv(LOG_WARN, "push rejected", "reason", http_reject_name[REJ_SERIES_LIMIT], "error",
		       err, NULL);
		wire_batch_decoded_free(rs[i]->m);
		rs[i]->m = NULL;
		answer_retry(NULL, rs[i], h, err);
	}
	pthread_mutex_unlock(&h->lock);
	now = http_now_ns();
	if (k)
		store_put_many(h->cfg.store, put, k, now, res, why[0], sizeof(why[0]));
	pthread_mutex_lock(&h->lock);
	pthread_mutex_unlock(&h->ingest);
	/* In commit order, under the lock the scrapes take. */
	for (size_t i = 0, j = 0; i < n; i++) {
		if (!rs[i]->m)
			continue;
		if (res[j] == 0) {
			h->received++;
			h->stale = true;
			if (totals_add_batch(h->cfg.totals, rs[i]->m, now))
				log_kv(LOG_ERROR, "out of memory: /metrics totals incomplete", NULL);
		} else if (res[j] == 1) {
			h->duplicates++;
			h->stale = true; /* on a shared store: another exporter stored it */
		} else {
			h->store_errors++;
		}
		j++;
	}
	pthread_mutex_unlock(&h->lock);
	for (size_t i = 0, j = 0; i < n; i++) {
		Cgperf__V1__Batch *m = rs[i]->m;
		const char *reason;
		char seq[32];
		int ret;

		if (!m)
			continue;
		reason = why[j];
		ret = res[j++];
		snprintf(seq, sizeof(seq), "%" PRIu64, m->seq);
		if (ret < 0)
			log_kv(LOG_ERROR, "cannot store batch", "agent_id", m->agent_id, "seq", seq,
			       "error", reason, NULL);
		else
			log_kv(LOG_DEBUG, ret ? "duplicate batch" : "batch stored", "host", m->host,
			       "agent_id", m->agent_id, "seq", seq, NULL);
		if (ret == -EAGAIN) /* the store is unreachable: the agent keeps it */
			answer_after(NULL, rs[i], MHD_HTTP_SERVICE_UNAVAILABLE, STORE_RETRY_S, reason);
		else if (ret < 0)
			http_answerf(NULL, rs[i], MHD_HTTP_INTERNAL_SERVER_ERROR, "store failed: %s\n",
				reason);
		else
			http_answer(NULL, rs[i], MHD_HTTP_OK, ret ? "duplicate\n" : "stored\n");
		wire_batch_decoded_free(m);
		rs[i]->m = NULL;
	}
}

int http_totals_refresh(struct http *h)
{
	struct store_visitor v;
	struct totals *fresh;
	uint64_t now = clock_mono_ns();
	bool due;
	int ret = 0;

	if (!store_shared(h->cfg.store))
		return 0;
	pthread_mutex_lock(&h->reload);
	pthread_mutex_lock(&h->lock);
	due = h->stale || !h->loaded_ns || now - h->loaded_ns >= SHARED_TOTALS_TTL_NS;
	h->stale = false; /* a commit from here on makes it stale again */
	pthread_mutex_unlock(&h->lock);
	fresh = due ? totals_new() : NULL;
	if (due && !fresh)
		ret = -ENOMEM;
	if (fresh) {
		totals_visitor(fresh, &v);
		ret = store_load(h->cfg.store, &v);
	}
	pthread_mutex_lock(&h->lock);
	if (fresh && !ret) {
		totals_replace(h->cfg.totals, fresh);
		h->loaded_ns = now;
	} else if (ret) {
		h->stale = true;
	}
	pthread_mutex_unlock(&h->lock);
	pthread_mutex_unlock(&h->reload);
	totals_free(fresh);
	if (ret)
		log_kv(LOG_WARN, "cannot reload totals from the store", "error", strerror(-ret),
		       NULL);
	return ret;
}

int http_expire(struct http *h, uint64_t now)
{
	uint64_t before = http_cutoff(h, now);
	int ret;

	pthread_mutex_lock(&h->ingest);
	ret = store_expire(h->cfg.store, before);
	pthread_mutex_lock(&h->lock);
	pthread_mutex_unlock(&h->ingest);
	/* On a store error the totals keep the series too: both stay equal. */
	if (!ret)
		totals_expire(h->cfg.totals, before);
	pthread_mutex_unlock(&h->lock);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	struct http *h = cls;
	struct req *r = *state;

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*state = r;
		return first_call(h, c, r, url, method);
	}
	if (r->deferred) {
		/* Resumed: a worker built the answer. */
		struct MHD_Response *resp = r->resp;

		if (!resp)
			return MHD_NO; /* no memory for any answer: close */
		r->resp = NULL;
		r->deferred = false;
		return http_deliver(c, r, r->status, resp);
	}
	if (r->done || !r->push) {
		*upload_len = 0;
		return MHD_YES;
	}
	if (*upload_len) {
		if (body_append(h, r, upload, *upload_len))
			return MHD_NO;
		*upload_len = 0;
		return MHD_YES;
	}
	return finish_push(h, c, r);
}

static void completed(void *cls, struct MHD_Connection *c, void **state,
		      enum MHD_RequestTerminationCode why)
{
	struct req *r = *state;

	if (r) {
		if (r->resp)
			MHD_destroy_response(r->resp);
		if (r->m)
			wire_batch_decoded_free(r->m);
		free(r->buf);
		free(r);
		*state = NULL;
	}
}

void http_stop(struct http *h)
{
	if (!h)
		return;
	/* Queued requests are answered first: MHD must not stop with a
	 * connection suspended. Requests that come meanwhile get 503. */
	workq_stop(&h->store_q);
	workq_stop(&h->read_q);
	if (h->d)
		MHD_stop_daemon(h->d);
	workq_release(&h->store_q);
	workq_release(&h->read_q);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->ingest);
	pthread_mutex_destroy(&h->reload);
	free(h->auth);
	free(h);
}

struct http *http_start(const struct http_config *cfg, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct http *h;
	uint16_t port;
	int ret;

	if (netaddr_parse_listen(cfg->listen, &ss, &port, NULL)) {
		snprintf(err, errlen, "--listen '%s': want HOST:PORT", cfg->listen);
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->cfg = *cfg;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->ingest, NULL);
	pthread_mutex_init(&h->reload, NULL);
	if (cfg->token && asprintf(&h->auth, "Bearer %s", cfg->token) < 0) {
		h->auth = NULL;
		ret = -ENOMEM;
		goto err;
	}
	if (!h->cfg.max_connections)
		h->cfg.max_connections = HTTP_CONNECTIONS_DEFAULT;
	if (!h->cfg.idle_timeout_s)
		h->cfg.idle_timeout_s = HTTP_IDLE_TIMEOUT_DEFAULT_S;
	if (!h->cfg.ingest_queue)
		h->cfg.ingest_queue = HTTP_INGEST_QUEUE_DEFAULT;
	ret = workq_start(h, &h->store_q, 1, h->cfg.ingest_queue, INGEST_QUEUE_BYTES,
			  INGEST_GROUP_MAX, ingest);
	if (!ret)
		ret = workq_start(h, &h->read_q, READ_THREADS, READ_QUEUE_MAX, UINT64_MAX, 1,
				  routes_serve);
	if (ret) {
		snprintf(err, errlen, "cannot start worker threads: %s", strerror(-ret));
		goto err;
	}
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
					MHD_ALLOW_SUSPEND_RESUME |
					(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE, HTTP_THREADS,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)h->cfg.max_connections,
				MHD_OPTION_LISTEN_BACKLOG_SIZE, LISTEN_BACKLOG,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)h->cfg.idle_timeout_s,
				MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen, "cannot listen on %s (in use?)", cfg->listen);
		ret = -EADDRINUSE;
		goto err;
	}
	return h;

err:
	http_stop(h);
	errno = -ret;
	return NULL;
}
