// SPDX-License-Identifier: MIT
/*
 * cgperf-agent record: perf record -g + perf script + stackcollapse-perf.pl
 * in one step, per cgroup.
 *
 * The hot path (one call per sample) does no symbolization and no string
 * work: each frame becomes (object id, file offset), the whole stack a
 * small array of integers, counted in a hash table (raw fold). Objects are
 * interned the first time a mapping is hit, while the process is alive, so
 * binaries of short-lived processes and of other mount namespaces can still
 * be opened (through /proc/PID/root). Only at the end is every distinct
 * frame named once and the raw stacks turned into folded text.
 *
 * User stacks come from one of two unwinders behind one small ops struct:
 * frame pointers (the kernel already walked them into the callchain) or
 * DWARF CFI over the copied user stack (agent/stacks/unwind.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/cmd.h"
#include "agent/perf/cpumap.h"
#include "agent/perf/events.h"
#include "agent/perf/offcpu.h"
#include "agent/stacks/fold.h"
#include "agent/perf/sampler.h"
#include "agent/cmd/workload.h"
#include "lib/clock.h"
#include "lib/strv.h"
#include "agent/symbols/refusals.h"
#include "agent/stacks/stacks.h"
#include "cgroup/proc.h"
#include "cgroup/target.h"
#include "agent/cmd/cmd_rt.h"
#include "cgroup/tree.h"

struct record {
	const char *prog;
	enum stacks_mode mode;
	struct stacks *st;
	struct fold *pidsel; /* pid -> 1 match, 2 no match, 3 the command's tree (--target) */
	struct cg_target *sel;
	struct cg_rtcache *rt; /* container names for the per-cgroup labels */
	char *mount;
	uint64_t samples, lost, filtered;
	struct offcpu *oc; /* --off-cpu: switch-outs waiting for their switch-in */
	struct ev_spec offev; /* --off-cpu: sched:sched_switch */
	const struct record_emit *emit; /* annotate's output in place of the folded stacks */
};

static bool selected(struct record *r, uint32_t pid)
{
	uint64_t *slot;

	if (!r->sel)
		return true;
	slot = fold_slot(r->pidsel, &pid, sizeof(pid));
	if (!slot)
		return false;
	if (!*slot) {
		struct cg_proc p;

		*slot = 2;
		if (cg_proc_read("/proc", (pid_t)pid, &p) == 0) {
			if (cg_target_match(r->sel, &p))
				*slot = 1;
			/* /proc is read after the sample was taken: a process
			 * that has exec'd since (its main thread's name as of
			 * this sample is not /proc's) is judged by its new
			 * program when its exec comes (on_comm asks again),
			 * not by this sample of its old one. */
			if (*slot == 1 && strncmp(stacks_comm_of(r->st, pid, pid), p.comm, 15))
				*slot = 0;
			cg_proc_release(&p);
		}
	}
	return *slot == 1 || *slot == 3;
}

/* Count sample @s: whether its process is one to record (else filtered). */
static bool take(struct record *r, const struct sample *s)
{
	r->samples++;
	if (selected(r, s->pid))
		return true;
	r->filtered++;
	return false;
}

/*
 * Raw stack key: [cgroup id, comm id, nframes, then per frame (obj << 48 |
 * offset)]. File offsets fit 48 bits; kernel addresses keep their low 48
 * bits and are re-extended when named.
 */
static void on_sample(void *ctx, const struct sample *s)
{
	struct record *r = ctx;

	if (take(r, s))
		stacks_add(r->st, s, NULL);
}

/* --off-cpu: a wait that ended, into the stacks in microseconds. */
static void on_wait(void *ctx, const struct sample *s, uint64_t ns)
{
	struct record *r = ctx;
	uint64_t us = (ns + 500) / 1000;

	if (us)
		stacks_add_weight(r->st, s, NULL, us);
}

/* --off-cpu: a sched_switch sample is a thread blocking. */
static void on_block(void *ctx, const struct sample *s)
{
	struct record *r = ctx;

	if (take(r, s))
		offcpu_out(r->oc, s);
}

static void on_switch(void *ctx, const struct sample_switch *sw)
{
	struct record *r = ctx;

	if (!sw->out && sw->pid)
		offcpu_in(r->oc, sw->pid, sw->tid, sw->time);
}

