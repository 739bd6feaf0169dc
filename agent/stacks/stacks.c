// SPDX-License-Identifier: MIT
/*
 * The stacks engine: see agent/stacks/stacks.h. Frames are 64-bit words, the
 * object id in the top 16 bits and a 48-bit offset below: a file offset
 * for files (ASLR-independent, shared by every process mapping the file),
 * the absolute address for JIT code and for the kernel (re-extended to its
 * canonical upper half when named).
 *
 * Objects and their life. An object (a binary with its symbols, a JIT map)
 * is interned the first time a process's mapping of it is hit, and its id
 * is cached in that mapping's procmaps tag, together with the object's
 * generation. Each process remembers the objects it interned (struct
 * ptrack, aged exactly as procmaps ages processes: an EXIT, then two gc
 * calls). An object is dropped, with its symtab, its unwind tables and its
 * cached frame names, once no tracked process holds it and no stack of the
 * interval still to be folded uses it (its `used` interval is not the
 * current one). Its id then goes back to a free list with the generation
 * bumped, so a stale tag anywhere is seen as stale and interned afresh:
 * dropping early costs a reopen, never a wrong name.
 */
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
#include "agent/symbols/jitload.h"
#include "agent/symbols/perfmap.h"
#include "agent/stacks/procmaps.h"
#include "lib/rootfs.h"
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
	const char *base;
	struct symtab *st;
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
	uint32_t pid; /* 0: free slot */
	bool tomb;
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
	struct ptrack *pt;
	size_t ptcap, ptcount, ptused;
	bool kbid_tried;
	char kbid[2 * 32 + 1]; /* the kernel's build-id, hex */
	/* cgroup id -> label, for per_cgroup */
	struct fold *cglabels;
	char **labels;
	size_t nlabels, caplabels;
	char *mount;
	time_t last_rescan;
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
};

/* ---- interning ---------------------------------------------------------- */

static uint32_t intern_comm(struct stacks *r, const char *comm)
{
	uint64_t *slot = fold_slot(r->strings, comm, strlen(comm));

	if (!slot)
		return 0;
	if (!*slot) {
		if (r->ncomms == r->capcomms) {
			size_t nc = r->capcomms ? r->capcomms * 2 : 64;
			char **v = realloc(r->comms, nc * sizeof(*v));

			if (!v)
				return 0;
			r->comms = v;
			r->capcomms = nc;
		}
		r->comms[r->ncomms] = strdup(comm);
		if (!r->comms[r->ncomms])
			return 0;
		*slot = ++r->ncomms;
	}
	return (uint32_t)(*slot - 1);
}

/* Anonymous executable memory: where JITs put code. */
static bool anon_path(const char *path)
{
	return !path[0] || !strncmp(path, "//anon", 6) || !strncmp(path, "[anon", 5) ||
	       !strncmp(path, "/memfd:", 7);
}

/*
 * The vDSO has no file; every process of this kernel maps the same image,
 * so a copy of our own, in a memfd, gives its symbols.
 */
static struct symtab *open_vdso(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512], path[64];
	unsigned long long lo = 0, hi = 0;
	struct symtab *st = NULL;
	int fd;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			break;
	fclose(f);
	if (!lo || hi <= lo || hi - lo > (1u << 20))
		return NULL;
	fd = memfd_create("cgperf-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (write(fd, (const void *)(uintptr_t)lo, hi - lo) == (ssize_t)(hi - lo)) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		st = symtab_open(path, "");
	}
	close(fd);
	return st;
}

static bool pseudo_path(const char *path)
{
	return !path[0] || path[0] == '[' || !strncmp(path, "//anon", 6) ||
	       !strncmp(path, "/memfd:", 7) || strstr(path, " (deleted)");
}

/* ---- objects ------------------------------------------------------------ */

/* A procmaps tag: the object id in the low 16 bits, its generation above. */
static int32_t tag_make(uint32_t id, uint16_t gen)
{
	return (int32_t)(((uint32_t)(gen & 0x7fff) << 16) | id);
}

static struct object *object_at(struct stacks *r, uint32_t id)
{
	struct object *o;

	if (id < OBJ_FIRST || id - OBJ_FIRST >= r->nobjs)
		return NULL;
	o = &r->objs[id - OBJ_FIRST];
	return o->live ? o : NULL;
}

static struct ptrack *pt_lookup(struct stacks *r, uint32_t pid)
{
	size_t mask = r->ptcap - 1;

	if (!r->ptcap)
		return NULL;
	for (size_t i = (pid * 0x9e3779b1u) & mask, n = 0; n < r->ptcap; i = (i + 1) & mask, n++) {
		struct ptrack *p = &r->pt[i];

		if (p->pid == pid)
			return p;
		if (!p->pid && !p->tomb)
			return NULL;
	}
	return NULL;
}

static struct ptrack *pt_get(struct stacks *r, uint32_t pid)
{
	struct ptrack *p = pt_lookup(r, pid);
	size_t mask;

	if (p)
		return p;
	if ((r->ptused + 1) * 4 > r->ptcap * 3) {
		/* Grow, or just shed the tombs, into a new table. */
		size_t ncap = 64;
		struct ptrack *nv;

		if (r->ptcap)
			ncap = (r->ptcount + 1) * 4 > r->ptcap * 2 ? r->ptcap * 2 : r->ptcap;
		nv = calloc(ncap, sizeof(*nv));
		if (!nv)
			return NULL;
		for (size_t i = 0; i < r->ptcap; i++) {
			size_t j = (r->pt[i].pid * 0x9e3779b1u) & (ncap - 1);

			if (!r->pt[i].pid)
				continue;
			while (nv[j].pid)
				j = (j + 1) & (ncap - 1);
			nv[j] = r->pt[i];
		}
		free(r->pt);
		r->pt = nv;
		r->ptcap = ncap;
		r->ptused = r->ptcount;
	}
	mask = r->ptcap - 1;
	for (size_t i = (pid * 0x9e3779b1u) & mask;; i = (i + 1) & mask) {
		p = &r->pt[i];
		if (!p->pid) {
			if (!p->tomb)
				r->ptused++;
			memset(p, 0, sizeof(*p));
			p->pid = pid;
			r->ptcount++;
			return p;
		}
	}
}

/* @pid holds object @id (it has a mapping tagged with it). */
static void pt_add(struct stacks *r, uint32_t pid, uint32_t id)
{
	struct object *o = object_at(r, id);
	struct ptrack *p;

	if (!pid || !o)
		return;
	p = pt_get(r, pid);
	if (!p)
		return; /* untracked: the object may be dropped early and reopened */
	for (uint32_t i = 0; i < p->n; i++)
		if (p->objs[i] == id)
			return;
	if (p->n == p->cap) {
		uint32_t nc = p->cap ? p->cap * 2 : 16;
		uint32_t *v = realloc(p->objs, nc * sizeof(*v));

		if (!v)
			return;
		p->objs = v;
		p->cap = nc;
	}
	p->objs[p->n++] = id;
	o->nprocs++;
}

