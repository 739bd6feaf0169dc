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
#include "lib/grow.h"

#define RUN_PROG "cgperf-agent run"

/* ---- identity ----------------------------------------------------------- */

void run_read_line(const char *path, char *buf, size_t len)
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

	run_read_line(file, out, len);
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

static bool wanted(struct agent *a, const char *path, const struct cg_identity *id)
{
	if (a->cfg->cgroups.containers_only && !id->container_id[0] && !id->pod_uid[0] &&
	    !id->container_name[0])
		return false;
	return run_identity_wanted(a, path, id) == 1;
}

void run_cg_release(struct rcg *c)
{
	free(c->path);
	cg_rtinfo_release(&c->rt);
}

struct rcg *run_cg_find(struct agent *a, const char *path)
{
	for (size_t i = 0; i < a->ncg; i++)
		if (!a->cg[i].removed && !strcmp(a->cg[i].path, path))
			return &a->cg[i];
	return NULL;
}

void run_cg_add(struct agent *a, const char *path)
{
	struct cg_identity id;
	struct rcg *c;
	size_t n;
	char *abs;

	cg_identity_parse(path, &id);
	if (!wanted(a, path, &id) || run_cg_find(a, path))
		return;
	if (GROW_ARRAY(a->cg, a->ncg, a->capcg, 64) < 0)
		return;
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
	if (a->rt)
		cg_rtcache_want(a->rt, path);
	run_offcpu_cg_add(a, path);
}

