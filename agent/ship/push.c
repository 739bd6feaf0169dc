// SPDX-License-Identifier: MIT
/*
 * Push: one sender thread per collector over a shared spool.
 *
 * Why a thread per collector: each sender runs a blocking loop (pick the
 * oldest spooled batch past its cursor, POST it, act on the outcome), so a
 * collector that hangs until the timeout, or refuses connections for an
 * hour, only ever delays itself. The threads share one mutex (p->lock) that
 * guards the spool, the cursors and the counters; it is never held across
 * network I/O. Each thread drives its easy handle through its own multi
 * handle so that push_free can interrupt a request in flight at once with
 * curl_multi_wakeup instead of waiting for the timeout.
 *
 * The spool is the queue: push_submit writes the batch there (durable before
 * it returns) and broadcasts p->wake. A batch stays until every collector's
 * cursor is at or past it (spool_remove_upto of the smallest cursor), so a
 * collector that is down keeps the batches, up to the spool cap, for when it
 * returns; one that is up is not held back. Cursors are written to the spool
 * directory after each ack so a restart resumes where each collector was.
 *
 * Connections. Each collector's connection is kept alive between pushes
 * (a handshake per push costs the collector more CPU than the push
 * itself), and closed by the agent once it has been idle for idle_close_ms
 * (default 60 s): longer than a usual push interval, so a pushing agent
 * keeps its connection, and shorter than the exporter's idle timeout
 * (120 s), so it is the agent that closes, never the server under a
 * request being written. An agent that pushes rarely, or waits out a
 * long backoff, holds no socket on the collector meanwhile.
 *
 * Resends. A batch is sent again only when it was not acked, and the
 * outcome of a failed request says whether the collector can have it:
 * a request that failed before its body was all written (connect errors,
 * a connection the server closed, a timeout while sending) cannot have
 * been stored, so its resend is a first delivery; one that failed after
 * (a timeout waiting for the answer) may have been, and its resend may be
 * answered "duplicate". Such answers are counted (duplicates), not taken
 * for new data: the collector keys batches by agent id and sequence.
 *
 * Logging is by state: each collector is OK, FAILING (retrying) or
 * REJECTING, and a line is logged when the state or the error class (e.g.
 * "HTTP 503" vs "curl 7") changes, never per retry. Log lines are built under
 * the lock and emitted after it is released, serialised by p->log_lock.
 */
#include "agent/ship/push.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agent/ship/spool.h"
#include "lib/clock.h"
#include "agent/ship/pushtext.h"

#define DEFAULT_TIMEOUT_MS 10000u
#define DEFAULT_CONNECT_TIMEOUT_MS 5000u
#define DEFAULT_RETRY_INITIAL_MS 500u
#define DEFAULT_RETRY_MAX_MS 60000u
#define DEFAULT_SPOOL_MAX_BYTES (64ull << 20)
#define DEFAULT_IDLE_CLOSE_MS 60000u
/* Kept of a response body, for error messages; the rest is discarded. */
#define RESP_KEEP 200
#define KEY_MAX 48
#define MSGS_MAX 3

enum cstate { C_OK, C_FAILING, C_REJECTING };

enum outcome { R_ACK, R_RETRY, R_REJECT, R_STOPPED };

struct result {
	enum outcome kind;
	long status; /* HTTP status, 0 for a transport error */
	bool maybe_delivered; /* R_RETRY after the whole body went: may be stored */
	bool duplicate; /* R_ACK whose answer says the batch was stored before */
	int64_t retry_after_ms; /* -1: none */
	char key[KEY_MAX]; /* error class, for rate-limited logging */
	char text[PUSH_ERROR_MAX];
};

struct logmsg {
	enum push_log_level level;
	char *text;
};

struct push;

struct collector {
	struct push *p;
	char *url;
	char *name; /* the URL without credentials, for logs and stats */
	char key[17]; /* cursor file key: hash of the URL */
	pthread_t thread;
	bool started;
	CURL *curl;
	CURLM *multi;

