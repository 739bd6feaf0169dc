// SPDX-License-Identifier: MIT
/*
 * Pod labels from the kubelet: GET https://NODE:10250/pods, the PodList of
 * the pods the kubelet runs on this node, each with metadata.uid, .name,
 * .namespace and .labels. The CRI runtimes' annotations name a pod but do
 * not carry its labels; the kubelet has them, behind TLS and a bearer
 * token (a service account's, with RBAC on nodes/proxy; see
 * packaging/kubernetes/ and docs/deploy.md).
 *
 * One list serves every container of the node, so it is fetched once and
 * kept for KUBELET_TTL_NS, in one process-wide slot under a mutex (the
 * cache's worker and a one-off command both come here); a pod not in it
 * makes one fetch again, at most every KUBELET_MISS_NS, since a new pod's
 * cgroups appear as the kubelet starts it. A fetch that fails (kubelet
 * down, TLS refused, 401) is not tried again for KUBELET_BACKOFF_NS, so a
 * dead kubelet costs one timeout per backoff, not one per container.
 *
 * The list can be large (managedFields, specs): up to CG_RT_STORE_MAX
 * bytes and KUBELET_JSON_DEPTH deep are read; the token file up to
 * KUBELET_TOKEN_MAX bytes, read at every fetch (projected tokens rotate).
 * A pod UID matches with or without dashes, in any case (static pods'
 * UIDs are 32 hex digits).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/runtime_internal.h"
#include "lib/clock.h"
#include "lib/slurp.h"

#define KUBELET_TTL_NS (30ull * 1000000000ull)
#define KUBELET_MISS_NS (1ull * 1000000000ull)
#define KUBELET_BACKOFF_NS (5ull * 1000000000ull)
#define KUBELET_TOKEN_MAX 16384
#define KUBELET_JSON_DEPTH 64
#define KUBELET_TIMEOUT_MS 2000

static struct {
	pthread_mutex_t mu;
	char *url;                /* the kubelet the list came from */
	struct json_object *list; /* its PodList, or NULL */
	uint64_t fetched_ns, failed_ns;
} kube = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* "Authorization: Bearer TOKEN" from @path into *@out; NULL @path: none.
 * 0, -EINVAL (empty or not one printable line), -errno. */
static int bearer(const char *path, char **out)
{
	static const char head[] = "Authorization: Bearer ";
	char *tok = NULL;
	size_t len;
	int ret;

	*out = NULL;
	if (!path || !path[0])
		return 0;
	ret = slurp_at(AT_FDCWD, path, KUBELET_TOKEN_MAX, &tok, &len, NULL);
	if (ret < 0)
		return ret;
	while (len && isspace((unsigned char)tok[len - 1]))
		len--;
	for (size_t i = 0; i < len; i++)
		if (tok[i] < 0x21 || tok[i] > 0x7e)
			len = 0;
	if (!len) {
		free(tok);
		return -EINVAL;
	}
	*out = malloc(sizeof(head) + len);
	if (*out) {
		memcpy(*out, head, sizeof(head) - 1);
		memcpy(*out + sizeof(head) - 1, tok, len);
		(*out)[sizeof(head) - 1 + len] = '\0';
	}
	free(tok);
	return *out ? 0 : -ENOMEM;
}

