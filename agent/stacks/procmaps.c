// SPDX-License-Identifier: MIT
#include "agent/stacks/procmaps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "agent/stacks/idtab.h"
#include "lib/grow.h"

#define COMM_LEN 16
/* procmaps_refresh re-reads one process's maps at most this often. */
#define PROCMAPS_REFRESH_NS 1000000000ull
/* Parents' maps read at a fork (their first): at most this many a second,
 * in bursts of as many. A fork storm of one parent costs one read. */
#define PROCMAPS_FORK_SEEDS_PER_S 200
/* Lines of /proc/PID/maps read per seed: a process with more mappings
 * than this has its first ones known only (executable ones come first). */
#define PROCMAPS_SEED_LINES 65536

struct proc {
	struct idtab_key key; /* the pid */
	bool seeded;  /* /proc/PID/maps read (or the process was born from FORK) */
	bool gone;    /* seeded from /proc after the process had exited: no maps */
	bool execd;   /* an exec's COMM record was read: its maps are not its parent's */
	int exited;   /* 0 alive; 1 exited; 2 exited before the previous gc */
	uint64_t refreshed_ns; /* last procmaps_refresh re-read (CLOCK_MONOTONIC_COARSE) */
	struct pmap_entry *maps;
	size_t nmaps, cap;
	char root[32];
};

struct thread {
	struct idtab_key key; /* the tid */
	int exited;
	uint64_t comm_time; /* of the COMM record that named it; 0 unknown */
	char comm[COMM_LEN + 1];
};

struct procmaps {
	char *procfs;
	struct idtab procs;   /* of struct proc */
	struct idtab threads; /* of struct thread */
	/* fork seeding: a token bucket, and how many seeds it allowed */
	uint64_t seed_tokens_ns;
	uint64_t fork_seeds;
};

struct procmaps *procmaps_new(const char *procfs)
{
	struct procmaps *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return NULL;
	idtab_init(&pm->procs, sizeof(struct proc));
	idtab_init(&pm->threads, sizeof(struct thread));
	pm->procfs = strdup(procfs ? procfs : "/proc");
	if (!pm->procfs) {
		free(pm);
		return NULL;
	}
	return pm;
}

static void proc_clear(struct proc *p)
{
	for (size_t i = 0; i < p->nmaps; i++)
		free(p->maps[i].path);
	free(p->maps);
	p->maps = NULL;
	p->nmaps = p->cap = 0;
}

void procmaps_free(struct procmaps *pm)
{
	if (!pm)
		return;
	for (size_t i = 0; i < pm->procs.cap; i++) {
		struct proc *p = idtab_at(&pm->procs, i);

		if (p)
			proc_clear(p);
	}
	idtab_release(&pm->procs);
	idtab_release(&pm->threads);
	free(pm->procfs);
	free(pm);
}

static struct proc *proc_lookup(struct procmaps *pm, uint32_t pid)
{
	return idtab_find(&pm->procs, pid);
}

/* The process @pid, tracked from now on if it was not; NULL when out of
 * memory. Moves the table: other struct proc pointers go stale. */
static struct proc *proc_get(struct procmaps *pm, uint32_t pid)
{
	struct proc *p = idtab_get(&pm->procs, pid);

	if (p && !p->root[0])
		snprintf(p->root, sizeof(p->root), "/proc/%" PRIu32 "/root", pid);
	return p;
}

/* Insert [start,end) replacing whatever it overlaps (a new mmap over an old
 * range unmaps that part of the old one). */
