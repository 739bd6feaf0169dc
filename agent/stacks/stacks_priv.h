/* SPDX-License-Identifier: MIT */
/*
 * Inside the stacks engine: struct stacks, its objects and per-process
 * tracks, shared by stacks.c (sample intake, unwinders, life cycle),
 * stacks_objects.c (the object registry: interning, side-band records,
 * gc) and stacks_names.c (naming frames, folding lines, the outputs).
 * The design is the essay at the head of stacks.c. Not for use outside
 * agent/stacks/stacks*.c.
 */
#ifndef CGPERF_AGENT_STACKS_PRIV_H
#define CGPERF_AGENT_STACKS_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "agent/stacks/stacks.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "agent/symbols/demangle.h"
#include "agent/stacks/fold.h"
#include "agent/stacks/idtab.h"
#include "agent/symbols/jitload.h"
#include "agent/symbols/perfmap.h"
#include "agent/stacks/procmaps.h"
#include "lib/rootfs.h"
#include "agent/symbols/dso.h"
#include "agent/symbols/ksyms.h"
#include "agent/symbols/symtab.h"
#include "agent/stacks/unwind.h"
#include "cgroup/identity.h"
#include "cgroup/tree.h"

#define MAX_FRAMES 254
#define HDR 4 /* raw key: cgroup id, prefix id + 1 (0 = none), comm id, frame count */
#define OBJ_KERNEL 0u
#define OBJ_UNKNOWN 1u /* no mapping: the frame keeps its raw address */
#define OBJ_FIRST 2u
#define OBJ_MARK 0xffffu /* a marker frame: the offset is an enum stacks_trunc */
#define MAX_OBJECTS 65000 /* ids live in the top 16 bits of a frame */
#define MAX_DISTINCT_STACKS 2000000

struct object {
	uint64_t dev, ino;
	char *path;      /* as the process saw it */
	char *open_path; /* where it could be opened when first seen */
	/* the root of the process it was first seen in, for files the binary
	 * names (annotate's source text): "" the host's, else "/proc/PID/root";
	 * root_known false when that process was gone already */
	char root[32];
	bool root_known;
	const char *base;
	struct dso *dso;   /* the binary (a reference), NULL when not opened */
	struct symtab *st; /* its symbols, owned by dso */
	/* JIT code (anonymous executable memory of a process that may have a
	 * perf map): frames keep absolute addresses; the map is loaded by the
	 * loader thread (agent/symbols/jitload.h) and taken when names are made. */
	bool is_jit;
	bool jit_waited; /* a naming pass already waited for the load */
	bool jit_absent; /* the process has no perf map (ENOENT) */
	struct jitload_job *jitjob; /* the load, until it is done */
	struct perfmap *jit;
	char *anon; /* the mapping's own name (//anon, [anon:x], /memfd:x) */
	void *key;           /* its key in objkey */
	size_t keylen;
	bool live;
	bool named;      /* some frame of it is in the name cache */
	uint16_t gen;    /* of the slot: bumped when the object is dropped */
	uint32_t nprocs; /* tracked processes that interned it */
	uint64_t used;   /* the interval (stacks.epoch) of its last sample */
};

/* The objects one process interned; aged like procmaps' processes. */
struct ptrack {
	struct idtab_key key; /* the pid */
	uint8_t exited; /* 0 alive, 1 exited, 2 exited before the previous gc */
	uint32_t *objs;
	uint32_t n, cap;
};

struct stacks {
	enum stacks_mode mode;
	bool per_cgroup;
	struct procmaps *pm;
	struct unwind_cache *uc;
	struct ksyms *ks;
	bool ks_tried;
	struct jitload *jl; /* perf-map loader, made at the first JIT object */
	struct fold *raw;     /* raw stack -> samples */
	struct fold *objkey;  /* (dev, ino) or path -> object index */
	struct fold *strings; /* comm and prefix strings -> id + 1 */
	char **comms;
	size_t ncomms, capcomms;
	struct object *objs;
	size_t nobjs, capobjs; /* slots in use or free */
	size_t nlive;          /* live objects */
	uint32_t *free_ids;
	size_t nfree, capfree;
	size_t dead_keys; /* keys of dropped objects still in objkey */
	uint64_t dropped;
	uint64_t epoch; /* the interval being folded: bumped by stacks_reset() */
	bool sweep;     /* an object may have become unused */
	struct idtab pt; /* of struct ptrack */
	bool kbid_tried;
	char kbid[2 * 32 + 1]; /* the kernel's build-id, hex */
	/* cgroup id -> label, for per_cgroup */
	struct fold *cglabels;
	char **labels;
	size_t nlabels, caplabels;
	char *mount;
	time_t last_rescan;
	struct cg_rtcache *rt; /* borrowed: container names for the labels */
	/* unwind_map results handed to the unwinder: a small ring, since it
	 * may hold on to one while asking for another */
	struct unwind_map umaps[16];
	unsigned umap_next;
	uint32_t cur_pid;
	uint64_t kept, unwind_errors, no_user_stack;
	uint32_t max_stack;          /* the events' sample_max_stack */
	struct fold *trunc;          /* (cgroup id, reason) -> stacks cut, this interval */
	uint64_t trunc_total[STACKS_TRUNC_N];
	/* Samples of processes whose maps were not known yet: copies, replayed
	 * after the drain (by then the FORK record from another CPU's ring
	 * has given them their parent's maps). */
	struct pending *pending;
	size_t npending, cappending, pending_bytes;
	uint64_t gc_gen; /* stacks_gc() calls so far: a held sample's age */
	bool replaying;
	uint64_t deferred;
	/* Frame names, kept across intervals: a frame (object, offset) always
	 * names the same function, and naming (DWARF inlines above all) is the
	 * expensive part. Bounded: flushed when it grows past NAMES_MAX. */
	struct fold *names; /* 8-byte frame -> index + 1 into strs */
	char **strs;
	size_t nstrs, capstrs;
	/* Symbol names as shown: each distinct mangled name demangled once. */
	struct demangle_cache *dm;
};

#define NAMES_MAX 500000
/* Wait for perf maps still loading, per naming pass (see jit_settle). */
#define STACKS_JIT_WAIT_MS 200
/* Samples held until the other rings are read (see stacks_add). */
#define PENDING_MAX 8192
#define PENDING_BYTES (32u << 20)

struct pending {
	uint64_t gen; /* gc_gen when it was held */
	struct sample s; /* its pointers into buf */
	char *prefix;
	void *buf;
	size_t bytes;
	uint64_t weight; /* what stacks_add_weight() was asked to add */
};

/* ---- stacks_objects.c ---- */

/* The live object @id, or NULL (kernel, unknown, dropped). */
struct object *stacks_object_at(struct stacks *r, uint32_t id);
/* Object index for @m of @pid, opening its symbols on first sight. */
uint32_t stacks_intern_object(struct stacks *r, uint32_t pid, struct pmap_entry *m);
/* The id of @comm in r->comms (interned once). */
uint32_t stacks_intern_comm(struct stacks *r, const char *comm);
/* procmaps dropped @pid's maps (exec, a fork reusing the pid): so do we. */
void stacks_pt_restart(struct stacks *r, uint32_t pid);

/* ---- stacks_names.c ---- */

/* Drop every cached frame name (and the names fold itself). */
void stacks_names_flush(struct stacks *r);

/* ---- stacks.c ---- */

/* Count the held samples now: all of them (@all), or those held before the
 * last drain began (see stacks.c). */
void stacks_replay_pending(struct stacks *r, bool all);

#endif
