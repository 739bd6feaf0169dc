/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_CMD_RT_H
#define CGPERF_AGENT_CMD_RT_H

/*
 * Runtime identity (cgroup/runtime.h) as the one-off commands show it:
 * `cgroups`' columns and JSON keys, stat/record/trace headers. Printing
 * helpers of the agent's commands, so they may print.
 */

#include <stdbool.h>
#include <stdio.h>

#include "cgroup/runtime.h"
#include "cgroup/tree.h"

/* The sources one-off commands ask: the default sockets, or the ones in
 * $CGPERF_DOCKER_SOCKET and $CGPERF_PODMAN_SOCKET ("" disables). */
void cmd_rt_sources(struct cg_rt_sources *src);

/*
 * Look up every node of @t for which @want (NULL: all) says yes, into a
 * new array of cg_tree_count(@t) entries (*@out; cmd_rt_free()). 0 or
 * -ENOMEM. A socket that times out is not asked again.
 */
int cmd_rt_lookup_tree(const struct cg_tree *t, bool (*want)(const void *ctx, const struct cg_node *),
		       const void *ctx, struct cg_rtinfo **out);
void cmd_rt_free(struct cg_rtinfo *v, size_t n);

/* ,"container_name":..,"image":..,"pod_name":..,"namespace":..,
 * "description":..,"labels":{..} for the known fields. */
void cmd_rt_json(FILE *f, const struct cg_rtinfo *ri);

/* The NAME column: namespace/pod/container, the container name (runtime's,
 * else lxc/nspawn's from the path), a unit's "description", or "-". */
void cmd_rt_name(const struct cg_identity *id, const struct cg_rtinfo *ri, char *buf, size_t len);

/* A lookup cache for a command that counts (stat): its sources as
 * cmd_rt_sources() says; NULL when it cannot be made. */
struct cg_rtcache *cmd_rt_cache_new(void);

#endif
