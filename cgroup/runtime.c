// SPDX-License-Identifier: MIT
/*
 * Runtime identity: the dispatch from a parsed cgroup identity to the
 * source that knows about it, and the capped helpers every source shares.
 *
 * Which source answers is decided by the runtime the path names, never by
 * probing all of them: a docker-<id>.scope is asked of docker.sock, a
 * libpod-<id> of podman.sock and then podman's own store, a cri-containerd
 * or crio container of its OCI bundle, a unit of its unit file. A Kubernetes
 * container on docker (dockershim, cri-dockerd) carries the pod in its
 * labels, so the engine's answer goes through the same io.kubernetes.* key
 * mapping as the CRI annotations.
 *
 * Everything that comes back is text someone else chose. A string is kept
 * only whole: valid UTF-8, no NUL inside, at most CG_RT_VALUE_MAX bytes;
 * a longer name is dropped rather than cut, since a cut name names
 * something else. Labels beyond CG_RT_LABELS_MAX are dropped.
 */

#include "cgroup/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/runtime_internal.h"
#include "lib/rootfs.h"
#include "lib/slurp.h"
#include "lib/strv.h"
#include "lib/utf8.h"

/* The string fields of a cg_rtinfo, which release, copy and empty treat
 * alike (the labels apart). */
static const size_t rt_string_off[] = {
	offsetof(struct cg_rtinfo, name),
	offsetof(struct cg_rtinfo, image),
	offsetof(struct cg_rtinfo, pod_name),
	offsetof(struct cg_rtinfo, pod_namespace),
	offsetof(struct cg_rtinfo, description),
};
#define RT_NSTRINGS (sizeof(rt_string_off) / sizeof(rt_string_off[0]))

static char **rt_string(struct cg_rtinfo *ri, size_t k)
{
	return (char **)((char *)ri + rt_string_off[k]);
}

static const char *rt_string_of(const struct cg_rtinfo *ri, size_t k)
{
	return *(char *const *)((const char *)ri + rt_string_off[k]);
}

void cg_rtinfo_release(struct cg_rtinfo *ri)
{
	if (!ri)
		return;
	for (size_t k = 0; k < RT_NSTRINGS; k++)
		free(*rt_string(ri, k));
	for (size_t i = 0; i < ri->nlabels; i++)
		free(ri->labels[i].key); /* the block of key and value */
	free(ri->labels);
	memset(ri, 0, sizeof(*ri));
}

/* @l becomes a copy of @key and @value, one block freed through key. */
static int label_set(struct cg_rtlabel *l, const char *key, const char *value)
{
	size_t lk = strlen(key) + 1, lv = strlen(value) + 1;

	l->key = malloc(lk + lv);
	if (!l->key)
		return -ENOMEM;
	memcpy(l->key, key, lk);
	l->value = memcpy(l->key + lk, value, lv);
	return 0;
}

int cg_rtinfo_copy(struct cg_rtinfo *dst, const struct cg_rtinfo *src)
{
	memset(dst, 0, sizeof(*dst));
	for (size_t k = 0; k < RT_NSTRINGS; k++)
		if (strv_set(rt_string(dst, k), rt_string_of(src, k)) < 0)
			goto oom;
	if (src->nlabels) {
		dst->labels = calloc(src->nlabels, sizeof(*dst->labels));
		if (!dst->labels)
			goto oom;
		for (size_t i = 0; i < src->nlabels; i++) {
			if (label_set(&dst->labels[i], src->labels[i].key, src->labels[i].value) < 0)
				goto oom;
			dst->nlabels++;
		}
	}
	dst->source = src->source;
	dst->partial = src->partial;
	return 0;
oom:
	cg_rtinfo_release(dst);
	return -ENOMEM;
}

const char *cg_rtinfo_label(const struct cg_rtinfo *ri, const char *key)
{
	for (size_t i = 0; ri && key && i < ri->nlabels; i++)
		if (strcmp(ri->labels[i].key, key) == 0)
			return ri->labels[i].value;
	return NULL;
}

bool cg_rtinfo_empty(const struct cg_rtinfo *ri)
{
	for (size_t k = 0; k < RT_NSTRINGS; k++)
		if (rt_string_of(ri, k))
			return false;
	return !ri->nlabels;
}

int cg_rtinfo_display(const struct cg_rtinfo *ri, char *buf, size_t len)
{
	const char *parts[3] = { ri->pod_namespace, ri->pod_name, ri->name };
	size_t n = 0;
	int want = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < 3; i++) {
		int r;

		if (!parts[i])
			continue;
		r = snprintf(len > n ? buf + n : NULL, len > n ? len - n : 0, "%s%s",
			     want ? "/" : "", parts[i]);
		if (r < 0)
			return r;
		want += r;
		n = (size_t)want < len ? (size_t)want : len;
	}
	return want;
}

