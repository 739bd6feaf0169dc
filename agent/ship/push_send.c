// SPDX-License-Identifier: MIT
/*
 * Push: the sender threads, one per lane (push_internal.h).
 *
 * Each sender runs a blocking loop: pick the collector to use (fan-out: the
 * lane's only one, once its backoff is over; failover: the first of the
 * list whose health backoff is over), pick the oldest spooled batch past the
 * lane's cursor, POST it, act on the outcome. The threads share one mutex
 * (p->lock) that guards the spool, the cursors and the counters; it is
 * never held across network I/O. push_free interrupts a request in flight
 * through httpc_wakeup.
 *
 * Outcomes. An ack or a rejection moves the lane's cursor (saved in the
 * spool directory, so a restart resumes there) and lets the spool drop
 * what every lane is past. A failure keeps the batch: in fan-out the
 * collector waits out a full-jitter backoff and resends it; in failover the
 * collector gets a health backoff (at least half its ceiling, so a dead
 * collector is not tried for every batch) and the same batch goes at once
 * to the next healthy collector; when none is healthy the lane waits for
 * the first backoff to end. Retry-After lengthens either.
 *
 * Resends. A batch is sent again only when it was not acked. One whose
 * request failed after its whole body went may have been stored: its
 * resend (to the same collector, or in failover to another that shares the
 * exactly-once store) may be answered "duplicate", which is counted, not
 * taken for new data: collectors key batches by agent id and sequence.
 *
 * Logging is by state: each collector is OK, FAILING or REJECTING, and a
 * line is logged when the state or the error class (e.g. "HTTP 503" vs
 * "curl 7") changes, never per retry. Log lines are built under the lock
 * and emitted after it is released, serialised by p->log_lock.
 */
#include "agent/ship/push_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/ship/spool.h"
#include "lib/clock.h"

void push_msg_add(struct logmsg *m, enum push_log_level level, const char *fmt, ...)
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
void push_msg_flush(struct push *p, struct logmsg *m)
{
	for (int i = 0; i < MSGS_MAX; i++) {
		if (!m[i].text)
			continue;
		if (p->log) {
			httpc_sanitize(m[i].text);
			pthread_mutex_lock(&p->log_lock);
			p->log(p->log_arg, m[i].level, m[i].text);
			pthread_mutex_unlock(&p->log_lock);
		}
		free(m[i].text);
		m[i].text = NULL;
	}
}

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src);
}

static void send_batch(struct collector *c, uint64_t seq, const void *buf, size_t len, struct httpc_result *r)
{
	char seqhdr[64];

	snprintf(seqhdr, sizeof(seqhdr), "X-Cgperf-Sequence: %" PRIu64, seq);
	const char *hdrs[] = { "Content-Type: application/x-protobuf", "Content-Encoding: gzip", "Expect:",
			       seqhdr, c->p->auth_header };

	httpc_post(c->http, hdrs, sizeof(hdrs) / sizeof(hdrs[0]), buf, len, r);
}

/* @l is done with batch @seq (acked or rejected). */
static void advance(struct lane *l, uint64_t seq, struct logmsg *m)
{
	struct push *p = l->p;
	int ret;

	if (seq <= l->cursor)
		return;
	l->cursor = seq;
	ret = spool_cursor_store(p->spool, l->key, seq, l->name);
	if (ret < 0 && !p->cursor_err_logged) {
		/* Only costs resends after a restart; say it once. */
		push_msg_add(m, PUSH_LOG_WARN, "push: cannot save the cursor of %s in %s: %s", l->name,
			     p->spool_dir, strerror(-ret));
		p->cursor_err_logged = true;
	}
	spool_remove_upto(p->spool, push_min_cursor(p));
}

