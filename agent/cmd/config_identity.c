// SPDX-License-Identifier: MIT
/*
 * The identity: section of the agent's configuration (docs/config.md):
 * whether and where the agent asks the container runtimes about the
 * cgroups it follows, and which container labels it passes on. Labels are
 * opt-in by key, so a fleet of containers with many labels does not turn
 * into as many series.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/config.h"
#include "agent/cmd/config_internal.h"
#include "lib/strv.h"

const char *const config_identity_keys[] = {"runtimes", "root", "docker_socket", "podman_socket",
					    "timeout", "refresh", "labels", "kubelet_url",
					    "kubelet_token_file", "kubelet_ca_file", NULL};

#define MS_S 1000ull

void config_identity_defaults(struct config *c)
{
	c->identity.runtimes = true;
	c->identity.timeout_ms = 500;
	c->identity.refresh_ms = 300 * MS_S;
}

void config_identity_free(struct config *c)
{
	free(c->identity.root);
	free(c->identity.docker_socket);
	free(c->identity.podman_socket);
	free(c->identity.kubelet_url);
	free(c->identity.kubelet_token_file);
	free(c->identity.kubelet_ca_file);
	strv_free(c->identity.labels, c->identity.nlabels);
}

static int check_label_glob(struct ydoc *x, const yaml_node_t *n, const char *name, const char *v)
{
	if (!v[0] || strlen(v) > 128)
		return ydoc_fail(x, n, "%s: a label key (or glob) of 1 to 128 bytes", name);
	return 0;
}

/* kubelet_url (http:// or https://), kubelet_token_file, kubelet_ca_file. */
static int kubelet_keys(struct ydoc *x, const yaml_node_t *m, struct config *c)
{
	const yaml_node_t *v;
	int rc;

	if ((v = ydoc_get(x, m, "kubelet_url")) &&
	    (rc = ydoc_string(x, v, "identity.kubelet_url", YDOC_NULLABLE,
			      "the kubelet's URL (\"https://NODE:10250\")", &c->identity.kubelet_url)))
		return rc;
	if (c->identity.kubelet_url && strncmp(c->identity.kubelet_url, "https://", 8) &&
	    strncmp(c->identity.kubelet_url, "http://", 7))
		return ydoc_fail(x, v, "identity.kubelet_url: an http:// or https:// URL");
	if ((v = ydoc_get(x, m, "kubelet_token_file")) &&
	    (rc = ydoc_string(x, v, "identity.kubelet_token_file", YDOC_NULLABLE, "a file",
			      &c->identity.kubelet_token_file)))
		return rc;
	if ((v = ydoc_get(x, m, "kubelet_ca_file")) &&
	    (rc = ydoc_string(x, v, "identity.kubelet_ca_file", YDOC_NULLABLE, "a file",
			      &c->identity.kubelet_ca_file)))
		return rc;
	return 0;
}

int config_identity_parse(struct ydoc *x, const yaml_node_t *root, struct config *c)
{
	const yaml_node_t *m, *v;
	int rc = ydoc_section(x, root, "", "identity", config_identity_keys, &m);

	if (rc || !m)
		return rc;
	if ((v = ydoc_get(x, m, "runtimes")) &&
	    (rc = ydoc_bool(x, v, "identity.runtimes", &c->identity.runtimes)))
		return rc;
	if ((v = ydoc_get(x, m, "root")) &&
	    (rc = ydoc_string(x, v, "identity.root", YDOC_NULLABLE, "a directory",
			      &c->identity.root)))
		return rc;
	if (c->identity.root && c->identity.root[0] != '/')
		return ydoc_fail(x, v, "identity.root: must be an absolute path");
	if ((v = ydoc_get(x, m, "docker_socket")) &&
	    (rc = ydoc_string(x, v, "identity.docker_socket", YDOC_NULLABLE | YDOC_EMPTY_OK,
			      "a socket path", &c->identity.docker_socket)))
		return rc;
	if ((v = ydoc_get(x, m, "podman_socket")) &&
	    (rc = ydoc_string(x, v, "identity.podman_socket", YDOC_NULLABLE | YDOC_EMPTY_OK,
			      "a socket path", &c->identity.podman_socket)))
		return rc;
	if ((v = ydoc_get(x, m, "timeout")) &&
	    (rc = ydoc_duration_ms(x, v, "identity.timeout", 1, 60 * MS_S,
				   &c->identity.timeout_ms)))
		return rc;
	if ((v = ydoc_get(x, m, "refresh")) &&
	    (rc = ydoc_duration_ms(x, v, "identity.refresh", MS_S, 86400 * MS_S,
				   &c->identity.refresh_ms)))
		return rc;
	if ((rc = kubelet_keys(x, m, c)))
		return rc;
	if ((v = ydoc_get(x, m, "labels")) &&
	    (rc = ydoc_list(x, v, "identity.labels", CONFIG_MAX_LABELS, check_label_glob,
			    "[\"app\", \"team\"]", &c->identity.labels, &c->identity.nlabels)))
		return rc;
	return 0;
}

/* Lexical, as every config check: KEY=VALUE terms joined by ',', each KEY
 * one of cgroup/target.h's identity keys, each VALUE non-empty. */
const char *config_identity_check(const char *v)
{
	static const char *const keys[] = { "container", "image", "pod", "namespace", "unit" };
	const char *p = v;

	for (;;) {
		size_t len = strcspn(p, ","), klen = strcspn(p, "=,");
		bool known = false;

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			known |= strlen(keys[i]) == klen && !memcmp(keys[i], p, klen);
		if (!known || klen + 1 >= len)
			return "is neither a path glob (\"/system.slice/*\") nor identity terms "
			       "(container=, image=, pod=, namespace=, unit=, joined by ',')";
		p += len;
		if (!*p)
			return NULL;
		p++;
	}
}

bool config_label_wanted(const struct config *cfg, const char *key)
{
	for (size_t i = 0; i < cfg->identity.nlabels; i++)
		if (fnmatch(cfg->identity.labels[i], key, 0) == 0)
			return true;
	return false;
}
