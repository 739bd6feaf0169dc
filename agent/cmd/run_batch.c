// SPDX-License-Identifier: MIT
/*
 * One interval of `run` into one batch (wire/wire.h): counter deltas per
 * cgroup and event, the folded CPU stacks and the probes' stacks as
 * Profiles (frames as string ids, modules with their build-ids), probe
 * hits, value and latency histograms, the agent's own losses; then gzip'd
 * and handed to the push module, which spools and sends it.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/cmd.h"
#include "agent/cmd/config.h"
#include "agent/perf/counters.h"
#include "agent/perf/cpumap.h"
#include "agent/perf/events.h"
#include "agent/stacks/fold.h"
#include "lib/hist.h"
#include "lib/log.h"
#include "agent/perf/latency.h"
#include "agent/perf/offcpu.h"
#include "agent/perf/probe.h"
#include "agent/ship/push.h"
#include "agent/perf/sampler.h"
#include "agent/symbols/refusals.h"
#include "agent/ship/selfmetrics.h"
#include "agent/stacks/stacks.h"
#include "agent/perf/usdt.h"
#include "wire/wire.h"
#include "cgroup/identity.h"
#include "cgroup/tree.h"
#include "cgroup/watch.h"
#include "lib/clock.h"
#include "agent/cmd/run.h"

/* ---- one interval ------------------------------------------------------- */

struct stack_ctx {
	struct agent *a;
	struct wire_batch *b;
	int *cgidx; /* per a->cg index: wire cgroup index, -1 = not yet */
	int *prof;  /* per a->cg index: wire profile index */
	int host_prof; /* with sampling.per_cgroup false: the one CPU profile */
	uint64_t samples; /* stack samples put in the batch, CPU and probes */
	uint64_t probe_samples; /* of them, probe hits' stacks */
	/* one stack's frames for the wire, reused */
	const char **names;
	int *mods;
	size_t cap;
	/* module path pointer (unique per binary during stacks_foreach_frames)
	 * -> wire module index + 1 */
	struct fold *modidx;
};

/* The wire module index of @f's binary, or -1 (none, or no room). */
static int wire_module(struct stack_ctx *sc, const struct stacks_frame *f)
{
	uint64_t *slot;
	int m;

	if (!f->module)
		return -1;
	slot = sc->modidx ? fold_slot(sc->modidx, &f->module, sizeof(f->module)) : NULL;
	if (slot && *slot)
		return (int)*slot - 1;
	m = wire_add_module(sc->b, f->module, f->build_id);
	if (m >= 0 && slot)
		*slot = (uint64_t)m + 1;
	return m >= 0 ? m : -1;
}

static int wire_cg(struct stack_ctx *sc, size_t i)
{
	struct rcg *c = &sc->a->cg[i];

	if (sc->cgidx[i] < 0) {
		const struct cg_identity *id = &c->ident;
		struct wire_cgroup_info info = {
			.container_id = id->container_id,
			.runtime = cg_runtime_name(id->runtime),
			.pod_uid = id->pod_uid,
			.qos = cg_qos_name(id->qos),
			.container_name = id->container_name,
			.unit = id->unit,
			.slice = id->slice,
		};
		const char *keys[WIRE_LABELS_MAX], *values[WIRE_LABELS_MAX];

		run_identity_fill(sc->a, c, &info, keys, values, WIRE_LABELS_MAX);
		sc->cgidx[i] = wire_add_cgroup(sc->b, c->path, c->id, &info);
	}
	return sc->cgidx[i];
}

/* Put @fr[0..@nfr) (empty names left out) with @count into profile @prof. */
static void put_stack(struct stack_ctx *sc, int prof, const struct stacks_frame *fr, size_t nfr,
		      uint64_t count)
{
	size_t n = 0;

	if (nfr > sc->cap) {
		const char **nv = realloc(sc->names, nfr * sizeof(*nv));
		int *mv;

		if (!nv)
			return;
		sc->names = nv;
		mv = realloc(sc->mods, nfr * sizeof(*mv));
		if (!mv)
			return;
		sc->mods = mv;
		sc->cap = nfr;
	}
	/* Every frame, the root-most cut by the wire if too deep. */
	for (size_t k = 0; k < nfr; k++) {
		if (!fr[k].name[0])
			continue;
		sc->names[n] = fr[k].name;
		sc->mods[n++] = wire_module(sc, &fr[k]);
	}
	if (n && wire_add_stack_mod(sc->b, prof, sc->names, sc->mods, n, count) >= 0)
		sc->samples += count;
}

