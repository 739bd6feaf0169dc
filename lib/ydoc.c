// SPDX-License-Identifier: MIT
/*
 * YAML documents for configuration files (ydoc.h). libyaml builds the
 * document; this file adds what every schema needs around it: a cheap first
 * pass over the events that refuses hostile nesting and anchors before the
 * (quadratic) loader sees them, errors with the file, line and column of the
 * node and the key path ("push.retry.max"), values shown quoted and cut, and
 * typed reads that say what was expected.
 */
#include "lib/ydoc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/strv.h"
#include "lib/suggest.h"
#include "lib/units.h"

struct ydoc {
	yaml_document_t doc;
	bool loaded;
	const char *file;
	char *err;
	size_t errlen;
	struct ydoc_limits lim;
	ydoc_hint_fn hint;
	void *hint_ctx;
};

static size_t nkeys(const char *const *keys)
{
	size_t n = 0;

	while (keys[n])
		n++;
	return n;
}

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

__attribute__((format(printf, 3, 0))) static int vfail(struct ydoc *x, const yaml_mark_t *m,
						       const char *fmt, va_list ap)
{
	int off;

	if (!x->err || !x->errlen)
		return -EINVAL;
	if (m)
		off = snprintf(x->err, x->errlen, "%s:%zu:%zu: ", x->file, m->line + 1,
			       m->column + 1);
	else
		off = snprintf(x->err, x->errlen, "%s: ", x->file);
	if (off >= 0 && (size_t)off < x->errlen)
		vsnprintf(x->err + off, x->errlen - (size_t)off, fmt, ap);
	return -EINVAL;
}

int ydoc_fail(struct ydoc *x, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(x, n ? &n->start_mark : NULL, fmt, ap);
	va_end(ap);
	return rc;
}

int ydoc_fail_at(struct ydoc *x, const yaml_mark_t *m, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(x, m, fmt, ap);
	va_end(ap);
	return rc;
}

int ydoc_oom(struct ydoc *x)
{
	if (x->err && x->errlen)
		snprintf(x->err, x->errlen, "%s: out of memory", x->file);
	return -ENOMEM;
}

const yaml_node_t *ydoc_node(const struct ydoc *x, int id)
{
	return yaml_document_get_node((yaml_document_t *)&x->doc, id);
}

const yaml_node_t *ydoc_root(const struct ydoc *x)
{
	return x->loaded ? yaml_document_get_root_node((yaml_document_t *)&x->doc) : NULL;
}

const char *ydoc_file(const struct ydoc *x)
{
	return x->file;
}

void ydoc_set_hint(struct ydoc *x, ydoc_hint_fn fn, void *ctx)
{
	x->hint = fn;
	x->hint_ctx = ctx;
}

struct ydoc_shown ydoc_show(const char *v)
{
	struct ydoc_shown r;
	size_t o = 0, n = strlen(v), cut = n;

	if (n > 60) /* not inside a UTF-8 sequence */
		for (cut = 60; cut > 0 && ((unsigned char)v[cut] & 0xc0) == 0x80; cut--)
			;
	r.s[o++] = '\'';
	for (size_t i = 0; i < cut; i++) {
		unsigned char ch = (unsigned char)v[i];

		r.s[o++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	if (cut < n) {
		memcpy(r.s + o, "...", 3);
		o += 3;
	}
	r.s[o++] = '\'';
	r.s[o] = '\0';
	return r;
}

bool ydoc_is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)n->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

struct ydoc_shown ydoc_what(const yaml_node_t *n)
{
	struct ydoc_shown r;

	if (n->type == YAML_SEQUENCE_NODE)
		snprintf(r.s, sizeof(r.s), "a list");
	else if (n->type == YAML_MAPPING_NODE)
		snprintf(r.s, sizeof(r.s), "a mapping");
	else if (ydoc_is_null(n))
		snprintf(r.s, sizeof(r.s), "nothing (null)");
	else
		r = ydoc_show((const char *)n->data.scalar.value);
	return r;
}

struct ydoc_name ydoc_key_in(const char *where, const char *key)
{
	struct ydoc_name k;

	/* Our own names, never cut; the check only quiets the compiler. */
	if ((size_t)snprintf(k.s, sizeof(k.s), "%s%s%s", where, *where ? "." : "", key) >=
	    sizeof(k.s))
		k.s[sizeof(k.s) - 1] = '\0';
	return k;
}

struct ydoc_name ydoc_item_in(const char *list, size_t i)
{
	struct ydoc_name k;

