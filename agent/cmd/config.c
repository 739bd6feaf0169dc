// SPDX-License-Identifier: MIT
/*
 * agent/config: the YAML configuration of `cgperf-agent run`.
 *
 * The file is loaded with libyaml's document API into a node tree, then
 * walked against a fixed schema. The walk starts from the embedded defaults
 * and overwrites what the file sets, so every key is optional and an empty
 * file (or none) is the default configuration.
 *
 * The schema is strict on purpose: an agent that runs unattended on every
 * host must not silently ignore "frequncy: 99" and profile at 49 Hz for a
 * month. So unknown keys, duplicate keys (which libyaml accepts and YAML
 * forbids), wrong types and out-of-range values are all errors, and each
 * error is one line that names the file, line and column, the dotted key
 * and what would be accepted, with a suggestion for a misspelt key.
 *
 * Nothing is interpreted by YAML's implicit typing: a value is a scalar
 * string that this file parses itself (integers, booleans, durations,
 * sizes), so "on"/"yes"/"010" do not turn into something unexpected.
 * A plain (unquoted) empty value, "~" or "null" is null. Anchors and
 * aliases work as libyaml resolves them; the walk is bounded by the
 * schema's depth and by list caps, so aliases cannot make it explode.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "agent/cmd/config.h"
#include "agent/perf/events.h"
#include "agent/perf/probe_spec.h"
#include "cgroup/identity.h"
#include "lib/suggest.h"
#include "lib/units.h"

#define MS_S UINT64_C(1000)
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)

#define HOST_NAME_MAXLEN 255
#define URL_MAXLEN 2048
#define CONFIG_MAX_DEPTH 16   /* nested lists and mappings; the schema needs 4 */
#define CONFIG_MAX_ANCHORS 64 /* anchors, and aliases, in a file */

/* ---- defaults ---- */

static const char *const default_events[] = {
	"task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles", "instructions",
};
static const char *const default_include[] = {"/**"};
static const char *const default_collectors[] = {"http://127.0.0.1:9090/api/v1/push"};

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

static int set_str(char **dst, const char *s)
{
	char *v = NULL;

	if (s && !(v = strdup(s)))
		return -ENOMEM;
	free(*dst);
	*dst = v;
	return 0;
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int list_dup(char ***v, size_t *n, const char *const *src, size_t nsrc)
{
	char **a = calloc(nsrc ? nsrc : 1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < nsrc; i++) {
		a[i] = strdup(src[i]);
		if (!a[i]) {
			free_list(a, i);
			return -ENOMEM;
		}
	}
	free_list(*v, *n);
	*v = a;
	*n = nsrc;
	return 0;
}

struct config *config_defaults(void)
{
	struct config *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (set_str(&c->host.name, "") ||
	    set_str(&c->host.agent_id_file, "/var/lib/cgperf/agent-id") ||
	    list_dup(&c->cgroups.include, &c->cgroups.ninclude, default_include,
		     NELEMS(default_include)) ||
	    list_dup(&c->cgroups.exclude, &c->cgroups.nexclude, NULL, 0) ||
	    list_dup(&c->counters.events, &c->counters.nevents, default_events,
		     NELEMS(default_events)) ||
	    set_str(&c->sampling.event, "cpu-clock") ||
	    list_dup(&c->push.collectors, &c->push.ncollectors, default_collectors,
		     NELEMS(default_collectors)) ||
	    set_str(&c->push.spool.dir, "/var/lib/cgperf/spool"))
		goto err;
	c->cgroups.containers_only = false;
	c->counters.enabled = true;
	c->sampling.enabled = true;
	c->sampling.frequency = 49;
	c->sampling.call_graph = CONFIG_CALL_GRAPH_FP;
	c->sampling.stack_bytes = 8192;
	c->sampling.per_cgroup = true;
	c->symbols.demangle = DEMANGLE_FULL;
	c->push.interval_ms = 15 * MS_S;
	c->push.timeout_ms = 10 * MS_S;
	c->push.idle_close_ms = 60 * MS_S;
	c->push.tls.verify = true;
	c->push.spool.max_bytes = 256 * UNITS_MIB;
	c->push.retry.initial_ms = 1 * MS_S;
	c->push.retry.max_ms = 60 * MS_S;
	c->log.format = CONFIG_LOG_LOGFMT;
	c->log.level = CONFIG_LOG_INFO;
	return c;
err:
	config_free(c);
	return NULL;
}

static void probe_free(struct config_probe *p)
{
	free(p->spec);
	free(p->hist);
	free(p->latency_end);
}

void config_free(struct config *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->host.name);
	free(c->host.agent_id_file);
	free_list(c->cgroups.include, c->cgroups.ninclude);
	free_list(c->cgroups.exclude, c->cgroups.nexclude);
	free_list(c->counters.events, c->counters.nevents);
	free(c->sampling.event);
	for (size_t i = 0; i < c->nprobes; i++)
		probe_free(&c->probes[i]);
	free(c->probes);
	free_list(c->push.collectors, c->push.ncollectors);
	free(c->push.token_file);
	free(c->push.tls.ca_file);
	free(c->push.tls.cert_file);
	free(c->push.tls.key_file);
	free(c->push.spool.dir);
	free(c->metrics.listen);
	free(c);
}

/* ---- durations and sizes (lib/units) ---- */

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* ---- cgroup globs ---- */

struct comp {
	const char *s;
	size_t n;
};

/* The next '/'-separated component at *cur; false at the end. */
static bool comp_next(const char **cur, struct comp *c)
{
	const char *p = *cur;

	while (*p == '/')
		p++;
	if (!*p) {
		*cur = p;
		return false;
	}
	c->s = p;
	c->n = strcspn(p, "/");
	*cur = p + c->n;
	return true;
}

static bool comp_is_globstar(const struct comp *c)
{
	return c->n == 2 && c->s[0] == '*' && c->s[1] == '*';
}

static bool comp_match(const struct comp *g, const struct comp *p)
{
	char gb[CONFIG_MAX_STRING + 1], pb[CONFIG_MAX_STRING + 1];

	if (g->n > CONFIG_MAX_STRING || p->n > CONFIG_MAX_STRING)
		return false;
	memcpy(gb, g->s, g->n);
	gb[g->n] = '\0';
	memcpy(pb, p->s, p->n);
	pb[p->n] = '\0';
	return fnmatch(gb, pb, 0) == 0;
}

/*
 * The wildcard matcher that backtracks only to the last star, over
 * components instead of characters: '**' is the star, any other glob
 * component matches one path component through fnmatch(). Linear in
 * (glob components x path components), whatever the number of '**'.
 */
bool config_glob_match(const char *glob, const char *path)
{
	const char *g = glob, *p = path, *star_g = NULL, *star_p = NULL;
	struct comp gc, pc;

	if (!glob || !path)
		return false;
	for (;;) {
		const char *p0 = p;

		if (!comp_next(&p, &pc))
			break;
		if (comp_next(&g, &gc)) {
			if (comp_is_globstar(&gc)) {
				star_g = g;
				star_p = p0;
				p = p0;
				continue;
			}
			if (comp_match(&gc, &pc))
				continue;
		}
		if (!star_g)
			return false;
		/* Let the last '**' take one more path component. */
		p = star_p;
		comp_next(&p, &pc);
		star_p = p;
		g = star_g;
	}
	while (comp_next(&g, &gc))
		if (!comp_is_globstar(&gc))
			return false;
	return true;
}

