// SPDX-License-Identifier: MIT
/*
 * The ClickHouse store's client: statements over the server's HTTP
 * interface with libcurl (POST, the statement in the body, or in ?query=
 * when the body carries the rows of an INSERT), and the TabSeparated text
 * both ways. An answer is read into a capped page; a server that cannot
 * be reached, times out, or says a shard is unreachable or it is too busy
 * gives -EAGAIN, which the exporter turns into 503 + Retry-After.
 * (lib/httpc is the senders' client: it keeps 200 bytes of an answer,
 * where a query needs all of it, and sorts answers for retry loops that
 * this store leaves to the agent.)
 */
#include "exporter/store/store_clickhouse_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONNECT_TIMEOUT_MS 3000L
#define REQUEST_TIMEOUT_MS 60000L

int ch_conn_init(struct ch_store *s, struct ch_conn *c, const char *url)
{
	CURL *h = curl_easy_init();

	if (!h)
		return -ENOMEM;
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (s->user) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, s->user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, s->password ? s->password : "");
	}
	c->curl = h;
	c->url = url ? url : s->url;
	pthread_mutex_init(&c->lock, NULL);
	return 0;
}

void ch_conn_release(struct ch_conn *c)
{
	if (!c->curl)
		return;
	curl_easy_cleanup(c->curl);
	pthread_mutex_destroy(&c->lock);
	c->curl = NULL;
}

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct page *p = arg;

	page_putn(p, data, size * n);
	return page_failed(p) ? 0 : size * n;
}

/* Exception codes that say "not now" rather than "wrong": timeouts,
 * network errors to a shard, too many queries or parts. */
static bool transient(const char *answer)
{
	static const int codes[] = { 159, 164, 202, 209, 210, 252, 279, 285, 319, 394 };
	const char *c = strstr(answer, "Code: ");
	long code;

	if (!c)
		return false;
	code = strtol(c + 6, NULL, 10);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (code == codes[i])
			return true;
	return false;
}

/* The first line of @text, at most 200 bytes of it, into @err. */
static void first_line(const char *what, const char *text, size_t len, char *err, size_t errlen)
{
	size_t n = 0;

	while (n < len && n < 200 && text[n] != '\n')
		n++;
	snprintf(err, errlen, "clickhouse: %s%.*s", what, (int)n, text);
}

/* One statement in flight on a connection. */
struct ch_req {
	struct page ans, url;
	struct page *out; /* where the answer goes: the caller's page or ans */
	char *q;	  /* the escaped statement of an INSERT */
};

/* Set up @c's handle for @sql (see ch_run()). 0 or -ENOMEM. */
static int req_setup(struct ch_store *s, struct ch_conn *c, struct ch_req *r, const char *sql,
		     const char *body, size_t len, struct page *out)
{
	CURL *h = c->curl;

	page_init(&r->ans, CH_ANSWER_MAX);
	page_init(&r->url, 0);
	r->out = out ? out : &r->ans;
	r->q = NULL;
	page_put(&r->url, c->url);
	page_put(&r->url, "/?");
	if (s->cluster)
		page_put(&r->url, "insert_distributed_sync=1&");
	if (body) {
		r->q = curl_easy_escape(h, sql, 0);
		if (!r->q)
			return -ENOMEM;
		page_put(&r->url, "query=");
		page_put(&r->url, r->q);
	}
	if (!ch_text(&r->url))
		return -ENOMEM;
	curl_easy_setopt(h, CURLOPT_URL, r->url.buf);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : sql);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : strlen(sql)));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r->out);
	return 0;
}

/* What the transfer of @r on @c that ended with @rc means; frees @r. */
static int req_finish(struct ch_conn *c, struct ch_req *r, CURLcode rc, char *err, size_t errlen)
{
	struct page *a = r->out;
	long status = 0;
	int ret = 0;

	if (rc != CURLE_OK) {
		if (a != &r->ans && page_failed(a)) {
			snprintf(err, errlen, "clickhouse: answer over %zu bytes", CH_ANSWER_MAX);
			ret = -EFBIG;
		} else {
			snprintf(err, errlen, "clickhouse: %s: %s", c->url, curl_easy_strerror(rc));
			ret = -EAGAIN;
		}
		goto out;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		char st[32];

		snprintf(st, sizeof(st), "HTTP %ld: ", status);
		page_putc(a, '\0'); /* NUL-terminated for transient() */
		first_line(st, a->buf ? a->buf : "", a->len, err, errlen);
		ret = status == 503 || (a->buf && transient(a->buf)) ? -EAGAIN : -EIO;
	}
out:
	curl_free(r->q);
	page_release(&r->url);
	page_release(&r->ans);
	return ret;
}

int ch_run(struct ch_store *s, struct ch_conn *c, const char *sql, const char *body, size_t len,
	   struct page *out, char *err, size_t errlen)
{
	struct ch_req r;
	int ret = req_setup(s, c, &r, sql, body, len, out);