/* A 2xx or a rejection: the collector is done with @seq. */
static void on_done(struct collector *c, uint64_t seq, const struct httpc_result *r, struct logmsg *m,
		    uint64_t now)
{
	if (r->kind == HTTPC_ACK) {
		c->st.acked++;
		/* cgperf-exporter answers "duplicate" for a batch it had. */
		if (!strncmp(r->body, "duplicate", 9))
			c->st.duplicates++;
		if (c->state == C_FAILING)
			push_msg_add(m, PUSH_LOG_INFO,
				     "push: collector %s recovered: batch %" PRIu64 " acked after %" PRIu64
				     " failed requests over %.1f s",
				     c->name, seq, c->state_count, (double)(now - c->state_since_ms) / 1000);
		else if (c->state == C_REJECTING)
			push_msg_add(m, PUSH_LOG_INFO,
				     "push: collector %s accepts batches again (batch %" PRIu64 ") after %" PRIu64
				     " rejected",
				     c->name, seq, c->state_count);
		c->state = C_OK;
		c->state_key[0] = '\0';
	} else {
		c->st.rejected++;
		copy_str(c->st.last_error, sizeof(c->st.last_error), r->text);
		if (c->state != C_REJECTING || strcmp(c->state_key, r->key)) {
			push_msg_add(m, PUSH_LOG_ERROR,
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
	}
	c->attempts = 0;
	c->tried = false;
	c->next_ms = 0;
	c->hold_ms = 0;
	advance(c->lane, seq, m);
}

static void on_failure(struct collector *c, uint64_t seq, const struct httpc_result *r, struct logmsg *m,
		       uint64_t now)
{
	struct push *p = c->p;
	bool failover = p->mode == PUSH_FAILOVER;
	uint64_t delay;

	c->st.failures++;
	if (r->maybe_delivered) {
		c->st.maybe_delivered++;
		push_msg_add(m, PUSH_LOG_DEBUG, "push: batch %llu may have been delivered to %s (%s)",
			     (unsigned long long)seq, c->name, r->text);
	}
	copy_str(c->st.last_error, sizeof(c->st.last_error), r->text);
	if (c->state != C_FAILING) {
		push_msg_add(m, PUSH_LOG_WARN, "push: collector %s failing: %s; %s", c->name, r->text,
			     failover && c->lane->n > 1
				     ? "batches go to the next collector of the list while it backs off"
				     : "retrying with backoff, batches stay spooled meanwhile");
		c->state = C_FAILING;
		c->state_count = 0;
		c->state_since_ms = now;
	} else if (strcmp(c->state_key, r->key)) {
		push_msg_add(m, PUSH_LOG_WARN, "push: collector %s still failing, now: %s", c->name, r->text);
	}
	copy_str(c->state_key, sizeof(c->state_key), r->key);
	c->state_count++;
	c->tried = true;
	c->tried_seq = seq;
	c->attempts++;
	delay = httpc_backoff_ms(&c->rng, c->attempts, p->retry_initial_ms, p->retry_max_ms, failover);
	c->hold_ms = r->retry_after_ms >= 0 ? now + (uint64_t)r->retry_after_ms : 0;
	if (r->retry_after_ms >= 0 && (uint64_t)r->retry_after_ms > delay)
		delay = (uint64_t)r->retry_after_ms;
	c->next_ms = now + delay;
}

static void on_result(struct collector *c, uint64_t seq, const struct httpc_result *r, struct logmsg *m)
{
	uint64_t now = clock_mono_ms();

	if (r->kind == HTTPC_STOPPED)
		return; /* interrupted by push_free: not an outcome */
	c->st.sent++;
	if (c->tried && c->tried_seq == seq)
		c->st.retried++;
	if (r->kind == HTTPC_RETRY)
		on_failure(c, seq, r, m, now);
	else
		on_done(c, seq, r, m, now);
}

/* ---- the sender thread ---------------------------------------------- */

/* The first collector of @l free to send at @now, or NULL and in *@until
 * when the first one will be. */
static struct collector *pick(struct lane *l, uint64_t now, uint64_t *until)
{
	*until = UINT64_MAX;
	for (size_t i = 0; i < l->n; i++) {
		struct collector *c = &l->c[i];

		if (now >= c->next_ms)
			return c;
		if (c->next_ms < *until)
			*until = c->next_ms;
	}
	return NULL;
}

/*
 * Close the connections of @l idle since idle_close_ms, and return the
 * earlier of @until and the time the next one turns idle. Called with
 * p->lock held; let go while a connection closes (a TLS close may write).
 */
static uint64_t close_idle(struct lane *l, uint64_t now, uint64_t until)
{
	struct push *p = l->p;

	for (size_t i = 0; i < l->n; i++) {
		struct collector *c = &l->c[i];
		uint64_t io = httpc_last_io_ms(c->http);

		if (!io)
			continue;
		if (now >= io + p->idle_close_ms) {
			pthread_mutex_unlock(&p->lock);
			httpc_close_idle(c->http);
			pthread_mutex_lock(&p->lock);
		} else if (io + p->idle_close_ms < until) {
			until = io + p->idle_close_ms;
		}
	}
	return until;
}

static void wait_until(struct push *p, uint64_t until)
{
	if (until == UINT64_MAX) {
		pthread_cond_wait(&p->wake, &p->lock);
	} else {
		struct timespec ts = clock_abstime_ms(until);

		pthread_cond_timedwait(&p->wake, &p->lock, &ts);
	}
}

void *push_sender_main(void *arg)
{
	struct lane *l = arg;
	struct push *p = l->p;
	struct logmsg m[MSGS_MAX] = { 0 };

	pthread_mutex_lock(&p->lock);
	while (!atomic_load(&p->stopping)) {
		uint64_t now = clock_mono_ms(), seq, until;
		uint64_t idle = close_idle(l, now, UINT64_MAX);
		struct collector *c = pick(l, now, &until);
		struct httpc_result r;
		void *buf;
		size_t len;
		int ret;

		if (!c) {
			wait_until(p, until < idle ? until : idle);
			continue;
		}
		ret = spool_peek_after(p->spool, l->cursor, &seq, &buf, &len);
		if (ret == -ENOENT) {
			pthread_cond_broadcast(&p->progress); /* unreadable batches may have gone */
			wait_until(p, idle);
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
		push_msg_flush(p, m);
		pthread_mutex_lock(&p->lock);
		/* After the log lines, so a flush that returns has seen them. */
		pthread_cond_broadcast(&p->progress);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}