static int maps_insert(struct proc *p, const struct pmap_entry *e)
{
	size_t i = 0;

	while (i < p->nmaps) {
		struct pmap_entry *m = &p->maps[i];

		if (m->end <= e->start || m->start >= e->end) {
			i++;
			continue;
		}
		if (m->start < e->start && m->end > e->end) {
			/* Split: keep the head here, the tail after the new entry. */
			struct pmap_entry tail = *m;

			tail.pgoff += e->end - m->start;
			tail.start = e->end;
			tail.path = strdup(m->path);
			if (!tail.path)
				return -ENOMEM;
			m->end = e->start;
			if (GROW_ARRAY(p->maps, p->nmaps, p->cap, 32) < 0) {
				free(tail.path);
				return -ENOMEM;
			}
			p->maps[p->nmaps++] = tail;
			i++;
			continue;
		}
		if (m->start < e->start) {
			m->end = e->start;
			i++;
		} else if (m->end > e->end) {
			m->pgoff += e->end - m->start;
			m->start = e->end;
			i++;
		} else {
			free(m->path);
			p->maps[i] = p->maps[--p->nmaps];
		}
	}
	if (GROW_ARRAY(p->maps, p->nmaps, p->cap, 32) < 0)
		return -ENOMEM;
	p->maps[p->nmaps] = *e;
	p->maps[p->nmaps].tag = -1;
	p->maps[p->nmaps].path = strdup(e->path ? e->path : "");
	if (!p->maps[p->nmaps].path)
		return -ENOMEM;
	p->nmaps++;
	/* Keep sorted by start for binary search; maps change rarely. */
	for (size_t k = p->nmaps - 1; k > 0 && p->maps[k - 1].start > p->maps[k].start; k--) {
		struct pmap_entry t = p->maps[k];

		p->maps[k] = p->maps[k - 1];
		p->maps[k - 1] = t;
	}
	/* Splits may have appended out of order. */
	for (size_t a = 1; a < p->nmaps; a++)
		for (size_t k = a; k > 0 && p->maps[k - 1].start > p->maps[k].start; k--) {
			struct pmap_entry t = p->maps[k];

			p->maps[k] = p->maps[k - 1];
			p->maps[k - 1] = t;
		}
	return 0;
}

static FILE *maps_open(struct procmaps *pm, uint32_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", pm->procfs, pid);
	return fopen(path, "re");
}

/* Seed from /proc/PID/maps (@f, already open, or NULL to open it): only
 * executable mappings matter for stacks. */
static void seed_from(struct procmaps *pm, struct proc *p, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	size_t nlines = 0;

	p->seeded = true;
	if (!f)
		f = maps_open(pm, p->key.id);
	p->gone = !f;
	if (!f)
		return;
	while (nlines++ < PROCMAPS_SEED_LINES && getline(&line, &cap, f) > 0) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		char perms[8];
		int pos = 0;
		struct pmap_entry e = {0};

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
			   &min, &ino, &pos) < 7)
			continue;
		if (perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = '\0';
		e.start = start;
		e.end = end;
		e.pgoff = off;
		e.dev = makedev(maj, min);
		e.ino = ino;
		e.exec = true;
		e.path = pos > 0 && line[pos] ? line + pos : "//anon";
		maps_insert(p, &e);
	}
	free(line);
	fclose(f);
}

static void seed(struct procmaps *pm, struct proc *p)
{
	seed_from(pm, p, NULL);
}

