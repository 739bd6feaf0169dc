// SPDX-License-Identifier: MIT
/*
 * rw_encode: from exposition text to a remote_write body.
 *
 * Why parse text we wrote: the text is the one place where the exporter
 * names its metrics and escapes its labels (exporter/totals_expo.c over
 * lib/prom.h). Reading it back gives the remote_write series the same names
 * and labels by construction, histograms included (their _bucket, _sum and
 * _count samples are the classic histogram series remote_write 1.0 carries),
 * at the cost of one pass over text the exporter renders anyway: 110,000
 * series (26 MB of text, 3.6 MB once snappy'd) take about 0.3 s on a 2-vCPU
 * VM, once per remote_write interval, outside the totals' lock. It is also
 * what Prometheus does between a scrape and its own remote_write.
 *
 * The grammar read (text format 0.0.4, as lib/prom.h writes it):
 *   name [ "{" lname "=" '"' escaped value '"' { "," ... } [","] "}" ] SP value [SP timestamp]
 * where the value escapes are \\, \" and \n. Everything is copied into one
 * arena per request (label strings point into it), then the protobuf-c
 * structures are packed and the packed bytes snappy-compressed.
 */
#include "exporter/rw_encode.h"

#include <errno.h>
#include <math.h>
#include <snappy-c.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "proto/remote_write.pb-c.h"

struct req {
	Prometheus__TimeSeries *ts;
	Prometheus__TimeSeries **tsp;
	Prometheus__Sample *samples;
	Prometheus__Sample **samplep;
	Prometheus__Label *labels;
	Prometheus__Label **labelp;
	char *arena; /* names and unescaped values, NUL-terminated */
	size_t nts, nlabels, arena_len;
};

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

static const char *skip_name(const char *p, const char *end)
{
	if (p >= end || !name_char(*p, true))
		return NULL;
	while (p < end && name_char(*p, false))
		p++;
	return p;
}

/* Copy @n bytes at @s into the arena, NUL-terminated. */
static char *arena_put(struct req *r, const char *s, size_t n)
{
	char *d = r->arena + r->arena_len;

	memcpy(d, s, n);
	d[n] = '\0';
	r->arena_len += n + 1;
	return d;
}

static Prometheus__Label *label_new(struct req *r, char *name, char *value)
{
	Prometheus__Label *l = &r->labels[r->nlabels++];

	prometheus__label__init(l);
	l->name = name;
	l->value = value;
	return l;
}

/* A quoted label value at *@pp (past the quote); unescaped into the arena. */
static char *label_value(struct req *r, const char **pp, const char *end)
{
	const char *p = *pp;
	char *d = r->arena + r->arena_len, *start = d;

	for (; p < end && *p != '"'; p++) {
		if (*p == '\\' && p + 1 < end) {
			p++;
			*d++ = *p == 'n' ? '\n' : *p;
		} else if (*p == '\n') {
			return NULL;
		} else {
			*d++ = *p;
		}
	}
	if (p >= end)
		return NULL;
	*d = '\0';
	r->arena_len += (size_t)(d - start) + 1;
	*pp = p + 1;
	return start;
}

static int cmp_label(const void *a, const void *b)
{
	const Prometheus__Label *x = *(Prometheus__Label *const *)a, *y = *(Prometheus__Label *const *)b;

	return strcmp(x->name, y->name);
}

/* The {...} of a sample line at *@pp; adds the labels not overridden by
 * @extra. */
static int parse_labels(struct req *r, const char **pp, const char *end, const struct rw_label *extra,
			size_t nextra)
{
	const char *p = *pp;

	while (p < end && *p != '}') {
		const char *n0 = p, *n1 = skip_name(p, end);
		bool dropped = false;
		char *name, *value;

		if (!n1 || n1 + 1 >= end || n1[0] != '=' || n1[1] != '"')
			return -EINVAL;
		name = arena_put(r, n0, (size_t)(n1 - n0));
		p = n1 + 2;
		value = label_value(r, &p, end);
		if (!value)
			return -EINVAL;
		for (size_t i = 0; i < nextra; i++)
			dropped |= !strcmp(extra[i].name, name);
		if (!dropped)
			label_new(r, name, value);
		if (p < end && *p == ',')
			p++;
	}
	if (p >= end)
		return -EINVAL;
	*pp = p + 1;
	return 0;
}

