// SPDX-License-Identifier: MIT
/* Byte-keyed map to uint64_t: see lib/hashmap.h. */
#include "lib/hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HASHMAP_FIRST_CAP 1024 /* a power of two */

struct hashmap_entry {
	unsigned char *key; /* NULL: empty slot */
	size_t len;
	uint64_t hash;
	uint64_t value;
};

struct hashmap {
	struct hashmap_entry *v;
	size_t cap, n, max;
	uint64_t refused;
};

static uint64_t key_hash(const void *key, size_t len)
{
	return hash_mix64(hash_fnv1a(HASH_FNV_OFFSET, key, len));
}

struct hashmap *hashmap_new(void)
{
	struct hashmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cap = HASHMAP_FIRST_CAP;
	m->v = calloc(m->cap, sizeof(*m->v));
	if (!m->v) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void hashmap_free(struct hashmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		free(m->v[i].key);
	free(m->v);
	free(m);
}

void hashmap_set_limit(struct hashmap *m, size_t max_keys)
{
	m->max = max_keys;
}

uint64_t hashmap_refused(const struct hashmap *m)
{
	return m->refused;
}

size_t hashmap_count(const struct hashmap *m)
{
	return m->n;
}

static int grow(struct hashmap *m)
{
	size_t ncap = m->cap * 2;
	struct hashmap_entry *nv = calloc(ncap, sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		struct hashmap_entry *e = &m->v[i];
		size_t j;

		if (!e->key)
			continue;
		for (j = e->hash & (ncap - 1); nv[j].key; j = (j + 1) & (ncap - 1))
			;
		nv[j] = *e;
	}
	free(m->v);
	m->v = nv;
	m->cap = ncap;
	return 0;
}

/* The slot of @key, or the empty slot where it would go. */
static size_t probe(const struct hashmap *m, const void *key, size_t len, uint64_t h)
{
	size_t mask = m->cap - 1, i;

	for (i = h & mask;; i = (i + 1) & mask) {
		const struct hashmap_entry *e = &m->v[i];

		if (!e->key || (e->hash == h && e->len == len && !memcmp(e->key, key, len)))
			return i;
	}
}

uint64_t *hashmap_find(const struct hashmap *m, const void *key, size_t len)
{
	size_t i = probe(m, key, len, key_hash(key, len));

	return m->v[i].key ? &m->v[i].value : NULL;
}

/* The entry of @key, inserted (value 0) when new; NULL as hashmap_slot(). */
static struct hashmap_entry *entry_get(struct hashmap *m, const void *key, size_t len)
{
	uint64_t h = key_hash(key, len);
	size_t i = probe(m, key, len, h);
	struct hashmap_entry *e;

	if (m->v[i].key)
		return &m->v[i];
	if (m->max && m->n >= m->max) {
		m->refused++;
		return NULL;
	}
	if ((m->n + 1) * 4 > m->cap * 3) {
		if (grow(m) < 0)
			return NULL;
		i = probe(m, key, len, h);
	}
	e = &m->v[i];
	/* One extra NUL so string keys can be used as C strings. */
	e->key = malloc(len + 1);
	if (!e->key)
		return NULL;
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	e->len = len;
	e->hash = h;
	e->value = 0;
	m->n++;
	return e;
}

uint64_t *hashmap_slot(struct hashmap *m, const void *key, size_t len)
{
	struct hashmap_entry *e = entry_get(m, key, len);

	return e ? &e->value : NULL;
}

const void *hashmap_intern(struct hashmap *m, const void *key, size_t len, uint64_t **value)
{
	struct hashmap_entry *e = entry_get(m, key, len);

	if (!e)
		return NULL;
	if (value)
		*value = &e->value;
	return e->key;
}

int hashmap_remove(struct hashmap *m, const void *key, size_t len, uint64_t *value)
{
	size_t mask = m->cap - 1, i = probe(m, key, len, key_hash(key, len)), j;

	if (!m->v[i].key)
		return -ENOENT;
	if (value)
		*value = m->v[i].value;
	free(m->v[i].key);
	/*
	 * Close the hole at i: an entry further along the run may move into it
	 * unless its home slot lies cyclically in (i, j], where it would then
	 * be unreachable from.
	 */
	for (j = (i + 1) & mask; m->v[j].key; j = (j + 1) & mask) {
		size_t home = m->v[j].hash & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->v[i] = m->v[j];
			i = j;
		}
	}
	m->v[i].key = NULL;
	m->n--;
	return 0;
}

void hashmap_foreach(const struct hashmap *m,
		     void (*cb)(void *ctx, const void *key, size_t len, uint64_t value), void *ctx)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->v[i].key)
			cb(ctx, m->v[i].key, m->v[i].len, m->v[i].value);
}
