// SPDX-License-Identifier: MIT
/*
 * cgperf-agent record: perf record -g + perf script + stackcollapse-perf.pl
 * in one step, per cgroup.
 *
 * The hot path (one call per sample) does no symbolization and no string
 * work: each frame becomes (object id, file offset), the whole stack a
 * small array of integers, counted in a hash table (raw fold). Objects are
 * interned the first time a mapping is hit, while the process is alive, so
 * binaries of short-lived processes and of other mount namespaces can still
 * be opened (through /proc/PID/root). Only at the end is every distinct
 * frame named once and the raw stacks turned into folded text.
 *
 * User stacks come from one of two unwinders behind one small ops struct:
 * frame pointers (the kernel already walked them into the callchain) or
 * DWARF CFI over the copied user stack (agent/unwind.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd.h"
#include "agent/cpumap.h"
#include "agent/events.h"
#include "agent/fold.h"
#include "agent/perfmap.h"
#include "agent/procmaps.h"
#include "agent/sampler.h"
#include "agent/spawn.h"
#include "agent/symtab.h"
#include "agent/unwind.h"
#include "cgroup/identity.h"
#include "cgroup/proc.h"
#include "cgroup/tree.h"

#define MAX_FRAMES 254
#define OBJ_KERNEL 0u
#define OBJ_UNKNOWN 1u /* no mapping: the frame keeps its raw address */
#define OBJ_FIRST 2u
#define MAX_OBJECTS 65000 /* ids live in the top 16 bits of a frame */
#define MAX_DISTINCT_STACKS 2000000

enum cg_mode { CGM_FP, CGM_DWARF, CGM_NONE };

struct object {
	uint64_t dev, ino;
	char *path;      /* as the process saw it */
	char *open_path; /* where it could be opened when first seen */
	const char *base;
	struct symtab *st;
	struct perfmap *jit; /* JIT code: names by absolute address */
};

struct record {
	const char *prog;
	enum cg_mode mode;
	bool per_cgroup;
	struct procmaps *pm;
	struct unwind_cache *uc;
	struct ksyms *ks;
	struct fold *raw;     /* raw stack -> samples */
	struct fold *objkey;  /* (dev, ino) or path -> object index */
	struct fold *strings; /* comm -> id + 1 */
	struct fold *pidsel;  /* pid -> 1 match, 2 no match (with --target) */
	struct cg_selector *sel;
	char **comms;
	size_t ncomms, capcomms;
	struct object *objs;
	size_t nobjs, capobjs;
	/* cgroup id -> label, for --per-cgroup */
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
	/* self figures */
	uint64_t samples, kept, lost, unwind_errors, no_user_stack, filtered;
};

/* ---- interning ---------------------------------------------------------- */

static uint32_t intern_comm(struct record *r, const char *comm)
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

