// SPDX-License-Identifier: MIT
/*
 * Building `run` from its config and taking it down again (at exit and on
 * every SIGHUP reload): log format, counters, the cgroups and their watch,
 * the sampler, the probes (every USDT site, latency ends), the agent's own
 * /metrics and the push module. Failures go to the log, in its format.
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

/* ---- set-up and tear-down ----------------------------------------------- */

static void push_log(void *arg, enum push_log_level level, const char *msg)
{
	static const enum log_level map[] = {LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG};

	log_kv(map[level], msg, NULL);
}

void run_agent_stop(struct agent *a)
{
	run_offcpu_stop(a);
	sampler_close(a->smp);
	for (size_t i = 0; i < a->npr; i++) {
		for (size_t k = 0; k < a->pr[i].nsmp; k++)
			sampler_close(a->pr[i].smp[k]);
		probe_release(&a->pr[i].p);
	}
	stacks_free(a->st);
	stacks_free(a->pst);
	cg_watch_free(a->watch);
	counters_free(a->ctr);
	for (size_t i = 0; i < a->ncg; i++)
		run_cg_release(&a->cg[i]);
	run_identity_stop(a);
	free(a->cg);
	for (size_t i = 0; i < a->nev; i++)
		ev_spec_release(&a->evs[i]);
	free(a->evs);
	if (a->have_sev)
		ev_spec_release(&a->sev);
	fold_free(a->cells);
	latency_free(a->lat);
	fold_free(a->ids);
	free(a->pc);
	push_free(a->push);
	selfmetrics_stop(a->metrics);
	fold_free(a->probe_totals);
	/* back to the state before the first start */
	memset(&a->built, 0, sizeof(a->built));
}

/*
 * The set-up steps of agent_start(). Each returns 0, 1 (a runtime failure)
 * or 2 (the config asks for what cannot be: an unknown event, a probe that
 * does not resolve); what went wrong goes to the log, in its format.
 */

static const char *cfg_name(const struct config *cfg)
{
	return cfg->path ? cfg->path : "config";
}

/* A config line's failure: "FILE:LINE: what" under @msg. */
static void log_at_line(const struct config *cfg, int line, const char *msg, const char *err)
{
	char where[64];

	snprintf(where, sizeof(where), "%d", line);
	log_kv(LOG_ERROR, msg, "config", cfg_name(cfg), "line", where, "error", err, NULL);
}

static int start_counters(struct agent *a)
{
	const struct config *cfg = a->cfg;

	if (!cfg->counters.enabled || !cfg->counters.nevents)
		return 0;
	a->evs = calloc(cfg->counters.nevents, sizeof(*a->evs));
	if (!a->evs)
		return 1;
	for (size_t i = 0; i < cfg->counters.nevents; i++) {
		if (ev_parse(cfg->counters.events[i], ev_tracefs(), &a->evs[a->nev])) {
			log_kv(LOG_ERROR, "counters.events: unknown event", "event",
			       cfg->counters.events[i], NULL);
			return 2;
		}
		a->nev++;
	}
	a->ctr = counters_new(a->evs, a->nev, a->cpus, (size_t)a->ncpu);
	return a->ctr ? 0 : 1;
}

/* Every cgroup of the hierarchy: watch first, then scan, so none is missed. */
static int start_cgroups(struct agent *a)
{
	struct cg_tree *t;

	a->ids = fold_new();
	if (!a->ids)
		return 1;
	a->root_id = 0;
	cg_path_id(a->mount, "", &a->root_id); /* 0 (unknown) if it fails */
	run_identity_start(a);
	a->watch = cg_watch_new(a->mount);
	if (!a->watch)
		log_kv(LOG_WARN, "cannot watch cgroups; new ones will not be followed", "error",
		       strerror(errno), NULL);
	t = cg_tree_scan(a->mount);
	for (size_t i = 0; t && i < cg_tree_count(t); i++)
		run_cg_add(a, cg_tree_get(t, i)->path);
	cg_tree_free(t);
	if (a->ctr && counters_start(a->ctr) < 0)
		return 1;
	if (a->ctr)
		counters_read(a->ctr);
	return 0;
}

static void log_perf_error(const char *msg, int err)
{
	if (err == EACCES || err == EPERM)
		log_kv(LOG_ERROR, msg, "error", strerror(err), "hint",
		       "system-wide monitoring needs CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8) "
		       "or kernel.perf_event_paranoid <= 0",
		       NULL);
	else
		log_kv(LOG_ERROR, msg, "error", strerror(err), NULL);
}

