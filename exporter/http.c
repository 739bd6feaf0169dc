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
 * GET /api/v1/stacks reads through the store's reader, outside both locks.
 *
 * Nothing slow runs on libmicrohttpd's event loops. A few threads each
 * run an epoll loop over thousands of connections (kept-alive agents are
 * idle most of the time), and a loop that waits for a commit's fsync or
 * renders a flame graph stalls every connection it holds. So a loop does
 * only the cheap part: headers, the body, decoding the batch. Then the
 * request joins a bounded queue and its connection is suspended
 * (MHD_suspend_connection): pushes go to one store thread, which commits
 * them in arrival order, and read routes (/metrics, stacks, targets, the
 * index) to a few reader threads. The worker builds the answer and resumes
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
#include <strings.h>
#include <time.h>

#include "lib/log.h"
#include "wire/wire.h"
#include "exporter/config.h"
#include "exporter/page.h"
#include "exporter/procmetrics.h"
#include "exporter/render/render.h"
#include "exporter/store/store.h"
#include "exporter/targets.h"
#include "exporter/totals.h"
#include "lib/clock.h"
#include "lib/gzip.h"
#include "lib/netaddr.h"

/* Event loops (epoll), each over its share of the connections. */
#define HTTP_THREADS 4u
/* Threads that build the answers of read routes. */
#define READ_THREADS 2u
/* Pushes decoded and waiting for the store thread: at most --ingest-queue
 * (HTTP_INGEST_QUEUE_DEFAULT) and this many bytes of bodies; past either,
 * 503 + Retry-After. */
#define INGEST_QUEUE_BYTES (512ull << 20)
/* Pushes committed in one transaction, at most (group commit). */
#define INGEST_GROUP_MAX 64u
/* Read requests waiting for a reader thread. */
#define READ_QUEUE_MAX 256u
/* Retry-After of a 503 for a full queue, seconds. */
#define BUSY_RETRY_S "1"
/* Connections waiting to be accepted (the kernel caps it at somaxconn). */
#define LISTEN_BACKLOG 4096u
/* Longest query parameter value accepted. */
#define PARAM_MAX 4096
/* Default span of a stacks query. */
#define DEFAULT_SPAN_NS (3600ull * 1000000000ull)
/* zlib level of gzip'd answers: 1 is the fastest; text compresses well at
 * any level, and the scrape's latency is what counts. */
#define GZIP_LEVEL 1

enum reject { REJ_AUTH, REJ_TOO_LARGE, REJ_BAD_REQUEST, REJ_SERIES_LIMIT, REJ_N };
static const char *const reject_name[REJ_N] = { "auth", "too_large", "bad_request",
						"series_limit" };

enum route { RT_PUSH, RT_METRICS, RT_STACKS, RT_TARGETS, RT_INDEX };

enum format { FMT_FOLDED, FMT_PPROF, FMT_SVG };

struct stacks_query {
	struct store_selection sel;
	enum format format;
};

struct req;

/* A queue of suspended requests and the threads that serve it. */
struct workq {
	struct http *h;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct req *head, *tail;
	size_t n, max_n;
	uint64_t bytes, max_bytes;
	bool stopping;
	size_t group; /* requests handed to serve() at once, at most */
	void (*serve)(struct http *h, struct req **r, size_t n);
	pthread_t threads[READ_THREADS > 1 ? READ_THREADS : 1];
	unsigned n_threads;
};

struct http {
	struct MHD_Daemon *d;
	struct http_config cfg;
	char *auth;		 /* "Bearer TOKEN" or NULL */
	pthread_mutex_t ingest;	 /* store commits, in order */
	pthread_mutex_t lock;	 /* totals and the figures below */
	uint64_t received, duplicates, rejects[REJ_N], store_errors, busy;
	size_t metrics_len; /* of the last page, to allocate the next at once */
	struct workq store_q, read_q;
};

