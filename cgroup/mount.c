// SPDX-License-Identifier: MIT
#include "cgroup/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/slurp.h"
#include "lib/grow.h"

/* mountinfo read at most: ~200 bytes a mount, so some 300,000 mounts. */
#define MOUNTINFO_MAX (64u << 20)

struct cg_mounts {
	struct cg_mount *v;
	size_t n, cap;
};

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *unescape(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			*o++ = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/* Split @line into at most @max whitespace-separated fields. */
static size_t split_fields(char *line, char **f, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *t = strtok_r(line, " \t", &save); t && n < max; t = strtok_r(NULL, " \t", &save))
		f[n++] = t;
	return n;
}

static int add_mount(struct cg_mounts *m, char **f, size_t nf, size_t sep)
{
	/* After the '-' separator: fstype, source, super options. */
	const char *fstype = f[sep + 1];
	const char *super = sep + 3 < nf ? f[sep + 3] : "";
	struct cg_mount cm = {0};
	int version;

	if (!strcmp(fstype, "cgroup2"))
		version = 2;
	else if (!strcmp(fstype, "cgroup"))
		version = 1;
	else
		return 0;

	if (GROW_ARRAY(m->v, m->n, m->cap, 16) < 0)
		return -ENOMEM;
	cm.version = version;
	cm.root = unescape(f[3], strlen(f[3]));
	cm.path = unescape(f[4], strlen(f[4]));
	if (version == 1)
		cm.controllers = strdup(super);
	if (!cm.root || !cm.path || (version == 1 && !cm.controllers)) {
		free(cm.root);
		free(cm.path);
		free(cm.controllers);
		return -ENOMEM;
	}
	m->v[m->n++] = cm;
	return 0;
}

struct cg_mounts *cg_mounts_parse(const char *text)
{
	struct cg_mounts *m = calloc(1, sizeof(*m));
	char *copy = text ? strdup(text) : NULL;
	char *save = NULL;
	int err = 0;

	if (!m || !copy) {
		err = text ? ENOMEM : EINVAL;
		goto fail;
	}
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[32];
		size_t nf = split_fields(line, f, 32), sep;

		/* id parent maj:min root mountpoint opts [optional...] - fstype src super */
		for (sep = 6; sep < nf && strcmp(f[sep], "-"); sep++)
			;
		if (nf < 7 || sep + 2 >= nf)
			continue;
		if (add_mount(m, f, nf, sep) < 0) {
			err = ENOMEM;
			goto fail;
		}
	}
	free(copy);
	return m;
fail:
	free(copy);
	cg_mounts_free(m);
	errno = err;
	return NULL;
}

struct cg_mounts *cg_mounts_read(const char *mountinfo_path)
{
	struct cg_mounts *m;
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
	m = cg_mounts_parse(text);
	err = errno;
	free(text);
	errno = err;
	return m;
}

void cg_mounts_free(struct cg_mounts *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].path);
		free(m->v[i].root);
		free(m->v[i].controllers);
	}
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