	if ((size_t)snprintf(k.s, sizeof(k.s), "%s[%zu]", list, i) >= sizeof(k.s))
		k.s[sizeof(k.s) - 1] = '\0';
	return k;
}

int ydoc_scalar(struct ydoc *x, const yaml_node_t *n, const char *name, const char *expected,
		  const char **out)
{
	const char *v;
	size_t len;

	if (n->type != YAML_SCALAR_NODE || ydoc_is_null(n))
		return ydoc_fail(x, n, "%s: expected %s, got %s", name, expected, ydoc_what(n).s);
	v = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	if (strlen(v) != len)
		return ydoc_fail(x, n, "%s: contains a NUL character", name);
	if (len > x->lim.string)
		return ydoc_fail(x, n, "%s: longer than %d bytes", name, (int)x->lim.string);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)v[i];

		/* C0 controls, DEL, and C1 controls (U+0080..U+009F in UTF-8). */
		if (ch < 0x20 || ch == 0x7f ||
		    (ch == 0xc2 && i + 1 < len && (unsigned char)v[i + 1] >= 0x80 &&
		     (unsigned char)v[i + 1] <= 0x9f))
			return ydoc_fail(x, n, "%s: contains a control character (at byte %zu)",
					 name, i);
	}
	*out = v;
	return 0;
}

const yaml_node_t *ydoc_get(const struct ydoc *x, const yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		const yaml_node_t *k = ydoc_node(x, p->key);

		if (k && k->type == YAML_SCALAR_NODE &&
		    !strcmp((const char *)k->data.scalar.value, key))
			return ydoc_node(x, p->value);
	}
	return NULL;
}

int ydoc_check_keys(struct ydoc *x, const yaml_node_t *map, const char *where,
		      const char *const *keys)
{
	yaml_node_pair_t *start = map->data.mapping.pairs.start;
	char in[120];

	if (*where)
		snprintf(in, sizeof(in), "in %s", where);
	else
		snprintf(in, sizeof(in), "at the top level");
	for (yaml_node_pair_t *p = start; p < map->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = ydoc_node(x, p->key);
		const char *name, *best;
		bool known = false;

		if (!k)
			return ydoc_fail(x, map, "broken YAML document");
		if (k->type != YAML_SCALAR_NODE || ydoc_is_null(k))
			return ydoc_fail(x, k, "keys %s must be names, got %s", in, ydoc_what(k).s);
		name = (const char *)k->data.scalar.value;
		for (size_t i = 0; keys[i]; i++)
			known |= !strcmp(keys[i], name);
		if (!known) {
			char hint[160];

			hint[0] = '\0';
			best = suggest_best(name, keys, SIZE_MAX, suggest_limit(strlen(name)));
			if (best)
				snprintf(hint, sizeof(hint), " (did you mean '%s'?)", best);
			else if (x->hint)
				x->hint(x->hint_ctx, name, where, hint, sizeof(hint));
			return ydoc_fail(x, k, "unknown key %s %s%s", ydoc_show(name).s, in, hint);
		}
		for (yaml_node_pair_t *q = start; q < p; q++) {
			const yaml_node_t *k0 = ydoc_node(x, q->key);

			if (k0 && k0->type == YAML_SCALAR_NODE &&
			    !strcmp((const char *)k0->data.scalar.value, name))
				return ydoc_fail(x, k, "duplicate key %s %s (first at line %zu)",
					    ydoc_show(name).s, in, k0->start_mark.line + 1);
		}
	}
	return 0;
}

int ydoc_section(struct ydoc *x, const yaml_node_t *map, const char *where, const char *key,
		   const char *const *keys, const yaml_node_t **out)
{
	const yaml_node_t *n = ydoc_get(x, map, key);
	struct ydoc_name name = ydoc_key_in(where, key);

	*out = NULL;
	if (!n || ydoc_is_null(n))
		return 0;
	if (n->type != YAML_MAPPING_NODE)
		return ydoc_fail(x, n, "%s: expected a mapping of keys (%s: ...), got %s", name.s,
				 keys[0], ydoc_what(n).s);
	*out = n;
	return ydoc_check_keys(x, n, name.s, keys);
}

int ydoc_bool(struct ydoc *x, const yaml_node_t *n, const char *name, bool *out)
{
	const char *v;
	int rc = ydoc_scalar(x, n, name, "true or false", &v);

	if (rc)
		return rc;
	if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
		*out = false;
	else
		return ydoc_fail(x, n, "%s: expected true or false, got %s", name, ydoc_show(v).s);
	return 0;
}