/* @p's maps are gone (exec, fork over a reused pid, forgotten). */
static void pt_clear(struct stacks *r, struct ptrack *p)
{
	for (uint32_t i = 0; i < p->n; i++) {
		struct object *o = object_at(r, p->objs[i]);

		if (o && o->nprocs)
			o->nprocs--;
	}
	if (p->n)
		r->sweep = true;
	p->n = 0;
}

/* A fresh object slot (live, zeroed but for its generation): its id, or 0. */
static uint32_t object_alloc(struct stacks *r)
{
	uint32_t id;
	struct object *o;
	uint16_t gen;

	if (r->nfree) {
		id = r->free_ids[--r->nfree];
	} else {
		if (r->nobjs >= MAX_OBJECTS)
			return 0;
		if (r->nobjs == r->capobjs) {
			size_t nc = r->capobjs ? r->capobjs * 2 : 64;
			struct object *v = realloc(r->objs, nc * sizeof(*v));

			if (!v)
				return 0;
			r->objs = v;
			r->capobjs = nc;
		}
		memset(&r->objs[r->nobjs], 0, sizeof(r->objs[0]));
		id = (uint32_t)(r->nobjs++ + OBJ_FIRST);
	}
	o = &r->objs[id - OBJ_FIRST];
	gen = o->gen;
	memset(o, 0, sizeof(*o));
	o->gen = gen;
	o->live = true;
	r->nlive++;
	return id;
}

/* Drop object @id: its symbols, JIT map, unwind tables and key. The id is
 * free for reuse under the next generation. */
static void object_release(struct stacks *r, uint32_t id)
{
	struct object *o = object_at(r, id);
	uint16_t gen;

	if (!o)
		return;
	if (o->key) {
		uint64_t *slot = fold_slot(r->objkey, o->key, o->keylen);

		if (slot && *slot == id + 1u) {
			*slot = 0;
			r->dead_keys++;
		}
	}
	if (r->uc && o->open_path && (o->dev || o->ino))
		unwind_cache_forget(r->uc, o->dev, o->ino);
	symtab_free(o->st);
	jitload_job_free(o->jitjob);
	perfmap_free(o->jit);
	free(o->anon);
	free(o->path);
	free(o->open_path);
	free(o->key);
	gen = (uint16_t)((o->gen + 1) & 0x7fff);
	memset(o, 0, sizeof(*o));
	o->gen = gen;
	r->nlive--;
	/* The free list never needs more room than the slots there are. */
	if (r->nfree == r->capfree) {
		size_t nc = r->capfree ? r->capfree * 2 : 64;
		uint32_t *v = realloc(r->free_ids, nc * sizeof(*v));

		if (!v)
			return; /* the slot is lost for reuse, nothing else */
		r->free_ids = v;
		r->capfree = nc;
	}
	r->free_ids[r->nfree++] = id;
}

/*
 * The host's file at @m's path is the very inode the process mapped. A
 * container's path names another file on the host, or one the container
 * chose: read the host's only when (dev, inode) prove it is the same.
 */
static bool host_same_file(const struct pmap_entry *m)
{
	struct stat st;
	int fd;

	if (!m->dev && !m->ino)
		return false;
	fd = rootfs_open("", m->path, ROOTFS_ELF_MAX, &st);
	if (fd < 0)
		return false;
	close(fd);
	return (uint64_t)st.st_dev == m->dev && (uint64_t)st.st_ino == m->ino;
}

/* Object index for @m of @pid, opening its symbols on first sight. */
static uint32_t intern_object(struct stacks *r, uint32_t pid, struct pmap_entry *m)
{
	struct { uint64_t dev, ino; } k = {m->dev, m->ino};
	const void *key;
	size_t keylen;
	uint64_t *slot;
	struct object *o;
	uint32_t id;

	char jitkey[48];
	char jitpath[4096]; /* set on every path below: no 4 KiB zero-fill per frame */

	if (m->tag >= 0) {
		id = (uint32_t)m->tag & 0xffffu;
		o = object_at(r, id);
		if (o && o->gen == (uint32_t)m->tag >> 16)
			return id;
		m->tag = -1; /* dropped since: intern again */
	}
	/* Files by (dev, ino); JIT code by process; other pseudo maps by name. */
	/* Anonymous executable memory is JIT code when the process has a perf
	 * map: whether it has one is for the loader to find (a lookup in the
	 * container may wait), so it is JIT code until the loader says not. */
	if (anon_path(m->path) && perfmap_path("/proc", (pid_t)pid, jitpath, sizeof(jitpath)) == 0) {
		snprintf(jitkey, sizeof(jitkey), "jit:%" PRIu32, pid);
		key = jitkey;
		keylen = strlen(jitkey);
	} else if (m->ino && !pseudo_path(m->path)) {
		jitpath[0] = '\0';
		key = &k;
		keylen = sizeof(k);
	} else {
		jitpath[0] = '\0';
		key = m->path;
		keylen = strlen(m->path);
	}
	slot = fold_slot(r->objkey, key, keylen);
	if (!slot)
		return OBJ_UNKNOWN;
	if (*slot) {
		id = (uint32_t)(*slot - 1);
		goto found;
	}
	id = object_alloc(r);
	if (!id)
		return OBJ_UNKNOWN;
	o = object_at(r, id);
	o->dev = m->dev;
	o->ino = m->ino;
	o->path = strdup(m->path);
	o->key = malloc(keylen ? keylen : 1);
	if (!o->path || !o->key)
		goto err_release;
	memcpy(o->key, key, keylen);
	o->keylen = keylen;
	o->base = strrchr(o->path, '/') ? strrchr(o->path, '/') + 1 : o->path;
	if (jitpath[0]) {
		/* Queued now, while the process lives, for the loader thread;
		 * "perf-NSPID.map" names frames the map does not. */
		o->is_jit = true;
		o->anon = o->path;
		o->path = strdup(strrchr(jitpath, '/') + 1);
		if (!o->path)
			goto err_release;
		o->base = o->path;
		if (!r->jl)
			r->jl = jitload_new();
		/* queue full or no thread: no names for this one, no wait */
		o->jitjob = r->jl ? jitload_submit(r->jl, jitpath) : NULL;
	} else if (!strcmp(m->path, "[vdso]")) {
		o->st = open_vdso();
	} else if (!pseudo_path(m->path)) {
		const char *root = procmaps_root(r->pm, pid);
		size_t n = strlen(root) + strlen(m->path) + 1;

		o->open_path = malloc(n);
		if (o->open_path) {
			snprintf(o->open_path, n, "%s%s", root, m->path);
			o->st = root[0] ? symtab_open(o->open_path, root) : NULL;
			if (!o->st && host_same_file(m)) {
				/* The process may be gone; the host view may still do,
				 * if the host's file at that path is the one mapped. */
				o->st = symtab_open(m->path, "");
				if (o->st || !root[0])
					snprintf(o->open_path, n, "%s", m->path);
			} else if (!o->st && !root[0]) {
				/* never read another file by the same name */
				free(o->open_path);
				o->open_path = NULL;
			}
		}
	}
	/* Inlined frames are named at the end, maybe after the process (and
	 * its root) is gone: keep the debuginfo file open from now on. */
	symtab_hold_dwarf(o->st);
	*slot = id + 1;
found:
	o = object_at(r, id);
	if (!o)
		return OBJ_UNKNOWN;
	m->tag = tag_make(id, o->gen);
	pt_add(r, pid, id);
	return id;

err_release:
	object_release(r, id); /* its key is not in objkey yet */
	return OBJ_UNKNOWN;
}

