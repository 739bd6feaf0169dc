// SPDX-License-Identifier: MIT
#include "cgroup/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mountinfo.h"
#include "lib/slurp.h"
#include "lib/grow.h"

/* mountinfo read at most: ~200 bytes a mount, so some 300,000 mounts. */
#define MOUNTINFO_MAX (64u << 20)

struct cg_mounts {
	struct cg_mount *v;
	size_t n, cap;
};

static int add_mount(void *ctx, const struct mountinfo_entry *e)
{
	struct cg_mounts *m = ctx;
	struct cg_mount cm = {0};
	size_t lr = strlen(e->root) + 1, lp = e->point_len + 1, lc = strlen(e->super) + 1;

	if (!strcmp(e->fstype, "cgroup2"))
		cm.version = 2;
	else if (!strcmp(e->fstype, "cgroup"))
		cm.version = 1;
	else
		return 0;
	/* one block: root, path, then (v1) controllers; freed through root */
	if (GROW_ARRAY(m->v, m->n, m->cap, 16) < 0 || !(cm.root = malloc(lr + lp + lc)))
		return -ENOMEM;
	cm.path = memcpy(cm.root + lr, e->point, lp);
	memcpy(cm.root, e->root, lr);
	if (cm.version == 1)
		cm.controllers = memcpy(cm.path + lp, e->super, lc);
	m->v[m->n++] = cm;
	return 0;
}

/* The cgroup mounts of the mountinfo text @buf, which is cut in place and
 * freed. NULL + errno. */
static struct cg_mounts *parse_buf(char *buf)
{
	struct cg_mounts *m = calloc(1, sizeof(*m));

	if (m && mountinfo_foreach(buf, add_mount, m) < 0) {
		cg_mounts_free(m);
		m = NULL;
	}
	free(buf);
	if (!m)
		errno = ENOMEM;
	return m;
}

struct cg_mounts *cg_mounts_parse(const char *text)
{
	char *copy;

	if (!text) {
		errno = EINVAL;
		return NULL;
	}
	copy = strdup(text);
	return copy ? parse_buf(copy) : NULL;
}

struct cg_mounts *cg_mounts_read(const char *mountinfo_path)
{
	char *text;
	size_t len;
	bool more;
	int err = slurp_at(AT_FDCWD, mountinfo_path, MOUNTINFO_MAX, &text, &len, &more);

	if (!err && more) {
		free(text);
		err = -EFBIG;
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	return parse_buf(text);
}

void cg_mounts_free(struct cg_mounts *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].root); /* the block of its strings */
	free(m->v);
	free(m);
}

size_t cg_mounts_count(const struct cg_mounts *m)
{
	return m ? m->n : 0;
}

const struct cg_mount *cg_mounts_get(const struct cg_mounts *m, size_t i)
{
	return m && i < m->n ? &m->v[i] : NULL;
}

const struct cg_mount *cg_mounts_v2(const struct cg_mounts *m)
{
	for (size_t i = 0; m && i < m->n; i++)
		if (m->v[i].version == 2)
			return &m->v[i];
	return NULL;
}

static bool has_option(const char *opts, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = opts; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

const struct cg_mount *cg_mounts_v1(const struct cg_mounts *m, const char *controller)
{
	for (size_t i = 0; m && i < m->n; i++)
		if (m->v[i].version == 1 && has_option(m->v[i].controllers, controller))
			return &m->v[i];
	return NULL;
}

const struct cg_mount *cg_mounts_perf(const struct cg_mounts *m)
{
	const struct cg_mount *v1 = cg_mounts_v1(m, "perf_event");

	return v1 ? v1 : cg_mounts_v2(m);
}
