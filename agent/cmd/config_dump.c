// SPDX-License-Identifier: MIT
/*
 * config_dump(): the effective `run` configuration as YAML (--print-config),
 * written through libyaml's emitter, so quoting and escaping are YAML's own
 * and config_load() reads it back to the same values. Strings are double
 * quoted (a string that looks like a number, a boolean or null stays a
 * string); numbers, booleans, enums, durations and sizes are plain. Only the
 * heading comment is written by hand: the emitter writes no comments.
 */
#include "agent/cmd/config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "agent/symbols/demangle.h"
#include "lib/units.h"

/* The emitter and whether any event failed (then the rest is skipped). */
struct out {
	yaml_emitter_t e;
	bool failed;
};

static void emit(struct out *o, yaml_event_t *ev, int made)
{
	if (o->failed || !made || !yaml_emitter_emit(&o->e, ev))
		o->failed = true;
}

static void scalar(struct out *o, const char *text, yaml_scalar_style_t style)
{
	yaml_event_t ev;
	int made = yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text,
						(int)strlen(text), 1, 1, style);

	emit(o, &ev, made);
}

static void plain(struct out *o, const char *text)
{
	scalar(o, text, YAML_PLAIN_SCALAR_STYLE);
}

/* A string, always quoted; NULL is null. */
static void str(struct out *o, const char *s)
{
	if (s)
		scalar(o, s, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
	else
		plain(o, "null");
}

static void map_start(struct out *o)
{
	yaml_event_t ev;

	emit(o, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							 YAML_BLOCK_MAPPING_STYLE));
}

static void map_end(struct out *o)
{
	yaml_event_t ev;

	emit(o, &ev, yaml_mapping_end_event_initialize(&ev));
}

/* "KEY:" then a mapping follows. */
static void section(struct out *o, const char *key)
{
	plain(o, key);
	map_start(o);
}

static void key_str(struct out *o, const char *key, const char *s)
{
	plain(o, key);
	str(o, s);
}

static void key_plain(struct out *o, const char *key, const char *v)
{
	plain(o, key);
	plain(o, v);
}

static void key_bool(struct out *o, const char *key, bool b)
{
	key_plain(o, key, b ? "true" : "false");
}

static void key_uint(struct out *o, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	key_plain(o, key, buf);
}

static void key_duration(struct out *o, const char *key, uint64_t ms)
{
	char buf[32];

	units_format_duration_ms(ms, buf, sizeof(buf));
	key_plain(o, key, buf);
}

static void key_enum(struct out *o, const char *key, const char *const *names, int v)
{
	int n = 0;

	while (names[n])
		n++;
	key_plain(o, key, v >= 0 && v < n ? names[v] : names[0]);
}