struct trunc_report {
	struct record *r;
};

/* One "cgroup reason count" line of the summary. */
static void trunc_line(void *ctx, uint64_t cgroup_id, enum stacks_trunc reason, uint64_t count)
{
	struct trunc_report *t = ctx;

	fprintf(stderr, "%s:   %s %s %" PRIu64 "\n", t->r->prog,
		stacks_cgroup_label(t->r->st, cgroup_id), stacks_trunc_name(reason), count);
}

static void on_mmap(void *ctx, const struct sample_mmap *m)
{
	struct record *r = ctx;

	stacks_mmap(r->st, m);
}

static void on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		    uint64_t time)
{
	struct record *r = ctx;

	stacks_comm(r->st, pid, tid, comm, exec, time);
	if (exec && r->sel) {
		uint64_t *slot = fold_slot(r->pidsel, &pid, sizeof(pid));

		/* A new program: ask the selector again, except for the command
		 * we ran and its descendants (3), which are targets by definition. */
		if (slot && *slot != 3)
			*slot = 0;
	}
}

static void on_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	struct record *r = ctx;

	stacks_fork(r->st, pid, ppid, tid);
	if (r->sel && pid != ppid) {
		uint64_t *ps = fold_slot(r->pidsel, &ppid, sizeof(ppid));
		uint64_t v = ps ? *ps : 0;
		uint64_t *cs = fold_slot(r->pidsel, &pid, sizeof(pid));

		if (cs)
			*cs = v == 1 || v == 3 ? v : 0; /* children of a target are targets */
	}
}

static void on_exit_rec(void *ctx, uint32_t pid, uint32_t tid)
{
	struct record *r = ctx;

	stacks_exit(r->st, pid, tid);
}

static void on_lost(void *ctx, uint64_t lost)
{
	struct record *r = ctx;

	r->lost += lost;
}

enum { OPT_CALLGRAPH = 256, OPT_PERCG, OPT_DEMANGLE, OPT_NO_DEMANGLE, OPT_OFFCPU, OPT_OFFCPU_MIN };

static const struct cmd_spec record_spec = {
	.name = "record",
	.synopsis = "[-a | -G CG[,CG...] | -p PID | --target SELECTOR]\n"
		    "[-F HZ | -c PERIOD] [-e EVENT] [-g | --call-graph fp|dwarf[,BYTES]]\n"
		    "[--off-cpu [--off-cpu-min-us US]]\n"
		    "[-o FILE] [--per-cgroup] [--demangle=STYLE | --no-demangle]\n"
		    "[--duration SECONDS | -- COMMAND...]\n",
	.col = 26,
	.in_order = true,
	.opts = {
		CMD_OPTS_SAMPLE_TARGETS,
		{"freq", 'F', true, "HZ", "samples per second per CPU (default 99)"},
		{"count", 'c', true, "PERIOD", "one sample every PERIOD events instead"},
		{"event", 'e', true, "EVENT", "sampling event (default cpu-clock)"},
		{NULL, 'g', true, NULL, "stacks by frame pointers (= --call-graph fp)"},
		{"call-graph", OPT_CALLGRAPH, false, "MODE",
		 "fp, or dwarf[,BYTES] to unwind a BYTES copy of the user\n"
		 "stack with .eh_frame (default 8192)"},
		{"output", 'o', true, "FILE", "folded stacks to FILE (default stdout)"},
		{"off-cpu", OPT_OFFCPU, false, NULL,
		 "time off CPU instead of CPU samples: the stack at which\n"
		 "each thread blocked, weighted in microseconds"},
		{"off-cpu-min-us", OPT_OFFCPU_MIN, false, "US", "with --off-cpu, drop waits shorter than US"},
		{"per-cgroup", OPT_PERCG, false, NULL,
		 "the cgroup (container identity when known) as first frame"},
		{"demangle", OPT_DEMANGLE, false, "STYLE",
		 "C++/Rust names: full (default, as perf -v: parameters,\n"
		 "clone suffixes), short (as perf: no parameters), none"},
		{"no-demangle", OPT_NO_DEMANGLE, false, NULL,
		 "symbol names as the binary has them (= --demangle none)"},
		{"duration", 'd', true, "SECONDS", "stop after this long (default: Ctrl-C or COMMAND's end)"},
		{"verbose", 'v', true, NULL, "print the agent's own figures on stderr"},
	},
};

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int parse_u64(const char *prog, const char *what, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || s[0] == '-') {
		fprintf(stderr, "%s: %s must be a positive integer, not '%s'\n", prog, what, s);
		return 2;
	}
	*out = v;
	return 0;
}

