/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_HTTPC_H
#define CGPERF_LIB_HTTPC_H

/*
 * httpc: one HTTP(S) endpoint that a sender thread POSTs bodies to, over
 * libcurl, with what every cgperf sender needs around the request: the
 * answer sorted into ack / retry / reject (and why, for logs), the server's
 * Retry-After, whether a failed request may still have been stored, a kept-
 * alive connection that can be closed when idle, and a request in flight
 * that another thread can interrupt. The agent's push (agent/ship/) and the
 * exporter's remote_write use it; both keep their own queues and state.
 *
 * Outcome of a request (httpc_post):
 *   2xx                              HTTPC_ACK
 *   429, 408, 5xx, 1xx/3xx, transport HTTPC_RETRY (retry_after_ms from the
 *     errors and timeouts            answer's Retry-After on 429/503, capped
 *                                    at HTTPC_RETRY_AFTER_MAX_MS, else -1)
 *   any other 4xx                    HTTPC_REJECT
 *   interrupted by *stop             HTTPC_STOPPED
 *
 * Also the text helpers such senders need: URL checks, a URL without its
 * password for logs, an Authorization header that cannot add a header line,
 * one printable line out of a server's answer. Nothing here prints.
 * An httpc is used by one thread at a time, but for httpc_wakeup().
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTPC_TEXT_MAX 256
#define HTTPC_KEY_MAX 48
/* Kept of an answer's body (for error text and "duplicate" answers). */
#define HTTPC_BODY_KEEP 200
#define HTTPC_RETRY_AFTER_MAX_MS (15u * 60 * 1000)

struct httpc;

/* Strings are copied (libcurl keeps its own; the caller may free them once
 * httpc_new returns). Zero timeouts mean 10 s and min(timeout, 5 s). */
struct httpc_opts {
	const char *url; /* http:// or https:// */
	unsigned timeout_ms, connect_timeout_ms;
	const char *ca_file, *cert_file, *key_file; /* or NULL */
	bool tls_no_verify;
	const char *user_agent; /* or NULL */
	const char *basic_user, *basic_password; /* HTTP basic auth, or NULL */
	const atomic_bool *stop; /* a request ends HTTPC_STOPPED once true; or NULL */
};

enum httpc_outcome { HTTPC_ACK, HTTPC_RETRY, HTTPC_REJECT, HTTPC_STOPPED };

struct httpc_result {
	enum httpc_outcome kind;
	long status; /* HTTP status, 0 for a transport error */
	bool maybe_delivered; /* HTTPC_RETRY after the whole body went: may be stored */
	int64_t retry_after_ms; /* -1: none */
	char key[HTTPC_KEY_MAX]; /* error class ("HTTP 503", "curl 7"), for rate-limited logs */
	char text[HTTPC_TEXT_MAX]; /* one printable line: what went wrong */
	char body[HTTPC_BODY_KEEP + 1]; /* the start of the answer's body */
};

/* NULL + errno: EINVAL (not an http(s) URL, a key without a certificate),
 * ENOMEM, ENOTSUP (libcurl refused an option), ELIBACC (libcurl cannot be
 * loaded or started: curlapi_error() says why). */
struct httpc *httpc_new(const struct httpc_opts *o);
void httpc_free(struct httpc *h);

/* POST @len bytes at @body with the header lines @hdrs (NULL entries
 * skipped) and fill @r. Blocks until done, the timeout or *stop. */
void httpc_post(struct httpc *h, const char *const *hdrs, size_t nhdrs, const void *body, size_t len,
		struct httpc_result *r);

/* Interrupt a request in flight now (from any thread), rather than at the
 * next check of *stop (within a second). */
void httpc_wakeup(struct httpc *h);

/* Close the kept-alive connection (after httpc_post returned). */
void httpc_close_idle(struct httpc *h);

/* Monotonic ms at the end of the last request; 0 when no connection is
 * (knowingly) open. */
uint64_t httpc_last_io_ms(const struct httpc *h);

/*
 * Retry delays: a seeded xorshift, and the delay before retry number
 * @attempts (1 = the first retry): uniform in [floor, ceil] where ceil
 * doubles from @initial_ms up to @max_ms and floor is 0 (full jitter) or,
 * with @half, ceil/2 (for a health backoff that must not end at once).
 */
uint64_t httpc_rng_seed(const char *salt);
uint64_t httpc_backoff_ms(uint64_t *rng, unsigned attempts, uint64_t initial_ms, uint64_t max_ms,
			  bool half);

/* Control bytes (and DEL) become '?', in place: one printable line. */
void httpc_sanitize(char *s);
/* Does @url start with http:// or https:// (any case)? */
bool httpc_is_http_url(const char *url);
/* @url with any user:password@ replaced by ***@ (malloc'd; NULL: ENOMEM). */
char *httpc_redact_url(const char *url);
/*
 * "Authorization: Bearer TOKEN" into malloc'd *@out, without @token's
 * trailing whitespace (a token file's newline). 0, -EINVAL (empty, or a
 * control character that could add a header line) or -ENOMEM.
 */
int httpc_auth_header(const char *token, char **out);

#endif