/* ---- unwinders ---------------------------------------------------------- */

static const struct unwind_map *find_umap(void *ctx, uint64_t ip)
{
	struct stacks *r = ctx;
	struct pmap_entry *m = (struct pmap_entry *)procmaps_find(r->pm, r->cur_pid, ip);
	struct unwind_map *u;
	struct object *o;

	if (!m)
		return NULL;
	o = object_at(r, intern_object(r, r->cur_pid, m));
	if (!o || !o->open_path)
		return NULL;
	u = &r->umaps[r->umap_next++ % (sizeof(r->umaps) / sizeof(r->umaps[0]))];
	u->start = m->start;
	u->end = m->end;
	u->pgoff = m->pgoff;
	u->path = o->open_path;
	u->dev = m->dev;
	u->ino = m->ino;
	return u;
}

/* User IPs of @s, leaf first, into @ips. */
struct user_unwinder {
	const char *name;
	/* *@cut: an enum stacks_trunc when the walk was cut, else -1. */
	int (*unwind)(struct stacks *r, const struct sample *s, uint64_t *ips, size_t max,
		      int *cut);
};

static int fp_user(struct stacks *r, const struct sample *s, uint64_t *ips, size_t max,
		   int *cut)
{
	size_t n = 0;
	uint64_t entries = 0; /* what the kernel counts against sample_max_stack */
	bool user = false, ended = false;

	for (uint64_t i = 0; i < s->nr_callchain; i++) {
		uint64_t ip = s->callchain[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			user = ip == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		entries++;
		if (!user || ended)
			continue;
		if (!ip) {
			ended = true; /* the walk ran off the end of the frame chain */
			continue;
		}
		if (n == max) {
			*cut = STACKS_TRUNC_MAX_STACK;
			ended = true;
			continue;
		}
		ips[n++] = ip;
	}
	/* The kernel stops storing at sample_max_stack entries, contexts aside. */
	if (!ended && n && entries >= r->max_stack)
		*cut = STACKS_TRUNC_MAX_STACK;
	if (!s->nr_callchain && s->user_mode && max)
		ips[n++] = s->ip;
	return (int)n;
}

static int dwarf_user(struct stacks *r, const struct sample *s, uint64_t *ips, size_t max,
		      int *cut)
{
	enum unwind_end end = UNWIND_END_COMPLETE;
	struct unwind_sample us = {
		.regs = s->regs,
		.regs_mask = unwind_dwarf_regs_mask(),
		.stack = s->stack,
		.stack_size = s->stack_size,
		.find_map = find_umap,
		.ctx = r,
		.pid = s->pid,
		.end = &end,
	};
	int n;

	if (!s->regs || !s->regs_abi) {
		r->no_user_stack++;
		return 0;
	}
	r->cur_pid = s->pid;
	n = unwind_dwarf(r->uc, &us, ips, max);
	if (n < 0) {
		r->unwind_errors++;
		return 0;
	}
	if (end == UNWIND_END_STACK_COPY)
		*cut = STACKS_TRUNC_STACK_COPY;
	else if (end == UNWIND_END_MAX)
		*cut = STACKS_TRUNC_MAX_STACK;
	return n;
}

static int leaf_only(struct stacks *r, const struct sample *s, uint64_t *ips, size_t max,
		     int *cut)
{
	if (!s->user_mode || !max)
		return 0;
	ips[0] = s->ip;
	return 1;
}

static const struct user_unwinder unwinders[] = {
	[STACKS_FP] = {"fp", fp_user},
	[STACKS_DWARF] = {"dwarf", dwarf_user},
	[STACKS_LEAF] = {"none", leaf_only},
};

/* ---- the hot path ------------------------------------------------------- */


static void pt_restart(struct stacks *r, uint32_t pid);

/*
 * Keep a copy of @s for later: rings are drained one CPU after another, so
 * the sample of a child that ran on one CPU may be read before the FORK
 * record its parent's CPU wrote. A child that lived a few ms has no
 * /proc/PID/maps left to read. False when the queue is full.
 */
static bool defer_sample(struct stacks *r, const struct sample *s, const char *prefix)
{
	size_t nregs = 0, bytes;
	struct pending *p;
	uint8_t *b;

	if (r->mode == STACKS_DWARF && s->regs)
		nregs = (size_t)__builtin_popcountll(stacks_regs_mask(r->mode));
	bytes = s->nr_callchain * 8 + nregs * 8 + (s->stack ? s->stack_size : 0) +
		(prefix ? strlen(prefix) + 1 : 0);
	if (r->npending >= PENDING_MAX || r->pending_bytes + bytes > PENDING_BYTES ||
	    s->nr_callchain > 4096)
		return false;
	if (r->npending == r->cappending) {
		size_t nc = r->cappending ? r->cappending * 2 : 64;
		struct pending *v = realloc(r->pending, nc * sizeof(*v));

		if (!v)
			return false;
		r->pending = v;
		r->cappending = nc;
	}
	p = &r->pending[r->npending];
	memset(p, 0, sizeof(*p));
	p->buf = malloc(bytes ? bytes : 1);
	if (!p->buf)
		return false;
	p->s = *s;
	p->s.raw = NULL;
	p->s.raw_size = 0;
	b = p->buf;
	if (s->nr_callchain) {
		memcpy(b, s->callchain, s->nr_callchain * 8);
		p->s.callchain = (const uint64_t *)b;
		b += s->nr_callchain * 8;
	}
	if (nregs) {
		memcpy(b, s->regs, nregs * 8);
		p->s.regs = (const uint64_t *)b;
		b += nregs * 8;
	} else if (r->mode == STACKS_DWARF) {
		p->s.regs = NULL;
	}
	if (s->stack && s->stack_size) {
		memcpy(b, s->stack, s->stack_size);
		p->s.stack = b;
		b += s->stack_size;
	}
	if (prefix) {
		memcpy(b, prefix, strlen(prefix) + 1);
		p->prefix = (char *)b;
	}
	p->bytes = bytes;
	p->gen = r->gc_gen;
	r->pending_bytes += bytes;
	r->npending++;
	r->deferred++;
	return true;
}

/*
 * Count the held samples now, with what the drains since taught us: all of
 * them (@all, at the end), or those held before the last drain began. One
 * drain is not enough: it reads the rings one after the other, so a child's
 * FORK written to a ring already read, before its first sample was written
 * to a ring read later, is in no ring until the next drain.
 */
static void replay_pending(struct stacks *r, bool all)
{
	size_t kept = 0;

	if (!r->npending)
		return;
	r->replaying = true;
	for (size_t i = 0; i < r->npending; i++) {
		struct pending *p = &r->pending[i];

		if (!all && p->gen + 1 >= r->gc_gen) {
			r->pending[kept++] = *p;
			continue;
		}
		stacks_add(r, &p->s, p->prefix);
		r->pending_bytes -= p->bytes;
		free(p->buf);
	}
	r->replaying = false;
	r->npending = kept;
	if (!kept)
		r->pending_bytes = 0;
}

void stacks_add(struct stacks *r, const struct sample *s, const char *prefix)
{
	uint64_t key[HDR + MAX_FRAMES], ips[MAX_FRAMES];
	size_t n = HDR;
	int nu;
	uint64_t *slot;
	int cut = -1;
	bool maps_known = false;

	if (!r->replaying && s->pid && s->pid != (uint32_t)-1 && r->mode != STACKS_LEAF &&
	    procmaps_unknown(r->pm, s->pid) && defer_sample(r, s, prefix))
		return;
	key[0] = r->per_cgroup ? s->cgroup_id : 0;
	key[1] = prefix ? intern_comm(r, prefix) + 1 : 0;
	key[2] = intern_comm(r, s->pid ? procmaps_comm_of(r->pm, s->pid, s->tid) : "swapper");

	/* Kernel part of the callchain, leaf first. */
	bool kernel = false, first = true;

	for (uint64_t i = 0; i < s->nr_callchain && n < HDR + MAX_FRAMES / 2; i++) {
		uint64_t ip = s->callchain[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			kernel = ip == (uint64_t)PERF_CONTEXT_KERNEL;
			continue;
		}
		if (!kernel)
			break;
		/* Return addresses point after the call: name the call itself. */
		key[n++] = ((uint64_t)OBJ_KERNEL << 48) | ((first ? ip : ip - 1) & 0xffffffffffffull);
		first = false;
	}
	if (!s->nr_callchain && !s->user_mode)
		key[n++] = ((uint64_t)OBJ_KERNEL << 48) | (s->ip & 0xffffffffffffull);

	/* One slot kept for a marker frame. */
	nu = unwinders[r->mode].unwind(r, s, ips, HDR + MAX_FRAMES - n - 1, &cut);
	for (int i = 0; i < nu; i++) {
		uint64_t ip = i && ips[i] ? ips[i] - 1 : ips[i];
		struct pmap_entry *m = (struct pmap_entry *)procmaps_find(r->pm, s->pid, ip);

		/* The sampled user address outside every known map: an exec or
		 * mmap on another CPU's ring is not read yet; see what /proc says
		 * now (this sample's DWARF unwind already stopped at it). */
		if (!m && i == 0 && s->user_mode && s->pid &&
		    procmaps_refresh(r->pm, s->pid, s->tid)) {
			pt_restart(r, s->pid);
			if (r->uc)
				unwind_forget_process(r->uc, s->pid);
			key[2] = intern_comm(r, procmaps_comm_of(r->pm, s->pid, s->tid));
			m = (struct pmap_entry *)procmaps_find(r->pm, s->pid, ip);
		}
		/*
		 * A return address outside every executable mapping of a process
		 * whose maps we know (its leaf was found) is junk: a frame pointer
		 * chain through code built without one, or a walk gone astray.
		 * Nothing above it can be trusted. A mapping made since the maps
		 * were read gets one more look (rate-limited) first.
		 */
		if (!m && i > 0 && maps_known && procmaps_refresh(r->pm, s->pid, s->tid)) {
			pt_restart(r, s->pid);
			if (r->uc)
				unwind_forget_process(r->uc, s->pid);
			m = (struct pmap_entry *)procmaps_find(r->pm, s->pid, ip);
		}
		if (!m && i > 0 && maps_known) {
			cut = STACKS_TRUNC_BAD_ADDRESS;
			break;
		}
		if (!m) {
			key[n++] = ((uint64_t)OBJ_UNKNOWN << 48) | (ip & 0xffffffffffffull);
			continue;
		}
		if (i == 0)
			maps_known = true;
		uint32_t obj = intern_object(r, s->pid, m);
		struct object *o = object_at(r, obj);
		uint64_t off = o && o->is_jit ? ip : ip - m->start + m->pgoff;

		if (o)
			o->used = r->epoch; /* kept until this interval is folded */

		key[n++] = ((uint64_t)obj << 48) | (off & 0xffffffffffffull);
	}
	if (cut >= 0 && nu > 0) {
		uint64_t tk[2] = {s->cgroup_id, (uint64_t)cut};
		uint64_t *tc = fold_slot(r->trunc, tk, sizeof(tk));

		key[n++] = ((uint64_t)OBJ_MARK << 48) | (uint64_t)cut;
		if (tc)
			(*tc)++;
		r->trunc_total[cut]++;
	}
	key[3] = n - HDR;
	slot = fold_slot(r->raw, key, n * sizeof(key[0]));
	if (slot) {
		(*slot)++;
		r->kept++;
	}
}


/* ---- naming ------------------------------------------------------------- */

struct namer {
	struct stacks *r;
	struct fold *out;
	char *line;
	size_t linecap;
	int err;
	bool by_id; /* key lines by the cgroup id (8 bytes first), no label frame */
	bool mods;  /* by_id, and the key ends with a module code per frame */
	uint32_t *codes; /* module codes of the line's frames (see MOD_*) */
	char *tmp;       /* the last name not cached (see frame_name) */
	size_t ncodes, capcodes;
};

/* Module codes in namer keys: none, the kernel, else object id + 1. */
#define MOD_NONE 0u
#define MOD_KERNEL 1u

static char *name_frame(struct stacks *r, uint64_t frame)
{
	uint32_t obj = (uint32_t)(frame >> 48);
	uint64_t off = frame & 0xffffffffffffull;
	char *s = NULL;

	if (obj == OBJ_KERNEL) {
		uint64_t addr = off | 0xffff000000000000ull;
		const char *mod = NULL, *name;

		if (!r->ks_tried) {
			/* Loaded on first use: 100k+ symbols are not free. */
			r->ks_tried = true;
			r->ks = ksyms_load("/proc/kallsyms");
		}
		name = r->ks ? ksyms_lookup(r->ks, addr, &mod) : NULL;

		if (name && asprintf(&s, "%s_[k]", name) < 0)
			s = NULL;
		else if (!name && asprintf(&s, "kernel+0x%" PRIx64 "_[k]", addr) < 0)
			s = NULL;
		return s;
	}
	if (obj == OBJ_UNKNOWN) {
		if (asprintf(&s, "[unmapped]+0x%" PRIx64, off) < 0)
			s = NULL;
		return s;
	}
	if (obj == OBJ_MARK) {
		static const char *const marks[STACKS_TRUNC_N] = {
			[STACKS_TRUNC_STACK_COPY] = "[truncated: stack copy]",
			[STACKS_TRUNC_MAX_STACK] = "[truncated: max stack]",
			[STACKS_TRUNC_BAD_ADDRESS] = "[bad return address]",
		};

		return strdup(off < STACKS_TRUNC_N ? marks[off] : "[truncated]");
	}
	struct object *o = object_at(r, obj);
	const char *name = NULL;
	uint64_t symoff;

	if (o)
		o->named = true;

	if (o && o->is_jit && o->jit_absent) {
		/* no perf map: anonymous code, by the mapping's name */
		if (asprintf(&s, "%s+0x%" PRIx64, o->anon ? o->anon : "[anon]", off) < 0)
			return NULL;
		fold_sanitize(s);
		return s;
	}
	if (o && o->jit && (name = perfmap_lookup(o->jit, off))) {
		s = strdup(name);
		if (s)
			fold_sanitize(s);
		return s;
	}
	if (o && o->st && symtab_lookup(o->st, off, &name, &symoff) == 0) {
		const char *inl[8];
		size_t ni = symtab_inlines(o->st, off, inl, 8);
		size_t len;

		/* Copied below before the cache is asked again. */
		name = demangle_cache_get(r->dm, name);
		len = strlen(name) + 1;

		for (size_t i = 0; i < ni; i++)
			len += strlen(inl[i]) + 1;
		s = malloc(len);
		if (!s)
			return NULL;
		/* Folded order is root first: the function, then the inlined
		 * calls from outermost to innermost. */
		memcpy(s, name, strlen(name) + 1);
		fold_sanitize(s);
		for (size_t i = ni; i-- > 0;) {
			size_t at = strlen(s);

			s[at] = ';';
			memcpy(s + at + 1, inl[i], strlen(inl[i]) + 1);
			fold_sanitize(s + at + 1);
		}
		return s;
	}
	/* No symbol: name the function by where it starts (from .eh_frame), so
	 * its samples fold together; the file offset can be symbolized later
	 * against debuginfo with the object's build-id. */
	uint64_t start;

	if (o && o->st && symtab_func_start(o->st, off, &start) == 0)
		off = start;
	if (asprintf(&s, "%s+0x%" PRIx64, o ? o->base : "[unknown-object]", off) < 0)
		return NULL;
	fold_sanitize(s);
	return s;
}

static const char *frame_name(struct namer *nm, uint64_t frame)
{
	struct stacks *r = nm->r;
	uint64_t *slot = fold_slot(r->names, &frame, sizeof(frame));

	if (!slot)
		return "?";
	if (!*slot) {
		struct object *o = object_at(r, (uint32_t)(frame >> 48));

		if ((uint32_t)(frame >> 48) >= OBJ_FIRST && o && o->jitjob) {
			/* its map is still loading: named for this pass only */
			free(nm->tmp);
			nm->tmp = name_frame(r, frame);
			return nm->tmp ? nm->tmp : "?";
		}
		char *s = name_frame(nm->r, frame);

		if (!s)
			return "?";
		if (r->nstrs == r->capstrs) {
			size_t nc = r->capstrs ? r->capstrs * 2 : 1024;
			char **v = realloc(r->strs, nc * sizeof(*v));

			if (!v) {
				free(s);
				return "?";
			}
			r->strs = v;
			r->capstrs = nc;
		}
		r->strs[r->nstrs] = s;
		*slot = ++r->nstrs;
	}
	return r->strs[*slot - 1];
}

static const char *cgroup_label(struct stacks *r, uint64_t id);

/* The module code of user frame @frame. */
static uint32_t frame_module(struct stacks *r, uint64_t frame)
{
	uint32_t obj = (uint32_t)(frame >> 48);

	if (obj == OBJ_KERNEL)
		return MOD_KERNEL;
	return object_at(r, obj) ? obj + 1 : MOD_NONE;
}

static int append(struct namer *nm, size_t *len, const char *s, uint32_t code)
{
	size_t n = strlen(s);

	if (nm->mods) {
		/* One code per frame: a name with inlined calls is several. */
		size_t pieces = 1;

		for (const char *c = s; (c = strchr(c, ';')); c++)
			pieces++;
		if (nm->ncodes + pieces > nm->capcodes) {
			size_t nc = (nm->ncodes + pieces) * 2;
			uint32_t *v = realloc(nm->codes, nc * sizeof(*v));

			if (!v)
				return -ENOMEM;
			nm->codes = v;
			nm->capcodes = nc;
		}
		while (pieces--)
			nm->codes[nm->ncodes++] = code;
	}

	if (*len + n + 2 > nm->linecap) {
		size_t nc = (*len + n + 2) * 2;
		char *v = realloc(nm->line, nc);

		if (!v)
			return -ENOMEM;
		nm->line = v;
		nm->linecap = nc;
	}
	if (*len > (nm->by_id ? 8u : 0u))
		nm->line[(*len)++] = ';';
	memcpy(nm->line + *len, s, n + 1);
	*len += n;
	return 0;
}

static void name_stack(void *ctx, const void *keyp, size_t klen, uint64_t count)
{
	struct namer *nm = ctx;
	const uint64_t *key = keyp;
	size_t nframes, len = 0, nk = 0;
	uint64_t *slot;

	if (nm->err || klen < HDR * sizeof(uint64_t))
		return;
	nframes = key[3];
	nm->ncodes = 0;
	if (nm->by_id) {
		/* The line starts with the raw cgroup id: 8 bytes, then text. */
		if (nm->linecap < 16) {
			char *v = realloc(nm->line, 64);

			if (!v)
				goto nomem;
			nm->line = v;
			nm->linecap = 64;
		}
		memcpy(nm->line, &key[0], 8);
		len = 8;
		nm->line[len] = '\0';
	}
	if (key[1] && key[1] - 1 < nm->r->ncomms) {
		char *p = strdup(nm->r->comms[key[1] - 1]);

		if (!p)
			goto nomem;
		fold_sanitize(p);
		int e = append(nm, &len, p, MOD_NONE);

		free(p);
		if (e < 0)
			goto nomem;
	}
	if (nm->r->per_cgroup && !nm->by_id &&
	    append(nm, &len, cgroup_label(nm->r, key[0]), MOD_NONE) < 0)
		goto nomem;
	char comm[64];

	snprintf(comm, sizeof(comm), "%s",
		 key[2] < nm->r->ncomms && nm->r->comms[key[2]][0] ? nm->r->comms[key[2]] : "[unknown-comm]");
	fold_sanitize(comm);
	if (append(nm, &len, comm, MOD_NONE) < 0)
		goto nomem;
	/* Count the kernel frames: they come first (leaf first) in the key. */
	while (nk < nframes && (key[HDR + nk] >> 48) == OBJ_KERNEL)
		nk++;
	/* User frames, root first. */
	for (size_t i = nframes; i-- > nk;)
		if (append(nm, &len, frame_name(nm, key[HDR + i]),
			   frame_module(nm->r, key[HDR + i])) < 0)
			goto nomem;
	for (size_t i = nk; i-- > 0;)
		if (append(nm, &len, frame_name(nm, key[HDR + i]), MOD_KERNEL) < 0)
			goto nomem;
	if (nm->mods) {
		/* The codes go after the text's NUL, in the key. */
		size_t need = len + 1 + nm->ncodes * sizeof(uint32_t);

		if (need > nm->linecap) {
			char *v = realloc(nm->line, need);

			if (!v)
				goto nomem;
			nm->line = v;
			nm->linecap = need;
		}
		nm->line[len] = '\0';
		memcpy(nm->line + len + 1, nm->codes, nm->ncodes * sizeof(uint32_t));
		len = need;
	}
	slot = fold_slot(nm->out, nm->line, len);
	if (!slot)
		goto nomem;
	*slot += count;
	return;
nomem:
	nm->err = -ENOMEM;
}

/* ---- cgroup labels ------------------------------------------------------ */

static void rescan_cgroups(struct stacks *r)
{
	struct cg_tree *t;
	time_t now = time(NULL);

	if (!r->mount || now == r->last_rescan)
		return;
	r->last_rescan = now;
	t = cg_tree_scan(r->mount);
	for (size_t i = 0; t && i < cg_tree_count(t); i++) {
		const struct cg_node *n = cg_tree_get(t, i);
		uint64_t *slot = fold_slot(r->cglabels, &n->id, sizeof(n->id));
		char label[600];

		if (!slot || *slot)
			continue;
		cg_identity_label(&n->ident, label, sizeof(label));
		/* Containers by identity; anything else by its path. */
		if (!n->ident.container_id[0] && !n->ident.pod_uid[0] &&
		    !n->ident.container_name[0])
			snprintf(label, sizeof(label), "%s", n->path);
		if (r->nlabels == r->caplabels) {
			size_t nc = r->caplabels ? r->caplabels * 2 : 64;
			char **v = realloc(r->labels, nc * sizeof(*v));

			if (!v)
				break;
			r->labels = v;
			r->caplabels = nc;
		}
		r->labels[r->nlabels] = strdup(label);
		if (!r->labels[r->nlabels])
			break;
		fold_sanitize(r->labels[r->nlabels]);
		*slot = ++r->nlabels;
	}
	cg_tree_free(t);
}

static const char *cgroup_label(struct stacks *r, uint64_t id)
{
	uint64_t *slot;

	if (!id)
		return "[no-cgroup]";
	slot = fold_slot(r->cglabels, &id, sizeof(id));
	if (slot && !*slot) {
		rescan_cgroups(r);
		slot = fold_slot(r->cglabels, &id, sizeof(id));
	}
	return slot && *slot ? r->labels[*slot - 1] : "[removed-cgroup]";
}

/* ---- command ------------------------------------------------------------ */
static void names_flush(struct stacks *r)
{
	for (size_t i = 0; i < r->nstrs; i++)
		free(r->strs[i]);
	free(r->strs);
	r->strs = NULL;
	r->nstrs = r->capstrs = 0;
	fold_free(r->names);
	r->names = NULL;
}

/*
 * Take the perf maps the loader has read. A load still under way is
 * waited for, once per object and STACKS_JIT_WAIT_MS per naming pass in
 * all; after that its frames are named without it (not cached) until it
 * is done: a map that never comes costs one wait, never a stall.
 */
static void jit_settle(struct stacks *r)
{
	struct timespec ts;
	uint64_t deadline;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
		   STACKS_JIT_WAIT_MS * 1000000ull;
	for (size_t i = 0; i < r->nobjs; i++) {
		struct object *o = &r->objs[i]; /* free slots have no job */
		struct perfmap *m = NULL;
		int err = 0;

		if (!o->jitjob)
			continue;
		if (!jitload_wait(o->jitjob, o->jit_waited ? 0 : deadline, &m, &err)) {
			o->jit_waited = true;
			continue;
		}
		jitload_job_free(o->jitjob);
		o->jitjob = NULL;
		o->jit = m;
		o->jit_absent = !m && err == ENOENT;
	}
}

/* The name cache exists and is within its bound; loaded maps taken. */
static int names_ready(struct stacks *r)
{
	jit_settle(r);
	if (r->names && r->nstrs > NAMES_MAX)
		names_flush(r);
	if (!r->names)
		r->names = fold_new();
	return r->names ? 0 : -ENOMEM;
}

/* ---- side-band ---------------------------------------------------------- */

void stacks_mmap(struct stacks *r, const struct sample_mmap *m)
{
	procmaps_mmap(r->pm, m->pid, m->start, m->len, m->pgoff, makedev(m->maj, m->min), m->ino,
		      (m->prot & PROT_EXEC) != 0, m->filename);
	/* New code may sit where old code was: the unwinder's rules for it are stale. */
	if ((m->prot & PROT_EXEC) && r->uc)
		unwind_forget_process(r->uc, m->pid);
}

/* procmaps dropped @pid's maps (exec, a fork reusing the pid): so do we. */
static void pt_restart(struct stacks *r, uint32_t pid)
{
	struct ptrack *p = pt_lookup(r, pid);

	if (p) {
		pt_clear(r, p);
		p->exited = 0;
	}
}

void stacks_comm(struct stacks *r, uint32_t pid, uint32_t tid, const char *comm, bool exec)
{
	procmaps_comm(r->pm, pid, tid, comm, exec);
	if (exec)
		pt_restart(r, pid);
	if (exec && r->uc)
		unwind_forget_process(r->uc, pid);
}

void stacks_fork(struct stacks *r, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	procmaps_fork(r->pm, pid, ppid);
	if (pid != ppid)
		pt_restart(r, pid);
	if (pid != ppid && r->uc)
		unwind_forget_process(r->uc, pid); /* its maps are now its parent's */
}

void stacks_exit(struct stacks *r, uint32_t pid, uint32_t tid)
{
	struct ptrack *p;

	procmaps_exit(r->pm, pid, tid);
	if (pid == tid && (p = pt_lookup(r, pid)))
		p->exited = 1;
	if (pid == tid && r->uc)
		unwind_forget_process(r->uc, pid); /* the pid may be reused */
}

struct prune_ctx {
	struct stacks *r;
	char **strs; /* the kept names, renumbered */
	size_t n;
	struct fold *names;
	bool failed;
};

static void prune_one(void *ctx, const void *key, size_t len, uint64_t value)
{
	struct prune_ctx *c = ctx;
	struct stacks *r = c->r;
	uint64_t frame, *slot;
	uint32_t obj;

	if (c->failed || len != sizeof(frame) || !value || value > r->nstrs)
		return;
	memcpy(&frame, key, sizeof(frame));
	obj = (uint32_t)(frame >> 48);
	if (obj >= OBJ_FIRST && !object_at(r, obj))
		return; /* its object was dropped: freed with the old table */
	slot = fold_slot(c->names, &frame, sizeof(frame));
	if (!slot) {
		c->failed = true;
		return;
	}
	c->strs[c->n] = r->strs[value - 1];
	r->strs[value - 1] = NULL;
	*slot = ++c->n;
}

/* Forget the cached names of dropped objects (their ids will be reused).
 * Out of memory, the whole cache goes: slower, never wrong. */
static void names_prune(struct stacks *r)
{
	struct prune_ctx c = {.r = r};

	if (!r->names)
		return;
	c.names = fold_new();
	c.strs = malloc((r->nstrs ? r->nstrs : 1) * sizeof(*c.strs));
	if (c.names && c.strs)
		fold_foreach(r->names, prune_one, &c);
	if (!c.names || !c.strs || c.failed) {
		/* Names already moved go back, then everything is flushed. */
		fold_free(c.names);
		for (size_t i = 0; c.strs && i < c.n; i++)
			free(c.strs[i]);
		free(c.strs);
		names_flush(r);
		return;
	}
	for (size_t i = 0; i < r->nstrs; i++)
		free(r->strs[i]);
	free(r->strs);
	fold_free(r->names);
	r->names = c.names;
	r->strs = c.strs;
	r->nstrs = r->capstrs = c.n;
	if (!r->capstrs) {
		free(r->strs);
		r->strs = NULL;
	}
}

/* objkey without the keys of dropped objects, once they pile up. */
static void objkey_rebuild(struct stacks *r)
{
	struct fold *f;

	if (r->dead_keys <= r->nlive + 64)
		return;
	f = fold_new();
	if (!f)
		return;
	for (size_t i = 0; i < r->nobjs; i++) {
		const struct object *o = &r->objs[i];
		uint64_t *slot;

		if (!o->live || !o->key)
			continue;
		slot = fold_slot(f, o->key, o->keylen);
		if (!slot) {
			fold_free(f);
			return;
		}
		*slot = i + OBJ_FIRST + 1;
	}
	fold_free(r->objkey);
	r->objkey = f;
	r->dead_keys = 0;
}

/* Drop the objects no tracked process holds and no unfolded stack uses. */
static void objects_sweep(struct stacks *r)
{
	bool named = false;
	size_t n = 0;

	r->sweep = false;
	for (size_t i = 0; i < r->nobjs; i++) {
		const struct object *o = &r->objs[i];

		if (!o->live || o->nprocs || o->used == r->epoch)
			continue;
		named |= o->named;
		object_release(r, (uint32_t)(i + OBJ_FIRST));
		n++;
	}
	if (!n)
		return;
	r->dropped += n;
	if (named)
		names_prune(r);
	objkey_rebuild(r);
}

void stacks_gc(struct stacks *r)
{
	r->gc_gen++;
	replay_pending(r, false);
	procmaps_gc(r->pm);
	/* The same aging as procmaps_gc(): gone two calls after the EXIT. */
	for (size_t i = 0; i < r->ptcap; i++) {
		struct ptrack *p = &r->pt[i];

		if (!p->pid) {
			continue;
		} else if (p->exited == 1) {
			p->exited = 2;
		} else if (p->exited == 2) {
			pt_clear(r, p);
			free(p->objs);
			memset(p, 0, sizeof(*p));
			p->tomb = true;
			r->ptcount--;
		}
	}
	if (r->sweep)
		objects_sweep(r);
}

/* ---- life cycle --------------------------------------------------------- */

uint64_t stacks_regs_mask(enum stacks_mode mode)
{
	return mode == STACKS_DWARF ? unwind_dwarf_regs_mask() : 0;
}

const char *stacks_mode_name(enum stacks_mode mode)
{
	return mode <= STACKS_LEAF ? unwinders[mode].name : "?";
}

struct stacks *stacks_new(enum stacks_mode mode, bool per_cgroup, const char *cgroup_mount)
{
	struct stacks *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->mode = mode;
	r->per_cgroup = per_cgroup;
	r->pm = procmaps_new("/proc");
	r->raw = fold_new();
	r->objkey = fold_new();
	r->strings = fold_new();
	r->cglabels = fold_new();
	r->trunc = fold_new();
	r->max_stack = 127;
	r->mount = cgroup_mount ? strdup(cgroup_mount) : NULL;
	r->dm = demangle_cache_new(DEMANGLE_FULL, 0);
	if (mode == STACKS_DWARF)
		r->uc = unwind_cache_new(256);
	if (!r->pm || !r->raw || !r->objkey || !r->strings || !r->cglabels || !r->trunc || !r->dm ||
	    (cgroup_mount && !r->mount) || (mode == STACKS_DWARF && !r->uc)) {
		stacks_free(r);
		errno = ENOMEM;
		return NULL;
	}
	fold_set_limit(r->raw, MAX_DISTINCT_STACKS);
	r->epoch = 1;
	return r;
}

void stacks_free(struct stacks *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nobjs; i++) {
		symtab_free(r->objs[i].st);
		jitload_job_free(r->objs[i].jitjob);
		perfmap_free(r->objs[i].jit);
		free(r->objs[i].anon);
		free(r->objs[i].path);
		free(r->objs[i].open_path);
		free(r->objs[i].key);
	}
	free(r->objs);
	free(r->free_ids);
	for (size_t i = 0; i < r->ptcap; i++)
		free(r->pt[i].objs);
	free(r->pt);
	for (size_t i = 0; i < r->ncomms; i++)
		free(r->comms[i]);
	free(r->comms);
	for (size_t i = 0; i < r->nlabels; i++)
		free(r->labels[i]);
	free(r->labels);
	fold_free(r->raw);
	fold_free(r->objkey);
	fold_free(r->strings);
	fold_free(r->cglabels);
	fold_free(r->trunc);
	for (size_t i = 0; i < r->npending; i++)
		free(r->pending[i].buf);
	free(r->pending);
	names_flush(r);
	demangle_cache_free(r->dm);
	jitload_free(r->jl); /* after every job is freed */
	procmaps_free(r->pm);
	unwind_cache_free(r->uc);
	ksyms_free(r->ks);
	free(r->mount);
	free(r);
}

