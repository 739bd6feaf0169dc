// SPDX-License-Identifier: MIT
/*
 * cgroups.include / exclude: globs over cgroup paths (config.h), their check
 * when the file is read, and the choice of cgroups they make.
 */
#include <fnmatch.h>
#include <string.h>

#include "agent/cmd/config.h"
#include "cgroup/identity.h"

struct comp {
	const char *s;
	size_t n;
};

/* The next '/'-separated component at *cur; false at the end. */
static bool comp_next(const char **cur, struct comp *c)
{
	const char *p = *cur;

	while (*p == '/')
		p++;
	if (!*p) {
		*cur = p;
		return false;
	}
	c->s = p;
	c->n = strcspn(p, "/");
	*cur = p + c->n;
	return true;
}

static bool comp_is_globstar(const struct comp *c)
{
	return c->n == 2 && c->s[0] == '*' && c->s[1] == '*';
}

static bool comp_match(const struct comp *g, const struct comp *p)
{
	char gb[CONFIG_MAX_STRING + 1], pb[CONFIG_MAX_STRING + 1];

	if (g->n > CONFIG_MAX_STRING || p->n > CONFIG_MAX_STRING)
		return false;
	memcpy(gb, g->s, g->n);
	gb[g->n] = '\0';
	memcpy(pb, p->s, p->n);
	pb[p->n] = '\0';
	return fnmatch(gb, pb, 0) == 0;
}

/*
 * The wildcard matcher that backtracks only to the last star, over
 * components instead of characters: '**' is the star, any other glob
 * component matches one path component through fnmatch(). Linear in
 * (glob components x path components), whatever the number of '**'.
 */
bool config_glob_match(const char *glob, const char *path)
{
	const char *g = glob, *p = path, *star_g = NULL, *star_p = NULL;
	struct comp gc, pc;

	if (!glob || !path)
		return false;
	for (;;) {
		const char *p0 = p;

		if (!comp_next(&p, &pc))
			break;
		if (comp_next(&g, &gc)) {
			if (comp_is_globstar(&gc)) {
				star_g = g;
				star_p = p0;
				p = p0;
				continue;
			}
			if (comp_match(&gc, &pc))
				continue;
		}
		if (!star_g)
			return false;
		/* Let the last '**' take one more path component. */
		p = star_p;
		comp_next(&p, &pc);
		star_p = p;
		g = star_g;
	}
	while (comp_next(&g, &gc))
		if (!comp_is_globstar(&gc))
			return false;
	return true;
}

bool config_cgroup_wanted(const struct config *cfg, const char *path)
{
	if (!cfg || !path)
		return false;
	if (cfg->cgroups.containers_only) {
		struct cg_identity id;

		if (cg_identity_parse(path, &id) < 0 || id.runtime == CG_RT_NONE)
			return false;
	}
	/* identity items (not starting with '/') are run's, with the runtime's answer */
	for (size_t i = 0; i < cfg->cgroups.nexclude; i++)
		if (cfg->cgroups.exclude[i][0] == '/' &&
		    config_glob_match(cfg->cgroups.exclude[i], path))
			return false;
	for (size_t i = 0; i < cfg->cgroups.ninclude; i++)
		if (cfg->cgroups.include[i][0] == '/' &&
		    config_glob_match(cfg->cgroups.include[i], path))
			return true;
	return false;
}

const char *config_glob_check(const char *v)
{
	const char *p = v;
	struct comp c;

	if (v[0] != '/' && strchr(v, '='))
		return config_identity_check(v);
	if (v[0] != '/')
		return "must start with '/' (cgroup paths are from the hierarchy's root: "
		       "\"/system.slice/*.service\")";
	if (strstr(v, "//") || (v[1] && v[strlen(v) - 1] == '/'))
		return "has an empty path component";
	while (comp_next(&p, &c)) {
		for (size_t i = 0; i < c.n; i++) {
			if (c.s[i] == '\\') {
				i++; /* the next character is literal */
			} else if (c.s[i] == '[') {
				/* fnmatch: a ']' right after '[' or '[!' is part of the set */
				size_t j =
					i + 1 +
					(i + 1 < c.n && (c.s[i + 1] == '!' || c.s[i + 1] == '^'));

				j += j < c.n && c.s[j] == ']';
				while (j < c.n && c.s[j] != ']')
					j++;
				if (j >= c.n)
					return "has '[' without ']'";
				i = j;
			}
		}
	}
	return NULL;
}