/* Fetch the list into the slot (locked). 0, -EAGAIN, -ENOMEM. */
static int fetch(const struct cg_rt_sources *src, uint64_t now)
{
	struct rt_buf b = { .max = CG_RT_STORE_MAX };
	struct json_object *list = NULL;
	char url[2048], *auth = NULL;
	size_t ulen = strlen(src->kubelet_url);
	const char *ca = src->kubelet_ca_file && src->kubelet_ca_file[0] ? src->kubelet_ca_file : NULL;
	unsigned timeout = src->timeout_ms > KUBELET_TIMEOUT_MS ? src->timeout_ms : KUBELET_TIMEOUT_MS;
	int ret;

	while (ulen && src->kubelet_url[ulen - 1] == '/')
		ulen--;
	if (snprintf(url, sizeof(url), "%.*s/pods", (int)ulen, src->kubelet_url) >=
	    (int)sizeof(url))
		return -EAGAIN; /* a configuration error: looks like a dead kubelet */
	ret = bearer(src->kubelet_token_file, &auth);
	if (ret == 0)
		ret = rt_http_get(&(struct rt_get){ .url = url, .ca_file = ca, .auth = auth,
						    .timeout_ms = timeout },
				  &b);
	if (ret == 0)
		ret = rt_json_parse_depth(b.p ? b.p : "", b.len, KUBELET_JSON_DEPTH, &list);
	free(auth);
	free(b.p);
	if (ret == -ENOMEM)
		return ret;
	if (ret != 0) {
		kube.failed_ns = now;
		return -EAGAIN;
	}
	json_object_put(kube.list);
	kube.list = list;
	kube.fetched_ns = now;
	if (!kube.url || strcmp(kube.url, src->kubelet_url)) {
		free(kube.url);
		kube.url = strdup(src->kubelet_url);
		if (!kube.url)
			return -ENOMEM;
	}
	return 0;
}

/* Whether UIDs @a and @b are the same, dashes and case aside. */
static bool same_uid(const char *a, const char *b)
{
	for (;;) {
		while (*a == '-')
			a++;
		while (*b == '-')
			b++;
		if (!*a || !*b)
			return !*a && !*b;
		if (tolower((unsigned char)*a++) != tolower((unsigned char)*b++))
			return false;
	}
}

/* The metadata object of pod @uid in the list, or NULL (locked). */
static struct json_object *find_pod(const char *uid)
{
	struct json_object *items;

	if (!kube.list || !json_object_object_get_ex(kube.list, "items", &items) ||
	    !json_object_is_type(items, json_type_array))
		return NULL;
	for (size_t i = 0, n = json_object_array_length(items); i < n; i++) {
		struct json_object *meta;
		const char *u;

		if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "metadata",
					       &meta))
			continue;
		u = rt_json_str(meta, "uid");
		if (u && same_uid(u, uid))
			return meta;
	}
	return NULL;
}

/* The pod of @uid, fetching as the essay says (locked). 1, 0, -errno. */
static int pod_meta(const struct cg_rt_sources *src, const char *uid, struct json_object **meta)
{
	uint64_t now = clock_mono_ns();
	bool mine = kube.url && !strcmp(kube.url, src->kubelet_url);
	bool fresh = mine && kube.list && now - kube.fetched_ns < KUBELET_TTL_NS;
	int ret;

	if (!fresh || !(*meta = find_pod(uid))) {
		if (kube.failed_ns && now - kube.failed_ns < KUBELET_BACKOFF_NS)
			return -EAGAIN;
		if (fresh && now - kube.fetched_ns < KUBELET_MISS_NS)
			return 0; /* just fetched: the pod is not the kubelet's */
		if ((ret = fetch(src, now)) < 0)
			return ret;
		*meta = find_pod(uid);
	}
	return *meta != NULL;
}

int rt_kubelet_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		      struct cg_rtinfo *out)
{
	struct json_object *meta = NULL, *labels = NULL;
	int ret;

	if (!src || !src->kubelet_url || !src->kubelet_url[0] || !id->pod_uid[0])
		return 0;
	pthread_mutex_lock(&kube.mu);
	ret = pod_meta(src, id->pod_uid, &meta);
	if (ret == 1) {
		json_object_object_get_ex(meta, "labels", &labels);
		if (rt_set(&out->pod_name, rt_json_str(meta, "name")) < 0 ||
		    rt_set(&out->pod_namespace, rt_json_str(meta, "namespace")) < 0 ||
		    rt_add_labels(out, labels) < 0)
			ret = -ENOMEM;
		else if (!out->source)
			out->source = "kubelet";
	}
	pthread_mutex_unlock(&kube.mu);
	return ret;
}