const struct pmap_entry *procmaps_find(struct procmaps *pm, uint32_t pid, uint64_t addr)
{
	struct proc *p = proc_get(pm, pid);
	size_t lo = 0, hi;

	if (!p)
		return NULL;
	if (!p->seeded && !p->exited)
		seed(pm, p);
	hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pmap_entry *m = &p->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

void procmaps_mmap(struct procmaps *pm, uint32_t pid, uint64_t start, uint64_t len,
		   uint64_t pgoff, uint64_t dev, uint64_t ino, bool exec, const char *path)
{
	struct proc *p = proc_get(pm, pid);
	struct pmap_entry e = {
		.start = start,
		.end = start + len,
		.pgoff = pgoff,
		.dev = dev,
		.ino = ino,
		.exec = exec,
		.path = (char *)path,
	};

	if (!p || !exec || len == 0 || start + len < start)
		return;
	/* Seed first, so the record is applied on top of what /proc showed. */
	if (!p->seeded)
		seed(pm, p);
	maps_insert(p, &e);
}

static struct thread *thread_get(struct procmaps *pm, uint32_t tid, bool create);

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A token for reading a parent's maps at a fork (see the bucket above). */
static bool fork_seed_token(struct procmaps *pm)
{
	const uint64_t cost = 1000000000ull / PROCMAPS_FORK_SEEDS_PER_S;
	uint64_t now = mono_ns(), floor = now - PROCMAPS_FORK_SEEDS_PER_S * cost;

	/* The bucket's time runs from "full" (a second ago) to now. */
	if (pm->seed_tokens_ns < floor || pm->seed_tokens_ns > now)
		pm->seed_tokens_ns = floor;
	if (now - pm->seed_tokens_ns < cost)
		return false;
	pm->seed_tokens_ns += cost;
	return true;
}

/* The child's maps are its parent's: a copy (both sorted, disjoint). */
static int maps_copy(struct proc *child, const struct proc *parent)
{
	if (!parent->nmaps)
		return 0;
	child->maps = calloc(parent->nmaps, sizeof(*child->maps));
	if (!child->maps)
		return -ENOMEM;
	child->cap = parent->nmaps;
	for (size_t i = 0; i < parent->nmaps; i++) {
		struct pmap_entry *e = &child->maps[child->nmaps];

		*e = parent->maps[i];
		e->tag = -1; /* the child interns objects for itself */
		e->path = strdup(parent->maps[i].path);
		if (!e->path)
			return -ENOMEM;
		child->nmaps++;
	}
	return 0;
}

void procmaps_fork(struct procmaps *pm, uint32_t pid, uint32_t ppid)
{
	struct proc *child, *parent;
	struct thread *pt, *ct;

	if (pid == ppid)
		return; /* a new thread shares its process's maps */
	/*
	 * A parent never sampled (a shell, a pool's master sleeping between
	 * forks) has unknown maps, and its children may live a few ms: read
	 * the parent's now, while it surely lives, as perf's synthesized maps
	 * would have it. Its MMAP2 records keep them current from here on.
	 */
	parent = proc_get(pm, ppid);
	if (parent && !parent->seeded && !parent->exited && fork_seed_token(pm)) {
		seed(pm, parent);
		pm->fork_seeds++;
	}
	/*
	 * The FORK sits in the parent's ring; the child's own records (its
	 * exec's COMM and MMAP2s) and samples may sit in another CPU's ring,
	 * read first. What we know of a live child then is newer than its
	 * parent's image: keep it.
	 */
	child = proc_lookup(pm, pid);
	if (child && child->seeded && !child->exited && !child->gone)
		return;
	if (child && child->execd && !child->exited)
		return;
	child = proc_get(pm, pid);
	parent = proc_lookup(pm, ppid); /* proc_get may have moved the table */
	if (!child)
		return;
	proc_clear(child);
	child->exited = 0;
	child->gone = false;
	child->execd = false;
	child->seeded = true;
	child->refreshed_ns = 0;
	if (!parent || !parent->seeded || parent->gone) {
		child->seeded = false;
		return;
	}
	if (maps_copy(child, parent) < 0) {
		proc_clear(child);
		child->seeded = false;
	}
	/* The child's name is its parent's until it execs or renames itself (a
	 * COMM record of its own, maybe read before this FORK, says so). */
	ct = thread_get(pm, pid, false);
	if (ct && ct->comm[0] && !ct->exited)
		return;
	pt = thread_get(pm, ppid, false);
	if (!pt)
		procmaps_comm_of(pm, ppid, ppid);
	pt = thread_get(pm, ppid, false);
	ct = pt && pt->comm[0] ? thread_get(pm, pid, true) : NULL;
	pt = thread_get(pm, ppid, false); /* thread_get may have moved the table */
	if (ct && pt) {
		memcpy(ct->comm, pt->comm, sizeof(ct->comm));
		ct->exited = 0;
	}
}

bool procmaps_unknown(struct procmaps *pm, uint32_t pid)
{
	struct proc *p = proc_get(pm, pid);

	if (!p)
		return false;
	if (!p->seeded && !p->exited)
		seed(pm, p);
	return p->gone && !p->nmaps;
}

uint64_t procmaps_fork_seeds(const struct procmaps *pm)
{
	return pm->fork_seeds;
}

static struct thread *thread_get(struct procmaps *pm, uint32_t tid, bool create)
{
	return create ? idtab_get(&pm->threads, tid) : idtab_find(&pm->threads, tid);
}

bool procmaps_comm(struct procmaps *pm, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		   uint64_t time)
{
	struct thread *t = thread_get(pm, tid, true);

	if (t && time && t->comm_time > time && !t->exited)
		return false; /* a newer name (and image) is known already */
	if (t) {
		t->comm_time = time;
		strncpy(t->comm, comm, COMM_LEN);
		t->comm[COMM_LEN] = '\0';
		t->exited = 0;
	}
	if (exec) {
		/*
		 * exec replaced the address space. MMAP2 records for it follow
		 * in this ring, but those another CPU's ring held may have been
		 * read already and are cleared here too: the next lookup reads
		 * /proc/PID/maps again (while the process lives).
		 */
		struct proc *p = proc_get(pm, pid);

		if (p) {
			proc_clear(p);
			p->seeded = false;
			p->exited = 0;
			p->execd = true;
		}
	}
	return true;
}

bool procmaps_refresh(struct procmaps *pm, uint32_t pid, uint32_t tid)
{
	struct proc *p = proc_lookup(pm, pid);
	struct thread *t;
	struct timespec ts;
	uint64_t now;
	char path[96], buf[COMM_LEN + 2];
	FILE *f;

	if (!p || !p->seeded || p->exited)
		return false; /* unseeded: the next find reads /proc anyway */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (p->refreshed_ns && now - p->refreshed_ns < PROCMAPS_REFRESH_NS)
		return false;
	p->refreshed_ns = now;
	/* Gone already: what we had is all there will be. */
	f = maps_open(pm, pid);
	if (!f)
		return false;
	proc_clear(p);
	seed_from(pm, p, f);
	/* The thread's name may be as stale as the maps (an exec we have not
	 * seen yet). */
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/task/%" PRIu32 "/comm", pm->procfs, pid, tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f) && (t = thread_get(pm, tid, true))) {
			buf[strcspn(buf, "\n")] = '\0';
			strncpy(t->comm, buf, COMM_LEN);
			t->comm[COMM_LEN] = '\0';
		}
		fclose(f);
	}
	return true;
}

