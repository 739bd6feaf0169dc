// SPDX-License-Identifier: MIT
/*
 * cgperf-agent run: the continuous agent. Every push interval it builds one
 * batch (wire/wire.h) of what happened in that interval, per cgroup:
 * counter deltas, folded CPU stacks and probe hits/histograms, plus its own
 * figures; the batch is gzip'd and handed to the push module, which spools
 * it durably and sends it to every collector from its own thread, so a slow
 * or absent collector never stalls sampling.
 *
 * Two stacks engines (agent/stacks/stacks.h): one for the CPU samples, one for the
 * hits of probes with `stacks: true`. They are apart because a probe's
 * stack goes into its own Profile, whose event is the probe's label: each
 * hit is added with a prefix frame naming the probe by its index
 * ("probe#3"; not the label, which may hold the ';' that separates
 * frames), which tells, when the interval is folded, whose profile the
 * stack belongs to; the prefix is then dropped. The probe engine is fed the
 * side-band records (mmap, comm, fork, exit) of those probes' own rings,
 * as `trace --stacks` is; the CPU engine those of the sampling rings.
 * With sampling.per_cgroup false the CPU engine keys stacks without their
 * cgroup, and the merged stacks of every selected cgroup go into one
 * Profile of the root cgroup "/" (the host).
 *
 * Cgroups are followed with inotify: new ones get counters from when they
 * appear, removed ones are reported a last time. SIGHUP reloads the config
 * (everything is rebuilt from it; the spool and sequence numbers carry on),
 * SIGTERM/SIGINT flush a final partial interval and stop.
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

/* ---- identity ----------------------------------------------------------- */

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\r\n")] = '\0';
	fclose(f);
}

/* The agent id: kept in a file so a restarted agent is the same agent. */
static void agent_id(const char *file, char *out, size_t len)
{
	FILE *f;
	unsigned char rnd[16];

	read_line(file, out, len);
	if (out[0])
		return;
	f = fopen("/dev/urandom", "re");
	if (!f || fread(rnd, 1, sizeof(rnd), f) != sizeof(rnd))
		memset(rnd, 0, sizeof(rnd));
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof(rnd) && 2 * i + 2 < len; i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
	/* best effort: without a writable file the id changes per restart */
	char *dir = strdup(file), *slash = dir ? strrchr(dir, '/') : NULL;

	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
	free(dir);
	f = fopen(file, "we");
	if (f) {
		fprintf(f, "%s\n", out);
		fclose(f);
	}
}

/* ---- cgroups ------------------------------------------------------------ */

static bool wanted(const struct agent *a, const char *path, const struct cg_identity *id)
{
	if (!config_cgroup_wanted(a->cfg, path))
		return false;
	if (a->cfg->cgroups.containers_only && !id->container_id[0] && !id->pod_uid[0] &&
	    !id->container_name[0])
		return false;
	return true;
}

struct rcg *run_cg_find(struct agent *a, const char *path)
{
	for (size_t i = 0; i < a->ncg; i++)
		if (!a->cg[i].removed && !strcmp(a->cg[i].path, path))
			return &a->cg[i];
	return NULL;
}

static void cg_add(struct agent *a, const char *path)
{
	struct cg_identity id;
	struct rcg *c;
	size_t n;
	char *abs;

	cg_identity_parse(path, &id);
	if (!wanted(a, path, &id) || run_cg_find(a, path))
		return;
	if (a->ncg == a->capcg) {
		size_t nc = a->capcg ? a->capcg * 2 : 64;
		struct rcg *v = realloc(a->cg, nc * sizeof(*v));

		if (!v)
			return;
		a->cg = v;
		a->capcg = nc;
	}
	c = &a->cg[a->ncg];
	memset(c, 0, sizeof(*c));
	c->path = strdup(path);
	if (!c->path)
		return;
	c->ident = id;
	c->slot = -1;
	cg_path_id(a->mount, strcmp(path, "/") ? path : "", &c->id);
	if (a->ids) {
		uint64_t *slot = fold_slot(a->ids, &c->id, sizeof(c->id));

		if (slot)
			*slot = 1;
	}
	n = strlen(a->mount) + strlen(path) + 1;
	abs = malloc(n);
	if (abs && a->ctr) {
		snprintf(abs, n, "%s%s", a->mount, strcmp(path, "/") ? path : "");
		c->slot = counters_add(a->ctr, abs);
		if (c->slot < 0 && c->slot != -ENOENT)
			log_kv(LOG_WARN, "cannot count cgroup", "cgroup", path, "error",
			       strerror(-c->slot), NULL);
	}
	free(abs);
	a->ncg++;
}

