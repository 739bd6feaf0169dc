// SPDX-License-Identifier: MIT
/*
 * httpc: the POST every cgperf sender makes (see httpc.h for the outcomes).
 *
 * The easy handle runs through a multi handle of its own so that another
 * thread can interrupt a request at once (curl_multi_wakeup) instead of
 * waiting for its timeout; the loop also checks *stop every second. The
 * multi handle holds the connection cache: httpc_close_idle() closes an
 * idle connection by swapping in a fresh multi handle, under h->mu, which
 * httpc_wakeup() also takes, so a wakeup never reaches a freed handle.
 *
 * A failed request says whether the server can have the body: one that
 * failed before its body was all written (connect errors, a connection the
 * server closed, a timeout while sending) cannot have been stored; one that
 * failed after (a timeout waiting for the answer) may have been, and its
 * sender counts that apart (maybe_delivered).
 */
#include "lib/httpc.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/curlapi.h"
#include "lib/hashmap.h"

/* Printable single-line text: control bytes become '?'. */
void httpc_sanitize(char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}

bool httpc_is_http_url(const char *url)
{
	return !strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8);
}

/* @url with any user:password@ replaced by ***@ (malloc'd; NULL: ENOMEM). */
char *httpc_redact_url(const char *url)
{
	const char *auth = strstr(url, "://"), *at = NULL;
	char *out;

	if (auth) {
		auth += 3;
		for (const char *q = auth; *q && !strchr("/?#", *q); q++) {
			if (*q == '@')
				at = q;
		}
	}
	if (!at)
		return strdup(url);
	if (asprintf(&out, "%.*s***%s", (int)(auth - url), url, at) < 0)
		return NULL;
	return out;
}

/* Copy @token into "Authorization: Bearer TOKEN", without trailing
 * whitespace (a token file's newline); control characters are refused so
 * the token cannot add header lines. */
int httpc_auth_header(const char *token, char **out)
{
	size_t len = strlen(token);

	while (len && isspace((unsigned char)token[len - 1]))
		len--;
	if (!len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)token[i] < 0x20 || token[i] == 0x7f)
			return -EINVAL;
	}
	if (asprintf(out, "Authorization: Bearer %.*s", (int)len, token) < 0)
		return -ENOMEM;
	return 0;
}

/* ---- the client ------------------------------------------------------ */

#define DEFAULT_TIMEOUT_MS 10000u
#define DEFAULT_CONNECT_TIMEOUT_MS 5000u

struct httpc {
	const struct curlapi *cu; /* libcurl, loaded by the first httpc_new() */
	CURL *curl;
	CURLM *multi;
	pthread_mutex_t mu; /* guards multi against httpc_wakeup */
	const atomic_bool *stop;
	uint64_t last_io_ms;
	char errbuf[CURL_ERROR_SIZE];
	char resp[HTTPC_BODY_KEEP + 1];
	size_t resp_len;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct httpc *h = arg;
	size_t n = size * nmemb, room = HTTPC_BODY_KEEP - h->resp_len;
	size_t take = n < room ? n : room;

	memcpy(h->resp + h->resp_len, data, take);
	h->resp_len += take;
	h->resp[h->resp_len] = '\0';
	return n;
}

static bool stopping(const struct httpc *h)
{
	return h->stop && atomic_load(h->stop);
}

/* Run the configured request to completion, or until *stop. */
static CURLcode perform(struct httpc *h)
{
	CURLcode res = CURLE_OK;
	bool done = false;
	CURLMcode mc;

	mc = h->cu->multi_add_handle(h->multi, h->curl);
	if (mc != CURLM_OK) {
		snprintf(h->errbuf, sizeof(h->errbuf), "%s", h->cu->multi_strerror(mc));
		return CURLE_FAILED_INIT;
	}
	while (!done) {
		CURLMsg *msg;
		int running, left;

		mc = h->cu->multi_perform(h->multi, &running);
		if (mc != CURLM_OK)
			break;
		while ((msg = h->cu->multi_info_read(h->multi, &left))) {
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == h->curl) {
				res = msg->data.result;
				done = true;
			}
		}
		if (done)
			break;
		if (stopping(h)) {
			res = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		mc = h->cu->multi_poll(h->multi, NULL, 0, 1000, NULL);
		if (mc != CURLM_OK)
			break;
	}
	if (mc != CURLM_OK) {
		snprintf(h->errbuf, sizeof(h->errbuf), "%s", h->cu->multi_strerror(mc));
		res = CURLE_FAILED_INIT;
	}
	h->cu->multi_remove_handle(h->multi, h->curl);
	return res;
}