int ydoc_uint(struct ydoc *x, const yaml_node_t *n, const char *name, unsigned min,
		   unsigned max, unsigned *out)
{
	const char *v, *p;
	uint64_t u;
	int rc = ydoc_scalar(x, n, name, "an integer", &v);

	if (rc)
		return rc;
	p = v;
	rc = units_digits(&p, &u);
	if (strspn(v, "0123456789") != strlen(v) || !*v)
		return ydoc_fail(x, n, "%s: expected an integer, got %s", name, ydoc_show(v).s);
	if (rc == -ERANGE || u < min || u > max)
		return ydoc_fail(x, n, "%s: %s is out of range (%u..%u)", name, ydoc_show(v).s, min,
				 max);
	*out = (unsigned)u;
	return 0;
}

/* The end of a ranged read: @rc and @val from the units parser. */
static int in_range(struct ydoc *x, const yaml_node_t *n, const char *name, const char *v,
		    int rc, uint64_t val, uint64_t min, uint64_t max,
		    void (*format)(uint64_t, char *, size_t), uint64_t *out)
{
	char lo[32], hi[32];

	if (rc == -ERANGE || val < min || val > max) {
		format(min, lo, sizeof(lo));
		format(max, hi, sizeof(hi));
		return ydoc_fail(x, n, "%s: %s is out of range (%s..%s)", name, ydoc_show(v).s, lo,
				 hi);
	}
	*out = val;
	return 0;
}

int ydoc_duration_ms(struct ydoc *x, const yaml_node_t *n, const char *name, uint64_t min,
		     uint64_t max, uint64_t *out)
{
	const char *v, *p;
	uint64_t ms = 0, u;
	int rc = ydoc_scalar(x, n, name, "a duration (like 500ms, 15s, 1m, 1h)", &v);

	if (rc)
		return rc;
	rc = units_duration_ms(v, &ms);
	if (rc == -EINVAL) {
		p = skip_blanks(v);
		if (units_digits(&p, &u) == 0 && !*skip_blanks(p))
			return ydoc_fail(x, n,
					 "%s: %s has no unit (ms, s, m or h, like '%" PRIu64 "s')",
					 name, ydoc_show(v).s, u);
		return ydoc_fail(
			x, n,
			"%s: bad duration %s (a whole number and ms, s, m or h, like 500ms, "
			"15s, 1m30s)",
			name, ydoc_show(v).s);
	}
	return in_range(x, n, name, v, rc, ms, min, max, units_format_duration_ms, out);
}

int ydoc_size(struct ydoc *x, const yaml_node_t *n, const char *name, uint64_t min, uint64_t max,
	      uint64_t *out)
{
	const char *v;
	uint64_t b = 0;
	int rc = ydoc_scalar(x, n, name, "a size (bytes, or like 64KiB, 256MiB, 1GiB)", &v);

	if (rc)
		return rc;
	rc = units_size(v, &b);
	if (rc == -EINVAL)
		return ydoc_fail(x, n,
				 "%s: bad size %s (bytes, or a whole number and B, KiB, MiB, GiB, "
				 "TiB, kB, MB, GB or TB)",
				 name, ydoc_show(v).s);
	return in_range(x, n, name, v, rc, b, min, max, units_format_size, out);
}

int ydoc_enum(struct ydoc *x, const yaml_node_t *n, const char *name,
		   const char *const *names, int *out)
{
	char expected[128] = "", hint[80] = "";
	size_t o = 0, count = nkeys(names);
	const char *v, *best;
	int rc;

	for (size_t i = 0; i < count && o < sizeof(expected); i++)
		o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s%s",
				      i == 0 ? "" : i + 1 == count ? " or " : ", ", names[i]);
	rc = ydoc_scalar(x, n, name, expected, &v);
	if (rc)
		return rc;
	for (size_t i = 0; i < count; i++) {
		if (!strcmp(v, names[i])) {
			*out = (int)i;
			return 0;
		}
	}
	best = suggest_best(v, names, count, 2);
	if (best)
		snprintf(hint, sizeof(hint), " (did you mean '%s'?)", best);
	return ydoc_fail(x, n, "%s: expected %s, got %s%s", name, expected, ydoc_show(v).s, hint);
}

