// SPDX-License-Identifier: MIT
/*
 * Docker and Podman: GET /containers/ID/json on the engine's unix socket
 * (Podman's API service speaks Docker's), and podman's own store when its
 * API service is not running.
 *
 * The socket is asked with one libcurl request capped in time
 * (sources->timeout_ms, connect and answer together) and in bytes
 * (CG_RT_JSON_MAX). An absent socket file means the engine is not there:
 * nothing to ask, nothing to retry. A socket that refuses, stalls or
 * answers with an error means it may be there later: -EAGAIN, and the
 * cache retries with backoff. 404 means the engine does not know the id
 * (a container of another engine in the same cgroup shape).
 *
 * Podman without its API: containers/storage keeps every container in
 * overlay-containers/containers.json (under the graph root), an array of
 * {"id", "names": [...], "metadata": "<JSON text>"} whose metadata carries
 * "image-name" and "name". Labels live only in libpod's bolt database,
 * which is not read; they come from the API when it runs.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cgroup/runtime_internal.h"
#include "lib/curlapi.h"

#define ENGINE_TIMEOUT_MS 500

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct rt_buf *b = ctx;
	size_t add = size * n;
	char *np;

	if (add > (b->max ? b->max : CG_RT_JSON_MAX) - b->len) {
		b->toobig = true;
		return 0; /* aborts the transfer */
	}
	if (b->len + add + 1 > b->cap) {
		size_t ncap = b->cap ? b->cap : 4096;

		while (ncap < b->len + add + 1)
			ncap *= 2;
		np = realloc(b->p, ncap);
		if (!np)
			return 0;
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, data, add);
	b->len += add;
	b->p[b->len] = '\0';
	return add;
}

/* One setopt chain for both callers; false when one failed. */
static bool get_opts(const struct curlapi *cu, CURL *h, const struct rt_get *g, struct rt_buf *b,
		     struct curl_slist *hdr)
{
	return (!g->sock || cu->easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, g->sock) == CURLE_OK) &&
	       (!g->ca_file || cu->easy_setopt(h, CURLOPT_CAINFO, g->ca_file) == CURLE_OK) &&
	       (!hdr || cu->easy_setopt(h, CURLOPT_HTTPHEADER, hdr) == CURLE_OK) &&
	       cu->easy_setopt(h, CURLOPT_URL, g->url) == CURLE_OK &&
	       cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
	       cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
	       cu->easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)g->timeout_ms) == CURLE_OK &&
	       cu->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
	       cu->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
	       cu->easy_setopt(h, CURLOPT_WRITEDATA, b) == CURLE_OK;
}

int rt_http_get(const struct rt_get *g, struct rt_buf *b)
{
	const struct curlapi *cu = curlapi();
	struct curl_slist *hdr = NULL;
	long status = 0;
	CURLcode rc;
	CURL *h;
	int ret;

	if (!cu)
		return -ELIBACC;
	h = cu->easy_init();
	if (!h)
		return -ENOMEM;
	if (g->auth && !(hdr = cu->slist_append(NULL, g->auth))) {
		ret = -ENOMEM;
		goto out;
	}
	if (!get_opts(cu, h, g, b, hdr)) {
		ret = -ENOMEM;
		goto out;
	}
	rc = cu->easy_perform(h);
	if (rc != CURLE_OK) {
		ret = b->toobig ? -EFBIG : -EAGAIN;
		goto out;
	}
	cu->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	ret = status == 200 ? 0 : status == 404 ? 1 : -EAGAIN;
out:
	cu->slist_free_all(hdr);
	cu->easy_cleanup(h);
	return ret;
}