int stacks_set_demangle(struct stacks *r, enum demangle_style style)
{
	struct demangle_cache *dm;

	if (!r)
		return -EINVAL;
	if (demangle_cache_style(r->dm) == style)
		return 0;
	dm = demangle_cache_new(style, 0);
	if (!dm)
		return -ENOMEM;
	demangle_cache_free(r->dm);
	r->dm = dm;
	names_flush(r); /* names already made were made in the old style */
	return 0;
}

int stacks_write(struct stacks *r, FILE *out, size_t *nlines)
{
	struct namer nm = {.r = r};
	int err;

	replay_pending(r, true);
	nm.out = fold_new();
	if (!nm.out || names_ready(r) < 0) {
		fold_free(nm.out);
		return -ENOMEM;
	}
	fold_foreach(r->raw, name_stack, &nm);
	err = nm.err ? nm.err : fold_write(nm.out, out);
	if (nlines)
		*nlines = fold_count(nm.out);
	free(nm.line);
	free(nm.tmp);
	fold_free(nm.out);
	return err;
}

void stacks_stats(const struct stacks *r, struct stacks_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->kept = r->kept;
	out->refused = fold_refused(r->raw);
	out->unwind_errors = r->unwind_errors;
	out->no_user_regs = r->no_user_stack;
	out->objects = r->nlive;
	out->objects_dropped = r->dropped;
	out->processes = procmaps_nprocs(r->pm);
	out->distinct = fold_count(r->raw);
	memcpy(out->truncated, r->trunc_total, sizeof(out->truncated));
	out->fork_seeds = procmaps_fork_seeds(r->pm);
	out->deferred = r->deferred;
}