	if (ret) {
		snprintf(err, errlen, "out of memory");
		req_finish(c, &r, CURLE_OK, err, errlen);
		return ret;
	}
	return req_finish(c, &r, curl_easy_perform(c->curl), err, errlen);
}

/* Keep the first failure, an -EAGAIN over any other. */
static void keep_worst(int *ret, char *err, size_t errlen, int r, const char *why)
{
	if (!r || (*ret && (*ret == -EAGAIN || r != -EAGAIN)))
		return;
	*ret = r;
	snprintf(err, errlen, "%s", why);
}

int ch_run_parallel(struct ch_store *s, const char *const *sql, const char *const *body,
		    const size_t *len, size_t n, char *err, size_t errlen)
{
	struct ch_req r[CH_PARALLEL_MAX];
	CURLcode rc[CH_PARALLEL_MAX];
	char why[256];
	CURLM *m = s->multi;
	size_t k = 0;
	int ret = 0, running = 1;
	CURLMsg *msg;

	if (!m || n > s->npar) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (; k < n; k++) {
		rc[k] = CURLE_AGAIN; /* not finished: try again later */
		if (req_setup(s, &s->par[k], &r[k], sql[k], body[k], len[k], NULL) ||
		    curl_multi_add_handle(m, s->par[k].curl) != CURLM_OK) {
			rc[k] = CURLE_OUT_OF_MEMORY;
			k++;
			break;
		}
	}
	while (running && curl_multi_perform(m, &running) == CURLM_OK && running)
		if (curl_multi_wait(m, NULL, 0, 1000, NULL) != CURLM_OK)
			break;
	while ((msg = curl_multi_info_read(m, &running)))
		for (size_t i = 0; msg->msg == CURLMSG_DONE && i < k; i++)
			if (msg->easy_handle == s->par[i].curl)
				rc[i] = msg->data.result;
	for (size_t i = 0; i < k; i++) {
		curl_multi_remove_handle(m, s->par[i].curl);
		keep_worst(&ret, err, errlen, req_finish(&s->par[i], &r[i], rc[i], why, sizeof(why)),
			   why);
	}
	if (!ret && k < n) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
	}
	return ret;
}

char *ch_text(struct page *p)
{
	static char empty[1];

	if (page_failed(p))
		return NULL;
	if (!p->buf)
		return empty;
	p->buf[p->len] = '\0'; /* page keeps a byte of room past len */
	return p->buf;
}

static const char *tsv_escape(unsigned char c)
{
	switch (c) {
	case '\\': return "\\\\";
	case '\t': return "\\t";
	case '\n': return "\\n";
	case '\r': return "\\r";
	default: return NULL;
	}
}

void ch_tsv(struct page *p, const char *v)
{
	page_escaped(p, v, tsv_escape);
}

void ch_quote(struct page *p, const char *v)
{
	page_putc(p, '\'');
	for (; *v; v++) {
		if (*v == '\\' || *v == '\'')
			page_putc(p, '\\');
		page_putc(p, *v);
	}
	page_putc(p, '\'');
}

/* Unescape the field [@s, @e) in place; NUL-terminated. */
static void unescape(char *s, char *e)
{
	char *o = s;

	for (; s < e; s++) {
		if (*s != '\\' || s + 1 == e) {
			*o++ = *s;
			continue;
		}
		s++;
		*o++ = *s == 't' ? '\t' : *s == 'n' ? '\n' : *s == 'r' ? '\r' : *s == '0' ? '\0'
		     : *s == 'b' ? '\b' : *s == 'f' ? '\f' : *s;
	}
	*o = '\0';
}

size_t ch_row(char **cur, char **f, size_t nf)
{
	static char none[1];
	char *s = *cur, *nl, *end;
	size_t n = 0;

	if (!s || !*s)
		return 0;
	nl = strchr(s, '\n');
	end = nl ? nl : s + strlen(s);
	*cur = nl ? nl + 1 : end;
	while (n < nf) {
		char *tab = memchr(s, '\t', (size_t)(end - s));
		char *fe = tab ? tab : end;

		f[n++] = s;
		unescape(s, fe);
		if (!tab)
			break;
		s = tab + 1;
	}
	for (size_t i = n; i < nf; i++)
		f[i] = none;
	return n;
}

uint64_t ch_u64(const char *s)
{
	return strtoull(s, NULL, 10);
}

size_t ch_words(const char *s, uint64_t *w, size_t n)
{
	size_t k = 0;
	char *e;

	if (*s == '[')
		s++;
	while (k < n && *s && *s != ']') {
		uint64_t v = strtoull(s, &e, 10);

		if (e == s)
			break;
		w[k++] = v;
		s = *e == ',' ? e + 1 : e;
	}
	return k;
}
