// SPDX-License-Identifier: MIT
/*
 * Naming and output of the stacks engine (see the essay at the head of
 * stacks.c): a frame (object, offset) named once and cached across
 * intervals, raw stacks turned into folded lines (comm, cgroup label,
 * frames with their inlined calls), and the walks that write them: folded
 * text, per-line callbacks, frames with their modules and build-ids.
 */
#include "agent/stacks/stacks_priv.h"
#include "agent/symbols/elfobj.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cgroup/runtime.h"
#include "lib/grow.h"

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
	struct object *o = stacks_object_at(r, obj);
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
		struct object *o = stacks_object_at(r, (uint32_t)(frame >> 48));

		if ((uint32_t)(frame >> 48) >= OBJ_FIRST && o && o->jitjob) {
			/* its map is still loading: named for this pass only */
			free(nm->tmp);
			nm->tmp = name_frame(r, frame);
			return nm->tmp ? nm->tmp : "?";
		}
		char *s = name_frame(nm->r, frame);

		if (!s)
			return "?";
		if (GROW_ARRAY(r->strs, r->nstrs, r->capstrs, 1024) < 0) {
			free(s);
			return "?";
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
	return stacks_object_at(r, obj) ? obj + 1 : MOD_NONE;
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

static bool is_container(const struct cg_node *n)
{
	return n->ident.container_id[0] || n->ident.pod_uid[0];
}

/* Ask the runtime cache about the containers not labelled yet, and give it
 * a second to answer (one-off commands name cgroups at their end). */
static void want_names(struct stacks *r, const struct cg_tree *t)
{
	bool asked = false;

	for (size_t i = 0; r->rt && t && i < cg_tree_count(t); i++) {
		const struct cg_node *n = cg_tree_get(t, i);
		uint64_t *slot = fold_slot(r->cglabels, &n->id, sizeof(n->id));

		if (slot && !*slot && is_container(n) && !cg_rtcache_want(r->rt, n->path))
			asked = true;
	}
	if (asked)
		cg_rtcache_settle(r->rt, 1000);
}

/* After the path's label: " NAME (IMAGE)" as far as the runtime knows. */
static void runtime_suffix(struct stacks *r, const struct cg_node *n, char *label, size_t len)
{
	struct cg_rtinfo ri;
	size_t l = strlen(label);

	if (!r->rt || !is_container(n) || cg_rtcache_get(r->rt, n->path, &ri) != 1)
		return;
	if (l + 1 < len && cg_rtinfo_display(&ri, label + l + 1, len - l - 1) > 0) {
		label[l] = ' ';
		l = strlen(label);
	}
	if (ri.image && l < len)
		snprintf(label + l, len - l, " (%s)", ri.image);
	cg_rtinfo_release(&ri);
}

static void rescan_cgroups(struct stacks *r)
{
	struct cg_tree *t;
	time_t now = time(NULL);

	if (!r->mount || now == r->last_rescan)
		return;
	r->last_rescan = now;
	t = cg_tree_scan(r->mount);
	want_names(r, t);
	for (size_t i = 0; t && i < cg_tree_count(t); i++) {
		const struct cg_node *n = cg_tree_get(t, i);
		uint64_t *slot = fold_slot(r->cglabels, &n->id, sizeof(n->id));
		char label[1200];

		if (!slot || *slot)
			continue;
		cg_identity_label(&n->ident, label, sizeof(label));
		/* Containers by identity; anything else by its path. */
		if (!is_container(n) && !n->ident.container_name[0])
			snprintf(label, sizeof(label), "%s", n->path);
		else
			runtime_suffix(r, n, label, sizeof(label));
		if (GROW_ARRAY(r->labels, r->nlabels, r->caplabels, 64) < 0)
			break;
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
void stacks_names_flush(struct stacks *r)
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
		stacks_names_flush(r);
	if (!r->names)
		r->names = fold_new();
	return r->names ? 0 : -ENOMEM;
}

/*
 * Name every raw stack of the interval into nm->out (made here): held
 * samples counted first, perf maps settled. 0 or -errno; either way the
 * caller releases @nm with namer_release().
 */
static int namer_run(struct stacks *r, struct namer *nm)
{
	stacks_replay_pending(r, true);
	nm->out = fold_new();
	if (!nm->out || names_ready(r) < 0)
		return -ENOMEM;
	fold_foreach(r->raw, name_stack, nm);
	return nm->err;
}

static void namer_release(struct namer *nm)
{
	free(nm->codes);
	free(nm->line);
	free(nm->tmp);
	fold_free(nm->out);
}

int stacks_write(struct stacks *r, FILE *out, size_t *nlines)
{
	struct namer nm = {.r = r};
	int err = namer_run(r, &nm);

	if (!err)
		err = fold_write(nm.out, out);
	if (nlines && nm.out)
		*nlines = fold_count(nm.out);
	namer_release(&nm);
	return err;
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
	int err = namer_run(r, &nm);

	if (!err)
		fold_foreach(nm.out, each_line, &e);
	namer_release(&nm);
	return err;
}

/* The kernel's GNU build-id from /sys/kernel/notes (ELF notes, as perf
 * reads it), once; "" when it cannot be read. */
static const char *kernel_build_id(struct stacks *r)
{
	uint8_t buf[4096], bid[ELFOBJ_MAX_BUILD_ID];
	size_t len, n;
	FILE *f;

	if (r->kbid_tried)
		return r->kbid;
	r->kbid_tried = true;
	f = fopen("/sys/kernel/notes", "re");
	if (!f)
		return r->kbid;
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	n = elfobj_notes_build_id(buf, len, bid);
	if (n > 0 && 2 * n < sizeof(r->kbid))
		elfobj_hex(bid, n, r->kbid);
	return r->kbid;
}

/* Module path and build-id of module code @code (see MOD_*). */
static void module_of(struct stacks *r, uint32_t code, struct stacks_frame *f)
{
	struct object *o = code > MOD_KERNEL ? stacks_object_at(r, code - 1) : NULL;

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
	int err = namer_run(r, &nm);

	if (!err) {
		fold_foreach(nm.out, each_frames, &e);
		err = e.err;
	}
	free(e.text);
	free(e.frames);
	namer_release(&nm);
	return err;
}

void stacks_set_runtime(struct stacks *r, struct cg_rtcache *rt)
{
	r->rt = rt;
}

const char *stacks_cgroup_label(struct stacks *r, uint64_t cgroup_id)
{
	return cgroup_label(r, cgroup_id);
}

struct leaf_ctx {
	struct stacks *r;
	void (*cb)(void *ctx, const struct stacks_leaf *l, uint64_t count);
	void *ctx;
};

/* One raw stack: its first user frame is the sampled address (kernel frames,
 * leaf first, come before it; in STACKS_LEAF mode it is the only one). */
static void each_leaf(void *ctx, const void *keyp, size_t len, uint64_t count)
{
	struct leaf_ctx *e = ctx;
	const uint64_t *key = keyp;
	size_t n = len / sizeof(*key);
	struct stacks_leaf l = {0};

	for (size_t i = HDR; i < n; i++) {
		uint32_t obj = (uint32_t)(key[i] >> 48);
		struct object *o;

		if (obj == OBJ_KERNEL)
			continue;
		o = obj >= OBJ_FIRST && obj != OBJ_MARK ? stacks_object_at(e->r, obj) : NULL;
		if (o && !o->is_jit && o->dso) {
			l.dso = o->dso;
			l.symtab = o->st;
			l.path = o->path;
			l.base = o->base;
			l.open_path = o->open_path;
			l.root = o->root_known ? o->root : NULL;
			l.off = key[i] & 0xffffffffffffull;
		}
		break;
	}
	e->cb(e->ctx, &l, count);
}

int stacks_foreach_leaf(struct stacks *r,
			void (*cb)(void *ctx, const struct stacks_leaf *l, uint64_t count),
			void *ctx)
{
	struct leaf_ctx e = {.r = r, .cb = cb, .ctx = ctx};

	stacks_replay_pending(r, true);
	fold_foreach(r->raw, each_leaf, &e);
	return 0;
}
