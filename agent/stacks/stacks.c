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
 *
 * Files: this one takes samples in (the unwinders, the queue of samples
 * held for their FORK record) and holds the life cycle; stacks_objects.c
 * the object registry and the side-band records; stacks_names.c naming
 * frames and the outputs; stacks_priv.h what the three share.
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

/* ---- unwinders ---------------------------------------------------------- */

static const struct unwind_map *find_umap(void *ctx, uint64_t ip)
{
	struct stacks *r = ctx;
	struct pmap_entry *m = (struct pmap_entry *)procmaps_find(r->pm, r->cur_pid, ip);
	struct unwind_map *u;
	struct object *o;

	if (!m)
		return NULL;
	o = stacks_object_at(r, stacks_intern_object(r, r->cur_pid, m));
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


/*
 * Keep a copy of @s for later: rings are drained one CPU after another, so
 * the sample of a child that ran on one CPU may be read before the FORK
 * record its parent's CPU wrote. A child that lived a few ms has no
 * /proc/PID/maps left to read. False when the queue is full.
 */
static bool defer_sample(struct stacks *r, const struct sample *s, const char *prefix,
			 uint64_t weight)
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
	if (GROW_ARRAY(r->pending, r->npending, r->cappending, 64) < 0)
		return false;
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
	p->weight = weight;
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
void stacks_replay_pending(struct stacks *r, bool all)
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
		stacks_add_weight(r, &p->s, p->prefix, p->weight);
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
	stacks_add_weight(r, s, prefix, 1);
}

void stacks_add_weight(struct stacks *r, const struct sample *s, const char *prefix,
		       uint64_t weight)
{
	uint64_t key[HDR + MAX_FRAMES], ips[MAX_FRAMES];
	size_t n = HDR;
	int nu;
	uint64_t *slot;
	int cut = -1;
	bool maps_known = false;

	if (!r->replaying && s->pid && s->pid != (uint32_t)-1 && r->mode != STACKS_LEAF &&
	    procmaps_unknown(r->pm, s->pid) && defer_sample(r, s, prefix, weight))
		return;
	key[0] = r->per_cgroup ? s->cgroup_id : 0;
	key[1] = prefix ? stacks_intern_comm(r, prefix) + 1 : 0;
	key[2] = stacks_intern_comm(r, s->pid ? procmaps_comm_of(r->pm, s->pid, s->tid) : "swapper");

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
			stacks_pt_restart(r, s->pid);
			if (r->uc)
				unwind_forget_process(r->uc, s->pid);
			key[2] = stacks_intern_comm(r, procmaps_comm_of(r->pm, s->pid, s->tid));
			m = (struct pmap_entry *)procmaps_find(r->pm, s->pid, ip);
		}
		/* Still outside: the exec or mmap record that maps it may sit in
		 * a ring not read yet, and /proc was read too recently (or
		 * mid-exec). Look again after the next drain. */
		if (!m && i == 0 && s->user_mode && s->pid && !r->replaying &&
		    defer_sample(r, s, prefix, weight))
			return;
		/*
		 * A return address outside every executable mapping of a process
		 * whose maps we know (its leaf was found) is junk: a frame pointer
		 * chain through code built without one, or a walk gone astray.
		 * Nothing above it can be trusted. A mapping made since the maps
		 * were read gets one more look (rate-limited) first.
		 */
		if (!m && i > 0 && maps_known && procmaps_refresh(r->pm, s->pid, s->tid)) {
			stacks_pt_restart(r, s->pid);
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
		uint32_t obj = stacks_intern_object(r, s->pid, m);
		struct object *o = stacks_object_at(r, obj);
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
		*slot += weight;
		r->kept++;
	}
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
	idtab_init(&r->pt, sizeof(struct ptrack));
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
		dso_put(r->objs[i].dso);
		jitload_job_free(r->objs[i].jitjob);
		perfmap_free(r->objs[i].jit);
		free(r->objs[i].anon);
		free(r->objs[i].path);
		free(r->objs[i].open_path);
		free(r->objs[i].key);
	}
	free(r->objs);
	free(r->free_ids);
	for (size_t i = 0; i < r->pt.cap; i++) {
		struct ptrack *p = idtab_at(&r->pt, i);

		if (p)
			free(p->objs);
	}
	idtab_release(&r->pt);
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
	stacks_names_flush(r);
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
	stacks_names_flush(r); /* names already made were made in the old style */
	return 0;
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

void stacks_set_max_stack(struct stacks *r, uint32_t max_stack)
{
	r->max_stack = max_stack ? max_stack : 127;
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