	/* Guarded by p->lock. */
	uint64_t cursor;
	uint64_t next_ms; /* no request before this (monotonic ms) */
	unsigned attempts; /* consecutive failed requests */
	bool tried; /* tried_seq failed and is being retried */
	uint64_t tried_seq;
	enum cstate state;
	char state_key[KEY_MAX];
	uint64_t state_count;
	uint64_t state_since_ms;
	uint64_t sent, acked, retried, rejected, failures, duplicates, maybe_delivered;
	char last_error[PUSH_ERROR_MAX];

	/* Only the sender thread. */
	uint64_t last_io_ms; /* end of the last request; 0: no connection open */
	uint64_t rng;
	char errbuf[CURL_ERROR_SIZE];
	char resp[RESP_KEEP + 1];
	size_t resp_len;
};

struct push {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* senders: new batch, flush or stop */
	pthread_cond_t progress; /* flush: a collector moved */
	pthread_mutex_t log_lock;
	atomic_bool stopping;

	struct spool *spool;
	char *spool_dir;
	char *auth_header; /* "Authorization: Bearer ..." or NULL */
	char *ca_file, *cert_file, *key_file, *user_agent;
	bool no_verify;
	long timeout_ms, connect_timeout_ms;
	uint64_t retry_initial_ms, retry_max_ms, idle_close_ms;
	push_log_fn log;
	void *log_arg;

	/* Guarded by lock. */
	uint64_t last_seq; /* highest sequence number known */
	uint64_t submit_errors;
	int submit_err_logged; /* -errno last logged, 0 when submits work */
	uint64_t dropped_seen; /* spool_dropped at the last submit */
	bool dropping; /* the spool was dropping batches at the last submit */
	bool cursor_err_logged;

	size_t n;
	struct collector c[];
};

/* ---- small helpers -------------------------------------------------- */

static uint64_t now_ms(void)
{
	return clock_mono_ns() / 1000000;
}

static struct timespec abstime_ms(uint64_t ms)
{
	return (struct timespec){ .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: plenty for jitter. */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src);
}

static void __attribute__((format(printf, 3, 4)))
msg_add(struct logmsg *m, enum push_log_level level, const char *fmt, ...)
{
	va_list ap;

	for (int i = 0; i < MSGS_MAX; i++) {
		if (m[i].text)
			continue;
		va_start(ap, fmt);
		if (vasprintf(&m[i].text, fmt, ap) < 0)
			m[i].text = NULL;
		va_end(ap);
		m[i].level = level;
		return;
	}
}

/* Emit and free pending messages. Never called with p->lock held. */
static void msg_flush(struct push *p, struct logmsg *m)
{
	for (int i = 0; i < MSGS_MAX; i++) {
		if (!m[i].text)
			continue;
		if (p->log) {
			pushtext_sanitize(m[i].text);
			pthread_mutex_lock(&p->log_lock);
			p->log(p->log_arg, m[i].level, m[i].text);
			pthread_mutex_unlock(&p->log_lock);
		}
		free(m[i].text);
		m[i].text = NULL;
	}
}

