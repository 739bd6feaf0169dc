// SPDX-License-Identifier: MIT
/*
 * What the runtimes say about the cgroups that `cgroups` lists (names,
 * images, labels, unit descriptions), and the sockets every one-off
 * command asks. One lookup per listed cgroup that has something to ask
 * about; a runtime socket that times out once is not asked again in the
 * same listing, so a dead engine costs one timeout, not one per container.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/cmd.h"
#include "agent/cmd/cmd_rt.h"
#include "lib/json.h"

void cmd_rt_sources(struct cg_rt_sources *src)
{
	memset(src, 0, sizeof(*src));
	src->docker_sock = getenv("CGPERF_DOCKER_SOCKET");
	src->podman_sock = getenv("CGPERF_PODMAN_SOCKET");
	src->kubelet_url = getenv("CGPERF_KUBELET_URL");
	src->kubelet_token_file = getenv("CGPERF_KUBELET_TOKEN_FILE");
	src->kubelet_ca_file = getenv("CGPERF_KUBELET_CA_FILE");
}

int cmd_rt_lookup_tree(const struct cg_tree *t, bool (*want)(const void *ctx, const struct cg_node *),
		       const void *ctx, struct cg_rtinfo **out)
{
	size_t n = cg_tree_count(t);
	struct cg_rt_series series = { 0 };
	struct cg_rtinfo *v = calloc(n ? n : 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	cmd_rt_sources(&series.src);
	for (size_t i = 0; i < n; i++) {
		const struct cg_node *node = cg_tree_get(t, i);
		int ret;

		if (want && !want(ctx, node))
			continue;
		ret = cg_rt_series_lookup(&series, &node->ident, &v[i]);
		if (ret == -ENOMEM) {
			cmd_rt_free(v, n);
			return ret;
		}
	}
	*out = v;
	return 0;
}

void cmd_rt_free(struct cg_rtinfo *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		cg_rtinfo_release(&v[i]);
	free(v);
}

static void field(FILE *f, const char *key, const char *val)
{
	if (!val || !val[0])
		return;
	fprintf(f, ",\"%s\":", key);
	json_write_string(f, val);
}

void cmd_rt_json(FILE *f, const struct cg_rtinfo *ri)
{
	/* an lxc/nspawn name from the path is printed by the caller */
	field(f, "container_name", ri->name);
	field(f, "image", ri->image);
	field(f, "pod_name", ri->pod_name);
	field(f, "namespace", ri->pod_namespace);
	field(f, "description", ri->description);
	if (ri->nlabels) {
		fputs(",\"labels\":{", f);
		for (size_t i = 0; i < ri->nlabels; i++) {
			if (i)
				fputc(',', f);
			json_write_string(f, ri->labels[i].key);
			fputc(':', f);
			json_write_string(f, ri->labels[i].value);
		}
		fputc('}', f);
	}
	if (ri->source)
		field(f, "identity_source", ri->source);
}

void cmd_rt_name(const struct cg_identity *id, const struct cg_rtinfo *ri, char *buf, size_t len)
{
	if (cg_rtinfo_display(ri, buf, len) > 0)
		return;
	if (id->container_name[0])
		snprintf(buf, len, "%s", id->container_name);
	else if (ri->description)
		snprintf(buf, len, "\"%s\"", ri->description);
	else
		snprintf(buf, len, "-");
}

struct cg_rtcache *cmd_rt_cache_new(void)
{
	struct cg_rt_sources src;

	cmd_rt_sources(&src);
	return cg_rtcache_new(&src, 0, 0);
}
