/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_CGROUP_RUNTIME_INTERNAL_H
#define CGPERF_CGROUP_RUNTIME_INTERNAL_H

/*
 * Shared by the runtime-identity sources (runtime_*.c): the capped JSON
 * reader, the capped setters, and the Kubernetes key mapping that both
 * docker labels and CRI annotations use. Not for other modules.
 */

#include <json-c/json.h>

#include "cgroup/runtime.h"

/* Parse @len bytes at @buf as one JSON value, at most CG_RT_JSON_DEPTH deep.
 * 0 with *@out owned by the caller (json_object_put()), -EBADMSG. */
int rt_json_parse(const char *buf, size_t len, struct json_object **out);
/* The same, at most @depth deep. */
int rt_json_parse_depth(const char *buf, size_t len, int depth, struct json_object **out);
/* Read and parse @path under @src's root, at most @cap bytes (larger files:
 * -EFBIG), refusing what lib/rootfs refuses. 0 or -errno. */
int rt_json_file(const struct cg_rt_sources *src, const char *path, size_t cap,
		 struct json_object **out);
/* "@src->root@path" into @buf; -ENAMETOOLONG. */
int rt_path(const struct cg_rt_sources *src, const char *path, char *buf, size_t len);

/* Member @key of object @o as a string, NULL when absent or not a string. */
const char *rt_json_str(struct json_object *o, const char *key);

/* *@dst = copy of @s when *@dst is NULL and @s is non-empty, valid UTF-8 and
 * at most CG_RT_VALUE_MAX bytes; otherwise nothing. 0 or -ENOMEM. */
int rt_set(char **dst, const char *s);
/* Add label @key=@value (dropped when over the caps or the count, or a
 * duplicate key). 0 or -ENOMEM. */
int rt_add_label(struct cg_rtinfo *ri, const char *key, const char *value);
/* Every string member of object @o as a label. 0 or -ENOMEM. */
int rt_add_labels(struct cg_rtinfo *ri, struct json_object *o);
/* Sort labels by key (after adding). */
void rt_sort_labels(struct cg_rtinfo *ri);
/* Pod name, namespace and container name from the io.kubernetes.* keys of
 * object @o (CRI annotations or dockershim labels). 0 or -ENOMEM. */
int rt_kube_keys(struct cg_rtinfo *ri, struct json_object *o);

/* An answer read by rt_http_get(), at most max bytes, NUL
 * terminated; the caller frees p. */
struct rt_buf {
	char *p;
	size_t len, cap;
	size_t max; /* cap on len; 0: CG_RT_JSON_MAX */
	bool toobig;
};

/* One GET: on unix socket @sock (NULL: TCP), checking TLS peers against
 * @ca_file (NULL: the system's), with header @auth ("Authorization: ...")
 * when not NULL, in @timeout_ms for connect and answer together. 0 with
 * the body in *@b, 1 for 404, -EFBIG, -EAGAIN (refused, slow, TLS or HTTP
 * error: may work later), -ENOMEM, -ELIBACC (libcurl cannot be loaded:
 * curlapi_error()). */
struct rt_get {
	const char *sock, *url, *ca_file, *auth;
	unsigned timeout_ms;
};
int rt_http_get(const struct rt_get *g, struct rt_buf *b);

int rt_engine_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		     struct cg_rtinfo *out);
int rt_podman_store_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
			   struct cg_rtinfo *out);
int rt_oci_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		  struct cg_rtinfo *out);
int rt_systemd_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		      struct cg_rtinfo *out);
/* The pod of @id in the kubelet's /pods (runtime_kubelet.c): its name,
 * namespace and labels added to @out where not known. 1, 0 (no kubelet
 * configured, no pod, or not listed), -EAGAIN, -ENOMEM. */
int rt_kubelet_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		      struct cg_rtinfo *out);

#endif