struct req {
	bool push;	/* a push whose body is being read */
	bool done;	/* answered already */
	bool encodable; /* a read route: its answer varies with Accept-Encoding */
	bool gzip;	/* and the client accepts gzip */
	bool too_large; /* more than max_body bytes came */
	bool om;	/* /metrics: OpenMetrics asked for */
	uint8_t *buf;
	size_t len, cap;

	/* Set while the request waits in a queue or a worker serves it: the
	 * answer is built into resp/status instead of being queued on the
	 * connection, which is suspended meanwhile. */
	bool deferred;
	enum route route;
	struct stacks_query q;	/* RT_STACKS, parsed before queueing */
	Cgperf__V1__Batch *m;	/* RT_PUSH, decoded before queueing */
	uint64_t queued_bytes;	/* of this request in its queue's figure */
	struct MHD_Connection *conn;
	struct req *next;
	struct MHD_Response *resp; /* the answer, once built */
	unsigned status;
};

uint64_t http_now_ns(void)
{
	return clock_real_ns();
}

static uint64_t cutoff(const struct http *h, uint64_t now)
{
	return now > h->cfg.series_expiry_ns ? now - h->cfg.series_expiry_ns : 0;
}

/* ---- Accept-Encoding ---- */

/*
 * What an Accept-Encoding field (RFC 9110, 12.5.3) says of gzip: a list of
 * `coding *( OWS ";" OWS param )`, a weight being `q=` and a qvalue of at
 * most three decimals. Weights are kept in thousandths, -1 while a coding
 * was not named. "x-gzip" is gzip; "*" stands for any coding not named.
 * Where gzip (or "*") is named twice, the lower weight counts, and a
 * weight that does not parse counts as 0: when in doubt, plain text.
 */
struct accept_gzip {
	int gzip, star;
};