const char *stacks_trunc_name(enum stacks_trunc t)
{
	static const char *const names[STACKS_TRUNC_N] = {
		[STACKS_TRUNC_STACK_COPY] = "stack_copy",
		[STACKS_TRUNC_MAX_STACK] = "max_stack",
		[STACKS_TRUNC_BAD_ADDRESS] = "bad_return_address",
	};

	return (unsigned)t < STACKS_TRUNC_N ? names[t] : "?";
}

const char *stacks_cgroup_label(struct stacks *r, uint64_t cgroup_id)
{
	return cgroup_label(r, cgroup_id);
}

void stacks_set_max_stack(struct stacks *r, uint32_t max_stack)
{
	r->max_stack = max_stack ? max_stack : 127;
}

struct trunc_ctx {
	void (*cb)(void *ctx, uint64_t cgroup_id, enum stacks_trunc reason, uint64_t count);
	void *ctx;
};

static void trunc_one(void *ctx, const void *key, size_t len, uint64_t count)
{
	const struct trunc_ctx *t = ctx;
	uint64_t k[2];

	if (len != sizeof(k) || !count)
		return;
	memcpy(k, key, sizeof(k));
	if (k[1] < STACKS_TRUNC_N)
		t->cb(t->ctx, k[0], (enum stacks_trunc)k[1], count);
}

