// SPDX-License-Identifier: MIT
/*
 * Byte-keyed map to uint64_t: see lib/hashmap.h.
 *
 * The entries sit in one dense array, in the order they came (removal
 * moves the last one into the hole); the table itself is an array of
 * 8-byte slots, each the entry's index + 1 and the high 32 bits of its
 * hash, with linear probing. A lookup then reads one small slot per probe
 * and goes to an entry (and its key) only when those 32 bits match: a
 * table of a million keys is 8 MB of slots, not 32 MB of entries, and
 * most probes stay in cache.
 */
#include "lib/hashmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HASHMAP_FIRST_CAP 1024 /* slots, a power of two */
#define MAX_ENTRIES 0xfffffffeu /* an index + 1 fits a slot's low half */

/* Keys of a pooled map up to POOL_KEY_MAX bytes (with their NUL) are cut
 * from POOL_CHUNK-byte chunks, each starting with the previous chunk's
 * address; longer keys are malloc'd alone. */
#define POOL_CHUNK 65536
#define POOL_KEY_MAX 1024

struct hashmap_entry {
	unsigned char *key;
	size_t len;
	uint64_t hash;
	uint64_t value;
};

struct hashmap {
	struct hashmap_entry *ent; /* n used of ecap */
	size_t n, ecap;
	uint64_t *slot; /* cap of them: 0 empty, else tag << 32 | (index + 1) */
	size_t cap, max;
	uint64_t refused;
	bool pooled;
	char *chunk;      /* the newest chunk, NULL: none */
	size_t chunk_off; /* bytes of it in use */
};

/*
 * The map's own hash of a key: 8 bytes a step (a multiply and a shift),
 * the last 0..7 bytes by FNV-1a, then hash_mix64(). Byte-wise FNV-1a is a
 * chain of one multiply per byte: for a render's stack keys (30 frame ids,
 * 120 bytes) this is several times faster. Private to the map (no value is
 * kept anywhere), so it may change.
 */
static uint64_t key_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = HASH_FNV_OFFSET ^ (len * 0x9e3779b97f4a7c15ull);

	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w;

		memcpy(&w, p, sizeof(w));
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	return hash_mix64(hash_fnv1a(h, p, len));
}

static uint64_t slot_of(uint64_t hash, size_t idx)
{
	return (hash >> 32) << 32 | (uint64_t)(idx + 1);
}

static size_t slot_idx(uint64_t s)
{
	return (size_t)(s & 0xffffffffu) - 1;
}

struct hashmap *hashmap_new(void)
{
	struct hashmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cap = HASHMAP_FIRST_CAP;
	m->slot = calloc(m->cap, sizeof(*m->slot));
	if (!m->slot) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

struct hashmap *hashmap_new_pooled(void)
{
	struct hashmap *m = hashmap_new();