/* ---- libcurl callbacks ---------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct collector *c = arg;
	size_t n = size * nmemb, room = RESP_KEEP - c->resp_len;
	size_t take = n < room ? n : room;

	memcpy(c->resp + c->resp_len, data, take);
	c->resp_len += take;
	c->resp[c->resp_len] = '\0';
	return n;
}

/* Run the configured request to completion, or until push_free. */
static CURLcode perform(struct collector *c)
{
	CURLcode res = CURLE_OK;
	bool done = false;
	CURLMcode mc;

	mc = curl_multi_add_handle(c->multi, c->curl);
	if (mc != CURLM_OK) {
		snprintf(c->errbuf, sizeof(c->errbuf), "%s", curl_multi_strerror(mc));
		return CURLE_FAILED_INIT;
	}
	while (!done) {
		CURLMsg *msg;
		int running, left;

		mc = curl_multi_perform(c->multi, &running);
		if (mc != CURLM_OK)
			break;
		while ((msg = curl_multi_info_read(c->multi, &left))) {
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == c->curl) {
				res = msg->data.result;
				done = true;
			}
		}
		if (done)
			break;
		if (atomic_load(&c->p->stopping)) {
			res = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		mc = curl_multi_poll(c->multi, NULL, 0, 1000, NULL);
		if (mc != CURLM_OK)
			break;
	}
	if (mc != CURLM_OK) {
		snprintf(c->errbuf, sizeof(c->errbuf), "%s", curl_multi_strerror(mc));
		res = CURLE_FAILED_INIT;
	}
	curl_multi_remove_handle(c->multi, c->curl);
	return res;
}

/* ---- one request ---------------------------------------------------- */

/*
 * The last answer's Retry-After as libcurl read it (delta-seconds, or an
 * HTTP date turned into seconds from now; 0 when absent or unreadable), in
 * milliseconds, capped; -1 when there is nothing to wait for.
 */
static int64_t retry_after_ms(struct collector *c)
{
	curl_off_t secs = 0;

	if (curl_easy_getinfo(c->curl, CURLINFO_RETRY_AFTER, &secs) != CURLE_OK || secs <= 0)
		return -1;
	if ((uint64_t)secs > PUSH_RETRY_AFTER_MAX_MS / 1000)
		return PUSH_RETRY_AFTER_MAX_MS;
	return (int64_t)secs * 1000;
}

static void classify_status(struct collector *c, long status, struct result *r)
{
	r->status = status;
	snprintf(r->key, sizeof(r->key), "HTTP %ld", status);
	if (status >= 200 && status < 300) {
		r->kind = R_ACK;
		return;
	}
	if (status >= 400 && status < 500 && status != 429 && status != 408)
		r->kind = R_REJECT;
	else
		r->kind = R_RETRY; /* 429, 408, 5xx, and 1xx/3xx that should not happen */
	if (status == 429 || status == 503)
		r->retry_after_ms = retry_after_ms(c);
	/* The start of the body usually says why. */
	while (c->resp_len && isspace((unsigned char)c->resp[c->resp_len - 1]))
		c->resp[--c->resp_len] = '\0';
	if (c->resp_len)
		snprintf(r->text, sizeof(r->text), "HTTP %ld: %s", status, c->resp);
	else
		snprintf(r->text, sizeof(r->text), "HTTP %ld", status);
}

static void send_batch(struct collector *c, uint64_t seq, const void *buf, size_t len, struct result *r)
{
	struct push *p = c->p;
	struct curl_slist *h = NULL, *t;
	char seqhdr[64];
	CURLcode rc;

	*r = (struct result){ .kind = R_RETRY, .retry_after_ms = -1 };
	snprintf(seqhdr, sizeof(seqhdr), "X-Cgperf-Sequence: %" PRIu64, seq);
	const char *hdrs[] = { "Content-Type: application/x-protobuf", "Content-Encoding: gzip",
			       "Expect:", seqhdr, p->auth_header };
	for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		if (!hdrs[i])
			continue;
		t = curl_slist_append(h, hdrs[i]);
		if (!t) {
			curl_slist_free_all(h);
			copy_str(r->key, sizeof(r->key), "nomem");
			copy_str(r->text, sizeof(r->text), "out of memory");
			return;
		}
		h = t;
	}
	c->resp_len = 0;
	c->resp[0] = '\0';
	c->errbuf[0] = '\0';
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, len ? buf : "");

	rc = perform(c);
	if (rc == CURLE_ABORTED_BY_CALLBACK && atomic_load(&p->stopping)) {
		r->kind = R_STOPPED;
	} else if (rc != CURLE_OK) {
		curl_off_t up = 0;

		/* All of the body written: the collector may have stored it. */
		if (curl_easy_getinfo(c->curl, CURLINFO_SIZE_UPLOAD_T, &up) == CURLE_OK &&
		    (size_t)up >= len && rc != CURLE_COULDNT_CONNECT &&
		    rc != CURLE_COULDNT_RESOLVE_HOST && rc != CURLE_SEND_ERROR)
			r->maybe_delivered = true;
		snprintf(r->key, sizeof(r->key), "curl %d", (int)rc);
		snprintf(r->text, sizeof(r->text), "%.80s%s%.160s", curl_easy_strerror(rc), c->errbuf[0] ? ": " : "",
			 c->errbuf);
	} else {
		long status = 0;

		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
		classify_status(c, status, r);
		/* cgperf-exporter answers "duplicate" for a batch it had. */
		r->duplicate = r->kind == R_ACK && !strncmp(c->resp, "duplicate", 9);
	}
	c->last_io_ms = now_ms();
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
	curl_slist_free_all(h);
	pushtext_sanitize(r->text);
}

