/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_CGROUP_MOUNT_H
#define CGPERF_CGROUP_MOUNT_H

/*
 * Where the cgroup hierarchies are mounted, read from /proc/self/mountinfo.
 * Hosts come pure v1, pure v2 or hybrid (v2 at /sys/fs/cgroup/unified next
 * to v1 controllers), so no path is ever assumed.
 *
 * perf_event_open(PERF_FLAG_PID_CGROUP) takes a cgroup directory fd from the
 * hierarchy that owns the perf_event controller: a v1 "perf_event" mount if
 * one exists, otherwise the v2 (default) hierarchy, where perf_event is
 * always implicitly enabled.
 */

#include <stdbool.h>
#include <stddef.h>

struct cg_mount {
	char *path;        /* mount point, octal escapes of mountinfo decoded */
	char *root;        /* root of the mount within the hierarchy ("/" normally) */
	int version;       /* 1 or 2 */
	char *controllers; /* v1: super options naming controllers ("cpu,cpuacct"); v2: NULL */
};

struct cg_mounts;

/* Parse mountinfo text (for tests and for cg_mounts_read). NULL + errno. */
struct cg_mounts *cg_mounts_parse(const char *text);
/* Read @mountinfo_path, normally "/proc/self/mountinfo". NULL + errno. */
struct cg_mounts *cg_mounts_read(const char *mountinfo_path);
void cg_mounts_free(struct cg_mounts *m);

size_t cg_mounts_count(const struct cg_mounts *m);
const struct cg_mount *cg_mounts_get(const struct cg_mounts *m, size_t i);

/* The first cgroup2 mount, or NULL. */
const struct cg_mount *cg_mounts_v2(const struct cg_mounts *m);
/* The v1 mount carrying @controller (e.g. "perf_event"), or NULL. */
const struct cg_mount *cg_mounts_v1(const struct cg_mounts *m, const char *controller);
/* The hierarchy perf_event_open's cgroup fds must come from: v1 perf_event
 * if mounted, else v2. NULL when neither is mounted (-ENOENT case). */
const struct cg_mount *cg_mounts_perf(const struct cg_mounts *m);

#endif
