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
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "agent/cmd/config.h"
#include "agent/cmd/config_internal.h"
#include "agent/perf/events.h"
#include "agent/perf/probe_spec.h"
#include "lib/strv.h"
#include "lib/suggest.h"
#include "lib/slurp.h"
#include "lib/units.h"
#include "lib/ydoc.h"

#define MS_S UINT64_C(1000)
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)

#define HOST_NAME_MAXLEN 255
#define URL_MAXLEN 2048

/* ---- defaults ---- */

static const char *const default_events[] = {
	"task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles", "instructions",
};
static const char *const default_include[] = {"/**"};
static const char *const default_collectors[] = {"http://127.0.0.1:9090/api/v1/push"};

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

struct config *config_defaults(void)
{
	struct config *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (strv_set(&c->host.name, "") ||
	    strv_set(&c->host.agent_id_file, "/var/lib/cgperf/agent-id") ||
	    strv_dup(&c->cgroups.include, &c->cgroups.ninclude, default_include,
		     NELEMS(default_include)) ||
	    strv_dup(&c->cgroups.exclude, &c->cgroups.nexclude, NULL, 0) ||
	    strv_dup(&c->counters.events, &c->counters.nevents, default_events,
		     NELEMS(default_events)) ||
	    strv_set(&c->sampling.event, "cpu-clock") ||
	    strv_dup(&c->push.collectors, &c->push.ncollectors, default_collectors,
		     NELEMS(default_collectors)) ||
	    strv_set(&c->push.spool.dir, "/var/lib/cgperf/spool"))
		goto err;
	c->cgroups.containers_only = false;
	c->counters.enabled = true;
	c->sampling.enabled = true;
	c->sampling.frequency = 49;
	c->sampling.call_graph = CONFIG_CALL_GRAPH_FP;
	c->sampling.stack_bytes = 8192;
	c->sampling.off_cpu_every = 1;
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
	config_identity_defaults(c);
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
	strv_free(p->latency_key, p->nlatency_key);
}

void config_free(struct config *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->host.name);
	free(c->host.agent_id_file);
	strv_free(c->cgroups.include, c->cgroups.ninclude);
	strv_free(c->cgroups.exclude, c->cgroups.nexclude);
	strv_free(c->counters.events, c->counters.nevents);
	free(c->sampling.event);
	for (size_t i = 0; i < c->nprobes; i++)
		probe_free(&c->probes[i]);
	free(c->probes);
	strv_free(c->push.collectors, c->push.ncollectors);
	free(c->push.token_file);
	free(c->push.tls.ca_file);
	free(c->push.tls.cert_file);
	free(c->push.tls.key_file);
	free(c->push.spool.dir);
	free(c->metrics.listen);
	config_identity_free(c);
	free(c);
}

/* ---- the schema ---- */

static const char *const top_keys[] = {"host", "cgroups", "counters", "sampling", "symbols",
				       "probes", "push", "log", "metrics", "identity", NULL};
static const char *const host_keys[] = {"name", "agent_id_file", NULL};
static const char *const cgroups_keys[] = {"include", "exclude", "containers_only", NULL};
static const char *const counters_keys[] = {"events", "enabled", NULL};
static const char *const sampling_keys[] = {"enabled", "frequency", "call_graph", "stack_bytes",
					    "event", "per_cgroup", "off_cpu", "off_cpu_min_us",
					    "off_cpu_every", "off_cpu_stack_bytes", NULL};
static const char *const symbols_keys[] = {"demangle", NULL};
static const char *const probe_keys[] = {"spec", "hist", "latency_end", "latency_key", "stacks",
					 NULL};
static const char *const push_keys[] = {"interval", "collectors", "mode", "token_file", "timeout",
					"idle_close", "tls", "spool", "retry", NULL};
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
	{"identity", config_identity_keys},
};

const char *const config_call_graph_names[] = {"fp", "dwarf", NULL};
/* Indexed by enum demangle_style; then the booleans, false = none, true = full. */
static const char *const demangle_names[] = {"none", "short", "full", "false", "true", NULL};
const char *const config_log_format_names[] = {"logfmt", "json", NULL};
const char *const config_push_mode_names[] = {"fanout", "failover", NULL};
const char *const config_log_level_names[] = {"debug", "info", "warn", "error", NULL};

/* ---- the walk ---- */


/* The hint for an unknown key with no near spelling: a key of another
 * section, written in the wrong place. */
