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

#include "agent/cmd.h"
#include "agent/cpumap.h"
#include "agent/demangle.h"
#include "agent/fold.h"
#include "agent/hist.h"
#include "agent/json.h"
#include "agent/probe.h"
#include "agent/sampler.h"
#include "agent/spawn.h"
#include "agent/refusals.h"
#include "agent/stacks.h"
#include "agent/symtab.h"
#include "agent/usdt.h"
#include "cgroup/identity.h"
#include "cgroup/proc.h"
#include "cgroup/tree.h"

#define MAX_PROBES 32
#define MAX_CELLS 100000

struct cell {
	uint32_t probe;
	uint32_t pid;
	uint64_t cgroup;
	uint64_t hits;
	struct hist h;   /* --hist value */
	struct hist lat; /* --latency, on the start probe's cell */
};

struct tprobe {
	struct probe p;
	struct sampler **smp; /* one per USDT site (1 otherwise) */
	struct usdt_arg (*site_args)[USDT_MAX_ARGS]; /* per sampler: each USDT site's own specs */
	size_t nsmp;
	int hist_arg;         /* index into p.args, -1 */
	uint64_t sample_regs; /* sample_regs_user asked for: the args' and the unwinder's */
};

/* A latency endpoint, held until every ring has been drained past its time
 * so starts and ends from different rings are paired in time order. */
struct lat_ev {
	uint64_t time, cgroup;
	uint32_t pid, tid;
	bool end;
};

struct trace {
	const char *prog;
	struct lat_ev *lev;
	size_t nlev, caplev;
	struct tprobe pr[MAX_PROBES];
	size_t npr;
	int lat_start, lat_end; /* probe indexes, -1 */
	bool per_pid, per_cgroup;
	const char *hist_name;
	struct fold *cells;   /* key -> index + 1 */
	struct cell *v;
	size_t n, cap;
	uint64_t cells_refused;
	struct fold *starts;  /* tid -> start time */
	uint64_t unpaired_end;
	struct stacks *stacks;
	size_t cur;           /* probe whose ring is being drained */
	size_t cur_site;      /* and which of its samplers */
	struct fold *pids;    /* -p with uprobes: the process tree, filtered here */
	bool filter_pids;
	uint64_t samples, value_errors;
	char *mount;
};

