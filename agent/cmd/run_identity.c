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
#include <string.h>

#include "agent/cmd/run.h"
#include "agent/ship/selfmetrics.h"
#include "lib/log.h"

int run_identity_start(struct agent *a)
{
	const struct config *cfg = a->cfg;
	struct cg_rt_sources src = {
		.docker_sock = cfg->identity.docker_socket,
		.podman_sock = cfg->identity.podman_socket,
		.timeout_ms = (unsigned)cfg->identity.timeout_ms,
	};

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
}

void run_identity_refresh(struct agent *a)
{
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

	label(f, "container_name", ri->name ? ri->name : c->ident.container_name);
	label(f, "image", ri->image);
	label(f, "pod_name", ri->pod_name);
	label(f, "namespace", ri->pod_namespace);
	for (size_t i = 0; i < ri->nlabels; i++) {
		const char *k = ri->labels[i].key;

		if (!config_label_wanted(a->cfg, k))
			continue;
		fputs(",container_label_", f);
		for (; *k; k++) {
			char ch = *k;
			bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
				  (ch >= '0' && ch <= '9') || ch == '_';

			fputc(ok ? ch : '_', f);
		}
		fputs("=\"", f);
		selfmetrics_label(f, ri->labels[i].value);
		fputc('"', f);
	}
}