/* The answer's Retry-After as libcurl read it (delta-seconds, or an HTTP
 * date turned into seconds from now), in ms, capped; -1 when none. */
static int64_t retry_after_ms(struct httpc *h)
{
	curl_off_t secs = 0;

	if (h->cu->easy_getinfo(h->curl, CURLINFO_RETRY_AFTER, &secs) != CURLE_OK || secs <= 0)
		return -1;
	if ((uint64_t)secs > HTTPC_RETRY_AFTER_MAX_MS / 1000)
		return HTTPC_RETRY_AFTER_MAX_MS;
	return (int64_t)secs * 1000;
}

static void classify_status(struct httpc *h, long status, struct httpc_result *r)
{
	r->status = status;
	snprintf(r->key, sizeof(r->key), "HTTP %ld", status);
	if (status >= 200 && status < 300) {
		r->kind = HTTPC_ACK;
		return;
	}
	if (status >= 400 && status < 500 && status != 429 && status != 408)
		r->kind = HTTPC_REJECT;
	else
		r->kind = HTTPC_RETRY; /* 429, 408, 5xx, and 1xx/3xx that should not happen */
	if (status == 429 || status == 503)
		r->retry_after_ms = retry_after_ms(h);
	/* The start of the body usually says why. */
	while (h->resp_len && isspace((unsigned char)h->resp[h->resp_len - 1]))
		h->resp[--h->resp_len] = '\0';
	if (h->resp_len)
		snprintf(r->text, sizeof(r->text), "HTTP %ld: %s", status, h->resp);
	else
		snprintf(r->text, sizeof(r->text), "HTTP %ld", status);
}

static void nomem(struct httpc_result *r)
{
	snprintf(r->key, sizeof(r->key), "nomem");
	snprintf(r->text, sizeof(r->text), "out of memory");
}

void httpc_post(struct httpc *h, const char *const *hdrs, size_t nhdrs, const void *body, size_t len,
		struct httpc_result *r)
{
	struct curl_slist *list = NULL, *t;
	CURLcode rc;

	*r = (struct httpc_result){ .kind = HTTPC_RETRY, .retry_after_ms = -1 };
	for (size_t i = 0; i < nhdrs; i++) {
		if (!hdrs[i])
			continue;
		t = h->cu->slist_append(list, hdrs[i]);
		if (!t) {
			h->cu->slist_free_all(list);
			nomem(r);
			return;
		}
		list = t;
	}
	h->resp_len = 0;
	h->resp[0] = '\0';
	h->errbuf[0] = '\0';
	h->cu->easy_setopt(h->curl, CURLOPT_HTTPHEADER, list);
	h->cu->easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	h->cu->easy_setopt(h->curl, CURLOPT_POSTFIELDS, len ? body : "");

	rc = perform(h);
	if (rc == CURLE_ABORTED_BY_CALLBACK && stopping(h)) {
		r->kind = HTTPC_STOPPED;
	} else if (rc != CURLE_OK) {
		curl_off_t up = 0;

		/* All of the body written: the server may have stored it. */
		if (h->cu->easy_getinfo(h->curl, CURLINFO_SIZE_UPLOAD_T, &up) == CURLE_OK &&
		    (size_t)up >= len && rc != CURLE_COULDNT_CONNECT &&
		    rc != CURLE_COULDNT_RESOLVE_HOST && rc != CURLE_SEND_ERROR)
			r->maybe_delivered = true;
		snprintf(r->key, sizeof(r->key), "curl %d", (int)rc);
		snprintf(r->text, sizeof(r->text), "%.80s%s%.160s", h->cu->easy_strerror(rc),
			 h->errbuf[0] ? ": " : "", h->errbuf);
	} else {
		long status = 0;

		h->cu->easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
		classify_status(h, status, r);
	}
	memcpy(r->body, h->resp, h->resp_len + 1);
	h->last_io_ms = clock_mono_ms();
	h->cu->easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	h->cu->easy_setopt(h->curl, CURLOPT_POSTFIELDS, NULL);
	h->cu->slist_free_all(list);
	httpc_sanitize(r->text);
}

