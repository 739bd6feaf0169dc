// SPDX-License-Identifier: MIT
/*
 * cgperf-agent trace: count probe hits per cgroup, histogram an argument,
 * time the latency between two probes, and fold the stacks at the hits:
 * perf probe + perf record -e + perf script, in one step and per container.
 *
 * Every probe is a sampling event with period 1 (each hit is a record),
 * one ring per CPU, opened through the uprobe PMU or as a tracepoint;
 * system-wide, per cgroup (PERF_FLAG_PID_CGROUP) or per process tree.
 * Because a uprobe lives on the FILE (inode + offset), processes started
 * later, such as new PostgreSQL backends, are covered with no re-discovery.
 * USDT probes with a semaphore pass it as ref_ctr_offset, so the kernel
 * raises it in every process that maps the binary, now or later.
 *
 * Results are aggregated in the record callback into (probe, cgroup[, pid])
 * cells: hits, a log2 histogram of the chosen argument, and for --latency
 * a histogram of end - start per thread, paired by tid.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <linux/capability.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/cmd.h"
#include "agent/cmd/cmd_rt.h"
#include "agent/cmd/trace.h"
#include "agent/cmd/trace_wait.h"
#include "agent/perf/cpumap.h"
#include "agent/symbols/demangle.h"
#include "agent/stacks/fold.h"
#include "lib/hist.h"
#include "lib/json.h"
#include "agent/perf/latency.h"
#include "agent/perf/probe.h"
#include "agent/perf/sampler.h"
#include "agent/cmd/workload.h"
#include "lib/clock.h"
#include "agent/symbols/refusals.h"
#include "agent/stacks/stacks.h"
#include "agent/symbols/symtab.h"
#include "agent/perf/usdt.h"
#include "cgroup/identity.h"
#include "cgroup/proc.h"
#include "cgroup/tree.h"
#include "lib/strv.h"

enum {
	OPT_HIST = 256,
	OPT_LAT,
	OPT_STACKS,
	OPT_FILTER,
	OPT_PERPID,
	OPT_CALLGRAPH,
	OPT_DEMANGLE,
	OPT_NO_DEMANGLE,
	OPT_KEY,
	OPT_LAT_TIMEOUT,
	OPT_HEATMAP,
};

static const struct cmd_spec trace_spec = {
	.name = "trace",
	.synopsis = "-e PROBE [-e PROBE...] [--hist ARG] [--latency START[,END]]\n"
		    "[--key FIELD[,FIELD]] [--latency-timeout S] [--heatmap FILE]\n"
		    "[--stacks] [--filter EXPR] [-a | -G CG[,CG...] | -p PID]\n"
		    "[--per-pid] [--json] [--demangle=STYLE | --no-demangle]\n"
		    "[--duration SECONDS | -- COMMAND...]\n"
		    "cgperf-agent trace --list BINARY\n",
	.col = 26,
	.in_order = true,
	.opts = {
		{"event", 'e', true, "PROBE",
		 "u:BINARY:SYMBOL[+OFF][%return] [NAME=%REG...]\n"
		 "sdt:PROVIDER:NAME[@BINARY] [NAME=argN...]\n"
		 "k:FUNC[+OFF][%return] [NAME=%REG|PARAM|+OFF(%REG)[:TYPE]...]\n"
		 "SUBSYS:EVENT [FIELD...]"},
		{"hist", OPT_HIST, false, "ARG", "log2 histogram of argument ARG of the probes that have it"},
		{"latency", OPT_LAT, false, "S[,E]",
		 "time from probe S to probe E on the same thread; with one\n"
		 "u: or k: probe, from the function's entry to its return"},
		{"key", OPT_KEY, false, "FIELD[,FIELD]",
		 "pair --latency's tracepoints by these fields (dev,sector),\n"
		 "not by thread; the start's cgroup owns the latency"},
		{"latency-timeout", OPT_LAT_TIMEOUT, false, "SECONDS",
		 "--key: drop starts still unpaired after this long (10)"},
		{"heatmap", OPT_HEATMAP, false, "FILE.svg", "time x latency heat map of --latency's pairs"},
		{"stacks", OPT_STACKS, false, NULL,
		 "fold the user+kernel stacks at every hit (frame pointers)"},
		{"call-graph", OPT_CALLGRAPH, false, "MODE", "fp or dwarf: how --stacks unwinds user stacks"},
		{"demangle", OPT_DEMANGLE, false, "STYLE",
		 "C++/Rust names in --stacks: full (default, as perf -v),\n"
		 "short (as perf: no parameters), none"},
		{"no-demangle", OPT_NO_DEMANGLE, false, NULL,
		 "names as the binary has them (= --demangle none)"},
		{"filter", OPT_FILTER, false, "EXPR", "kernel filter for the tracepoints ('count > 100')"},
		{"all-cpus", 'a', true, NULL, "every process of the host (default without COMMAND)"},
		{"cgroup", 'G', true, "CG,...", "only these cgroups"},
		{"pid", 'p', true, "PID", "only this process and its children"},
		{"per-pid", OPT_PERPID, false, NULL, "a row per process as well as per cgroup"},
		{"json", 'j', true, NULL, "JSON Lines on stdout"},
		{"duration", 'd', true, "SECONDS", "stop after this long"},
		{"list", 'l', true, "BINARY", "the functions and SDT probes BINARY offers"},
		{"verbose", 'v', true, NULL, "name each container file refused (docs/security.md)"},
	},
};

/* ---- aggregation -------------------------------------------------------- */