static void misplaced_key(void *ctx, const char *name, const char *where, char *buf, size_t len)
{
	const char *other[3];
	size_t nother = 0, n;

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

/* ---- value checks ---- */

static int check_glob(struct ydoc *x, const yaml_node_t *n, const char *name, const char *v)
{
	const char *why = config_glob_check(v);

	return why ? ydoc_fail(x, n, "%s: %s %s", name, ydoc_show(v).s, why) : 0;
}

/* A perf event name: a built-in (with modifiers), rHEX, or SUBSYS:EVENT. */
static int check_event(struct ydoc *x, const yaml_node_t *n, const char *name, const char *v)
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
		return ydoc_oom(x);
	if (rc == -EINVAL)
		return ydoc_fail(
			x, n,
			"%s: malformed event %s (EVENT, EVENT:u, EVENT:k, rHEX or SUBSYS:EVENT)",
			name, ydoc_show(v).s);
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
		return ydoc_fail(x, n, "%s: malformed tracepoint %s (SUBSYS:EVENT, as in tracefs)",
				 name, ydoc_show(v).s);
	}
	ns = ev_suggest(v, NULL, sugg, 1);
	if (ns) {
		rc = ydoc_fail(x, n, "%s: unknown event %s (did you mean '%s'?)", name,
			       ydoc_show(v).s, sugg[0]);
		free(sugg[0]);
		return rc;
	}
	return ydoc_fail(x, n, "%s: unknown event %s (see cgperf-agent stat --list-events)", name,
		    ydoc_show(v).s);
}

static int check_url(struct ydoc *x, const yaml_node_t *n, const char *name, const char *v)
{
	const char *p, *host, *end;
	size_t hlen;

	if (strlen(v) > URL_MAXLEN)
		return ydoc_fail(x, n, "%s: URL longer than %d bytes", name, URL_MAXLEN);
	if (!strncasecmp(v, "http://", 7))
		p = v + 7;
	else if (!strncasecmp(v, "https://", 8))
		p = v + 8;
	else
		return ydoc_fail(x, n, "%s: %s is not an http:// or https:// URL", name,
				 ydoc_show(v).s);
	for (const char *q = v; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return ydoc_fail(x, n, "%s: %s contains a space", name, ydoc_show(v).s);
	end = p + strcspn(p, "/?#");
	if (memchr(p, '@', (size_t)(end - p)))
		return ydoc_fail(x, n,
			    "%s: %s has credentials in it, which are not supported (use "
			    "push.token_file)",
			    name, ydoc_show(v).s);
	host = p;
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (!rb || rb == p + 1)
			return ydoc_fail(x, n, "%s: %s has a bad IPv6 address", name,
					 ydoc_show(v).s);
		for (const char *q = p + 1; q < rb; q++)
			if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
				return ydoc_fail(x, n, "%s: %s has a bad IPv6 address", name,
						 ydoc_show(v).s);
		p = rb + 1;
	} else {
		while (p < end &&
		       (isalnum((unsigned char)*p) || *p == '-' || *p == '.' || *p == '_'))
			p++;
	}
	hlen = (size_t)(p - host);
	if (!hlen)
		return ydoc_fail(x, n, "%s: %s has no host name", name, ydoc_show(v).s);
	if (p < end && *p == ':') {
		uint64_t port;
		const char *q = p + 1;

		if (units_digits(&q, &port) < 0 || q != end || port < 1 || port > 65535)
			return ydoc_fail(x, n, "%s: %s has a bad port (1..65535)", name,
					 ydoc_show(v).s);
		p = q;
	}
	if (p != end)
		return ydoc_fail(x, n, "%s: %s has a bad host name", name, ydoc_show(v).s);
	return 0;
}

static int check_listen(struct ydoc *x, const yaml_node_t *n, const char *name, const char *v)
{
	const char *colon = strrchr(v, ':'), *q;
	uint64_t port;

	if (!colon)
		return ydoc_fail(x, n, "%s: expected HOST:PORT (like 127.0.0.1:9465), got %s", name,
			    ydoc_show(v).s);
	if (v[0] == '[' ? (colon == v || colon[-1] != ']' || colon - v < 3)
			: (memchr(v, ':', (size_t)(colon - v)) != NULL))
		return ydoc_fail(x, n, "%s: %s: an IPv6 address goes in brackets ([::1]:9465)",
				 name, ydoc_show(v).s);
	q = colon + 1;
	if (units_digits(&q, &port) < 0 || *q || port < 1 || port > 65535)
		return ydoc_fail(x, n, "%s: %s has a bad port (1..65535)", name, ydoc_show(v).s);
	for (q = v; q < colon; q++)
		if (!isalnum((unsigned char)*q) && !strchr("-._[]:", *q))
			return ydoc_fail(x, n, "%s: %s has a bad host name", name, ydoc_show(v).s);
	return 0;
}