static void usage(FILE *f)
{
	fputs("usage: cgperf-agent trace -e PROBE [-e PROBE...] [--hist ARG] [--latency START[,END]]\n"
	      "                          [--stacks] [--filter EXPR] [-a | -G CG[,CG...] | -p PID]\n"
	      "                          [--per-pid] [--json] [--demangle=STYLE | --no-demangle]\n"
	      "                          [--duration SECONDS | -- COMMAND...]\n"
	      "       cgperf-agent trace --list BINARY\n"
	      "\n"
	      "  -e, --event PROBE       u:BINARY:SYMBOL[+OFF][%return] [NAME=%REG...]\n"
	      "                          sdt:PROVIDER:NAME[@BINARY] [NAME=argN...]\n"
	      "                          SUBSYS:EVENT [FIELD...]\n"
	      "      --hist ARG          log2 histogram of argument ARG of the probes that have it\n"
	      "      --latency S[,E]     time from probe S to probe E on the same thread; with one\n"
	      "                          u: probe, from the function's entry to its return\n"
	      "      --stacks            fold the user+kernel stacks at every hit (frame pointers)\n"
	      "      --call-graph MODE   fp or dwarf: how --stacks unwinds user stacks\n"
	      "      --demangle STYLE    C++/Rust names in --stacks: full (default, as perf -v),\n"
	      "                          short (as perf: no parameters), none\n"
	      "      --no-demangle       names as the binary has them (= --demangle none)\n"
	      "      --filter EXPR       kernel filter for the tracepoints ('count > 100')\n"
	      "  -a, --all-cpus          every process of the host (default without COMMAND)\n"
	      "  -G, --cgroup CG,...     only these cgroups\n"
	      "  -p, --pid PID           only this process and its children\n"
	      "      --per-pid           a row per process as well as per cgroup\n"
	      "  -j, --json              JSON Lines on stdout\n"
	      "  -d, --duration SECONDS  stop after this long\n"
	      "  -l, --list BINARY       the functions and SDT probes BINARY offers\n"
	      "  -v, --verbose           name each container file refused (docs/security.md)\n",
	      f);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- aggregation -------------------------------------------------------- */

static struct cell *cell_get(struct trace *t, uint32_t probe, uint64_t cgroup, uint32_t pid)
{
	struct {
		uint32_t probe, pid;
		uint64_t cgroup;
	} k = {probe, t->per_pid ? pid : 0, t->per_cgroup ? cgroup : 0};
	uint64_t *slot = fold_slot(t->cells, &k, sizeof(k));

	if (!slot) {
		t->cells_refused++;
		return NULL;
	}
	if (!*slot) {
		if (t->n == t->cap) {
			size_t nc = t->cap ? t->cap * 2 : 64;
			struct cell *v = realloc(t->v, nc * sizeof(*v));

			if (!v)
				return NULL;
			t->v = v;
			t->cap = nc;
		}
		memset(&t->v[t->n], 0, sizeof(t->v[0]));
		t->v[t->n].probe = k.probe;
		t->v[t->n].pid = k.pid;
		t->v[t->n].cgroup = k.cgroup;
		*slot = ++t->n;
	}
	return &t->v[*slot - 1];
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
	if ((int)t->cur == t->lat_start || (int)t->cur == t->lat_end) {
		if (t->nlev == t->caplev) {
			size_t nc = t->caplev ? t->caplev * 2 : 4096;
			struct lat_ev *v = realloc(t->lev, nc * sizeof(*v));

			if (!v) {
				t->value_errors++;
				goto stacks;
			}
			t->lev = v;
			t->caplev = nc;
		}
		t->lev[t->nlev++] = (struct lat_ev){s->time, s->cgroup_id, s->pid, s->tid,
						     (int)t->cur == t->lat_end};
	}
stacks:
	if (t->stacks) {
		const char *label = tp->p.label;

		stacks_add(t->stacks, s, label);
	}
}

static int cmp_lev(const void *a, const void *b)
{
	const struct lat_ev *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->end - y->end; /* a start and an end at the same instant: start first */
}

/* Pair the held endpoints older than @upto (all with UINT64_MAX), in time
 * order: an end closes the latest open start of its thread. */
static void pair_latency(struct trace *t, uint64_t upto)
{
	size_t done = 0;

	if (!t->nlev)
		return;
	qsort(t->lev, t->nlev, sizeof(*t->lev), cmp_lev);
	for (; done < t->nlev && t->lev[done].time < upto; done++) {
		const struct lat_ev *e = &t->lev[done];
		uint64_t *slot = fold_slot(t->starts, &e->tid, sizeof(e->tid));

		if (!slot)
			continue;
		if (!e->end) {
			*slot = e->time ? e->time : 1;
		} else if (*slot && e->time >= *slot) {
			struct cell *sc = cell_get(t, (uint32_t)t->lat_start, e->cgroup, e->pid);

			if (sc)
				hist_add(&sc->lat, (int64_t)(e->time - *slot));
			*slot = 0;
		} else {
			t->unpaired_end++;
		}
	}
	memmove(t->lev, t->lev + done, (t->nlev - done) * sizeof(*t->lev));
	t->nlev -= done;
}

static void on_mmap(void *ctx, const struct sample_mmap *m)
{
	struct trace *t = ctx;

	if (t->stacks)
		stacks_mmap(t->stacks, m);
}

static void on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec)
{
	struct trace *t = ctx;

	if (t->stacks)
		stacks_comm(t->stacks, pid, tid, comm, exec);
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

/* ---- output ------------------------------------------------------------- */

struct cglabels {
	struct cg_tree *tree;
};

static const char *cg_name(const struct trace *t, const struct cglabels *cl, uint64_t id,
			   char *buf, size_t len)
{
	if (!t->per_cgroup)
		return "(all)";
	for (size_t i = 0; cl->tree && i < cg_tree_count(cl->tree); i++) {
		const struct cg_node *n = cg_tree_get(cl->tree, i);
		char label[600];

		if (n->id != id)
			continue;
		cg_identity_label(&n->ident, label, sizeof(label));
		if (label[0] && (n->ident.container_id[0] || n->ident.pod_uid[0]))
			snprintf(buf, len, "%s [%s]", n->path, label);
		else
			snprintf(buf, len, "%s", n->path);
		return buf;
	}
	snprintf(buf, len, "[cgroup id %" PRIu64 ", removed]", id);
	return buf;
}

static int cmp_cell(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;

	if (x->probe != y->probe)
		return x->probe < y->probe ? -1 : 1;
	if (x->hits != y->hits)
		return x->hits > y->hits ? -1 : 1;
	if (x->cgroup != y->cgroup)
		return x->cgroup < y->cgroup ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static const char *cg_path_of(const struct cglabels *cl, uint64_t id)
{
	for (size_t i = 0; cl->tree && i < cg_tree_count(cl->tree); i++)
		if (cg_tree_get(cl->tree, i)->id == id)
			return cg_tree_get(cl->tree, i)->path;
	return NULL;
}

static void print_json(struct trace *t, const struct cglabels *cl, double secs)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct cell *c = &t->v[i];
		const struct tprobe *tp = &t->pr[c->probe];
		const char *path = t->per_cgroup ? cg_path_of(cl, c->cgroup) : NULL;

		fputs("{\"probe\":", stdout);
		json_write_string(stdout, tp->p.label);
		if (t->per_cgroup) {
			fputs(",\"cgroup\":", stdout);
			if (path)
				json_write_string(stdout, path);
			else
				fputs("null", stdout);
			printf(",\"cgroup_id\":%" PRIu64, c->cgroup);
		}
		if (t->per_pid)
			printf(",\"pid\":%" PRIu32, c->pid);
		printf(",\"hits\":%" PRIu64 ",\"rate\":%.3f", c->hits, secs > 0 ? c->hits / secs : 0);
		if (tp->hist_arg >= 0) {
			fputs(",\"hist\":{\"arg\":", stdout);
			json_write_string(stdout, tp->p.args[tp->hist_arg].name);
			fputs(",\"values\":", stdout);
			hist_json(&c->h, stdout);
			fputc('}', stdout);
		}
		if ((int)c->probe == t->lat_start) {
			fputs(",\"latency_ns\":", stdout);
			hist_json(&c->lat, stdout);
			fputs(",\"latency_end\":", stdout);
			json_write_string(stdout, t->pr[t->lat_end].p.label);
		}
		fputs("}\n", stdout);
	}
}

