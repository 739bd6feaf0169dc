// SPDX-License-Identifier: MIT
/*
 * `run` with sampling.off_cpu: time off the CPU by blocking stack, per
 * cgroup, pushed every interval as a Profile of its own ("off-cpu",
 * counts in microseconds) next to the CPU samples' one. The events and the
 * pairing are agent/perf/offcpu's; this file holds their life in `run`.
 *
 * Where the events are opened decides the cost. Every block they match
 * takes a stack in the kernel and every switch writes records, so
 * host-wide events make every program on the host pay (on PostgreSQL
 * under pgbench, pgbench's own blocks doubled the cost). So when the
 * selection is narrower than the whole host (the root cgroup is not
 * followed), the events are opened per followed cgroup
 * (PERF_FLAG_PID_CGROUP, rings shared per CPU, sampler_add_cgroup()) as
 * cgroups are followed, and closed as they go; a cgroup below one whose
 * events are open is covered by them (cgroup events match the subtree)
 * and gets none of its own. Blocks of cgroups the config leaves out
 * (excluded ones inside a followed subtree, or anything host-wide) are
 * dropped before their stack is copied. Past RUN_OFFCPU_MAX_CG cgroups
 * with events of their own (a descriptor and an event per CPU each), the
 * events are reopened host-wide once.
 *
 * Paired after every drain; the waits still open flushed at each batch,
 * so a long sleep is counted in every interval it spans. With
 * sampling.off_cpu_every N the kernel stacks one block in N (the
 * tracepoint's period) and each wait counts N times.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/cmd/run.h"
#include "agent/perf/offcpu.h"
#include "agent/perf/sampler.h"
#include "agent/stacks/fold.h"
#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/log.h"

#define RUN_OFFCPU_MAX_CG 128

/* A cgroup with events of its own. */
struct ocg {
	char *path;
	int handle; /* sampler_add_cgroup()'s */
};

struct run_offcpu {
	struct sampler *smp;
	struct sampler_opts so;
	struct stacks *st;
	struct offcpu *oc;
	struct ev_spec ev;
	uint64_t paired_upto; /* the last offcpu_pair() instant */
	uint64_t blocks, filtered;
	uint32_t every;       /* sampling.off_cpu_every */
	struct ocg *cgs;      /* per-cgroup events (so.cgroups_later) */
	size_t ncgs, capcgs;
};

static void drop_cgs(struct run_offcpu *o)
{
	for (size_t i = 0; i < o->ncgs; i++)
		free(o->cgs[i].path);
	free(o->cgs);
	o->cgs = NULL;
	o->ncgs = o->capcgs = 0;
}

void run_offcpu_stop(struct agent *a)
{
	struct run_offcpu *o = a->off;

	if (!o)
		return;
	sampler_close(o->smp);
	ev_spec_release(&o->ev);
	drop_cgs(o);
	offcpu_free(o->oc);
	stacks_free(o->st);
	free(o);
	a->off = NULL;
}

/* Open the events as o->so says; 0 or -errno (logged). */
static int open_events(struct run_offcpu *o)
{
	bool filtered;

	o->smp = offcpu_sampler_open(&o->so, &o->ev, &filtered);
	if (!o->smp) {
		int err = errno;

		log_kv(LOG_ERROR, "sampling.off_cpu: cannot open " OFFCPU_EVENT, "error",
		       strerror(err), NULL);
		return -err;
	}
	if (!filtered)
		log_kv(LOG_WARN, "sampling.off_cpu: the kernel refused the filter on " OFFCPU_EVENT,
		       "effect", "preemptions count as waits too", NULL);
	sampler_enable(o->smp);
	return 0;
}

/* Too many cgroups of their own: host-wide from now on (what the rings
 * hold is paired first). */