void stacks_foreach_truncated(const struct stacks *r,
			      void (*cb)(void *ctx, uint64_t cgroup_id, enum stacks_trunc reason,
					 uint64_t count),
			      void *ctx)
{
	struct trunc_ctx t = {cb, ctx};

	fold_foreach(r->trunc, trunc_one, &t);
}

struct each_ctx {
	void (*cb)(void *ctx, uint64_t cgroup_id, const char *folded, uint64_t count);
	void *ctx;
};

static void each_line(void *ctx, const void *key, size_t len, uint64_t count)
{
	const struct each_ctx *e = ctx;
	uint64_t id;

	if (len < 8)
		return;
	memcpy(&id, key, 8);
	e->cb(e->ctx, id, (const char *)key + 8, count);
}

int stacks_foreach(struct stacks *r,
		   void (*cb)(void *ctx, uint64_t cgroup_id, const char *folded, uint64_t count),
		   void *ctx)
{
	struct namer nm = {.r = r, .by_id = true};
	struct each_ctx e = {cb, ctx};
	int err;

	replay_pending(r, true);
	nm.out = fold_new();
	if (!nm.out || names_ready(r) < 0) {
		fold_free(nm.out);
		return -ENOMEM;
	}
	fold_foreach(r->raw, name_stack, &nm);
	err = nm.err;
	if (!err)
		fold_foreach(nm.out, each_line, &e);
	free(nm.line);
	free(nm.tmp);
	fold_free(nm.out);
	return err;
}

