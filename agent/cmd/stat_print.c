// SPDX-License-Identifier: MIT
/*
 * What `stat` prints, as perf stat does: per cgroup and event the count
 * (grouped digits), the derived figure (CPUs utilized, GHz, IPC, miss
 * rates, per second), the multiplexing ratio "[83.17%]", or one JSON
 * object per line; interval rows with -I and the totals at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/cmd.h"
#include "agent/perf/counters.h"
#include "agent/perf/cpumap.h"
#include "agent/perf/events.h"
#include "lib/json.h"
#include "agent/cmd/spawn.h"
#include "agent/cmd/workload.h"
#include "lib/clock.h"
#include "cgroup/identity.h"
#include "cgroup/mount.h"
#include "cgroup/tree.h"
#include "cgroup/watch.h"

#include "agent/cmd/stat.h"

/* 1234567.891 -> "1,234,567.89" with @prec decimals. */
static void fmt_grouped(char *buf, size_t len, double v, int prec)
{
	char raw[64], *dot;
	size_t ilen, o = 0;
	const char *p = raw;

	snprintf(raw, sizeof(raw), "%.*f", prec, v);
	dot = strchr(raw, '.');
	ilen = dot ? (size_t)(dot - raw) : strlen(raw);
	if (*p == '-') {
		if (o + 1 < len)
			buf[o++] = '-';
		p++;
		ilen--;
	}
	for (size_t i = 0; i < ilen && o + 1 < len; i++) {
		if (i && (ilen - i) % 3 == 0 && o + 2 < len)
			buf[o++] = ',';
		buf[o++] = p[i];
	}
	for (const char *q = p + ilen; *q && o + 1 < len; q++)
		buf[o++] = *q;
	buf[o] = '\0';
}

static ssize_t find_event(const struct stat_ctx *c, uint32_t type, uint64_t config)
{
	for (size_t i = 0; i < c->nev; i++)
		if (c->evs[i].type == type && c->evs[i].config == config &&
		    !c->evs[i].exclude_user && !c->evs[i].exclude_kernel)
			return (ssize_t)i;
	return -1;
}

/* The scaled count of hardware event @config in @t, when counted and > 0. */
static bool ratio_base(const struct stat_ctx *c, const struct target *t, uint64_t config,
		       bool delta, double *out)
{
	ssize_t i = find_event(c, PERF_TYPE_HARDWARE, config);
	struct counter_value o;

	if (i < 0)
		return false;
	counters_get(c->ctr, t->slot, (size_t)i, delta, &o);
	if (o.err || o.scaled <= 0)
		return false;
	*out = o.scaled;
	return true;
}

