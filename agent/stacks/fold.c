// SPDX-License-Identifier: MIT
/*
 * Folding over lib/hashmap: the table is the shared map; this file adds
 * the folded-text side (sorted output, frame-name sanitizing).
 */
#include "agent/stacks/fold.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"

struct fold {
	struct hashmap *m;
};

struct fold *fold_new(void)
{
	struct fold *f = calloc(1, sizeof(*f));

	/* both set errno (ENOMEM) when they fail */
	if (f && !(f->m = hashmap_new())) {
		free(f);
		return NULL;
	}
	return f;
}

void fold_free(struct fold *f)
{
	if (!f)
		return;
	hashmap_free(f->m);
	free(f);
}

void fold_set_limit(struct fold *f, size_t max_keys)
{
	hashmap_set_limit(f->m, max_keys);
}

uint64_t fold_refused(const struct fold *f)
{
	return hashmap_refused(f->m);
}

uint64_t *fold_slot(struct fold *f, const void *key, size_t len)
{
	return hashmap_slot(f->m, key, len);
}

size_t fold_count(const struct fold *f)
{
	return hashmap_count(f->m);
}

void fold_foreach(const struct fold *f,
		  void (*cb)(void *ctx, const void *key, size_t len, uint64_t value), void *ctx)
{
	hashmap_foreach(f->m, cb, ctx);
}

struct line {
	const char *key; /* NUL-terminated by the map */
	uint64_t value;
};

struct lines {
	struct line *v;
	size_t n;
};

static void collect(void *ctx, const void *key, size_t len, uint64_t value)
{
	struct lines *l = ctx;

	(void)len;
	l->v[l->n].key = key;
	l->v[l->n].value = value;
	l->n++;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->key, ((const struct line *)b)->key);
}

int fold_write(const struct fold *f, FILE *out)
{
	struct lines l = { .v = malloc((fold_count(f) + 1) * sizeof(*l.v)) };

	if (!l.v)
		return -ENOMEM;
	fold_foreach(f, collect, &l);
	qsort(l.v, l.n, sizeof(*l.v), cmp_line);
	for (size_t i = 0; i < l.n; i++)
		fprintf(out, "%s %llu\n", l.v[i].key, (unsigned long long)l.v[i].value);
	free(l.v);
	return ferror(out) ? -EIO : 0;
}

void fold_sanitize(char *name)
{
	for (unsigned char *p = (unsigned char *)name; *p; p++) {
		if (*p == ';')
			*p = ':';
		else if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
}