void run_stack_opts(const struct agent *a, enum stacks_mode mode, uint32_t max_stack,
		    struct sampler_opts *so)
{
	memset(so, 0, sizeof(*so));
	so->callchain = true;
	so->user_stack = mode == STACKS_DWARF;
	so->stack_bytes = a->cfg->sampling.stack_bytes;
	so->regs_mask = stacks_regs_mask(mode);
	so->max_stack = max_stack;
	so->cpus = a->cpus;
	so->ncpu = (size_t)a->ncpu;
}

static int start_sampling(struct agent *a, enum stacks_mode mode)
{
	const struct config *cfg = a->cfg;
	/* perf's default depth, or less when the sysctl says so (more fails) */
	int sysmax = sampler_max_stack_default();
	uint32_t max_stack = sysmax > 0 && sysmax < 127 ? (uint32_t)sysmax : 127;
	struct sampler_opts so;

	run_stack_opts(a, mode, max_stack, &so);
	so.event = &a->sev;
	so.freq = cfg->sampling.frequency;
	so.mmap_pages = mode == STACKS_DWARF ? 256 : 64;

	int ret = run_offcpu_start(a, mode, max_stack);

	if (ret || !cfg->sampling.enabled)
		return ret;
	if (ev_parse(cfg->sampling.event, ev_tracefs(), &a->sev)) {
		log_kv(LOG_ERROR, "sampling.event: unknown event", "event", cfg->sampling.event,
		       NULL);
		return 2;
	}
	a->have_sev = true;
	a->st = stacks_new(mode, cfg->sampling.per_cgroup, a->mount);
	if (a->st)
		stacks_set_max_stack(a->st, max_stack);
	if (a->st && stacks_set_demangle(a->st, cfg->symbols.demangle) < 0) {
		stacks_free(a->st);
		a->st = NULL;
	}
	a->smp = a->st ? sampler_open(&so) : NULL;
	if (!a->smp) {
		log_perf_error("cannot sample", errno);
		return 1;
	}
	sampler_enable(a->smp);
	return 0;
}

static void set_hist_arg(struct rprobe *rp, const char *hist)
{
	rp->hist_arg = -1;
	for (int k = 0; hist && k < rp->p.nargs; k++)
		if (!strcmp(rp->p.args[k].name, hist))
			rp->hist_arg = k;
}

/* The config's probes, resolved (binaries looked for among the processes of
 * the followed cgroups first, @pids); the probes' stacks engine if one wants it. */
static int resolve_probes_among(struct agent *a, enum stacks_mode mode, const int *pids,
				size_t npids)
{
	const struct config *cfg = a->cfg;

	a->cells = fold_new();
	if (!a->cells)
		return 1;
	for (size_t i = 0; i < cfg->nprobes; i++) {
		struct rprobe *rp = &a->pr[a->npr];
		char err[2048];
		int rc = probe_resolve(cfg->probes[i].spec, pids, npids, &rp->p, err, sizeof(err));

		/* With cgroups chosen by identity, the binary may come with a
		 * container not started yet: a latency-free probe waits for it.
		 * (A kernel function comes with no container: k: probes do not wait.) */
		if (rc == -ENOENT && run_identity_selective(a) && !cfg->probes[i].latency_end &&
		    strncmp(cfg->probes[i].spec, "k:", 2) != 0) {
			log_at_line(cfg, cfg->probes[i].line, "probe waits for its binary", err);
			rp->waiting = true;
		} else if (rc) {
			log_at_line(cfg, cfg->probes[i].line, "bad probe", err);
			return 2;
		}
		rp->cfg_index = i;
		rp->lat_end = -1;
		rp->stacks = cfg->probes[i].stacks;
		snprintf(rp->stack_prefix, sizeof(rp->stack_prefix), "probe#%zu", a->npr);
		set_hist_arg(rp, cfg->probes[i].hist);
		a->npr++;
		if (!rp->stacks || a->pst)
			continue;
		a->pst = stacks_new(mode, true, a->mount);
		if (a->pst && stacks_set_demangle(a->pst, cfg->symbols.demangle) < 0) {
			stacks_free(a->pst);
			a->pst = NULL;
			errno = ENOMEM;
		}
		if (!a->pst) {
			log_kv(LOG_ERROR, "probe stacks", "error", strerror(errno), NULL);
			return 1;
		}
	}
	return 0;
}

