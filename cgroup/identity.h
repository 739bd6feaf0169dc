/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_CGROUP_IDENTITY_H
#define CGPERF_CGROUP_IDENTITY_H

/*
 * What a cgroup path says about the workload inside it: the container
 * runtime and id, the Kubernetes pod and QoS class, the systemd unit.
 * Parsing is purely lexical (no filesystem access), so it is exact to test
 * and cheap to run on every cgroup of a host.
 */

#include <stddef.h>

enum cg_runtime {
	CG_RT_NONE = 0,
	CG_RT_DOCKER,
	CG_RT_CONTAINERD, /* CRI containerd, or a kubepods cgroupfs leaf */
	CG_RT_CRIO,
	CG_RT_PODMAN,
	CG_RT_LXC,
	CG_RT_NSPAWN, /* systemd-nspawn machine */
};

enum cg_qos {
	CG_QOS_NONE = 0,
	CG_QOS_GUARANTEED,
	CG_QOS_BURSTABLE,
	CG_QOS_BESTEFFORT,
};

#define CG_CONTAINER_ID_MAX 64 /* hex digits of a full container id */
#define CG_POD_UID_MAX 36      /* canonical UUID text with dashes */
#define CG_UNIT_MAX 255        /* systemd's limit on unit names */

struct cg_identity {
	enum cg_runtime runtime;
	char container_id[CG_CONTAINER_ID_MAX + 1]; /* "" when not a container */
	char container_name[CG_UNIT_MAX + 1];       /* lxc/nspawn name; "" else */
	char pod_uid[CG_POD_UID_MAX + 1];           /* with dashes; "" if none */
	enum cg_qos qos;                            /* only with a pod */
	char unit[CG_UNIT_MAX + 1];  /* innermost systemd unit (.service, .scope, ...) */
	char slice[CG_UNIT_MAX + 1]; /* innermost .slice */
};

/*
 * Parse @path (a cgroup path relative to its hierarchy root, e.g.
 * "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_...slice/cri-containerd-<id>.scope")
 * into @out. Unknown shapes leave fields empty. Always fills @out (zeroed
 * first). Returns 0, or -EINVAL when @path or @out is NULL.
 */
int cg_identity_parse(const char *path, struct cg_identity *out);

/* "docker", "containerd", "cri-o", "podman", "lxc", "nspawn" or "" */
const char *cg_runtime_name(enum cg_runtime rt);
/* "guaranteed", "burstable", "besteffort" or "" */
const char *cg_qos_name(enum cg_qos qos);

/*
 * Short human label for display: "docker:0123456789ab", "pod:<uid>" +
 * " containerd:<id12>", "postgresql@15-main.service", or "" when nothing is
 * known. Writes at most @len bytes including the NUL; returns the length it
 * wanted (snprintf rules).
 */
int cg_identity_label(const struct cg_identity *id, char *buf, size_t len);

#endif