bool config_cgroup_wanted(const struct config *cfg, const char *path)
{
	if (!cfg || !path)
		return false;
	if (cfg->cgroups.containers_only) {
		struct cg_identity id;

		if (cg_identity_parse(path, &id) < 0 || id.runtime == CG_RT_NONE)
			return false;
	}
	for (size_t i = 0; i < cfg->cgroups.nexclude; i++)
		if (config_glob_match(cfg->cgroups.exclude[i], path))
			return false;
	for (size_t i = 0; i < cfg->cgroups.ninclude; i++)
		if (config_glob_match(cfg->cgroups.include[i], path))
			return true;
	return false;
}

/* ---- the schema ---- */

static const char *const top_keys[] = {"host", "cgroups", "counters", "sampling", "symbols",
				       "probes", "push", "log", "metrics", NULL};
static const char *const host_keys[] = {"name", "agent_id_file", NULL};
static const char *const cgroups_keys[] = {"include", "exclude", "containers_only", NULL};
static const char *const counters_keys[] = {"events", "enabled", NULL};
static const char *const sampling_keys[] = {"enabled", "frequency", "call_graph", "stack_bytes",
					    "event", "per_cgroup", NULL};
static const char *const symbols_keys[] = {"demangle", NULL};
static const char *const probe_keys[] = {"spec", "hist", "latency_end", "stacks", NULL};
static const char *const push_keys[] = {"interval", "collectors", "token_file", "timeout", "idle_close",
					"tls", "spool", "retry", NULL};
static const char *const tls_keys[] = {"ca_file", "cert_file", "key_file", "verify", NULL};
static const char *const spool_keys[] = {"dir", "max_bytes", NULL};
static const char *const retry_keys[] = {"initial", "max", NULL};
static const char *const log_keys[] = {"format", "level", NULL};
static const char *const metrics_keys[] = {"listen", NULL};

static const struct section {
	const char *name;
	const char *const *keys;
} sections[] = {
	{"host", host_keys},	   {"cgroups", cgroups_keys}, {"counters", counters_keys},
	{"sampling", sampling_keys}, {"symbols", symbols_keys}, {"probes[]", probe_keys},
	{"push", push_keys},
	{"push.tls", tls_keys},	   {"push.spool", spool_keys}, {"push.retry", retry_keys},
	{"log", log_keys},	   {"metrics", metrics_keys},
};

static const char *const call_graph_names[] = {"fp", "dwarf", NULL};
/* Indexed by enum demangle_style; then the booleans, false = none, true = full. */
static const char *const demangle_names[] = {"none", "short", "full", "false", "true", NULL};
static const char *const log_format_names[] = {"logfmt", "json", NULL};
static const char *const log_level_names[] = {"debug", "info", "warn", "error", NULL};

/* ---- the walk ---- */

struct ctx {
	yaml_document_t *doc;
	const char *file;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 0))) static int vfail(struct ctx *x, const yaml_mark_t *m,
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

/* "FILE:LINE:COL: message" at node @n (NULL: no position); -EINVAL. */
__attribute__((format(printf, 3, 4))) static int fail(struct ctx *x, const yaml_node_t *n,
						      const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(x, n ? &n->start_mark : NULL, fmt, ap);
	va_end(ap);
	return rc;
}

__attribute__((format(printf, 3, 4))) static int fail_mark(struct ctx *x, const yaml_mark_t *m,
							   const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(x, m, fmt, ap);
	va_end(ap);
	return rc;
}

static int oom(struct ctx *x)
{
	if (x->err && x->errlen)
		snprintf(x->err, x->errlen, "%s: out of memory", x->file);
	return -ENOMEM;
}

/*
 * A value as shown in a message: quoted, control characters as '?', cut
 * at 60 bytes with "...".
 */
struct shown {
	char s[80];
};

static struct shown show(const char *v)
{
	struct shown r;
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

static yaml_node_t *node_at(struct ctx *x, int id)
{
	return yaml_document_get_node(x->doc, id);
}

static bool is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)n->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/* "a list", "a mapping", "nothing" or the scalar, quoted. */
static struct shown what(const yaml_node_t *n)
{
	struct shown r;

	if (n->type == YAML_SEQUENCE_NODE)
		snprintf(r.s, sizeof(r.s), "a list");
	else if (n->type == YAML_MAPPING_NODE)
		snprintf(r.s, sizeof(r.s), "a mapping");
	else if (is_null(n))
		snprintf(r.s, sizeof(r.s), "nothing (null)");
	else
		r = show((const char *)n->data.scalar.value);
	return r;
}

/* "sampling" + "frequency" -> "sampling.frequency"; "" + "host" -> "host". */
struct keyname {
	char s[96];
};

static struct keyname key_in(const char *where, const char *key)
{
	struct keyname k;

	/* Our own names, never cut; the check only quiets the compiler. */
	if ((size_t)snprintf(k.s, sizeof(k.s), "%s%s%s", where, *where ? "." : "", key) >=
	    sizeof(k.s))
		k.s[sizeof(k.s) - 1] = '\0';
	return k;
}

static struct keyname item_in(const char *list, size_t i)
{
	struct keyname k;

	if ((size_t)snprintf(k.s, sizeof(k.s), "%s[%zu]", list, i) >= sizeof(k.s))
		k.s[sizeof(k.s) - 1] = '\0';
	return k;
}

/*
 * The text of a scalar @n for key @name, which must be a non-null scalar
 * without NUL bytes or control characters and at most CONFIG_MAX_STRING
 * bytes. @expected describes the wanted value for a type error.
 */
static int scalar(struct ctx *x, const yaml_node_t *n, const char *name, const char *expected,
		  const char **out)
{
	const char *v;
	size_t len;

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail(x, n, "%s: expected %s, got %s", name, expected, what(n).s);
	v = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	if (strlen(v) != len)
		return fail(x, n, "%s: contains a NUL character", name);
	if (len > CONFIG_MAX_STRING)
		return fail(x, n, "%s: longer than %d bytes", name, CONFIG_MAX_STRING);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)v[i];

		/* C0 controls, DEL, and C1 controls (U+0080..U+009F in UTF-8). */
		if (ch < 0x20 || ch == 0x7f ||
		    (ch == 0xc2 && i + 1 < len && (unsigned char)v[i + 1] >= 0x80 &&
		     (unsigned char)v[i + 1] <= 0x9f))
			return fail(x, n, "%s: contains a control character (at byte %zu)", name,
				    i);
	}
	*out = v;
	return 0;
}

static const yaml_node_t *get(struct ctx *x, const yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = node_at(x, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
			return node_at(x, p->value);
	}
	return NULL;
}