static void on_watch(void *ctx, enum cg_watch_kind kind, const char *path)
{
	struct agent *a = ctx;
	struct rcg *c;

	if (kind == CG_WATCH_ADDED) {
		run_cg_add(a, path);
	} else if (kind == CG_WATCH_REMOVED) {
		c = run_cg_find(a, path);
		if (c)
			c->removed = true; /* reported once more, then dropped */
		run_offcpu_cg_gone(a, path);
		cg_rtcache_forget(a->rt, path);
		run_identity_gone(a, path);
	} else {
		struct cg_tree *t = cg_tree_scan(a->mount);

		for (size_t i = 0; t && i < cg_tree_count(t); i++)
			run_cg_add(a, cg_tree_get(t, i)->path);
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

static void on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		    uint64_t time)
{
	stacks_comm(((struct ring *)ctx)->st, pid, tid, comm, exec, time);
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
	void *v = a->pc;
	bool fresh;
	struct pcell *c = latency_cell(a->cells, &k, sizeof(k), &v, &a->npc, &a->cappc, sizeof(*c), &fresh);

	a->pc = v;
	if (fresh) {
		c->probe = k.probe;
		c->cgroup = k.cgroup;
	}
	return c;
}

static void on_latency(void *ctx, uint32_t pair, uint64_t cgroup, uint32_t pid, uint64_t end,
		       uint64_t ns)
{
	struct pcell *c = pcell_get(ctx, pair, cgroup);

	(void)pid;
	(void)end;
	if (c)
		hist_add(&c->lat, (int64_t)ns);
}

/* Hold endpoint @end of pair @pair (its start probe): by thread, or by the
 * values of its latency_key arguments read from @s (hit of probe @rp). */
static void hold_endpoint(struct agent *a, size_t pair, const struct rprobe *rp, bool end,
			  const struct sample *s)
{
	const struct rprobe *sp = &a->pr[pair];
	uint64_t key[CONFIG_MAX_LATENCY_KEY];

	if (!sp->nkey) {
		latency_add(a->lat, (uint32_t)pair, end, s->time, s->cgroup_id, s->pid, s->tid);
		return;
	}
	for (size_t k = 0; k < sp->nkey; k++) {
		int64_t v;

		if (sp->key_arg[end][k] < 0 ||
		    probe_arg_value(&rp->p, sp->key_arg[end][k], NULL, s, rp->regs_mask, &v) < 0)
			return;
		key[k] = (uint64_t)v;
	}
	latency_add_key(a->lat, (uint32_t)pair, end, s->time, s->cgroup_id, s->pid, key, sp->nkey);
}

/* Hold a hit that starts or ends latencies: one endpoint per pair it is in. */
static void hold_latency(struct agent *a, const struct rprobe *rp, const struct sample *s)
{
	if (rp->lat_end >= 0)
		hold_endpoint(a, a->cur, rp, false, s);
	for (size_t i = 0; rp->is_end && i < a->npr; i++)
		if (a->pr[i].lat_end == (int)a->cur)
			hold_endpoint(a, i, rp, true, s);
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

/* A refused container file (agent/symbols/refusals.h), rate-limited there; the
 * log escapes the path. */
static void run_refusal_notice(void *ctx, pid_t pid, const char *path, const char *reason)
{
	char p[24];

	(void)ctx;
	snprintf(p, sizeof(p), "%d", (int)pid);
	log_kv(LOG_INFO, "container file refused", "pid", p, "path", path, "reason", reason, NULL);
}

/* The options are said by the synopsis and docs/config.md, not listed. */
static const struct cmd_spec run_spec = {
	.name = "run",
	.synopsis = "[--config FILE] [--print-config] [--duration S]\n"
		    "[--push-mode fanout|failover]\n",
	.notes = "Continuous mode: counters, stacks and probes per cgroup, pushed to the\n"
		 "collectors every push.interval (see docs/config.md).\n",
	.opts = {
		{"config", 'c', true, "FILE", NULL},
		{"push-mode", 'M', false, "MODE", NULL},
		{"print-config", 'P', false, NULL, NULL},
		{"duration", 'd', true, "S", NULL},
	},
};

/* The options: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, const char **path, bool *print, double *duration,
		      int *push_mode)
{
	struct cmd_getopt g;
	int opt;

	cmd_getopt_init(&g, &run_spec);
	while ((opt = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
		switch (opt) {
		case 'c': *path = optarg; break;
		case 'P': *print = true; break;
		case 'M':
			*push_mode = -1;
			for (int i = 0; config_push_mode_names[i]; i++)
				if (!strcmp(optarg, config_push_mode_names[i]))
					*push_mode = i;
			if (*push_mode < 0) {
				fprintf(stderr, "%s: --push-mode must be fanout or failover, not '%s'\n",
					RUN_PROG, optarg);
				return 2;
			}
			break;
		case 'd':
			if (cmd_parse_seconds(RUN_PROG, "--duration", optarg, duration))
				return 2;
			break;
		case 'h': cmd_usage(stdout, &run_spec); return 0;
		default: return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", RUN_PROG, argv[optind]);
		return 2;
	}
	return -1;
}

#define RUN_MAX_POLL (2 + 64 + 64 + CONFIG_MAX_PROBES * 64)

/* What the loop polls: the signalfd, the cgroup watch, the sampling rings,
 * and the rings of probes with stacks, which fill fast (a stack copy per
 * hit) and are drained when a quarter full, not only on the beat. */
static size_t poll_set(struct agent *a, int sfd, struct pollfd *pfd)
{
	size_t np = 0;
	int fds[64];

	pfd[np++] = (struct pollfd){.fd = sfd, .events = POLLIN};
	pfd[np++] = (struct pollfd){.fd = a->watch ? cg_watch_fd(a->watch) : -1, .events = POLLIN};
	if (a->smp) {
		size_t n = sampler_fds(a->smp, fds, 64);

		for (size_t i = 0; i < n && i < 64; i++)
			pfd[np++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
	}
	for (size_t i = 0, n = run_offcpu_fds(a, fds, 64); i < n && i < 64; i++)
		pfd[np++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
	for (size_t i = 0; i < a->npr; i++)
		for (size_t k = 0; a->pr[i].stacks && k < a->pr[i].nsmp; k++) {
			size_t n = sampler_fds(a->pr[i].smp[k], fds, 64);

			for (size_t j = 0; j < n && j < 64 && np < RUN_MAX_POLL; j++)
				pfd[np++] = (struct pollfd){.fd = fds[j], .events = POLLIN};
		}
	return np;
}

/* Drain every ring, then pair the latencies up to the drain's start. */
static void drain_rings(struct agent *a)
{
	struct ring cpu = {a, a->st, &a->lost}, probes = {a, a->pst, &a->probe_lost};
	struct sampler_cb cb = {.ctx = &cpu, .sample = on_sample, .mmap = on_mmap,
				.comm = on_comm, .fork = on_fork, .exit = on_exit_rec,
				.lost = on_lost};
	struct sampler_cb pcb = {.ctx = &probes, .sample = on_probe, .lost = on_lost};
	struct sampler_cb scb = {.ctx = &probes, .sample = on_probe, .mmap = on_mmap,
				 .comm = on_comm, .fork = on_fork, .exit = on_exit_rec,
				 .lost = on_lost};
	uint64_t round = clock_mono_ns();

	if (a->smp)
		sampler_drain(a->smp, &cb);
	run_offcpu_drain(a);
	for (size_t i = 0; i < a->npr; i++)
		for (size_t k = 0; k < a->pr[i].nsmp; k++) {
			a->cur = i;
			a->cur_site = k;
			sampler_drain(a->pr[i].smp[k], a->pr[i].stacks && a->pst ? &scb : &pcb);
		}
	if (a->lat && round > LATENCY_SLACK_NS)
		latency_pair(a->lat, round - LATENCY_SLACK_NS, on_latency, a);
}

/* SIGHUP: the config again, everything rebuilt from it. 0 (also when the
 * new config does not load: the running one stays), or agent_start's. */
/* --push-mode, which wins over push.mode across reloads too; -1: none. */
static int cli_push_mode = -1;

static int reload(struct agent *a)
{
	struct config *ncfg = NULL;
	char err[2048];
	int ret;

	if (config_load(a->cfg->path, &ncfg, err, sizeof(err)) < 0) {
		log_kv(LOG_ERROR, "reload failed; keeping the running config", "error", err, NULL);
		return 0;
	}
	if (cli_push_mode >= 0)
		ncfg->push.mode = (enum config_push_mode)cli_push_mode;
	/* What is not sent yet stays spooled for the new push. */
	run_agent_stop(a);
	config_free(a->cfg);
	a->cfg = ncfg;
	ret = run_agent_start(a);
	if (!ret)
		log_kv(LOG_INFO, "config reloaded", NULL);
	return ret;
}

/* Read the signals: *@reload on SIGHUP; true to stop. */
static bool read_signals(int sfd, bool *reload)
{
	struct signalfd_siginfo si;
	bool stop = false;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			*reload = true;
		else
			stop = true;
	}
	return stop;
}

/* Sample, count and push until a signal or @duration. 0 or agent_start's. */
static int run_loop(struct agent *a, int sfd, double duration)
{
	uint64_t period = a->cfg->push.interval_ms * 1000000ull, t0 = clock_mono_ns();
	uint64_t next = t0 + period, end = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : 0;
	uint64_t start_rt = clock_real_ns();
	bool stop = false;
	int ret = 0;

	while (!stop) {
		struct pollfd pfd[RUN_MAX_POLL];
		size_t np = poll_set(a, sfd, pfd);
		uint64_t now = clock_mono_ns(), wake = end && end < next ? end : next;
		int timeout = wake > now ? (int)((wake - now) / 1000000) + 1 : 0;
		bool again = false;

		if (timeout > 200)
			timeout = 200; /* probe rings are drained on this beat too */
		poll(pfd, np, timeout);
		if ((pfd[0].revents & POLLIN) && read_signals(sfd, &again))
			stop = true;
		if (a->watch && (pfd[1].revents & POLLIN))
			cg_watch_read(a->watch, on_watch, a);
		drain_rings(a);
		now = clock_mono_ns();
		if (end && now >= end)
			stop = true;
		/* The last batch before a stop or a reload: every pair held. */
		if ((stop || again) && a->lat)
			latency_pair(a->lat, UINT64_MAX, on_latency, a);
		if (now >= next || stop || again) {
			uint64_t seq = 0, end_rt = clock_real_ns();

			if (a->push && push_next_seq(a->push, &seq) < 0)
				log_kv(LOG_ERROR, "no sequence number", NULL);
			run_batch(a, seq, start_rt, end_rt);
			a->batches++;
			run_publish_metrics(a);
			start_rt = end_rt;
			while (next <= now)
				next += period;
		}
		if (again) {
			if ((ret = reload(a)))
				break;
			period = a->cfg->push.interval_ms * 1000000ull; /* it may have changed */
			next = clock_mono_ns() + period;
		}
	}
	return ret;
}

/* Host name, machine id and agent id, once. */
static void identify(struct agent *a)
{
	if (a->cfg->host.name && a->cfg->host.name[0])
		snprintf(a->host, sizeof(a->host), "%s", a->cfg->host.name);
	else
		gethostname(a->host, sizeof(a->host) - 1);
	run_read_line("/etc/machine-id", a->machine_id, sizeof(a->machine_id));
	agent_id(a->cfg->host.agent_id_file, a->agent_id, sizeof(a->agent_id));
}

int cmd_run(int argc, char **argv)
{
	const char *path = NULL;
	struct agent a = {0};
	char err[2048];
	bool print = false;
	double duration = 0;
	int ret, sfd = -1, push_mode = -1;
	sigset_t oldmask;

	ret = parse_args(argc, argv, &path, &print, &duration, &push_mode);
	if (ret >= 0)
		return ret;
	if (config_load(path, &a.cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", RUN_PROG, err);
		return 2;
	}
	cli_push_mode = push_mode;
	if (push_mode >= 0) /* --push-mode over push.mode */
		a.cfg->push.mode = (enum config_push_mode)push_mode;
	if (print) {
		config_dump(a.cfg, stdout);
		config_free(a.cfg);
		return 0;
	}
	/* From here on everything goes through the log, in the config's format. */
	if (run_log_setup(a.cfg) < 0 || !(a.mount = cmd_perf_cgroup_find(err, sizeof(err)))) {
		if (!a.mount)
			log_kv(LOG_ERROR, "cannot find the cgroup hierarchy", "error", err, NULL);
		ret = 1;
		goto out;
	}
	a.ncpu = cpumap_online(&a.cpus);
	if (a.ncpu < 0) {
		log_kv(LOG_ERROR, "cannot read the online CPUs", "error", strerror(-a.ncpu), NULL);
		ret = 1;
		goto out;
	}
	identify(&a);
	cmd_raise_nofile();
	/* Block before any thread exists (the push senders inherit the mask), so
	 * the signals only ever arrive through the signalfd. */
	sfd = cmd_signalfd(&oldmask, false);
	if (sfd < 0) {
		log_kv(LOG_ERROR, "cannot receive signals", "error", strerror(-sfd), NULL);
		ret = 1;
		goto out;
	}
	/* Counted for the agent's life, across reloads. */
	if (refusals_start(run_refusal_notice, NULL) < 0) {
		ret = 1;
		goto out;
	}
	ret = run_agent_start(&a);
	if (ret)
		goto out;
	log_kv(LOG_INFO, "started", "host", a.host, "agent_id", a.agent_id, "config",
	       a.cfg->path ? a.cfg->path : "(defaults)", NULL);
	ret = run_loop(&a, sfd, duration);
	if (a.push && push_flush(a.push, (unsigned)(a.cfg->push.timeout_ms ? a.cfg->push.timeout_ms
									 : 5000)) < 0)
		log_kv(LOG_WARN, "stopping with batches still spooled; they are sent at the next start",
		       NULL);
	log_kv(LOG_INFO, "stopped", NULL);
out:
	if (sfd >= 0)
		close(sfd);
	run_agent_stop(&a); /* joins the push threads before the mask is restored */
	refusals_stop();
	if (sfd >= 0)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	config_free(a.cfg);
	free(a.cpus);
	free(a.mount);
	return ret;
}