/* latency_key: the argument indexes of the fields in both probes (the
 * config checked that both specs name them). */
static void set_latency_key(struct rprobe *start, const struct rprobe *end,
			    const struct config_probe *cp)
{
	start->nkey = cp->nlatency_key;
	for (size_t k = 0; k < cp->nlatency_key; k++)
		for (int e = 0; e < 2; e++) {
			const struct probe *p = e ? &end->p : &start->p;

			start->key_arg[e][k] = -1;
			for (int g = 0; g < p->nargs; g++)
				if (!strcmp(p->args[g].name, cp->latency_key[k]))
					start->key_arg[e][k] = g;
		}
}

/* Latency ends: a probe already listed, or one added only for that. */
static int resolve_latency_ends(struct agent *a, const int *pids, size_t npids)
{
	const struct config *cfg = a->cfg;

	for (size_t i = 0; i < cfg->nprobes; i++) {
		const char *end = cfg->probes[i].latency_end;
		size_t j = 0;

		if (!end)
			continue;
		/* a probe still waiting for its binary has no spec to compare */
		while (j < a->npr && (a->pr[j].waiting || strcmp(a->pr[j].p.spec, end)))
			j++;
		if (j == a->npr) {
			struct rprobe *rp = &a->pr[a->npr];
			char err[2048];

			if (a->npr >= CONFIG_MAX_PROBES) {
				log_kv(LOG_ERROR, "too many probes with their latency ends", NULL);
				return 2;
			}
			if (probe_resolve(end, pids, npids, &rp->p, err, sizeof(err)) < 0) {
				log_at_line(cfg, cfg->probes[i].line, "bad latency_end", err);
				return 2;
			}
			rp->hist_arg = -1;
			rp->lat_end = -1;
			rp->hidden = true;
			a->npr++;
		}
		a->pr[i].lat_end = (int)j;
		a->pr[j].is_end = true;
		set_latency_key(&a->pr[i], &a->pr[j], &cfg->probes[i]);
	}
	a->lat = latency_new(4000000);
	return a->lat ? 0 : 1;
}

static int resolve_probes(struct agent *a, enum stacks_mode mode)
{
	int *pids = NULL, ret;
	size_t npids = 0;

	run_identity_pids(a, &pids, &npids);
	ret = resolve_probes_among(a, mode, pids, npids);
	if (!ret)
		ret = resolve_latency_ends(a, pids, npids);
	free(pids);
	return ret;
}

/* Every site of a USDT probe (each with its own argument specs); 0 sites
 * for other probes. The list, which the sites point into, in *@ul. */
static size_t usdt_sites(struct rprobe *rp, struct usdt_list **ul,
			 const struct usdt_probe *sites[RUN_MAX_SITES])
{
	char *colon = rp->p.kind == PROBE_USDT ? strchr(rp->p.symbol, ':') : NULL;
	size_t nsites = 0;

	*ul = NULL;
	if (!colon)
		return 0;
	*ul = usdt_read(rp->p.path);
	*colon = '\0';
	for (const struct usdt_probe *u = *ul ? usdt_find_next(*ul, NULL, rp->p.symbol, colon + 1)
					      : NULL;
	     u && nsites < RUN_MAX_SITES; u = usdt_find_next(*ul, u, rp->p.symbol, colon + 1))
		sites[nsites++] = u;
	*colon = ':';
	return nsites;
}

/* Place probe @rp: one sampler per USDT site (or one), enabled. 0 or 1. */
static int place_probe(struct agent *a, struct rprobe *rp, enum stacks_mode mode)
{
	const struct usdt_probe *sites[RUN_MAX_SITES];
	struct usdt_list *ul;
	size_t nsites = usdt_sites(rp, &ul, sites);
	int ret = 0;

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
	for (size_t k = 0; k < (nsites ? nsites : 1) && !ret; k++) {
		struct probe site = rp->p;
		struct perf_event_attr attr;

		if (nsites) {
			site.offset = sites[k]->pc_off;
			site.ref_ctr = sites[k]->sema_off;
			memcpy(rp->site_args[k], sites[k]->args, sizeof(sites[k]->args));
		}
		if (probe_attr(&site, &attr) < 0) {
			ret = 1;
			break;
		}
		/* With stacks, every hit copies the user stack in DWARF
		 * mode: rings of 2 MiB per CPU, drained as they fill
		 * (their fds are polled). */
		struct sampler_opts so = {
			.base_attr = &attr,
			.period = 1,
			.callchain = rp->stacks,
			.user_stack = rp->stacks && mode == STACKS_DWARF,
			.stack_bytes = a->cfg->sampling.stack_bytes,
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
			log_kv(LOG_ERROR, "cannot place probe", "probe", rp->p.label, "error",
			       strerror(errno), NULL);
			ret = 1;
			break;
		}
		rp->nsmp++;
		sampler_enable(rp->smp[k]);
	}
	usdt_free(ul);
	return ret;
}