static void print_text(struct trace *t, const struct cglabels *cl, double secs)
{
	size_t prev = SIZE_MAX;

	printf("\nProbe hits over %.2f s%s:\n", secs, t->per_cgroup ? ", per cgroup" : "");
	for (size_t i = 0; i < t->n; i++) {
		const struct cell *c = &t->v[i];
		const struct tprobe *tp = &t->pr[c->probe];
		char name[1024];

		if (c->probe != prev) {
			printf("\n  %s\n", tp->p.label);
			prev = c->probe;
		}
		printf("    %-60s %12" PRIu64 " hits %12.1f/s", cg_name(t, cl, c->cgroup, name, sizeof(name)),
		       c->hits, secs > 0 ? c->hits / secs : 0);
		if (t->per_pid)
			printf("  pid %" PRIu32, c->pid);
		putchar('\n');
		if (tp->hist_arg >= 0 && c->h.count) {
			printf("      %s: count %" PRIu64 ", mean %.1f, max %" PRIu64 "\n",
			       tp->p.args[tp->hist_arg].name, c->h.count, hist_mean(&c->h), c->h.max);
			hist_print(&c->h, stdout, "      ", tp->p.args[tp->hist_arg].name);
		}
		if ((int)c->probe == t->lat_start && c->lat.count) {
			printf("      latency to %s: %" PRIu64 " pairs, mean %.1f us, max %.1f us\n",
			       t->pr[t->lat_end].p.label, c->lat.count, hist_mean(&c->lat) / 1e3,
			       (double)c->lat.max / 1e3);
			hist_print(&c->lat, stdout, "      ", "ns");
		}
	}
	if (!t->n)
		printf("\n  (no hits)\n");
	putchar('\n');
}

/* ---- --list ------------------------------------------------------------- */

