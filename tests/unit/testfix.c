// SPDX-License-Identifier: MIT
#include "tests/unit/testfix.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/mount.h"
#include "tests/unit/testlib.h"

const char *tf_build_dir(void)
{
	const char *b = getenv("BUILD");

	return b && *b ? b : "build";
}

void tf_workload(char *buf, size_t size, const char *name)
{
	tl_pathf(buf, size, "%s/workloads/%s", tf_build_dir(), name);
	if (access(buf, R_OK) != 0)
		fail_msg("%s missing: build it with `make build-tests` (BUILD=%s)", buf,
			 tf_build_dir());
}

char *tf_cgroup_mount(bool perf)
{
	struct cg_mounts *m = cg_mounts_read("/proc/self/mountinfo");
	const struct cg_mount *mnt;
	char *path;

	assert_non_null(m);
	mnt = perf ? cg_mounts_perf(m) : cg_mounts_v2(m);
	if (!mnt) {
		cg_mounts_free(m);
		print_message("host has no %s\n",
			      perf ? "cgroup hierarchy with perf_event" : "cgroup2 mount");
		skip();
		return NULL;
	}
	path = strdup(mnt->path);
	assert_non_null(path);
	cg_mounts_free(m);
	return path;
}
