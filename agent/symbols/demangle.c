// SPDX-License-Identifier: MIT
/*
 * Demangling: see agent/symbols/demangle.h.
 *
 * Why libiberty. perf on Debian demangles with libiberty's cplus_demangle
 * (statically linked): flags DMGL_NO_OPTS by default, DMGL_PARAMS |
 * DMGL_ANSI with -v. Calling the same function with the same flags is the
 * only way to print, byte for byte, what perf prints, including the corner
 * cases (lambdas as "{lambda(int)#1}", "(anonymous namespace)", clone
 * suffixes as "[clone .isra.0]", return types of function templates).
 * The C++ runtime's __cxa_demangle knows only the full form.
 *
 * Cost. A demangling is a few microseconds and allocates; a profile shows
 * the same few thousand functions again and again, so the cache keys the
 * mangled bytes (a fold table) to an index into an array of results, NULL
 * for "show as is". Bounded by max_names: when full, everything goes and
 * the cache refills on demand.
 */
#include "agent/symbols/demangle.h"

#include <errno.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "agent/stacks/fold.h"
#include "lib/grow.h"

#define DEMANGLE_DEFAULT_NAMES 65536

int demangle_style_parse(const char *s, enum demangle_style *style)
{
	if (!s || !style)
		return -EINVAL;
	if (!strcmp(s, "full") || !strcmp(s, "true") || !strcmp(s, "yes"))
		*style = DEMANGLE_FULL;
	else if (!strcmp(s, "short"))
		*style = DEMANGLE_SHORT;
	else if (!strcmp(s, "none") || !strcmp(s, "false") || !strcmp(s, "no"))
		*style = DEMANGLE_NONE;
	else
		return -EINVAL;
	return 0;
}

const char *demangle_style_name(enum demangle_style style)
{
	switch (style) {
	case DEMANGLE_FULL:
		return "full";
	case DEMANGLE_SHORT:
		return "short";
	case DEMANGLE_NONE:
		break;
	}
	return "none";
}

/* Only these prefixes are mangled names cplus_demangle would turn into
 * something: Itanium C++ (_Z, and __Z as some toolchains emit) and Rust v0. */
static int looks_mangled(const char *name)
{
	return !strncmp(name, "_Z", 2) || !strncmp(name, "__Z", 3) || !strncmp(name, "_R", 2);
}

char *demangle_name(const char *name, enum demangle_style style)
{
	char buf[DEMANGLE_MAX_IN + 1], *out, *joined;
	const char *at, *suffix = "";
	size_t len, olen, slen;
	int flags;

	if (!name || style == DEMANGLE_NONE || !looks_mangled(name))
		return NULL;
	len = strnlen(name, DEMANGLE_MAX_IN + 1);
	if (len > DEMANGLE_MAX_IN)
		return NULL;
	/* A PLT stub ("NAME@plt") or a versioned name ("NAME@@GLIBCXX_3.4"):
	 * the name demangled, the suffix as it is, as perf shows them. */
	memcpy(buf, name, len + 1);
	at = strchr(name, '@');
	if (at) {
		buf[at - name] = '\0';
		suffix = at;
	}
	flags = style == DEMANGLE_FULL ? DMGL_PARAMS | DMGL_ANSI : DMGL_NO_OPTS;
	out = cplus_demangle(buf, flags);
	if (!out)
		return NULL;
	olen = strlen(out);
	slen = strlen(suffix);
	if (!olen || olen + slen > DEMANGLE_MAX_OUT) {
		free(out);
		return NULL;
	}
	if (!slen)
		return out;
	joined = malloc(olen + slen + 1);
	if (joined) {
		memcpy(joined, out, olen);
		memcpy(joined + olen, suffix, slen + 1);
	}
	free(out);
	return joined;
}

struct demangle_cache {
	enum demangle_style style;
	size_t max;
	struct fold *keys; /* mangled bytes -> index + 1 into names */
	char **names;      /* demangled, or NULL: as is */
	size_t n, cap;
};

/* Forget every name: the demangled strings and the key table go. */
static void cache_clear(struct demangle_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->names[i]);
	c->n = 0;
	fold_free(c->keys);
	c->keys = NULL;
}

/* Start over with an empty key table (left NULL when out of memory). */
static void cache_empty(struct demangle_cache *c)
{
	cache_clear(c);
	c->keys = fold_new();
	if (c->keys)
		fold_set_limit(c->keys, c->max);
}

struct demangle_cache *demangle_cache_new(enum demangle_style style, size_t max_names)
{
	struct demangle_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->style = style;
	c->max = max_names ? max_names : DEMANGLE_DEFAULT_NAMES;
	cache_empty(c);
	if (!c->keys) {
		free(c);
		return NULL; /* errno: fold_new()'s ENOMEM */
	}
	return c;
}

void demangle_cache_free(struct demangle_cache *c)
{
	if (!c)
		return;
	cache_clear(c);
	free(c->names);
	free(c);
}

enum demangle_style demangle_cache_style(const struct demangle_cache *c)
{
	return c ? c->style : DEMANGLE_NONE;
}

const char *demangle_cache_get(struct demangle_cache *c, const char *name)
{
	uint64_t *slot;
	size_t len;

	if (!c || !name || c->style == DEMANGLE_NONE || !looks_mangled(name))
		return name;
	len = strnlen(name, DEMANGLE_MAX_IN + 1);
	if (len > DEMANGLE_MAX_IN)
		return name;
	if (!c->keys || !(slot = fold_slot(c->keys, name, len))) {
		/* Full (or a failed refill): start over, then try once more. */
		cache_empty(c);
		if (!c->keys || !(slot = fold_slot(c->keys, name, len)))
			return name;
	}
	if (!*slot) {
		char *d;

		if (GROW_ARRAY(c->names, c->n, c->cap, 256) < 0) {
			/* The key stays at 0: demangled next time. */
			return name;
		}
		d = demangle_name(name, c->style);
		c->names[c->n] = d;
		*slot = ++c->n;
	}
	return c->names[*slot - 1] ? c->names[*slot - 1] : name;
}