/* The kernel's GNU build-id from /sys/kernel/notes (ELF notes, as perf
 * reads it), once; "" when it cannot be read. */
static const char *kernel_build_id(struct stacks *r)
{
	uint8_t buf[4096];
	size_t len, at = 0;
	FILE *f;

	if (r->kbid_tried)
		return r->kbid;
	r->kbid_tried = true;
	f = fopen("/sys/kernel/notes", "re");
	if (!f)
		return r->kbid;
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	while (len - at >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_at = at + 12, desc_at, next;

		memcpy(&namesz, buf + at, 4);
		memcpy(&descsz, buf + at + 4, 4);
		memcpy(&type, buf + at + 8, 4);
		if (namesz > len || descsz > len)
			break;
		desc_at = name_at + ((namesz + 3u) & ~3u);
		next = desc_at + ((descsz + 3u) & ~3u);
		if (next > len || desc_at + descsz > len)
			break;
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 &&
		    !memcmp(buf + name_at, "GNU", 4) && descsz && descsz <= 32) {
			for (uint32_t i = 0; i < descsz; i++)
				snprintf(r->kbid + 2 * i, 3, "%02x", buf[desc_at + i]);
			break;
		}
		at = next;
	}
	return r->kbid;
}

/* Module path and build-id of module code @code (see MOD_*). */
static void module_of(struct stacks *r, uint32_t code, struct stacks_frame *f)
{
	struct object *o = code > MOD_KERNEL ? object_at(r, code - 1) : NULL;

	f->module = f->build_id = NULL;
	if (code == MOD_KERNEL) {
		f->module = "[kernel.kallsyms]";
		f->build_id = kernel_build_id(r);
	} else if (o) {
		f->module = o->is_jit ? (o->jit_absent ? (o->anon ? o->anon : "[anon]") : "[jit]")
				      : o->path;
		f->build_id = o->st ? symtab_build_id(o->st) : "";
	}
}