/* ---- state, under p->lock ------------------------------------------- */

static uint64_t min_cursor(const struct push *p)
{
	uint64_t m = UINT64_MAX;

	for (size_t i = 0; i < p->n; i++) {
		if (p->c[i].cursor < m)
			m = p->c[i].cursor;
	}
	return m;
}

/* @c is done with batch @seq (acked or rejected). */
static void advance(struct collector *c, uint64_t seq, struct logmsg *m)
{
	struct push *p = c->p;
	int ret;

	if (seq <= c->cursor)
		return;
	c->cursor = seq;
	ret = spool_cursor_store(p->spool, c->key, seq, c->name);
	if (ret < 0 && !p->cursor_err_logged) {
		/* Only costs resends after a restart; say it once. */
		msg_add(m, PUSH_LOG_WARN, "push: cannot save the cursor of %s in %s: %s", c->name, p->spool_dir,
			strerror(-ret));
		p->cursor_err_logged = true;
	}
	spool_remove_upto(p->spool, min_cursor(p));
}

static uint64_t backoff_ms(struct collector *c)
{
	struct push *p = c->p;
	uint64_t ceil = p->retry_initial_ms;

	for (unsigned i = 1; i < c->attempts && ceil < p->retry_max_ms; i++)
		ceil *= 2;
	if (ceil > p->retry_max_ms)
		ceil = p->retry_max_ms;
	return rng_next(&c->rng) % (ceil + 1); /* full jitter */
}

