// SPDX-License-Identifier: MIT
/*
 * containerd and CRI-O: the annotations of the OCI bundle's config.json.
 *
 * Both CRI runtimes copy what the kubelet tells them about a container into
 * the annotations of its runtime spec, which they write as config.json in
 * the bundle directory before starting it:
 *
 *   containerd  /run/containerd/io.containerd.runtime.v2.task/NS/ID/config.json
 *               (NS is the containerd namespace, "k8s.io" under the kubelet)
 *               io.kubernetes.cri.container-name, .sandbox-name,
 *               .sandbox-namespace, .image-name, .container-type
 *   CRI-O       /run/containers/storage/overlay-containers/ID/userdata/config.json
 *               (or under /var/lib/containers/storage)
 *               io.kubernetes.container.name, io.kubernetes.pod.name,
 *               io.kubernetes.pod.namespace, io.kubernetes.cri-o.ImageName,
 *               io.kubernetes.cri-o.Labels (the labels, as JSON text)
 *
 * The container id in the cgroup path is the bundle's directory name, so
 * the file is found without listing containers (only containerd's
 * namespaces are listed, a handful of directories).
 */

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgroup/runtime_internal.h"

#define OCI_NS_MAX 64 /* containerd namespaces looked at */

static int oci_parse(struct json_object *spec, struct cg_rtinfo *out)
{
	struct json_object *ann = NULL, *labels = NULL;
	const char *ltext;
	int ret;

	if (!json_object_object_get_ex(spec, "annotations", &ann) ||
	    !json_object_is_type(ann, json_type_object))
		return 0;
	ret = rt_kube_keys(out, ann);
	if (ret < 0)
		return ret;
	ltext = rt_json_str(ann, "io.kubernetes.cri-o.Labels");
	if (ltext && rt_json_parse(ltext, strlen(ltext), &labels) == 0) {
		ret = rt_add_labels(out, labels);
		json_object_put(labels);
	}
	if (ret == 0 && !cg_rtinfo_empty(out))
		out->source = "oci-config";
	return ret < 0 ? ret : !cg_rtinfo_empty(out);
}

static int oci_file(const struct cg_rt_sources *src, const char *path, struct cg_rtinfo *out)
{
	struct json_object *spec = NULL;
	int ret = rt_json_file(src, path, CG_RT_JSON_MAX, &spec);

	if (ret < 0)
		return ret;
	ret = oci_parse(spec, out);
	json_object_put(spec);
	return ret;
}

static int containerd_lookup(const struct cg_rt_sources *src, const char *cid,
			     struct cg_rtinfo *out)
{
	static const char base[] = "/run/containerd/io.containerd.runtime.v2.task";
	char dir[4096], path[4096];
	struct dirent *de;
	DIR *d;
	int ret = 0, seen = 0;

	if (rt_path(src, base, dir, sizeof(dir)) < 0)
		return 0;
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && seen++ < OCI_NS_MAX) {
		int n;

		if (de->d_name[0] == '.')
			continue;
		n = snprintf(path, sizeof(path), "%s/%s/%s/config.json", base, de->d_name, cid);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		ret = oci_file(src, path, out);
		if (ret != 0 && ret != -ENOENT && ret != -ENOTDIR)
			break;
		ret = 0;
	}
	closedir(d);
	return ret;
}

int rt_oci_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		  struct cg_rtinfo *out)
{
	static const char *const crio_roots[] = { "/run/containers/storage",
						  "/var/lib/containers/storage" };
	char path[512];

	if (id->runtime == CG_RT_CONTAINERD) {
		/* a bare-hex kubepods leaf may be CRI-O's too */
		int ret = containerd_lookup(src, id->container_id, out);

		if (ret != 0)
			return ret;
	}
	for (size_t i = 0; i < 2; i++) {
		int ret;

		snprintf(path, sizeof(path), "%s/overlay-containers/%s/userdata/config.json",
			 crio_roots[i], id->container_id);
		ret = oci_file(src, path, out);
		if (ret != -ENOENT && ret != -ENOTDIR)
			return ret;
	}
	return 0;
}