static struct cell *cell_get(struct trace *t, uint32_t probe, uint64_t cgroup, uint32_t pid)
{
	struct {
		uint32_t probe, pid;
		uint64_t cgroup;
	} k = {probe, t->per_pid ? pid : 0, t->per_cgroup ? cgroup : 0};
	void *v = t->v;
	bool fresh;
	struct cell *c = latency_cell(t->cells, &k, sizeof(k), &v, &t->n, &t->cap, sizeof(*c), &fresh);

	t->v = v;
	if (!c && errno == ENOSPC)
		t->cells_refused++;
	if (fresh) {
		c->probe = k.probe;
		c->pid = k.pid;
		c->cgroup = k.cgroup;
	}
	return c;
}

/* Value of argument @a of probe @tp (fired at USDT site @site) in @s. */
static int arg_value(const struct tprobe *tp, size_t site, int a, const struct sample *s,
		     int64_t *out)
{
	const struct probe_argdef *d = &tp->p.args[a];
	const struct usdt_arg *ua = NULL;

	/* Each USDT site has its own spec for argN ("8@%rbx" here, "-4@$1" there). */
	if (d->usdt_index >= 0 && tp->site_args && site < tp->nsmp)
		ua = &tp->site_args[site][d->usdt_index];
	return probe_arg_value(&tp->p, a, ua, s, tp->sample_regs, out);
}

static void on_sample(void *ctx, const struct sample *s)
{
	struct trace *t = ctx;
	struct tprobe *tp = &t->pr[t->cur];
	struct cell *c;

	/* A keyed end runs in any context: it counts once paired (on_latency). */
	if (t->nkey && (int)t->cur == t->lat_end) {
		t->samples++;
		if (trace_key_add(t, s, true) < 0)
			t->value_errors++;
		return;
	}
	if (t->filter_pids) {
		uint64_t *slot = fold_slot(t->pids, &s->pid, sizeof(s->pid));

		if (!slot || !*slot)
			return;
	}
	t->samples++;
	c = cell_get(t, (uint32_t)t->cur, s->cgroup_id, s->pid);
	if (!c)
		return;
	c->hits++;
	if (tp->hist_arg >= 0) {
		int64_t v;

		if (arg_value(tp, t->cur_site, tp->hist_arg, s, &v) == 0)
			hist_add(&c->h, v);
		else
			t->value_errors++;
	}
	if (t->nkey && (int)t->cur == t->lat_start) {
		if (trace_key_add(t, s, false) < 0)
			t->value_errors++;
	} else if (((int)t->cur == t->lat_start || (int)t->cur == t->lat_end) &&
		   latency_add(t->lat, 0, (int)t->cur == t->lat_end, s->time, s->cgroup_id, s->pid,
			       s->tid) < 0) {
		t->value_errors++;
	}
	if (t->stacks) {
		const char *label = tp->p.label;

		stacks_add(t->stacks, s, label);
	}
}

static void on_latency(void *ctx, uint32_t pair, uint64_t cgroup, uint32_t pid, uint64_t end,
		       uint64_t ns)
{
	struct trace *t = ctx;
	struct cell *sc = cell_get(t, (uint32_t)t->lat_start, cgroup, pid);

	(void)pair;
	if (sc)
		hist_add(&sc->lat, (int64_t)ns);
	if (t->nkey && (sc = cell_get(t, (uint32_t)t->lat_end, cgroup, pid)))
		sc->hits++;
	trace_heat_add(t, end, ns);
}

/* Pair the held endpoints older than @upto (all with UINT64_MAX). */
static void pair_latency(struct trace *t, uint64_t upto)
{
	t->unpaired_end += latency_pair(t->lat, upto, on_latency, t);
}