static void on_watch(void *ctx, enum cg_watch_kind kind, const char *path)
{
	struct agent *a = ctx;
	struct rcg *c;

	if (kind == CG_WATCH_ADDED) {
		cg_add(a, path);
	} else if (kind == CG_WATCH_REMOVED) {
		c = run_cg_find(a, path);
		if (c)
			c->removed = true; /* reported once more, then dropped */
	} else {
		struct cg_tree *t = cg_tree_scan(a->mount);

		for (size_t i = 0; t && i < cg_tree_count(t); i++)
			cg_add(a, cg_tree_get(t, i)->path);
		cg_tree_free(t);
	}
}

struct rcg *run_cg_by_id(struct agent *a, uint64_t id)
{
	for (size_t i = 0; i < a->ncg; i++)
		if (a->cg[i].id == id)
			return &a->cg[i];
	return NULL;
}

/* ---- samples and probes ------------------------------------------------- */

/*
 * What the callbacks of one drain work on: CPU sampling rings feed the
 * agent's stacks engine, probe rings (with stacks) the probes' engine; each
 * kind counts its own losses.
 */
struct ring {
	struct agent *a;
	struct stacks *st;
	uint64_t *lost;
};

static void on_sample(void *ctx, const struct sample *s)
{
	struct agent *a = ((struct ring *)ctx)->a;

	a->samples++;
	/* Samples of cgroups the config leaves out are not even unwound. */
	if (a->ids) {
		uint64_t *slot = fold_slot(a->ids, &s->cgroup_id, sizeof(s->cgroup_id));

		if (!slot || !*slot)
			return;
	}
	stacks_add(a->st, s, NULL);
}

/* Side-band records keep the maps of the ring's stacks engine current. */
static void on_mmap(void *ctx, const struct sample_mmap *m)
{
	stacks_mmap(((struct ring *)ctx)->st, m);
}

static void on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec)
{
	stacks_comm(((struct ring *)ctx)->st, pid, tid, comm, exec);
}

static void on_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	stacks_fork(((struct ring *)ctx)->st, pid, ppid, tid);
}

static void on_exit_rec(void *ctx, uint32_t pid, uint32_t tid)
{
	stacks_exit(((struct ring *)ctx)->st, pid, tid);
}

static void on_lost(void *ctx, uint64_t n)
{
	*((struct ring *)ctx)->lost += n;
}

static struct pcell *pcell_get(struct agent *a, uint32_t probe, uint64_t cgroup)
{
	struct {
		uint32_t probe, pad;
		uint64_t cgroup;
	} k = {probe, 0, cgroup};
	uint64_t *slot = fold_slot(a->cells, &k, sizeof(k));

	if (!slot)
		return NULL;
	if (!*slot) {
		if (a->npc == a->cappc) {
			size_t nc = a->cappc ? a->cappc * 2 : 64;
			struct pcell *v = realloc(a->pc, nc * sizeof(*v));

			if (!v)
				return NULL;
			a->pc = v;
			a->cappc = nc;
		}
		memset(&a->pc[a->npc], 0, sizeof(a->pc[0]));
		a->pc[a->npc].probe = k.probe;
		a->pc[a->npc].cgroup = k.cgroup;
		*slot = ++a->npc;
	}
	return &a->pc[*slot - 1];
}

