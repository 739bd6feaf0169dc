// SPDX-License-Identifier: MIT
/*
 * Each request keeps a small state across libmicrohttpd's calls: the
 * decision taken from the headers (route, token, Content-Length), then the
 * body as it arrives, capped at max_body whatever Content-Length said, then
 * the answer on the last call. A push is answered 200 only after the store
 * committed its transaction; the totals shown on /metrics are updated under
 * the same lock, right after, so a scrape never sees a batch the store does
 * not hold. Bad input costs at most max_body bytes of memory per
 * connection and never leaves state behind.
 */
#include "exporter/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/log.h"
#include "agent/wire.h"
#include "exporter/store.h"
#include "exporter/totals.h"

#define HTTP_THREADS 4u
#define HTTP_CONNECTIONS 128u

enum reject { REJ_AUTH, REJ_TOO_LARGE, REJ_BAD_REQUEST, REJ_N };
static const char *const reject_name[REJ_N] = { "auth", "too_large", "bad_request" };

struct http {
	struct MHD_Daemon *d;
	struct http_config cfg;
	char *auth; /* "Bearer TOKEN" or NULL */
	pthread_mutex_t lock; /* store, totals and the figures below */
	uint64_t received, duplicates, rejects[REJ_N], store_errors;
};

struct req {
	bool push;	/* a push whose body is being read */
	bool done;	/* answered already */
	bool too_large; /* more than max_body bytes came */
	uint8_t *buf;
	size_t len, cap;
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void hlog(enum log_level lvl, const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	pthread_mutex_lock(&log_lock);
	log_vkv(lvl, msg, ap);
	pthread_mutex_unlock(&log_lock);
	va_end(ap);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static enum MHD_Result answer(struct MHD_Connection *c, struct req *r, unsigned status,
			      const char *text)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	r->done = true;
	resp = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void count_reject(struct http *h, enum reject why, const char *text)
{
	pthread_mutex_lock(&h->lock);
	h->rejects[why]++;
	pthread_mutex_unlock(&h->lock);
	hlog(LOG_WARN, "push rejected", "reason", reject_name[why], "error", text, NULL);
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

static void self_metric(FILE *f, const char *name, const char *help, uint64_t v)
{
	fprintf(f, "# HELP cgperf_exporter_%s %s\n# TYPE cgperf_exporter_%s counter\n", name, help,
		name);
	fprintf(f, "cgperf_exporter_%s %" PRIu64 "\n", name, v);
}

static enum MHD_Result serve_metrics(struct http *h, struct MHD_Connection *c, struct req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *page = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&page, &len);

	if (!f)
		return answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	pthread_mutex_lock(&h->lock);
	self_metric(f, "batches_received_total", "Batches accepted and stored.", h->received);
	self_metric(f, "batches_duplicate_total",
		    "Batches answered 200 but not stored again (agent id and sequence known).",
		    h->duplicates);
	self_metric(f, "store_errors_total", "Batches the store failed to write (answered 500).",
		    h->store_errors);
	fputs("# HELP cgperf_exporter_rejects_total Push requests refused, by reason.\n"
	      "# TYPE cgperf_exporter_rejects_total counter\n",
	      f);
	for (int i = 0; i < REJ_N; i++)
		fprintf(f, "cgperf_exporter_rejects_total{reason=\"%s\"} %" PRIu64 "\n",
			reject_name[i], h->rejects[i]);
	totals_render(h->cfg.totals, f);
	pthread_mutex_unlock(&h->lock);
	if (fclose(f) || !page) {
		free(page);
		return answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	}
	r->done = true;
	resp = MHD_create_response_from_buffer(len, page, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(page);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* The first call of a request: route it and check what the headers say. */
static enum MHD_Result first_call(struct http *h, struct MHD_Connection *c, struct req *r,
				  const char *url, const char *method)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	if (!strcmp(url, "/metrics") || !strcmp(url, "/healthz")) {
		if (!get)
			return answer(c, r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
		if (!strcmp(url, "/healthz"))
			return answer(c, r, MHD_HTTP_OK, "ok\n");
		return serve_metrics(h, c, r);
	}
	if (strcmp(url, "/api/v1/push"))
		return answer(c, r, MHD_HTTP_NOT_FOUND,
			      "not found: POST /api/v1/push, GET /metrics, GET /healthz\n");
	if (strcmp(method, "POST"))
		return answer(c, r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: POST\n");
	if (h->auth) {
		const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");

		if (!a || !same_secret(a, h->auth)) {
			count_reject(h, REJ_AUTH, a ? "wrong token" : "no token");
			return answer(c, r, MHD_HTTP_UNAUTHORIZED, "missing or wrong bearer token\n");
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
			return answer(c, r, MHD_HTTP_CONTENT_TOO_LARGE, "body too large\n");
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

/* The last call of a push: the whole body is here. */
static enum MHD_Result finish_push(struct http *h, struct MHD_Connection *c, struct req *r)
{
	char err[256] = "";
	char seq[32];
	Cgperf__V1__Batch *m;
	int ret;

	if (r->too_large) {
		count_reject(h, REJ_TOO_LARGE, "body over --max-body");
		return answer(c, r, MHD_HTTP_CONTENT_TOO_LARGE, "body too large\n");
	}
	m = wire_decode(r->buf ? r->buf : (const uint8_t *)"", r->len, h->cfg.max_body, err,
			sizeof(err));
	if (!m) {
		int e = errno;

		if (e == ENOMEM)
			return answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
		char text[sizeof(err) + 1];

		count_reject(h, e == EMSGSIZE ? REJ_TOO_LARGE : REJ_BAD_REQUEST, err);
		snprintf(text, sizeof(text), "%s\n", err);
		return answer(c, r, e == EMSGSIZE ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST,
			      text);
	}
	pthread_mutex_lock(&h->lock);
	ret = store_put(h->cfg.store, m, now_ns(), err, sizeof(err));
	if (ret == 0) {
		h->received++;
		if (totals_add_batch(h->cfg.totals, m))
			hlog(LOG_ERROR, "out of memory: /metrics totals incomplete", NULL);
	} else if (ret == 1) {
		h->duplicates++;
	} else {
		h->store_errors++;
	}
	pthread_mutex_unlock(&h->lock);
	snprintf(seq, sizeof(seq), "%" PRIu64, m->seq);
	if (ret < 0)
		hlog(LOG_ERROR, "cannot store batch", "agent_id", m->agent_id, "seq", seq, "error",
		     err, NULL);
	else
		hlog(LOG_DEBUG, ret ? "duplicate batch" : "batch stored", "host", m->host,
		     "agent_id", m->agent_id, "seq", seq, NULL);
	wire_batch_decoded_free(m);
	if (ret < 0)
		return answer(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "store failed\n");
	return answer(c, r, MHD_HTTP_OK, ret ? "duplicate\n" : "stored\n");
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
		free(r->buf);
		free(r);
		*state = NULL;
	}
}

/* Parse HOST:PORT ([V6]:PORT, :PORT) into @ss. 0 or -EINVAL. */
static int parse_listen(const char *listen, struct sockaddr_storage *ss, uint16_t *port_out)
{
	const char *colon = strrchr(listen, ':');
	char host[256];
	long port;
	char *end;

	if (!colon || (size_t)(colon - listen) >= sizeof(host))
		return -EINVAL;
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port <= 0 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		size_t hl = strlen(host);

		if (hl < 2 || host[hl - 1] != ']')
			return -EINVAL;
		host[hl - 1] = '\0';
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			return -EINVAL;
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &a4->sin_addr) != 1)
			return -EINVAL;
	}
	*port_out = (uint16_t)port;
	return 0;
}

struct http *http_start(const struct http_config *cfg, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct http *h;
	uint16_t port;

	if (parse_listen(cfg->listen, &ss, &port)) {
		snprintf(err, errlen, "--listen '%s': want HOST:PORT", cfg->listen);
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->cfg = *cfg;
	if (cfg->token && asprintf(&h->auth, "Bearer %s", cfg->token) < 0) {
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&h->lock, NULL);
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
					(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE, HTTP_THREADS,
				MHD_OPTION_CONNECTION_LIMIT, HTTP_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_NOTIFY_COMPLETED,
				completed, h, MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen, "cannot listen on %s (in use?)", cfg->listen);
		pthread_mutex_destroy(&h->lock);
		free(h->auth);
		free(h);
		errno = EADDRINUSE;
		return NULL;
	}
	return h;
}

void http_stop(struct http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	pthread_mutex_destroy(&h->lock);
	free(h->auth);
	free(h);
}
