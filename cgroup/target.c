// SPDX-License-Identifier: MIT
/*
 * Identity terms over the process selector. The spec is split once: terms
 * whose key is one of the identity keys are kept here, everything else is
 * handed, in order, to cg_selector_parse(), which keeps its own grammar
 * and errors (a cmdline~REGEX still takes the rest of the spec, so it
 * stays last). A process then matches when the selector matches it and
 * the identity of its cgroup matches every identity term.
 *
 * The identity of a cgroup path is looked up once: the parse of the path,
 * then the runtime's answer, cached by path for the life of the target.
 */

#include "cgroup/target.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"

enum id_key { ID_CONTAINER, ID_IMAGE, ID_POD, ID_NAMESPACE, ID_UNIT };

static const char *const id_keys[] = { "container", "image", "pod", "namespace", "unit" };

struct id_term {
	enum id_key key;
	char *glob;
};

struct seen {
	struct cg_identity id;
	struct cg_rtinfo ri;
};

struct cg_target {
	struct cg_selector *sel; /* NULL: every process */
	struct id_term *terms;
	size_t nterms;
	struct cg_rt_series rt; /* owned sources */
	struct hashmap *cache; /* cgroup path -> index + 1 into seen */
	struct seen *seen;
	size_t nseen;
};

void cg_target_free(struct cg_target *t)
{
	if (!t)
		return;
	cg_selector_free(t->sel);
	for (size_t i = 0; i < t->nterms; i++)
		free(t->terms[i].glob);
	free(t->terms);
	for (size_t i = 0; i < t->nseen; i++)
		cg_rtinfo_release(&t->seen[i].ri);
	free(t->seen);
	hashmap_free(t->cache);
	cg_rt_sources_release(&t->rt.src);
	free(t);
}

static int id_key_of(const char *term, size_t klen)
{
	for (size_t i = 0; i < sizeof(id_keys) / sizeof(id_keys[0]); i++)
		if (strlen(id_keys[i]) == klen && memcmp(id_keys[i], term, klen) == 0)
			return (int)i;
	return -1;
}

/* Append the @len bytes of @s to the selector text @rest (a ',' between). */
static int rest_add(char *rest, size_t *rlen, const char *s, size_t len)
{
	if (*rlen)
		rest[(*rlen)++] = ',';
	memcpy(rest + *rlen, s, len);
	*rlen += len;
	rest[*rlen] = '\0';
	return 0;
}

static int split(struct cg_target *t, const char *spec, char *rest, char *err, size_t errlen)
{
	size_t rlen = 0;
	const char *p = spec;

	rest[0] = '\0';
	while (*p) {
		size_t len = strcspn(p, ",");
		size_t klen = strcspn(p, "=~,");
		int k = klen < len && p[klen] == '=' ? id_key_of(p, klen) : -1;

		if (klen < len && p[klen] == '~') {
			/* a regex takes the rest of the spec */
			rest_add(rest, &rlen, p, strlen(p));
			return 0;
		}
		if (k < 0) {
			rest_add(rest, &rlen, p, len);
		} else if (len == klen + 1) {
			snprintf(err, errlen, "empty value for selector key '%s'", id_keys[k]);
			return -EINVAL;
		} else {
			struct id_term *nt = reallocarray(t->terms, t->nterms + 1, sizeof(*nt));

			if (!nt)
				return -ENOMEM;
			t->terms = nt;
			nt[t->nterms].key = (enum id_key)k;
			nt[t->nterms].glob = strndup(p + klen + 1, len - klen - 1);
			if (!nt[t->nterms].glob)
				return -ENOMEM;
			t->nterms++;
		}
		p += len;
		if (*p == ',') {
			p++;
			if (!*p) {
				snprintf(err, errlen, "empty term at the end of selector");
				return -EINVAL;
			}
		}
	}
	return 0;
}

struct cg_target *cg_target_parse(const char *spec, const struct cg_rt_sources *src, char *err,
				  size_t errlen)
{
	struct cg_target *t;
	char *rest = NULL;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!spec || !*spec) {
		if (err && errlen)
			snprintf(err, errlen, "empty selector");
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	rest = malloc(strlen(spec) + 2);
	if (!t || !rest || !(t->cache = hashmap_new()) || cg_rt_sources_dup(&t->rt.src, src) < 0) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = split(t, spec, rest, err, errlen);
	if (ret < 0)
		goto fail;
	if (rest[0]) {
		t->sel = cg_selector_parse(rest, err, errlen);
		if (!t->sel) {
			ret = -errno;
			goto fail;
		}
	} else if (!t->nterms) {
		if (err && errlen)
			snprintf(err, errlen, "empty selector");
		ret = -EINVAL;
		goto fail;
	}
	free(rest);
	return t;
fail:
	free(rest);
	cg_target_free(t);
	errno = -ret;
	return NULL;
}

bool cg_target_has_identity(const struct cg_target *t)
{
	return t && t->nterms > 0;
}

static bool glob_ok(const char *glob, const char *s)
{
	return s && s[0] && fnmatch(glob, s, 0) == 0;
}

static bool term_match(const struct id_term *term, const struct cg_identity *id,
		       const struct cg_rtinfo *ri)
{
	char shortid[13];

	switch (term->key) {
	case ID_CONTAINER:
		snprintf(shortid, sizeof(shortid), "%.12s", id->container_id);
		return glob_ok(term->glob, ri ? ri->name : NULL) ||
		       glob_ok(term->glob, id->container_name) ||
		       glob_ok(term->glob, id->container_id) || glob_ok(term->glob, shortid);
	case ID_IMAGE:
		return glob_ok(term->glob, ri ? ri->image : NULL);
	case ID_POD:
		return glob_ok(term->glob, ri ? ri->pod_name : NULL) ||
		       glob_ok(term->glob, id->pod_uid);
	case ID_NAMESPACE:
		return glob_ok(term->glob, ri ? ri->pod_namespace : NULL);
	case ID_UNIT:
		return glob_ok(term->glob, id->unit);
	}
	return false;
}

bool cg_target_match_identity(const struct cg_target *t, const struct cg_identity *id,
			      const struct cg_rtinfo *ri)
{
	for (size_t i = 0; t && i < t->nterms; i++)
		if (!term_match(&t->terms[i], id, ri))
			return false;
	return true;
}

/* The identity of cgroup @path, looked up on first use; NULL when out of memory. */
static const struct seen *seen_of(struct cg_target *t, const char *path)
{
	uint64_t *slot = hashmap_slot(t->cache, path, strlen(path));
	struct seen *ns, *s;

	if (!slot)
		return NULL;
	if (*slot)
		return &t->seen[*slot - 1];
	ns = reallocarray(t->seen, t->nseen + 1, sizeof(*ns));
	if (!ns)
		return NULL;
	t->seen = ns;
	s = &ns[t->nseen];
	cg_identity_parse(path, &s->id);
	cg_rt_series_lookup(&t->rt, &s->id, &s->ri);
	*slot = ++t->nseen;
	return s;
}

bool cg_target_match(struct cg_target *t, const struct cg_proc *p)
{
	const struct seen *s;

	if (!t || !p)
		return false;
	if (t->sel && !cg_selector_match(t->sel, p))
		return false;
	if (!t->nterms)
		return true;
	if (!p->cgroup)
		return false;
	s = seen_of(t, p->cgroup);
	return s && cg_target_match_identity(t, &s->id, &s->ri);
}