/*
 * The wire index of the root cgroup "/", which stands for the whole host
 * (sampling.per_cgroup false): its own entry when the config selects it,
 * else an entry with just its path and id.
 */
static int wire_root_cg(struct stack_ctx *sc)
{
	struct rcg *c = run_cg_find(sc->a, "/");

	if (c)
		return wire_cg(sc, (size_t)(c - sc->a->cg));
	return wire_add_cgroup(sc->b, "/", sc->a->root_id, NULL);
}

/* stacks_foreach_frames() of the CPU stacks. */
static void add_stack(void *ctx, uint64_t cgroup_id, const struct stacks_frame *fr, size_t nfr,
		      uint64_t count)
{
	struct stack_ctx *sc = ctx;
	struct agent *a = sc->a;
	uint64_t freq = a->cfg->sampling.frequency;
	struct rcg *c;
	size_t i;

	if (!a->cfg->sampling.per_cgroup) {
		/* one set for the host; on_sample kept the selected cgroups only */
		if (sc->host_prof < 0) {
			int cgi = wire_root_cg(sc);

			if (cgi < 0)
				return;
			sc->host_prof = wire_add_profile(sc->b, cgi, a->sev.name, 0, freq);
			if (sc->host_prof < 0)
				return;
		}
		put_stack(sc, sc->host_prof, fr, nfr, count);
		return;
	}
	c = run_cg_by_id(a, cgroup_id);
	if (!c)
		return; /* a cgroup the config leaves out */
	i = (size_t)(c - a->cg);
	if (wire_cg(sc, i) < 0)
		return;
	if (sc->prof[i] < 0) {
		sc->prof[i] = wire_add_profile(sc->b, sc->cgidx[i], a->sev.name, 0, freq);
		if (sc->prof[i] < 0)
			return;
	}
	put_stack(sc, sc->prof[i], fr, nfr, count);
}

/*
 * stacks_foreach_frames() of the probe stacks: @fr[0] is the prefix frame,
 * "probe#INDEX"; the probe's label becomes the Profile's event (every hit
 * sampled: period and frequency 0), and the stack goes without the prefix.
 */
static void add_probe_stack(void *ctx, uint64_t cgroup_id, const struct stacks_frame *fr,
			    size_t nfr, uint64_t count)
{
	struct stack_ctx *sc = ctx;
	struct agent *a = sc->a;
	struct rcg *c = run_cg_by_id(a, cgroup_id);
	uint64_t before = sc->samples;
	size_t idx = 0;
	int cgi, prof;

	if (!c || nfr < 2)
		return;
	for (size_t k = 0; k < a->npr; k++)
		if (a->pr[k].stacks && !strcmp(fr[0].name, a->pr[k].stack_prefix))
			idx = k + 1;
	if (!idx)
		return; /* cannot be: every stack has its probe's prefix */
	cgi = wire_cg(sc, (size_t)(c - a->cg));
	if (cgi < 0)
		return;
	prof = wire_add_profile(sc->b, cgi, a->pr[idx - 1].p.label, 0, 0);
	if (prof < 0)
		return;
	put_stack(sc, prof, fr + 1, nfr - 1, count);
	sc->probe_samples += sc->samples - before;
}

/* stacks_foreach_frames() of the off-CPU stacks: counts in microseconds,
 * in a profile "off-cpu" of the cgroup (of "/" with sampling.per_cgroup
 * false), every wait taken (period and frequency 0). */
static void add_offcpu_stack(void *ctx, uint64_t cgroup_id, const struct stacks_frame *fr,
			     size_t nfr, uint64_t count)
{
	struct stack_ctx *sc = ctx;
	struct rcg *c = sc->a->cfg->sampling.per_cgroup ? run_cg_by_id(sc->a, cgroup_id) : NULL;
	int cgi = c ? wire_cg(sc, (size_t)(c - sc->a->cg))
		    : sc->a->cfg->sampling.per_cgroup ? -1 : wire_root_cg(sc);
	int prof = cgi < 0 ? -1 : wire_add_profile(sc->b, cgi, OFFCPU_PROFILE_EVENT, 0, 0);

	if (prof >= 0)
		put_stack(sc, prof, fr, nfr, count);
}

/* stacks_foreach_truncated() of the CPU stacks: into the cgroup's profile
 * (made by add_stack: every cut stack is also a stack) and its totals. */
