// SPDX-License-Identifier: MIT
/*
 * `run` with sampling.off_cpu: time off the CPU by blocking stack, per
 * cgroup, pushed every interval as a Profile of its own ("off-cpu",
 * counts in microseconds) next to the CPU samples' one. The events and the
 * pairing are agent/perf/offcpu's; this file holds their life in `run`:
 * opened system-wide (as the CPU sampling is, so cgroups that appear later
 * are covered with nothing reopened) with the blocks of cgroups the config
 * leaves out dropped before their stack is copied; paired after every
 * drain; the waits still open flushed at each batch, so a long sleep is
 * counted in every interval it spans.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/cmd/run.h"
#include "agent/perf/offcpu.h"
#include "agent/perf/sampler.h"
#include "agent/stacks/fold.h"
#include "lib/clock.h"
#include "lib/log.h"

struct run_offcpu {
	struct sampler *smp;
	struct stacks *st;
	struct offcpu *oc;
	struct ev_spec ev;
	uint64_t paired_upto; /* the last offcpu_pair() instant */
	uint64_t blocks, filtered;
};

void run_offcpu_stop(struct agent *a)
{
	struct run_offcpu *o = a->off;

	if (!o)
		return;
	sampler_close(o->smp);
	ev_spec_release(&o->ev);
	offcpu_free(o->oc);
	stacks_free(o->st);
	free(o);
	a->off = NULL;
}

int run_offcpu_start(struct agent *a, enum stacks_mode mode, uint32_t max_stack)
{
	const struct config *cfg = a->cfg;
	struct offcpu_opts oo = {.min_ns = (uint64_t)cfg->sampling.off_cpu_min_us * 1000,
				 .regs_mask = stacks_regs_mask(mode)};
	struct sampler_opts so = {
		.callchain = true,
		.user_stack = mode == STACKS_DWARF,
		.stack_bytes = cfg->sampling.stack_bytes,
		.regs_mask = stacks_regs_mask(mode),
		.max_stack = max_stack,
		.cpus = a->cpus,
		.ncpu = (size_t)a->ncpu,
		.mmap_pages = mode == STACKS_DWARF ? 1024 : 256,
	};
	struct run_offcpu *o;
	bool filtered;

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
	o->smp = offcpu_sampler_open(&so, &o->ev, &filtered);
	if (!o->smp) {
		log_kv(LOG_ERROR, "sampling.off_cpu: cannot open " OFFCPU_EVENT, "error",
		       strerror(errno), NULL);
		return errno == EACCES || errno == EPERM ? 1 : 2;
	}
	if (!filtered)
		log_kv(LOG_WARN, "sampling.off_cpu: the kernel refused the filter on " OFFCPU_EVENT,
		       "effect", "preemptions count as waits too", NULL);
	sampler_enable(o->smp);
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
		stacks_add_weight(o->st, s, NULL, us);
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

static void on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec)
{
	stacks_comm(((struct agent *)ctx)->off->st, pid, tid, comm, exec);
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