/* A derived figure for event @e, as perf prints after '#'. False if none. */
static bool derived(const struct stat_ctx *c, const struct target *t, size_t e, bool delta,
		    double elapsed_ns, double *value, const char **unit)
{
	const struct ev_spec *ev = &c->evs[e];
	struct counter_value v, o;
	ssize_t other;
	double base;

	counters_get(c->ctr, t->slot, e, delta, &v);
	if (v.err || v.running == 0)
		return false;
	if (ev->is_clock) {
		*value = elapsed_ns > 0 ? v.scaled / elapsed_ns : NAN;
		*unit = "CPUs utilized";
		return true;
	}
	if (ev->type == PERF_TYPE_HARDWARE && ev->config == PERF_COUNT_HW_INSTRUCTIONS) {
		if (!ratio_base(c, t, PERF_COUNT_HW_CPU_CYCLES, delta, &base))
			return false;
		*value = v.scaled / base;
		*unit = "insn per cycle";
		return true;
	}
	if (ev->type == PERF_TYPE_HARDWARE &&
	    (ev->config == PERF_COUNT_HW_BRANCH_MISSES || ev->config == PERF_COUNT_HW_CACHE_MISSES)) {
		bool br = ev->config == PERF_COUNT_HW_BRANCH_MISSES;

		if (!ratio_base(c, t,
				br ? PERF_COUNT_HW_BRANCH_INSTRUCTIONS : PERF_COUNT_HW_CACHE_REFERENCES,
				delta, &base))
			return false;
		*value = 100.0 * v.scaled / base;
		*unit = br ? "of all branches" : "of all cache refs";
		return true;
	}
	/* Everything else as a rate per second of the cgroup's CPU time (perf's
	 * choice), or of wall time when task-clock is not counted. */
	other = find_event(c, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	double secs = elapsed_ns / 1e9;

	if (other >= 0) {
		counters_get(c->ctr, t->slot, (size_t)other, delta, &o);
		if (o.err || o.scaled <= 0)
			return false;
		secs = o.scaled / 1e9;
	}
	if (secs <= 0)
		return false;
	if (ev->type == PERF_TYPE_HARDWARE && ev->config == PERF_COUNT_HW_CPU_CYCLES) {
		*value = v.scaled / (secs * 1e9);
		*unit = "GHz";
		return true;
	}
	*value = v.scaled / secs;
	*unit = "/sec";
	return true;
}

/* The path's label, then what the runtime calls it: "docker:0123456789ab web". */
static void label_of(struct stat_ctx *c, const struct target *t, char *buf, size_t len,
		     struct cg_rtinfo *ri)
{
	int n = cg_identity_label(&t->ident, buf, len);

	memset(ri, 0, sizeof(*ri));
	if (!c->rt || n < 0 || (size_t)n + 1 >= len)
		return;
	cg_rtcache_want(c->rt, t->path);
	if (cg_rtcache_get(c->rt, t->path, ri) == 1 && n > 0 &&
	    cg_rtinfo_display(ri, buf + n + 1, len - (size_t)n - 1) > 0)
		buf[n] = ' ';
}

/* ,"KEY":"VALUE" when @value is not empty. */
static void json_field(FILE *f, const char *key, const char *value)
{
	if (!value[0])
		return;
	fprintf(f, ",\"%s\":", key);
	json_write_string(f, value);
}

static void print_json(struct stat_ctx *c, const struct target *t, size_t e, bool delta,
		       double elapsed_ns, double since_start_s)
{
	FILE *f = c->out;
	struct counter_value v;
	const struct ev_spec *ev = &c->evs[e];
	double mv;
	const char *mu;
	char label[512];
	struct cg_rtinfo ri;

	counters_get(c->ctr, t->slot, e, delta, &v);
	fputc('{', f);
	if (c->interval_ms) {
		fputs("\"interval\":", f);
		json_write_double(f, since_start_s, 6);
		fputc(',', f);
	}
	fputs("\"cgroup\":", f);
	json_write_string(f, t->path);
	fprintf(f, ",\"cgroup_id\":%" PRIu64, t->id);
	label_of(c, t, label, sizeof(label), &ri);
	json_field(f, "identity", label);
	if (t->ident.runtime != CG_RT_NONE)
		json_field(f, "runtime", cg_runtime_name(t->ident.runtime));
	json_field(f, "container_id", t->ident.container_id);
	json_field(f, "container_name", ri.name ? ri.name : t->ident.container_name);
	json_field(f, "image", ri.image ? ri.image : "");
	json_field(f, "pod_name", ri.pod_name ? ri.pod_name : "");
	json_field(f, "namespace", ri.pod_namespace ? ri.pod_namespace : "");
	cg_rtinfo_release(&ri);
	if (t->ident.pod_uid[0]) {
		json_field(f, "pod_uid", t->ident.pod_uid);
		json_field(f, "qos", cg_qos_name(t->ident.qos));
	}
	/* "unit" is the value's unit below; the systemd unit gets its own key. */
	json_field(f, "systemd_unit", t->ident.unit);
	json_field(f, "slice", t->ident.slice);
	fputs(",\"event\":", f);
	json_write_string(f, ev->name);
	if (v.err) {
		fputs(",\"value\":null,\"supported\":false,\"error\":", f);
		json_write_string(f, v.err == -ENOENT || v.err == -EOPNOTSUPP || v.err == -ENODEV
					     ? "not supported by this host"
					     : strerror(-v.err));
		fputs("}\n", f);
		return;
	}
	fputs(",\"value\":", f);
	if (ev->is_clock)
		json_write_double(f, v.scaled / 1e6, 6);
	else
		json_write_double(f, v.scaled, 0);
	fprintf(f, ",\"unit\":\"%s\",\"raw\":%" PRIu64 ",\"time_enabled\":%" PRIu64
		   ",\"time_running\":%" PRIu64 ",\"pcnt_running\":",
		ev->is_clock ? "msec" : "", v.val, v.enabled, v.running);
	json_write_double(f, v.enabled ? 100.0 * (double)v.running / (double)v.enabled : 0, 2);
	fputs(",\"supported\":true", f);
	if (derived(c, t, e, delta, elapsed_ns, &mv, &mu)) {
		fputs(",\"metric_value\":", f);
		json_write_double(f, mv, 6);
		fputs(",\"metric_unit\":", f);
		json_write_string(f, mu);
	}
	fputs("}\n", f);
}

/* Value column, unit, event; then '#' metric and the running share. */
static void print_text_line(struct stat_ctx *c, const struct target *t, size_t e, bool delta,
			    double elapsed_ns, const char *prefix)
{
	FILE *f = c->out;
	const struct ev_spec *ev = &c->evs[e];
	struct counter_value v;
	char num[64];
	double mv;
	const char *mu;

	counters_get(c->ctr, t->slot, e, delta, &v);
	fputs(prefix, f);
	if (v.err) {
		fprintf(f, "%18s      %-24s", v.err == -ENOENT || v.err == -EOPNOTSUPP ||
						  v.err == -ENODEV || v.err == -EINVAL
					  ? "<not supported>"
					  : "<not counted>",
			ev->name);
	} else if (v.running == 0) {
		/* A cgroup event only runs while a task of the cgroup is on a CPU:
		 * zero running time is an idle cgroup, not a failure. */
		fprintf(f, "%18s %-4s %-24s", "0", ev->is_clock ? "msec" : "", ev->name);
	} else {
		fmt_grouped(num, sizeof(num), ev->is_clock ? v.scaled / 1e6 : v.scaled,
			    ev->is_clock ? 2 : 0);
		fprintf(f, "%18s %-4s %-24s", num, ev->is_clock ? "msec" : "", ev->name);
	}
	if (c->interval_ms) {
		char label[512];
		struct cg_rtinfo ri;

		label_of(c, t, label, sizeof(label), &ri);
		cg_rtinfo_release(&ri);
		fprintf(f, " %s%s%s%s", t->path, label[0] ? " [" : "", label, label[0] ? "]" : "");
	}
	if (!v.err && v.running && derived(c, t, e, delta, elapsed_ns, &mv, &mu)) {
		if (!strcmp(mu, "/sec") && mv >= 1e6)
			fprintf(f, " # %8.3f M/sec", mv / 1e6);
		else if (!strcmp(mu, "/sec") && mv >= 1e3)
			fprintf(f, " # %8.3f K/sec", mv / 1e3);
		else if (mu[0] == 'o') /* "of all ..." */
			fprintf(f, " # %7.2f%% %s", mv, mu);
		else
			fprintf(f, " # %8.3f %s", mv, mu);
	}
	if (!v.err && v.running && v.running < v.enabled)
		fprintf(f, "  (%.2f%%)", 100.0 * (double)v.running / (double)v.enabled);
	fputc('\n', f);
}

void stat_print_interval(struct stat_ctx *c, double since_start_s, double elapsed_ns)
{
	char prefix[48];

	if (!c->json && !c->header_done) {
		fprintf(c->out, "#%15s %18s %-4s %-24s %s\n", "time", "counts", "unit", "events",
			"cgroup");
		c->header_done = true;
	}
	snprintf(prefix, sizeof(prefix), "%16.9f", since_start_s);
	for (size_t i = 0; i < c->ntg; i++) {
		for (size_t e = 0; e < c->nev; e++) {
			if (c->json)
				print_json(c, &c->tg[i], e, true, elapsed_ns, since_start_s);
			else
				print_text_line(c, &c->tg[i], e, true, elapsed_ns, prefix);
		}
	}
	fflush(c->out);
}

void stat_print_totals(struct stat_ctx *c, double elapsed_ns, const char *what)
{
	for (size_t i = 0; i < c->ntg; i++) {
		const struct target *t = &c->tg[i];
		char label[512];
		struct cg_rtinfo ri;

		if (c->json) {
			for (size_t e = 0; e < c->nev; e++)
				print_json(c, t, e, false, elapsed_ns, 0);
			continue;
		}
		label_of(c, t, label, sizeof(label), &ri);
		cg_rtinfo_release(&ri);
		fprintf(c->out, "\n Performance counter stats for cgroup '%s'%s%s%s%s%s:\n\n",
			t->path, label[0] ? " [" : "", label, label[0] ? "]" : "",
			what ? " running " : "", what ? what : "");
		for (size_t e = 0; e < c->nev; e++)
			print_text_line(c, t, e, false, elapsed_ns, "");
	}
	if (!c->json)
		fprintf(c->out, "\n %17.9f seconds time elapsed\n\n", elapsed_ns / 1e9);
	fflush(c->out);
}

