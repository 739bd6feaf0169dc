// SPDX-License-Identifier: MIT
/* The processes of the -G cgroups of a command, for finding probe binaries. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent/cmd/cmd.h"
#include "cgroup/pids.h"
#include "lib/strv.h"

#define CGPIDS_MAX 65536

int cmd_cgroup_pids(const char *prog, const char *groups, int **pids, size_t *n)
{
	char *mount = cmd_perf_cgroup_mount(prog), **dirs = NULL;
	size_t ndirs = 0;
	int ret = 0;

	*pids = NULL;
	*n = 0;
	if (!mount)
		return 1;
	ret = cmd_cgroup_dirs(prog, mount, groups, &dirs, &ndirs);
	for (size_t i = 0; !ret && i < ndirs; i++) {
		if (cg_pids_under(dirs[i], CGPIDS_MAX, pids, n) < 0) {
			fprintf(stderr, "%s: out of memory\n", prog);
			ret = 1;
		}
	}
	strv_free(dirs, ndirs);
	free(mount);
	if (ret) {
		free(*pids);
		*pids = NULL;
		*n = 0;
	}
	return ret;
}
