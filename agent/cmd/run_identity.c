// SPDX-License-Identifier: MIT
/*
 * `run`'s side of runtime identity (cgroup/runtime.h): one cache whose
 * worker asks the runtimes, told about every cgroup as it is followed
 * (the watch) and again at every batch (refresh, retry); each batch copies
 * what is known into the cgroup's record, and the wire and /metrics read
 * that copy. Nothing here waits for a runtime.
 *
 * Labels leave the agent only when identity.labels names their key, on the
 * wire and on /metrics (as container_label_KEY, KEY with every character
 * outside [a-zA-Z0-9_] made '_', as cAdvisor does): a container's labels
 * are unbounded, the series of a scrape should not be.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/run.h"
#include "agent/ship/selfmetrics.h"
#include "cgroup/pids.h"
#include "cgroup/target.h"
#include "lib/log.h"
#include "lib/prom.h"
#include "lib/strv.h"

static void run_idsel_free(struct run_idsel *s);
static int run_idsel_new(struct agent *a);
static void run_identity_pending(struct agent *a);

int run_identity_start(struct agent *a)
{
	const struct config *cfg = a->cfg;
	struct cg_rt_sources src = {
		.root = cfg->identity.root,
		.docker_sock = cfg->identity.docker_socket,
		.podman_sock = cfg->identity.podman_socket,
		.timeout_ms = (unsigned)cfg->identity.timeout_ms,
		.kubelet_url = cfg->identity.kubelet_url,
		.kubelet_token_file = cfg->identity.kubelet_token_file,
		.kubelet_ca_file = cfg->identity.kubelet_ca_file,
	};

	if (!a->idsel && run_idsel_new(a) < 0)
		return -ENOMEM;
	if (!cfg->identity.runtimes || a->rt)
		return 0;
	a->rt = cg_rtcache_new(&src, 0, cfg->identity.refresh_ms);
	if (!a->rt)
		log_kv(LOG_WARN, "runtime identity disabled", "error", strerror(errno), NULL);
	return 0;
}

void run_identity_stop(struct agent *a)
{
	cg_rtcache_free(a->rt);
	a->rt = NULL;
	run_idsel_free(a->idsel);
	a->idsel = NULL;
}

void run_identity_refresh(struct agent *a)
{
	run_identity_pending(a);
	for (size_t i = 0; a->rt && i < a->ncg; i++) {
		struct rcg *c = &a->cg[i];
		struct cg_rtinfo ri;

		if (c->removed)
			continue;
		cg_rtcache_want(a->rt, c->path);
		if (cg_rtcache_get(a->rt, c->path, &ri) < 0)
			continue; /* out of memory: keep the old copy */
		cg_rtinfo_release(&c->rt);
		c->rt = ri;
	}
	run_probes_retry(a); /* cgroups may have come: their binaries too */
}

void run_identity_fill(const struct agent *a, const struct rcg *c, struct wire_cgroup_info *info,
		       const char **keys, const char **values, size_t max)
{
	const struct cg_rtinfo *ri = &c->rt;
	size_t n = 0;

	if (ri->name)
		info->container_name = ri->name;
	info->image = ri->image;
	info->pod_name = ri->pod_name;
	info->k8s_namespace = ri->pod_namespace;
	info->description = ri->description;
	for (size_t i = 0; i < ri->nlabels && n < max; i++) {
		if (!config_label_wanted(a->cfg, ri->labels[i].key))
			continue;
		keys[n] = ri->labels[i].key;
		values[n] = ri->labels[i].value;
		n++;
	}
	info->label_keys = keys;
	info->label_values = values;
	info->nlabels = n;
}

static void label(FILE *f, const char *name, const char *v)
{
	fprintf(f, ",%s=\"", name);
	selfmetrics_label(f, v ? v : "");
	fputc('"', f);
}

void run_identity_metric_labels(FILE *f, const struct agent *a, const struct rcg *c)
{
	const struct cg_rtinfo *ri = &c->rt;
	const char *keys[CONFIG_MAX_LABELS], *values[CONFIG_MAX_LABELS];
	size_t n = 0;

	label(f, "container_name", ri->name ? ri->name : c->ident.container_name);
	label(f, "image", ri->image);
	label(f, "pod_name", ri->pod_name);
	label(f, "namespace", ri->pod_namespace);
	for (size_t i = 0; i < ri->nlabels && n < CONFIG_MAX_LABELS; i++) {
		if (!config_label_wanted(a->cfg, ri->labels[i].key))
			continue;
		keys[n] = ri->labels[i].key;
		values[n++] = ri->labels[i].value;
	}
	prom_pairs(f, "container_label_", keys, values, n);
}

/* ---- cgroups.include/exclude by identity ---- */

struct run_idsel {
	struct cg_target **inc, **exc;
	size_t ninc, nexc;
	char **pending; /* paths waiting for their runtime's answer */
	size_t npending;
};

static int compile(char **items, size_t n, struct cg_target ***out, size_t *nout)
{
	for (size_t i = 0; i < n; i++) {
		struct cg_target **nv, *t;

		if (items[i][0] == '/')
			continue;
		t = cg_target_parse(items[i], NULL, NULL, 0);
		nv = t ? reallocarray(*out, *nout + 1, sizeof(*nv)) : NULL;
		if (!nv) {
			cg_target_free(t);
			return -ENOMEM;
		}
		*out = nv;
		nv[(*nout)++] = t;
	}
	return 0;
}

