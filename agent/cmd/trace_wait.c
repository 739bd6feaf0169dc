// SPDX-License-Identifier: MIT
/*
 * Probes that wait for their binary (trace_wait.h). `trace -G CG -e
 * sdt:postgresql:query__start` resolves the binary among CG's processes;
 * when none maps it yet, the probe is kept as a spec and looked for again
 * from the trace loop, every 200 ms at most, among the processes then in
 * the cgroups: reading cgroup.procs and each new process's maps is cheap
 * next to the poll round it rides on. Once found, the probe is opened
 * exactly as the ones placed at the start (the caller's place function),
 * its samplers enabled, and it counts from then on: hits before that
 * instant are not seen, as with perf started late.
 *
 * A probe found under /proc/PID/root/... (a container's file) stays placed
 * after that process ends: the kernel's uprobe holds the inode, so later
 * processes of the same binary hit it too.
 */
#include "agent/cmd/trace_wait.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/trace.h"
#include "agent/perf/sampler.h"
#include "cgroup/pids.h"
#include "lib/clock.h"

#define WAIT_RETRY_NS 200000000ull
#define WAIT_PIDS_MAX 65536

struct trace_wait {
	char *spec[MAX_PROBES]; /* non-NULL: slot waiting for this spec */
	size_t nwaiting;
	struct sampler_opts base;
	const char *filter;
	bool armed;
	uint64_t last_ns;
};

bool trace_wait_may(int rc, const char *spec, bool groups, long pid, bool latency)
{
	return rc == -ENOENT && groups && pid <= 0 && !latency &&
	       (!strncmp(spec, "u:", 2) || !strncmp(spec, "sdt:", 4));
}

int trace_wait_add(struct trace *t, size_t idx, const char *spec, const char *why)
{
	struct trace_wait *w = t->wait;
	size_t head = strcspn(spec, " \t");
	struct probe *p;

	if (idx >= MAX_PROBES)
		return -EINVAL;
	p = &t->pr[idx].p;
	if (!w && !(w = t->wait = calloc(1, sizeof(*w))))
		return -ENOMEM;
	free(w->spec[idx]);
	w->spec[idx] = strdup(spec);
	p->spec = strdup(spec);
	p->label = strndup(spec, head);
	if (!w->spec[idx] || !p->spec || !p->label)
		return -ENOMEM;
	p->kind = spec[0] == 'u' ? PROBE_UPROBE : PROBE_USDT;
	w->nwaiting++;
	fprintf(stderr, "%s: %s\n  %s waits for a process of the -G cgroups that maps it\n",
		t->prog, why, p->label);
	return 0;
}

bool trace_wait_pending(const struct trace_wait *w, size_t idx)
{
	return w && idx < MAX_PROBES && w->spec[idx];
}

void trace_wait_arm(struct trace_wait *w, const struct sampler_opts *base, const char *filter)
{
	if (!w)
		return;
	w->base = *base;
	w->filter = filter;
	w->armed = true;
}

/* The hist argument of a probe placed late: the one --hist names. */
static void hist_arg(struct trace *t, struct tprobe *tp)
{
	tp->hist_arg = -1;
	for (int a = 0; t->hist_name && a < tp->p.nargs; a++)
		if (!strcmp(tp->p.args[a].name, t->hist_name))
			tp->hist_arg = a;
}

/* Place slot @i from @pids: 1 placed, 0 not yet, -1 given up. */
static int place_one(struct trace *t, size_t i, const int *pids, size_t npids,
		     trace_place_fn *place)
{
	struct trace_wait *w = t->wait;
	struct tprobe *tp = &t->pr[i];
	struct probe p = { 0 };
	char err[2048];
	int rc = probe_resolve(w->spec[i], pids, npids, &p, err, sizeof(err));

	if (rc == -ENOENT)
		return 0;
	free(w->spec[i]);
	w->spec[i] = NULL;
	w->nwaiting--;
	if (rc) {
		fprintf(stderr, "%s: %s\n", t->prog, err);
		return -1;
	}
	probe_release(&tp->p);
	tp->p = p;
	hist_arg(t, tp);
	rc = place(t, tp, &w->base, w->filter);
	for (size_t k = 0; !rc && k < tp->nsmp; k++)
		rc = sampler_enable(tp->smp[k]);
	if (rc) {
		fprintf(stderr, "%s: cannot place %s in %s: %s\n", t->prog, tp->p.label,
			tp->p.path, strerror(-rc));
		return -1;
	}
	fprintf(stderr, "%s: %s placed in %s\n", t->prog, tp->p.label, tp->p.path);
	return 1;
}

int trace_wait_poll(struct trace *t, trace_place_fn *place)
{
	struct trace_wait *w = t->wait;
	uint64_t now = clock_mono_ns();
	int *pids = NULL, placed = 0;
	size_t npids = 0;

	if (!w || !w->armed || !w->nwaiting || now - w->last_ns < WAIT_RETRY_NS)
		return 0;
	w->last_ns = now;
	for (size_t i = 0; i < w->base.ncgroups; i++)
		if (cg_pids_under(w->base.cgroup_dirs[i], WAIT_PIDS_MAX, &pids, &npids) < 0)
			break; /* out of memory: look among those read */
	for (size_t i = 0; npids && i < t->npr; i++)
		if (w->spec[i] && place_one(t, i, pids, npids, place) > 0)
			placed++;
	free(pids);
	return placed;
}

void trace_wait_report(const struct trace *t)
{
	for (size_t i = 0; t->wait && i < t->npr; i++)
		if (t->wait->spec[i])
			fprintf(stderr, "%s: %s was never placed: no process of the -G cgroups "
					"mapped its binary\n", t->prog, t->pr[i].p.label);
}

void trace_wait_free(struct trace_wait *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < MAX_PROBES; i++)
		free(w->spec[i]);
	free(w);
}
