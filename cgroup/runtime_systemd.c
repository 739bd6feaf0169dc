// SPDX-License-Identifier: MIT
/*
 * systemd units: Description= from the unit file, read from the unit
 * directories in systemd's order of precedence (/etc over /run over /lib),
 * without D-Bus: the agent must not depend on a running systemd, and there
 * is none in many containers. A template instance ("postgresql@15-main
 * .service") falls back to its template ("postgresql@.service"), with %i
 * and %I replaced by the instance name, the specifiers descriptions use
 * most. Drop-in overrides of Description= are not read.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/runtime_internal.h"
#include "lib/rootfs.h"
#include "lib/slurp.h"

#define UNIT_FILE_MAX (1u << 20)

static const char *const unit_dirs[] = {
	"/etc/systemd/system",	   "/run/systemd/transient", "/run/systemd/system",
	"/run/systemd/generator", "/usr/lib/systemd/system", "/lib/systemd/system",
};

/* The Description= of the [Unit] section of @text (NUL-terminated), as a
 * pointer into @text and a length; false when absent. */
static bool find_description(const char *text, const char **val, size_t *vlen)
{
	bool in_unit = false;
	const char *p = text;

	while (*p) {
		size_t len = strcspn(p, "\n");
		const char *line = p;

		p += len + (p[len] == '\n');
		while (len && (*line == ' ' || *line == '\t'))
			line++, len--;
		if (len && line[0] == '[') {
			in_unit = len >= 6 && memcmp(line, "[Unit]", 6) == 0;
			continue;
		}
		if (!in_unit || len < 12 || memcmp(line, "Description", 11) != 0)
			continue;
		line += 11, len -= 11;
		while (len && (*line == ' ' || *line == '\t'))
			line++, len--;
		if (!len || *line != '=')
			continue;
		line++, len--;
		while (len && (*line == ' ' || *line == '\t'))
			line++, len--;
		while (len && (line[len - 1] == ' ' || line[len - 1] == '\r'))
			len--;
		*val = line;
		*vlen = len;
	}
	return *val != NULL;
}

/* @val with %i/%I replaced by @inst and %% by %; other specifiers kept. */
static char *expand(const char *val, size_t vlen, const char *inst)
{
	size_t ilen = inst ? strlen(inst) : 0;
	size_t cap = vlen + 1, n = 0;
	char *out;

	for (size_t i = 0; i + 1 < vlen; i++)
		if (val[i] == '%' && (val[i + 1] == 'i' || val[i + 1] == 'I'))
			cap += ilen;
	out = malloc(cap);
	if (!out)
		return NULL;
	for (size_t i = 0; i < vlen; i++) {
		if (val[i] == '%' && i + 1 < vlen &&
		    (val[i + 1] == 'i' || val[i + 1] == 'I' || val[i + 1] == '%')) {
			if (val[i + 1] == '%') {
				out[n++] = '%';
			} else if (ilen) {
				memcpy(out + n, inst, ilen);
				n += ilen;
			}
			i++;
			continue;
		}
		out[n++] = val[i];
	}
	out[n] = '\0';
	return out;
}

static int unit_file(const struct cg_rt_sources *src, const char *name, const char *inst,
		     struct cg_rtinfo *out)
{
	char path[4096], full[4096];

	for (size_t i = 0; i < sizeof(unit_dirs) / sizeof(unit_dirs[0]); i++) {
		const char *val = NULL;
		char *buf = NULL, *desc;
		size_t len, vlen = 0;
		int fd, ret;

		if (snprintf(path, sizeof(path), "%s/%s", unit_dirs[i], name) >= (int)sizeof(path) ||
		    rt_path(src, path, full, sizeof(full)) < 0)
			return 0;
		fd = rootfs_open("", full, UNIT_FILE_MAX, NULL);
		if (fd < 0)
			continue;
		ret = slurp_fd(fd, UNIT_FILE_MAX, &buf, &len, NULL);
		close(fd);
		if (ret < 0)
			return ret;
		desc = NULL;
		if (strlen(buf) == len && find_description(buf, &val, &vlen)) {
			desc = expand(val, vlen, inst);
			if (!desc)
				ret = -ENOMEM;
		}
		free(buf);
		if (ret == 0 && desc)
			ret = rt_set(&out->description, desc);
		free(desc);
		if (ret < 0)
			return ret;
		/* the first file found is the unit, described or not */
		return out->description ? 1 : 0;
	}
	return -ENOENT;
}

int rt_systemd_lookup(const struct cg_rt_sources *src, const struct cg_identity *id,
		      struct cg_rtinfo *out)
{
	const char *unit = id->unit, *at, *dot;
	char tmpl[CG_UNIT_MAX + 1], inst[CG_UNIT_MAX + 1];
	int ret;

	if (strchr(unit, '/') || unit[0] == '.')
		return 0;
	at = strchr(unit, '@');
	dot = strrchr(unit, '.');
	inst[0] = '\0';
	if (at && dot > at)
		snprintf(inst, sizeof(inst), "%.*s", (int)(dot - at - 1), at + 1);
	ret = unit_file(src, unit, inst, out);
	if (ret == -ENOENT && at && dot > at + 1) {
		snprintf(tmpl, sizeof(tmpl), "%.*s%s", (int)(at - unit + 1), unit, dot);
		ret = unit_file(src, tmpl, inst, out);
	}
	if (ret == 1)
		out->source = "systemd-unit";
	return ret == -ENOENT ? 0 : ret;
}