/* Object index for @m of @pid, opening its symbols on first sight. */
static uint32_t intern_object(struct record *r, uint32_t pid, struct pmap_entry *m)
{
	struct { uint64_t dev, ino; } k = {m->dev, m->ino};
	uint64_t *slot;
	struct object *o;

	char jitkey[48];
	char jitpath[4096] = "";

	if (m->tag >= 0)
		return (uint32_t)m->tag;
	/* Files by (dev, ino); JIT code by process; other pseudo maps by name. */
	if (anon_path(m->path) && perfmap_path("/proc", (pid_t)pid, jitpath, sizeof(jitpath)) == 0 &&
	    access(jitpath, R_OK) == 0) {
		snprintf(jitkey, sizeof(jitkey), "jit:%" PRIu32, pid);
		slot = fold_slot(r->objkey, jitkey, strlen(jitkey));
	} else if (m->ino && !pseudo_path(m->path)) {
		jitpath[0] = '\0';
		slot = fold_slot(r->objkey, &k, sizeof(k));
	} else {
		jitpath[0] = '\0';
		slot = fold_slot(r->objkey, m->path, strlen(m->path));
	}
	if (!slot)
		return OBJ_UNKNOWN;
	if (*slot) {
		m->tag = (int32_t)(*slot - 1);
		return (uint32_t)m->tag;
	}
	if (r->nobjs >= MAX_OBJECTS)
		return OBJ_UNKNOWN;
	if (r->nobjs == r->capobjs) {
		size_t nc = r->capobjs ? r->capobjs * 2 : 64;
		struct object *v = realloc(r->objs, nc * sizeof(*v));

		if (!v)
			return OBJ_UNKNOWN;
		r->objs = v;
		r->capobjs = nc;
	}
	o = &r->objs[r->nobjs];
	memset(o, 0, sizeof(*o));
	o->dev = m->dev;
	o->ino = m->ino;
	o->path = strdup(m->path);
	if (!o->path)
		return OBJ_UNKNOWN;
	o->base = strrchr(o->path, '/') ? strrchr(o->path, '/') + 1 : o->path;
	if (jitpath[0]) {
		/* Loaded now, while the process lives; its name for unnamed frames. */
		o->jit = perfmap_load(jitpath);
		free(o->path);
		o->path = strdup(strrchr(jitpath, '/') + 1);
		if (!o->path)
			return OBJ_UNKNOWN;
		o->base = o->path;
	} else if (!strcmp(m->path, "[vdso]")) {
		o->st = open_vdso();
	} else if (!pseudo_path(m->path)) {
		const char *root = procmaps_root(r->pm, pid);
		size_t n = strlen(root) + strlen(m->path) + 1;

		o->open_path = malloc(n);
		if (o->open_path) {
			snprintf(o->open_path, n, "%s%s", root, m->path);
			o->st = symtab_open(o->open_path, root);
			if (!o->st && root[0]) {
				/* The process may be gone; the host view may still do. */
				o->st = symtab_open(m->path, "");
				if (o->st)
					snprintf(o->open_path, n, "%s", m->path);
			}
		}
	}
	/* Inlined frames are named at the end, maybe after the process (and
	 * its root) is gone: keep the debuginfo file open from now on. */
	symtab_hold_dwarf(o->st);
	*slot = r->nobjs + 1 + OBJ_FIRST;
	m->tag = (int32_t)(r->nobjs + OBJ_FIRST);
	r->nobjs++;
	return (uint32_t)m->tag;
}

static struct object *object_at(struct record *r, uint32_t id)
{
	return id >= OBJ_FIRST && id - OBJ_FIRST < r->nobjs ? &r->objs[id - OBJ_FIRST] : NULL;
}

/* ---- unwinders ---------------------------------------------------------- */

static const struct unwind_map *find_umap(void *ctx, uint64_t ip)
{
	struct record *r = ctx;
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
	int (*unwind)(struct record *r, const struct sample *s, uint64_t *ips, size_t max);
};

