/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_PUSH_H
#define CGPERF_AGENT_PUSH_H

/*
 * Push: deliver batches (gzip'd protobuf, opaque here) to one or more
 * collectors over HTTP(S) (lib/httpc.h, libcurl), off the caller's path.
 *
 * push_submit() stores the batch durably in the spool (agent/ship/spool.h)
 * and returns; sender threads send spooled batches oldest first. Two modes:
 *
 * PUSH_FANOUT (the default): every collector gets every batch. One sender
 * thread per collector, each at its own pace, so a slow or dead collector
 * delays nobody else; each has a cursor (the last sequence number it acked
 * or rejected, kept in the spool directory).
 *
 * PUSH_FAILOVER: the collectors are one service. One sender thread sends
 * each batch to the first collector of the list that is healthy (not in a
 * health backoff); a connection error, timeout, 5xx, 429 or 408 puts that
 * collector in a backoff (growing, at least half its ceiling, at least the
 * Retry-After) and the same batch goes at once to the next healthy one. A
 * collector whose backoff has run out is tried again, so the first of the
 * list takes the traffic back once it answers. One cursor for the service.
 *
 * A batch leaves the spool once every cursor is past it, or when the spool
 * cap drops it (oldest first, counted).
 *
 * Request: POST URL, body = the batch, headers Content-Type:
 * application/x-protobuf, Content-Encoding: gzip, Authorization: Bearer
 * TOKEN (when set), X-Cgperf-Sequence: SEQ. Outcome:
 *   2xx                              acked; next batch
 *   429, 5xx, 408, 3xx, transport    retried after an exponential backoff
 *     errors and timeouts            with full jitter, capped; for 429/503
 *                                    at least Retry-After (seconds or an
 *                                    HTTP date; at most PUSH_RETRY_AFTER_MAX_MS)
 *   any other 4xx                    rejected: counted, logged, not retried
 *
 * Delivery is at least once: a batch whose ack was lost (or whose cursor
 * update was lost in a crash) is sent again with the same sequence number,
 * which the collector uses to drop duplicates. A batch is resent only when
 * not acked; failures after the whole body went are counted apart
 * (maybe_delivered), and so are acks that say "duplicate".
 *
 * The connection to a collector is kept alive between pushes and closed
 * once idle for idle_close_ms.
 *
 * The module never prints: it reports through opts->log, at most once per
 * change of a collector's state or error (not once per retry).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PUSH_MAX_COLLECTORS 16
#define PUSH_ERROR_MAX 256
#define PUSH_RETRY_AFTER_MAX_MS (15u * 60 * 1000)

struct push;

enum push_mode {
	PUSH_FANOUT, /* every collector gets every batch */
	PUSH_FAILOVER, /* each batch to one healthy collector, in list order */
};

enum push_log_level {
	PUSH_LOG_ERROR,
	PUSH_LOG_WARN,
	PUSH_LOG_INFO,
	PUSH_LOG_DEBUG,
};

/*
 * A log line for the agent's logger. Called from the sender threads and from
 * push_submit, never with a push lock held and never concurrently with itself
 * (push serialises its calls), so it may call push_stats. @msg is one line
 * of printable text, valid only during the call.
 */
typedef void (*push_log_fn)(void *arg, enum push_log_level level, const char *msg);

/* Zero means the default where one is given. Strings are copied. */
struct push_opts {
	const char *const *urls; /* 1..PUSH_MAX_COLLECTORS http:// or https:// URLs, distinct */
	size_t n_urls;
	enum push_mode mode;
	const char *token; /* bearer token, or NULL; trailing whitespace is ignored */
	unsigned timeout_ms; /* whole request; default 10000 */
	unsigned connect_timeout_ms; /* default min(timeout, 5000) */
	const char *ca_file; /* CURLOPT_CAINFO, or NULL for the system store */
	const char *cert_file; /* client certificate (PEM), or NULL */
	const char *key_file; /* its key, or NULL */
	bool tls_no_verify; /* skip peer and host name verification (verify is the default) */
	unsigned retry_initial_ms; /* first backoff ceiling; default 500 */
	unsigned retry_max_ms; /* backoff cap; default 60000 */
	unsigned idle_close_ms; /* close a connection idle this long; default 60000 */
	const char *spool_dir; /* required */
	uint64_t spool_max_bytes; /* default 64 MiB */
	const char *user_agent; /* default "cgperf-agent" */
	push_log_fn log; /* or NULL */
	void *log_arg;
};

struct push_collector_stats {
	const char *url; /* valid until push_free */
	uint64_t sent; /* requests made */
	uint64_t acked; /* 2xx */
	uint64_t retried; /* requests that resent a batch after a failure */
	uint64_t rejected; /* batches refused with a non-retryable status */
	uint64_t failures; /* requests that failed and will be retried */
	uint64_t maybe_delivered; /* of those, failed after the whole body was sent */
	uint64_t duplicates; /* acks saying the batch was stored before (a resend) */
	uint64_t cursor; /* last sequence number acked or rejected (failover: by the service) */
	uint64_t pending; /* spooled batches not yet through it (failover: the service) */
	bool failing; /* the last request failed (retrying, or in a health backoff) */
	char last_error[PUSH_ERROR_MAX]; /* last failure or rejection, "" if none */
};

struct push_stats {
	/* Sums over the collectors. */
	uint64_t sent, acked, retried, rejected, failures, maybe_delivered, duplicates;
	uint64_t spool_bytes, spool_count, spool_dropped;
	uint64_t submit_errors; /* push_submit calls that could not spool */
	size_t n_collectors;
	struct push_collector_stats collectors[PUSH_MAX_COLLECTORS];
};

/* Open the spool, load each collector's cursor and start the sender
 * threads; spooled batches left by an earlier run are sent first.
 * NULL + errno (EINVAL for bad options, EBUSY if the spool is in use). */
struct push *push_new(const struct push_opts *opts);

/* Stop the senders (aborting requests in flight) and close the spool.
 * What is not yet acked stays spooled for the next push_new. NULL is fine. */
void push_free(struct push *p);

/* The next sequence number (spool_next_seq on the spool directory, and
 * above anything this push has seen). */
int push_next_seq(struct push *p, uint64_t *seq);

/* Spool @len bytes of @gzbuf durably as batch @seq and wake the senders;
 * does not wait for the network. @seq must be above every batch submitted
 * or spooled before (-EINVAL). Other errors are the spool's (-ENOSPC, -EIO,
 * -EFBIG for a batch bigger than the cap). */
int push_submit(struct push *p, uint64_t seq, const void *gzbuf, size_t len);

/* Send what is spooled now, every collector retrying at once instead of
 * waiting out its backoff (but not before the end of a Retry-After the
 * collector sent), and wait until every collector has it or @timeout_ms
 * passes: 0 or -ETIMEDOUT. For a clean shutdown. */
int push_flush(struct push *p, unsigned timeout_ms);

void push_stats(struct push *p, struct push_stats *st);

#endif
