/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_CGROUP_RUNTIME_H
#define CGPERF_CGROUP_RUNTIME_H

/*
 * What the runtime that made a cgroup says about it: a container's name,
 * image and labels, a Kubernetes pod's name and namespace, a systemd
 * unit's description. cgroup/identity.h reads the runtime and the
 * container id off the path; this module asks the runtime itself:
 *
 *   docker, podman    the engine API on its unix socket
 *                     (GET /containers/ID/json); for podman without its
 *                     API service, containers/storage's containers.json
 *                     (name and image, no labels)
 *   containerd, cri-o the OCI bundle's config.json annotations that the
 *                     CRI runtimes write for the kubelet (io.kubernetes.*)
 *   systemd units     Description= of the unit file (no D-Bus)
 *   kubelet /pods     optional (sources->kubelet_url): a pod's labels,
 *                     added to its containers' labels (theirs win a clash)
 *
 * Everything read is capped (files through lib/slurp after lib/rootfs's
 * checks, API answers by bytes, JSON by depth, labels by count and length),
 * since names, labels and annotations are chosen by whoever starts the
 * container. A lookup may block for up to the socket timeout: the
 * synchronous call is for one-off commands; the agent's loops use the cache
 * (struct cg_rtcache), whose worker thread does the lookups off the sample
 * path. Library module: nothing here prints.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup/identity.h"

#define CG_RT_LABELS_MAX 64     /* labels kept per container; the rest dropped */
#define CG_RT_KEY_MAX 128       /* bytes of a label key; longer labels dropped */
#define CG_RT_VALUE_MAX 1024    /* bytes of a value or name; longer ones dropped */
#define CG_RT_JSON_MAX (4u << 20)  /* bytes of one API answer or config.json */
#define CG_RT_STORE_MAX (32u << 20) /* bytes of podman's containers.json */
#define CG_RT_JSON_DEPTH 16     /* nesting accepted in any JSON read */

struct cg_rtlabel {
	char *key;   /* one block with value: freed through key */
	char *value;
};

/* What a runtime said; every string NULL when unknown. Owned by the struct
 * (cg_rtinfo_release()). Labels sorted by key, unique. */
struct cg_rtinfo {
	char *name;          /* container name, without docker's leading '/' */
	char *image;         /* image reference as given to the runtime */
	char *pod_name;      /* Kubernetes pod */
	char *pod_namespace; /* Kubernetes namespace */
	char *description;   /* systemd unit Description= */
	struct cg_rtlabel *labels;
	size_t nlabels;
	const char *source;  /* static: "docker-api", "podman-api", "podman-store",
			      * "oci-config", "systemd-unit"; NULL when nothing found */
	bool partial;        /* a fallback's answer while the better source failed
			      * for now (podman's store while its API stalls):
			      * kept, and asked again with the failures' backoff */
};

void cg_rtinfo_release(struct cg_rtinfo *ri);
/* Deep copy of @src into @dst (zeroed first). 0 or -ENOMEM (@dst empty). */
int cg_rtinfo_copy(struct cg_rtinfo *dst, const struct cg_rtinfo *src);
/* The value of label @key, or NULL. */
const char *cg_rtinfo_label(const struct cg_rtinfo *ri, const char *key);
/* True when no field is known. */
bool cg_rtinfo_empty(const struct cg_rtinfo *ri);

/*
 * The name a user knows the workload by: "NAMESPACE/POD/CONTAINER" for a
 * Kubernetes container (parts unknown left out), else the container name,
 * else ""; snprintf rules.
 */
int cg_rtinfo_display(const struct cg_rtinfo *ri, char *buf, size_t len);

/* Where to look; NULL members take the defaults below. */
struct cg_rt_sources {
	const char *root;        /* prefix of every path below, "" or NULL: "/" (tests) */
	const char *docker_sock; /* "/var/run/docker.sock"; "" disables */
	const char *podman_sock; /* "/run/podman/podman.sock"; "" disables */
	unsigned timeout_ms;     /* per API request, 0: 500 */
	/* The kubelet's /pods, for pod labels (and names where the runtime
	 * gave none): "https://HOST:10250" or NULL/"" (not asked, the
	 * default); a bearer token file read at every fetch (NULL: none); the
	 * CA file its TLS certificate is checked against (NULL: the system's).
	 * Not under @root: these are the agent's own files. */
	const char *kubelet_url, *kubelet_token_file, *kubelet_ca_file;
};

/*
 * Ask the runtime behind @id (cgroup/identity.h) about it, filling @out
 * (zeroed first; the caller releases it). Returns 1 when something was
 * found, 0 when the runtime knows nothing or there is nothing to ask
 * (no container id, no unit), -EAGAIN when a source that should know
 * could not be asked (socket present but slow or failing: try later),
 * -ENOMEM. May block for up to the socket timeout per socket.
 */
int cg_rt_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		 struct cg_rtinfo *out);

/* Copy @src's strings into @dst (zeroed first; NULL @src: defaults).
 * 0 or -ENOMEM. cg_rt_sources_release() frees what it copied. */
int cg_rt_sources_dup(struct cg_rt_sources *dst, const struct cg_rt_sources *src);
void cg_rt_sources_release(struct cg_rt_sources *s);

/*
 * A series of lookups by a one-off command: once an engine socket failed
 * (-EAGAIN), it is not asked again in the series, so a dead engine costs
 * one timeout, not one per container.
 */
struct cg_rt_series {
	struct cg_rt_sources src;
	bool docker_dead, podman_dead;
};
int cg_rt_series_lookup(struct cg_rt_series *s, const struct cg_identity *id,
			struct cg_rtinfo *out);

/*
 * The cache: lookups by cgroup path on one worker thread. cg_rtcache_want()
 * queues a path and returns at once; cg_rtcache_get() copies what is known.
 * A path is looked up when first wanted, again when wanted after
 * @refresh_ms (a container renamed), and after a failure (-EAGAIN) with
 * backoff from 1 s doubling to 60 s. At most @max_entries paths are kept;
 * cg_rtcache_forget() drops a removed cgroup.
 */
struct cg_rtcache;

struct cg_rtcache *cg_rtcache_new(const struct cg_rt_sources *src, size_t max_entries,
				  uint64_t refresh_ms);
/* Stops and joins the worker. Accepts NULL. */
void cg_rtcache_free(struct cg_rtcache *c);
/* Queue @path (relative to the hierarchy root) for a lookup if due. Never
 * blocks on a lookup. 0 or -errno. */
int cg_rtcache_want(struct cg_rtcache *c, const char *path);
/* Copy what is known of @path into @out (zeroed first). 1 when known,
 * 0 when the runtime answered that it knows nothing, -EAGAIN when no
 * answer came yet (never asked, queued, or failing), -ENOMEM. */
int cg_rtcache_get(struct cg_rtcache *c, const char *path, struct cg_rtinfo *out);
void cg_rtcache_forget(struct cg_rtcache *c, const char *path);
/* Lookups done so far (a test waits for it); changes on every lookup. */
uint64_t cg_rtcache_generation(struct cg_rtcache *c);
/* Wait until nothing is queued or @timeout_ms passed; 0 or -ETIMEDOUT. */
int cg_rtcache_settle(struct cg_rtcache *c, unsigned timeout_ms);

#endif
