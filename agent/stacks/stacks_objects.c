// SPDX-License-Identifier: MIT
/*
 * The object registry of the stacks engine (see the essay at the head of
 * stacks.c): a binary, the vDSO or a process's JIT code interned once per
 * (dev, ino) or path (a binary as its dso, agent/symbols/dso.h, whose
 * symbols it names frames with and which the unwinder shares by the same
 * key), its id cached in the procmaps tag with a generation;
 * the objects each process interned, aged with procmaps' processes; the
 * side-band records (mmap, comm, fork, exit) and the gc that drops objects
 * no process and no pending stack holds.
 */
#include "agent/stacks/stacks_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/grow.h"

/* ---- interning ---------------------------------------------------------- */

uint32_t stacks_intern_comm(struct stacks *r, const char *comm)
{
	uint64_t *slot = fold_slot(r->strings, comm, strlen(comm));

	if (!slot)
		return 0;
	if (!*slot) {
		if (GROW_ARRAY(r->comms, r->ncomms, r->capcomms, 64) < 0)
			return 0;
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
 * so a copy of our own, in a memfd, gives its symbols (its dso keeps the
 * memfd open).
 */
static struct dso *open_vdso(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512], path[64];
	unsigned long long lo = 0, hi = 0;
	struct dso *d = NULL;
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
		d = dso_open(path, 0, 0);
	}
	close(fd);
	return d;
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

struct object *stacks_object_at(struct stacks *r, uint32_t id)
{
	struct object *o;

	if (id < OBJ_FIRST || id - OBJ_FIRST >= r->nobjs)
		return NULL;
	o = &r->objs[id - OBJ_FIRST];
	return o->live ? o : NULL;
}

/* @pid holds object @id (it has a mapping tagged with it). */
static void pt_add(struct stacks *r, uint32_t pid, uint32_t id)
{
	struct object *o = stacks_object_at(r, id);
	struct ptrack *p;

	if (!pid || !o)
		return;
	p = idtab_get(&r->pt, pid);
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
		struct object *o = stacks_object_at(r, p->objs[i]);

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
		if (GROW_ARRAY(r->objs, r->nobjs, r->capobjs, 64) < 0)
			return 0;
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
	struct object *o = stacks_object_at(r, id);
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
	dso_put(o->dso); /* and with it o->st, its member */
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
	if (GROW_ARRAY(r->free_ids, r->nfree, r->capfree, 64) < 0)
		return; /* the slot is lost for reuse, nothing else */
	r->free_ids[r->nfree++] = id;
}

/* @o's binary opened from @path (shared with the unwinder and whoever else
 * opened it: agent/symbols/dso.h) and its symbols. @exact: only when the
 * file there is the inode @m maps. */
static bool object_open(struct object *o, const char *path, const char *root,
			const struct pmap_entry *m, bool exact)
{
	o->dso = exact ? dso_open_exact(path, m->dev, m->ino) : dso_open(path, m->dev, m->ino);
	o->st = dso_symtab(o->dso, root);
	if (!o->st) {
		dso_put(o->dso);
		o->dso = NULL;
	}
	return o->st != NULL;
}

/* Which root @o's process sees (@root: "/proc/PID/root", "" when gone). */
static void object_note_root(struct object *o, const char *root)
{
	struct stat a, b;

	o->root_known = root[0] && stat(root, &a) == 0 && stat("/", &b) == 0;
	if (o->root_known && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		o->root[0] = '\0';
	else if (o->root_known)
		snprintf(o->root, sizeof(o->root), "%s", root);
}

/* Open the file of non-pseudo mapping @m of @pid for @o. */
static void object_open_file(struct stacks *r, struct object *o, uint32_t pid,
			     const struct pmap_entry *m)
{
	const char *root = procmaps_root(r->pm, pid);
	size_t n = strlen(root) + strlen(m->path) + 1;

	object_note_root(o, root);
	o->open_path = malloc(n);
	if (!o->open_path)
		return;
	snprintf(o->open_path, n, "%s%s", root, m->path);
	if (root[0] && object_open(o, o->open_path, root, m, false))
		return;
	/* The process may be gone; the host view may still do, if the host's
	 * file at that path is the one mapped. Never another file by that name. */
	if ((m->dev || m->ino) && object_open(o, m->path, "", m, true)) {
		snprintf(o->open_path, n, "%s", m->path);
	} else if (!root[0]) {
		free(o->open_path);
		o->open_path = NULL;
	}
}

/* Object index for @m of @pid, opening its symbols on first sight. */
uint32_t stacks_intern_object(struct stacks *r, uint32_t pid, struct pmap_entry *m)
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
		o = stacks_object_at(r, id);
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
	o = stacks_object_at(r, id);
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
		o->dso = open_vdso();
		o->st = dso_symtab(o->dso, "");
	} else if (!pseudo_path(m->path)) {
		object_open_file(r, o, pid, m);
	}
	/* Inlined frames are named at the end, maybe after the process (and
	 * its root) is gone: keep the debuginfo file open from now on. */
	symtab_hold_dwarf(o->st);
	*slot = id + 1;
found:
	o = stacks_object_at(r, id);
	if (!o)
		return OBJ_UNKNOWN;
	m->tag = tag_make(id, o->gen);
	pt_add(r, pid, id);
	return id;

err_release:
	object_release(r, id); /* its key is not in objkey yet */
	return OBJ_UNKNOWN;
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
void stacks_pt_restart(struct stacks *r, uint32_t pid)
{
	struct ptrack *p = idtab_find(&r->pt, pid);

	if (p) {
		pt_clear(r, p);
		p->exited = 0;
	}
}

void stacks_comm(struct stacks *r, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		 uint64_t time)
{
	if (!procmaps_comm(r->pm, pid, tid, comm, exec, time))
		return;
	if (exec)
		stacks_pt_restart(r, pid);
	if (exec && r->uc)
		unwind_forget_process(r->uc, pid);
}

const char *stacks_comm_of(struct stacks *r, uint32_t pid, uint32_t tid)
{
	return procmaps_comm_of(r->pm, pid, tid);
}

void stacks_fork(struct stacks *r, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	procmaps_fork(r->pm, pid, ppid);
	if (pid != ppid)
		stacks_pt_restart(r, pid);
	if (pid != ppid && r->uc)
		unwind_forget_process(r->uc, pid); /* its maps are now its parent's */
}

void stacks_exit(struct stacks *r, uint32_t pid, uint32_t tid)
{
	struct ptrack *p;

	procmaps_exit(r->pm, pid, tid);
	if (pid == tid && (p = idtab_find(&r->pt, pid)))
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
	if (obj >= OBJ_FIRST && !stacks_object_at(r, obj))
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
		stacks_names_flush(r);
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
	stacks_replay_pending(r, false);
	procmaps_gc(r->pm);
	/* The same aging as procmaps_gc(): gone two calls after the EXIT. */
	for (size_t i = 0; i < r->pt.cap; i++) {
		struct ptrack *p = idtab_at(&r->pt, i);

		if (p && p->exited == 1) {
			p->exited = 2;
		} else if (p && p->exited == 2) {
			pt_clear(r, p);
			free(p->objs);
			idtab_del(&r->pt, p);
		}
	}
	if (r->sweep)
		objects_sweep(r);
}