static size_t nkeys(const char *const *keys)
{
	size_t n = 0;

	while (keys[n])
		n++;
	return n;
}

/* Append " (did you mean ...?)" for an unknown key to @buf. */
static void suggest_key(const char *name, const char *const *keys, const char *where, char *buf,
			size_t len)
{
	const char *best = suggest_best(name, keys, SIZE_MAX, suggest_limit(strlen(name)));
	const char *other[3];
	size_t nother = 0, n;

	buf[0] = '\0';
	if (best) {
		snprintf(buf, len, " (did you mean '%s'?)", best);
		return;
	}
	/* A key of another section, written in the wrong place. */
	for (size_t s = 0; s < NELEMS(sections) && nother < NELEMS(other); s++) {
		if (!strcmp(sections[s].name, where))
			continue;
		for (size_t i = 0; sections[s].keys[i]; i++)
			if (!strcmp(sections[s].keys[i], name))
				other[nother++] = sections[s].name;
	}
	if (*where)
		for (size_t i = 0; top_keys[i] && nother < NELEMS(other); i++)
			if (!strcmp(top_keys[i], name))
				other[nother++] = "the top level";
	if (nother == 1) {
		snprintf(buf, len, " (it belongs in %s)", other[0]);
	} else if (nother > 1) {
		n = (size_t)snprintf(buf, len, " (it belongs in %s", other[0]);
		for (size_t i = 1; i < nother && n < len; i++)
			n += (size_t)snprintf(buf + n, len - n, "%s%s",
					      i + 1 == nother ? " or " : ", ", other[i]);
		if (n < len)
			snprintf(buf + n, len - n, ")");
	}
}

/* Every key of mapping @map is a known, unique name. */
static int check_keys(struct ctx *x, const yaml_node_t *map, const char *where,
		      const char *const *keys)
{
	yaml_node_pair_t *start = map->data.mapping.pairs.start;
	char in[120];

	if (*where)
		snprintf(in, sizeof(in), "in %s", where);
	else
		snprintf(in, sizeof(in), "at the top level");
	for (yaml_node_pair_t *p = start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(x, p->key);
		const char *name;
		bool known = false;

		if (!k)
			return fail(x, map, "broken YAML document");
		if (k->type != YAML_SCALAR_NODE || is_null(k))
			return fail(x, k, "keys %s must be names, got %s", in, what(k).s);
		name = (const char *)k->data.scalar.value;
		for (size_t i = 0; keys[i]; i++)
			known |= !strcmp(keys[i], name);
		if (!known) {
			char hint[160];

			suggest_key(name, keys, where, hint, sizeof(hint));
			return fail(x, k, "unknown key %s %s%s", show(name).s, in, hint);
		}
		for (yaml_node_pair_t *q = start; q < p; q++) {
			yaml_node_t *k0 = node_at(x, q->key);

			if (k0 && k0->type == YAML_SCALAR_NODE &&
			    !strcmp((const char *)k0->data.scalar.value, name))
				return fail(x, k, "duplicate key %s %s (first at line %zu)",
					    show(name).s, in, k0->start_mark.line + 1);
		}
	}
	return 0;
}

/*
 * The mapping at @key of @map, into *@out: NULL when absent or null
 * (defaults apply), else it must be a mapping with only @keys.
 */
static int section(struct ctx *x, const yaml_node_t *map, const char *where, const char *key,
		   const char *const *keys, const yaml_node_t **out)
{
	const yaml_node_t *n = get(x, map, key);
	struct keyname name = key_in(where, key);

	*out = NULL;
	if (!n || is_null(n))
		return 0;
	if (n->type != YAML_MAPPING_NODE)
		return fail(x, n, "%s: expected a mapping of keys (%s: ...), got %s", name.s, keys[0],
			    what(n).s);
	*out = n;
	return check_keys(x, n, name.s, keys);
}

static int as_bool(struct ctx *x, const yaml_node_t *n, const char *name, bool *out)
{
	const char *v;
	int rc = scalar(x, n, name, "true or false", &v);

	if (rc)
		return rc;
	if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
		*out = false;
	else
		return fail(x, n, "%s: expected true or false, got %s", name, show(v).s);
	return 0;
}

static int as_uint(struct ctx *x, const yaml_node_t *n, const char *name, unsigned min,
		   unsigned max, unsigned *out)
{
	const char *v, *p;
	uint64_t u;
	int rc = scalar(x, n, name, "an integer", &v);

	if (rc)
		return rc;
	p = v;
	rc = units_digits(&p, &u);
	if (strspn(v, "0123456789") != strlen(v) || !*v)
		return fail(x, n, "%s: expected an integer, got %s", name, show(v).s);
	if (rc == -ERANGE || u < min || u > max)
		return fail(x, n, "%s: %s is out of range (%u..%u)", name, show(v).s, min, max);
	*out = (unsigned)u;
	return 0;
}

static int as_duration(struct ctx *x, const yaml_node_t *n, const char *name, uint64_t min,
		       uint64_t max, uint64_t *out)
{
	const char *v, *p;
	char lo[32], hi[32];
	uint64_t ms, u;
	int rc = scalar(x, n, name, "a duration (like 500ms, 15s, 1m, 1h)", &v);

	if (rc)
		return rc;
	rc = units_duration_ms(v, &ms);
	units_format_duration_ms(min, lo, sizeof(lo));
	units_format_duration_ms(max, hi, sizeof(hi));
	if (rc == -EINVAL) {
		p = skip_blanks(v);
		if (units_digits(&p, &u) == 0 && !*skip_blanks(p))
			return fail(x, n, "%s: %s has no unit (ms, s, m or h, like '%" PRIu64 "s')",
				    name, show(v).s, u);
		return fail(x, n,
			    "%s: bad duration %s (a whole number and ms, s, m or h, like 500ms, 15s, "
			    "1m30s)",
			    name, show(v).s);
	}
	if (rc == -ERANGE || ms < min || ms > max)
		return fail(x, n, "%s: %s is out of range (%s..%s)", name, show(v).s, lo, hi);
	*out = ms;
	return 0;
}

static int as_size(struct ctx *x, const yaml_node_t *n, const char *name, uint64_t min,
		   uint64_t max, uint64_t *out)
{
	const char *v;
	char lo[32], hi[32];
	uint64_t b;
	int rc = scalar(x, n, name, "a size (bytes, or like 64KiB, 256MiB, 1GiB)", &v);

	if (rc)
		return rc;
	rc = units_size(v, &b);
	units_format_size(min, lo, sizeof(lo));
	units_format_size(max, hi, sizeof(hi));
	if (rc == -EINVAL)
		return fail(x, n,
			    "%s: bad size %s (bytes, or a whole number and B, KiB, MiB, GiB, TiB, "
			    "kB, MB, GB or TB)",
			    name, show(v).s);
	if (rc == -ERANGE || b < min || b > max)
		return fail(x, n, "%s: %s is out of range (%s..%s)", name, show(v).s, lo, hi);
	*out = b;
	return 0;
}

