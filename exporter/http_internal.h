/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_HTTP_INTERNAL_H
#define CGPERF_EXPORTER_HTTP_INTERNAL_H

/*
 * Shared by the three files of the exporter's HTTP service, not by the rest
 * of the exporter (its interface is http.h):
 *   http.c         the server: event loops, the per-request state across
 *                  libmicrohttpd's calls, the work queues and their threads,
 *                  ingest of pushes into the store and the totals
 *   http_answer.c  building answers: Accept-Encoding, gzip'd bodies, text
 *                  answers, sent at once or kept for a deferred request
 *   routes.c       the read routes a reader thread serves: /metrics,
 *                  /api/v1/stacks, /api/v1/targets and the index page
 *                  (/api/v1/heatmap in routes_heatmap.c, /api/v1/series in
 *                  routes_series.c, the JSON form of the stacks and
 *                  /api/v1/diff in routes_diff.c)
 * A struct req belongs to its connection (http.c frees it in the completed
 * callback); while deferred, one worker at a time builds its answer.
 */

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wire/wire.h"
#include "exporter/http.h"
#include "exporter/store/store.h"

struct page;
struct fold_set;
struct hashmap;
struct render_module;

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
/* How old the totals of a shared store may be when a read answers. */
#define SHARED_TOTALS_TTL_NS 1000000000ull
/* Read requests waiting for a reader thread. */
#define READ_QUEUE_MAX 256u
/* Retry-After of a 503 for a full queue, seconds. */
#define BUSY_RETRY_S "1"
/* Retry-After of a push the store could not reach (503). */
#define STORE_RETRY_S 5u
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
/* The reasons' label values in cgperf_exporter_rejects_total. */
extern const char *const http_reject_name[REJ_N];

enum route { RT_PUSH, RT_METRICS, RT_STACKS, RT_TARGETS, RT_INDEX, RT_HEATMAP, RT_SERIES, RT_DIFF };

enum format { FMT_FOLDED, FMT_PPROF, FMT_SVG, FMT_JSON };

struct stacks_query {
	struct store_selection sel;
	enum format format;
	const char *probe; /* /api/v1/heatmap's probe label */
	/* /api/v1/series: the step, how many series, each step's increase
	 * instead of a rate per second (rate=0), the factor from the stored
	 * counter to the answer's unit and the event label answered (cpu:
	 * task-clock in seconds) */
	uint64_t step_ns;
	size_t top;
	bool increase;
	double scale;
	const char *event_label;
	/* /api/v1/diff: the base's selection (the target's is sel), and
	 * whether the SVG compares shares (normalize=1) or counts */
	struct store_selection base;
	bool normalize;
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
	/* A shared store: the totals are reloaded from it when older than
	 * SHARED_TOTALS_TTL_NS or after a local commit (stale); one reload at
	 * a time under `reload`. */
	pthread_mutex_t reload;
	uint64_t loaded_ns;
	bool stale;
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
	struct stacks_query q;	/* RT_STACKS, HEATMAP, SERIES, DIFF: parsed before queueing */
	Cgperf__V1__Batch *m;	/* RT_PUSH, decoded before queueing */
	uint64_t queued_bytes;	/* of this request in its queue's figure */
	struct MHD_Connection *conn;
	struct req *next;
	struct MHD_Response *resp; /* the answer, once built */
	unsigned status;
};

/* The bound of what a query asks: now minus series_expiry, or 0. */
static inline uint64_t http_cutoff(const struct http *h, uint64_t now)
{
	return now > h->cfg.series_expiry_ns ? now - h->cfg.series_expiry_ns : 0;
}

/* Pushes and reads waiting in the queues (out[0] ingest, out[1] read). */
void http_workq_depth(struct http *h, size_t out[2]);
/* On a shared store, bring the totals up to what the store holds (at most
 * SHARED_TOTALS_TTL_NS old, and with every local commit). Outside the
 * locks; 0 or the -errno of loading (the old totals then stay). */
int http_totals_refresh(struct http *h);

/* ---- answers (http_answer.c) ---- */

/* Does the request's Accept-Encoding take gzip? */
bool http_accepts_gzip(struct MHD_Connection *c);
/* Send @resp with @status now, or keep it for the handler's next call when
 * the request is deferred (then @c may be NULL). Takes over @resp. */
enum MHD_Result http_deliver(struct MHD_Connection *c, struct req *r, unsigned status,
			     struct MHD_Response *resp);
/* Answer @len bytes at @body of @type (taken over when @owned, else
 * copied), gzip'd when the request is encodable and the client takes
 * gzip; @disposition is a Content-Disposition or NULL. */
enum MHD_Result http_respond(struct MHD_Connection *c, struct req *r, unsigned status,
			     const char *type, void *body, size_t len, bool owned,
			     const char *disposition);
/* Answer plain text. */
enum MHD_Result http_answer(struct MHD_Connection *c, struct req *r, unsigned status,
			    const char *text);
/* Answer the text of @p (taken), or 503 when building it ran out of memory. */
enum MHD_Result http_answer_page(struct MHD_Connection *c, struct req *r, unsigned status,
				 const char *type, struct page *p);