static void on_latency(void *ctx, uint32_t pair, uint64_t cgroup, uint32_t pid, uint64_t ns)
{
	struct pcell *c = pcell_get(ctx, pair, cgroup);

	(void)pid;
	if (c)
		hist_add(&c->lat, (int64_t)ns);
}

/* Hold a hit that starts or ends latencies: one endpoint per pair it is in. */
static void hold_latency(struct agent *a, const struct rprobe *rp, const struct sample *s)
{
	if (rp->lat_end >= 0)
		latency_add(a->lat, (uint32_t)a->cur, false, s->time, s->cgroup_id, s->pid, s->tid);
	for (size_t i = 0; rp->is_end && i < a->npr; i++)
		if (a->pr[i].lat_end == (int)a->cur)
			latency_add(a->lat, (uint32_t)i, true, s->time, s->cgroup_id, s->pid, s->tid);
}

static void on_probe(void *ctx, const struct sample *s)
{
	struct agent *a = ((struct ring *)ctx)->a;
	struct rprobe *rp = &a->pr[a->cur];
	struct pcell *c;

	hold_latency(a, rp, s);
	if (rp->hidden)
		return;
	/* As for CPU samples, hits in cgroups the config leaves out are not
	 * even unwound. */
	if (rp->stacks && a->pst) {
		uint64_t *slot = fold_slot(a->ids, &s->cgroup_id, sizeof(s->cgroup_id));

		if (slot && *slot)
			stacks_add(a->pst, s, rp->stack_prefix);
	}
	c = pcell_get(a, (uint32_t)a->cur, s->cgroup_id);
	if (!c)
		return;
	c->hits++;
	if (rp->hist_arg >= 0) {
		const struct probe_argdef *d = &rp->p.args[rp->hist_arg];
		const struct usdt_arg *ua = NULL;
		int64_t v;

		if (d->usdt_index >= 0 && a->cur_site < rp->nsmp)
			ua = &rp->site_args[a->cur_site][d->usdt_index];
		if (probe_arg_value(&rp->p, rp->hist_arg, ua, s, rp->regs_mask, &v) == 0)
			hist_add(&c->h, v);
	}
}

/* ---- set-up and tear-down ----------------------------------------------- */

static void push_log(void *arg, enum push_log_level level, const char *msg)
{
	static const enum log_level map[] = {LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG};

	log_kv(map[level], msg, NULL);
}

static void agent_stop(struct agent *a)
{
	sampler_close(a->smp);
	a->smp = NULL;
	for (size_t i = 0; i < a->npr; i++) {
		for (size_t k = 0; k < a->pr[i].nsmp; k++)
			sampler_close(a->pr[i].smp[k]);
		a->pr[i].nsmp = 0;
		probe_release(&a->pr[i].p);
	}
	a->npr = 0;
	stacks_free(a->st);
	a->st = NULL;
	stacks_free(a->pst);
	a->pst = NULL;
	cg_watch_free(a->watch);
	a->watch = NULL;
	counters_free(a->ctr);
	a->ctr = NULL;
	for (size_t i = 0; i < a->ncg; i++)
		free(a->cg[i].path);
	free(a->cg);
	a->cg = NULL;
	a->ncg = a->capcg = 0;
	for (size_t i = 0; i < a->nev; i++)
		ev_spec_release(&a->evs[i]);
	free(a->evs);
	a->evs = NULL;
	a->nev = 0;
	if (a->have_sev)
		ev_spec_release(&a->sev);
	a->have_sev = false;
	fold_free(a->cells);
	a->cells = NULL;
	latency_free(a->lat);
	a->lat = NULL;
	fold_free(a->ids);
	a->ids = NULL;
	free(a->pc);
	a->pc = NULL;
	a->npc = a->cappc = 0;
	push_free(a->push);
	a->push = NULL;
	selfmetrics_stop(a->metrics);
	a->metrics = NULL;
	fold_free(a->probe_totals);
	a->probe_totals = NULL;
}