/* The agent's own /metrics. */
static int start_metrics(struct agent *a)
{
	char err[256];

	a->probe_totals = fold_new();
	if (!a->probe_totals)
		return 1;
	if (!a->cfg->metrics.listen)
		return 0;
	a->metrics = selfmetrics_start(a->cfg->metrics.listen, err, sizeof(err));
	if (!a->metrics) {
		log_kv(LOG_ERROR, "cannot serve /metrics", "error", err, NULL);
		return 1;
	}
	log_kv(LOG_INFO, "serving /metrics", "listen", a->cfg->metrics.listen, NULL);
	return 0;
}

static int start_push(struct agent *a)
{
	const struct config *cfg = a->cfg;
	char *token = NULL;

	if (!cfg->push.ncollectors)
		return 0;
	if (cfg->push.token_file) {
		char buf[4096];

		run_read_line(cfg->push.token_file, buf, sizeof(buf));
		if (!buf[0]) {
			log_kv(LOG_ERROR, "push.token_file is empty or unreadable", "file",
			       cfg->push.token_file, NULL);
			return 2;
		}
		token = strdup(buf);
	}
	struct push_opts po = {
		.urls = (const char *const *)cfg->push.collectors,
		.n_urls = cfg->push.ncollectors,
		.mode = cfg->push.mode == CONFIG_PUSH_FAILOVER ? PUSH_FAILOVER : PUSH_FANOUT,
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
		log_kv(LOG_ERROR, "cannot start pushing", "spool", cfg->push.spool.dir, "error",
		       strerror(errno), NULL);
		return 1;
	}
	return 0;
}

int run_log_setup(const struct config *cfg)
{
	return log_setup(cfg->log.format == CONFIG_LOG_JSON ? "json" : "logfmt",
			 (const char *[]){"debug", "info", "warn", "error"}[cfg->log.level]);
}

/* Build everything from a->cfg: log, counters, cgroups, sampling, probes,
 * /metrics, push. 0, 1 or 2; what is half built, run_agent_stop() frees. */
int run_agent_start(struct agent *a)
{
	const struct config *cfg = a->cfg;
	/* the call graph settings serve the probes' stacks too */
	enum stacks_mode mode = cfg->sampling.call_graph == CONFIG_CALL_GRAPH_DWARF ? STACKS_DWARF
										    : STACKS_FP;
	int ret;

	if (run_log_setup(cfg) < 0)
		return 1;
	if ((ret = start_counters(a)) || (ret = start_cgroups(a)) ||
	    (ret = start_sampling(a, mode)) || (ret = resolve_probes(a, mode)))
		return ret;
	for (size_t i = 0; i < a->npr; i++)
		if (!a->pr[i].waiting && (ret = place_probe(a, &a->pr[i], mode)))
			return ret;
	if ((ret = start_metrics(a)))
		return ret;
	return start_push(a);
}


void run_probes_retry(struct agent *a)
{
	const struct config *cfg = a->cfg;
	enum stacks_mode mode = cfg->sampling.call_graph == CONFIG_CALL_GRAPH_DWARF ? STACKS_DWARF
										    : STACKS_FP;
	int *pids = NULL;
	size_t npids = 0;
	bool any = false;

	for (size_t i = 0; i < a->npr; i++)
		any |= a->pr[i].waiting;
	if (!any)
		return;
	run_identity_pids(a, &pids, &npids);
	for (size_t i = 0; i < a->npr; i++) {
		struct rprobe *rp = &a->pr[i];
		const struct config_probe *cp = &cfg->probes[rp->cfg_index];
		char err[2048];

		if (!rp->waiting || probe_resolve(cp->spec, pids, npids, &rp->p, err, sizeof(err)))
			continue;
		rp->waiting = false;
		set_hist_arg(rp, cp->hist);
		if (!place_probe(a, rp, mode))
			log_kv(LOG_INFO, "probe placed", "probe", rp->p.label, "binary", rp->p.path, NULL);
	}
	free(pids);
}