static void on_result(struct collector *c, uint64_t seq, const struct result *r, struct logmsg *m)
{
	uint64_t now = now_ms();

	if (r->kind == R_STOPPED)
		return; /* interrupted by push_free: not an outcome */
	c->sent++;
	if (c->tried && c->tried_seq == seq)
		c->retried++;
	switch (r->kind) {
	case R_ACK:
		c->acked++;
		if (r->duplicate)
			c->duplicates++;
		if (c->state == C_FAILING)
			msg_add(m, PUSH_LOG_INFO,
				"push: collector %s recovered: batch %" PRIu64 " acked after %" PRIu64
				" failed requests over %.1f s",
				c->name, seq, c->state_count, (double)(now - c->state_since_ms) / 1000);
		else if (c->state == C_REJECTING)
			msg_add(m, PUSH_LOG_INFO,
				"push: collector %s accepts batches again (batch %" PRIu64 ") after %" PRIu64
				" rejected",
				c->name, seq, c->state_count);
		c->state = C_OK;
		c->state_key[0] = '\0';
		c->attempts = 0;
		c->tried = false;
		c->next_ms = 0;
		advance(c, seq, m);
		break;
	case R_REJECT:
		c->rejected++;
		copy_str(c->last_error, sizeof(c->last_error), r->text);
		if (c->state != C_REJECTING || strcmp(c->state_key, r->key)) {
			msg_add(m, PUSH_LOG_ERROR,
				"push: collector %s rejected batch %" PRIu64
				": %s; not retried (the batch is counted as rejected; "
				"further identical rejections are counted, not logged)",
				c->name, seq, r->text);
			c->state = C_REJECTING;
			copy_str(c->state_key, sizeof(c->state_key), r->key);
			c->state_count = 0;
			c->state_since_ms = now;
		}
		c->state_count++;
		c->attempts = 0;
		c->tried = false;
		c->next_ms = 0;
		advance(c, seq, m);
		break;
	case R_RETRY: {
		uint64_t delay;

		c->failures++;
		if (r->maybe_delivered)
			c->maybe_delivered++;
		copy_str(c->last_error, sizeof(c->last_error), r->text);
		if (c->state != C_FAILING) {
			msg_add(m, PUSH_LOG_WARN,
				"push: collector %s failing: %s; retrying with backoff, batches stay spooled "
				"meanwhile",
				c->name, r->text);
			c->state = C_FAILING;
			c->state_count = 0;
			c->state_since_ms = now;
		} else if (strcmp(c->state_key, r->key)) {
			msg_add(m, PUSH_LOG_WARN, "push: collector %s still failing, now: %s", c->name, r->text);
		}
		copy_str(c->state_key, sizeof(c->state_key), r->key);
		c->state_count++;
		c->tried = true;
		c->tried_seq = seq;
		c->attempts++;
		delay = backoff_ms(c);
		if (r->retry_after_ms >= 0 && (uint64_t)r->retry_after_ms > delay)
			delay = (uint64_t)r->retry_after_ms;
		c->next_ms = now + delay;
		break;
	}
	case R_STOPPED:
		break;
	}
}

/* ---- the sender thread ---------------------------------------------- */

/* The earlier of @until and the time @c's connection turns idle. */
static uint64_t idle_deadline(const struct collector *c, uint64_t until)
{
	uint64_t idle;

	if (!c->last_io_ms)
		return until;
	idle = c->last_io_ms + c->p->idle_close_ms;
	return idle < until ? idle : until;
}

/*
 * Close @c's idle connection. Connections live in the multi handle's cache:
 * a new multi handle replaces it. Under p->lock, which stop_senders() takes
 * before it wakes the multi handle, so that it never wakes a freed one; the
 * lock is let go while the old one closes (a TLS close may write).
 */
static void close_idle(struct collector *c)
{
	struct push *p = c->p;
	CURLM *fresh, *old;

	c->last_io_ms = 0;
	if (atomic_load(&p->stopping))
		return;
	fresh = curl_multi_init();
	if (!fresh)
		return; /* kept open: tried again after the next request */
	old = c->multi;
	c->multi = fresh;
	pthread_mutex_unlock(&p->lock);
	curl_multi_cleanup(old);
	pthread_mutex_lock(&p->lock);
}

