/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_PAGE_H
#define CGPERF_EXPORTER_PAGE_H

/*
 * A growable text buffer for the pages the exporter serves (/metrics,
 * JSON, HTML), with the escapes each of them needs. Appending never fails
 * on the spot: the first allocation failure sets a sticky flag that
 * page_failed() reports, so a renderer writes straight through and checks
 * once at the end (curl's dynbuf idea). A cap bounds the size.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct page {
	char *buf;
	size_t len, cap, max; /* max 0: 1 GiB */
	bool failed;
};

void page_init(struct page *p, size_t max);
void page_release(struct page *p);
/* Hand the text over (NUL-terminated, malloc'd; the caller frees it) and
 * reset @p. NULL when an append failed. */
char *page_take(struct page *p, size_t *len);
bool page_failed(const struct page *p);

/* Make room for @n more bytes up front (a size hint; failure is sticky). */
void page_reserve(struct page *p, size_t n);

void page_put(struct page *p, const char *s);
void page_putn(struct page *p, const char *s, size_t n);
void page_putc(struct page *p, char c);
void page_printf(struct page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void page_u64(struct page *p, uint64_t v);
/* A Prometheus sample value: integers exactly, others with 17 digits;
 * +Inf, -Inf and NaN by name. */
void page_double(struct page *p, double v);

/* Append @n bytes at @s to the page @ctx: the sink lib/json.h and
 * lib/prom.h write through. */
void page_sink(void *ctx, const char *s, size_t n);
/* Prometheus/OpenMetrics label value (no quotes): \\, \" and \n escaped
 * (lib/prom.h). */
void page_label(struct page *p, const char *v);
/* A family's HELP and TYPE lines (lib/prom.h: prom_family_to()). */
void page_family(struct page *p, bool om, const char *name, const char *type, const char *help);
/* HTML text or attribute value: & < > " ' escaped. */
void page_html(struct page *p, const char *v);
/* @v with every byte for which @esc gives a string replaced by that string;
 * the runs between them copied as they are (the loop under page_html() and
 * the ClickHouse TSV field writer). */
void page_escaped(struct page *p, const char *v, const char *(*esc)(unsigned char c));
/* The entity that stands for @c (& < > " ') in HTML or XML text and
 * attribute values, else NULL; the apostrophe as "&apos;" with @xml_apos,
 * else as "&#39;" (HTML 4 has no &apos;). */
const char *page_entity(uint32_t c, bool xml_apos);
/* JSON string with its quotes (lib/json.h: control characters as \u00XX,
 * invalid UTF-8 as \ufffd). */
void page_json(struct page *p, const char *v);
/* A URL query component: everything but unreserved characters %XX. */
void page_url(struct page *p, const char *v);

#endif