struct frames_ctx {
	struct stacks *r;
	void (*cb)(void *ctx, uint64_t cgroup_id, const struct stacks_frame *frames, size_t n,
		   uint64_t count);
	void *ctx;
	char *text;
	size_t textcap;
	struct stacks_frame *frames;
	size_t cap;
	int err;
};

/* One key of the modules namer: cgroup id, text, NUL, module codes. */
static void each_frames(void *ctx, const void *key, size_t len, uint64_t count)
{
	struct frames_ctx *e = ctx;
	const char *text = (const char *)key + 8;
	size_t tlen, ncodes, n = 0;
	uint64_t id;

	if (e->err || len < 9)
		return;
	memcpy(&id, key, 8);
	tlen = strnlen(text, len - 8);
	if (tlen == len - 8)
		return;
	ncodes = (len - 8 - tlen - 1) / sizeof(uint32_t);
	if (tlen + 1 > e->textcap) {
		char *v = realloc(e->text, tlen + 1);

		if (!v)
			goto nomem;
		e->text = v;
		e->textcap = tlen + 1;
	}
	if (ncodes > e->cap) {
		struct stacks_frame *v = realloc(e->frames, ncodes * sizeof(*v));

		if (!v)
			goto nomem;
		e->frames = v;
		e->cap = ncodes;
	}
	memcpy(e->text, text, tlen + 1);
	/* Split at every ';' (empty pieces included: the codes count them). */
	for (char *f = e->text; f && n < ncodes; n++) {
		char *semi = strchr(f, ';');
		uint32_t code;

		if (semi)
			*semi = '\0';
		memcpy(&code, text + tlen + 1 + n * sizeof(code), sizeof(code));
		e->frames[n].name = f;
		module_of(e->r, code, &e->frames[n]);
		f = semi ? semi + 1 : NULL;
	}
	if (n)
		e->cb(e->ctx, id, e->frames, n, count);
	return;
nomem:
	e->err = -ENOMEM;
}

int stacks_foreach_frames(struct stacks *r,
			  void (*cb)(void *ctx, uint64_t cgroup_id, const struct stacks_frame *frames,
				     size_t n, uint64_t count),
			  void *ctx)
{
	struct namer nm = {.r = r, .by_id = true, .mods = true};
	struct frames_ctx e = {.r = r, .cb = cb, .ctx = ctx};
	int err;

	replay_pending(r, true);
	nm.out = fold_new();
	if (!nm.out || names_ready(r) < 0) {
		fold_free(nm.out);
		return -ENOMEM;
	}
	fold_foreach(r->raw, name_stack, &nm);
	err = nm.err;
	if (!err) {
		fold_foreach(nm.out, each_frames, &e);
		err = e.err;
	}
	free(e.text);
	free(e.frames);
	free(nm.codes);
	free(nm.line);
	free(nm.tmp);
	fold_free(nm.out);
	return err;
}

int stacks_reset(struct stacks *r)
{
	struct fold *f = fold_new();
	struct fold *t = fold_new();

	if (!f || !t) {
		fold_free(f);
		fold_free(t);
		return -ENOMEM;
	}
	fold_free(r->trunc);
	r->trunc = t;
	fold_set_limit(f, MAX_DISTINCT_STACKS);
	fold_free(r->raw);
	r->raw = f;
	r->kept = 0;
	/* The objects of the folded interval's stacks may go at the next gc. */
	r->epoch++;
	r->sweep = true;
	return 0;
}