static int agent_start(struct agent *a, const char *prog)
{
	const struct config *cfg = a->cfg;
	char *token = NULL;

	if (log_setup(cfg->log.format == CONFIG_LOG_JSON ? "json" : "logfmt",
		      (const char *[]){"debug", "info", "warn", "error"}[cfg->log.level]) < 0)
		return 1;
	/* counters */
	if (cfg->counters.enabled && cfg->counters.nevents) {
		a->evs = calloc(cfg->counters.nevents, sizeof(*a->evs));
		if (!a->evs)
			return 1;
		for (size_t i = 0; i < cfg->counters.nevents; i++) {
			int err = ev_parse(cfg->counters.events[i], ev_tracefs(), &a->evs[a->nev]);

			if (err) {
				fprintf(stderr, "%s: counters.events: unknown event '%s'\n", prog,
					cfg->counters.events[i]);
				return 2;
			}
			a->nev++;
		}
		a->ctr = counters_new(a->evs, a->nev, a->cpus, (size_t)a->ncpu);
		if (!a->ctr)
			return 1;
	}
	a->ids = fold_new();
	if (!a->ids)
		return 1;
	a->root_id = 0;
	cg_path_id(a->mount, "", &a->root_id); /* 0 (unknown) if it fails */
	/* cgroups: watch first, then scan, so none is missed */
	a->watch = cg_watch_new(a->mount);
	if (!a->watch)
		log_kv(LOG_WARN, "cannot watch cgroups; new ones will not be followed", "error",
		       strerror(errno), NULL);
	{
		struct cg_tree *t = cg_tree_scan(a->mount);

		for (size_t i = 0; t && i < cg_tree_count(t); i++)
			cg_add(a, cg_tree_get(t, i)->path);
		cg_tree_free(t);
	}
	if (a->ctr && counters_start(a->ctr) < 0)
		return 1;
	if (a->ctr)
		counters_read(a->ctr);
	/* sampling; the call graph settings serve the probes' stacks too */
	enum stacks_mode mode = cfg->sampling.call_graph == CONFIG_CALL_GRAPH_DWARF ? STACKS_DWARF
										    : STACKS_FP;

	if (cfg->sampling.enabled) {
		int err = ev_parse(cfg->sampling.event, ev_tracefs(), &a->sev);

		if (err) {
			fprintf(stderr, "%s: sampling.event: unknown event '%s'\n", prog,
				cfg->sampling.event);
			return 2;
		}
		a->have_sev = true;
		a->st = stacks_new(mode, cfg->sampling.per_cgroup, a->mount);
		/* perf's default depth, or less when the sysctl says so (more fails) */
		int sysmax = sampler_max_stack_default();
		uint32_t max_stack = sysmax > 0 && sysmax < 127 ? (uint32_t)sysmax : 127;

		if (a->st)
			stacks_set_max_stack(a->st, max_stack);
		struct sampler_opts so = {
			.event = &a->sev,
			.freq = cfg->sampling.frequency,
			.callchain = true,
			.user_stack = mode == STACKS_DWARF,
			.stack_bytes = cfg->sampling.stack_bytes,
			.regs_mask = stacks_regs_mask(mode),
			.max_stack = max_stack,
			.cpus = a->cpus,
			.ncpu = (size_t)a->ncpu,
			.mmap_pages = mode == STACKS_DWARF ? 256 : 64,
		};

		if (a->st && stacks_set_demangle(a->st, cfg->symbols.demangle) < 0) {
			stacks_free(a->st);
			a->st = NULL;
		}
		a->smp = a->st ? sampler_open(&so) : NULL;
		if (!a->smp) {
			if (errno == EACCES || errno == EPERM)
				cmd_explain_perf_permission(prog, errno);
			else
				fprintf(stderr, "%s: cannot sample: %s\n", prog, strerror(errno));
			return 1;
		}
		sampler_enable(a->smp);
	}
	/* probes: hits and histograms per cgroup */
	a->cells = fold_new();
	if (!a->cells)
		return 1;
	for (size_t i = 0; i < cfg->nprobes; i++) {
		struct rprobe *rp = &a->pr[a->npr];
		char err[2048];
		int rc = probe_resolve(cfg->probes[i].spec, NULL, 0, &rp->p, err, sizeof(err));

		if (rc) {
			fprintf(stderr, "%s: %s:%d: %s\n", prog, cfg->path ? cfg->path : "config",
				cfg->probes[i].line, err);
			return 2;
		}
		rp->hist_arg = -1;
		rp->lat_end = -1;
		rp->stacks = cfg->probes[i].stacks;
		snprintf(rp->stack_prefix, sizeof(rp->stack_prefix), "probe#%zu", a->npr);
		for (int k = 0; cfg->probes[i].hist && k < rp->p.nargs; k++)
			if (!strcmp(rp->p.args[k].name, cfg->probes[i].hist))
				rp->hist_arg = k;
		a->npr++;
		if (rp->stacks && !a->pst) {
			a->pst = stacks_new(mode, true, a->mount);
			if (a->pst && stacks_set_demangle(a->pst, cfg->symbols.demangle) < 0) {
				stacks_free(a->pst);
				a->pst = NULL;
				errno = ENOMEM;
			}
			if (!a->pst) {
				fprintf(stderr, "%s: probe stacks: %s\n", prog, strerror(errno));
				return 1;
			}
		}
	}
	/* Latency ends: a probe already listed, or one added only for that. */
	for (size_t i = 0; i < cfg->nprobes; i++) {
		const char *end = cfg->probes[i].latency_end;
		size_t j;

		if (!end)
			continue;
		for (j = 0; j < a->npr && strcmp(a->pr[j].p.spec, end); j++)
			;
		if (j == a->npr) {
			struct rprobe *rp = &a->pr[a->npr];
			char err[2048];

			if (a->npr >= CONFIG_MAX_PROBES) {
				fprintf(stderr, "%s: too many probes with their latency ends\n", prog);
				return 2;
			}
			if (probe_resolve(end, NULL, 0, &rp->p, err, sizeof(err)) < 0) {
				fprintf(stderr, "%s: %s:%d: latency_end: %s\n", prog,
					cfg->path ? cfg->path : "config", cfg->probes[i].line, err);
				return 2;
			}
			rp->hist_arg = -1;
			rp->lat_end = -1;
			rp->hidden = true;
			a->npr++;
		}
		a->pr[i].lat_end = (int)j;
		a->pr[j].is_end = true;
	}
	a->lat = latency_new(4000000);
	if (!a->lat)
		return 1;
	for (size_t i = 0; i < a->npr; i++) {
		struct rprobe *rp = &a->pr[i];
		struct usdt_list *ul = NULL;
		const struct usdt_probe *sites[RUN_MAX_SITES];
		size_t nsites = 0;

		/* Every site of a USDT probe, each with its own argument specs. */
		if (rp->p.kind == PROBE_USDT && strchr(rp->p.symbol, ':')) {
			char *colon = strchr(rp->p.symbol, ':');

			ul = usdt_read(rp->p.path);
			*colon = '\0';
			for (const struct usdt_probe *u = ul ? usdt_find_next(ul, NULL, rp->p.symbol,
									colon + 1)
							    : NULL;
			     u && nsites < RUN_MAX_SITES;
			     u = usdt_find_next(ul, u, rp->p.symbol, colon + 1))
				sites[nsites++] = u;
			*colon = ':';
		}
		rp->regs_mask = rp->p.regs_mask;
		/* The DWARF unwinder reads every general register, a superset of
		 * any argument's: the one mask serves both. */
		if (rp->stacks)
			rp->regs_mask |= stacks_regs_mask(mode);
		for (size_t k = 0; k < nsites; k++)
			for (int g = 0; g < rp->p.nargs; g++) {
				int n = rp->p.args[g].usdt_index;

				if (n >= 0 && n < sites[k]->nargs &&
				    (sites[k]->args[n].kind == USDT_ARG_REG ||
				     sites[k]->args[n].kind == USDT_ARG_MEM))
					rp->regs_mask |= 1ull << sites[k]->args[n].reg;
			}
		for (size_t k = 0; k < (nsites ? nsites : 1); k++) {
			struct probe site = rp->p;
			struct perf_event_attr attr;

			if (nsites) {
				site.offset = sites[k]->pc_off;
				site.ref_ctr = sites[k]->sema_off;
				memcpy(rp->site_args[k], sites[k]->args, sizeof(sites[k]->args));
			}
			if (probe_attr(&site, &attr) < 0) {
				usdt_free(ul);
				return 1;
			}
			/* With stacks, every hit copies the user stack in DWARF
			 * mode: rings of 2 MiB per CPU, drained as they fill
			 * (their fds are polled). */
			struct sampler_opts so = {
				.base_attr = &attr,
				.period = 1,
				.callchain = rp->stacks,
				.user_stack = rp->stacks && mode == STACKS_DWARF,
				.stack_bytes = cfg->sampling.stack_bytes,
				.regs_mask = rp->regs_mask,
				.max_stack = rp->stacks ? 127 : 0,
				.raw = rp->p.kind == PROBE_TRACEPOINT && rp->p.nargs > 0,
				.cpus = a->cpus,
				.ncpu = (size_t)a->ncpu,
				.mmap_pages = rp->stacks && mode == STACKS_DWARF ? 512 : 256,
				.clock_monotonic = true,
			};

			rp->smp[k] = sampler_open(&so);
			if (!rp->smp[k]) {
				fprintf(stderr, "%s: cannot place %s: %s\n", prog, rp->p.label,
					strerror(errno));
				usdt_free(ul);
				return 1;
			}
			rp->nsmp++;
			sampler_enable(rp->smp[k]);
		}
		usdt_free(ul);
	}
	/* the agent's own /metrics */
	a->probe_totals = fold_new();
	if (!a->probe_totals)
		return 1;
	if (cfg->metrics.listen) {
		char err[256];

		a->metrics = selfmetrics_start(cfg->metrics.listen, err, sizeof(err));
		if (!a->metrics) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return 1;
		}
		log_kv(LOG_INFO, "serving /metrics", "listen", cfg->metrics.listen, NULL);
	}
	/* push */
	if (cfg->push.ncollectors) {
		if (cfg->push.token_file) {
			char buf[4096];

			read_line(cfg->push.token_file, buf, sizeof(buf));
			if (!buf[0]) {
				fprintf(stderr, "%s: push.token_file %s is empty or unreadable\n", prog,
					cfg->push.token_file);
				return 2;
			}
			token = strdup(buf);
		}
		struct push_opts po = {
			.urls = (const char *const *)cfg->push.collectors,
			.n_urls = cfg->push.ncollectors,
			.token = token,
			.timeout_ms = (unsigned)cfg->push.timeout_ms,
			.idle_close_ms = (unsigned)cfg->push.idle_close_ms,
			.ca_file = cfg->push.tls.ca_file,
			.cert_file = cfg->push.tls.cert_file,
			.key_file = cfg->push.tls.key_file,
			.tls_no_verify = !cfg->push.tls.verify,
			.retry_initial_ms = (unsigned)cfg->push.retry.initial_ms,
			.retry_max_ms = (unsigned)cfg->push.retry.max_ms,
			.spool_dir = cfg->push.spool.dir,
			.spool_max_bytes = cfg->push.spool.max_bytes,
			.user_agent = "cgperf-agent/" CGPERF_VERSION,
			.log = push_log,
		};

		a->push = push_new(&po);
		free(token);
		if (!a->push) {
			fprintf(stderr, "%s: cannot start pushing (spool %s): %s\n", prog,
				cfg->push.spool.dir, strerror(errno));
			return 1;
		}
	}
	return 0;
}