int ydoc_string(struct ydoc *x, const yaml_node_t *n, const char *name, int flags,
		     const char *expected, char **out)
{
	const char *v;
	int rc;

	if ((flags & YDOC_NULLABLE) && ydoc_is_null(n))
		return strv_set(out, NULL) ? ydoc_oom(x) : 0;
	rc = ydoc_scalar(x, n, name, expected, &v);
	if (rc)
		return rc;
	if (!*v && !(flags & YDOC_EMPTY_OK))
		return ydoc_fail(x, n, "%s: must not be empty%s", name,
			    flags & YDOC_NULLABLE ? " (write null for none)" : "");
	return strv_set(out, v) ? ydoc_oom(x) : 0;
}

int ydoc_list(struct ydoc *x, const yaml_node_t *n, const char *name, size_t max,
		   ydoc_item_check check, const char *example, char ***v, size_t *nv)
{
	yaml_node_item_t *it;
	size_t count, i;
	char **a;
	int rc = 0;

	if (ydoc_is_null(n))
		return strv_dup(v, nv, NULL, 0) ? ydoc_oom(x) : 0;
	if (n->type == YAML_SCALAR_NODE)
		return ydoc_fail(x, n, "%s: expected a list, got %s (write [%s])", name,
				 ydoc_what(n).s, ydoc_show((const char *)n->data.scalar.value).s);
	if (n->type != YAML_SEQUENCE_NODE)
		return ydoc_fail(x, n, "%s: expected a list (like %s), got %s", name, example,
			    ydoc_what(n).s);
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count > max)
		return ydoc_fail(x, n, "%s: %zu items, at most %zu are allowed", name, count, max);
	a = calloc(count ? count : 1, sizeof(*a));
	if (!a)
		return ydoc_oom(x);
	for (i = 0, it = n->data.sequence.items.start; i < count; i++, it++) {
		const yaml_node_t *in = ydoc_node(x, *it);
		struct ydoc_name iname = ydoc_item_in(name, i);
		const char *s;

		rc = ydoc_scalar(x, in, iname.s, "a string", &s);
		if (!rc && check)
			rc = check(x, in, iname.s, s);
		for (size_t j = 0; !rc && j < i; j++)
			if (!strcmp(a[j], s))
				rc = ydoc_fail(x, in, "%s: %s is already listed as %s[%zu]",
					       iname.s, ydoc_show(s).s, name, j);
		if (!rc && !(a[i] = strdup(s)))
			rc = ydoc_oom(x);
		if (rc)
			break;
	}
	if (rc) {
		strv_free(a, i);
		return rc;
	}
	strv_replace(v, nv, a, count);
	return 0;
}

static int parser_error(struct ydoc *x, const yaml_parser_t *p)
{
	/* libyaml's loader fails some allocations (yaml_strdup of a tag,
	 * say) without setting an error: that is out of memory too. */
	if (p->error == YAML_MEMORY_ERROR || p->error == YAML_NO_ERROR)
		return ydoc_oom(x);
	if (!x->err || !x->errlen)
		return -EINVAL;
	if (p->error == YAML_READER_ERROR) {
		if (p->problem_value != -1)
			snprintf(x->err, x->errlen,
				 "%s: not YAML text: %s (byte 0x%02x at offset %zu)", x->file,
				 p->problem ? p->problem : "unreadable",
				 (unsigned)p->problem_value & 0xff, p->problem_offset);
		else
			snprintf(x->err, x->errlen, "%s: not YAML text: %s (at offset %zu)",
				 x->file, p->problem ? p->problem : "unreadable",
				 p->problem_offset);
	} else if (p->context) {
		snprintf(x->err, x->errlen, "%s:%zu:%zu: YAML syntax error: %s (%s at line %zu)",
			 x->file, p->problem_mark.line + 1, p->problem_mark.column + 1,
			 p->problem ? p->problem : "unknown problem", p->context,
			 p->context_mark.line + 1);
	} else {
		snprintf(x->err, x->errlen, "%s:%zu:%zu: YAML syntax error: %s", x->file,
			 p->problem_mark.line + 1, p->problem_mark.column + 1,
			 p->problem ? p->problem : "unknown problem");
	}
	return -EINVAL;
}