static int as_enum(struct ctx *x, const yaml_node_t *n, const char *name,
		   const char *const *names, int *out)
{
	char expected[128] = "", hint[80] = "";
	size_t o = 0, count = nkeys(names);
	const char *v, *best;
	int rc;

	for (size_t i = 0; i < count && o < sizeof(expected); i++)
		o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s%s",
				      i == 0 ? "" : i + 1 == count ? " or " : ", ", names[i]);
	rc = scalar(x, n, name, expected, &v);
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
	return fail(x, n, "%s: expected %s, got %s%s", name, expected, show(v).s, hint);
}

enum str_flags {
	STR_NULLABLE = 1, /* null gives NULL */
	STR_EMPTY_OK = 2, /* "" is accepted */
};

static int as_string(struct ctx *x, const yaml_node_t *n, const char *name, int flags,
		     const char *expected, char **out)
{
	const char *v;
	int rc;

	if ((flags & STR_NULLABLE) && is_null(n))
		return set_str(out, NULL) ? oom(x) : 0;
	rc = scalar(x, n, name, expected, &v);
	if (rc)
		return rc;
	if (!*v && !(flags & STR_EMPTY_OK))
		return fail(x, n, "%s: must not be empty%s", name,
			    flags & STR_NULLABLE ? " (write null for none)" : "");
	return set_str(out, v) ? oom(x) : 0;
}

/* ---- value checks ---- */

typedef int (*item_check)(struct ctx *x, const yaml_node_t *n, const char *name, const char *v);

/*
 * A list of strings at @n into (*@v, *@nv), replacing them. null is the
 * empty list. Items must pass @check and be distinct.
 */
static int as_list(struct ctx *x, const yaml_node_t *n, const char *name, size_t max,
		   item_check check, const char *example, char ***v, size_t *nv)
{
	yaml_node_item_t *it;
	size_t count, i;
	char **a;
	int rc = 0;

	if (is_null(n))
		return list_dup(v, nv, NULL, 0) ? oom(x) : 0;
	if (n->type == YAML_SCALAR_NODE)
		return fail(x, n, "%s: expected a list, got %s (write [%s])", name, what(n).s,
			    show((const char *)n->data.scalar.value).s);
	if (n->type != YAML_SEQUENCE_NODE)
		return fail(x, n, "%s: expected a list (like %s), got %s", name, example,
			    what(n).s);
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count > max)
		return fail(x, n, "%s: %zu items, at most %zu are allowed", name, count, max);
	a = calloc(count ? count : 1, sizeof(*a));
	if (!a)
		return oom(x);
	for (i = 0, it = n->data.sequence.items.start; i < count; i++, it++) {
		const yaml_node_t *in = node_at(x, *it);
		struct keyname iname = item_in(name, i);
		const char *s;

		rc = scalar(x, in, iname.s, "a string", &s);
		if (!rc)
			rc = check(x, in, iname.s, s);
		for (size_t j = 0; !rc && j < i; j++)
			if (!strcmp(a[j], s))
				rc = fail(x, in, "%s: %s is already listed as %s[%zu]", iname.s,
					  show(s).s, name, j);
		if (!rc && !(a[i] = strdup(s)))
			rc = oom(x);
		if (rc)
			break;
	}
	if (rc) {
		free_list(a, i);
		return rc;
	}
	free_list(*v, *nv);
	*v = a;
	*nv = count;
	return 0;
}

static int check_glob(struct ctx *x, const yaml_node_t *n, const char *name, const char *v)
{
	const char *p = v;
	struct comp c;

	if (v[0] != '/')
		return fail(x, n,
			    "%s: %s must start with '/' (cgroup paths are from the hierarchy's "
			    "root: \"/system.slice/*.service\")",
			    name, show(v).s);
	if (strstr(v, "//") || (v[1] && v[strlen(v) - 1] == '/'))
		return fail(x, n, "%s: %s has an empty path component", name, show(v).s);
	while (comp_next(&p, &c)) {
		for (size_t i = 0; i < c.n; i++) {
			if (c.s[i] == '\\') {
				i++; /* the next character is literal */
			} else if (c.s[i] == '[') {
				/* fnmatch: a ']' right after '[' or '[!' is part of the set */
				size_t j = i + 1 + (i + 1 < c.n && (c.s[i + 1] == '!' || c.s[i + 1] == '^'));

				j += j < c.n && c.s[j] == ']';
				while (j < c.n && c.s[j] != ']')
					j++;
				if (j >= c.n)
					return fail(x, n, "%s: %s has '[' without ']'", name, show(v).s);
				i = j;
			}
		}
	}
	return 0;
}

/* A perf event name: a built-in (with modifiers), rHEX, or SUBSYS:EVENT. */
static int check_event(struct ctx *x, const yaml_node_t *n, const char *name, const char *v)
{
	struct ev_spec ev;
	const char *colon = strchr(v, ':');
	char *sugg[1];
	size_t ns;
	int rc = ev_parse(v, NULL, &ev);

	if (rc == 0) {
		ev_spec_release(&ev);
		return 0;
	}
	if (rc == -ENOMEM)
		return oom(x);
	if (rc == -EINVAL)
		return fail(x, n, "%s: malformed event %s (EVENT, EVENT:u, EVENT:k, rHEX or SUBSYS:EVENT)",
			    name, show(v).s);
	/* Not built in: a tracepoint, checked against tracefs when the agent
	 * starts, if it has that shape and is not a misspelt EVENT:MODIFIER. */
	if (colon && colon != v && colon[1] && !strchr(colon + 1, ':') &&
	    strspn(colon + 1, "ukh") != strlen(colon + 1)) {
		bool ok = true;

		for (const char *p = v; *p && ok; p++)
			ok = p == colon || isalnum((unsigned char)*p) || *p == '_' || *p == '-' ||
			     *p == '.';
		if (ok)
			return 0;
		return fail(x, n, "%s: malformed tracepoint %s (SUBSYS:EVENT, as in tracefs)", name,
			    show(v).s);
	}
	ns = ev_suggest(v, NULL, sugg, 1);
	if (ns) {
		rc = fail(x, n, "%s: unknown event %s (did you mean '%s'?)", name, show(v).s,
			  sugg[0]);
		free(sugg[0]);
		return rc;
	}
	return fail(x, n, "%s: unknown event %s (see cgperf-agent stat --list-events)", name,
		    show(v).s);
}