static void add_truncated(void *ctx, uint64_t cgroup_id, enum stacks_trunc reason, uint64_t count)
{
	struct stack_ctx *sc = ctx;
	struct agent *a = sc->a;
	struct rcg *c = run_cg_by_id(a, cgroup_id);
	uint64_t counts[WIRE_TRUNC_REASONS] = {0};
	int prof = -1;

	if ((unsigned)reason >= WIRE_TRUNC_REASONS)
		return;
	counts[reason] = count;
	if (c)
		c->truncated[reason] += count;
	if (!a->cfg->sampling.per_cgroup)
		prof = sc->host_prof;
	else if (c)
		prof = sc->prof[c - a->cg];
	if (prof >= 0)
		wire_add_truncated(sc->b, prof, counts);
}

/* Counter deltas of the interval, per cgroup and event. Their sum. */
static uint64_t add_counters(struct stack_ctx *sc)
{
	struct agent *a = sc->a;
	uint64_t sum = 0;

	if (!a->ctr)
		return 0;
	counters_read(a->ctr);
	for (size_t i = 0; i < a->ncg; i++) {
		if (a->cg[i].slot < 0)
			continue;
		int cgi = wire_cg(sc, i);

		for (size_t e = 0; cgi >= 0 && e < a->nev; e++) {
			struct counter_value v;

			counters_get(a->ctr, a->cg[i].slot, e, true, &v);
			/* raw count with its times: readers scale (the wire's rule) */
			if (wire_add_counter(sc->b, cgi, a->evs[e].name, v.val, v.enabled, v.running,
					     v.err == 0) >= 0)
				sum += v.val;
		}
	}
	return sum;
}

/* The stacks of the CPU samples, then of the probe hits; both engines
 * reset. Their figures added up in *@ss. */
static void add_stacks(struct stack_ctx *sc, struct stacks_stats *ss)
{
	struct agent *a = sc->a;
	struct stacks_stats pss = {0};
	struct stacks *ost = run_offcpu_stacks(a);

	if (ost) {
		uint64_t before = sc->samples;

		stacks_foreach_frames(ost, add_offcpu_stack, sc);
		stacks_reset(ost);
		stacks_gc(ost);
		sc->samples = before; /* microseconds, not samples */
	}
	if (a->st) {
		stacks_foreach_frames(a->st, add_stack, sc);
		stacks_foreach_truncated(a->st, add_truncated, sc);
		stacks_reset(a->st);
		stacks_gc(a->st);
		stacks_stats(a->st, ss);
	}
	if (!a->pst)
		return;
	stacks_foreach_frames(a->pst, add_probe_stack, sc);
	stacks_reset(a->pst);
	stacks_gc(a->pst);
	stacks_stats(a->pst, &pss);
	ss->unwind_errors += pss.unwind_errors;
	ss->refused += pss.refused;
	ss->objects += pss.objects;
	ss->objects_dropped += pss.objects_dropped;
	ss->processes += pss.processes;
}

/* Probe hits and histograms per cgroup; the cells restart. Their hits. */
static uint64_t add_probes(struct stack_ctx *sc)
{
	struct agent *a = sc->a;
	uint64_t hits = 0;

	for (size_t i = 0; i < a->npc; i++) {
		struct pcell *c = &a->pc[i];
		struct rcg *g = run_cg_by_id(a, c->cgroup);

		if (!g)
			continue;
		int cgi = wire_cg(sc, (size_t)(g - a->cg));

		if (cgi >= 0 && wire_add_probe(sc->b, cgi, a->pr[c->probe].p.label, c->hits,
					       a->pr[c->probe].hist_arg >= 0 ? &c->h : NULL,
					       a->pr[c->probe].lat_end >= 0 ? &c->lat : NULL) >= 0)
			hits += c->hits;
	}
	fold_free(a->cells);
	a->cells = fold_new();
	a->npc = 0;
	return hits;
}

/* The agent's own figures of the interval. */
static void add_self(struct agent *a, struct wire_batch *b, const struct stacks_stats *ss)
{
	struct wire_self self = {.samples = a->samples, .lost_samples = a->lost};
	struct push_stats ps;

	self.unwind_failures = ss->unwind_errors;
	self.stacks_refused = ss->refused;
	if (a->push) {
		push_stats(a->push, &ps);
		self.push_failures = ps.failures;
		self.push_rejected = ps.rejected;
		self.spool_bytes = ps.spool_bytes;
		self.spool_batches = ps.spool_count;
		self.spool_dropped_batches = ps.spool_dropped;
	}
	/* Per interval, as the wire says: deltas of the running totals
	 * (the push and stacks totals restart at a reload: clamp at 0);
	 * the spool's size and count are gauges. */
	struct wire_self cum = self;

#define DELTA(f) self.f = cum.f >= a->last.f ? cum.f - a->last.f : cum.f
	DELTA(samples);
	DELTA(lost_samples);
	DELTA(unwind_failures);
	DELTA(push_failures);
	DELTA(push_rejected);
	DELTA(spool_dropped_batches);
	DELTA(stacks_refused);
#undef DELTA
	a->last = cum;
	wire_set_self(b, &self);
}

