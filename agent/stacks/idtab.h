/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_IDTAB_H
#define CGPERF_AGENT_IDTAB_H

/*
 * The per-process and per-thread tables of the stacks engine (procmaps'
 * processes and threads, the objects each process interned): entries of
 * the caller's struct, keyed by a nonzero 32-bit id (a pid or a tid), in
 * one array with open addressing and linear probing. A deleted entry
 * leaves a tombstone so probe chains stay intact; at 3/4 use (live +
 * tombstones) the table is rebuilt without them, twice as large only when
 * the live entries need it, so pids that come and go do not grow it.
 *
 * Each entry starts with struct idtab_key. Entries move when an insert
 * rebuilds the table: a pointer from idtab_get() or idtab_find() is valid
 * until the next idtab_get() of a new id. Not thread-safe.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idtab_key {
	uint32_t id; /* 0: a free slot */
	bool tomb;   /* freed by idtab_del(): probes run past it */
};

struct idtab {
	void *v;
	size_t esize;	     /* bytes of one entry */
	size_t cap;	     /* slots: 0 or a power of two */
	size_t count, used;  /* live entries; live + tombstones */
};

/* An empty table of @esize-byte entries (nothing allocated yet). */
void idtab_init(struct idtab *t, size_t esize);
/* Frees the slots (what entries own is the caller's to free first). */
void idtab_release(struct idtab *t);

/* The entry of @id, or NULL. */
void *idtab_find(const struct idtab *t, uint32_t id);
/* The entry of @id, inserted zeroed (but for its key) when new; NULL when
 * out of memory. */
void *idtab_get(struct idtab *t, uint32_t id);
/* Delete entry @e (from this table): zeroed, its slot a tombstone. */
void idtab_del(struct idtab *t, void *e);
/* Slot @i (< t->cap), for visiting every entry: the entry, or NULL when
 * the slot is free. */
void *idtab_at(const struct idtab *t, size_t i);

#endif
