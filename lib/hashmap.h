/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_HASHMAP_H
#define CGPERF_LIB_HASHMAP_H

/*
 * The one hash of the tree and the one map built on it.
 *
 * Hash: FNV-1a, 64-bit (offset basis 14695981039346656037, prime
 * 1099511628211). hash_fnv1a() continues from a seed, so a key made of
 * several parts hashes without being copied into one buffer; hash_mix64()
 * is a final avalanche for tables that index by the low bits (FNV-1a's low
 * bits depend weakly on the last bytes). The values are stable: they are
 * part of no format, but tests may pin them.
 *
 * Map: byte-string keys (copied, any length, a NUL kept after each so
 * string keys read as C strings) to one uint64_t value: a dense array of
 * entries behind a table of 8-byte slots (open addressing with linear
 * probing, grown at 3/4 load; lib/hashmap.c says why). hashmap_slot() is the one way in:
 * it finds or inserts, and hands back the value to read or update in
 * place, so counting is `(*hashmap_slot(m, k, n))++`. A cap on the number
 * of keys refuses (and counts) new keys past it: a table fed from outside
 * stays bounded. hashmap_remove() deletes by backward shift (the entries
 * after the hole that probed past it move back), so there are no
 * tombstones and lookups never slow down after many removals.
 * Not thread-safe; pointers returned by hashmap_slot() are valid until the
 * next insert or removal.
 */

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV_OFFSET 14695981039346656037ull
#define HASH_FNV_PRIME 1099511628211ull

/* FNV-1a of @len bytes at @p, continuing from @h (HASH_FNV_OFFSET to start). */
static inline uint64_t hash_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * HASH_FNV_PRIME;
	return h;
}

/* The same over the bytes of the C string @s (without its NUL). */
static inline uint64_t hash_fnv1a_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * HASH_FNV_PRIME;
	return h;
}

/* Spread every bit of @h over the low bits (a multiply-xorshift finisher). */
static inline uint64_t hash_mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

struct hashmap;

/* An empty map; NULL + errno (ENOMEM) on failure. */
struct hashmap *hashmap_new(void);
/*
 * The same, for a map that is filled and then freed whole (an interning
 * table of a render): its keys (up to 1 KiB each) are cut from 64 KiB
 * chunks, 8-byte aligned, not malloc'd one by one, and the bytes of a removed one are only
 * given back by hashmap_free().
 */
struct hashmap *hashmap_new_pooled(void);
/* Frees the map and its keys; NULL is fine. */
void hashmap_free(struct hashmap *m);

/*
 * The value for @key (@len bytes), inserted as 0 when new. NULL when out of
 * memory, or when the map holds its limit of keys and @key is new (then
 * counted in hashmap_refused()).
 */
uint64_t *hashmap_slot(struct hashmap *m, const void *key, size_t len);
/*
 * Interning: the map's own copy of @key (@len bytes and a NUL), inserted
 * with value 0 when new, as hashmap_slot() does; *@value (when @value is
 * not NULL) points at its value, valid as hashmap_slot()'s. The copy does
 * not move when the table grows: it is a stable pointer (and, compared by
 * address, a stable identity) for the key until hashmap_remove() of the key
 * or hashmap_free(). The value is the caller's: a reference count, an id.
 * NULL as hashmap_slot().
 */
const void *hashmap_intern(struct hashmap *m, const void *key, size_t len, uint64_t **value);
/* The value for @key if present, else NULL; never inserts. */
uint64_t *hashmap_find(const struct hashmap *m, const void *key, size_t len);
/*
 * Remove @key; 0, or -ENOENT when absent. Its value is stored in *@value
 * when @value is not NULL. Entries may move: pointers from hashmap_slot()
 * are stale afterwards.
 */
int hashmap_remove(struct hashmap *m, const void *key, size_t len, uint64_t *value);
/* Cap the number of distinct keys (0 = no cap). */
void hashmap_set_limit(struct hashmap *m, size_t max_keys);
/* New keys refused by the cap so far. */
uint64_t hashmap_refused(const struct hashmap *m);
/* Number of keys. */
size_t hashmap_count(const struct hashmap *m);
/* Visit every entry, in insertion order as long as nothing was removed (a
 * removal moves the last entry into the hole); @cb must not insert or
 * remove. */
void hashmap_foreach(const struct hashmap *m,
		     void (*cb)(void *ctx, const void *key, size_t len, uint64_t value), void *ctx);

#endif