/* What one batch held, for the debug log. */
struct batch_figures {
	uint64_t seq, counters, hits, probe_lost;
	size_t bytes;
};

static void log_queued(const struct batch_figures *f, const struct stack_ctx *sc,
		       const struct stacks_stats *ss)
{
	char sq[24], ns[24], nh[24], nb[24], nc[24], no[24], nd[24], np[24], ps[24], pl[24];

	snprintf(nc, sizeof(nc), "%" PRIu64, f->counters);
	snprintf(sq, sizeof(sq), "%" PRIu64, f->seq);
	snprintf(ns, sizeof(ns), "%" PRIu64, sc->samples);
	snprintf(nh, sizeof(nh), "%" PRIu64, f->hits);
	snprintf(nb, sizeof(nb), "%zu", f->bytes);
	snprintf(no, sizeof(no), "%zu", ss->objects);
	snprintf(nd, sizeof(nd), "%" PRIu64, ss->objects_dropped);
	snprintf(np, sizeof(np), "%zu", ss->processes);
	snprintf(ps, sizeof(ps), "%" PRIu64, sc->probe_samples);
	snprintf(pl, sizeof(pl), "%" PRIu64, f->probe_lost);
	log_kv(LOG_DEBUG, "batch queued", "seq", sq, "samples", ns, "hits", nh, "counters", nc,
	       "bytes", nb, "objects", no, "objects_dropped", nd, "processes", np,
	       "probe_stacks", ps, "probe_lost", pl, NULL);
}

/* Cgroups that went away were reported one last time: drop them. */
static void drop_removed(struct agent *a)
{
	size_t j = 0;

	for (size_t i = 0; i < a->ncg; i++) {
		if (a->cg[i].removed) {
			uint64_t *slot = fold_slot(a->ids, &a->cg[i].id, sizeof(a->cg[i].id));

			if (slot)
				*slot = 0;
			if (a->ctr && a->cg[i].slot >= 0)
				counters_remove(a->ctr, a->cg[i].slot);
			run_cg_release(&a->cg[i]);
			continue;
		}
		a->cg[j++] = a->cg[i];
	}
	a->ncg = j;
}

int run_batch(struct agent *a, uint64_t seq, uint64_t start_ns, uint64_t end_ns)
{
	struct wire_batch *b = wire_batch_new(a->host, a->machine_id, a->agent_id, CGPERF_VERSION,
					      seq, start_ns, end_ns);
	struct stack_ctx sc = {.a = a, .b = b, .host_prof = -1};
	struct batch_figures f = {.seq = seq};
	struct stacks_stats ss = {0};
	uint8_t *buf = NULL;
	int err = 0;

	if (!b)
		return -ENOMEM;
	run_identity_refresh(a); /* may add cgroups: before sizing by a->ncg */
	sc.cgidx = malloc((a->ncg + 1) * sizeof(int));
	sc.prof = malloc((a->ncg + 1) * sizeof(int));
	if (!sc.cgidx || !sc.prof) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < a->ncg; i++)
		sc.cgidx[i] = sc.prof[i] = -1;
	sc.modidx = fold_new(); /* without it, modules are looked up by name */
	f.counters = add_counters(&sc);
	add_stacks(&sc, &ss);
	f.hits = add_probes(&sc);
	/* Probe records lost in this interval: neither their hits nor their
	 * stacks are in the batch (the wire has no field for them: logged). */
	f.probe_lost = a->probe_lost - a->probe_lost_last;
	a->probe_lost_last = a->probe_lost;
	add_self(a, b, &ss);
	err = wire_encode_gzip(b, &buf, &f.bytes);
	if (!err && a->push)
		err = push_submit(a->push, seq, buf, f.bytes);
	if (err)
		log_kv(LOG_ERROR, "batch not queued", "error", strerror(-err), NULL);
	else
		log_queued(&f, &sc, &ss);
	if (f.probe_lost) {
		char pl[24];

		snprintf(pl, sizeof(pl), "%" PRIu64, f.probe_lost);
		log_kv(LOG_WARN, "probe records lost: a probe ring was full", "lost", pl, NULL);
	}
	drop_removed(a);
out:
	free(buf);
	free(sc.cgidx);
	free(sc.prof);
	free(sc.names);
	free(sc.mods);
	fold_free(sc.modidx);
	wire_batch_free(b);
	return err;
}