static int check_url(struct ctx *x, const yaml_node_t *n, const char *name, const char *v)
{
	const char *p, *host, *end;
	size_t hlen;

	if (strlen(v) > URL_MAXLEN)
		return fail(x, n, "%s: URL longer than %d bytes", name, URL_MAXLEN);
	if (!strncasecmp(v, "http://", 7))
		p = v + 7;
	else if (!strncasecmp(v, "https://", 8))
		p = v + 8;
	else
		return fail(x, n, "%s: %s is not an http:// or https:// URL", name, show(v).s);
	for (const char *q = v; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return fail(x, n, "%s: %s contains a space", name, show(v).s);
	end = p + strcspn(p, "/?#");
	if (memchr(p, '@', (size_t)(end - p)))
		return fail(x, n,
			    "%s: %s has credentials in it, which are not supported (use "
			    "push.token_file)",
			    name, show(v).s);
	host = p;
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (!rb || rb == p + 1)
			return fail(x, n, "%s: %s has a bad IPv6 address", name, show(v).s);
		for (const char *q = p + 1; q < rb; q++)
			if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
				return fail(x, n, "%s: %s has a bad IPv6 address", name, show(v).s);
		p = rb + 1;
	} else {
		while (p < end && (isalnum((unsigned char)*p) || *p == '-' || *p == '.' || *p == '_'))
			p++;
	}
	hlen = (size_t)(p - host);
	if (!hlen)
		return fail(x, n, "%s: %s has no host name", name, show(v).s);
	if (p < end && *p == ':') {
		uint64_t port;
		const char *q = p + 1;

		if (units_digits(&q, &port) < 0 || q != end || port < 1 || port > 65535)
			return fail(x, n, "%s: %s has a bad port (1..65535)", name, show(v).s);
		p = q;
	}
	if (p != end)
		return fail(x, n, "%s: %s has a bad host name", name, show(v).s);
	return 0;
}

static int check_listen(struct ctx *x, const yaml_node_t *n, const char *name, const char *v)
{
	const char *colon = strrchr(v, ':'), *q;
	uint64_t port;

	if (!colon)
		return fail(x, n, "%s: expected HOST:PORT (like 127.0.0.1:9465), got %s", name,
			    show(v).s);
	if (v[0] == '[' ? (colon == v || colon[-1] != ']' || colon - v < 3)
			: (memchr(v, ':', (size_t)(colon - v)) != NULL))
		return fail(x, n, "%s: %s: an IPv6 address goes in brackets ([::1]:9465)", name,
			    show(v).s);
	q = colon + 1;
	if (units_digits(&q, &port) < 0 || *q || port < 1 || port > 65535)
		return fail(x, n, "%s: %s has a bad port (1..65535)", name, show(v).s);
	for (q = v; q < colon; q++)
		if (!isalnum((unsigned char)*q) && !strchr("-._[]:", *q))
			return fail(x, n, "%s: %s has a bad host name", name, show(v).s);
	return 0;
}

/*
 * A probe spec, checked by the probes module's own grammar (probe_spec.h),
 * so a spec the configuration accepts is one `trace -e` accepts. Binaries,
 * symbols and fields are only known on the host, when the agent starts.
 */