/* What the command line asked for, besides what goes into struct record. */
struct record_args {
	struct sampler_opts so; /* its pid is tg.pid */
	struct cmd_target tg;
	const char *evname, *outpath;
	bool per_cgroup, done, off_cpu, ev_set;
	uint64_t off_cpu_min_us;
	enum demangle_style dstyle;
};

static int parse_target(struct record *r, const char *arg)
{
	struct cg_rt_sources src;
	char err[256];

	cmd_rt_sources(&src);
	r->sel = cg_target_parse(arg, &src, err, sizeof(err));
	if (!r->sel) {
		fprintf(stderr, "%s: bad --target: %s\n", r->prog, err);
		return 2;
	}
	return 0;
}

static int parse_call_graph(struct record *r, struct record_args *a, const char *arg)
{
	uint64_t v;
	int ret;

	if (!strcmp(arg, "fp")) {
		r->mode = STACKS_FP;
		return 0;
	}
	if (strncmp(arg, "dwarf", 5) || (arg[5] && arg[5] != ',')) {
		fprintf(stderr, "%s: --call-graph takes fp or dwarf[,BYTES], not '%s'\n", r->prog,
			arg);
		return 2;
	}
	r->mode = STACKS_DWARF;
	if (!arg[5])
		return 0;
	if ((ret = parse_u64(r->prog, "dwarf stack size", arg + 6, &v)))
		return ret;
	if (v > 65528) {
		fprintf(stderr, "%s: dwarf stack size is at most 65528\n", r->prog);
		return 2;
	}
	a->so.stack_bytes = (uint32_t)((v + 7) & ~7ull);
	return 0;
}