static int fp_user(struct record *r, const struct sample *s, uint64_t *ips, size_t max)
{
	size_t n = 0;
	bool user = false;

	for (uint64_t i = 0; i < s->nr_callchain && n < max; i++) {
		uint64_t ip = s->callchain[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			user = ip == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (!user)
			continue;
		if (!ip)
			break; /* the walk ran off the end of the frame chain */
		ips[n++] = ip;
	}
	if (!s->nr_callchain && s->user_mode && max)
		ips[n++] = s->ip;
	return (int)n;
}

static int dwarf_user(struct record *r, const struct sample *s, uint64_t *ips, size_t max)
{
	struct unwind_sample us = {
		.regs = s->regs,
		.regs_mask = unwind_dwarf_regs_mask(),
		.stack = s->stack,
		.stack_size = s->stack_size,
		.find_map = find_umap,
		.ctx = r,
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
	return n;
}

static int leaf_only(struct record *r, const struct sample *s, uint64_t *ips, size_t max)
{
	if (!s->user_mode || !max)
		return 0;
	ips[0] = s->ip;
	return 1;
}

static const struct user_unwinder unwinders[] = {
	[CGM_FP] = {"fp", fp_user},
	[CGM_DWARF] = {"dwarf", dwarf_user},
	[CGM_NONE] = {"none", leaf_only},
};

/* ---- the hot path ------------------------------------------------------- */

static bool selected(struct record *r, uint32_t pid)
{
	uint64_t *slot;

	if (!r->sel)
		return true;
	slot = fold_slot(r->pidsel, &pid, sizeof(pid));
	if (!slot)
		return false;
	if (!*slot) {
		struct cg_proc p;

		*slot = 2;
		if (cg_proc_read("/proc", (pid_t)pid, &p) == 0) {
			if (cg_selector_match(r->sel, &p))
				*slot = 1;
			cg_proc_release(&p);
		}
	}
	return *slot == 1 || *slot == 3;
}

/*
 * Raw stack key: [cgroup id, comm id, nframes, then per frame (obj << 48 |
 * offset)]. File offsets fit 48 bits; kernel addresses keep their low 48
 * bits and are re-extended when named.
 */
static void on_sample(void *ctx, const struct sample *s)
{
	struct record *r = ctx;
	uint64_t key[3 + MAX_FRAMES], ips[MAX_FRAMES];
	size_t n = 3;
	int nu;
	uint64_t *slot;

	r->samples++;
	if (!selected(r, s->pid)) {
		r->filtered++;
		return;
	}
	key[0] = r->per_cgroup ? s->cgroup_id : 0;
	key[1] = intern_comm(r, s->pid ? procmaps_comm_of(r->pm, s->pid, s->tid) : "swapper");

	/* Kernel part of the callchain, leaf first. */
	bool kernel = false, first = true;

	for (uint64_t i = 0; i < s->nr_callchain && n < 3 + MAX_FRAMES / 2; i++) {
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

	nu = unwinders[r->mode].unwind(r, s, ips, 3 + MAX_FRAMES - n);
	for (int i = 0; i < nu; i++) {
		uint64_t ip = i && ips[i] ? ips[i] - 1 : ips[i];
		struct pmap_entry *m = (struct pmap_entry *)procmaps_find(r->pm, s->pid, ip);

		if (!m) {
			key[n++] = ((uint64_t)OBJ_UNKNOWN << 48) | (ip & 0xffffffffffffull);
			continue;
		}
		uint32_t obj = intern_object(r, s->pid, m);
		const struct object *o = object_at(r, obj);
		uint64_t off = o && o->jit ? ip : ip - m->start + m->pgoff;

		key[n++] = ((uint64_t)obj << 48) | (off & 0xffffffffffffull);
	}
	key[2] = n - 3;
	slot = fold_slot(r->raw, key, n * sizeof(key[0]));
	if (slot) {
		(*slot)++;
		r->kept++;
	}
}

static void on_mmap(void *ctx, const struct sample_mmap *m)
{
	struct record *r = ctx;

	procmaps_mmap(r->pm, m->pid, m->start, m->len, m->pgoff, makedev(m->maj, m->min), m->ino,
		      (m->prot & 4 /* PROT_EXEC */) != 0, m->filename);
}

static void on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec)
{
	struct record *r = ctx;

	procmaps_comm(r->pm, pid, tid, comm, exec);
	if (exec && r->sel) {
		uint64_t *slot = fold_slot(r->pidsel, &pid, sizeof(pid));

		/* A new program: ask the selector again, except for the command
		 * we ran and its descendants (3), which are targets by definition. */
		if (slot && *slot != 3)
			*slot = 0;
	}
}

static void on_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	struct record *r = ctx;

	procmaps_fork(r->pm, pid, ppid);
	if (r->sel && pid != ppid) {
		uint64_t *ps = fold_slot(r->pidsel, &ppid, sizeof(ppid));
		uint64_t v = ps ? *ps : 0;
		uint64_t *cs = fold_slot(r->pidsel, &pid, sizeof(pid));

		if (cs)
			*cs = v == 1 || v == 3 ? v : 0; /* children of a target are targets */
	}
}

static void on_exit_rec(void *ctx, uint32_t pid, uint32_t tid)
{
	struct record *r = ctx;

	procmaps_exit(r->pm, pid, tid);
}

static void on_lost(void *ctx, uint64_t lost)
{
	struct record *r = ctx;

	r->lost += lost;
}

/* ---- naming ------------------------------------------------------------- */

struct namer {
	struct record *r;
	struct fold *names; /* 8-byte frame -> index + 1 into strs */
	char **strs;
	size_t nstrs, cap;
	struct fold *out;
	char *line;
	size_t linecap;
	int err;
};

static char *name_frame(struct record *r, uint64_t frame)
{
	uint32_t obj = (uint32_t)(frame >> 48);
	uint64_t off = frame & 0xffffffffffffull;
	char *s = NULL;

	if (obj == OBJ_KERNEL) {
		uint64_t addr = off | 0xffff000000000000ull;
		const char *mod = NULL, *name = r->ks ? ksyms_lookup(r->ks, addr, &mod) : NULL;

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
	struct object *o = object_at(r, obj);
	const char *name = NULL;
	uint64_t symoff;

	if (o && o->jit && (name = perfmap_lookup(o->jit, off))) {
		s = strdup(name);
		if (s)
			fold_sanitize(s);
		return s;
	}
	if (o && o->st && symtab_lookup(o->st, off, &name, &symoff) == 0) {
		const char *inl[8];
		size_t ni = symtab_inlines(o->st, off, inl, 8);
		size_t len = strlen(name) + 1;

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
	uint64_t *slot = fold_slot(nm->names, &frame, sizeof(frame));

	if (!slot)
		return "?";
	if (!*slot) {
		char *s = name_frame(nm->r, frame);

		if (!s)
			return "?";
		if (nm->nstrs == nm->cap) {
			size_t nc = nm->cap ? nm->cap * 2 : 1024;
			char **v = realloc(nm->strs, nc * sizeof(*v));

			if (!v) {
				free(s);
				return "?";
			}
			nm->strs = v;
			nm->cap = nc;
		}
		nm->strs[nm->nstrs] = s;
		*slot = ++nm->nstrs;
	}
	return nm->strs[*slot - 1];
}

static const char *cgroup_label(struct record *r, uint64_t id);

static int append(struct namer *nm, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 2 > nm->linecap) {
		size_t nc = (*len + n + 2) * 2;
		char *v = realloc(nm->line, nc);

		if (!v)
			return -ENOMEM;
		nm->line = v;
		nm->linecap = nc;
	}
	if (*len)
		nm->line[(*len)++] = ';';
	memcpy(nm->line + *len, s, n + 1);
	*len += n;
	return 0;
}

static void name_stack(void *ctx, const void *keyp, size_t klen, uint64_t count)
{
	struct namer *nm = ctx;
	const uint64_t *key = keyp;
	size_t nframes = key[2], len = 0, nk = 0;
	uint64_t *slot;

	if (nm->err || klen < 3 * sizeof(uint64_t))
		return;
	if (nm->r->per_cgroup && append(nm, &len, cgroup_label(nm->r, key[0])) < 0)
		goto nomem;
	char comm[64];

	snprintf(comm, sizeof(comm), "%s",
		 key[1] < nm->r->ncomms && nm->r->comms[key[1]][0] ? nm->r->comms[key[1]] : "[unknown-comm]");
	fold_sanitize(comm);
	if (append(nm, &len, comm) < 0)
		goto nomem;
	/* Count the kernel frames: they come first (leaf first) in the key. */
	while (nk < nframes && (key[3 + nk] >> 48) == OBJ_KERNEL)
		nk++;
	/* User frames, root first. */
	for (size_t i = nframes; i-- > nk;)
		if (append(nm, &len, frame_name(nm, key[3 + i])) < 0)
			goto nomem;
	for (size_t i = nk; i-- > 0;)
		if (append(nm, &len, frame_name(nm, key[3 + i])) < 0)
			goto nomem;
	slot = fold_slot(nm->out, nm->line, len);
	if (!slot)
		goto nomem;
	*slot += count;
	return;
nomem:
	nm->err = -ENOMEM;
}

/* ---- cgroup labels ------------------------------------------------------ */

static void rescan_cgroups(struct record *r)
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

static const char *cgroup_label(struct record *r, uint64_t id)
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

static void usage(FILE *f)
{
	fputs("usage: cgperf-agent record [-a | -G CG[,CG...] | -p PID | --target SELECTOR]\n"
	      "                           [-F HZ | -c PERIOD] [-e EVENT] [-g | --call-graph fp|dwarf[,BYTES]]\n"
	      "                           [-o FILE] [--per-cgroup] [--duration SECONDS | -- COMMAND...]\n"
	      "\n"
	      "  -a, --all-cpus          sample the whole host (default)\n"
	      "  -G, --cgroup CG,...     only these cgroups (paths relative to the cgroup mount)\n"
	      "  -p, --pid PID           only this process and the children it forks\n"
	      "  -t, --target SELECTOR   processes matching comm=, exe=, cgroup=, pid=, cmdline~\n"
	      "  -F, --freq HZ           samples per second per CPU (default 99)\n"
	      "  -c, --count PERIOD      one sample every PERIOD events instead\n"
	      "  -e, --event EVENT       sampling event (default cpu-clock)\n"
	      "  -g                      stacks by frame pointers (= --call-graph fp)\n"
	      "      --call-graph MODE   fp, or dwarf[,BYTES] to unwind a BYTES copy of the user\n"
	      "                          stack with .eh_frame (default 8192)\n"
	      "  -o, --output FILE       folded stacks to FILE (default stdout)\n"
	      "      --per-cgroup        the cgroup (container identity when known) as first frame\n"
	      "  -d, --duration SECONDS  stop after this long (default: Ctrl-C or COMMAND's end)\n"
	      "  -v, --verbose           print the agent's own figures on stderr\n",
	      f);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int parse_u64(const char *prog, const char *what, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || s[0] == '-') {
		fprintf(stderr, "%s: %s must be a positive integer, not '%s'\n", prog, what, s);
		return 2;
	}
	*out = v;
	return 0;
}

static void record_free(struct record *r)
{
	for (size_t i = 0; i < r->nobjs; i++) {
		symtab_free(r->objs[i].st);
		perfmap_free(r->objs[i].jit);
		free(r->objs[i].path);
		free(r->objs[i].open_path);
	}
	free(r->objs);
	for (size_t i = 0; i < r->ncomms; i++)
		free(r->comms[i]);
	free(r->comms);
	for (size_t i = 0; i < r->nlabels; i++)
		free(r->labels[i]);
	free(r->labels);
	fold_free(r->raw);
	fold_free(r->objkey);
	fold_free(r->strings);
	fold_free(r->pidsel);
	fold_free(r->cglabels);
	cg_selector_free(r->sel);
	procmaps_free(r->pm);
	unwind_cache_free(r->uc);
	ksyms_free(r->ks);
	free(r->mount);
}

static int write_folded(struct record *r, FILE *out, size_t *nlines)
{
	struct namer nm = {.r = r};
	int err;

	nm.names = fold_new();
	nm.out = fold_new();
	if (!nm.names || !nm.out) {
		fold_free(nm.names);
		fold_free(nm.out);
		return -ENOMEM;
	}
	fold_foreach(r->raw, name_stack, &nm);
	err = nm.err ? nm.err : fold_write(nm.out, out);
	*nlines = fold_count(nm.out);
	for (size_t i = 0; i < nm.nstrs; i++)
		free(nm.strs[i]);
	free(nm.strs);
	free(nm.line);
	fold_free(nm.names);
	fold_free(nm.out);
	return err;
}

int cmd_record(int argc, char **argv)
{
	enum { OPT_CALLGRAPH = 256, OPT_PERCG };
	static const struct option longopts[] = {
		{"all-cpus", no_argument, NULL, 'a'},
		{"cgroup", required_argument, NULL, 'G'},
		{"pid", required_argument, NULL, 'p'},
		{"target", required_argument, NULL, 't'},
		{"freq", required_argument, NULL, 'F'},
		{"count", required_argument, NULL, 'c'},
		{"event", required_argument, NULL, 'e'},
		{"call-graph", required_argument, NULL, OPT_CALLGRAPH},
		{"output", required_argument, NULL, 'o'},
		{"per-cgroup", no_argument, NULL, OPT_PERCG},
		{"duration", required_argument, NULL, 'd'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct record r = {.prog = "cgperf-agent record", .mode = CGM_NONE};
	struct sampler_opts so = {.freq = 99, .stack_bytes = 8192, .mmap_pages = 64};
	struct sampler *smp = NULL;
	struct ev_spec ev = {0};
	const char *evname = "cpu-clock", *outpath = NULL;
	char *groups_arg = NULL;
	bool all = false;
	char *groups_copy = NULL, **cgdirs = NULL, *trans_rel = NULL, *trans_abs = NULL;
	size_t ncgdirs = 0;
	double duration = 0;
	bool verbose = false, have_ev = false;
	int opt, ret = 0, *cpus = NULL, ncpu, sfd = -1, *fds = NULL;
	struct spawn sp = {.pid = -1, .go_fd = -1};
	sigset_t mask, oldmask;
	bool sigmask_set = false;
	int child_status = 0;
	pid_t child = -1;
	FILE *out = stdout;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+aG:p:t:F:c:e:go:d:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'a': all = true; break;
		case 'G': {
			/* Repeated -G options add up, as in stat. */
			size_t n = (groups_arg ? strlen(groups_arg) + 1 : 0) + strlen(optarg) + 1;
			char *g = malloc(n);

			if (!g) {
				ret = 1;
				goto out;
			}
			snprintf(g, n, "%s%s%s", groups_arg ? groups_arg : "", groups_arg ? "," : "",
				 optarg);
			free(groups_arg);
			groups_arg = g;
			break;
		}
		case 'p': {
			uint64_t v;

			if ((ret = parse_u64(r.prog, "-p", optarg, &v)))
				goto out;
			if (v > 4194304) { /* PID_MAX_LIMIT */
				fprintf(stderr, "%s: no process %s\n", r.prog, optarg);
				ret = 2;
				goto out;
			}
			so.pid = (pid_t)v;
			break;
		}
		case 't': {
			char err[256];

			r.sel = cg_selector_parse(optarg, err, sizeof(err));
			if (!r.sel) {
				fprintf(stderr, "%s: bad --target: %s\n", r.prog, err);
				ret = 2;
				goto out;
			}
			break;
		}
		case 'F':
			if ((ret = parse_u64(r.prog, "-F", optarg, &so.freq)))
				goto out;
			so.period = 0;
			break;
		case 'c':
			if ((ret = parse_u64(r.prog, "-c", optarg, &so.period)))
				goto out;
			so.freq = 0;
			break;
		case 'e': evname = optarg; break;
		case 'g': r.mode = CGM_FP; break;
		case OPT_CALLGRAPH:
			if (!strcmp(optarg, "fp")) {
				r.mode = CGM_FP;
			} else if (!strncmp(optarg, "dwarf", 5) && (!optarg[5] || optarg[5] == ',')) {
				r.mode = CGM_DWARF;
				if (optarg[5]) {
					uint64_t v;

					if ((ret = parse_u64(r.prog, "dwarf stack size", optarg + 6, &v)))
						goto out;
					if (v > 65528) {
						fprintf(stderr, "%s: dwarf stack size is at most 65528\n", r.prog);
						ret = 2;
						goto out;
					}
					so.stack_bytes = (uint32_t)((v + 7) & ~7ull);
				}
			} else {
				fprintf(stderr, "%s: --call-graph takes fp or dwarf[,BYTES], not '%s'\n",
					r.prog, optarg);
				ret = 2;
				goto out;
			}
			break;
		case 'o': outpath = optarg; break;
		case OPT_PERCG: r.per_cgroup = true; break;
		case 'd': {
			char *end;

			errno = 0;
			duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(duration > 0) || !isfinite(duration)) {
				fprintf(stderr, "%s: --duration must be a positive number, not '%s'\n",
					r.prog, optarg);
				ret = 2;
				goto out;
			}
			break;
		}
		case 'v': verbose = true; break;
		case 'h': usage(stdout); goto out;
		default: usage(stderr); ret = 2; goto out;
		}
	}
	if (all + (groups_arg != NULL) + (so.pid > 0) + (r.sel != NULL) > 1) {
		fprintf(stderr, "%s: choose one of -a, -G, -p and --target\n", r.prog);
		ret = 2;
		goto out;
	}
	if (optind < argc && (duration > 0 || so.pid > 0)) {
		fprintf(stderr, "%s: a command cannot be combined with --duration or -p\n", r.prog);
		ret = 2;
		goto out;
	}

	ret = ev_parse(evname, ev_tracefs(), &ev);
	if (ret) {
		char *sugg[6];
		size_t n = ret == -ENOENT ? ev_suggest(evname, ev_tracefs(), sugg, 6) : 0;

		fprintf(stderr, "%s: unknown event '%s'%s\n", r.prog, evname,
			n ? "; did you mean:" : "");
		for (size_t i = 0; i < n; i++) {
			fprintf(stderr, "    %s\n", sugg[i]);
			free(sugg[i]);
		}
		ret = 2;
		goto out;
	}
	have_ev = true;

	r.mount = cmd_perf_cgroup_mount(r.prog);
	if (groups_arg) {
		char *save = NULL;

		if (!r.mount) {
			ret = 1;
			goto out;
		}
		groups_copy = strdup(groups_arg);
		for (char *g = groups_copy ? strtok_r(groups_copy, ",", &save) : NULL; g;
		     g = strtok_r(NULL, ",", &save)) {
			char *rel = cg_path_normalize(r.mount, g), **v;
			uint64_t id;
			size_t n;

			if (!rel || cg_path_id(r.mount, strcmp(rel, "/") ? rel : "", &id) < 0) {
				fprintf(stderr, "%s: cgroup '%s' not found (no directory %s%s)\n", r.prog,
					rel ? rel : g, r.mount, rel && strcmp(rel, "/") ? rel : "");
				free(rel);
				ret = 2;
				goto out;
			}
			v = realloc(cgdirs, (ncgdirs + 1) * sizeof(*v));
			n = strlen(r.mount) + strlen(rel) + 1;
			if (!v || !(v[ncgdirs] = malloc(n))) {
				if (v)
					cgdirs = v;
				free(rel);
				ret = 1;
				goto out;
			}
			cgdirs = v;
			snprintf(cgdirs[ncgdirs++], n, "%s%s", r.mount, strcmp(rel, "/") ? rel : "");
			free(rel);
		}
	}
	if (optind < argc && !groups_arg && !r.sel && !all) {
		int err;

		if (!r.mount) {
			ret = 1;
			goto out;
		}
		err = spawn_make_cgroup(r.mount, "record", &trans_rel, &trans_abs);
		if (err) {
			fprintf(stderr, "%s: cannot create a cgroup for the command: %s\n", r.prog,
				strerror(-err));
			ret = 1;
			goto out;
		}
		cgdirs = malloc(sizeof(*cgdirs));
		if (!cgdirs || !(cgdirs[0] = strdup(trans_abs))) {
			ret = 1;
			goto out;
		}
		ncgdirs = 1;
	}

	ncpu = cpumap_online(&cpus);
	if (ncpu < 0) {
		fprintf(stderr, "%s: cannot read the online CPUs: %s\n", r.prog, strerror(-ncpu));
		ret = 1;
		goto out;
	}
	r.pm = procmaps_new("/proc");
	r.raw = fold_new();
	r.objkey = fold_new();
	r.strings = fold_new();
	r.pidsel = fold_new();
	r.cglabels = fold_new();
	r.ks = ksyms_load("/proc/kallsyms");
	if (r.mode == CGM_DWARF)
		r.uc = unwind_cache_new(256);
	if (!r.pm || !r.raw || !r.objkey || !r.strings || !r.pidsel || !r.cglabels ||
	    (r.mode == CGM_DWARF && !r.uc)) {
		fprintf(stderr, "%s: out of memory\n", r.prog);
		ret = 1;
		goto out;
	}
	fold_set_limit(r.raw, MAX_DISTINCT_STACKS);

	so.event = &ev;
	so.callchain = r.mode != CGM_NONE;
	so.user_stack = r.mode == CGM_DWARF;
	so.regs_mask = r.mode == CGM_DWARF ? unwind_dwarf_regs_mask() : 0;
	so.max_stack = 127;
	so.cpus = cpus;
	so.ncpu = (size_t)ncpu;
	so.cgroup_dirs = (const char *const *)cgdirs;
	so.ncgroups = ncgdirs;
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	smp = sampler_open(&so);
	if (!smp) {
		int err = errno;

		if (err == EACCES || err == EPERM)
			cmd_explain_perf_permission(r.prog, err);
		else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
			fprintf(stderr, "%s: event '%s' cannot sample on this host (%s)%s\n", r.prog,
				ev.name, strerror(err),
				ev.kind == EV_HARDWARE ? "; no hardware PMU here? try -e cpu-clock" : "");
		else if (err == ESRCH)
			fprintf(stderr, "%s: no process %d\n", r.prog, (int)so.pid);
		else
			fprintf(stderr, "%s: cannot open sampling events: %s\n", r.prog, strerror(err));
		ret = err == ESRCH ? 2 : 1;
		goto out;
	}
	if (outpath) {
		out = fopen(outpath, "we");
		if (!out) {
			fprintf(stderr, "%s: cannot write %s: %s\n", r.prog, outpath, strerror(errno));
			out = stdout;
			ret = 1;
			goto out;
		}
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	sigmask_set = true;
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		ret = 1;
		goto out;
	}
	if (optind < argc) {
		int err = spawn_held(&sp, argv + optind, trans_abs, &oldmask, r.prog);

		if (err) {
			fprintf(stderr, "%s: fork: %s\n", r.prog, strerror(-err));
			ret = 1;
			goto out;
		}
		child = sp.pid;
		if (r.sel) {
			/* the command is a target whatever the selector says */
			uint32_t cp = (uint32_t)child;
			uint64_t *slot = fold_slot(r.pidsel, &cp, sizeof(cp));

			if (slot)
				*slot = 3;
		}
	}

	struct sampler_cb cb = {
		.ctx = &r,
		.sample = on_sample,
		.mmap = on_mmap,
		.comm = on_comm,
		.fork = on_fork,
		.exit = on_exit_rec,
		.lost = on_lost,
	};
	size_t nfds = sampler_fds(smp, NULL, 0);

	fds = calloc(nfds + 1, sizeof(*fds));
	struct pollfd *pfd = calloc(nfds + 1, sizeof(*pfd));

	if (!fds || !pfd) {
		free(pfd);
		ret = 1;
		goto out;
	}
	sampler_fds(smp, fds, nfds);
	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	for (size_t i = 0; i < nfds; i++) {
		pfd[i + 1].fd = fds[i];
		pfd[i + 1].events = POLLIN;
	}

	double cpu0 = cpu_seconds();
	uint64_t t0 = now_ns(), end = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : 0;
	bool stop = false;

	if (sampler_enable(smp) < 0) {
		fprintf(stderr, "%s: cannot enable sampling: %s\n", r.prog, strerror(errno));
		free(pfd);
		ret = 1;
		goto out;
	}
	spawn_release(&sp);
	while (!stop) {
		uint64_t now = now_ns();
		int timeout = 1000;

		if (end)
			timeout = now >= end ? 0 : (int)((end - now + 999999) / 1000000);
		if (timeout > 1000)
			timeout = 1000;
		if (poll(pfd, nfds + 1, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo != SIGCHLD)
					stop = true;
				else if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
					child = -1;
					stop = true;
				}
			}
		}
		sampler_drain(smp, &cb);
		procmaps_gc(r.pm);
		if (end && now_ns() >= end)
			stop = true;
		if (so.pid > 0 && kill(so.pid, 0) < 0 && errno == ESRCH)
			stop = true; /* as perf record -p: done when the process is */
	}
	sampler_disable(smp);
	sampler_drain(smp, &cb);
	free(pfd);
	double elapsed = (double)(now_ns() - t0) / 1e9, cpu_sample = cpu_seconds() - cpu0;

	size_t nlines = 0;
	int err = write_folded(&r, out, &nlines);

	if (err) {
		fprintf(stderr, "%s: writing the folded stacks failed: %s\n", r.prog, strerror(-err));
		ret = 1;
	}
	if (out != stdout && fclose(out) != 0 && !ret) {
		fprintf(stderr, "%s: writing %s failed: %s\n", r.prog, outpath, strerror(errno));
		ret = 1;
	}
	out = stdout;

	struct sampler_stats st;
	double cpu_total = cpu_seconds() - cpu0;

	sampler_stats(smp, &st);
	fprintf(stderr,
		"%s: %" PRIu64 " samples in %.2f s, %" PRIu64 " kept, %" PRIu64
		" lost, %zu distinct stacks%s%s\n",
		r.prog, r.samples, elapsed, r.kept, st.lost, nlines,
		outpath ? " -> " : "", outpath ? outpath : "");
	if (verbose) {
		fprintf(stderr,
			"%s: mode %s; agent CPU %.3f s (%.3f s sampling+unwinding, %.3f s naming)"
			" = %.1f us/sample; %zu objects, %zu processes tracked;"
			" unwind errors %" PRIu64 ", no user regs %" PRIu64 ", filtered %" PRIu64
			", malformed %" PRIu64 ", throttled %" PRIu64 ", refused %" PRIu64 "\n",
			r.prog, unwinders[r.mode].name, cpu_total, cpu_sample, cpu_total - cpu_sample,
			r.samples ? cpu_total * 1e6 / (double)r.samples : 0.0, r.nobjs,
			procmaps_nprocs(r.pm), r.unwind_errors, r.no_user_stack, r.filtered,
			st.malformed, st.throttled, fold_refused(r.raw));
	}
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child = -1;
	}
	if (optind < argc && !ret) {
		if (WIFEXITED(child_status))
			ret = WEXITSTATUS(child_status);
		else if (WIFSIGNALED(child_status))
			ret = 128 + WTERMSIG(child_status);
	}
out:
	if (sp.go_fd >= 0)
		spawn_abort(&sp);
	else if (child > 0)
		waitpid(child, NULL, 0);
	if (out != stdout)
		fclose(out);
	if (sfd >= 0)
		close(sfd);
	if (sigmask_set)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	sampler_close(smp);
	if (trans_abs && rmdir(trans_abs) < 0 && errno != ENOENT)
		fprintf(stderr, "%s: cgroup %s left behind: %s\n", r.prog, trans_abs,
			strerror(errno));
	free(trans_abs);
	free(trans_rel);
	for (size_t i = 0; i < ncgdirs; i++)
		free(cgdirs[i]);
	free(cgdirs);
	free(groups_copy);
	free(groups_arg);
	free(fds);
	free(cpus);
	if (have_ev)
		ev_spec_release(&ev);
	record_free(&r);
	return ret;
}