/* One sample line [@p, @end) into a new series. */
static int parse_line(struct req *r, const char *p, const char *end, const struct rw_label *extra,
		      size_t nextra, int64_t ts_ms)
{
	Prometheus__TimeSeries *ts = &r->ts[r->nts];
	Prometheus__Sample *s = &r->samples[r->nts];
	size_t first = r->nlabels;
	const char *n1 = skip_name(p, end);
	char num[64], *numend;
	size_t k;
	int ret;

	if (!n1)
		return -EINVAL;
	label_new(r, arena_put(r, "__name__", 8), arena_put(r, p, (size_t)(n1 - p)));
	p = n1;
	if (p < end && *p == '{') {
		p++;
		ret = parse_labels(r, &p, end, extra, nextra);
		if (ret)
			return ret;
	}
	if (p >= end || *p != ' ')
		return -EINVAL;
	p++;
	for (k = 0; p + k < end && p[k] != ' ' && k < sizeof(num) - 1; k++)
		num[k] = p[k];
	num[k] = '\0';
	prometheus__sample__init(s);
	s->value = strtod(num, &numend);
	if (!k || *numend)
		return -EINVAL;
	s->timestamp = ts_ms;
	for (size_t i = 0; i < nextra; i++)
		label_new(r, (char *)extra[i].name, (char *)extra[i].value);

	prometheus__time_series__init(ts);
	ts->n_labels = r->nlabels - first;
	ts->labels = &r->labelp[first];
	for (size_t i = first; i < r->nlabels; i++)
		r->labelp[i] = &r->labels[i];
	qsort(ts->labels, ts->n_labels, sizeof(ts->labels[0]), cmp_label);
	r->samplep[r->nts] = s;
	ts->n_samples = 1;
	ts->samples = &r->samplep[r->nts];
	r->tsp[r->nts] = ts;
	r->nts++;
	return 0;
}

/* Upper bounds from the text: lines, and label pairs ('=' signs). */
static int req_alloc(struct req *r, const char *text, size_t len, size_t nextra)
{
	size_t lines = 1, eqs = 0;

	for (size_t i = 0; i < len; i++) {
		lines += text[i] == '\n';
		eqs += text[i] == '=';
	}
	if (lines > RW_ENCODE_SERIES_MAX)
		return -E2BIG;
	size_t nl = eqs + lines * (1 + nextra);

	r->ts = calloc(lines, sizeof(*r->ts));
	r->tsp = calloc(lines, sizeof(*r->tsp));
	r->samples = calloc(lines, sizeof(*r->samples));
	r->samplep = calloc(lines, sizeof(*r->samplep));
	r->labels = calloc(nl, sizeof(*r->labels));
	r->labelp = calloc(nl, sizeof(*r->labelp));
	/* Every byte at most once, plus "__name__" and a NUL per label. */
	r->arena = malloc(len + nl * 2 + lines * 10 + 1);
	if (!r->ts || !r->tsp || !r->samples || !r->samplep || !r->labels || !r->labelp || !r->arena)
		return -ENOMEM;
	return 0;
}

static void req_release(struct req *r)
{
	free(r->ts);
	free(r->tsp);
	free(r->samples);
	free(r->samplep);
	free(r->labels);
	free(r->labelp);
	free(r->arena);
}

/* Pack @r and snappy it into *@out. */
static int compress(const struct req *r, void **out, size_t *outlen)
{
	Prometheus__WriteRequest wr = PROMETHEUS__WRITE_REQUEST__INIT;
	size_t plen, clen;
	uint8_t *packed;
	char *c;
	int ret = 0;

	wr.n_timeseries = r->nts;
	wr.timeseries = r->tsp;
	plen = prometheus__write_request__get_packed_size(&wr);
	packed = malloc(plen ? plen : 1);
	clen = snappy_max_compressed_length(plen);
	c = malloc(clen);
	if (!packed || !c) {
		ret = -ENOMEM;
		goto out;
	}
	prometheus__write_request__pack(&wr, packed);
	if (snappy_compress((const char *)packed, plen, c, &clen) != SNAPPY_OK) {
		ret = -EINVAL;
		goto out;
	}
	*out = c;
	*outlen = clen;
	c = NULL;
out:
	free(packed);
	free(c);
	return ret;
}

int rw_encode(const char *text, size_t len, const struct rw_label *extra, size_t nextra, int64_t ts_ms,
	      void **out, size_t *outlen, size_t *nseries)
{
	struct req r = { 0 };
	size_t line = 0;
	int ret = req_alloc(&r, text, len, nextra);

	for (const char *p = text, *end = text + len; !ret && p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if (eol > p && *p != '#')
			ret = parse_line(&r, p, eol, extra, nextra, ts_ms);
		p = eol + 1;
	}
	if (ret == -EINVAL) {
		*nseries = line;
		goto out;
	}
	if (!ret)
		ret = compress(&r, out, outlen);
	if (!ret)
		*nseries = r.nts;
out:
	req_release(&r);
	return ret;
}

int rw_uncompress(const void *in, size_t len, void **out, size_t *outlen)
{
	size_t n;
	char *buf;

	if (snappy_uncompressed_length(in, len, &n) != SNAPPY_OK)
		return -EINVAL;
	buf = malloc(n ? n : 1);
	if (!buf)
		return -ENOMEM;
	if (snappy_uncompress(in, len, buf, &n) != SNAPPY_OK) {
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	*outlen = n;
	return 0;
}