/*
 * A probe spec, checked by the probes module's own grammar (probe_spec.h),
 * so a spec the configuration accepts is one `trace -e` accepts. Binaries,
 * symbols and fields are only known on the host, when the agent starts.
 */
static int check_probe(struct ydoc *x, const yaml_node_t *n, const char *name, const char *v)
{
	struct probe_spec ps;
	char why[256];
	int rc = probe_spec_parse(v, &ps, why, sizeof(why));

	if (rc == -ENOMEM)
		return ydoc_oom(x);
	if (rc) {
		for (char *c = why; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		return ydoc_fail(x, n, "%s: %s", name, why);
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

/* The plain keys of each section, read by ydoc_fields() into struct config. */
#define CF(member) offsetof(struct config, member)
_Static_assert(sizeof(enum config_call_graph) == sizeof(int) &&
		       sizeof(enum config_log_format) == sizeof(int) &&
		       sizeof(enum config_log_level) == sizeof(int) &&
		       sizeof(enum config_push_mode) == sizeof(int),
	       "ydoc_fields reads enums as int");
static const struct ydoc_field host_fields[] = {
	{.key = "agent_id_file", .kind = YDOC_F_STRING, .off = CF(host.agent_id_file),
	 .expected = "a file path"},
};
static const struct ydoc_field sampling_fields[] = {
	{.key = "enabled", .kind = YDOC_F_BOOL, .off = CF(sampling.enabled)},
	{.key = "frequency", .kind = YDOC_F_UINT, .off = CF(sampling.frequency),
	 .min = 1, .max = 10000},
	{.key = "call_graph", .kind = YDOC_F_ENUM, .off = CF(sampling.call_graph),
	 .names = config_call_graph_names},
	{.key = "off_cpu", .kind = YDOC_F_BOOL, .off = CF(sampling.off_cpu)},
	{.key = "off_cpu_min_us", .kind = YDOC_F_UINT, .off = CF(sampling.off_cpu_min_us),
	 .max = 3600000000u},
	{.key = "off_cpu_every", .kind = YDOC_F_UINT, .off = CF(sampling.off_cpu_every),
	 .min = 1, .max = 1000},
};
static const struct ydoc_field push_fields[] = {
	{.key = "interval", .kind = YDOC_F_DURATION_MS, .off = CF(push.interval_ms),
	 .min = MS_S, .max = MS_H},
	{.key = "token_file", .kind = YDOC_F_STRING, .off = CF(push.token_file),
	 .flags = YDOC_NULLABLE, .expected = "a file path"},
	{.key = "timeout", .kind = YDOC_F_DURATION_MS, .off = CF(push.timeout_ms),
	 .min = 100, .max = 10 * MS_M},
	{.key = "mode", .kind = YDOC_F_ENUM, .off = CF(push.mode),
	 .names = config_push_mode_names},
	{.key = "idle_close", .kind = YDOC_F_DURATION_MS, .off = CF(push.idle_close_ms),
	 .min = MS_S, .max = MS_H},
};
static const struct ydoc_field tls_fields[] = {
	{.key = "ca_file", .kind = YDOC_F_STRING, .off = CF(push.tls.ca_file),
	 .flags = YDOC_NULLABLE, .expected = "a file path"},
	{.key = "cert_file", .kind = YDOC_F_STRING, .off = CF(push.tls.cert_file),
	 .flags = YDOC_NULLABLE, .expected = "a file path"},
	{.key = "key_file", .kind = YDOC_F_STRING, .off = CF(push.tls.key_file),
	 .flags = YDOC_NULLABLE, .expected = "a file path"},
	{.key = "verify", .kind = YDOC_F_BOOL, .off = CF(push.tls.verify)},
};
static const struct ydoc_field spool_fields[] = {
	{.key = "dir", .kind = YDOC_F_STRING, .off = CF(push.spool.dir), .expected = "a directory"},
	{.key = "max_bytes", .kind = YDOC_F_SIZE, .off = CF(push.spool.max_bytes),
	 .min = UNITS_MIB, .max = UNITS_TIB},
};
static const struct ydoc_field retry_fields[] = {
	{.key = "initial", .kind = YDOC_F_DURATION_MS, .off = CF(push.retry.initial_ms),
	 .min = 10, .max = MS_H},
	{.key = "max", .kind = YDOC_F_DURATION_MS, .off = CF(push.retry.max_ms),
	 .min = 10, .max = 24 * MS_H},
};
static const struct ydoc_field log_fields[] = {
	{.key = "format", .kind = YDOC_F_ENUM, .off = CF(log.format),
	 .names = config_log_format_names},
	{.key = "level", .kind = YDOC_F_ENUM, .off = CF(log.level),
	 .names = config_log_level_names},
};
static const struct ydoc_field counters_fields[] = {
	{.key = "enabled", .kind = YDOC_F_BOOL, .off = CF(counters.enabled)},
};
static const struct ydoc_field metrics_fields[] = {
	{.key = "listen", .kind = YDOC_F_STRING, .off = CF(metrics.listen),
	 .flags = YDOC_NULLABLE, .expected = "HOST:PORT"},
};
#undef CF
#define FIELDS(x, m, where, t, c) ydoc_fields(x, m, where, t, sizeof(t) / sizeof(t[0]), c)

/* Top-level section @key (*@m, NULL when absent) with only @keys, and its
 * plain @fields. */
static int section_fields(struct ydoc *x, const yaml_node_t *root, const char *key,
			  const char *const *keys, const struct ydoc_field *fields, size_t n,
			  struct config *c, const yaml_node_t **m)
{
	int rc = ydoc_section(x, root, "", key, keys, m);

	return rc ? rc : ydoc_fields(x, *m, key, fields, n, c);
}
#define SECTION(x, root, key, c, m)                                                          \
	section_fields(x, root, #key, key##_keys, key##_fields,                              \
		       sizeof(key##_fields) / sizeof(key##_fields[0]), c, m)

static int parse_host(struct ydoc *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = ydoc_section(x, root, "", "host", host_keys, &m);

	if (rc || !m)
		return rc;
	if ((v = ydoc_get(x, m, "name"))) {
		rc = ydoc_string(x, v, "host.name", YDOC_NULLABLE | YDOC_EMPTY_OK, "a host name",
			       &c->host.name);
		if (rc)
			return rc;
		if (!c->host.name && strv_set(&c->host.name, ""))
			return ydoc_oom(x);
		if (strlen(c->host.name) > HOST_NAME_MAXLEN)
			return ydoc_fail(x, v, "host.name: longer than %d bytes", HOST_NAME_MAXLEN);
	}
	return FIELDS(x, m, "host", host_fields, c);
}

static int parse_cgroups(struct ydoc *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = ydoc_section(x, root, "", "cgroups", cgroups_keys, &m);

	if (rc || !m)
		return rc;
	if ((v = ydoc_get(x, m, "include"))) {
		rc = ydoc_list(x, v, "cgroups.include", CONFIG_MAX_LIST, check_glob, "[\"/**\"]",
			     &c->cgroups.include, &c->cgroups.ninclude);
		if (rc)
			return rc;
		if (!c->cgroups.ninclude)
			return ydoc_fail(
				x, v,
				"cgroups.include: empty, so no cgroup would be profiled (\"/**\" "
				"is every cgroup)");
	}
	if ((v = ydoc_get(x, m, "exclude")) &&
	    (rc = ydoc_list(x, v, "cgroups.exclude", CONFIG_MAX_LIST, check_glob,
			  "[\"/system.slice/cron.service\"]", &c->cgroups.exclude,
			  &c->cgroups.nexclude)))
		return rc;
	if ((v = ydoc_get(x, m, "containers_only")) &&
	    (rc = ydoc_bool(x, v, "cgroups.containers_only", &c->cgroups.containers_only)))
		return rc;
	return 0;
}

static int parse_counters(struct ydoc *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *ev;
	int rc = SECTION(x, root, counters, c, &m);

	if (rc || !m)
		return rc;
	if ((ev = ydoc_get(x, m, "events")) &&
	    (rc = ydoc_list(x, ev, "counters.events", CONFIG_MAX_EVENTS, check_event,
			  "[task-clock, cycles]", &c->counters.events, &c->counters.nevents)))
		return rc;
	if (ev && c->counters.enabled && !c->counters.nevents)
		return ydoc_fail(
			x, ev,
			"counters.events: empty (set counters.enabled: false to count nothing)");
	return 0;
}

/* sampling.@key, a user stack size: 8..65528, a multiple of 8. */
static int stack_size(struct ydoc *x, const yaml_node_t *m, const char *key, unsigned *out)
{
	const yaml_node_t *v = ydoc_get(x, m, key);
	char name[64];
	uint64_t b;
	int rc;

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "sampling.%s", key);
	if ((rc = ydoc_size(x, v, name, 8, 65528, &b)))
		return rc;
	if (b % 8)
		return ydoc_fail(x, v, "%s: %" PRIu64 " is not a multiple of 8", name, b);
	*out = (unsigned)b;
	return 0;
}

static int parse_sampling(struct ydoc *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = SECTION(x, root, sampling, c, &m);

	if (rc || !m)
		return rc;
	if ((rc = stack_size(x, m, "stack_bytes", &c->sampling.stack_bytes)) ||
	    (rc = stack_size(x, m, "off_cpu_stack_bytes", &c->sampling.off_cpu_stack_bytes)))
		return rc;
	if ((v = ydoc_get(x, m, "event"))) {
		const char *s;

		if ((rc = ydoc_scalar(x, v, "sampling.event", "an event name", &s)) ||
		    (rc = check_event(x, v, "sampling.event", s)))
			return rc;
		if (strv_set(&c->sampling.event, s))
			return ydoc_oom(x);
	}
	if ((v = ydoc_get(x, m, "per_cgroup")) &&
	    (rc = ydoc_bool(x, v, "sampling.per_cgroup", &c->sampling.per_cgroup)))
		return rc;
	return 0;
}

static int parse_symbols(struct ydoc *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = ydoc_section(x, root, "", "symbols", symbols_keys, &m), e;

	if (rc || !m)
		return rc;
	if ((v = ydoc_get(x, m, "demangle"))) {
		if ((rc = ydoc_enum(x, v, "symbols.demangle", demangle_names, &e)))
			return rc;
		c->symbols.demangle = e == 3 ? DEMANGLE_NONE : e == 4 ? DEMANGLE_FULL
								   : (enum demangle_style)e;
	}
	return 0;
}

/* latency_key: fields that both the spec and latency_end name as arguments. */
static int parse_latency_key(struct ydoc *x, const yaml_node_t *v, const char *name,
			     struct config_probe *p)
{
	struct ydoc_name k = ydoc_key_in(name, "latency_key");
	char names[256];
	int rc;

	if ((rc = ydoc_list(x, v, k.s, CONFIG_MAX_LATENCY_KEY, NULL, "[dev, sector]",
			    &p->latency_key, &p->nlatency_key)))
		return rc;
	if (p->nlatency_key && !p->latency_end)
		return ydoc_fail(x, v, "%s: pairs a latency: give latency_end too", k.s);
	for (size_t i = 0; i < p->nlatency_key; i++)
		for (int e = 0; e < 2; e++) {
			const char *spec = e ? p->latency_end : p->spec;

			rc = probe_has_arg(spec, p->latency_key[i], names, sizeof(names));
			if (rc < 0)
				return ydoc_oom(x);
			if (!rc)
				return ydoc_fail(x, v,
					"%s: %s is not an argument of %s; %s%s (name the field "
					"in both specs: \"block:block_rq_issue dev sector\")",
					k.s, ydoc_show(p->latency_key[i]).s, e ? "latency_end" : "spec",
					names[0] ? "it has " : "it has none", names);
		}
	return 0;
}

static int parse_probe(struct ydoc *x, const yaml_node_t *n, const char *name,
		       struct config_probe *p)
{
	const yaml_node_t *v, *specn = n;
	struct ydoc_name k;
	const char *s;
	int rc;

	if (n->type == YAML_SCALAR_NODE && !ydoc_is_null(n)) {
		/* The short form: the spec alone. */
	} else if (n->type == YAML_MAPPING_NODE) {
		if ((rc = ydoc_check_keys(x, n, name, probe_keys)))
			return rc;
		specn = ydoc_get(x, n, "spec");
		if (!specn)
			return ydoc_fail(x, n,
					 "%s: no spec (spec: \"sdt:PROVIDER:NAME@BINARY\", say)",
					 name);
	} else {
		return ydoc_fail(x, n,
				 "%s: expected a probe (a spec, or a mapping with spec:), got %s",
				 name, ydoc_what(n).s);
	}
	k = ydoc_key_in(name, "spec");
	if ((rc = ydoc_scalar(x, specn, specn == n ? name : k.s, "a probe spec", &s)) ||
	    (rc = check_probe(x, specn, specn == n ? name : k.s, s)))
		return rc;
	if (!(p->spec = strdup(s)))
		return ydoc_oom(x);
	p->line = (int)specn->start_mark.line + 1;
	p->col = (int)specn->start_mark.column + 1;
	if (specn == n)
		return 0;

	if ((v = ydoc_get(x, n, "hist"))) {
		char names[256];

		k = ydoc_key_in(name, "hist");
		if ((rc = ydoc_string(x, v, k.s, YDOC_NULLABLE, "an argument name", &p->hist)))
			return rc;
		if (p->hist && (rc = probe_has_arg(p->spec, p->hist, names, sizeof(names))) < 0)
			return ydoc_oom(x);
		if (p->hist && !rc)
			return ydoc_fail(x, v,
				    "%s: %s is not an argument of the probe; %s%s (name one in the "
				    "spec: \"... %s=arg0\")",
				    k.s, ydoc_show(p->hist).s, names[0] ? "it has " : "it has none",
				    names, p->hist);
	}
	if ((v = ydoc_get(x, n, "latency_end"))) {
		k = ydoc_key_in(name, "latency_end");
		if ((rc = ydoc_string(x, v, k.s, YDOC_NULLABLE, "a probe spec", &p->latency_end)))
			return rc;
		if (p->latency_end) {
			if ((rc = check_probe(x, v, k.s, p->latency_end)))
				return rc;
			if (!strcmp(p->latency_end, p->spec))
				return ydoc_fail(
					x, v,
					"%s: the same probe as spec; the latency needs another "
					"probe (for a function: u:BINARY:SYMBOL%%return)",
					k.s);
		}
	}
	if ((v = ydoc_get(x, n, "latency_key")) && (rc = parse_latency_key(x, v, name, p)))
		return rc;
	if ((v = ydoc_get(x, n, "stacks")) &&
	    (rc = ydoc_bool(x, v, ydoc_key_in(name, "stacks").s, &p->stacks)))
		return rc;
	return 0;
}

static int parse_probes(struct ydoc *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *n = ydoc_get(x, root, "probes");
	struct config_probe *a;
	yaml_node_item_t *it;
	size_t count, i;
	int rc = 0;

	if (!n || ydoc_is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return ydoc_fail(x, n, "probes: expected a list of probes (- spec: ...), got %s",
			    ydoc_what(n).s);
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count > CONFIG_MAX_PROBES)
		return ydoc_fail(x, n, "probes: %zu probes, at most %d are allowed", count,
			    CONFIG_MAX_PROBES);
	a = calloc(count ? count : 1, sizeof(*a));
	if (!a)
		return ydoc_oom(x);
	for (i = 0, it = n->data.sequence.items.start; i < count; i++, it++) {
		const yaml_node_t *in = ydoc_node(x, *it);
		struct ydoc_name name = ydoc_item_in("probes", i);

		rc = parse_probe(x, in, name.s, &a[i]);
		for (size_t j = 0; !rc && j < i; j++)
			if (!strcmp(a[j].spec, a[i].spec))
				rc = ydoc_fail(x, in, "%s: the same probe as probes[%zu] (line %d)",
					       name.s, j, a[j].line);
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

static int parse_push(struct ydoc *x, const yaml_node_t *root, struct config *c,
		      const yaml_node_t **collectors)
{
	const yaml_node_t *m, *s, *v;
	int rc = SECTION(x, root, push, c, &m);

	if (rc || !m)
		return rc;
	if ((v = ydoc_get(x, m, "collectors"))) {
		*collectors = v;
		if ((rc = ydoc_list(x, v, "push.collectors", CONFIG_MAX_COLLECTORS, check_url,
				  "[\"https://collector:9090/api/v1/push\"]", &c->push.collectors,
				  &c->push.ncollectors)))
			return rc;
	}
	if ((rc = ydoc_section(x, m, "push", "tls", tls_keys, &s)) ||
	    (rc = FIELDS(x, s, "push.tls", tls_fields, c)))
		return rc;
	if (s) {
		if (!c->push.tls.cert_file != !c->push.tls.key_file)
			return ydoc_fail(
				x, s,
				"push.tls: cert_file and key_file go together (%s is not set)",
				c->push.tls.cert_file ? "key_file" : "cert_file");
	}

	if ((rc = ydoc_section(x, m, "push", "spool", spool_keys, &s)) ||
	    (rc = FIELDS(x, s, "push.spool", spool_fields, c)))
		return rc;

	if ((rc = ydoc_section(x, m, "push", "retry", retry_keys, &s)) ||
	    (rc = FIELDS(x, s, "push.retry", retry_fields, c)))
		return rc;
	if (s) {
		const yaml_node_t *vi = ydoc_get(x, s, "initial"), *vm = ydoc_get(x, s, "max");

		if (c->push.retry.max_ms < c->push.retry.initial_ms) {
			char a[32], b[32];

			units_format_duration_ms(c->push.retry.max_ms, a, sizeof(a));
			units_format_duration_ms(c->push.retry.initial_ms, b, sizeof(b));
			return ydoc_fail(x,
					 vm   ? vm
					 : vi ? vi
					      : s,
					 "push.retry.max (%s) is less than push.retry.initial (%s)",
					 a, b);
		}
	}
	return 0;
}

static int parse_metrics(struct ydoc *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = SECTION(x, root, metrics, c, &m);

	if (rc || !m || !(v = ydoc_get(x, m, "listen")) || !c->metrics.listen)
		return rc;
	return check_listen(x, v, "metrics.listen", c->metrics.listen);
}

static int parse_root(struct ydoc *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *collectors = NULL, *m;
	int rc;

	if (ydoc_is_null(root))
		return 0;
	if (root->type != YAML_MAPPING_NODE)
		return ydoc_fail(x, root,
				 "expected a mapping of sections (host:, push:, ...), got %s",
				 ydoc_what(root).s);
	if ((rc = ydoc_check_keys(x, root, "", top_keys)) || (rc = parse_host(x, root, c)) ||
	    (rc = parse_cgroups(x, root, c)) || (rc = parse_counters(x, root, c)) ||
	    (rc = parse_sampling(x, root, c)) || (rc = parse_symbols(x, root, c)) ||
	    (rc = parse_probes(x, root, c)) ||
	    (rc = parse_push(x, root, c, &collectors)) || (rc = SECTION(x, root, log, c, &m)) ||
	    (rc = parse_metrics(x, root, c)) || (rc = config_identity_parse(x, root, c)))
		return rc;
	if (!c->push.ncollectors && !c->metrics.listen)
		return ydoc_fail(
			x, collectors,
			"push.collectors: empty and no metrics.listen: the agent's data would go "
			"nowhere");
	return 0;
}

/* ---- loading ---- */

/* The schema is four levels deep and needs no anchors at all: generous caps
 * cost a real file nothing and keep a hostile one from taking minutes. */
static const struct ydoc_limits config_limits = {
	.depth = 16, .anchors = 64, .string = CONFIG_MAX_STRING,
};

int config_parse(const char *name, const char *buf, size_t len, struct config **out, char *err,
		 size_t errlen)
{
	const char *file = name ? name : "<config>";
	const yaml_node_t *root;
	struct ydoc *x = NULL;
	struct config *c;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (len > CONFIG_MAX_FILE) {
		if (err && errlen)
			snprintf(err, errlen, "%s: larger than %d bytes", file, CONFIG_MAX_FILE);
		return -EFBIG;
	}
	rc = ydoc_load(file, buf, len, &config_limits, err, errlen, &x);
	if (rc)
		return rc;
	ydoc_set_hint(x, misplaced_key, NULL);
	c = config_defaults();
	if (!c || strv_set(&c->path, file)) {
		rc = ydoc_oom(x);
		goto out;
	}
	root = ydoc_root(x);
	if (root)
		rc = parse_root(x, root, c);
out:
	ydoc_free(x);
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
	size_t len = 0;
	bool more = false;
	int rc;

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
	rc = slurp_at(AT_FDCWD, path, CONFIG_MAX_FILE, &buf, &len, &more);
	if (!rc && more)
		rc = -EFBIG;
	if (!rc) {
		rc = config_parse(path, buf, len, out, err, errlen);
		free(buf);
		return rc;
	}
	free(buf);
	if (err && errlen) {
		if (rc == -EFBIG)
			snprintf(err, errlen, "%s: larger than %d bytes", path, CONFIG_MAX_FILE);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	}
	return rc;
}