static void *sender_main(void *arg)
{
	struct collector *c = arg;
	struct push *p = c->p;
	struct logmsg m[MSGS_MAX] = { 0 };

	pthread_mutex_lock(&p->lock);
	while (!atomic_load(&p->stopping)) {
		uint64_t now = now_ms(), seq;
		struct result r;
		void *buf;
		size_t len;
		int ret;

		if (c->last_io_ms && now >= c->last_io_ms + p->idle_close_ms) {
			close_idle(c);
			continue;
		}
		if (now < c->next_ms) {
			struct timespec ts = abstime_ms(idle_deadline(c, c->next_ms));

			pthread_cond_timedwait(&p->wake, &p->lock, &ts);
			continue;
		}
		ret = spool_peek_after(p->spool, c->cursor, &seq, &buf, &len);
		if (ret == -ENOENT) {
			struct timespec ts = abstime_ms(idle_deadline(c, UINT64_MAX));

			pthread_cond_broadcast(&p->progress); /* unreadable batches may have gone */
			if (c->last_io_ms)
				pthread_cond_timedwait(&p->wake, &p->lock, &ts);
			else
				pthread_cond_wait(&p->wake, &p->lock);
			continue;
		}
		if (ret < 0) { /* out of memory: wait and see */
			c->next_ms = now + p->retry_max_ms;
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		send_batch(c, seq, buf, len, &r);
		free(buf);
		pthread_mutex_lock(&p->lock);
		on_result(c, seq, &r, m);
		pthread_mutex_unlock(&p->lock);
		msg_flush(p, m);
		pthread_mutex_lock(&p->lock);
		/* After the log lines, so a flush that returns has seen them. */
		pthread_cond_broadcast(&p->progress);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- setup ---------------------------------------------------------- */

static CURLcode curl_init_status = CURLE_FAILED_INIT;

static void curl_init_once(void)
{
	curl_init_status = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int collector_setup(struct push *p, struct collector *c, const char *url)
{
	CURLcode rc = CURLE_OK;
	CURL *h;

	c->p = p;
	c->url = strdup(url);
	c->name = pushtext_redact_url(url);
	if (!c->url || !c->name)
		return -ENOMEM;
	snprintf(c->key, sizeof(c->key), "%016" PRIx64, hash_str(url));
	if (getrandom(&c->rng, sizeof(c->rng), GRND_NONBLOCK) != sizeof(c->rng))
		c->rng = now_ms() ^ ((uint64_t)getpid() << 32);
	c->rng ^= hash_str(url);
	if (!c->rng)
		c->rng = 0x9e3779b97f4a7c15ull;
	c->multi = curl_multi_init();
	c->curl = h = curl_easy_init();
	if (!c->multi || !h)
		return -ENOMEM;

#define SET(opt, val)                                        \
	do {                                                 \
		if (rc == CURLE_OK)                          \
			rc = curl_easy_setopt(h, opt, val); \
	} while (0)
	SET(CURLOPT_URL, c->url);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_POST, 1L);
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_TIMEOUT_MS, p->timeout_ms);
	SET(CURLOPT_CONNECTTIMEOUT_MS, p->connect_timeout_ms);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_USERAGENT, p->user_agent);
	SET(CURLOPT_ERRORBUFFER, c->errbuf);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, c);
	SET(CURLOPT_SSL_VERIFYPEER, p->no_verify ? 0L : 1L);
	SET(CURLOPT_SSL_VERIFYHOST, p->no_verify ? 0L : 2L);
	if (p->ca_file)
		SET(CURLOPT_CAINFO, p->ca_file);
	if (p->cert_file)
		SET(CURLOPT_SSLCERT, p->cert_file);
	if (p->key_file)
		SET(CURLOPT_SSLKEY, p->key_file);
#undef SET
	if (rc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	return rc == CURLE_OK ? 0 : -ENOTSUP;
}

static int dup_opt(const char *s, char **out)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

static int check_opts(const struct push_opts *o)
{
	if (!o || !o->spool_dir || !o->urls || o->n_urls < 1 || o->n_urls > PUSH_MAX_COLLECTORS)
		return -EINVAL;
	for (size_t i = 0; i < o->n_urls; i++) {
		if (!o->urls[i] || !pushtext_is_http_url(o->urls[i]))
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
	/* Under the lock: close_idle() swaps multi handles under it, and none
	 * once stopping is set. */
	for (size_t i = 0; i < p->n; i++) {
		if (p->c[i].multi)
			curl_multi_wakeup(p->c[i].multi);
	}
	pthread_mutex_unlock(&p->lock);
	for (size_t i = 0; i < p->n; i++) {
		if (p->c[i].started)
			pthread_join(p->c[i].thread, NULL);
		p->c[i].started = false;
	}
}

void push_free(struct push *p)
{
	if (!p)
		return;
	stop_senders(p);
	for (size_t i = 0; i < p->n; i++) {
		struct collector *c = &p->c[i];

		if (c->curl)
			curl_easy_cleanup(c->curl);
		if (c->multi)
			curl_multi_cleanup(c->multi);
		free(c->url);
		free(c->name);
	}
	spool_close(p->spool);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->progress);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->log_lock);
	free(p->spool_dir);
	free(p->auth_header);
	free(p->ca_file);
	free(p->cert_file);
	free(p->key_file);
	free(p->user_agent);
	free(p);
}