/* The options into @r and @a: 0, or the exit status (usage errors 2). */
static int parse_args(struct record *r, struct record_args *a, int argc, char **argv)
{
	struct cmd_getopt g;
	int opt, ret = 0;

	cmd_getopt_init(&g, &record_spec);
	while (!ret && (opt = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
		if (cmd_target_opt(&a->tg, r->prog, opt, optarg, &ret))
			continue;
		switch (opt) {
		case 't': ret = parse_target(r, optarg); break;
		case 'F':
			ret = parse_u64(r->prog, "-F", optarg, &a->so.freq);
			a->so.period = 0;
			break;
		case 'c':
			ret = parse_u64(r->prog, "-c", optarg, &a->so.period);
			a->so.freq = 0;
			break;
		case 'e': a->evname = optarg; a->ev_set = true; break;
		case 'g': r->mode = STACKS_FP; break;
		case OPT_CALLGRAPH: ret = parse_call_graph(r, a, optarg); break;
		case 'o': a->outpath = optarg; break;
		case OPT_PERCG: a->per_cgroup = true; break;
		case OPT_OFFCPU: a->off_cpu = true; break;
		case OPT_OFFCPU_MIN:
			ret = parse_u64(r->prog, "--off-cpu-min-us", optarg, &a->off_cpu_min_us);
			break;
		case OPT_DEMANGLE: ret = cmd_parse_demangle(r->prog, optarg, &a->dstyle); break;
		case OPT_NO_DEMANGLE: a->dstyle = DEMANGLE_NONE; break;
		case 'h': cmd_usage(stdout, &record_spec); a->done = true; return 0;
		default: cmd_usage(stderr, &record_spec); return 2;
		}
	}
	if (ret)
		return ret;
	if (a->tg.all + (a->tg.groups != NULL) + (a->tg.pid > 0) + (r->sel != NULL) > 1) {
		fprintf(stderr, "%s: choose one of -a, -G, -p and --target\n", r->prog);
		return 2;
	}
	if (a->off_cpu && a->ev_set) {
		fprintf(stderr, "%s: --off-cpu samples %s itself; drop -e\n", r->prog, OFFCPU_EVENT);
		return 2;
	}
	if (optind < argc && (a->tg.duration > 0 || a->tg.pid > 0)) {
		fprintf(stderr, "%s: a command cannot be combined with --duration or -p\n", r->prog);
		return 2;
	}
	a->tg.cmd = optind < argc ? argv + optind : NULL;
	a->so.pid = a->tg.pid;
	return 0;
}

static int parse_event(struct record *r, const char *evname, struct ev_spec *ev)
{
	int ret = ev_parse(evname, ev_tracefs(), ev);
	char *sugg[6];
	size_t n;

	if (!ret)
		return 0;
	n = ret == -ENOENT ? ev_suggest(evname, ev_tracefs(), sugg, 6) : 0;
	fprintf(stderr, "%s: unknown event '%s'%s\n", r->prog, evname, n ? "; did you mean:" : "");
	for (size_t i = 0; i < n; i++) {
		fprintf(stderr, "    %s\n", sugg[i]);
		free(sugg[i]);
	}
	return 2;
}

/* Open the sampling events; on failure say why. NULL with *@ret set. */
static struct sampler *open_sampler(struct record *r, const struct sampler_opts *so, int *ret)
{
	struct sampler *smp = sampler_open(so);
	int err = errno;

	if (smp)
		return smp;
	if (err == EACCES || err == EPERM)
		cmd_explain_perf_permission(r->prog, err);
	else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
		fprintf(stderr, "%s: event '%s' cannot sample on this host (%s)%s\n", r->prog,
			so->event->name, strerror(err),
			so->event->kind == EV_HARDWARE ? "; no hardware PMU here? try -e cpu-clock" : "");
	else if (err == ESRCH)
		fprintf(stderr, "%s: no process %d\n", r->prog, (int)so->pid);
	else
		fprintf(stderr, "%s: cannot open sampling events: %s\n", r->prog, strerror(err));
	*ret = err == ESRCH ? 2 : 1;
	return NULL;
}

/* --off-cpu: the sched_switch events and the pairing. NULL with *@ret set. */
static struct sampler *open_offcpu(struct record *r, struct record_args *a, int *ret)
{
	struct offcpu_opts oo = {.min_ns = a->off_cpu_min_us * 1000,
				 .regs_mask = a->so.regs_mask};
	struct sampler *smp;
	bool filtered;
	int err;

	*ret = 1;
	r->oc = offcpu_new(&oo);
	if (!r->oc) {
		fprintf(stderr, "%s: out of memory\n", r->prog);
		return NULL;
	}
	/* a switch per block, not a tick: bigger rings (DWARF copies the stack) */
	a->so.mmap_pages = r->mode == STACKS_DWARF ? 1024 : 256;
	a->so.period = 0; /* every block (-c does not apply) */
	/* DWARF unwinds the stack copy: no frame-pointer walk in the kernel too */
	a->so.kernel_callchain_only = r->mode == STACKS_DWARF;
	smp = offcpu_sampler_open(&a->so, &r->offev, &filtered);
	err = errno;
	if (smp) {
		if (!filtered)
			fprintf(stderr, "%s: the kernel refused the filter on %s: preemptions count"
				" as waits too\n", r->prog, OFFCPU_EVENT);
		return smp;
	}
	if (err == EACCES || err == EPERM)
		cmd_explain_perf_permission(r->prog, err);
	else if (err == ESRCH)
		fprintf(stderr, "%s: no process %d\n", r->prog, (int)a->tg.pid);
	else
		fprintf(stderr, "%s: cannot open %s for --off-cpu: %s%s\n", r->prog, OFFCPU_EVENT,
			strerror(err), err == ENOENT ? " (no tracefs?)" : "");
	*ret = err == ESRCH ? 2 : 1;
	return NULL;
}

/* The sampler's options for @r's mode over @cpus and @cgdirs. */
static void sampler_setup(struct record *r, struct sampler_opts *so, struct ev_spec *ev,
			  int *cpus, int ncpu, char **cgdirs, size_t ncgdirs)
{
	so->event = ev;
	so->callchain = r->mode != STACKS_LEAF;
	so->user_stack = r->mode == STACKS_DWARF;
	so->regs_mask = stacks_regs_mask(r->mode);
	/* perf's default depth, or less when the sysctl says so (more fails). */
	int sysmax = sampler_max_stack_default();

	so->max_stack = sysmax > 0 && sysmax < 127 ? (uint32_t)sysmax : 127;
	stacks_set_max_stack(r->st, so->max_stack);
	so->cpus = cpus;
	so->ncpu = (size_t)ncpu;
	so->cgroup_dirs = (const char *const *)cgdirs;
	so->ncgroups = ncgdirs;
}

/* Sample until a signal, the command's end, @end (0: none) or the end of
 * the -p process. 0 or 1. */
static int sample_loop(struct record *r, struct sampler *smp, struct workload *w, pid_t pid,
		       uint64_t end)
{
	struct sampler_cb cb = {
		.ctx = r,
		.sample = on_sample,
		.mmap = on_mmap,
		.comm = on_comm,
		.fork = on_fork,
		.exit = on_exit_rec,
		.lost = on_lost,
	};
	size_t nfds = sampler_fds(smp, NULL, 0);
	int *fds = calloc(nfds + 1, sizeof(*fds));
	struct pollfd *pfd = calloc(nfds + 1, sizeof(*pfd));
	bool stop = false;
	int ret = 0;

	if (r->oc) {
		cb.sample = on_block;
		cb.cswitch = on_switch;
	}
	if (!fds || !pfd) {
		ret = 1;
		goto out;
	}
	sampler_fds(smp, fds, nfds);
	pfd[0].fd = workload_fd(w);
	pfd[0].events = POLLIN;
	for (size_t i = 0; i < nfds; i++) {
		pfd[i + 1].fd = fds[i];
		pfd[i + 1].events = POLLIN;
	}
	if (sampler_enable(smp) < 0) {
		fprintf(stderr, "%s: cannot enable sampling: %s\n", r->prog, strerror(errno));
		ret = 1;
		goto out;
	}
	workload_go(w);
	while (!stop) {
		uint64_t now = clock_mono_ns();
		int timeout = 1000;

		if (end)
			timeout = now >= end ? 0 : (int)((end - now + 999999) / 1000000);
		if (timeout > 1000)
			timeout = 1000;
		if (poll(pfd, nfds + 1, timeout) < 0 && errno != EINTR)
			break;
		if ((pfd[0].revents & POLLIN) && workload_signals(w))
			stop = true;
		/* every switch before this instant is in a ring by now */
		uint64_t upto = clock_mono_ns() - OFFCPU_SLACK_NS;

		sampler_drain(smp, &cb);
		if (r->oc)
			offcpu_pair(r->oc, upto, on_wait, r);
		stacks_gc(r->st);
		if (end && clock_mono_ns() >= end)
			stop = true;
		if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH)
			stop = true; /* as perf record -p: done when the process is */
	}
	uint64_t t_end = clock_mono_ns();

	sampler_disable(smp);
	sampler_drain(smp, &cb);
	if (r->oc) {
		/* threads still asleep: counted up to the end */
		offcpu_pair(r->oc, UINT64_MAX, on_wait, r);
		offcpu_flush(r->oc, t_end, on_wait, r, NULL);
	}
out:
	free(pfd);
	free(fds);
	return ret;
}