static void run_idsel_free(struct run_idsel *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ninc; i++)
		cg_target_free(s->inc[i]);
	for (size_t i = 0; i < s->nexc; i++)
		cg_target_free(s->exc[i]);
	free(s->inc);
	free(s->exc);
	strv_free(s->pending, s->npending);
	free(s);
}

static int run_idsel_new(struct agent *a)
{
	const struct config *cfg = a->cfg;
	struct run_idsel *s = calloc(1, sizeof(*s));

	if (!s || compile(cfg->cgroups.include, cfg->cgroups.ninclude, &s->inc, &s->ninc) ||
	    compile(cfg->cgroups.exclude, cfg->cgroups.nexclude, &s->exc, &s->nexc)) {
		run_idsel_free(s);
		return -ENOMEM;
	}
	a->idsel = s;
	return 0;
}

static bool any_match(struct cg_target **v, size_t n, const struct cg_identity *id,
		      const struct cg_rtinfo *ri)
{
	for (size_t i = 0; i < n; i++)
		if (cg_target_match_identity(v[i], id, ri))
			return true;
	return false;
}

static void pending_add(struct run_idsel *s, const char *path)
{
	char **nv;

	for (size_t i = 0; i < s->npending; i++)
		if (!strcmp(s->pending[i], path))
			return;
	nv = reallocarray(s->pending, s->npending + 1, sizeof(*nv));
	if (!nv)
		return;
	s->pending = nv;
	if ((nv[s->npending] = strdup(path)))
		s->npending++;
}

void run_identity_gone(struct agent *a, const char *path)
{
	struct run_idsel *s = a->idsel;

	for (size_t i = 0; s && i < s->npending; i++) {
		if (strcmp(s->pending[i], path))
			continue;
		free(s->pending[i]);
		s->pending[i] = s->pending[--s->npending];
		return;
	}
}

int run_identity_wanted(struct agent *a, const char *path, const struct cg_identity *id)
{
	const struct config *cfg = a->cfg;
	struct run_idsel *s = a->idsel;
	struct cg_rtinfo ri = { 0 };
	bool path_in = config_cgroup_wanted(cfg, path), in;
	int known;

	if (!s || (!s->ninc && !s->nexc))
		return path_in;
	for (size_t i = 0; i < cfg->cgroups.nexclude; i++)
		if (cfg->cgroups.exclude[i][0] == '/' &&
		    config_glob_match(cfg->cgroups.exclude[i], path))
			return 0;
	known = a->rt ? cg_rtcache_get(a->rt, path, &ri) : 0;
	if (known == -EAGAIN && id->container_id[0]) {
		cg_rtcache_want(a->rt, path);
		pending_add(s, path);
		return 0;
	}
	in = (path_in || any_match(s->inc, s->ninc, id, &ri)) &&
	     !any_match(s->exc, s->nexc, id, &ri);
	cg_rtinfo_release(&ri);
	return in;
}

/* Pending cgroups whose runtime has answered: decided now. */
static void run_identity_pending(struct agent *a)
{
	struct run_idsel *s = a->idsel;
	size_t i = 0;

	while (s && a->rt && i < s->npending) {
		struct cg_rtinfo ri;
		char *path = s->pending[i];

		if (cg_rtcache_get(a->rt, path, &ri) == -EAGAIN) {
			/* Not answered yet, or the lookup failed (a runtime
			 * that answers only once the container has started):
			 * asked again, with the cache's backoff. */
			cg_rtcache_want(a->rt, path);
			i++;
			continue;
		}
		cg_rtinfo_release(&ri);
		s->pending[i] = s->pending[--s->npending];
		run_cg_add(a, path);
		free(path);
	}
}

/* ---- probe binaries among the followed processes ---- */

bool run_identity_selective(const struct agent *a)
{
	return a->idsel && a->idsel->ninc;
}

#define PROBE_PIDS_MAX 4096

/*
 * Cgroups selected by what their runtime says (container=, image=...) wait
 * for its answer: before probes look for their binaries, give the runtimes
 * a bounded time to answer, so those cgroups' processes are searched too.
 */
static void run_identity_settle(struct agent *a)
{
	uint64_t t = a->cfg->identity.timeout_ms;
	uint64_t bound = t && t < 2000 ? 2 * t + 1000 : 5000;

	if (!a->rt || !a->idsel || !a->idsel->npending)
		return;
	cg_rtcache_settle(a->rt, (unsigned)bound);
	run_identity_pending(a);
}

void run_identity_pids(struct agent *a, int **pids, size_t *n)
{
	*pids = NULL;
	*n = 0;
	run_identity_settle(a);
	for (size_t i = 0; i < a->ncg && *n < PROBE_PIDS_MAX; i++) {
		char dir[4096];
		const char *p = strcmp(a->cg[i].path, "/") ? a->cg[i].path : "";

		if (a->cg[i].removed ||
		    snprintf(dir, sizeof(dir), "%s%s", a->mount, p) >= (int)sizeof(dir))
			continue;
		if (cg_pids_in(dir, PROBE_PIDS_MAX, pids, n) < 0)
			return; /* what was found so far still helps */
	}
}