static bool acceptable(const char *s, size_t cap)
{
	size_t n;

	if (!s)
		return false;
	n = strnlen(s, cap + 1);
	return n > 0 && n <= cap && utf8_valid(s, n) == n;
}

int rt_set(char **dst, const char *s)
{
	if (*dst || !acceptable(s, CG_RT_VALUE_MAX))
		return 0;
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

int rt_add_label(struct cg_rtinfo *ri, const char *key, const char *value)
{
	struct cg_rtlabel *nl;

	if (ri->nlabels >= CG_RT_LABELS_MAX || !acceptable(key, CG_RT_KEY_MAX) ||
	    (value[0] && !acceptable(value, CG_RT_VALUE_MAX)) || cg_rtinfo_label(ri, key))
		return 0;
	nl = reallocarray(ri->labels, ri->nlabels + 1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	ri->labels = nl;
	if (label_set(&nl[ri->nlabels], key, value) < 0)
		return -ENOMEM;
	ri->nlabels++;
	return 0;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cg_rtlabel *)a)->key, ((const struct cg_rtlabel *)b)->key);
}

void rt_sort_labels(struct cg_rtinfo *ri)
{
	if (ri->nlabels > 1)
		qsort(ri->labels, ri->nlabels, sizeof(*ri->labels), label_cmp);
}

/* A string member's value, or NULL when absent, not a string or holding NUL. */
const char *rt_json_str(struct json_object *o, const char *key)
{
	struct json_object *v;
	const char *s;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	s = json_object_get_string(v);
	if (!s || strlen(s) != (size_t)json_object_get_string_len(v))
		return NULL;
	return s;
}