static void go_host_wide(struct agent *a)
{
	struct run_offcpu *o = a->off;

	log_kv(LOG_WARN, "sampling.off_cpu: too many cgroups for events of their own", "effect",
	       "opened host-wide", NULL);
	run_offcpu_drain(a);
	sampler_close(o->smp);
	ev_spec_release(&o->ev);
	drop_cgs(o);
	o->so.cgroups_later = false;
	if (open_events(o) < 0)
		o->smp = NULL; /* no off-CPU profiles from now on; logged */
}

/* @path is @base or below it. */
static bool under(const char *path, const char *base)
{
	size_t n = strlen(base);

	if (!strcmp(base, "/"))
		return true;
	return !strncmp(path, base, n) && (path[n] == '\0' || path[n] == '/');
}

static void remove_cg(struct run_offcpu *o, size_t i)
{
	sampler_remove_cgroup(o->smp, o->cgs[i].handle);
	free(o->cgs[i].path);
	o->cgs[i] = o->cgs[--o->ncgs];
}

void run_offcpu_cg_add(struct agent *a, const char *path)
{
	struct run_offcpu *o = a->off;
	char abs[4096];
	char *copy;
	int h;

	if (!o || !o->smp || !o->so.cgroups_later)
		return;
	for (size_t i = 0; i < o->ncgs; i++)
		if (under(path, o->cgs[i].path))
			return; /* its events cover it */
	if (o->ncgs >= RUN_OFFCPU_MAX_CG) {
		go_host_wide(a);
		return;
	}
	snprintf(abs, sizeof(abs), "%s%s", a->mount, strcmp(path, "/") ? path : "");
	copy = strdup(path);
	h = copy && !GROW_ARRAY(o->cgs, o->ncgs, o->capcgs, 16) ? sampler_add_cgroup(o->smp, abs)
								  : -ENOMEM;
	if (h < 0) {
		if (h != -ENOENT) /* gone already */
			log_kv(LOG_WARN, "sampling.off_cpu: cannot follow cgroup", "cgroup", path,
			       "error", strerror(-h), NULL);
		free(copy);
		return;
	}
	/* cgroups below it had events of their own: these cover them now */
	for (size_t i = o->ncgs; i-- > 0;)
		if (under(o->cgs[i].path, path))
			remove_cg(o, i);
	o->cgs[o->ncgs++] = (struct ocg){.path = copy, .handle = h};
}

void run_offcpu_cg_gone(struct agent *a, const char *path)
{
	struct run_offcpu *o = a->off;

	for (size_t i = 0; o && i < o->ncgs; i++)
		if (!strcmp(o->cgs[i].path, path)) {
			remove_cg(o, i);
			return;
		}
}

int run_offcpu_start(struct agent *a, enum stacks_mode mode, uint32_t max_stack)
{
	const struct config *cfg = a->cfg;
	struct offcpu_opts oo = {.min_ns = (uint64_t)cfg->sampling.off_cpu_min_us * 1000,
				 .regs_mask = stacks_regs_mask(mode)};
	struct run_offcpu *o;
	int err;

	if (!cfg->sampling.off_cpu)
		return 0;
	o = a->off = calloc(1, sizeof(*o));
	if (!o)
		return 1;
	o->st = stacks_new(mode, cfg->sampling.per_cgroup, a->mount);
	o->oc = offcpu_new(&oo);
	if (!o->st || !o->oc || stacks_set_demangle(o->st, cfg->symbols.demangle) < 0) {
		log_kv(LOG_ERROR, "sampling.off_cpu: out of memory", NULL);
		return 1;
	}
	stacks_set_max_stack(o->st, max_stack);
	run_stack_opts(a, mode, max_stack, &o->so);
	if (cfg->sampling.off_cpu_stack_bytes)
		o->so.stack_bytes = cfg->sampling.off_cpu_stack_bytes;
	/* a switch per block, not a tick: bigger rings (DWARF copies the stack) */
	o->so.mmap_pages = mode == STACKS_DWARF ? 1024 : 256;
	/* DWARF unwinds the stack copy: no frame-pointer walk in the kernel too */
	o->so.kernel_callchain_only = mode == STACKS_DWARF;
	o->every = cfg->sampling.off_cpu_every ? cfg->sampling.off_cpu_every : 1;
	o->so.period = o->every;
	/* the whole host followed: host-wide events; else per cgroup */
	o->so.cgroups_later = !run_cg_find(a, "/");
	err = open_events(o);
	if (err)
		return err == -EACCES || err == -EPERM ? 1 : 2;
	for (size_t i = 0; i < a->ncg; i++)
		if (!a->cg[i].removed)
			run_offcpu_cg_add(a, a->cg[i].path);
	log_kv(LOG_INFO, "sampling.off_cpu: events opened", "where",
	       o->so.cgroups_later ? "per followed cgroup" : "host-wide", NULL);
	return 0;
}