/* Answer plain text from a format, cut at 600 bytes. */
__attribute__((format(printf, 4, 5))) enum MHD_Result
http_answerf(struct MHD_Connection *c, struct req *r, unsigned status, const char *fmt, ...);

/* ---- read routes (routes.c) ---- */

/* Does the Accept header ask for OpenMetrics? */
bool routes_wants_openmetrics(struct MHD_Connection *c);
/* The selection and format of GET /api/v1/stacks from its query string:
 * 0, or -EINVAL with the reason in @why. */
int routes_parse_stacks_query(struct MHD_Connection *c, struct stacks_query *q, char *why,
			      size_t whylen);
/* The selection of a read route (host, cgroup, container, pod, event,
 * probe, from, to) into @q; 0 or -EINVAL with why. */
int routes_parse_selection(struct MHD_Connection *c, struct stacks_query *q, char *why,
			   size_t whylen);
/* Draws an SVG titled @title and @subtitle into @f: 0 or -errno. */
typedef int (*routes_draw_fn)(const void *arg, const char *title, const char *subtitle, FILE *f);
/* Answer @status with the SVG @draw(@arg) writes, titled with the texts of
 * pages @t and @sub (taken); 500 when it cannot be drawn. */
/* @fs as text written by @render (render_folded, render_folded_diff), 200;
 * 503 when out of memory. */
enum MHD_Result routes_folded_text(struct MHD_Connection *c, struct req *r,
				   const struct fold_set *fs,
				   int (*render)(const struct fold_set *fs, FILE *out));
enum MHD_Result routes_svg(struct MHD_Connection *c, struct req *r, unsigned status,
			   struct page *t, struct page *sub, routes_draw_fn draw, const void *arg);
/* "host=H cgroup=C ..." of a selection's set fields ("all hosts" when none). */
void routes_selection_text(const struct store_selection *s, struct page *p);
/* Format parameter @v (NULL: the first) as one of the @n @names into
 * *@out (@fmts' value); 0, or -EINVAL with why ("want a, b or c"). */
int routes_format(const char *v, const char *const *names, const enum format *fmts, size_t n,
		  enum format *out, char *why, size_t whylen);
/* GET /api/v1/heatmap (routes_heatmap.c): its query, and its answer. */
int routes_parse_heatmap_query(struct MHD_Connection *c, struct stacks_query *q, char *why,
			       size_t whylen);
enum MHD_Result routes_serve_heatmap(struct http *h, struct MHD_Connection *c, struct req *r);
/* GET /api/v1/series (routes_series.c): its query (400 with why for a bad
 * step, top or rate), and its answer. */
int routes_parse_series_query(struct MHD_Connection *c, struct stacks_query *q, char *why,
			      size_t whylen);
enum MHD_Result routes_serve_series(struct http *h, struct MHD_Connection *c, struct req *r);

/* Stacks of one selection summed into a fold_set (routes.c). */
struct routes_rate {
	char *event;
	uint64_t frequency, period; /* as stored: 0 unknown */
	uint64_t samples, value_ns;
};

struct routes_sum {
	struct fold_set *fs; /* the caller's */
	bool base;	     /* add to the set's base counts (a diff's base side) */
	bool all_events;     /* no event= asked: off-CPU rows (microseconds) left out */
	uint64_t frequency;  /* the one rate of every time-based row, 0 if none or mixed */
	bool mixed;
	uint64_t samples, value_ns; /* summed, what was added */
	/* per distinct (event, frequency, period), in order of first row */
	struct routes_rate *rates;
	size_t nrates, caprates;
	struct hashmap *rate_of; /* "event\0" + frequency + period -> index + 1 */
	uint32_t *mods; /* scratch: a stack's module ids */
	size_t mods_cap;
};

/* Sum the stacks of @sel into @x->fs (its target or, with @x->base, base
 * counts): 0, or the store's -errno. Release @x with routes_sum_release(). */
int routes_sum_stacks(struct http *h, const struct store_selection *sel, struct routes_sum *x);
void routes_sum_release(struct routes_sum *x);
/* The module lookups of render_pprof() and render_json() over the store;
 * routes_modules_release() frees what they kept. */
struct routes_modules {
	struct store *store;
	char **keep;
	size_t n, cap;
};
int routes_module_of(void *arg, const char *frame, uint32_t module, struct render_module *out);
void routes_modules_release(struct routes_modules *m);

/* /api/v1/stacks?format=json and /api/v1/diff (routes_diff.c). */
enum MHD_Result routes_serve_stacks_json(struct http *h, struct MHD_Connection *c, struct req *r,
					 const struct routes_sum *x);
int routes_parse_diff_query(struct MHD_Connection *c, struct stacks_query *q, char *why,
			    size_t whylen);
enum MHD_Result routes_serve_diff(struct http *h, struct MHD_Connection *c, struct req *r);
/* The base selection of a diff: each base_NAME parameter, or the
 * target's NAME when absent; 0 or -EINVAL with why. */
int routes_parse_base(struct MHD_Connection *c, const struct store_selection *target,
		      struct store_selection *base, char *why, size_t whylen);

/* A reader thread's work: build the answer of the read route of rs[0]
 * (@n is 1). */
void routes_serve(struct http *h, struct req **rs, size_t n);

#endif