/* A refused container file (agent/symbols/refusals.h), rate-limited there; the
 * log escapes the path. */
static void run_refusal_notice(void *ctx, pid_t pid, const char *path, const char *reason)
{
	char p[24];

	(void)ctx;
	snprintf(p, sizeof(p), "%d", (int)pid);
	log_kv(LOG_INFO, "container file refused", "pid", p, "path", path, "reason", reason, NULL);
}

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"print-config", no_argument, NULL, 'P'},
		{"duration", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *prog = "cgperf-agent run", *path = NULL;
	struct agent a = {0};
	char err[2048];
	bool print = false;
	double duration = 0;
	int opt, ret = 0, sfd = -1;
	sigset_t mask, oldmask;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:d:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': path = optarg; break;
		case 'P': print = true; break;
		case 'd': {
			char *end;

			errno = 0;
			duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(duration > 0)) {
				fprintf(stderr, "%s: --duration must be a positive number, not '%s'\n",
					prog, optarg);
				return 2;
			}
			break;
		}
		case 'h':
			puts("usage: cgperf-agent run [--config FILE] [--print-config] [--duration S]\n"
			     "Continuous mode: counters, stacks and probes per cgroup, pushed to the\n"
			     "collectors every push.interval (see docs/config.md).");
			return 0;
		default: return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		return 2;
	}
	if (config_load(path, &a.cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 2;
	}
	if (print) {
		config_dump(a.cfg, stdout);
		config_free(a.cfg);
		return 0;
	}
	a.mount = cmd_perf_cgroup_mount(prog);
	a.ncpu = cpumap_online(&a.cpus);
	if (!a.mount || a.ncpu < 0) {
		ret = 1;
		goto out;
	}
	if (a.cfg->host.name && a.cfg->host.name[0])
		snprintf(a.host, sizeof(a.host), "%s", a.cfg->host.name);
	else
		gethostname(a.host, sizeof(a.host) - 1);
	read_line("/etc/machine-id", a.machine_id, sizeof(a.machine_id));
	agent_id(a.cfg->host.agent_id_file, a.agent_id, sizeof(a.agent_id));
	cmd_raise_nofile();
	/* Block before any thread exists (the push senders inherit the mask), so
	 * the signals only ever arrive through the signalfd. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	/* Counted for the agent's life, across reloads. */
	if (refusals_start(run_refusal_notice, NULL) < 0) {
		ret = 1;
		goto out;
	}
	ret = agent_start(&a, prog);
	if (ret)
		goto out;
	log_kv(LOG_INFO, "started", "host", a.host, "agent_id", a.agent_id, "config",
	       a.cfg->path ? a.cfg->path : "(defaults)", NULL);

	uint64_t period = a.cfg->push.interval_ms * 1000000ull, t0 = clock_mono_ns();
	uint64_t next = t0 + period, end = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : 0;
	uint64_t start_rt = clock_real_ns();
	bool stop = false;

	while (!stop) {
		struct pollfd pfd[2 + 1 + CONFIG_MAX_PROBES * 64];
		size_t np = 0;
		int fds[64];

		pfd[np++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		pfd[np++] = (struct pollfd){.fd = a.watch ? cg_watch_fd(a.watch) : -1,
					    .events = POLLIN};
		if (a.smp) {
			size_t n = sampler_fds(a.smp, fds, 64);

			for (size_t i = 0; i < n && i < 64; i++)
				pfd[np++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
		}
		/* Rings of probes with stacks fill fast (a stack copy per hit):
		 * drained when a quarter full, not only on the beat. */
		for (size_t i = 0; i < a.npr; i++)
			for (size_t k = 0; a.pr[i].stacks && k < a.pr[i].nsmp; k++) {
				size_t n = sampler_fds(a.pr[i].smp[k], fds, 64);

				for (size_t j = 0; j < n && j < 64 && np < sizeof(pfd) / sizeof(pfd[0]);
				     j++)
					pfd[np++] = (struct pollfd){.fd = fds[j], .events = POLLIN};
			}
		uint64_t now = clock_mono_ns(), wake = end && end < next ? end : next;
		int timeout = wake > now ? (int)((wake - now) / 1000000) + 1 : 0;

		if (timeout > 200)
			timeout = 200; /* probe rings are drained on this beat too */
		poll(pfd, np, timeout);
		bool reload = false;

		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP)
					reload = true;
				else
					stop = true;
			}
		}
		if (a.watch && (pfd[1].revents & POLLIN))
			cg_watch_read(a.watch, on_watch, &a);
		struct ring cpu = {&a, a.st, &a.lost}, probes = {&a, a.pst, &a.probe_lost};
		struct sampler_cb cb = {.ctx = &cpu, .sample = on_sample, .mmap = on_mmap,
					.comm = on_comm, .fork = on_fork, .exit = on_exit_rec,
					.lost = on_lost};
		struct sampler_cb pcb = {.ctx = &probes, .sample = on_probe, .lost = on_lost};
		struct sampler_cb scb = {.ctx = &probes, .sample = on_probe, .mmap = on_mmap,
					 .comm = on_comm, .fork = on_fork, .exit = on_exit_rec,
					 .lost = on_lost};
		uint64_t round = clock_mono_ns();

		if (a.smp)
			sampler_drain(a.smp, &cb);
		for (size_t i = 0; i < a.npr; i++)
			for (size_t k = 0; k < a.pr[i].nsmp; k++) {
				a.cur = i;
				a.cur_site = k;
				sampler_drain(a.pr[i].smp[k],
					      a.pr[i].stacks && a.pst ? &scb : &pcb);
			}
		if (a.lat)
			latency_pair(a.lat, round, on_latency, &a);
		now = clock_mono_ns();
		if (end && now >= end)
			stop = true;
		if (now >= next || stop || reload) {
			uint64_t seq = 0, end_rt = clock_real_ns();

			if (a.push && push_next_seq(a.push, &seq) < 0)
				log_kv(LOG_ERROR, "no sequence number", NULL);
			run_batch(&a, seq, start_rt, end_rt);
			a.batches++;
			run_publish_metrics(&a);
			start_rt = end_rt;
			while (next <= now)
				next += period;
		}
		if (reload) {
			struct config *ncfg = NULL;

			if (config_load(a.cfg->path, &ncfg, err, sizeof(err)) < 0) {
				log_kv(LOG_ERROR, "reload failed; keeping the running config", "error",
				       err, NULL);
				continue;
			}
			/* What is not sent yet stays spooled for the new push. */
			agent_stop(&a);
			config_free(a.cfg);
			a.cfg = ncfg;
			ret = agent_start(&a, prog);
			if (ret)
				break;
			period = a.cfg->push.interval_ms * 1000000ull; /* it may have changed */
			next = clock_mono_ns() + period;
			log_kv(LOG_INFO, "config reloaded", NULL);
		}
	}
	if (a.push && push_flush(a.push, (unsigned)(a.cfg->push.timeout_ms ? a.cfg->push.timeout_ms
									 : 5000)) < 0)
		log_kv(LOG_WARN, "stopping with batches still spooled; they are sent at the next start",
		       NULL);
	log_kv(LOG_INFO, "stopped", NULL);
out:
	if (sfd >= 0)
		close(sfd);
	agent_stop(&a); /* joins the push threads before the mask is restored */
	refusals_stop();
	if (sfd >= 0)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	config_free(a.cfg);
	free(a.cpus);
	free(a.mount);
	return ret;
}