size_t run_offcpu_fds(const struct agent *a, int *fds, size_t max)
{
	return a->off ? sampler_fds(a->off->smp, fds, max) : 0;
}

static void on_wait(void *ctx, const struct sample *s, uint64_t ns)
{
	struct run_offcpu *o = ctx;
	uint64_t us = (ns + 500) / 1000;

	if (us)
		stacks_add_weight(o->st, s, NULL, us * o->every);
}

static void on_block(void *ctx, const struct sample *s)
{
	struct agent *a = ctx;

	a->off->blocks++;
	/* Blocks in cgroups the config leaves out are not even copied. */
	if (a->ids) {
		uint64_t *slot = fold_slot(a->ids, &s->cgroup_id, sizeof(s->cgroup_id));

		if (!slot || !*slot) {
			a->off->filtered++;
			return;
		}
	}
	offcpu_out(a->off->oc, s);
}

static void on_switch(void *ctx, const struct sample_switch *sw)
{
	struct agent *a = ctx;

	/* every switch-in; those of threads with no open wait cost a lookup */
	if (!sw->out && sw->pid)
		offcpu_in(a->off->oc, sw->pid, sw->tid, sw->time);
}

static void on_mmap(void *ctx, const struct sample_mmap *m)
{
	stacks_mmap(((struct agent *)ctx)->off->st, m);
}

static void on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		    uint64_t time)
{
	stacks_comm(((struct agent *)ctx)->off->st, pid, tid, comm, exec, time);
}

static void on_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	stacks_fork(((struct agent *)ctx)->off->st, pid, ppid, tid);
}

static void on_exit_rec(void *ctx, uint32_t pid, uint32_t tid)
{
	stacks_exit(((struct agent *)ctx)->off->st, pid, tid);
}

static void on_lost(void *ctx, uint64_t n)
{
	((struct agent *)ctx)->lost += n;
}

void run_offcpu_drain(struct agent *a)
{
	struct sampler_cb cb = {.ctx = a, .sample = on_block, .cswitch = on_switch,
				.mmap = on_mmap, .comm = on_comm, .fork = on_fork,
				.exit = on_exit_rec, .lost = on_lost};
	struct run_offcpu *o = a->off;
	uint64_t upto;

	if (!o)
		return;
	upto = clock_mono_ns() - OFFCPU_SLACK_NS;
	if (o->smp)
		sampler_drain(o->smp, &cb);
	offcpu_pair(o->oc, upto, on_wait, o);
	o->paired_upto = upto;
	stacks_gc(o->st);
}

static bool thread_alive(uint32_t pid, uint32_t tid)
{
	return syscall(SYS_tgkill, (pid_t)pid, (pid_t)tid, 0) == 0 || errno != ESRCH;
}

struct stacks *run_offcpu_stacks(struct agent *a)
{
	struct run_offcpu *o = a->off;

	if (!o)
		return NULL;
	run_offcpu_drain(a);
	/* threads asleep now: their wait so far goes into this interval */
	offcpu_flush(o->oc, o->paired_upto, on_wait, o, thread_alive);
	return o->st;
}

void run_offcpu_stats(const struct agent *a, struct offcpu_stats *out, uint64_t *blocks)
{
	offcpu_stats(a->off ? a->off->oc : NULL, out);
	*blocks = a->off ? a->off->blocks : 0;
}