/* The output file, opened before sampling so a bad path fails at once. */
static int open_output(struct record *r, const char *outpath, FILE **out)
{
	*out = stdout;
	if (!outpath)
		return 0;
	*out = fopen(outpath, "we");
	if (!*out) {
		fprintf(stderr, "%s: cannot write %s: %s\n", r->prog, outpath, strerror(errno));
		*out = stdout;
		return 1;
	}
	return 0;
}

/* The folded stacks into @out, which is closed (unless stdout). 0 or 1. */
static int write_stacks(struct record *r, FILE *out, const char *outpath, size_t *nlines)
{
	int ret = 0, err = stacks_write(r->st, out, nlines);

	if (err) {
		fprintf(stderr, "%s: writing the folded stacks failed: %s\n", r->prog, strerror(-err));
		ret = 1;
	}
	if (out != stdout && fclose(out) != 0 && !ret) {
		fprintf(stderr, "%s: writing %s failed: %s\n", r->prog, outpath, strerror(errno));
		ret = 1;
	}
	return ret;
}

/* The summary on stderr: samples, truncations, refusals, and with -v the costs. */
static void report_summary(struct record *r, struct sampler *smp, const struct record_args *a,
			   size_t nlines, double elapsed, double cpu_sample, double cpu_total)
{
	struct sampler_stats st;
	struct stacks_stats sst;
	char refused[256];

	sampler_stats(smp, &st);
	stacks_stats(r->st, &sst);
	fprintf(stderr,
		"%s: %" PRIu64 " samples in %.2f s, %" PRIu64 " kept, %" PRIu64
		" lost, %zu distinct stacks%s%s\n",
		r->prog, r->samples, elapsed, sst.kept, st.lost, nlines,
		a->outpath ? " -> " : "", a->outpath ? a->outpath : "");
	if (r->oc) {
		struct offcpu_stats os;

		offcpu_stats(r->oc, &os);
		fprintf(stderr,
			"%s: off-CPU: %" PRIu64 " waits, %.3f s; %" PRIu64
			" under the threshold, %" PRIu64 " dropped (caps), %zu still asleep at the end\n",
			r->prog, os.waits, (double)os.total_ns / 1e9, os.short_waits, os.dropped,
			os.open);
	}
	if (sst.truncated[0] + sst.truncated[1] + sst.truncated[2]) {
		struct trunc_report tr = {.r = r};

		fprintf(stderr,
			"%s: stacks cut short: %" PRIu64 " [truncated: stack copy], %" PRIu64
			" [truncated: max stack], %" PRIu64 " [bad return address]\n",
			r->prog, sst.truncated[STACKS_TRUNC_STACK_COPY],
			sst.truncated[STACKS_TRUNC_MAX_STACK], sst.truncated[STACKS_TRUNC_BAD_ADDRESS]);
		stacks_foreach_truncated(r->st, trunc_line, &tr);
	}
	cmd_refusals_text(refused, sizeof(refused));
	if (!a->tg.verbose && refused[0] != '0')
		fprintf(stderr, "%s: container files refused: %s; -v names them\n", r->prog, refused);
	cmd_refusals_hint(r->prog);
	if (!a->tg.verbose)
		return;
	fprintf(stderr,
		"%s: mode %s; agent CPU %.3f s (%.3f s sampling+unwinding, %.3f s naming)"
		" = %.1f us/sample; %zu objects, %zu processes tracked;"
		" unwind errors %" PRIu64 ", no user regs %" PRIu64 ", filtered %" PRIu64
		", malformed %" PRIu64 ", throttled %" PRIu64 ", refused %" PRIu64
		"; container files refused %s\n",
		r->prog, stacks_mode_name(r->mode), cpu_total, cpu_sample, cpu_total - cpu_sample,
		r->samples ? cpu_total * 1e6 / (double)r->samples : 0.0, sst.objects, sst.processes,
		sst.unwind_errors, sst.no_user_regs, r->filtered, st.malformed, st.throttled,
		sst.refused, refused);
}