static bool ows(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* A qvalue in [s, e): thousandths, or -1. */
static int qvalue(const char *s, const char *e)
{
	size_t n = (size_t)(e - s);
	int q = 0, digits = 0;

	if (!n || (s[0] != '0' && s[0] != '1'))
		return -1;
	if (n > 1 && (s[1] != '.' || n > 5))
		return -1;
	for (size_t i = 2; i < n; i++, digits++) {
		if (s[i] < '0' || s[i] > '9' || (s[0] == '1' && s[i] != '0'))
			return -1;
		q = q * 10 + (s[i] - '0');
	}
	while (digits++ < 3)
		q *= 10;
	return s[0] == '1' ? 1000 : q;
}

/* The weight of the element in [s, e) after its coding: 1000 without q=. */
static int weight(const char *s, const char *e)
{
	int q = 1000;

	while (s < e) {
		const char *name, *eq, *val;

		while (s < e && ows(*s))
			s++;
		if (s == e)
			break;
		if (*s++ != ';')
			return 0;
		while (s < e && ows(*s))
			s++;
		name = s;
		while (s < e && *s != '=' && *s != ';' && !ows(*s))
			s++;
		eq = s;
		if (s == e || *s != '=')
			return 0;
		val = ++s;
		while (s < e && *s != ';' && !ows(*s))
			s++;
		if (eq - name == 1 && (*name == 'q' || *name == 'Q')) {
			q = qvalue(val, s);
			if (q < 0)
				return 0;
		}
	}
	return q;
}

static void accept_weigh(int *slot, int q)
{
	if (*slot < 0 || q < *slot)
		*slot = q;
}

static void accept_encoding_parse(struct accept_gzip *a, const char *v)
{
	while (*v) {
		const char *e = v + strcspn(v, ","), *name, *name_end;

		while (v < e && ows(*v))
			v++;
		name = v;
		while (v < e && *v != ';' && !ows(*v))
			v++;
		name_end = v;
		if (name_end - name == 4 && !strncasecmp(name, "gzip", 4))
			accept_weigh(&a->gzip, weight(v, e));
		else if (name_end - name == 6 && !strncasecmp(name, "x-gzip", 6))
			accept_weigh(&a->gzip, weight(v, e));
		else if (name_end - name == 1 && *name == '*')
			accept_weigh(&a->star, weight(v, e));
		v = *e ? e + 1 : e;
	}
}

static enum MHD_Result accept_header(void *arg, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	if (key && value && !strcasecmp(key, "Accept-Encoding"))
		accept_encoding_parse(arg, value);
	return MHD_YES;
}

/* Does the client take gzip? Every Accept-Encoding field counts, as one
 * list. No field: no. */
static bool accepts_gzip(struct MHD_Connection *c)
{
	struct accept_gzip a = { .gzip = -1, .star = -1 };

	MHD_get_connection_values(c, MHD_HEADER_KIND, accept_header, &a);
	return a.gzip >= 0 ? a.gzip > 0 : a.star > 0;
}

/* Send @resp with @status now, or keep it for the handler's next call when
 * the request is deferred. Takes over @resp. */
static enum MHD_Result deliver(struct MHD_Connection *c, struct req *r, unsigned status,
			       struct MHD_Response *resp)
{
	enum MHD_Result ret;

	r->done = true;
	if (r->deferred) {
		if (r->resp)
			MHD_destroy_response(r->resp);
		r->resp = resp;
		r->status = status;
		return MHD_YES;
	}
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Queue @len bytes at @body (taken over when @owned, else copied);
 * gzip'd when the request is encodable and the client takes gzip, however
 * short the body (one rule is easier to rely on than ~20 bytes saved);
 * when compressing fails, the body goes plain. */
static enum MHD_Result respond(struct MHD_Connection *c, struct req *r, unsigned status,
			       const char *type, void *body, size_t len, bool owned,
			       const char *disposition)
{
	struct MHD_Response *resp;
	uint8_t *z = NULL;
	size_t zlen = 0;

	r->done = true;
	if (r->encodable && r->gzip && !gzip_compress(body, len, GZIP_LEVEL, &z, &zlen)) {
		if (owned)
			free(body);
		body = z;
		len = zlen;
		owned = true;
	}
	resp = MHD_create_response_from_buffer(len, body,
					       owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	if (!resp) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", type);
	if (r->encodable)
		MHD_add_response_header(resp, "Vary", "Accept-Encoding");
	if (z)
		MHD_add_response_header(resp, "Content-Encoding", "gzip");
	if (disposition)
		MHD_add_response_header(resp, "Content-Disposition", disposition);
	return deliver(c, r, status, resp);
}

static enum MHD_Result answer(struct MHD_Connection *c, struct req *r, unsigned status,
			      const char *text)
{
	return respond(c, r, status, "text/plain; charset=utf-8", (void *)text, strlen(text), false,
		       NULL);
}

/* Answer with the text of @p, or 503 when building it ran out of memory. */
static enum MHD_Result answer_page(struct MHD_Connection *c, struct req *r, unsigned status,
				   const char *type, struct page *p)
{
	size_t len;
	char *text = page_take(p, &len);

	if (!text)
		return answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	return respond(c, r, status, type, text, len, true, NULL);
}

__attribute__((format(printf, 4, 5))) static enum MHD_Result
answerf(struct MHD_Connection *c, struct req *r, unsigned status, const char *fmt, ...)
{
	char text[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return answer(c, r, status, text);
}

static void count_reject(struct http *h, enum reject why, const char *text)
{
	pthread_mutex_lock(&h->lock);
	h->rejects[why]++;
	pthread_mutex_unlock(&h->lock);
	log_kv(LOG_WARN, "push rejected", "reason", reject_name[why], "error", text, NULL);
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

static void workq_depth(struct http *h, size_t out[2]);

/* ---- /metrics ---- */

static void family(struct page *p, bool om, const char *name, const char *type, const char *help)
{
	size_t n = strlen(name);

	if (om && !strcmp(type, "counter") && n > 6 && !strcmp(name + n - 6, "_total"))
		n -= 6;
	page_printf(p, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)n, name, help, (int)n, name, type);
}

static void self_metric(struct page *p, bool om, const char *name, const char *type,
			const char *help, uint64_t v)
{
	family(p, om, name, type, help);
	page_put(p, name);
	page_putc(p, ' ');
	page_u64(p, v);
	page_putc(p, '\n');
}

/* Does the Accept header ask for OpenMetrics? */
static bool wants_openmetrics(struct MHD_Connection *c)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");

	return a && strstr(a, "application/openmetrics-text");
}

static enum MHD_Result serve_metrics(struct http *h, struct MHD_Connection *c, struct req *r)
{
	bool om = r->om;
	struct store_stats st;
	struct page p;
	uint64_t now = http_now_ns();

	store_stats(h->cfg.store, &st);
	page_init(&p, 0);
	pthread_mutex_lock(&h->lock);
	page_reserve(&p, h->metrics_len + h->metrics_len / 8);
	self_metric(&p, om, "cgperf_exporter_batches_received_total", "counter",
		    "Batches accepted and stored.", h->received);
	self_metric(&p, om, "cgperf_exporter_batches_duplicate_total", "counter",
		    "Batches answered 200 but not stored again (agent id and sequence known).",
		    h->duplicates);
	self_metric(&p, om, "cgperf_exporter_store_errors_total", "counter",
		    "Batches the store failed to write (answered 500).", h->store_errors);
	family(&p, om, "cgperf_exporter_rejects_total", "counter",
	       "Push requests refused, by reason.");
	for (int i = 0; i < REJ_N; i++)
		page_printf(&p, "cgperf_exporter_rejects_total{reason=\"%s\"} %" PRIu64 "\n",
			    reject_name[i], h->rejects[i]);
	self_metric(&p, om, "cgperf_exporter_busy_total", "counter",
		    "Requests answered 503 with Retry-After because a work queue was full.",
		    h->busy);
	self_metric(&p, om, "cgperf_exporter_series", "gauge",
		    "Series held for /metrics (cgroup counters, probes, agents).",
		    totals_series(h->cfg.totals));
	totals_render(h->cfg.totals, &p, om, cutoff(h, now));
	h->metrics_len = p.len;
	pthread_mutex_unlock(&h->lock);
	self_metric(&p, om, "cgperf_exporter_stack_rows_total", "counter",
		    "Stack sample rows written to the store since start.", st.stack_rows);
	self_metric(&p, om, "cgperf_exporter_retention_deleted_rows_total", "counter",
		    "Rows deleted by retention since start.", st.deleted_rows);
	self_metric(&p, om, "cgperf_exporter_store_size_bytes", "gauge",
		    "Size of the store on disk.", st.bytes);
	{
		const union MHD_DaemonInfo *di =
			MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		size_t qn[2];

		self_metric(&p, om, "cgperf_exporter_connections", "gauge",
			    "HTTP connections open (kept-alive agents included).",
			    di ? di->num_connections : 0);
		workq_depth(h, qn);
		self_metric(&p, om, "cgperf_exporter_ingest_queue", "gauge",
			    "Pushes decoded and waiting for the store thread.", qn[0]);
		self_metric(&p, om, "cgperf_exporter_connection_limit", "gauge",
			    "Connections the exporter accepts at once (--max-connections, "
			    "lowered to fit RLIMIT_NOFILE).",
			    h->cfg.max_connections);
	}
	procmetrics_render(&p, om);
	if (om)
		page_put(&p, "# EOF\n");
	return answer_page(c, r, MHD_HTTP_OK,
			   om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
			      : "text/plain; version=0.0.4; charset=utf-8",
			   &p);
}

/* ---- /api/v1/targets and / ---- */

static enum MHD_Result serve_targets(struct http *h, struct MHD_Connection *c, struct req *r)
{
	struct page p;

	page_init(&p, 0);
	pthread_mutex_lock(&h->lock);
	targets_json(h->cfg.totals, cutoff(h, http_now_ns()), &p);
	pthread_mutex_unlock(&h->lock);
	return answer_page(c, r, MHD_HTTP_OK, "application/json", &p);
}

static enum MHD_Result serve_index(struct http *h, struct MHD_Connection *c, struct req *r)
{
	struct page p;

	page_init(&p, 0);
	pthread_mutex_lock(&h->lock);
	targets_index(h->cfg.totals, cutoff(h, http_now_ns()), &p);
	pthread_mutex_unlock(&h->lock);
	return answer_page(c, r, MHD_HTTP_OK, "text/html; charset=utf-8", &p);
}

/* ---- /api/v1/stacks ---- */

/* Parameter @name: NULL when absent; -EINVAL when too long. */
static int param(struct MHD_Connection *c, const char *name, const char **out, char *why,
		 size_t whylen)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	*out = v && *v ? v : NULL;
	if (v && strlen(v) > PARAM_MAX) {
		snprintf(why, whylen, "%s: longer than %d bytes", name, PARAM_MAX);
		return -EINVAL;
	}
	return 0;
}

static int parse_stacks_query(struct MHD_Connection *c, struct stacks_query *q, char *why,
			      size_t whylen)
{
	const char *from, *to, *format;
	uint64_t now = http_now_ns();

	memset(q, 0, sizeof(*q));
	if (param(c, "host", &q->sel.host, why, whylen) ||
	    param(c, "cgroup", &q->sel.cgroup, why, whylen) ||
	    param(c, "container", &q->sel.container, why, whylen) ||
	    param(c, "pod", &q->sel.pod, why, whylen) ||
	    param(c, "event", &q->sel.event, why, whylen) || param(c, "from", &from, why, whylen) ||
	    param(c, "to", &to, why, whylen) || param(c, "format", &format, why, whylen))
		return -EINVAL;
	q->sel.to_ns = now;
	if (to && exporter_parse_time(to, now, &q->sel.to_ns)) {
		snprintf(why, whylen,
			 "to: '%.60s' is not a time (Unix seconds, RFC 3339, now, or -DURATION "
			 "like -1h)",
			 to);
		return -EINVAL;
	}
	q->sel.from_ns = q->sel.to_ns > DEFAULT_SPAN_NS ? q->sel.to_ns - DEFAULT_SPAN_NS : 0;
	if (from && exporter_parse_time(from, now, &q->sel.from_ns)) {
		snprintf(why, whylen,
			 "from: '%.60s' is not a time (Unix seconds, RFC 3339, now, or -DURATION "
			 "like -1h)",
			 from);
		return -EINVAL;
	}
	if (q->sel.from_ns >= q->sel.to_ns) {
		snprintf(why, whylen, "from is not before to");
		return -EINVAL;
	}
	if (!format || !strcmp(format, "folded")) {
		q->format = FMT_FOLDED;
	} else if (!strcmp(format, "pprof")) {
		q->format = FMT_PPROF;
	} else if (!strcmp(format, "svg")) {
		q->format = FMT_SVG;
	} else {
		snprintf(why, whylen, "format: '%.60s': want folded, pprof or svg", format);
		return -EINVAL;
	}
	return 0;
}

struct sum_ctx {
	struct fold_set *fs;
	uint64_t frequency; /* the one rate of every time-based row, 0 if none or mixed */
	bool mixed;
	uint32_t *mods; /* scratch: a stack's module ids */
	size_t mods_cap;
};

/*
 * The store's "id id id" module text of a stack into x->mods; the count, or
 * 0 when there are none or the text is not one id per frame (then the
 * stack goes without, and pprof names its frames without a mapping).
 */
static size_t parse_modules(struct sum_ctx *x, const char *text)
{
	size_t n = 0;

	while (text && *text) {
		char *end;
		unsigned long long id;

		errno = 0;
		id = strtoull(text, &end, 10);
		if (errno || end == text || id > UINT32_MAX || (*end && *end != ' '))
			return 0;
		if (n == x->mods_cap) {
			size_t cap = x->mods_cap ? x->mods_cap * 2 : 64;
			uint32_t *m = realloc(x->mods, cap * sizeof(*m));

			if (!m)
				return 0;
			x->mods = m;
			x->mods_cap = cap;
		}
		x->mods[n++] = (uint32_t)id;
		text = *end ? end + 1 : end;
	}
	return n;
}

static bool time_based(const char *event)
{
	return !strcmp(event, "cpu-clock") || !strcmp(event, "task-clock");
}

static int sum_stack(void *arg, const struct store_stack *st)
{
	struct sum_ctx *x = arg;
	uint64_t ns = 0;

	if (time_based(st->event)) {
		/* cpu-clock counts ns: a sample is worth 1e9 / F at frequency F,
		 * or the period itself when sampled by period. */
		if (st->frequency)
			ns = (uint64_t)((double)st->count * 1e9 / (double)st->frequency);
		else if (st->period)
			ns = st->count * st->period;
		if (st->frequency && x->frequency && x->frequency != st->frequency)
			x->mixed = true;
		if (st->frequency)
			x->frequency = st->frequency;
	}
	size_t n = parse_modules(x, st->modules);

	return fold_set_add_mod(x->fs, st->folded, n ? x->mods : NULL, n, st->count, ns);
}

/* Module lookups for render_pprof(): strings kept until the render ends. */
struct module_ctx {
	struct store *store;
	char **keep;
	size_t n, cap;
};

static int module_of(void *arg, const char *frame, uint32_t module, struct render_module *out)
{
	struct module_ctx *x = arg;
	struct store_module m;

	if (x->n + 2 > x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 256;
		char **k = realloc(x->keep, cap * sizeof(*k));

		if (!k)
			return -ENOMEM;
		x->keep = k;
		x->cap = cap;
	}
	if (!module || store_module(x->store, module, &m))
		return -ENOENT;
	x->keep[x->n++] = m.path;
	x->keep[x->n++] = m.build_id;
	out->path = m.path;
	out->build_id = m.build_id;
	return 0;
}

/* "host=a cgroup=/x" naming the selection, for titles and file names. */
static void selection_text(const struct store_selection *s, struct page *p)
{
	const struct {
		const char *k, *v;
	} f[] = { { "host", s->host },	 { "cgroup", s->cgroup }, { "container", s->container },
		  { "pod", s->pod },	 { "event", s->event } };
	bool any = false;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (!f[i].v)
			continue;
		page_printf(p, "%s%s=", any ? " " : "", f[i].k);
		page_put(p, f[i].v);
		any = true;
	}
	if (!any)
		page_put(p, "all hosts");
}

static enum MHD_Result serve_svg(struct MHD_Connection *c, struct req *r,
				 const struct stacks_query *q, const struct fold_set *fs,
				 unsigned status)
{
	char from[40], to[40];
	struct page t, sub;
	char *title, *subtitle, *svg = NULL;
	size_t len = 0;
	FILE *f;
	int ret = -ENOMEM;

	targets_time(q->sel.from_ns, from, sizeof(from));
	targets_time(q->sel.to_ns, to, sizeof(to));
	page_init(&t, 0);
	page_put(&t, "cgperf: ");
	selection_text(&q->sel, &t);
	page_init(&sub, 0);
	page_printf(&sub, "%s to %s, %" PRIu64 " samples%s", from, to, fold_set_samples(fs),
		    fold_set_samples(fs) ? "" : ": no samples in this selection");
	title = page_take(&t, NULL);
	subtitle = page_take(&sub, NULL);
	f = title && subtitle ? open_memstream(&svg, &len) : NULL;
	if (f) {
		struct flame_opts o = { .title = title, .subtitle = subtitle };

		ret = render_svg(fs, &o, f);
		if (fclose(f))
			ret = -ENOMEM;
	}
	free(title);
	free(subtitle);
	if (ret || !svg) {
		free(svg);
		return answer(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot draw the flame graph\n");
	}
	return respond(c, r, status, "image/svg+xml", svg, len, true, NULL);
}

static enum MHD_Result serve_stacks(struct http *h, struct MHD_Connection *c, struct req *r)
{
	const struct stacks_query q = r->q; /* parsed by first_call() */
	struct sum_ctx x = { 0 };
	enum MHD_Result res;
	unsigned status = MHD_HTTP_OK;
	int ret;

	x.fs = fold_set_new();
	if (!x.fs)
		return answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	ret = store_stacks(h->cfg.store, &q.sel, sum_stack, &x);
	free(x.mods);
	if (ret) {
		fold_set_free(x.fs);
		log_kv(LOG_ERROR, "stacks query failed", "error", strerror(-ret), NULL);
		return answer(c, r, ret == -ENOMEM ? MHD_HTTP_SERVICE_UNAVAILABLE
						   : MHD_HTTP_INTERNAL_SERVER_ERROR,
			      "stacks query failed\n");
	}
	if (!fold_set_samples(x.fs)) {
		status = MHD_HTTP_NOT_FOUND;
		if (q.format != FMT_SVG) {
			fold_set_free(x.fs);
			return answer(c, r, status,
				      "no samples in this selection (host, cgroup, container, pod, "
				      "event) between from and to\n");
		}
	}
	if (q.format == FMT_SVG) {
		res = serve_svg(c, r, &q, x.fs, status);
	} else if (q.format == FMT_FOLDED) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		ret = f ? render_folded(x.fs, f) : -ENOMEM;
		if (f && fclose(f))
			ret = -ENOMEM;
		if (ret || !text) {
			free(text);
			res = answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
		} else {
			res = respond(c, r, MHD_HTTP_OK, "text/plain; charset=utf-8", text, len, true,
				      NULL);
		}
	} else {
		struct module_ctx mx = { .store = h->cfg.store };
		struct pprof_opts o = {
			.time_ns = q.sel.from_ns,
			.duration_ns = q.sel.to_ns - q.sel.from_ns,
			.period_ns = x.frequency && !x.mixed ? 1000000000u / x.frequency : 0,
		};
		uint8_t *buf = NULL;
		size_t len = 0;

		ret = render_pprof(x.fs, &o, module_of, &mx, &buf, &len);
		for (size_t i = 0; i < mx.n; i++)
			free(mx.keep[i]);
		free(mx.keep);
		/* Already gzip'd by its format: the same bytes for every client. */
		r->encodable = false;
		if (ret)
			res = answer(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot build the profile\n");
		else
			res = respond(c, r, MHD_HTTP_OK, "application/octet-stream", buf, len, true,
				      "attachment; filename=\"cgperf.pb.gz\"");
	}
	fold_set_free(x.fs);
	return res;
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
	return deliver(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, resp);
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

static void workq_depth(struct http *h, size_t out[2])
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
	"not found: POST /api/v1/push, GET /metrics, /api/v1/stacks, /api/v1/targets, /, "
	"/healthz\n";

/* The first call of a request: route it and check what the headers say. */
static enum MHD_Result first_call(struct http *h, struct MHD_Connection *c, struct req *r,
				  const char *url, const char *method)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	static const char *const gets[] = { "/metrics", "/healthz", "/api/v1/stacks",
					    "/api/v1/targets", "/" };

	for (size_t i = 0; i < sizeof(gets) / sizeof(gets[0]); i++) {
		static const enum route rt[] = { RT_METRICS, 0, RT_STACKS, RT_TARGETS, RT_INDEX };
		char why[256];

		if (strcmp(url, gets[i]))
			continue;
		if (!get)
			return answer(c, r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET\n");
		if (i == 1) /* /healthz: at once, whatever the queues hold */
			return answer(c, r, MHD_HTTP_OK, "ok\n");
		r->encodable = true;
		r->gzip = accepts_gzip(c);
		r->om = i == 0 && wants_openmetrics(c);
		r->route = rt[i];
		/* Whatever a worker needs of the request is read here: it never
		 * touches the connection. */
		if (r->route == RT_STACKS && parse_stacks_query(c, &r->q, why, sizeof(why)))
			return answerf(c, r, MHD_HTTP_BAD_REQUEST, "%s\n", why);
		return enqueue(h, &h->read_q, c, r);
	}
	if (strcmp(url, "/api/v1/push"))
		return answer(c, r, MHD_HTTP_NOT_FOUND, routes_text);
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

/* 429 with Retry-After: the series expiry frees room. */
static enum MHD_Result answer_retry(struct MHD_Connection *c, struct req *r, struct http *h,
				    const char *why)
{
	char text[600], after[32];
	struct MHD_Response *resp;
	uint64_t secs = h->cfg.series_expiry_ns / 1000000000u;

	r->done = true;
	snprintf(text, sizeof(text), "%s\n", why);
	snprintf(after, sizeof(after), "%" PRIu64, secs ? secs : 1);
	resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
	MHD_add_response_header(resp, "Retry-After", after);
	return deliver(c, r, MHD_HTTP_TOO_MANY_REQUESTS, resp);
}

/* The last call of a push: the whole body is here. Decode it on the loop
 * (bounded work), then queue it for the store thread. */
static enum MHD_Result finish_push(struct http *h, struct MHD_Connection *c, struct req *r)
{
	char err[256] = "";
	Cgperf__V1__Batch *m;

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
		count_reject(h, e == EMSGSIZE ? REJ_TOO_LARGE : REJ_BAD_REQUEST, err);
		return answerf(c, r,
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
		log_kv(LOG_WARN, "push rejected", "reason", reject_name[REJ_SERIES_LIMIT], "error",
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
			if (totals_add_batch(h->cfg.totals, rs[i]->m, now))
				log_kv(LOG_ERROR, "out of memory: /metrics totals incomplete", NULL);
		} else if (res[j] == 1) {
			h->duplicates++;
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
		if (ret < 0)
			answerf(NULL, rs[i], MHD_HTTP_INTERNAL_SERVER_ERROR, "store failed: %s\n",
				reason);
		else
			answer(NULL, rs[i], MHD_HTTP_OK, ret ? "duplicate\n" : "stored\n");
		wire_batch_decoded_free(m);
		rs[i]->m = NULL;
	}
}

/* A reader thread: build the answer of a read route. */
static void serve_read(struct http *h, struct req **rs, size_t n)
{
	struct req *r = rs[0];

	switch (r->route) {
	case RT_METRICS: serve_metrics(h, NULL, r); break;
	case RT_STACKS: serve_stacks(h, NULL, r); break;
	case RT_TARGETS: serve_targets(h, NULL, r); break;
	default: serve_index(h, NULL, r); break;
	}
}

int http_expire(struct http *h, uint64_t now)
{
	uint64_t before = cutoff(h, now);
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
		return deliver(c, r, r->status, resp);
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
	if (cfg->token && asprintf(&h->auth, "Bearer %s", cfg->token) < 0) {
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->ingest, NULL);
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
				  serve_read);
	if (ret) {
		snprintf(err, errlen, "cannot start worker threads: %s", strerror(-ret));
		goto err_threads;
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
		goto err_threads;
	}
	return h;

err_threads:
	workq_stop(&h->store_q);
	workq_stop(&h->read_q);
	workq_release(&h->store_q);
	workq_release(&h->read_q);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->ingest);
	free(h->auth);
	free(h);
	errno = -ret;
	return NULL;
}

void http_stop(struct http *h)
{
	if (!h)
		return;
	/* Queued requests are answered first: MHD must not stop with a
	 * connection suspended. Requests that come meanwhile get 503. */
	workq_stop(&h->store_q);
	workq_stop(&h->read_q);
	MHD_stop_daemon(h->d);
	workq_release(&h->store_q);
	workq_release(&h->read_q);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->ingest);
	free(h->auth);
	free(h);
}