static int check_probe(struct ctx *x, const yaml_node_t *n, const char *name, const char *v)
{
	struct probe_spec ps;
	char why[256];
	int rc = probe_spec_parse(v, &ps, why, sizeof(why));

	if (rc == -ENOMEM)
		return oom(x);
	if (rc) {
		for (char *c = why; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		return fail(x, n, "%s: %s", name, why);
	}
	probe_spec_release(&ps);
	return 0;
}

/* 1 if spec @v (already checked) names argument @arg, else 0 with the
 * names it has in @names; -ENOMEM. */
static int probe_has_arg(const char *v, const char *arg, char *names, size_t len)
{
	struct probe_spec ps;
	size_t o = 0;
	int rc = probe_spec_parse(v, &ps, NULL, 0);

	names[0] = '\0';
	if (rc)
		return rc == -ENOMEM ? rc : 0;
	rc = probe_spec_arg(&ps, arg) != NULL;
	for (int i = 0; i < ps.nargs && o < len; i++)
		o += (size_t)snprintf(names + o, len - o, "%s%s", o ? ", " : "", ps.args[i].name);
	probe_spec_release(&ps);
	return rc;
}

/* ---- sections ---- */

static int parse_host(struct ctx *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = section(x, root, "", "host", host_keys, &m);

	if (rc || !m)
		return rc;
	if ((v = get(x, m, "name"))) {
		rc = as_string(x, v, "host.name", STR_NULLABLE | STR_EMPTY_OK, "a host name",
			       &c->host.name);
		if (rc)
			return rc;
		if (!c->host.name && set_str(&c->host.name, ""))
			return oom(x);
		if (strlen(c->host.name) > HOST_NAME_MAXLEN)
			return fail(x, v, "host.name: longer than %d bytes", HOST_NAME_MAXLEN);
	}
	if ((v = get(x, m, "agent_id_file")) &&
	    (rc = as_string(x, v, "host.agent_id_file", 0, "a file path", &c->host.agent_id_file)))
		return rc;
	return 0;
}

static int parse_cgroups(struct ctx *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = section(x, root, "", "cgroups", cgroups_keys, &m);

	if (rc || !m)
		return rc;
	if ((v = get(x, m, "include"))) {
		rc = as_list(x, v, "cgroups.include", CONFIG_MAX_LIST, check_glob, "[\"/**\"]",
			     &c->cgroups.include, &c->cgroups.ninclude);
		if (rc)
			return rc;
		if (!c->cgroups.ninclude)
			return fail(x, v,
				    "cgroups.include: empty, so no cgroup would be profiled (\"/**\" "
				    "is every cgroup)");
	}
	if ((v = get(x, m, "exclude")) &&
	    (rc = as_list(x, v, "cgroups.exclude", CONFIG_MAX_LIST, check_glob,
			  "[\"/system.slice/cron.service\"]", &c->cgroups.exclude,
			  &c->cgroups.nexclude)))
		return rc;
	if ((v = get(x, m, "containers_only")) &&
	    (rc = as_bool(x, v, "cgroups.containers_only", &c->cgroups.containers_only)))
		return rc;
	return 0;
}

static int parse_counters(struct ctx *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v, *ev;
	int rc = section(x, root, "", "counters", counters_keys, &m);

	if (rc || !m)
		return rc;
	if ((v = get(x, m, "enabled")) &&
	    (rc = as_bool(x, v, "counters.enabled", &c->counters.enabled)))
		return rc;
	if ((ev = get(x, m, "events")) &&
	    (rc = as_list(x, ev, "counters.events", CONFIG_MAX_EVENTS, check_event,
			  "[task-clock, cycles]", &c->counters.events, &c->counters.nevents)))
		return rc;
	if (ev && c->counters.enabled && !c->counters.nevents)
		return fail(x, ev, "counters.events: empty (set counters.enabled: false to count nothing)");
	return 0;
}

static int parse_sampling(struct ctx *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = section(x, root, "", "sampling", sampling_keys, &m), e;
	uint64_t b;

	if (rc || !m)
		return rc;
	if ((v = get(x, m, "enabled")) &&
	    (rc = as_bool(x, v, "sampling.enabled", &c->sampling.enabled)))
		return rc;
	if ((v = get(x, m, "frequency")) &&
	    (rc = as_uint(x, v, "sampling.frequency", 1, 10000, &c->sampling.frequency)))
		return rc;
	if ((v = get(x, m, "call_graph"))) {
		if ((rc = as_enum(x, v, "sampling.call_graph", call_graph_names, &e)))
			return rc;
		c->sampling.call_graph = (enum config_call_graph)e;
	}
	if ((v = get(x, m, "stack_bytes"))) {
		if ((rc = as_size(x, v, "sampling.stack_bytes", 8, 65528, &b)))
			return rc;
		if (b % 8)
			return fail(x, v, "sampling.stack_bytes: %" PRIu64 " is not a multiple of 8",
				    b);
		c->sampling.stack_bytes = (unsigned)b;
	}
	if ((v = get(x, m, "event"))) {
		const char *s;

		if ((rc = scalar(x, v, "sampling.event", "an event name", &s)) ||
		    (rc = check_event(x, v, "sampling.event", s)))
			return rc;
		if (set_str(&c->sampling.event, s))
			return oom(x);
	}
	if ((v = get(x, m, "per_cgroup")) &&
	    (rc = as_bool(x, v, "sampling.per_cgroup", &c->sampling.per_cgroup)))
		return rc;
	return 0;
}

static int parse_symbols(struct ctx *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = section(x, root, "", "symbols", symbols_keys, &m), e;

	if (rc || !m)
		return rc;
	if ((v = get(x, m, "demangle"))) {
		if ((rc = as_enum(x, v, "symbols.demangle", demangle_names, &e)))
			return rc;
		c->symbols.demangle = e == 3 ? DEMANGLE_NONE : e == 4 ? DEMANGLE_FULL
								   : (enum demangle_style)e;
	}
	return 0;
}

static int parse_probe(struct ctx *x, const yaml_node_t *n, const char *name,
		       struct config_probe *p)
{
	const yaml_node_t *v, *specn = n;
	struct keyname k;
	const char *s;
	int rc;

	if (n->type == YAML_SCALAR_NODE && !is_null(n)) {
		/* The short form: the spec alone. */
	} else if (n->type == YAML_MAPPING_NODE) {
		if ((rc = check_keys(x, n, name, probe_keys)))
			return rc;
		specn = get(x, n, "spec");
		if (!specn)
			return fail(x, n, "%s: no spec (spec: \"sdt:PROVIDER:NAME@BINARY\", say)",
				    name);
	} else {
		return fail(x, n, "%s: expected a probe (a spec, or a mapping with spec:), got %s",
			    name, what(n).s);
	}
	k = key_in(name, "spec");
	if ((rc = scalar(x, specn, specn == n ? name : k.s, "a probe spec", &s)) ||
	    (rc = check_probe(x, specn, specn == n ? name : k.s, s)))
		return rc;
	if (!(p->spec = strdup(s)))
		return oom(x);
	p->line = (int)specn->start_mark.line + 1;
	p->col = (int)specn->start_mark.column + 1;
	if (specn == n)
		return 0;

	if ((v = get(x, n, "hist"))) {
		char names[256];

		k = key_in(name, "hist");
		if ((rc = as_string(x, v, k.s, STR_NULLABLE, "an argument name", &p->hist)))
			return rc;
		if (p->hist && (rc = probe_has_arg(p->spec, p->hist, names, sizeof(names))) < 0)
			return oom(x);
		if (p->hist && !rc)
			return fail(x, v,
				    "%s: %s is not an argument of the probe; %s%s (name one in the "
				    "spec: \"... %s=arg0\")",
				    k.s, show(p->hist).s, names[0] ? "it has " : "it has none",
				    names, p->hist);
	}
	if ((v = get(x, n, "latency_end"))) {
		k = key_in(name, "latency_end");
		if ((rc = as_string(x, v, k.s, STR_NULLABLE, "a probe spec", &p->latency_end)))
			return rc;
		if (p->latency_end) {
			if ((rc = check_probe(x, v, k.s, p->latency_end)))
				return rc;
			if (!strcmp(p->latency_end, p->spec))
				return fail(x, v, "%s: the same probe as spec; the latency needs another "
					    "probe (for a function: u:BINARY:SYMBOL%%return)", k.s);
		}
	}
	if ((v = get(x, n, "stacks")) && (rc = as_bool(x, v, key_in(name, "stacks").s, &p->stacks)))
		return rc;
	return 0;
}

static int parse_probes(struct ctx *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *n = get(x, root, "probes");
	struct config_probe *a;
	yaml_node_item_t *it;
	size_t count, i;
	int rc = 0;

	if (!n || is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return fail(x, n, "probes: expected a list of probes (- spec: ...), got %s",
			    what(n).s);
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count > CONFIG_MAX_PROBES)
		return fail(x, n, "probes: %zu probes, at most %d are allowed", count,
			    CONFIG_MAX_PROBES);
	a = calloc(count ? count : 1, sizeof(*a));
	if (!a)
		return oom(x);
	for (i = 0, it = n->data.sequence.items.start; i < count; i++, it++) {
		const yaml_node_t *in = node_at(x, *it);
		struct keyname name = item_in("probes", i);

		rc = parse_probe(x, in, name.s, &a[i]);
		for (size_t j = 0; !rc && j < i; j++)
			if (!strcmp(a[j].spec, a[i].spec))
				rc = fail(x, in, "%s: the same probe as probes[%zu] (line %d)", name.s,
					  j, a[j].line);
		if (rc) {
			i++;
			break;
		}
	}
	if (rc) {
		for (size_t j = 0; j < i; j++)
			probe_free(&a[j]);
		free(a);
		return rc;
	}
	for (size_t j = 0; j < c->nprobes; j++)
		probe_free(&c->probes[j]);
	free(c->probes);
	c->probes = a;
	c->nprobes = count;
	return 0;
}

static int parse_push(struct ctx *x, const yaml_node_t *root, struct config *c,
		      const yaml_node_t **collectors)
{
	const yaml_node_t *m, *s, *v, *vi, *vm;
	int rc = section(x, root, "", "push", push_keys, &m);

	if (rc || !m)
		return rc;
	if ((v = get(x, m, "interval")) &&
	    (rc = as_duration(x, v, "push.interval", MS_S, MS_H, &c->push.interval_ms)))
		return rc;
	if ((v = get(x, m, "collectors"))) {
		*collectors = v;
		if ((rc = as_list(x, v, "push.collectors", CONFIG_MAX_COLLECTORS, check_url,
				  "[\"https://collector:9090/api/v1/push\"]", &c->push.collectors,
				  &c->push.ncollectors)))
			return rc;
	}
	if ((v = get(x, m, "token_file")) &&
	    (rc = as_string(x, v, "push.token_file", STR_NULLABLE, "a file path",
			    &c->push.token_file)))
		return rc;
	if ((v = get(x, m, "timeout")) &&
	    (rc = as_duration(x, v, "push.timeout", 100, 10 * MS_M, &c->push.timeout_ms)))
		return rc;
	if ((v = get(x, m, "idle_close")) &&
	    (rc = as_duration(x, v, "push.idle_close", MS_S, MS_H, &c->push.idle_close_ms)))
		return rc;

	if ((rc = section(x, m, "push", "tls", tls_keys, &s)))
		return rc;
	if (s) {
		if ((v = get(x, s, "ca_file")) &&
		    (rc = as_string(x, v, "push.tls.ca_file", STR_NULLABLE, "a file path",
				    &c->push.tls.ca_file)))
			return rc;
		if ((v = get(x, s, "cert_file")) &&
		    (rc = as_string(x, v, "push.tls.cert_file", STR_NULLABLE, "a file path",
				    &c->push.tls.cert_file)))
			return rc;
		if ((v = get(x, s, "key_file")) &&
		    (rc = as_string(x, v, "push.tls.key_file", STR_NULLABLE, "a file path",
				    &c->push.tls.key_file)))
			return rc;
		if ((v = get(x, s, "verify")) &&
		    (rc = as_bool(x, v, "push.tls.verify", &c->push.tls.verify)))
			return rc;
		if (!c->push.tls.cert_file != !c->push.tls.key_file)
			return fail(x, s, "push.tls: cert_file and key_file go together (%s is not set)",
				    c->push.tls.cert_file ? "key_file" : "cert_file");
	}

	if ((rc = section(x, m, "push", "spool", spool_keys, &s)))
		return rc;
	if (s) {
		if ((v = get(x, s, "dir")) &&
		    (rc = as_string(x, v, "push.spool.dir", 0, "a directory", &c->push.spool.dir)))
			return rc;
		if ((v = get(x, s, "max_bytes")) &&
		    (rc = as_size(x, v, "push.spool.max_bytes", UNITS_MIB, UNITS_TIB, &c->push.spool.max_bytes)))
			return rc;
	}

	if ((rc = section(x, m, "push", "retry", retry_keys, &s)))
		return rc;
	if (s) {
		if ((vi = get(x, s, "initial")) &&
		    (rc = as_duration(x, vi, "push.retry.initial", 10, MS_H,
				      &c->push.retry.initial_ms)))
			return rc;
		if ((vm = get(x, s, "max")) &&
		    (rc = as_duration(x, vm, "push.retry.max", 10, 24 * MS_H, &c->push.retry.max_ms)))
			return rc;
		if (c->push.retry.max_ms < c->push.retry.initial_ms) {
			char a[32], b[32];

			units_format_duration_ms(c->push.retry.max_ms, a, sizeof(a));
			units_format_duration_ms(c->push.retry.initial_ms, b, sizeof(b));
			return fail(x, vm ? vm : vi ? vi : s,
				    "push.retry.max (%s) is less than push.retry.initial (%s)", a, b);
		}
	}
	return 0;
}

static int parse_log(struct ctx *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = section(x, root, "", "log", log_keys, &m), e;

	if (rc || !m)
		return rc;
	if ((v = get(x, m, "format"))) {
		if ((rc = as_enum(x, v, "log.format", log_format_names, &e)))
			return rc;
		c->log.format = (enum config_log_format)e;
	}
	if ((v = get(x, m, "level"))) {
		if ((rc = as_enum(x, v, "log.level", log_level_names, &e)))
			return rc;
		c->log.level = (enum config_log_level)e;
	}
	return 0;
}

static int parse_metrics(struct ctx *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = section(x, root, "", "metrics", metrics_keys, &m);

	if (rc || !m)
		return rc;
	if ((v = get(x, m, "listen"))) {
		if ((rc = as_string(x, v, "metrics.listen", STR_NULLABLE, "HOST:PORT",
				    &c->metrics.listen)))
			return rc;
		if (c->metrics.listen && (rc = check_listen(x, v, "metrics.listen", c->metrics.listen)))
			return rc;
	}
	return 0;
}

static int parse_root(struct ctx *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *collectors = NULL;
	int rc;

	if (is_null(root))
		return 0;
	if (root->type != YAML_MAPPING_NODE)
		return fail(x, root, "expected a mapping of sections (host:, push:, ...), got %s",
			    what(root).s);
	if ((rc = check_keys(x, root, "", top_keys)) || (rc = parse_host(x, root, c)) ||
	    (rc = parse_cgroups(x, root, c)) || (rc = parse_counters(x, root, c)) ||
	    (rc = parse_sampling(x, root, c)) || (rc = parse_symbols(x, root, c)) ||
	    (rc = parse_probes(x, root, c)) ||
	    (rc = parse_push(x, root, c, &collectors)) || (rc = parse_log(x, root, c)) ||
	    (rc = parse_metrics(x, root, c)))
		return rc;
	if (!c->push.ncollectors && !c->metrics.listen)
		return fail(x, collectors,
			    "push.collectors: empty and no metrics.listen: the agent's data would go "
			    "nowhere");
	return 0;
}

/* ---- loading ---- */

static int parser_error(struct ctx *x, const yaml_parser_t *p)
{
	/* libyaml's loader fails some allocations (yaml_strdup of a tag,
	 * say) without setting an error: that is out of memory too. */
	if (p->error == YAML_MEMORY_ERROR || p->error == YAML_NO_ERROR)
		return oom(x);
	if (!x->err || !x->errlen)
		return -EINVAL;
	if (p->error == YAML_READER_ERROR) {
		if (p->problem_value != -1)
			snprintf(x->err, x->errlen, "%s: not YAML text: %s (byte 0x%02x at offset %zu)",
				 x->file, p->problem ? p->problem : "unreadable",
				 (unsigned)p->problem_value & 0xff, p->problem_offset);
		else
			snprintf(x->err, x->errlen, "%s: not YAML text: %s (at offset %zu)", x->file,
				 p->problem ? p->problem : "unreadable", p->problem_offset);
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

/*
 * A first pass over the events, before the document is built. libyaml
 * takes time quadratic in the nesting depth (each token rescans the stack
 * of possible simple keys) and in the number of anchors (each alias is
 * looked up by a linear scan). The schema is four levels deep and needs no
 * anchors at all, so generous caps on both cost nothing to a real file and
 * keep a hostile one from taking minutes.
 */
static int prescan(struct ctx *x, const char *buf, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, anchors = 0, aliases = 0, rc = 0;

	if (!yaml_parser_initialize(&p))
		return oom(x);
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
		if (depth > CONFIG_MAX_DEPTH)
			rc = fail_mark(x, &ev.start_mark, "nested more than %d levels deep",
				       CONFIG_MAX_DEPTH);
		else if (anchors > CONFIG_MAX_ANCHORS || aliases > CONFIG_MAX_ANCHORS)
			rc = fail_mark(x, &ev.start_mark, "more than %d %s", CONFIG_MAX_ANCHORS,
				       anchors > CONFIG_MAX_ANCHORS ? "anchors (&)" : "aliases (*)");
		yaml_event_delete(&ev);
		if (rc || type == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&p);
	return rc;
}

int config_parse(const char *name, const char *buf, size_t len, struct config **out, char *err,
		 size_t errlen)
{
	struct ctx x = {.file = name ? name : "<config>", .err = err, .errlen = errlen};
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	const yaml_node_t *root;
	struct config *c;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (len > CONFIG_MAX_FILE) {
		if (err && errlen)
			snprintf(err, errlen, "%s: larger than %d bytes", x.file, CONFIG_MAX_FILE);
		return -EFBIG;
	}
	if (!buf) {
		buf = "";
		len = 0;
	}
	rc = prescan(&x, buf, len);
	if (rc)
		return rc;
	c = config_defaults();
	if (!c || set_str(&c->path, x.file)) {
		config_free(c);
		return oom(&x);
	}
	if (!yaml_parser_initialize(&parser)) {
		config_free(c);
		return oom(&x);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = parser_error(&x, &parser);
		goto out_parser;
	}
	x.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		rc = 0;
		goto out_doc;
	}
	if (!yaml_parser_load(&parser, &extra)) {
		rc = parser_error(&x, &parser);
		goto out_doc;
	}
	rc = 0;
	if (yaml_document_get_root_node(&extra))
		rc = fail(&x, yaml_document_get_root_node(&extra),
			  "a second YAML document; the configuration is one document");
	yaml_document_delete(&extra);
	if (!rc)
		rc = parse_root(&x, root, c);
out_doc:
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
	if (rc) {
		config_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int config_load(const char *path, struct config **out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, rc;

	if (err && errlen)
		err[0] = '\0';
	if (!path) {
		struct config *c = config_defaults();

		if (!c) {
			if (err && errlen)
				snprintf(err, errlen, "configuration: out of memory");
			return -ENOMEM;
		}
		*out = c;
		return 0;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto fail_io;
	}
	for (;;) {
		ssize_t r;

		if (cap - len < 4096) {
			char *nb;

			cap = cap ? cap * 2 : 16384;
			if (cap > CONFIG_MAX_FILE + 1)
				cap = CONFIG_MAX_FILE + 1;
			nb = realloc(buf, cap);
			if (!nb) {
				rc = -ENOMEM;
				goto fail_fd;
			}
			buf = nb;
		}
		if (len == cap) {
			rc = -EFBIG;
			goto fail_fd;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto fail_fd;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	rc = config_parse(path, buf, len, out, err, errlen);
	free(buf);
	return rc;

fail_fd:
	close(fd);
fail_io:
	free(buf);
	if (err && errlen) {
		if (rc == -EFBIG)
			snprintf(err, errlen, "%s: larger than %d bytes", path, CONFIG_MAX_FILE);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	}
	return rc;
}

/* ---- dump ---- */

/* A double-quoted YAML string; anything not printable escaped. */
static void put_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			fprintf(f, "\\u%04x", *++p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void put_opt(FILE *f, const char *s)
{
	if (s)
		put_str(f, s);
	else
		fputs("null", f);
}

static void put_list(FILE *f, const char *indent, char *const *v, size_t n)
{
	if (!n) {
		fputs(" []\n", f);
		return;
	}
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s- ", indent);
		put_str(f, v[i]);
		fputc('\n', f);
	}
}

static const char *tf(bool b)
{
	return b ? "true" : "false";
}

static const char *enum_name(const char *const *names, int v)
{
	return v >= 0 && (size_t)v < nkeys(names) ? names[v] : names[0];
}

int config_dump(const struct config *c, FILE *f)
{
	char a[32], b[32];

	if (!c || !f)
		return -EINVAL;
	fputs("# cgperf-agent configuration", f);
	if (c->path) {
		fputs(" (", f);
		for (const char *p = c->path; *p; p++)
			fputc(*p >= 0x20 && *p < 0x7f ? *p : '?', f); /* a comment: ASCII only */
		fputs(" and defaults)", f);
	} else {
		fputs(" (defaults)", f);
	}
	fputs("\nhost:\n  name: ", f);
	put_str(f, c->host.name ? c->host.name : "");
	if (!c->host.name || !*c->host.name)
		fputs("  # the host's name", f);
	fputs("\n  agent_id_file: ", f);
	put_opt(f, c->host.agent_id_file);

	fputs("\ncgroups:\n  include:", f);
	put_list(f, "    ", c->cgroups.include, c->cgroups.ninclude);
	fputs("  exclude:", f);
	put_list(f, "    ", c->cgroups.exclude, c->cgroups.nexclude);
	fprintf(f, "  containers_only: %s\n", tf(c->cgroups.containers_only));

	fprintf(f, "counters:\n  enabled: %s\n  events:", tf(c->counters.enabled));
	put_list(f, "    ", c->counters.events, c->counters.nevents);

	fprintf(f,
		"sampling:\n  enabled: %s\n  frequency: %u\n  call_graph: %s\n  stack_bytes: %u\n"
		"  event: ",
		tf(c->sampling.enabled), c->sampling.frequency,
		enum_name(call_graph_names, (int)c->sampling.call_graph), c->sampling.stack_bytes);
	put_opt(f, c->sampling.event);
	fprintf(f, "\n  per_cgroup: %s\n", tf(c->sampling.per_cgroup));
	fprintf(f, "symbols:\n  demangle: %s\n", demangle_style_name(c->symbols.demangle));

	fputs("probes:", f);
	if (!c->nprobes)
		fputs(" []", f);
	for (size_t i = 0; i < c->nprobes; i++) {
		const struct config_probe *p = &c->probes[i];

		fputs("\n  - spec: ", f);
		put_opt(f, p->spec);
		fputs("\n    hist: ", f);
		put_opt(f, p->hist);
		fputs("\n    latency_end: ", f);
		put_opt(f, p->latency_end);
		fprintf(f, "\n    stacks: %s", tf(p->stacks));
	}

	units_format_duration_ms(c->push.interval_ms, a, sizeof(a));
	fprintf(f, "\npush:\n  interval: %s\n  collectors:", a);
	put_list(f, "    ", c->push.collectors, c->push.ncollectors);
	fputs("  token_file: ", f);
	put_opt(f, c->push.token_file);
	units_format_duration_ms(c->push.timeout_ms, a, sizeof(a));
	fprintf(f, "\n  timeout: %s", a);
	units_format_duration_ms(c->push.idle_close_ms, a, sizeof(a));
	fprintf(f, "\n  idle_close: %s\n  tls:\n    ca_file: ", a);
	put_opt(f, c->push.tls.ca_file);
	fputs("\n    cert_file: ", f);
	put_opt(f, c->push.tls.cert_file);
	fputs("\n    key_file: ", f);
	put_opt(f, c->push.tls.key_file);
	fprintf(f, "\n    verify: %s\n  spool:\n    dir: ", tf(c->push.tls.verify));
	put_opt(f, c->push.spool.dir);
	units_format_size(c->push.spool.max_bytes, a, sizeof(a));
	fprintf(f, "\n    max_bytes: %s\n", a);
	units_format_duration_ms(c->push.retry.initial_ms, a, sizeof(a));
	units_format_duration_ms(c->push.retry.max_ms, b, sizeof(b));
	fprintf(f, "  retry:\n    initial: %s\n    max: %s\n", a, b);

	fprintf(f, "log:\n  format: %s\n  level: %s\n",
		enum_name(log_format_names, (int)c->log.format),
		enum_name(log_level_names, (int)c->log.level));
	fputs("metrics:\n  listen: ", f);
	put_opt(f, c->metrics.listen);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}
