/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_CGROUP_TREE_H
#define CGPERF_CGROUP_TREE_H

/*
 * A snapshot of one cgroup hierarchy: every cgroup directory under a mount,
 * in pre-order (parents before children, siblings sorted by name), with its
 * id and the identity its path implies.
 *
 * The id is the directory's inode number, which on 64-bit kernels is the
 * kernfs node id: the value PERF_SAMPLE_CGROUP reports and that
 * name_to_handle_at() returns for the directory.
 */

#include <stddef.h>
#include <stdint.h>

#include "cgroup/identity.h"

#define CG_TREE_MAX_DEPTH 64

struct cg_node {
	char *path;  /* relative to the mount, "/" for the root, "/a/b" below */
	int depth;   /* 0 for the root */
	uint64_t id; /* inode number = cgroup id */
	long nprocs; /* lines in cgroup.procs at scan time; -1 if unreadable */
	struct cg_identity ident;
};

struct cg_tree;

/* Scan the hierarchy mounted at @mount. NULL + errno (ENOENT if @mount is
 * missing). Subtrees that vanish during the walk are skipped. */
struct cg_tree *cg_tree_scan(const char *mount);
void cg_tree_free(struct cg_tree *t);

size_t cg_tree_count(const struct cg_tree *t);
const struct cg_node *cg_tree_get(const struct cg_tree *t, size_t i);
/* Exact lookup by path as stored ("/" or "/a/b"); NULL if absent. */
const struct cg_node *cg_tree_find(const struct cg_tree *t, const char *path);

/*
 * Normalise a user-given cgroup name to the stored form: add a leading '/',
 * drop repeated and trailing '/', and strip @mount when the user passed an
 * absolute filesystem path under it. Returns a malloc'd string, or NULL
 * with errno EINVAL for a path with a ".." component, ENOMEM.
 */
char *cg_path_normalize(const char *mount, const char *user);

/* Read the cgroup id (inode) of @path under @mount. 0 or -errno. */
int cg_path_id(const char *mount, const char *path, uint64_t *id);

#endif