static void on_mmap(void *ctx, const struct sample_mmap *m)
{
	struct trace *t = ctx;

	if (t->stacks)
		stacks_mmap(t->stacks, m);
}

static void on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		    uint64_t time)
{
	struct trace *t = ctx;

	if (t->stacks)
		stacks_comm(t->stacks, pid, tid, comm, exec, time);
}

static void on_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	struct trace *t = ctx;

	if (t->filter_pids && pid != ppid) {
		uint64_t *ps = fold_slot(t->pids, &ppid, sizeof(ppid));

		if (ps && *ps) {
			uint64_t *cs = fold_slot(t->pids, &pid, sizeof(pid));

			if (cs)
				*cs = 1; /* children of the traced process are traced */
		}
	}

	if (t->stacks)
		stacks_fork(t->stacks, pid, ppid, tid);
}

static void on_exit_rec(void *ctx, uint32_t pid, uint32_t tid)
{
	struct trace *t = ctx;

	if (t->stacks)
		stacks_exit(t->stacks, pid, tid);
}

/* ---- command ------------------------------------------------------------ */

static int open_probe(struct trace *t, struct tprobe *tp, const struct sampler_opts *base,
		      const char *filter)
{
	struct perf_event_attr attr;
	struct usdt_list *ul = NULL;
	const struct usdt_probe *site = NULL;
	struct probe p = tp->p;
	int err;

	/* Every site of a USDT probe (lwlock__wait__start has three). */
	if (tp->p.kind == PROBE_USDT) {
		char *colon = strchr(tp->p.symbol, ':');

		ul = usdt_read(tp->p.path);
		if (ul && colon) {
			*colon = '\0';
			site = usdt_find_next(ul, NULL, tp->p.symbol, colon + 1);
			*colon = ':';
		}
	}
	/* The union of the registers all sites need, known before opening. */
	for (const struct usdt_probe *u = site; u; ) {
		for (int a = 0; a < tp->p.nargs; a++) {
			int n = tp->p.args[a].usdt_index;

			if (n >= 0 && n < u->nargs &&
			    (u->args[n].kind == USDT_ARG_REG || u->args[n].kind == USDT_ARG_MEM))
				tp->sample_regs |= 1ull << u->args[n].reg;
		}
		char *colon = strchr(tp->p.symbol, ':');

		*colon = '\0';
		u = usdt_find_next(ul, u, tp->p.symbol, colon + 1);
		*colon = ':';
	}
	do {
		struct sampler_opts so = *base;
		struct sampler **v;
		struct sampler *s;

		if (site) {
			p.offset = site->pc_off;
			p.ref_ctr = site->sema_off;
		}
		err = probe_attr(&p, &attr);
		if (err)
			break;
		so.base_attr = &attr;
		so.regs_mask = tp->p.regs_mask | base->regs_mask;
		for (int a = 0; site && a < tp->p.nargs; a++) {
			int n = tp->p.args[a].usdt_index;

			if (n >= 0 && n < site->nargs &&
			    (site->args[n].kind == USDT_ARG_REG || site->args[n].kind == USDT_ARG_MEM))
				so.regs_mask |= 1ull << site->args[n].reg;
		}
		/* Every sampler of a probe uses the same mask, so unpacking is
		 * the same whichever site fired. */
		so.regs_mask |= tp->sample_regs;
		tp->sample_regs = so.regs_mask;
		so.raw = tp->p.kind == PROBE_TRACEPOINT && tp->p.nargs > 0;
		s = sampler_open(&so);
		if (!s) {
			err = -errno;
			break;
		}
		if (filter && tp->p.kind == PROBE_TRACEPOINT) {
			err = sampler_set_filter(s, filter);
			if (err) {
				sampler_close(s);
				break;
			}
		}
		v = realloc(tp->smp, (tp->nsmp + 1) * sizeof(*v));
		if (!v) {
			sampler_close(s);
			err = -ENOMEM;
			break;
		}
		tp->smp = v;
		struct usdt_arg (*sa)[USDT_MAX_ARGS] =
			realloc(tp->site_args, (tp->nsmp + 1) * sizeof(*sa));

		if (!sa) {
			sampler_close(s);
			err = -ENOMEM;
			break;
		}
		tp->site_args = sa;
		memset(sa[tp->nsmp], 0, sizeof(sa[0]));
		if (site)
			memcpy(sa[tp->nsmp], site->args, sizeof(site->args));
		tp->smp[tp->nsmp++] = s;
		if (site) {
			char *colon = strchr(tp->p.symbol, ':');

			*colon = '\0';
			site = usdt_find_next(ul, site, tp->p.symbol, colon + 1);
			*colon = ':';
		}
	} while (site);
	usdt_free(ul);
	return err;
}