static int prescan(struct ydoc *x, const char *buf, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, anchors = 0, aliases = 0, rc = 0;

	if (!yaml_parser_initialize(&p))
		return ydoc_oom(x);
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	for (;;) {
		yaml_event_type_t type;
		const yaml_char_t *anchor = NULL;

		if (!yaml_parser_parse(&p, &ev)) {
			rc = parser_error(x, &p);
			break;
		}
		type = ev.type;
		if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT)
			depth++;
		else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT)
			depth--;
		if (type == YAML_SEQUENCE_START_EVENT)
			anchor = ev.data.sequence_start.anchor;
		else if (type == YAML_MAPPING_START_EVENT)
			anchor = ev.data.mapping_start.anchor;
		else if (type == YAML_SCALAR_EVENT)
			anchor = ev.data.scalar.anchor;
		anchors += anchor != NULL;
		aliases += type == YAML_ALIAS_EVENT;
		if (depth > x->lim.depth)
			rc = ydoc_fail_at(x, &ev.start_mark, "nested more than %d levels deep",
				       x->lim.depth);
		else if (anchors > x->lim.anchors || aliases > x->lim.anchors)
			rc = ydoc_fail_at(x, &ev.start_mark, "more than %d %s", x->lim.anchors,
				       anchors > x->lim.anchors ? "anchors (&)" : "aliases (*)");
		yaml_event_delete(&ev);
		if (rc || type == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&p);
	return rc;
}

/* The document after the first: there must be none. */
static int no_second(struct ydoc *x, yaml_parser_t *parser)
{
	yaml_document_t extra;
	const yaml_node_t *root;
	int rc = 0;

	if (!yaml_parser_load(parser, &extra))
		return parser_error(x, parser);
	root = yaml_document_get_root_node(&extra);
	if (root)
		rc = ydoc_fail(x, root,
			       "a second YAML document; the configuration is one document");
	yaml_document_delete(&extra);
	return rc;
}

int ydoc_load(const char *file, const char *buf, size_t len, const struct ydoc_limits *lim,
	      char *err, size_t errlen, struct ydoc **out)
{
	struct ydoc tmp = {.file = file, .err = err, .errlen = errlen, .lim = *lim};
	yaml_parser_t parser;
	struct ydoc *x;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!buf) {
		buf = "";
		len = 0;
	}
	rc = prescan(&tmp, buf, len);
	if (rc)
		return rc;
	x = calloc(1, sizeof(*x));
	if (!x)
		return ydoc_oom(&tmp);
	*x = tmp;
	if (!yaml_parser_initialize(&parser)) {
		free(x);
		return ydoc_oom(&tmp);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &x->doc)) {
		rc = parser_error(x, &parser);
		goto out;
	}
	x->loaded = true;
	if (ydoc_root(x))
		rc = no_second(x, &parser);
out:
	yaml_parser_delete(&parser);
	if (rc) {
		ydoc_free(x);
		return rc;
	}
	*out = x;
	return 0;
}

void ydoc_free(struct ydoc *x)
{
	if (!x)
		return;
	if (x->loaded)
		yaml_document_delete(&x->doc);
	free(x);
}

/* One table field (see ydoc_fields()) from @v into @p. */
static int field_read(struct ydoc *x, const yaml_node_t *v, const char *name,
		      const struct ydoc_field *f, char *p)
{
	switch (f->kind) {
	case YDOC_F_BOOL:
		return ydoc_bool(x, v, name, (bool *)(void *)p);
	case YDOC_F_UINT:
		return ydoc_uint(x, v, name, (unsigned)f->min, (unsigned)f->max,
				 (unsigned *)(void *)p);
	case YDOC_F_DURATION_MS:
		return ydoc_duration_ms(x, v, name, f->min, f->max, (uint64_t *)(void *)p);
	case YDOC_F_SIZE:
		return ydoc_size(x, v, name, f->min, f->max, (uint64_t *)(void *)p);
	case YDOC_F_STRING:
		return ydoc_string(x, v, name, f->flags, f->expected, (char **)(void *)p);
	case YDOC_F_ENUM:
		return ydoc_enum(x, v, name, f->names, (int *)(void *)p);
	}
	return -EINVAL;
}

int ydoc_fields(struct ydoc *x, const yaml_node_t *map, const char *where,
		const struct ydoc_field *fields, size_t n, void *base)
{
	for (size_t i = 0; map && i < n; i++) {
		const yaml_node_t *v = ydoc_get(x, map, fields[i].key);
		int rc;

		if (v && (rc = field_read(x, v, ydoc_key_in(where, fields[i].key).s, &fields[i],
					  (char *)base + fields[i].off)))
			return rc;
	}
	return 0;
}
