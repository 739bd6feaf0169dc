/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_CGROUP_TARGET_H
#define CGPERF_CGROUP_TARGET_H

/*
 * Targets named the way users name them: cgroup/proc.h's process selector
 * (comm=, exe=, cgroup=, pid=, cmdline~) plus terms on the identity of the
 * process's cgroup, as its path and its runtime give it:
 *
 *   container=GLOB  container name (runtime's, or lxc/nspawn's), or its id
 *                   (full, or the 12-digit short form)
 *   image=GLOB      the container's image reference
 *   pod=GLOB        Kubernetes pod name, or pod UID
 *   namespace=GLOB  Kubernetes namespace
 *   unit=GLOB       innermost systemd unit of the cgroup
 *
 * All terms must match (","-separated, as for the selector). Globs are
 * fnmatch(3) without flags. Runtime lookups (cgroup/runtime.h) are made
 * once per cgroup path and cached; they may block for a socket timeout, a
 * socket that timed out is not asked again. Nothing here prints.
 */

#include <stdbool.h>
#include <stddef.h>

#include "cgroup/identity.h"
#include "cgroup/proc.h"
#include "cgroup/runtime.h"

struct cg_target;

/*
 * Parse @spec; @src (may be NULL: the defaults) says where to ask the
 * runtimes and is copied. NULL with errno (EINVAL: the reason in @err, at
 * most @errlen bytes; ENOMEM).
 */
struct cg_target *cg_target_parse(const char *spec, const struct cg_rt_sources *src, char *err,
				  size_t errlen);
void cg_target_free(struct cg_target *t);

/* True when @spec has identity terms (so a lookup may be needed). */
bool cg_target_has_identity(const struct cg_target *t);

/* True when @p matches every term (identity through p->cgroup). */
bool cg_target_match(struct cg_target *t, const struct cg_proc *p);

/* The identity terms alone, for the cgroup with @id and runtime info @ri
 * (may be NULL): true when they all match (or there are none). */
bool cg_target_match_identity(const struct cg_target *t, const struct cg_identity *id,
			      const struct cg_rtinfo *ri);

#endif
