// SPDX-License-Identifier: MIT
/*
 * libFuzzer over what the runtimes leave on disk for cg_rt_lookup(): the
 * input is written, in a root of this process, as a CRI-O container's
 * config.json, as containerd's, as podman's containers.json and as a unit
 * file, and each is looked up. Whoever starts a container chooses its
 * annotations, names and labels, so these bytes are hostile. Properties:
 * the lookup returns 0 or 1 (never an error for bad content), and whatever
 * it keeps is within the caps: strings valid UTF-8 of at most
 * CG_RT_VALUE_MAX bytes, at most CG_RT_LABELS_MAX labels sorted by key.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/runtime.h"
#include "lib/utf8.h"

#define CID "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

static void put(const char *rel, const uint8_t *data, size_t size)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, "w");
	if (!f || fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
}

static void mkdirs(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0700);
		*p = '/';
	}
	mkdir(path, 0700);
}

static void check_str(const char *s)
{
	size_t n;

	if (!s)
		return;
	n = strlen(s);
	if (!n || n > CG_RT_VALUE_MAX || utf8_valid(s, n) != n)
		abort();
}

static void lookup(const char *path)
{
	struct cg_rt_sources src = { .root = root, .docker_sock = "", .podman_sock = "" };
	struct cg_identity id;
	struct cg_rtinfo ri;
	int ret;

	cg_identity_parse(path, &id);
	ret = cg_rt_lookup(&src, &id, &ri);
	if (ret != 0 && ret != 1)
		abort();
	check_str(ri.name);
	check_str(ri.image);
	check_str(ri.pod_name);
	check_str(ri.pod_namespace);
	check_str(ri.description);
	if (ri.nlabels > CG_RT_LABELS_MAX)
		abort();
	for (size_t i = 0; i < ri.nlabels; i++) {
		if (i && strcmp(ri.labels[i - 1].key, ri.labels[i].key) >= 0)
			abort();
		check_str(ri.labels[i].key);
	}
	cg_rtinfo_release(&ri);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!root[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(root, sizeof(root), "%.40s/fuzz-runtime.%d", tmp && *tmp == '/' ? tmp : "/tmp",
			 (int)getpid());
		mkdir(root, 0700);
		mkdirs("/run/containers/storage/overlay-containers/" CID "/userdata");
		mkdirs("/run/containerd/io.containerd.runtime.v2.task/k8s.io/" CID);
		mkdirs("/var/lib/containers/storage/overlay-containers");
		mkdirs("/lib/systemd/system");
	}
	put("/run/containers/storage/overlay-containers/" CID "/userdata/config.json", data, size);
	put("/run/containerd/io.containerd.runtime.v2.task/k8s.io/" CID "/config.json", data, size);
	put("/var/lib/containers/storage/overlay-containers/containers.json", data, size);
	put("/lib/systemd/system/fuzz.service", data, size);
	lookup("/kubepods.slice/crio-" CID ".scope");
	lookup("/kubepods.slice/cri-containerd-" CID ".scope");
	lookup("/machine.slice/libpod-" CID ".scope");
	lookup("/system.slice/fuzz.service");
	return 0;
}