void procmaps_exit(struct procmaps *pm, uint32_t pid, uint32_t tid)
{
	struct thread *t = thread_get(pm, tid, false);
	struct proc *p;

	if (t)
		t->exited = 1;
	if (pid == tid && (p = proc_lookup(pm, pid)))
		p->exited = 1;
}

const char *procmaps_comm_of(struct procmaps *pm, uint32_t pid, uint32_t tid)
{
	struct thread *t = thread_get(pm, tid, false);
	char path[96], buf[COMM_LEN + 2];
	FILE *f;

	if (t)
		return t->comm;
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/task/%" PRIu32 "/comm", pm->procfs, pid, tid);
	f = fopen(path, "re");
	if (!f)
		return "";
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	t = thread_get(pm, tid, true);
	if (!t)
		return "";
	strncpy(t->comm, buf, COMM_LEN);
	t->comm[COMM_LEN] = '\0';
	return t->comm;
}

const char *procmaps_root(struct procmaps *pm, uint32_t pid)
{
	struct proc *p = proc_lookup(pm, pid);

	return p && !p->exited ? p->root : "";
}

void procmaps_gc(struct procmaps *pm)
{
	for (size_t i = 0; i < pm->procs.cap; i++) {
		struct proc *p = idtab_at(&pm->procs, i);

		if (p && p->exited == 1) {
			p->exited = 2; /* samples of it may still be in other rings */
		} else if (p && p->exited == 2) {
			proc_clear(p);
			idtab_del(&pm->procs, p);
		}
	}
	for (size_t i = 0; i < pm->threads.cap; i++) {
		struct thread *t = idtab_at(&pm->threads, i);

		if (t && t->exited == 1)
			t->exited = 2;
		else if (t && t->exited == 2)
			idtab_del(&pm->threads, t);
	}
}

size_t procmaps_nprocs(const struct procmaps *pm)
{
	return pm->procs.count;
}