/* Sample, then write and report. 0 or the exit status. */
static int record_run(struct record *r, struct record_args *a, struct ev_spec *ev,
		      struct workload *w)
{
	char **cgdirs = NULL, *trans_abs = NULL;
	size_t ncgdirs = 0, nlines = 0;
	int ret, *cpus = NULL, ncpu;
	struct sampler *smp = NULL;
	FILE *out = stdout;

	r->mount = cmd_perf_cgroup_mount(r->prog);
	if ((ret = cmd_target_cgroups(&a->tg, r->prog, r->mount, "record", r->sel != NULL, &cgdirs,
				      &ncgdirs, &trans_abs)))
		goto out;
	ncpu = cpumap_online(&cpus);
	if (ncpu < 0) {
		fprintf(stderr, "%s: cannot read the online CPUs: %s\n", r->prog, strerror(-ncpu));
		ret = 1;
		goto out;
	}
	r->st = stacks_new(r->mode, a->per_cgroup, r->mount);
	r->pidsel = fold_new();
	if (cmd_refusals_start(r->prog, a->tg.verbose) < 0 || !r->st || !r->pidsel ||
	    stacks_set_demangle(r->st, a->dstyle) < 0) {
		fprintf(stderr, "%s: out of memory\n", r->prog);
		ret = 1;
		goto out;
	}
	/* without a cache the labels are the paths' alone */
	if ((r->rt = cmd_rt_cache_new()))
		stacks_set_runtime(r->st, r->rt);
	sampler_setup(r, &a->so, ev, cpus, ncpu, cgdirs, ncgdirs);
	cmd_raise_nofile();
	smp = a->off_cpu ? open_offcpu(r, a, &ret) : open_sampler(r, &a->so, &ret);
	if (!smp || (ret = open_output(r, a->outpath, &out)))
		goto out;
	if ((ret = workload_start(w, r->prog, a->tg.cmd, trans_abs)))
		goto out;
	if (r->sel && workload_pid(w) > 0) {
		/* the command is a target whatever the selector says */
		uint32_t cp = (uint32_t)workload_pid(w);
		uint64_t *slot = fold_slot(r->pidsel, &cp, sizeof(cp));

		if (slot)
			*slot = 3;
	}