struct push *push_new(const struct push_opts *o)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct logmsg m[MSGS_MAX] = { 0 };
	pthread_condattr_t ca;
	struct push *p;
	uint64_t last;
	int ret;

	ret = check_opts(o);
	if (ret)
		goto err;
	pthread_once(&once, curl_init_once);
	if (curl_init_status != CURLE_OK) {
		ret = -ENOTSUP;
		goto err;
	}
	p = calloc(1, sizeof(*p) + o->n_urls * sizeof(p->c[0]));
	if (!p) {
		ret = -ENOMEM;
		goto err;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->log_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_cond_init(&p->progress, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&p->stopping, false);
	p->n = o->n_urls;
	p->log = o->log;
	p->log_arg = o->log_arg;
	p->no_verify = o->tls_no_verify;
	p->timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	p->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
	if (p->connect_timeout_ms > p->timeout_ms)
		p->connect_timeout_ms = p->timeout_ms;
	p->retry_initial_ms = o->retry_initial_ms ? o->retry_initial_ms : DEFAULT_RETRY_INITIAL_MS;
	p->retry_max_ms = o->retry_max_ms ? o->retry_max_ms : DEFAULT_RETRY_MAX_MS;
	p->idle_close_ms = o->idle_close_ms ? o->idle_close_ms : DEFAULT_IDLE_CLOSE_MS;
	if (p->retry_initial_ms > p->retry_max_ms)
		p->retry_initial_ms = p->retry_max_ms;
	if (o->token) {
		ret = pushtext_auth_header(o->token, &p->auth_header);
		if (ret)
			goto err_free;
	}
	ret = dup_opt(o->spool_dir, &p->spool_dir);
	if (!ret)
		ret = dup_opt(o->ca_file, &p->ca_file);
	if (!ret)
		ret = dup_opt(o->cert_file, &p->cert_file);
	if (!ret)
		ret = dup_opt(o->key_file, &p->key_file);
	if (!ret)
		ret = dup_opt(o->user_agent ? o->user_agent : "cgperf-agent", &p->user_agent);
	if (ret)
		goto err_free;

	p->spool = spool_open(p->spool_dir, o->spool_max_bytes ? o->spool_max_bytes : DEFAULT_SPOOL_MAX_BYTES);
	if (!p->spool) {
		ret = -errno;
		goto err_free;
	}
	if (spool_last(p->spool, &last) == 0)
		p->last_seq = last;
	p->dropped_seen = spool_dropped(p->spool);
	for (size_t i = 0; i < p->n; i++) {
		struct collector *c = &p->c[i];

		ret = collector_setup(p, c, o->urls[i]);
		if (ret)
			goto err_free;
		ret = spool_cursor_load(p->spool, c->key, &c->cursor);
		if (ret == -EBADMSG)
			msg_add(m, PUSH_LOG_WARN, "push: unreadable cursor for %s in %s: resending its spooled batches",
				c->name, p->spool_dir);
		if (ret < 0)
			c->cursor = 0;
		if (c->cursor > p->last_seq)
			p->last_seq = c->cursor;
	}
	/* Batches every collector has already had (a crash between the acks
	 * and the removal) go now. */
	spool_remove_upto(p->spool, min_cursor(p));
	if (spool_count(p->spool))
		msg_add(m, PUSH_LOG_INFO, "push: %zu spooled batches (%" PRIu64 " bytes) from an earlier run to send",
			spool_count(p->spool), spool_bytes(p->spool));
	if (spool_dropped(p->spool))
		msg_add(m, PUSH_LOG_WARN, "push: spool %s over its cap at start: dropped %" PRIu64 " oldest batches",
			p->spool_dir, spool_dropped(p->spool));

	for (size_t i = 0; i < p->n; i++) {
		ret = -pthread_create(&p->c[i].thread, NULL, sender_main, &p->c[i]);
		if (ret)
			goto err_free;
		p->c[i].started = true;
	}
	msg_flush(p, m);
	return p;

err_free:
	for (int i = 0; i < MSGS_MAX; i++)
		free(m[i].text);
	push_free(p);
err:
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
			msg_add(m, PUSH_LOG_ERROR, "push: cannot spool batch %" PRIu64 " in %s: %s", seq,
				p->spool_dir, strerror(-ret));
		p->submit_err_logged = ret;
		goto out;
	}
	if (!ret && p->submit_err_logged) {
		msg_add(m, PUSH_LOG_INFO, "push: spooling batches in %s again", p->spool_dir);
		p->submit_err_logged = 0;
	}
	dropped = spool_dropped(p->spool);
	if (ret == -EFBIG) {
		msg_add(m, PUSH_LOG_ERROR, "push: batch %" PRIu64 " (%zu bytes) is larger than the spool cap; dropped",
			seq, len);
	} else if (dropped > p->dropped_seen && !p->dropping) {
		/* Once when the spool starts overflowing, once when it stops. */
		msg_add(m, PUSH_LOG_WARN,
			"push: spool %s full (%" PRIu64 " bytes in %zu batches): dropping the oldest batches",
			p->spool_dir, spool_bytes(p->spool), spool_count(p->spool));
		p->dropping = true;
	} else if (dropped == p->dropped_seen && p->dropping) {
		msg_add(m, PUSH_LOG_INFO, "push: spool %s no longer full; %" PRIu64 " batches dropped in all",
			p->spool_dir, dropped);
		p->dropping = false;
	}
	p->dropped_seen = dropped;
	pthread_cond_broadcast(&p->wake);
