// SPDX-License-Identifier: MIT
/*
 * trace --key and --heatmap: latency paired by tracepoint fields, and the
 * time x latency heat map of the pairs.
 *
 * With --key dev,sector the two --latency probes get those fields as
 * arguments (appended to their specs when not written there), read from
 * each hit's raw tracepoint record, and their endpoints go to
 * latency_add_key() instead of being paired by thread. The start decides
 * the cgroup: the end probe is opened on every CPU for every task (a block
 * completion runs in interrupt context, in whatever task was on the CPU),
 * its hits are not tabulated by their own cgroup but counted once paired,
 * under the start's cell; ends of starts outside the selection are
 * counted as unpaired.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/trace.h"
#include "lib/heatmap.h"

/* Heat map columns: 100 ms at first, at most 240 (merged past them). */
#define HEAT_COL_NS 100000000ull
#define HEAT_MAX_COLS 240
#define HEAT_PER_OCTAVE 2

int trace_key_parse(struct trace *t, const char *csv)
{
	const char *p = csv;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (!n || n > 64 || t->nkey >= LATENCY_KEY_MAX) {
			fprintf(stderr, "%s: --key takes 1 to %d field names separated by commas, "
					"not '%s'\n", t->prog, LATENCY_KEY_MAX, csv);
			return 2;
		}
		t->key_names[t->nkey] = strndup(p, n);
		if (!t->key_names[t->nkey])
			return 1;
		t->nkey++;
		p += n;
		p += *p == ',';
	}
	if (!t->nkey) {
		fprintf(stderr, "%s: --key needs a field name\n", t->prog);
		return 2;
	}
	return 0;
}

/* Does the spec already name @field as an argument (a word after the probe)? */
static bool spec_has(const char *spec, const char *field)
{
	size_t len = strlen(field);
	const char *w = spec + strcspn(spec, " \t");

	while (*w) {
		size_t n;

		w += strspn(w, " \t");
		n = strcspn(w, " \t");
		if ((n == len && !strncmp(w, field, len)) ||
		    (n > len && w[n - len - 1] == '=' && !strncmp(w + n - len, field, len)) ||
		    (n > len && w[len] == '=' && !strncmp(w, field, len)))
			return true;
		w += n;
	}
	return false;
}

int trace_key_spec(const struct trace *t, char **spec)
{
	size_t len = strlen(*spec) + 1;
	char *s;

	/* Not a tracepoint: left as it is, for trace_key_resolve() to refuse. */
	if (!strncmp(*spec, "u:", 2) || !strncmp(*spec, "sdt:", 4))
		return 0;
	for (size_t i = 0; i < t->nkey; i++)
		len += strlen(t->key_names[i]) + 1;
	s = malloc(len);
	if (!s)
		return -ENOMEM;
	snprintf(s, len, "%s", *spec);
	for (size_t i = 0; i < t->nkey; i++)
		if (!spec_has(*spec, t->key_names[i])) {
			size_t at = strlen(s);

			snprintf(s + at, len - at, " %s", t->key_names[i]);
		}
	free(*spec);
	*spec = s;
	return 0;
}

/* The index of argument @name of @p, or -1. */
static int arg_index(const struct probe *p, const char *name)
{
	for (int a = 0; a < p->nargs; a++)
		if (!strcmp(p->args[a].name, name))
			return a;
	return -1;
}

int trace_key_resolve(struct trace *t)
{
	const int ends[2] = {t->lat_start, t->lat_end};

	for (int e = 0; e < 2; e++) {
		const struct probe *p = &t->pr[ends[e]].p;

		if (p->kind != PROBE_TRACEPOINT) {
			fprintf(stderr, "%s: --key reads tracepoint fields; %s is not a tracepoint\n",
				t->prog, p->label);
			return 2;
		}
		for (size_t k = 0; k < t->nkey; k++) {
			t->key_arg[e][k] = arg_index(p, t->key_names[k]);
			if (t->key_arg[e][k] < 0) {
				fprintf(stderr, "%s: %s has no field '%s' for --key\n", t->prog,
					p->label, t->key_names[k]);
				return 2;
			}
		}
	}
	return 0;
}

int trace_key_add(struct trace *t, const struct sample *s, bool end)
{
	const struct tprobe *tp = &t->pr[end ? t->lat_end : t->lat_start];
	uint64_t key[LATENCY_KEY_MAX];

	for (size_t k = 0; k < t->nkey; k++) {
		int64_t v;
		int rc = probe_arg_value(&tp->p, t->key_arg[end][k], NULL, s, tp->sample_regs, &v);

		if (rc)
			return rc;
		key[k] = (uint64_t)v;
	}
	return latency_add_key(t->lat, 0, end, s->time, s->cgroup_id, s->pid, key, t->nkey);
}

int trace_heat_open(struct trace *t)
{
	if (!t->heat_path)
		return 0;
	t->heat_file = fopen(t->heat_path, "w");
	if (t->heat_file)
		return 0;
	fprintf(stderr, "%s: cannot write %s: %s\n", t->prog, t->heat_path, strerror(errno));
	return 1;
}

int trace_heat_start(struct trace *t, uint64_t t0)
{
	if (!t->heat_file)
		return 0;
	t->heat = heatmap_new(t0, HEAT_COL_NS, HEAT_MAX_COLS, HEAT_PER_OCTAVE);
	return t->heat ? 0 : -errno;
}

void trace_heat_add(struct trace *t, uint64_t end_time, uint64_t ns)
{
	if (t->heat && heatmap_add(t->heat, end_time, ns, 1) < 0)
		t->heat_refused++;
}

int trace_heat_write(struct trace *t, uint64_t end)
{
	char title[512], sub[256];
	struct heatmap_opts o = {.title = title, .subtitle = sub, .unit = "ns"};
	FILE *f = t->heat_file;
	int rc;

	if (!t->heat || !f)
		return 0;
	t->heat_file = NULL;
	if (end)
		heatmap_add_row(t->heat, end - 1, 0, 0); /* the axis to the end of the trace */
	snprintf(title, sizeof(title), "Latency heat map: %s to %s", t->pr[t->lat_start].p.label,
		 t->pr[t->lat_end].p.label);
	if (t->nkey)
		snprintf(sub, sizeof(sub), "paired by %s%s%s%s%s", t->key_names[0],
			 t->nkey > 1 ? "," : "", t->nkey > 1 ? t->key_names[1] : "",
			 t->nkey > 2 ? "," : "", t->nkey > 2 ? t->key_names[2] : "");
	else
		snprintf(sub, sizeof(sub), "paired by thread");
	rc = heatmap_svg(t->heat, &o, f);
	if (fclose(f) && !rc)
		rc = -EIO;
	if (rc) {
		fprintf(stderr, "%s: cannot write %s: %s\n", t->prog, t->heat_path, strerror(-rc));
		return 1;
	}
	fprintf(stderr, "%s: heat map of %" PRIu64 " latencies (%zu columns of %.3g s) in %s\n",
		t->prog, heatmap_total(t->heat), heatmap_cols(t->heat),
		(double)heatmap_col_ns(t->heat) / 1e9, t->heat_path);
	return 0;
}

void trace_key_release(struct trace *t)
{
	for (size_t k = 0; k < t->nkey; k++)
		free(t->key_names[k]);
	t->nkey = 0;
	heatmap_free(t->heat);
	t->heat = NULL;
	if (t->heat_file)
		fclose(t->heat_file);
	t->heat_file = NULL;
}
