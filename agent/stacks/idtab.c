// SPDX-License-Identifier: MIT
/* Tables keyed by pid or tid (see idtab.h). */
#include "agent/stacks/idtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define IDTAB_MIN_CAP 64

/* pids are small and dense: spread every bit over the low ones */
static uint32_t idtab_hash(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static struct idtab_key *key_at(const struct idtab *t, size_t i)
{
	return (struct idtab_key *)((char *)t->v + i * t->esize);
}

void idtab_init(struct idtab *t, size_t esize)
{
	*t = (struct idtab){ .esize = esize };
}

void idtab_release(struct idtab *t)
{
	free(t->v);
	idtab_init(t, t->esize);
}

void *idtab_find(const struct idtab *t, uint32_t id)
{
	size_t mask = t->cap - 1;

	if (!id || !t->cap)
		return NULL;
	for (size_t i = idtab_hash(id) & mask, n = 0; n < t->cap; i = (i + 1) & mask, n++) {
		struct idtab_key *k = key_at(t, i);

		if (k->id == id)
			return k;
		if (!k->id && !k->tomb)
			return NULL;
	}
	return NULL;
}

/* Rebuild into @cap slots, without tombstones. 0 or -ENOMEM. */
static int idtab_rebuild(struct idtab *t, size_t cap)
{
	struct idtab nt = { .v = calloc(cap, t->esize), .esize = t->esize, .cap = cap };

	if (!nt.v)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		const struct idtab_key *k = key_at(t, i);
		size_t j;

		if (!k->id)
			continue;
		for (j = idtab_hash(k->id) & (cap - 1); key_at(&nt, j)->id; j = (j + 1) & (cap - 1))
			;
		memcpy(key_at(&nt, j), k, t->esize);
	}
	free(t->v);
	nt.count = nt.used = t->count;
	*t = nt;
	return 0;
}

void *idtab_get(struct idtab *t, uint32_t id)
{
	struct idtab_key *k = idtab_find(t, id);
	size_t mask;

	if (k || !id)
		return k;
	if ((t->used + 1) * 4 > t->cap * 3) {
		size_t cap = t->cap ? t->cap : IDTAB_MIN_CAP;

		/* twice as large when the live entries fill half, else the same
		 * size without the tombstones */
		if ((t->count + 1) * 4 > cap * 2)
			cap *= 2;
		if (idtab_rebuild(t, cap) < 0)
			return NULL;
	}
	mask = t->cap - 1;
	for (size_t i = idtab_hash(id) & mask;; i = (i + 1) & mask) {
		k = key_at(t, i);
		if (!k->id) {
			if (!k->tomb)
				t->used++;
			memset(k, 0, t->esize);
			k->id = id;
			t->count++;
			return k;
		}
	}
}

void idtab_del(struct idtab *t, void *e)
{
	struct idtab_key *k = e;

	memset(k, 0, t->esize);
	k->tomb = true;
	t->count--;
}

void *idtab_at(const struct idtab *t, size_t i)
{
	struct idtab_key *k = key_at(t, i);

	return k->id ? k : NULL;
}