out:
	pthread_mutex_unlock(&p->lock);
	msg_flush(p, m);
	return ret;
}

/* Does any collector still miss a spooled batch <= @target? */
static bool flush_pending(struct push *p, uint64_t target)
{
	for (size_t i = 0; i < p->n; i++) {
		uint64_t seq;

		if (spool_next_after(p->spool, p->c[i].cursor, &seq) == 0 && seq <= target)
			return true;
	}
	return false;
}

int push_flush(struct push *p, unsigned timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms, target;
	struct timespec ts = abstime_ms(deadline);
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	if (spool_last(p->spool, &target) < 0)
		goto out;
	for (size_t i = 0; i < p->n; i++)
		p->c[i].next_ms = 0; /* one prompt try, whatever the backoff */
	pthread_cond_broadcast(&p->wake);
	while (flush_pending(p, target)) {
		if (now_ms() >= deadline) {
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

		cs->url = c->name;
		cs->sent = c->sent;
		cs->acked = c->acked;
		cs->retried = c->retried;
		cs->rejected = c->rejected;
		cs->failures = c->failures;
		cs->duplicates = c->duplicates;
		cs->maybe_delivered = c->maybe_delivered;
		cs->cursor = c->cursor;
		cs->pending = spool_count_after(p->spool, c->cursor);
		cs->failing = c->state == C_FAILING;
		copy_str(cs->last_error, sizeof(cs->last_error), c->last_error);
		st->sent += c->sent;
		st->acked += c->acked;
		st->retried += c->retried;
		st->rejected += c->rejected;
		st->failures += c->failures;
		st->duplicates += c->duplicates;
		st->maybe_delivered += c->maybe_delivered;
	}
	st->spool_bytes = spool_bytes(p->spool);
	st->spool_count = spool_count(p->spool);
	st->spool_dropped = spool_dropped(p->spool);
	st->submit_errors = p->submit_errors;
	pthread_mutex_unlock(&p->lock);
}