/* A list of strings: one per line, "[]" when empty. */
static void key_list(struct out *o, const char *key, char *const *v, size_t n)
{
	yaml_event_t ev;

	plain(o, key);
	emit(o, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							  n ? YAML_BLOCK_SEQUENCE_STYLE
							    : YAML_FLOW_SEQUENCE_STYLE));
	for (size_t i = 0; i < n; i++)
		str(o, v[i]);
	emit(o, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void dump_probes(struct out *o, const struct config *c)
{
	yaml_event_t ev;

	plain(o, "probes");
	emit(o, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							  c->nprobes ? YAML_BLOCK_SEQUENCE_STYLE
								     : YAML_FLOW_SEQUENCE_STYLE));
	for (size_t i = 0; i < c->nprobes; i++) {
		const struct config_probe *p = &c->probes[i];

		map_start(o);
		key_str(o, "spec", p->spec);
		key_str(o, "hist", p->hist);
		key_str(o, "latency_end", p->latency_end);
		if (p->nlatency_key)
			key_list(o, "latency_key", p->latency_key, p->nlatency_key);
		key_bool(o, "stacks", p->stacks);
		map_end(o);
	}
	emit(o, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void dump_push(struct out *o, const struct config *c)
{
	char size[32];

	section(o, "push");
	key_duration(o, "interval", c->push.interval_ms);
	key_list(o, "collectors", c->push.collectors, c->push.ncollectors);
	key_enum(o, "mode", config_push_mode_names, (int)c->push.mode);
	key_str(o, "token_file", c->push.token_file);
	key_duration(o, "timeout", c->push.timeout_ms);
	key_duration(o, "idle_close", c->push.idle_close_ms);
	section(o, "tls");
	key_str(o, "ca_file", c->push.tls.ca_file);
	key_str(o, "cert_file", c->push.tls.cert_file);
	key_str(o, "key_file", c->push.tls.key_file);
	key_bool(o, "verify", c->push.tls.verify);
	map_end(o);
	section(o, "spool");
	key_str(o, "dir", c->push.spool.dir);
	units_format_size(c->push.spool.max_bytes, size, sizeof(size));
	key_plain(o, "max_bytes", size);
	map_end(o);
	section(o, "retry");
	key_duration(o, "initial", c->push.retry.initial_ms);
	key_duration(o, "max", c->push.retry.max_ms);
	map_end(o);
	map_end(o);
}

static void dump_body(struct out *o, const struct config *c)
{
	section(o, "host");
	key_str(o, "name", c->host.name ? c->host.name : "");
	key_str(o, "agent_id_file", c->host.agent_id_file);
	map_end(o);
	section(o, "cgroups");
	key_list(o, "include", c->cgroups.include, c->cgroups.ninclude);
	key_list(o, "exclude", c->cgroups.exclude, c->cgroups.nexclude);
	key_bool(o, "containers_only", c->cgroups.containers_only);
	map_end(o);
	section(o, "counters");
	key_bool(o, "enabled", c->counters.enabled);
	key_list(o, "events", c->counters.events, c->counters.nevents);
	map_end(o);
	section(o, "sampling");
	key_bool(o, "enabled", c->sampling.enabled);
	key_uint(o, "frequency", c->sampling.frequency);
	key_enum(o, "call_graph", config_call_graph_names, (int)c->sampling.call_graph);
	key_uint(o, "stack_bytes", c->sampling.stack_bytes);
	key_str(o, "event", c->sampling.event);
	key_bool(o, "per_cgroup", c->sampling.per_cgroup);
	key_bool(o, "off_cpu", c->sampling.off_cpu);
	key_uint(o, "off_cpu_min_us", c->sampling.off_cpu_min_us);
	key_uint(o, "off_cpu_every", c->sampling.off_cpu_every);
	key_uint(o, "off_cpu_stack_bytes", c->sampling.off_cpu_stack_bytes
						  ? c->sampling.off_cpu_stack_bytes
						  : c->sampling.stack_bytes);
	map_end(o);
	section(o, "symbols");
	key_plain(o, "demangle", demangle_style_name(c->symbols.demangle));
	map_end(o);
	dump_probes(o, c);
	dump_push(o, c);
	section(o, "log");
	key_enum(o, "format", config_log_format_names, (int)c->log.format);
	key_enum(o, "level", config_log_level_names, (int)c->log.level);
	map_end(o);
	section(o, "metrics");
	key_str(o, "listen", c->metrics.listen);
	map_end(o);
	section(o, "identity");
	key_bool(o, "runtimes", c->identity.runtimes);
	key_str(o, "root", c->identity.root);
	key_str(o, "docker_socket", c->identity.docker_socket);
	key_str(o, "podman_socket", c->identity.podman_socket);
	key_duration(o, "timeout", c->identity.timeout_ms);
	key_duration(o, "refresh", c->identity.refresh_ms);
	key_list(o, "labels", c->identity.labels, c->identity.nlabels);
	key_str(o, "kubelet_url", c->identity.kubelet_url);
	key_str(o, "kubelet_token_file", c->identity.kubelet_token_file);
	key_str(o, "kubelet_ca_file", c->identity.kubelet_ca_file);
	map_end(o);
}

/* "# cgperf-agent configuration (PATH and defaults)": a comment, ASCII only. */
static void heading(const struct config *c, FILE *f)
{
	fputs("# cgperf-agent configuration", f);
	if (c->path) {
		fputs(" (", f);
		for (const char *p = c->path; *p; p++)
			fputc(*p >= 0x20 && *p < 0x7f ? *p : '?', f);
		fputs(" and defaults)\n", f);
	} else {
		fputs(" (defaults)\n", f);
	}
	if (!c->host.name || !*c->host.name)
		fputs("# host.name \"\": the host's name\n", f);
}

int config_dump(const struct config *c, FILE *f)
{
	struct out o = { .failed = false };
	yaml_event_t ev;

	if (!c || !f)
		return -EINVAL;
	heading(c, f);
	fflush(f);
	if (!yaml_emitter_initialize(&o.e))
		return -ENOMEM;
	yaml_emitter_set_output_file(&o.e, f);
	yaml_emitter_set_unicode(&o.e, 1);
	yaml_emitter_set_width(&o.e, -1);
	yaml_emitter_set_indent(&o.e, 2);
	emit(&o, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	emit(&o, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	map_start(&o);
	dump_body(&o, c);
	map_end(&o);
	emit(&o, &ev, yaml_document_end_event_initialize(&ev, 1));
	emit(&o, &ev, yaml_stream_end_event_initialize(&ev));
	yaml_emitter_flush(&o.e);
	yaml_emitter_delete(&o.e);
	return o.failed || ferror(f) ? -EIO : 0;
}