int rt_add_labels(struct cg_rtinfo *ri, struct json_object *o)
{
	if (!o || !json_object_is_type(o, json_type_object))
		return 0;
	json_object_object_foreach(o, key, val)
	{
		const char *s;
		int ret;

		if (!json_object_is_type(val, json_type_string))
			continue;
		s = json_object_get_string(val);
		if (strlen(s) != (size_t)json_object_get_string_len(val))
			continue;
		ret = rt_add_label(ri, key, s);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * The keys as the runtimes write them: containerd's CRI plugin
 * (io.kubernetes.cri.*), CRI-O and dockershim (io.kubernetes.pod.*,
 * io.kubernetes.container.name). A sandbox (pause) container has a pod
 * but no container name of its own.
 */
int rt_kube_keys(struct cg_rtinfo *ri, struct json_object *o)
{
	static const char *const pod[] = { "io.kubernetes.cri.sandbox-name",
					   "io.kubernetes.pod.name" };
	static const char *const ns[] = { "io.kubernetes.cri.sandbox-namespace",
					  "io.kubernetes.pod.namespace" };
	static const char *const ctr[] = { "io.kubernetes.cri.container-name",
					   "io.kubernetes.container.name" };
	static const char *const img[] = { "io.kubernetes.cri.image-name",
					   "io.kubernetes.cri-o.ImageName" };
	const char *type = rt_json_str(o, "io.kubernetes.cri.container-type");
	bool sandbox;

	if (!type)
		type = rt_json_str(o, "io.kubernetes.cri-o.ContainerType");
	sandbox = type && strcmp(type, "sandbox") == 0;
	for (size_t i = 0; i < 2; i++) {
		if (rt_set(&ri->pod_name, rt_json_str(o, pod[i])) ||
		    rt_set(&ri->pod_namespace, rt_json_str(o, ns[i])) ||
		    rt_set(&ri->image, rt_json_str(o, img[i])))
			return -ENOMEM;
		/* dockershim names the pause container "POD" */
		if (!sandbox) {
			const char *c = rt_json_str(o, ctr[i]);

			if (c && strcmp(c, "POD") != 0 && rt_set(&ri->name, c))
				return -ENOMEM;
		}
	}
	return 0;
}

int rt_json_parse(const char *buf, size_t len, struct json_object **out)
{
	return rt_json_parse_depth(buf, len, CG_RT_JSON_DEPTH, out);
}

int rt_json_parse_depth(const char *buf, size_t len, int depth, struct json_object **out)
{
	struct json_tokener *tok;
	struct json_object *o;
	int ret = 0;

	if (len > CG_RT_STORE_MAX)
		return -EFBIG;
	tok = json_tokener_new_ex(depth);
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, buf, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		ret = -EBADMSG;
		goto out;
	}
	/* trailing garbage after the value */
	if ((size_t)json_tokener_get_parse_end(tok) < len &&
	    strspn(buf + json_tokener_get_parse_end(tok), " \t\r\n") !=
		    len - json_tokener_get_parse_end(tok)) {
		json_object_put(o);
		ret = -EBADMSG;
		goto out;
	}
	*out = o;
out:
	json_tokener_free(tok);
	return ret;
}

int rt_path(const struct cg_rt_sources *src, const char *path, char *buf, size_t len)
{
	const char *root = src && src->root ? src->root : "";
	int n = snprintf(buf, len, "%s%s", root, path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rt_json_file(const struct cg_rt_sources *src, const char *path, size_t cap,
		 struct json_object **out)
{
	char full[4096];
	char *buf = NULL;
	size_t len;
	int fd, ret;

	ret = rt_path(src, path, full, sizeof(full));
	if (ret < 0)
		return ret;
	fd = rootfs_open("", full, cap, NULL);
	if (fd < 0)
		return fd;
	ret = slurp_fd(fd, cap, &buf, &len, NULL);
	close(fd);
	if (ret < 0)
		return ret;
	ret = rt_json_parse(buf, len, out);
	free(buf);
	return ret;
}

static int dup_opt(const char **dst, const char *s)
{
	*dst = s ? strdup(s) : NULL;
	return s && !*dst ? -ENOMEM : 0;
}

int cg_rt_sources_dup(struct cg_rt_sources *dst, const struct cg_rt_sources *src)
{
	memset(dst, 0, sizeof(*dst));
	if (!src)
		return 0;
	dst->timeout_ms = src->timeout_ms;
	if (dup_opt(&dst->root, src->root) || dup_opt(&dst->docker_sock, src->docker_sock) ||
	    dup_opt(&dst->podman_sock, src->podman_sock) ||
	    dup_opt(&dst->kubelet_url, src->kubelet_url) ||
	    dup_opt(&dst->kubelet_token_file, src->kubelet_token_file) ||
	    dup_opt(&dst->kubelet_ca_file, src->kubelet_ca_file)) {
		cg_rt_sources_release(dst);
		return -ENOMEM;
	}
	return 0;
}

void cg_rt_sources_release(struct cg_rt_sources *s)
{
	if (!s)
		return;
	free((char *)s->root);
	free((char *)s->docker_sock);
	free((char *)s->podman_sock);
	free((char *)s->kubelet_url);
	free((char *)s->kubelet_token_file);
	free((char *)s->kubelet_ca_file);
	memset(s, 0, sizeof(*s));
}

int cg_rt_series_lookup(struct cg_rt_series *s, const struct cg_identity *id,
			struct cg_rtinfo *out)
{
	struct cg_rt_sources src = s->src;
	int ret;

	if (s->docker_dead)
		src.docker_sock = "";
	if (s->podman_dead)
		src.podman_sock = "";
	ret = cg_rt_lookup(&src, id, out);
	if (ret == -EAGAIN) {
		s->docker_dead |= id->runtime == CG_RT_DOCKER;
		s->podman_dead |= id->runtime == CG_RT_PODMAN;
	}
	return ret;
}

int cg_rt_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		 struct cg_rtinfo *out)
{
	int ret = 0;

	if (!id || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (id->container_id[0]) {
		switch (id->runtime) {
		case CG_RT_DOCKER:
			ret = rt_engine_lookup(src, id, out);
			break;
		case CG_RT_PODMAN:
			ret = rt_engine_lookup(src, id, out);
			/* no API service: the store knows name and image */
			if (ret <= 0) {
				bool api_failed = ret == -EAGAIN;
				int r2 = rt_podman_store_lookup(src, id, out);

				if (r2 != 0)
					ret = r2;
				/* the labels come from the API only: ask it again */
				out->partial = api_failed && ret == 1;
			}
			break;
		case CG_RT_CONTAINERD:
		case CG_RT_CRIO:
			ret = rt_oci_lookup(src, id, out);
			break;
		default:
			break;
		}
	} else if (id->unit[0] && !id->container_name[0]) {
		ret = rt_systemd_lookup(src, id, out);
	}
	if (id->pod_uid[0] && ret != -ENOMEM) {
		/* the pod's labels after the container's: theirs win a clash */
		int r2 = rt_kubelet_lookup(src, id, out);

		if (r2 == -ENOMEM || (r2 == -EAGAIN && ret >= 0 && cg_rtinfo_empty(out)))
			ret = r2;
		else if (r2 == 1 && ret >= 0)
			ret = 1;
	}
	if (ret < 0 && ret != -EAGAIN && ret != -ENOMEM)
		ret = 0; /* malformed or absent state: nothing known */
	if (ret < 0) {
		if (ret == -ENOMEM || cg_rtinfo_empty(out)) {
			cg_rtinfo_release(out);
			return ret;
		}
		ret = 1; /* the store answered where the API could not */
	}
	rt_sort_labels(out);
	if (cg_rtinfo_empty(out)) {
		cg_rtinfo_release(out);
		return 0;
	}
	return 1;
}
