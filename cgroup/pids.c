// SPDX-License-Identifier: MIT
/* Pids of a cgroup subtree: cgroup.procs of each directory, depth first. */

#include "cgroup/pids.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/tree.h"
#include "lib/slurp.h"

#define PROCS_MAX (1u << 20)

static int add_procs(int dfd, size_t max, int **pids, size_t *n)
{
	char *buf = NULL, *p, *end;
	size_t len;
	int ret = slurp_at(dfd, "cgroup.procs", PROCS_MAX, &buf, &len, NULL);

	if (ret < 0)
		return ret == -ENOMEM ? ret : 0;
	for (p = buf; *p && *n < max; p = end) {
		long v = strtol(p, &end, 10);
		int *nv;

		if (end == p)
			break;
		while (*end == '\n')
			end++;
		if (v <= 0 || v > 0x7fffffff)
			continue;
		nv = reallocarray(*pids, *n + 1, sizeof(**pids));
		if (!nv) {
			free(buf);
			return -ENOMEM;
		}
		*pids = nv;
		nv[(*n)++] = (int)v;
	}
	free(buf);
	return 0;
}

/* @dfd's pids, then its subdirectories' down to @max_depth levels below. */
static int walk(int dfd, int depth, int max_depth, size_t max, int **pids, size_t *n)
{
	struct dirent *de;
	DIR *d;
	int ret = add_procs(dfd, max, pids, n);

	if (ret < 0 || depth >= max_depth || *n >= max)
		return ret;
	d = fdopendir(dup(dfd));
	if (!d)
		return 0;
	while (ret == 0 && (de = readdir(d))) {
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub < 0)
			continue;
		ret = walk(sub, depth + 1, max_depth, max, pids, n);
		close(sub);
	}
	closedir(d);
	return ret;
}

static int pids_from(const char *dir, int max_depth, size_t max, int **pids, size_t *n)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret;

	if (dfd < 0)
		return 0;
	ret = walk(dfd, 0, max_depth, max, pids, n);
	close(dfd);
	return ret;
}

int cg_pids_in(const char *dir, size_t max, int **pids, size_t *n)
{
	return pids_from(dir, 0, max, pids, n);
}

int cg_pids_under(const char *dir, size_t max, int **pids, size_t *n)
{
	return pids_from(dir, CG_TREE_MAX_DEPTH, max, pids, n);
}
