/* SPDX-License-Identifier: MIT */
/*
 * Inside the DWARF unwinder: the binary cache and its entries, a process's
 * bins, the cached CFI rows and the per-call state, shared by unwind.c (the
 * walk and its libunwind callbacks), unwind_cache.c (entries, bins, rows)
 * and unwind_tables.c (a binary's .eh_frame regions, a member of its dso).
 * The design is the essay at the head of unwind.c. Not for use outside
 * agent/stacks/unwind*.c.
 */
#ifndef CGPERF_AGENT_UNWIND_PRIV_H
#define CGPERF_AGENT_UNWIND_PRIV_H

#include <libunwind.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/stacks/unwind.h"
#include "agent/symbols/elfobj.h"

#define UNWIND_REGION_MAX (256u << 20) /* cached bytes per region */
#define UNWIND_MERGE_GAP (64u << 10)   /* hdr and eh_frame closer than this: one region */
#define UNWIND_MAX_LOADS 64            /* PT_LOAD headers kept per binary */
#define UNWIND_MAX_ENTRIES (1u << 20)  /* bound on max_entries */
#define UNWIND_SPACES 64               /* processes with bins (bits of a uint64_t) */
#define UNWIND_BINS 32                 /* mappings one process's bins remember */
#define UNWIND_FUNC_ROWS 1024          /* CFI rows kept per function */
#define UNWIND_RULES_MAX (16u << 20)   /* bytes of rows kept, all binaries */
#define UNWIND_WIN 128                 /* file-read window for text reads */
#define UNWIND_PREFETCH 2048           /* stack copy prefetched ahead of the walk */
#define UNWIND_POPPED 6                /* callee-saved registers: rbx, rbp, r12-r15 */
#define UNWIND_RED_ZONE 128            /* bytes below SP a leaf may still address */
#define UNWIND_PAGE 4096ull
#define UNWIND_SLOTS 16                /* indirect CFI pointers kept per binary */
#define UNWIND_CIES 64                 /* CIEs remembered while scanning .eh_frame */

/* File bytes kept in memory, 8-byte aligned at both ends (libunwind reads aligned words). */
struct unwind_region {
	uint64_t vaddr, size;
	uint8_t *data;
};

/* The CFI rows of one FDE: libunwind register states, opaque to us. */
struct unwind_func {
	uint64_t start, end; /* runtime addresses */
	bool signal;         /* a signal trampoline: its caller's IP is exact */
	uint32_t nrows;
	uint64_t *row_end;   /* row i covers [row_end[i - 1] (or start), row_end[i]) */
	uint8_t *states;     /* nrows states of unwind_cache.state_size bytes */
	size_t bytes;
};

/* The functions of one binary met at one bias, sorted by start. */
struct unwind_rules {
	struct unwind_rules *next;
	uint64_t bias;
	uint64_t *start; /* v[i]->start, dense for the binary search */
	struct unwind_func **v;
	size_t n, cap;
};

/*
 * What the unwinder reads of one binary, once: a member of its dso
 * (agent/symbols/dso.h), shared by every cache and kept with the dso.
 * Read-only once built.
 */
struct unwind_tables {
	uint64_t hdr_vaddr, table_vaddr, fde_count;
	const struct elfobj_load *segs; /* the dso's PT_LOAD segments */
	size_t nsegs;
	struct unwind_region reg[2];
	size_t nreg;
	/* Words the CFI points at indirectly (personality, LSDA): link-time
	 * address and the file's bytes there (see cfi_scan_indirect()). */
	uint64_t slot_vaddr[UNWIND_SLOTS], slot_val[UNWIND_SLOTS];
	size_t nslots;
};

/* A binary in one cache: its dso (a reference) and the dso's tables. */
struct unwind_entry {
	struct unwind_entry *prev, *next; /* LRU list, head is the most recent */
	struct unwind_entry *hnext;       /* hash chain */
	uint64_t dev, ino;
	char *path; /* kept only when dev and ino are both 0 (then it is the key) */
	int err;    /* 0, or why this binary has no usable table */
	struct dso *dso;                /* NULL when it could not be opened */
	const struct unwind_tables *t;  /* never NULL: empty when err */
	uint64_t pin;
	uint64_t spaces;             /* bit i: in the bins of spaces[i] */
	struct unwind_rules *rules; /* per bias */
};

/* One executable mapping a process has met: a binary at a bias. */
struct unwind_bin {
	struct unwind_entry *e;
	uint64_t bias;
	uint64_t start, end; /* the mapping find_map returned */
};