	double cpu0 = cpu_seconds();
	uint64_t t0 = clock_mono_ns();

	ret = sample_loop(r, smp, w, a->tg.pid, cmd_target_deadline(&a->tg, t0));
	if (ret)
		goto out;
	double elapsed = (double)(clock_mono_ns() - t0) / 1e9, cpu_sample = cpu_seconds() - cpu0;

	if (r->emit)
		ret = r->emit->emit(r->emit->ctx, r->st, &nlines);
	else
		ret = write_stacks(r, out, a->outpath, &nlines);
	out = stdout;
	report_summary(r, smp, a, nlines, elapsed, cpu_sample, cpu_seconds() - cpu0);
	int status = workload_finish(w);

	if (a->tg.cmd && !ret)
		ret = status;
out:
	if (out != stdout)
		fclose(out);
	workload_release(w);
	sampler_close(smp);
	if (trans_abs && rmdir(trans_abs) < 0 && errno != ENOENT)
		fprintf(stderr, "%s: cgroup %s left behind: %s\n", r->prog, trans_abs,
			strerror(errno));
	free(trans_abs);
	strv_free(cgdirs, ncgdirs);
	free(cpus);
	return ret;
}

/*
 * Data pages per CPU ring for DWARF: every sample carries its stack copy
 * (8 KiB by default), so the 64 pages that hold 250 frame-pointer samples
 * hold about 30 of them, 0.15 s at 199 Hz: a busy host keeps the agent off
 * the CPU that long and the kernel drops what does not fit. Half a second
 * of samples at the asked rate (at least 99 Hz), 256 KiB to 4 MiB.
 */
static size_t dwarf_ring_pages(const struct sampler_opts *so)
{
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t hz = so->freq > 99 ? so->freq : 99, want;
	size_t pages = 64;

	if (ps <= 0)
		ps = 4096;
	want = (so->stack_bytes + 512ull) * (hz < 10000 ? hz : 10000) / 2;
	while (pages < 1024 && pages * (uint64_t)ps < want)
		pages *= 2;
	return pages;
}

int cmd_record(int argc, char **argv)
{
	return cmd_record_emit(argc, argv, NULL);
}

int cmd_record_emit(int argc, char **argv, const struct record_emit *e)
{
	struct record r = {.prog = e ? e->prog : "cgperf-agent record", .mode = STACKS_LEAF, .emit = e};
	struct record_args a = {
		.so = {.freq = 99, .stack_bytes = 8192, .mmap_pages = 64},
		.evname = "cpu-clock",
		.dstyle = DEMANGLE_FULL,
	};
	struct workload w = WORKLOAD_INIT;
	struct ev_spec ev = {0};
	bool have_ev = false;
	int ret;

	ret = parse_args(&r, &a, argc, argv);
	if (ret || a.done)
		goto out;
	if (r.mode == STACKS_DWARF)
		a.so.mmap_pages = dwarf_ring_pages(&a.so);
	ret = parse_event(&r, a.evname, &ev);
	if (ret)
		goto out;
	have_ev = true;
	ret = record_run(&r, &a, &ev, &w);
out:
	free(a.tg.groups);
	if (have_ev)
		ev_spec_release(&ev);
	stacks_free(r.st);
	cg_rtcache_free(r.rt);
	refusals_stop();
	fold_free(r.pidsel);
	offcpu_free(r.oc);
	ev_spec_release(&r.offev);
	cg_target_free(r.sel);
	free(r.mount);
	return ret;
}