	if (m)
		m->pooled = true;
	return m;
}

static bool key_in_pool(const struct hashmap *m, size_t len)
{
	return m->pooled && len + 1 <= POOL_KEY_MAX;
}

static unsigned char *key_alloc(struct hashmap *m, size_t len)
{
	unsigned char *k;

	if (!key_in_pool(m, len))
		return malloc(len + 1);
	if (!m->chunk || m->chunk_off + len + 1 > POOL_CHUNK) {
		char *c = malloc(POOL_CHUNK);

		if (!c)
			return NULL;
		memcpy(c, &m->chunk, sizeof(m->chunk));
		m->chunk = c;
		m->chunk_off = sizeof(m->chunk);
	}
	k = (unsigned char *)m->chunk + m->chunk_off;
	/* The next key 8-byte aligned, as malloc's would be: keys may be
	 * arrays of integers (a stack's frame ids). */
	m->chunk_off += (len + 1 + 7) & ~(size_t)7;
	return k;
}

/* A pooled key's bytes stay in their chunk until hashmap_free(). */
static void key_free(const struct hashmap *m, struct hashmap_entry *e)
{
	if (!key_in_pool(m, e->len))
		free(e->key);
}

void hashmap_free(struct hashmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		key_free(m, &m->ent[i]);
	while (m->chunk) {
		char *prev;

		memcpy(&prev, m->chunk, sizeof(prev));
		free(m->chunk);
		m->chunk = prev;
	}
	free(m->ent);
	free(m->slot);
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

/* Twice the slots, every entry placed again. 0 or -ENOMEM. */
static int grow_slots(struct hashmap *m)
{
	size_t ncap = m->cap * 2, mask = ncap - 1;
	uint64_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t k = 0; k < m->n; k++) {
		size_t j;

		for (j = m->ent[k].hash & mask; ns[j]; j = (j + 1) & mask)
			;
		ns[j] = slot_of(m->ent[k].hash, k);
	}
	free(m->slot);
	m->slot = ns;
	m->cap = ncap;
	return 0;
}

/* Room for one more entry. 0 or -ENOMEM. */
static int grow_entries(struct hashmap *m)
{
	size_t ncap = m->ecap ? m->ecap * 2 : 64;
	struct hashmap_entry *ne;

	if (m->n < m->ecap)
		return 0;
	ne = ncap <= SIZE_MAX / sizeof(*ne) ? realloc(m->ent, ncap * sizeof(*ne)) : NULL;
	if (!ne)
		return -ENOMEM;
	m->ent = ne;
	m->ecap = ncap;
	return 0;
}

/* The slot of @key, or the empty slot where it would go. */
static size_t probe(const struct hashmap *m, const void *key, size_t len, uint64_t h)
{
	size_t mask = m->cap - 1, i;
	uint64_t tag = h >> 32;

	for (i = h & mask;; i = (i + 1) & mask) {
		uint64_t s = m->slot[i];
		const struct hashmap_entry *e;

		if (!s)
			return i;
		if (s >> 32 != tag)
			continue;
		e = &m->ent[slot_idx(s)];
		if (e->hash == h && e->len == len && !memcmp(e->key, key, len))
			return i;
	}
}

uint64_t *hashmap_find(const struct hashmap *m, const void *key, size_t len)
{
	size_t i = probe(m, key, len, key_hash(key, len));

	return m->slot[i] ? &m->ent[slot_idx(m->slot[i])].value : NULL;
}

/* The entry of @key, inserted (value 0) when new; NULL as hashmap_slot(). */
static struct hashmap_entry *entry_get(struct hashmap *m, const void *key, size_t len)
{
	uint64_t h = key_hash(key, len);
	size_t i = probe(m, key, len, h);
	struct hashmap_entry *e;
	unsigned char *k;

	if (m->slot[i])
		return &m->ent[slot_idx(m->slot[i])];
	if ((m->max && m->n >= m->max) || m->n >= MAX_ENTRIES) {
		m->refused++;
		return NULL;
	}
	if (grow_entries(m) < 0)
		return NULL;
	if ((m->n + 1) * 4 > m->cap * 3) {
		if (grow_slots(m) < 0)
			return NULL;
		i = probe(m, key, len, h);
	}
	/* One extra NUL so string keys can be used as C strings. */
	k = key_alloc(m, len);
	if (!k)
		return NULL;
	memcpy(k, key, len);
	k[len] = '\0';
	e = &m->ent[m->n];
	*e = (struct hashmap_entry){ .key = k, .len = len, .hash = h };
	m->slot[i] = slot_of(h, m->n);
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

/* The slot that holds entry @idx (whose hash is @h). */
static size_t slot_holding(const struct hashmap *m, uint64_t h, size_t idx)
{
	size_t mask = m->cap - 1, i;

	for (i = h & mask; m->slot[i] != slot_of(h, idx); i = (i + 1) & mask)
		;
	return i;
}

int hashmap_remove(struct hashmap *m, const void *key, size_t len, uint64_t *value)
{
	size_t mask = m->cap - 1, i = probe(m, key, len, key_hash(key, len)), j, idx, last;

	if (!m->slot[i])
		return -ENOENT;
	idx = slot_idx(m->slot[i]);
	if (value)
		*value = m->ent[idx].value;
	key_free(m, &m->ent[idx]);
	/*
	 * Close the hole at slot i: a slot further along the run may move
	 * into it unless its home lies cyclically in (i, j], where it would
	 * then be unreachable from.
	 */
	for (j = (i + 1) & mask; m->slot[j]; j = (j + 1) & mask) {
		size_t home = m->ent[slot_idx(m->slot[j])].hash & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slot[i] = m->slot[j];
			i = j;
		}
	}
	m->slot[i] = 0;
	/* The last entry fills the hole in the dense array. */
	last = --m->n;
	if (idx != last) {
		m->slot[slot_holding(m, m->ent[last].hash, last)] = slot_of(m->ent[last].hash, idx);
		m->ent[idx] = m->ent[last];
	}
	return 0;
}

void hashmap_foreach(const struct hashmap *m,
		     void (*cb)(void *ctx, const void *key, size_t len, uint64_t value), void *ctx)
{
	for (size_t i = 0; i < m->n; i++)
		cb(ctx, m->ent[i].key, m->ent[i].len, m->ent[i].value);
}
