/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_CGROUP_PIDS_H
#define CGPERF_CGROUP_PIDS_H

/*
 * The processes of a cgroup subtree, from the cgroup.procs files of the
 * directory and every directory below it (CG_TREE_MAX_DEPTH levels at
 * most): what a probe looks through to find the binary a name stands for
 * ("postgres", an SDT provider) among the processes it will trace.
 * Nothing here prints.
 */

#include <stddef.h>

/*
 * Append the pids under the cgroup directory @dir (absolute) to the
 * malloc'd array (*@pids, *@n), at most @max in all; a cgroup.procs of over
 * 1 MiB is read to its cap. Directories that vanish are skipped. 0, or
 * -ENOMEM (the array keeps what it had).
 */
int cg_pids_under(const char *dir, size_t max, int **pids, size_t *n);
/* The same for the directory @dir alone, not the ones below it. */
int cg_pids_in(const char *dir, size_t max, int **pids, size_t *n);

#endif