/* Docker's inspect document: Name, Config.Image, Config.Labels. */
static int engine_parse(struct json_object *doc, struct cg_rtinfo *out)
{
	struct json_object *cfg = NULL, *labels = NULL;
	const char *name = rt_json_str(doc, "Name");
	int ret;

	if (!json_object_is_type(doc, json_type_object))
		return -EBADMSG;
	if (name && name[0] == '/')
		name++;
	json_object_object_get_ex(doc, "Config", &cfg);
	if (cfg && json_object_is_type(cfg, json_type_object))
		json_object_object_get_ex(cfg, "Labels", &labels);
	/* Kubernetes on docker: the pod is in the labels, and the container's
	 * own name there beats dockershim's k8s_NAME_POD_NS_UID_N */
	if ((ret = rt_kube_keys(out, labels)) < 0 || (ret = rt_set(&out->name, name)) < 0 ||
	    (ret = rt_set(&out->image, rt_json_str(cfg, "Image"))) < 0 ||
	    (ret = rt_set(&out->image, rt_json_str(doc, "ImageName"))) < 0)
		return ret;
	return rt_add_labels(out, labels);
}

int rt_engine_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		     struct cg_rtinfo *out)
{
	const char *sock = id->runtime == CG_RT_DOCKER ? src->docker_sock : src->podman_sock;
	struct json_object *doc = NULL;
	struct rt_buf b = { 0 };
	char path[4096], url[128];
	struct stat st;
	int ret;

	if (!sock)
		sock = id->runtime == CG_RT_DOCKER ? "/var/run/docker.sock"
						   : "/run/podman/podman.sock";
	if (!sock[0])
		return 0;
	ret = rt_path(src, sock, path, sizeof(path));
	if (ret < 0)
		return ret;
	if (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return 0; /* no engine here */
	snprintf(url, sizeof(url), "http://localhost/containers/%s/json", id->container_id);
	ret = rt_http_get(&(struct rt_get){ .sock = path, .url = url,
					    .timeout_ms = src->timeout_ms ? src->timeout_ms
									  : ENGINE_TIMEOUT_MS },
			  &b);
	if (ret != 0)
		goto out;
	ret = rt_json_parse(b.p ? b.p : "", b.len, &doc);
	if (ret < 0)
		goto out;
	ret = engine_parse(doc, out);
	if (ret == 0)
		out->source = id->runtime == CG_RT_DOCKER ? "docker-api" : "podman-api";
	ret = ret < 0 ? ret : 1;
out:
	json_object_put(doc);
	free(b.p);
	return ret == 1 && cg_rtinfo_empty(out) ? 0 : ret;
}

/* One element of containers.json whose id is ours. */
static int store_entry(struct json_object *e, struct cg_rtinfo *out)
{
	struct json_object *names, *meta = NULL;
	const char *mtext = rt_json_str(e, "metadata");
	int ret = 0;

	if (mtext && rt_json_parse(mtext, strlen(mtext), &meta) == 0) {
		if ((ret = rt_set(&out->name, rt_json_str(meta, "name"))) < 0 ||
		    (ret = rt_set(&out->image, rt_json_str(meta, "image-name"))) < 0)
			goto out;
	}
	if (json_object_object_get_ex(e, "names", &names) &&
	    json_object_is_type(names, json_type_array) && json_object_array_length(names) > 0) {
		struct json_object *n0 = json_object_array_get_idx(names, 0);

		if (json_object_is_type(n0, json_type_string))
			ret = rt_set(&out->name, json_object_get_string(n0));
	}
out:
	json_object_put(meta);
	return ret;
}

int rt_podman_store_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
			   struct cg_rtinfo *out)
{
	struct json_object *arr = NULL;
	size_t n;
	int ret;

	ret = rt_json_file(src, "/var/lib/containers/storage/overlay-containers/containers.json",
			   CG_RT_STORE_MAX, &arr);
	if (ret < 0)
		return ret == -ENOMEM ? ret : 0;
	ret = 0;
	if (!json_object_is_type(arr, json_type_array))
		goto out;
	n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		const char *cid = rt_json_str(e, "id");

		if (!cid || strcmp(cid, id->container_id) != 0)
			continue;
		ret = store_entry(e, out);
		if (ret == 0 && !cg_rtinfo_empty(out)) {
			out->source = "podman-store";
			ret = 1;
		}
		break;
	}
out:
	json_object_put(arr);
	return ret;
}