void httpc_wakeup(struct httpc *h)
{
	pthread_mutex_lock(&h->mu);
	if (h->multi)
		h->cu->multi_wakeup(h->multi);
	pthread_mutex_unlock(&h->mu);
}

void httpc_close_idle(struct httpc *h)
{
	CURLM *fresh, *old;

	h->last_io_ms = 0;
	fresh = h->cu->multi_init();
	if (!fresh)
		return; /* kept open: closed after a later request */
	pthread_mutex_lock(&h->mu);
	old = h->multi;
	h->multi = fresh;
	pthread_mutex_unlock(&h->mu);
	h->cu->multi_cleanup(old); /* a TLS close may write: outside the lock */
}

uint64_t httpc_last_io_ms(const struct httpc *h)
{
	return h->last_io_ms;
}

static int setup_curl(struct httpc *h, const struct httpc_opts *o)
{
	long timeout = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	long connect = o->connect_timeout_ms ? o->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
	CURLcode rc = CURLE_OK;
	CURL *c = h->curl;

	if (connect > timeout)
		connect = timeout;
#define SET(opt, val)                                        \
	do {                                                 \
		if (rc == CURLE_OK)                          \
			rc = h->cu->easy_setopt(c, opt, val); \
	} while (0)
	SET(CURLOPT_URL, o->url);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_POST, 1L);
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_TIMEOUT_MS, timeout);
	SET(CURLOPT_CONNECTTIMEOUT_MS, connect);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_USERAGENT, o->user_agent ? o->user_agent : "cgperf");
	SET(CURLOPT_ERRORBUFFER, h->errbuf);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, h);
	SET(CURLOPT_SSL_VERIFYPEER, o->tls_no_verify ? 0L : 1L);
	SET(CURLOPT_SSL_VERIFYHOST, o->tls_no_verify ? 0L : 2L);
	if (o->ca_file)
		SET(CURLOPT_CAINFO, o->ca_file);
	if (o->cert_file)
		SET(CURLOPT_SSLCERT, o->cert_file);
	if (o->key_file)
		SET(CURLOPT_SSLKEY, o->key_file);
	if (o->basic_user) {
		SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SET(CURLOPT_USERNAME, o->basic_user);
		SET(CURLOPT_PASSWORD, o->basic_password ? o->basic_password : "");
	}
#undef SET
	if (rc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	return rc == CURLE_OK ? 0 : -ENOTSUP;
}

struct httpc *httpc_new(const struct httpc_opts *o)
{
	const struct curlapi *cu;
	struct httpc *h = NULL;
	int ret = -EINVAL;

	if (!o || !o->url || !httpc_is_http_url(o->url) || (o->key_file && !o->cert_file))
		goto err;
	ret = -ELIBACC;
	cu = curlapi();
	if (!cu)
		goto err;
	ret = -ENOMEM;
	h = calloc(1, sizeof(*h));
	if (!h)
		goto err;
	h->cu = cu;
	pthread_mutex_init(&h->mu, NULL);
	h->stop = o->stop;
	h->multi = h->cu->multi_init();
	h->curl = h->cu->easy_init();
	if (!h->multi || !h->curl)
		goto err;
	ret = setup_curl(h, o);
	if (ret)
		goto err;
	return h;
err:
	httpc_free(h);
	errno = -ret;
	return NULL;
}

void httpc_free(struct httpc *h)
{
	if (!h)
		return;
	if (h->curl)
		h->cu->easy_cleanup(h->curl);
	if (h->multi)
		h->cu->multi_cleanup(h->multi);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* ---- retry delays ---------------------------------------------------- */

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

uint64_t httpc_rng_seed(const char *salt)
{
	uint64_t s;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != sizeof(s))
		s = clock_mono_ms() ^ ((uint64_t)getpid() << 32);
	s ^= hash_fnv1a_str(HASH_FNV_OFFSET, salt ? salt : "");
	return s ? s : 0x9e3779b97f4a7c15ull;
}

uint64_t httpc_backoff_ms(uint64_t *rng, unsigned attempts, uint64_t initial_ms, uint64_t max_ms,
			  bool half)
{
	uint64_t ceil = initial_ms, floor;

	for (unsigned i = 1; i < attempts && ceil < max_ms; i++)
		ceil *= 2;
	if (ceil > max_ms)
		ceil = max_ms;
	floor = half ? ceil / 2 : 0;
	return floor + rng_next(rng) % (ceil - floor + 1);
}