/* What the unwinder remembers of one process. */
struct unwind_space {
	uint32_t pid; /* 0: a free slot, or the pid-less samples' space */
	int slot;     /* bit in unwind_entry.spaces; -1 for the pid-less space */
	uint64_t used; /* unwind_cache.clock when last used */
	struct unwind_bin bins[UNWIND_BINS];
	size_t nbins, next_bin, hint;
};

struct unwind_cache {
	unw_addr_space_t as; /* UNW_CACHE_NONE: the rows are cached here */
	size_t max, count;
	struct unwind_entry *head, *tail;
	struct unwind_entry **buckets;
	size_t nbuckets; /* power of two */
	uint64_t gen;    /* entries with pin == gen are in use by the running unwind */
	uint64_t loads;
	size_t state_size;  /* libunwind's register state, once seen; 0 before */
	size_t rule_bytes;  /* in all unwind_funcs */
	uint64_t rule_fills; /* FDEs turned into rows */
	/* Rows of the FDE being read (unw_reg_states_iterate's callback). */
	uint64_t fill_start, *fill_end;
	uint8_t *fill_states;
	size_t fill_n, fill_cap;
	bool fill_bad;
	uint64_t clock;
	struct unwind_space shared; /* samples without a pid; bins reset per call */
	struct unwind_space *last;  /* the space of the previous pid */
	struct unwind_space spaces[UNWIND_SPACES];
};

/* Everything one unwind_dwarf() call needs; the libunwind callbacks' arg. */
struct unwind_state {
	struct unwind_cache *c;
	const struct unwind_sample *s;
	struct unwind_space *sp;
	uint64_t stack_lo, stack_size;
	const uint8_t *stack;
	uint64_t prefetched; /* bytes of the copy prefetched */
	bool above_copy;     /* a read since the last step fell above the copy */
	bool filling;     /* the scratch cursor's RIP is fill_ip */
	uint64_t fill_ip;
	struct unwind_func *once; /* rows that could not be cached, freed after use */
	/* Registers the leaf popped: their save slots lie below SP, outside the copy. */
	uint64_t popped_addr[UNWIND_POPPED], popped_val[UNWIND_POPPED];
	size_t npopped;
	/* The file behind the text window, by value: find_map may reuse its answers. */
	struct unwind_map fmap;
	int fd;
	bool fd_owned; /* opened here, not borrowed from the binary's dso */
	uint64_t win_start;
	size_t win_len;
	uint8_t win[UNWIND_WIN];
};

/* ---- unwind_tables.c ---- */

/*
 * Give @e the binary of @m: its dso (opened through agent/symbols/dso.h,
 * so inside the process's root, or shared with whoever opened it already)
 * and the dso's unwind tables, read on first use: segments, .eh_frame_hdr
 * as the dso parsed it, .eh_frame regions, indirect CFI words. 0 or -errno
 * (-ENOEXEC: not ELF or not x86_64, -ENOENT: no table); on error e->t is
 * the empty table.
 */
int unwind_entry_load(struct unwind_entry *e, const struct unwind_map *m);

/* ---- unwind_cache.c ---- */

/* Evict @e: out of every space's bins, the LRU and the hash; freed. */
void unwind_cache_evict(struct unwind_cache *c, struct unwind_entry *e);
/* Evict least recently used entries down to the bound, sparing pinned ones. */
void unwind_cache_trim(struct unwind_cache *c);
/* Mark @e in use by the running unwind (pinned, most recent). */
void unwind_cache_touch(struct unwind_cache *c, struct unwind_entry *e);
/* Forget every bin of @sp. */
void unwind_space_clear(struct unwind_space *sp);
/* The space of @pid, recycling the least recently used one. */
struct unwind_space *unwind_space_get(struct unwind_cache *c, uint32_t pid);
/*
 * The bin of the executable mapping holding @addr, asking find_map (and
 * reading the binary's tables) on a miss; NULL if no mapping with a file
 * holds it (*err then says why).
 */
struct unwind_bin *unwind_state_bin(struct unwind_state *st, uint64_t addr, int *err);
/*
 * The register state that unwinds a frame at @ip (@exact: the leaf, or the
 * caller of a signal frame; else a return address, looked up at ip - 1),
 * filling its function's rows on a miss; NULL when there are none.
 */
const void *unwind_frame_rows(struct unwind_state *st, uint64_t ip, bool exact, bool *signal);

#endif
