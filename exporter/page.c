// SPDX-License-Identifier: MIT
#include "exporter/page.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/prom.h"

#define PAGE_MAX_DEFAULT ((size_t)1 << 30)

void page_init(struct page *p, size_t max)
{
	memset(p, 0, sizeof(*p));
	p->max = max ? max : PAGE_MAX_DEFAULT;
}

void page_release(struct page *p)
{
	free(p->buf);
	p->buf = NULL;
	p->len = p->cap = 0;
}

bool page_failed(const struct page *p)
{
	return p->failed;
}

char *page_take(struct page *p, size_t *len)
{
	char *b;

	if (p->failed) {
		page_release(p);
		return NULL;
	}
	if (!p->buf) {
		p->buf = malloc(1);
		if (!p->buf)
			return NULL;
	}
	p->buf[p->len] = '\0';
	b = p->buf;
	if (len)
		*len = p->len;
	p->buf = NULL;
	p->len = p->cap = 0;
	return b;
}

/* Room for @n more bytes and the NUL. */
static bool reserve(struct page *p, size_t n)
{
	size_t want, cap;
	char *b;

	if (p->failed)
		return false;
	if (n > p->max || p->len > p->max - n) {
		p->failed = true;
		return false;
	}
	want = p->len + n + 1;
	if (want <= p->cap)
		return true;
	cap = p->cap ? p->cap : 4096;
	while (cap < want)
		cap *= 2;
	b = realloc(p->buf, cap);
	if (!b) {
		p->failed = true;
		return false;
	}
	p->buf = b;
	p->cap = cap;
	return true;
}

void page_reserve(struct page *p, size_t n)
{
	reserve(p, n);
}

void page_putn(struct page *p, const char *s, size_t n)
{
	if (!reserve(p, n))
		return;
	memcpy(p->buf + p->len, s, n);
	p->len += n;
}

void page_put(struct page *p, const char *s)
{
	page_putn(p, s, strlen(s));
}

void page_putc(struct page *p, char c)
{
	if (!reserve(p, 1))
		return;
	p->buf[p->len++] = c;
}

void page_printf(struct page *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(p->buf ? p->buf + p->len : NULL, p->buf ? p->cap - p->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		p->failed = true;
		return;
	}
	if (p->buf && (size_t)n < p->cap - p->len) {
		p->len += (size_t)n;
		return;
	}
	if (!reserve(p, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(p->buf + p->len, p->cap - p->len, fmt, ap);
	va_end(ap);
	p->len += (size_t)n;
}

void page_u64(struct page *p, uint64_t v)
{
	char t[24];
	size_t i = sizeof(t);

	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	page_putn(p, t + i, sizeof(t) - i);
}

void page_double(struct page *p, double v)
{
	if (isnan(v))
		page_put(p, "NaN");
	else if (isinf(v))
		page_put(p, v > 0 ? "+Inf" : "-Inf");
	else if (v >= 0 && v < 9007199254740992.0 && v == floor(v))
		page_u64(p, (uint64_t)v);
	else
		page_printf(p, "%.17g", v);
}

void page_sink(void *ctx, const char *s, size_t n)
{
	page_putn(ctx, s, n);
}

void page_label(struct page *p, const char *v)
{
	prom_label_to(page_sink, p, v);
}

void page_family(struct page *p, bool om, const char *name, const char *type, const char *help)
{
	prom_family_to(page_sink, p, om, name, type, help);
}

const char *page_entity(uint32_t c, bool xml_apos)
{
	switch (c) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return xml_apos ? "&apos;" : "&#39;";
	default: return NULL;
	}
}

void page_escaped(struct page *p, const char *v, const char *(*esc)(unsigned char c))
{
	const char *run = v;

	for (; *v; v++) {
		const char *e = esc((unsigned char)*v);

		if (!e)
			continue;
		page_putn(p, run, (size_t)(v - run));
		page_put(p, e);
		run = v + 1;
	}
	page_putn(p, run, (size_t)(v - run));
}

static const char *html_entity(unsigned char c)
{
	return page_entity(c, false);
}

void page_html(struct page *p, const char *v)
{
	page_escaped(p, v, html_entity);
}

void page_json(struct page *p, const char *v)
{
	json_string_to(page_sink, p, v);
}

void page_url(struct page *p, const char *v)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			page_putc(p, (char)c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			page_putn(p, e, 3);
		}
	}
}
