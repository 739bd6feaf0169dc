// SPDX-License-Identifier: MIT
/*
 * Answers of the exporter's HTTP service: what Accept-Encoding says of
 * gzip, the gzip'd body, and one path for every answer (sent now, or kept
 * in the request while it is deferred to a worker thread and its
 * connection suspended). See http_internal.h.
 */
#include "exporter/http_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/gzip.h"
#include "exporter/page.h"


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
bool http_accepts_gzip(struct MHD_Connection *c)
{
	struct accept_gzip a = { .gzip = -1, .star = -1 };

	MHD_get_connection_values(c, MHD_HEADER_KIND, accept_header, &a);
	return a.gzip >= 0 ? a.gzip > 0 : a.star > 0;
}

/* Send @resp with @status now, or keep it for the handler's next call when
 * the request is deferred. Takes over @resp. */
enum MHD_Result http_deliver(struct MHD_Connection *c, struct req *r, unsigned status,
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
enum MHD_Result http_respond(struct MHD_Connection *c, struct req *r, unsigned status,
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
	return http_deliver(c, r, status, resp);
}

enum MHD_Result http_answer(struct MHD_Connection *c, struct req *r, unsigned status,
			      const char *text)
{
	return http_respond(c, r, status, "text/plain; charset=utf-8", (void *)text, strlen(text), false,
		       NULL);
}

/* Answer with the text of @p, or 503 when building it ran out of memory. */
enum MHD_Result http_answer_page(struct MHD_Connection *c, struct req *r, unsigned status,
				   const char *type, struct page *p)
{
	size_t len;
	char *text = page_take(p, &len);

	if (!text)
		return http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	return http_respond(c, r, status, type, text, len, true, NULL);
}

enum MHD_Result
http_answerf(struct MHD_Connection *c, struct req *r, unsigned status, const char *fmt, ...)
{
	char text[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return http_answer(c, r, status, text);
}