/* What the command line asked for, besides what goes into struct trace. */
struct trace_args {
	struct cmd_target tg;
	const char *specs[MAX_PROBES], *latency, *filter;
	size_t nspecs;
	char *lat_a, *lat_b; /* --latency's start and end probes */
	bool json, want_stacks, done;
	enum stacks_mode smode;
	enum demangle_style dstyle;
};

static int parse_call_graph(const char *prog, struct trace_args *a, const char *arg)
{
	if (!strcmp(arg, "fp")) {
		a->smode = STACKS_FP;
	} else if (!strcmp(arg, "dwarf")) {
		a->smode = STACKS_DWARF;
	} else {
		fprintf(stderr, "%s: --call-graph takes fp or dwarf, not '%s'\n", prog, arg);
		return 2;
	}
	a->want_stacks = true;
	return 0;
}

static int add_spec(const char *prog, struct trace_args *a, const char *spec)
{
	if (a->nspecs >= MAX_PROBES - 2) {
		fprintf(stderr, "%s: at most %d probes\n", prog, MAX_PROBES - 2);
		return 2;
	}
	a->specs[a->nspecs++] = spec;
	return 0;
}

/* The options into @t and @a: 0, or the exit status (usage errors 2). */
static int parse_args(struct trace *t, struct trace_args *a, int argc, char **argv)
{
	struct cmd_getopt g;
	int opt, ret = 0;

	cmd_getopt_init(&g, &trace_spec);
	while (!ret && (opt = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
		if (cmd_target_opt(&a->tg, t->prog, opt, optarg, &ret))
			continue;
		switch (opt) {
		case 'e': ret = add_spec(t->prog, a, optarg); break;
		case OPT_HIST: t->hist_name = optarg; break;
		case OPT_LAT: a->latency = optarg; break;
		case OPT_KEY: ret = trace_key_parse(t, optarg); break;
		case OPT_LAT_TIMEOUT:
			ret = cmd_parse_seconds(t->prog, "--latency-timeout", optarg, &t->lat_timeout);
			break;
		case OPT_HEATMAP: t->heat_path = optarg; break;
		case OPT_STACKS: a->want_stacks = true; break;
		case OPT_CALLGRAPH: ret = parse_call_graph(t->prog, a, optarg); break;
		case OPT_FILTER: a->filter = optarg; break;
		case OPT_DEMANGLE: ret = cmd_parse_demangle(t->prog, optarg, &a->dstyle); break;
		case OPT_NO_DEMANGLE: a->dstyle = DEMANGLE_NONE; break;
		case OPT_PERPID: t->per_pid = true; break;
		case 'j': a->json = true; break;
		case 'l': a->done = true; return trace_list_binary(t->prog, optarg);
		case 'h': cmd_usage(stdout, &trace_spec); a->done = true; return 0;
		default: cmd_usage(stderr, &trace_spec); return 2;
		}
	}
	if (ret)
		return ret;
	if (a->tg.all + (a->tg.groups != NULL) + (a->tg.pid > 0) > 1) {
		fprintf(stderr, "%s: choose one of -a, -G and -p\n", t->prog);
		return 2;
	}
	a->tg.cmd = optind < argc ? argv + optind : NULL;
	if ((t->nkey || t->heat_path) && !a->latency) {
		fprintf(stderr, "%s: --key and --heatmap go with --latency START,END\n", t->prog);
		return 2;
	}
	return 0;
}

/* --latency S,E (or one uprobe or kprobe: its entry to its return) into lat_a, lat_b. */
static int split_latency(const struct trace *t, struct trace_args *a)
{
	const char *prog = t->prog;
	const char *latency = a->latency, *comma = NULL;

	for (const char *q = strchr(latency, ','); q; q = strchr(q + 1, ','))
		if (!strncmp(q + 1, "u:", 2) || !strncmp(q + 1, "sdt:", 4) || strchr(q + 1, ':')) {
			comma = q;
			break;
		}
	if (comma) {
		a->lat_a = strndup(latency, (size_t)(comma - latency));
		a->lat_b = strdup(comma + 1);
	} else if ((!strncmp(latency, "u:", 2) || !strncmp(latency, "k:", 2)) &&
		   !strstr(latency, "%return")) {
		/* The return probe: "%return" after the symbol, before any
		 * arguments (which a return probe cannot read anyway). */
		size_t head = strcspn(latency, " \t");
		size_t n = head + sizeof("%return");

		a->lat_a = strdup(latency);
		a->lat_b = malloc(n);
		if (a->lat_b)
			snprintf(a->lat_b, n, "%.*s%%return", (int)head, latency);
	} else {
		fprintf(stderr, "%s: --latency takes START,END, or one u: or k: probe\n", prog);
		return 2;
	}
	if (!a->lat_a || !a->lat_b)
		return 1;
	if (t->nkey && (trace_key_spec(t, &a->lat_a) || trace_key_spec(t, &a->lat_b)))
		return 1;
	return 0;
}

static int resolve_each(struct trace *t, const struct trace_args *a, size_t nspecs,
			const int *pids, size_t npids);

/* Resolve every probe before opening anything: errors leave nothing behind.
 * Binaries are looked for among the traced processes first: -p's, or
 * those in the -G cgroups (cmd_cgroup_pids()). */
static int resolve_probes(struct trace *t, const struct trace_args *a)
{
	size_t nspecs = a->nspecs, npids = a->tg.pid > 0;
	int one[1] = {(int)a->tg.pid}, *pids = a->tg.pid > 0 ? one : NULL, *cgpids = NULL;
	int ret = 0;

	if (a->tg.groups && !a->tg.pid && cmd_cgroup_pids(t->prog, a->tg.groups, &cgpids, &npids))
		return 1;
	if (cgpids)
		pids = cgpids;
	ret = resolve_each(t, a, nspecs, pids, npids);
	free(cgpids);
	return ret;
}

static int resolve_each(struct trace *t, const struct trace_args *a, size_t nspecs,
			const int *pids, size_t npids)
{

	for (size_t i = 0; i < nspecs + (a->latency ? 2 : 0); i++) {
		const char *spec = i < nspecs ? a->specs[i] : (i == nspecs ? a->lat_a : a->lat_b);
		char err[2048];
		size_t j = 0;
		int rc;

		/* A latency probe also given with -e is the same probe. */
		if (i >= nspecs) {
			while (j < nspecs && strcmp(a->specs[j], spec))
				j++;
			if (j < nspecs) {
				*(i == nspecs ? &t->lat_start : &t->lat_end) = (int)j;
				continue;
			}
		}
		rc = probe_resolve(spec, pids, npids, &t->pr[t->npr].p, err, sizeof(err));
		if (rc && trace_wait_may(rc, spec, a->tg.groups, a->tg.pid, a->latency))
			rc = trace_wait_add(t, t->npr, spec, err); /* placed when it comes */
		if (rc) {
			fprintf(stderr, "%s: %s\n", t->prog, err);
			return rc == -ENOMEM ? 1 : 2;
		}
		t->pr[t->npr].hist_arg = -1;
		if (i == nspecs)
			t->lat_start = (int)t->npr;
		else if (i > nspecs)
			t->lat_end = (int)t->npr;
		t->npr++;
	}
	return 0;
}

/* --hist NAME: the argument of that name in every probe that has one. */
static int find_hist_args(struct trace *t)
{
	bool any = false;

	if (!t->hist_name)
		return 0;
	for (size_t i = 0; i < t->npr; i++)
		for (int a = 0; a < t->pr[i].p.nargs; a++)
			if (!strcmp(t->pr[i].p.args[a].name, t->hist_name)) {
				t->pr[i].hist_arg = a;
				any = true;
			}
	if (any || t->wait) /* a waiting probe's arguments are not known yet */
		return 0;
	fprintf(stderr, "%s: no probe has an argument named '%s' for --hist "
			"(name it in the probe: 'u:libc:malloc size=%%di')\n",
		t->prog, t->hist_name);
	return 2;
}

/*
 * A uprobe event with inherit breaks fork() of the traced process on the
 * kernels we met ("could not fork"); so -p with u:/sdt: probes is done
 * system-wide and filtered here by the process tree (FORK records add
 * children). Tracepoints keep the per-process events. This seeds the tree:
 * the process and its descendants that exist now. 0, 1 or 2 (no process).
 */
static int seed_pid_tree(struct trace *t, long pid)
{
	struct cg_proc_list *pl;
	uint32_t root = (uint32_t)pid;
	bool any_uprobe = false, found = false;
	uint64_t *slot;

	for (size_t i = 0; i < t->npr; i++)
		any_uprobe |= t->pr[i].p.kind != PROBE_TRACEPOINT;
	if (pid <= 0 || !any_uprobe)
		return 0;
	t->pids = fold_new();
	if (!t->pids)
		return 1;
	slot = fold_slot(t->pids, &root, sizeof(root));
	if (slot)
		*slot = 1;
	pl = cg_proc_list_read("/proc");
	for (bool grew = true; grew && pl;) {
		grew = false;
		for (size_t i = 0; i < cg_proc_list_count(pl); i++) {
			const struct cg_proc *pr = cg_proc_list_get(pl, i);
			uint32_t pp = (uint32_t)pr->ppid, me = (uint32_t)pr->pid;
			uint64_t *ps = fold_slot(t->pids, &pp, sizeof(pp));
			uint64_t *ms;

			if (me == root)
				found = true;
			if (!ps || !*ps)
				continue;
			ms = fold_slot(t->pids, &me, sizeof(me));
			if (ms && !*ms) {
				*ms = 1;
				grew = true;
			}
		}
	}
	cg_proc_list_free(pl);
	if (!found) {
		fprintf(stderr, "%s: no process %ld\n", t->prog, pid);
		return 2;
	}
	t->filter_pids = true;
	return 0;
}

/* Open every probe's events; on failure say why. 0 or the exit status. */
static int open_probes(struct trace *t, const struct trace_args *a, int *cpus, int ncpu,
		       char **cgdirs, size_t ncgdirs)
{
	bool dwarf = a->want_stacks && a->smode == STACKS_DWARF;
	struct sampler_opts base = {
		.period = 1,
		.callchain = a->want_stacks,
		.user_stack = dwarf,
		.stack_bytes = 8192,
		.regs_mask = a->want_stacks ? stacks_regs_mask(a->smode) : 0,
		.max_stack = 127,
		.cpus = cpus,
		.ncpu = (size_t)ncpu,
		.cgroup_dirs = (const char *const *)cgdirs,
		.ncgroups = ncgdirs,
		.pid = t->filter_pids ? 0 : a->tg.pid,
		/* Every hit is a record; a DWARF stack copy makes each 8 KiB. */
		.mmap_pages = dwarf ? 2048 : 256,
		.clock_monotonic = true,
	};
	const char *filter = a->filter;

	struct sampler_opts everywhere = base;

	/* A keyed end: every task of every CPU (the start picks the cgroup). */
	everywhere.cgroup_dirs = NULL;
	everywhere.ncgroups = 0;
	everywhere.pid = 0;
	trace_wait_arm(t->wait, &base, filter);
	for (size_t i = 0; i < t->npr; i++) {
		bool any = t->nkey && (int)i == t->lat_end;
		int err = trace_wait_pending(t->wait, i)
				  ? 0
				  : open_probe(t, &t->pr[i], any ? &everywhere : &base, filter);
		const char *label = t->pr[i].p.label;

		if (!err)
			continue;
		/* The kprobe PMU takes CAP_PERFMON (Linux 5.8+); the uprobe PMU
		 * was put back under CAP_SYS_ADMIN (commit "perf: Require
		 * CAP_SYS_ADMIN for uprobes", a fix of c9e0924e5c2b). */
		if ((err == -EACCES || err == -EPERM) && t->pr[i].p.kind != PROBE_TRACEPOINT &&
		    t->pr[i].p.kind != PROBE_KPROBE && cmd_have_cap(CAP_PERFMON) &&
		    !cmd_have_cap(CAP_SYS_ADMIN))
			fprintf(stderr, "%s: cannot place %s: perf_event_open: %s.\n"
				"  The kernel's uprobe PMU (uprobes and USDT probes) needs CAP_SYS_ADMIN;\n"
				"  CAP_PERFMON is not enough. Run as root or grant CAP_SYS_ADMIN too\n"
				"  (cgperf-agent.service: the probes drop-in of docs/deploy.md).\n",
				t->prog, label, strerror(-err));
		else if (err == -EACCES || err == -EPERM)
			cmd_explain_perf_permission(t->prog, -err);
		else if (err == -EINVAL && filter && t->pr[i].p.kind == PROBE_TRACEPOINT)
			fprintf(stderr, "%s: the kernel rejected the filter '%s' for %s\n", t->prog,
				filter, label);
		else if (err == -ENOENT && t->pr[i].p.kind != PROBE_TRACEPOINT)
			fprintf(stderr, "%s: cannot place %s: no %s PMU on this kernel "
					"(CONFIG_%s_EVENTS)\n", t->prog, label,
				t->pr[i].p.kind == PROBE_KPROBE ? "kprobe" : "uprobe",
				t->pr[i].p.kind == PROBE_KPROBE ? "KPROBE" : "UPROBE");
		else if (err == -EILSEQ && t->pr[i].p.kind == PROBE_KPROBE)
			fprintf(stderr, "%s: cannot place %s: the kernel refused the offset: it is "
					"not on an instruction boundary\n", t->prog, label);
		else if (err == -ESRCH)
			fprintf(stderr, "%s: no process %ld\n", t->prog, (long)a->tg.pid);
		else
			fprintf(stderr, "%s: cannot open %s: %s\n", t->prog, label, strerror(-err));
		return err == -ESRCH || err == -EILSEQ || (err == -EINVAL && filter) ? 2 : 1;
	}
	return 0;
}

static const struct sampler_cb trace_cb = {
	.sample = on_sample,
	.mmap = on_mmap,
	.comm = on_comm,
	.fork = on_fork,
	.exit = on_exit_rec,
};

/* Drain every ring (each sampler of each probe); with @last, disable first
 * and add up what the rings lost. */
static uint64_t drain_all(struct trace *t, bool last)
{
	struct sampler_cb cb = trace_cb;
	uint64_t lost = 0;

	cb.ctx = t;
	for (size_t i = 0; i < t->npr; i++)
		for (size_t k = 0; k < t->pr[i].nsmp; k++) {
			struct sampler_stats st;

			if (last)
				sampler_disable(t->pr[i].smp[k]);
			t->cur = i;
			t->cur_site = k;
			sampler_drain(t->pr[i].smp[k], &cb);
			if (!last)
				continue;
			sampler_stats(t->pr[i].smp[k], &st);
			lost += st.lost;
			t->throttled += st.throttled;
		}
	return lost;
}

/* The signalfd and every ring's fd, for poll(); *@n of them. NULL on ENOMEM. */
static struct pollfd *poll_set(struct trace *t, int sfd, size_t *n)
{
	size_t nfds = 0, at = 1;

	for (size_t i = 0; i < t->npr; i++)
		for (size_t k = 0; k < t->pr[i].nsmp; k++)
			nfds += sampler_fds(t->pr[i].smp[k], NULL, 0);
	struct pollfd *pfd = calloc(nfds + 1, sizeof(*pfd));
	int *fds = calloc(nfds + 1, sizeof(*fds));

	if (!pfd || !fds) {
		free(pfd);
		free(fds);
		return NULL;
	}
	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	for (size_t i = 0; i < t->npr; i++)
		for (size_t k = 0; k < t->pr[i].nsmp; k++) {
			size_t got = sampler_fds(t->pr[i].smp[k], fds, nfds);

			for (size_t j = 0; j < got && at <= nfds; j++) {
				pfd[at].fd = fds[j];
				pfd[at++].events = POLLIN;
			}
		}
	free(fds);
	*n = at;
	return pfd;
}

/* Trace until a signal, the command's end, @end (0: none) or the end of
 * the -p process. The rings' losses in *@lost. 0 or 1. */
static int trace_loop(struct trace *t, struct workload *w, long pid, uint64_t end,
		      uint64_t *lost)
{
	size_t n;
	struct pollfd *pfd = poll_set(t, workload_fd(w), &n);
	bool stop = false;

	if (!pfd)
		return 1;
	for (size_t i = 0; i < t->npr; i++)
		for (size_t k = 0; k < t->pr[i].nsmp; k++)
			sampler_enable(t->pr[i].smp[k]);
	workload_go(w);
	while (!stop) {
		uint64_t now = clock_mono_ns();
		int timeout = 200;

		if (end && (end <= now || (end - now) / 1000000 < 200))
			timeout = end > now ? (int)((end - now + 999999) / 1000000) : 0;
		if (poll(pfd, n, timeout) < 0 && errno != EINTR)
			break;
		if ((pfd[0].revents & POLLIN) && workload_signals(w))
			stop = true;
		/* Whatever happened before this instant is in the rings now. */
		uint64_t round = clock_mono_ns();

		drain_all(t, false);
		if (trace_wait_poll(t, open_probe) > 0) { /* their rings too */
			free(pfd);
			if (!(pfd = poll_set(t, workload_fd(w), &n)))
				return 1;
		}
		if (t->lat_start >= 0 && round > LATENCY_SLACK_NS)
			pair_latency(t, round - LATENCY_SLACK_NS);
		if (t->stacks)
			stacks_gc(t->stacks);
		if (end && clock_mono_ns() >= end)
			stop = true;
		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			stop = true;
	}
	free(pfd);
	*lost = drain_all(t, true);
	if (t->lat_start >= 0)
		pair_latency(t, UINT64_MAX);
	return 0;
}

/* Close every probe's events (again: a no-op). */
static void close_probes(struct trace *t)
{
	for (size_t i = 0; i < t->npr; i++)
		for (size_t k = 0; k < t->pr[i].nsmp; k++) {
			sampler_close(t->pr[i].smp[k]);
			t->pr[i].smp[k] = NULL;
		}
}

/* Open the probes, start the command, trace, print. 0 or the exit status. */
static int trace_run(struct trace *t, const struct trace_args *a, struct workload *w)
{
	char **cgdirs = NULL, *trans_abs = NULL;
	size_t ncgdirs = 0;
	int ret, *cpus = NULL, ncpu;
	uint64_t lost = 0;

	t->mount = cmd_perf_cgroup_mount(t->prog);
	if ((ret = trace_heat_open(t)))
		goto out;
	if ((ret = cmd_target_cgroups(&a->tg, t->prog, t->mount, "trace", false, &cgdirs, &ncgdirs,
				      &trans_abs)))
		goto out;
	ncpu = cpumap_online(&cpus);
	t->cells = fold_new();
	t->lat = latency_new(SIZE_MAX);
	if (ncpu < 0 || !t->cells || !t->lat) {
		ret = 1;
		goto out;
	}
	if (t->lat_timeout > 0)
		latency_set_bounds(t->lat, (uint64_t)(t->lat_timeout * 1e9), 0);
	fold_set_limit(t->cells, MAX_CELLS);
	if (a->want_stacks) {
		t->stacks = stacks_new(a->smode, t->per_cgroup, t->mount);
		if (!t->stacks || stacks_set_demangle(t->stacks, a->dstyle) < 0) {
			ret = 1;
			goto out;
		}
		if ((t->rt = cmd_rt_cache_new())) /* without it, the paths alone */
			stacks_set_runtime(t->stacks, t->rt);
	}
	cmd_raise_nofile();
	if ((ret = seed_pid_tree(t, a->tg.pid)) || (ret = open_probes(t, a, cpus, ncpu, cgdirs, ncgdirs)))
		goto out; /* everything opened so far is closed by the caller */
	if ((ret = workload_start(w, t->prog, a->tg.cmd, trans_abs)))
		goto out;

	uint64_t t0 = clock_mono_ns();

	if (trace_heat_start(t, t0) < 0) {
		ret = 1;
		goto out;
	}
	ret = trace_loop(t, w, a->tg.pid, cmd_target_deadline(&a->tg, t0), &lost);
	if (ret)
		goto out;
	uint64_t t1 = clock_mono_ns();
	double secs = (double)(t1 - t0) / 1e9;

	trace_wait_report(t);
	trace_print_results(t, a->json, secs);
	trace_report_summary(t, a->tg.verbose, secs, lost);
	ret = workload_finish(w);
	if (trace_heat_write(t, t1) && !ret)
		ret = 1;
out:
	workload_release(w);
	close_probes(t); /* their events hold the cgroup */
	if (trans_abs && rmdir(trans_abs) < 0 && errno != ENOENT)
		fprintf(stderr, "%s: cgroup %s left behind: %s\n", t->prog, trans_abs, strerror(errno));
	free(trans_abs);
	strv_free(cgdirs, ncgdirs);
	free(cpus);
	return ret;
}

int cmd_trace(int argc, char **argv)
{
	struct trace t = {.prog = "cgperf-agent trace", .lat_start = -1, .lat_end = -1,
			  .per_cgroup = true};
	struct trace_args a = {.smode = STACKS_FP, .dstyle = DEMANGLE_FULL};
	struct workload w = WORKLOAD_INIT;
	int ret;

	ret = parse_args(&t, &a, argc, argv);
	if (ret || a.done)
		goto out;
	if (cmd_refusals_start(t.prog, a.tg.verbose) < 0) {
		ret = 1;
		goto out;
	}
	if (a.latency && (ret = split_latency(&t, &a)))
		goto out;
	if (!a.nspecs && !a.latency) {
		fprintf(stderr, "%s: no probe given (-e PROBE or --latency START,END)\n", t.prog);
		cmd_usage(stderr, &trace_spec);
		ret = 2;
		goto out;
	}
	ret = resolve_probes(&t, &a);
	if (!ret && t.nkey)
		ret = trace_key_resolve(&t);
	if (!ret)
		ret = find_hist_args(&t);
	if (!ret)
		ret = trace_run(&t, &a, &w);
out:
	workload_release(&w);
	close_probes(&t);
	for (size_t i = 0; i < t.npr; i++) {
		free(t.pr[i].smp);
		free(t.pr[i].site_args);
		probe_release(&t.pr[i].p);
	}
	free(a.tg.groups);
	free(a.lat_a);
	free(a.lat_b);
	fold_free(t.cells);
	latency_free(t.lat);
	trace_key_release(&t);
	fold_free(t.pids);
	free(t.v);
	stacks_free(t.stacks);
	cg_rtcache_free(t.rt);
	trace_wait_free(t.wait);
	refusals_stop();
	free(t.mount);
	return ret;
}