static int list_binary(const char *prog, const char *bin)
{
	char err[1024];
	struct symtab *st;
	struct usdt_list *ul;
	int rc;

	const char *path;
	char *resolved = NULL;

	rc = probe_find_binary(bin, NULL, 0, &resolved, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 2;
	}
	path = resolved;
	st = symtab_open(path, "");
	if (!st) {
		fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
		free(resolved);
		return 2;
	}
	printf("# %s: %zu functions (%s), build-id %s\n", path, symtab_count(st), symtab_source(st),
	       symtab_build_id(st)[0] ? symtab_build_id(st) : "none");
	for (size_t i = 0; i < symtab_count(st); i++) {
		uint64_t off;
		const char *name = symtab_name_at(st, i, &off);
		char *dm;

		if (!name)
			continue;
		/* The spec takes the name as stored, so each u: line stays one;
		 * a comment line above says what a C++ name is. */
		dm = demangle_name(name, DEMANGLE_FULL);
		if (dm)
			printf("# %s\n", dm);
		printf("u:%s:%s\n", path, name);
		free(dm);
	}
	symtab_free(st);
	ul = usdt_read(path);
	if (!ul || !usdt_count(ul)) {
		printf("# %s has no SDT notes\n", path);
	} else {
		printf("# %zu SDT probe sites\n", usdt_count(ul));
		for (size_t i = 0; i < usdt_count(ul); i++) {
			const struct usdt_probe *u = usdt_get(ul, i);

			printf("sdt:%s:%s@%s  args: %s%s\n", u->provider, u->name, path,
			       u->arg_spec && u->arg_spec[0] ? u->arg_spec : "(none)",
			       u->sema_off ? "  [semaphore]" : "");
		}
	}
	usdt_free(ul);
	free(resolved);
	return 0;
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

int cmd_trace(int argc, char **argv)
{
	enum {
		OPT_HIST = 256,
		OPT_LAT,
		OPT_STACKS,
		OPT_FILTER,
		OPT_PERPID,
		OPT_CALLGRAPH,
		OPT_DEMANGLE,
		OPT_NO_DEMANGLE,
	};
	static const struct option longopts[] = {
		{"event", required_argument, NULL, 'e'},
		{"hist", required_argument, NULL, OPT_HIST},
		{"latency", required_argument, NULL, OPT_LAT},
		{"stacks", no_argument, NULL, OPT_STACKS},
		{"call-graph", required_argument, NULL, OPT_CALLGRAPH},
		{"demangle", required_argument, NULL, OPT_DEMANGLE},
		{"no-demangle", no_argument, NULL, OPT_NO_DEMANGLE},
		{"filter", required_argument, NULL, OPT_FILTER},
		{"all-cpus", no_argument, NULL, 'a'},
		{"cgroup", required_argument, NULL, 'G'},
		{"pid", required_argument, NULL, 'p'},
		{"per-pid", no_argument, NULL, OPT_PERPID},
		{"json", no_argument, NULL, 'j'},
		{"duration", required_argument, NULL, 'd'},
		{"list", required_argument, NULL, 'l'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct trace t = {.prog = "cgperf-agent trace", .lat_start = -1, .lat_end = -1,
			  .per_cgroup = true};
	const char *specs[MAX_PROBES], *latency = NULL, *filter = NULL;
	size_t nspecs = 0;
	char *groups = NULL, **cgdirs = NULL, *trans_rel = NULL, *trans_abs = NULL;
	char *lat_a = NULL, *lat_b = NULL;
	size_t ncgdirs = 0;
	bool json = false, all = false, want_stacks = false, verbose = false;
	enum stacks_mode smode = STACKS_FP;
	enum demangle_style dstyle = DEMANGLE_FULL;
	double duration = 0;
	long pid = 0;
	int opt, ret = 0, *cpus = NULL, ncpu, sfd = -1;
	struct spawn sp = {.pid = -1, .go_fd = -1};
	sigset_t oldmask;
	bool sigmask_set = false;
	pid_t child = -1;
	int child_status = 0;
	struct cglabels cl = {0};

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+e:aG:p:jd:l:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'e':
			if (nspecs >= MAX_PROBES - 2) {
				fprintf(stderr, "%s: at most %d probes\n", t.prog, MAX_PROBES - 2);
				ret = 2;
				goto out;
			}
			specs[nspecs++] = optarg;
			break;
		case OPT_HIST: t.hist_name = optarg; break;
		case OPT_LAT: latency = optarg; break;
		case OPT_STACKS: want_stacks = true; break;
		case OPT_CALLGRAPH:
			if (!strcmp(optarg, "fp")) {
				smode = STACKS_FP;
			} else if (!strcmp(optarg, "dwarf")) {
				smode = STACKS_DWARF;
			} else {
				fprintf(stderr, "%s: --call-graph takes fp or dwarf, not '%s'\n", t.prog,
					optarg);
				ret = 2;
				goto out;
			}
			want_stacks = true;
			break;
		case OPT_FILTER: filter = optarg; break;
		case OPT_DEMANGLE:
			if (demangle_style_parse(optarg, &dstyle) < 0) {
				fprintf(stderr, "%s: --demangle takes full, short or none, not '%s'\n",
					t.prog, optarg);
				ret = 2;
				goto out;
			}
			break;
		case OPT_NO_DEMANGLE: dstyle = DEMANGLE_NONE; break;
		case OPT_PERPID: t.per_pid = true; break;
		case 'a': all = true; break;
		case 'G': {
			size_t n = (groups ? strlen(groups) + 1 : 0) + strlen(optarg) + 1;
			char *g = malloc(n);

			if (!g) {
				ret = 1;
				goto out;
			}
			snprintf(g, n, "%s%s%s", groups ? groups : "", groups ? "," : "", optarg);
			free(groups);
			groups = g;
			break;
		}
		case 'p': {
			char *end;

			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || pid <= 0 || pid > 4194304) {
				fprintf(stderr, "%s: bad pid '%s'\n", t.prog, optarg);
				ret = 2;
				goto out;
			}
			break;
		}
		case 'j': json = true; break;
		case 'v': verbose = true; break;
		case 'd': {
			char *end;

			errno = 0;
			duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(duration > 0) || !isfinite(duration)) {
				fprintf(stderr, "%s: --duration must be a positive number, not '%s'\n",
					t.prog, optarg);
				ret = 2;
				goto out;
			}
			break;
		}
		case 'l':
			ret = list_binary(t.prog, optarg);
			goto out;
		case 'h': usage(stdout); goto out;
		default: usage(stderr); ret = 2; goto out;
		}
	}
	if (all + (groups != NULL) + (pid > 0) > 1) {
		fprintf(stderr, "%s: choose one of -a, -G and -p\n", t.prog);
		ret = 2;
		goto out;
	}
	if (cmd_refusals_start(t.prog, verbose) < 0) {
		ret = 1;
		goto out;
	}

	/* --latency S,E (or one uprobe: its entry to its return). */
	if (latency) {
		const char *comma = NULL;

		for (const char *q = strchr(latency, ','); q; q = strchr(q + 1, ','))
			if (!strncmp(q + 1, "u:", 2) || !strncmp(q + 1, "sdt:", 4) ||
			    strchr(q + 1, ':')) {
				comma = q;
				break;
			}
		if (comma) {
			lat_a = strndup(latency, (size_t)(comma - latency));
			lat_b = strdup(comma + 1);
		} else if (!strncmp(latency, "u:", 2) && !strstr(latency, "%return")) {
			/* The return probe: "%return" after the symbol, before any
			 * arguments (which a return probe cannot read anyway). */
			size_t head = strcspn(latency, " \t");
			size_t n = head + sizeof("%return");

			lat_a = strdup(latency);
			lat_b = malloc(n);
			if (lat_b)
				snprintf(lat_b, n, "%.*s%%return", (int)head, latency);
		} else {
			fprintf(stderr, "%s: --latency takes START,END, or one u: probe\n", t.prog);
			ret = 2;
			goto out;
		}
		if (!lat_a || !lat_b) {
			ret = 1;
			goto out;
		}
	}
	if (!nspecs && !latency) {
		fprintf(stderr, "%s: no probe given (-e PROBE or --latency START,END)\n", t.prog);
		usage(stderr);
		ret = 2;
		goto out;
	}

	/* Resolve every probe before opening anything: errors leave nothing behind. */
	int pids[1] = {(int)pid};

	for (size_t i = 0; i < nspecs + (latency ? 2 : 0); i++) {
		const char *spec = i < nspecs ? specs[i] : (i == nspecs ? lat_a : lat_b);
		char err[2048];
		int rc;

		/* A latency probe also given with -e is the same probe. */
		if (i >= nspecs) {
			size_t j;

			for (j = 0; j < nspecs && strcmp(specs[j], spec); j++)
				;
			if (j < nspecs) {
				if (i == nspecs)
					t.lat_start = (int)j;
				else
					t.lat_end = (int)j;
				continue;
			}
		}
		rc = probe_resolve(spec, pid > 0 ? pids : NULL, pid > 0 ? 1 : 0, &t.pr[t.npr].p, err,
				   sizeof(err));
		if (rc) {
			fprintf(stderr, "%s: %s\n", t.prog, err);
			ret = rc == -ENOMEM ? 1 : 2;
			goto out;
		}
		t.pr[t.npr].hist_arg = -1;
		if (i == nspecs)
			t.lat_start = (int)t.npr;
		else if (i > nspecs)
			t.lat_end = (int)t.npr;
		t.npr++;
	}
	if (t.hist_name) {
		bool any = false;

		for (size_t i = 0; i < t.npr; i++)
			for (int a = 0; a < t.pr[i].p.nargs; a++)
				if (!strcmp(t.pr[i].p.args[a].name, t.hist_name)) {
					t.pr[i].hist_arg = a;
					any = true;
				}
		if (!any) {
			fprintf(stderr, "%s: no probe has an argument named '%s' for --hist "
					"(name it in the probe: 'u:libc:malloc size=%%di')\n",
				t.prog, t.hist_name);
			ret = 2;
			goto out;
		}
	}

	t.mount = cmd_perf_cgroup_mount(t.prog);
	if ((groups || (optind < argc && !all && pid <= 0)) && !t.mount) {
		ret = 1;
		goto out;
	}
	if (groups && (ret = cmd_cgroup_dirs(t.prog, t.mount, groups, &cgdirs, &ncgdirs)))
		goto out;
	if (optind < argc && !groups && !all && pid <= 0 &&
	    (ret = cmd_command_cgroup(t.prog, t.mount, "trace", &trans_abs, &cgdirs, &ncgdirs)))
		goto out;

	ncpu = cpumap_online(&cpus);
	if (ncpu < 0) {
		ret = 1;
		goto out;
	}
	t.cells = fold_new();
	t.starts = fold_new();
	if (!t.cells || !t.starts) {
		ret = 1;
		goto out;
	}
	fold_set_limit(t.cells, MAX_CELLS);
	if (want_stacks) {
		t.stacks = stacks_new(smode, t.per_cgroup, t.mount);
		if (!t.stacks || stacks_set_demangle(t.stacks, dstyle) < 0) {
			ret = 1;
			goto out;
		}
	}
	cmd_raise_nofile();
	/* A uprobe event with inherit breaks fork() of the traced process on the
	 * kernels we met ("could not fork"); so -p with u:/sdt: probes is done
	 * system-wide and filtered here by the process tree (FORK records add
	 * children). Tracepoints keep the per-process events. */
	bool any_uprobe = false;

	for (size_t i = 0; i < t.npr; i++)
		any_uprobe |= t.pr[i].p.kind != PROBE_TRACEPOINT;
	if (pid > 0 && any_uprobe) {
		struct cg_proc_list *pl = cg_proc_list_read("/proc");
		bool found = false;

		t.pids = fold_new();
		if (!t.pids) {
			cg_proc_list_free(pl);
			ret = 1;
			goto out;
		}
		/* the process and its descendants that exist now */
		uint32_t root = (uint32_t)pid;
		uint64_t *slot = fold_slot(t.pids, &root, sizeof(root));

		if (slot)
			*slot = 1;
		for (bool grew = true; grew && pl;) {
			grew = false;
			for (size_t i = 0; i < cg_proc_list_count(pl); i++) {
				const struct cg_proc *pr = cg_proc_list_get(pl, i);
				uint32_t pp = (uint32_t)pr->ppid, me = (uint32_t)pr->pid;
				uint64_t *ps = fold_slot(t.pids, &pp, sizeof(pp));
				uint64_t *ms;

				if (me == root)
					found = true;
				if (!ps || !*ps)
					continue;
				ms = fold_slot(t.pids, &me, sizeof(me));
				if (ms && !*ms) {
					*ms = 1;
					grew = true;
				}
			}
		}
		cg_proc_list_free(pl);
		if (!found) {
			fprintf(stderr, "%s: no process %ld\n", t.prog, pid);
			ret = 2;
			goto out;
		}
		t.filter_pids = true;
	}
	struct sampler_opts base = {
		.period = 1,
		.callchain = want_stacks,
		.user_stack = want_stacks && smode == STACKS_DWARF,
		.stack_bytes = 8192,
		.regs_mask = want_stacks ? stacks_regs_mask(smode) : 0,
		.max_stack = 127,
		.cpus = cpus,
		.ncpu = (size_t)ncpu,
		.cgroup_dirs = (const char *const *)cgdirs,
		.ncgroups = ncgdirs,
		.pid = t.filter_pids ? 0 : (pid_t)pid,
		/* Every hit is a record; a DWARF stack copy makes each 8 KiB. */
		.mmap_pages = want_stacks && smode == STACKS_DWARF ? 2048 : 256,
		.clock_monotonic = true,
	};

	for (size_t i = 0; i < t.npr; i++) {
		int err = open_probe(&t, &t.pr[i], &base, filter);

		if (err) {
			if (err == -EACCES || err == -EPERM)
				cmd_explain_perf_permission(t.prog, -err);
			else if (err == -EINVAL && filter && t.pr[i].p.kind == PROBE_TRACEPOINT)
				fprintf(stderr, "%s: the kernel rejected the filter '%s' for %s\n",
					t.prog, filter, t.pr[i].p.label);
			else if (err == -ENOENT && t.pr[i].p.kind != PROBE_TRACEPOINT)
				fprintf(stderr, "%s: cannot place %s: no uprobe PMU on this kernel "
						"(CONFIG_UPROBE_EVENTS)\n",
					t.prog, t.pr[i].p.label);
			else if (err == -ESRCH)
				fprintf(stderr, "%s: no process %ld\n", t.prog, pid);
			else
				fprintf(stderr, "%s: cannot open %s: %s\n", t.prog, t.pr[i].p.label,
					strerror(-err));
			ret = err == -ESRCH || (err == -EINVAL && filter) ? 2 : 1;
			goto out; /* everything opened so far is closed below */
		}
	}

	sfd = cmd_signalfd(&oldmask);
	if (sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", t.prog, strerror(-sfd));
		ret = 1;
		goto out;
	}
	sigmask_set = true;
	if (optind < argc) {
		int err = spawn_held(&sp, argv + optind, trans_abs, &oldmask, t.prog);

		if (err) {
			fprintf(stderr, "%s: fork: %s\n", t.prog, strerror(-err));
			ret = 1;
			goto out;
		}
		child = sp.pid;
	}

	struct sampler_cb cb = {
		.ctx = &t,
		.sample = on_sample,
		.mmap = on_mmap,
		.comm = on_comm,
		.fork = on_fork,
		.exit = on_exit_rec,
	};
	size_t nfds = 0;

	for (size_t i = 0; i < t.npr; i++)
		for (size_t k = 0; k < t.pr[i].nsmp; k++)
			nfds += sampler_fds(t.pr[i].smp[k], NULL, 0);
	struct pollfd *pfd = calloc(nfds + 1, sizeof(*pfd));
	int *fds = calloc(nfds + 1, sizeof(*fds));

	if (!pfd || !fds) {
		free(pfd);
		free(fds);
		ret = 1;
		goto out;
	}
	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	size_t at = 1;

	for (size_t i = 0; i < t.npr; i++)
		for (size_t k = 0; k < t.pr[i].nsmp; k++) {
			size_t n = sampler_fds(t.pr[i].smp[k], fds, nfds);

			for (size_t j = 0; j < n && at <= nfds; j++) {
				pfd[at].fd = fds[j];
				pfd[at++].events = POLLIN;
			}
		}
	free(fds);

	for (size_t i = 0; i < t.npr; i++)
		for (size_t k = 0; k < t.pr[i].nsmp; k++)
			sampler_enable(t.pr[i].smp[k]);
	uint64_t t0 = now_ns(), end = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : 0;
	bool stop = false;

	spawn_release(&sp);
	while (!stop) {
		uint64_t now = now_ns();
		int timeout = 200;

		if (end && (end <= now || (end - now) / 1000000 < 200))
			timeout = end > now ? (int)((end - now + 999999) / 1000000) : 0;
		if (poll(pfd, at, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo != SIGCHLD)
					stop = true;
				else if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
					child = -1;
					stop = true;
				}
			}
		}
		/* Whatever happened before this instant is in the rings now. */
		uint64_t round = now_ns();

		for (size_t i = 0; i < t.npr; i++)
			for (size_t k = 0; k < t.pr[i].nsmp; k++) {
				t.cur = i;
				t.cur_site = k;
				sampler_drain(t.pr[i].smp[k], &cb);
			}
		if (t.lat_start >= 0)
			pair_latency(&t, round);
		if (t.stacks)
			stacks_gc(t.stacks);
		if (end && now_ns() >= end)
			stop = true;
		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			stop = true;
	}
	free(pfd);
	uint64_t lost = 0;

	for (size_t i = 0; i < t.npr; i++)
		for (size_t k = 0; k < t.pr[i].nsmp; k++) {
			struct sampler_stats st;

			sampler_disable(t.pr[i].smp[k]);
			t.cur = i;
			t.cur_site = k;
			sampler_drain(t.pr[i].smp[k], &cb);
			sampler_stats(t.pr[i].smp[k], &st);
			lost += st.lost;
		}
	if (t.lat_start >= 0)
		pair_latency(&t, UINT64_MAX);
	double secs = (double)(now_ns() - t0) / 1e9;

	if (t.n > 1)
		qsort(t.v, t.n, sizeof(*t.v), cmp_cell);
	/* The cell index lives in the table: rebuild it after sorting. */
	fold_free(t.cells);
	t.cells = NULL;
	if (t.mount)
		cl.tree = cg_tree_scan(t.mount);
	if (json)
		print_json(&t, &cl, secs);
	else
		print_text(&t, &cl, secs);
	if (t.stacks && !json) {
		printf("Stacks at the probe hits (folded, probe first):\n");
		stacks_write(t.stacks, stdout, NULL);
	} else if (t.stacks) {
		/* JSON Lines stay JSON: one object per folded stack. */
		char *buf = NULL;
		size_t blen = 0;
		FILE *mf = open_memstream(&buf, &blen);

		if (mf) {
			stacks_write(t.stacks, mf, NULL);
			fclose(mf);
			for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
				char *space;

				nl = strchr(line, '\n');
				if (nl)
					*nl = '\0';
				space = strrchr(line, ' ');
				if (!space)
					continue;
				*space = '\0';
				fputs("{\"stack\":", stdout);
				json_write_string(stdout, line);
				printf(",\"count\":%s}\n", space + 1);
			}
			free(buf);
		}
	}
	if (t.cells_refused)
		fprintf(stderr, "%s: %" PRIu64 " hits not tabulated: more than %d (probe, cgroup, pid)"
				" cells\n", t.prog, t.cells_refused, MAX_CELLS);
	if (t.stacks) {
		struct stacks_stats ss;

		stacks_stats(t.stacks, &ss);
		if (ss.refused || ss.unwind_errors)
			fprintf(stderr, "%s: stacks: %" PRIu64 " dropped (distinct-stack cap), %" PRIu64
					" unwind errors\n", t.prog, ss.refused, ss.unwind_errors);
	}
	fprintf(stderr, "%s: %" PRIu64 " hits in %.2f s, %" PRIu64 " lost%s", t.prog, t.samples,
		secs, lost, lost ? " (the rings overflowed: hit counts are short by that many;"
				   " narrow the probe or the cgroups)" : "");
	if (t.lat_start >= 0)
		fprintf(stderr, ", %" PRIu64 " ends without a start", t.unpaired_end);
	if (t.value_errors)
		fprintf(stderr, ", %" PRIu64 " argument values unreadable", t.value_errors);
	{
		char refused[256];

		cmd_refusals_text(refused, sizeof(refused));
		if (refused[0] != '0')
			fprintf(stderr, ", container files refused: %s%s", refused,
				verbose ? "" : " (-v names them)");
	}
	fputc('\n', stderr);
	fflush(stdout);
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child = -1;
	}
	if (optind < argc && !ret) {
		ret = cmd_exit_status(child_status);
	}
out:
	if (sp.go_fd >= 0)
		spawn_abort(&sp);
	else if (child > 0)
		waitpid(child, NULL, 0);
	if (sfd >= 0)
		close(sfd);
	if (sigmask_set)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	for (size_t i = 0; i < t.npr; i++) {
		for (size_t k = 0; k < t.pr[i].nsmp; k++)
			sampler_close(t.pr[i].smp[k]);
		free(t.pr[i].smp);
		free(t.pr[i].site_args);
		probe_release(&t.pr[i].p);
	}
	if (trans_abs && rmdir(trans_abs) < 0 && errno != ENOENT)
		fprintf(stderr, "%s: cgroup %s left behind: %s\n", t.prog, trans_abs, strerror(errno));
	free(trans_abs);
	free(trans_rel);
	cmd_dirs_free(cgdirs, ncgdirs);
	free(groups);
	free(lat_a);
	free(lat_b);
	free(cpus);
	cg_tree_free(cl.tree);
	fold_free(t.cells);
	fold_free(t.starts);
	fold_free(t.pids);
	free(t.v);
	free(t.lev);
	stacks_free(t.stacks);
	refusals_stop();
	free(t.mount);
	return ret;
}
