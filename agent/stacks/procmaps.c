// SPDX-License-Identifier: MIT
#include "agent/stacks/procmaps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

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
	uint32_t pid; /* 0 = empty slot */
	bool seeded;  /* /proc/PID/maps read (or the process was born from FORK) */
	bool gone;    /* seeded from /proc after the process had exited: no maps */
	int exited;   /* 0 alive; 1 exited; 2 exited before the previous gc */
	bool tomb;    /* deleted slot, keeps probe chains intact */
	uint64_t refreshed_ns; /* last procmaps_refresh re-read (CLOCK_MONOTONIC_COARSE) */
	struct pmap_entry *maps;
	size_t nmaps, cap;
	char root[32];
};

struct thread {
	uint32_t tid; /* 0 = empty */
	bool tomb;
	int exited;
	char comm[COMM_LEN + 1];
};

struct procmaps {
	char *procfs;
	struct proc *procs;
	size_t pcap, pcount, pused; /* pused counts live + tombs */
	struct thread *threads;
	size_t tcap, tcount, tused;
	/* fork seeding: a token bucket, and how many seeds it allowed */
	uint64_t seed_tokens_ns;
	uint64_t fork_seeds;
};

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

struct procmaps *procmaps_new(const char *procfs)
{
	struct procmaps *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return NULL;
	pm->procfs = strdup(procfs ? procfs : "/proc");
	pm->pcap = 256;
	pm->tcap = 1024;
	pm->procs = calloc(pm->pcap, sizeof(*pm->procs));
	pm->threads = calloc(pm->tcap, sizeof(*pm->threads));
	if (!pm->procfs || !pm->procs || !pm->threads) {
		procmaps_free(pm);
		errno = ENOMEM;
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
	for (size_t i = 0; pm->procs && i < pm->pcap; i++)
		if (pm->procs[i].pid)
			proc_clear(&pm->procs[i]);
	free(pm->procs);
	free(pm->threads);
	free(pm->procfs);
	free(pm);
}

static struct proc *proc_lookup(struct procmaps *pm, uint32_t pid)
{
	size_t mask = pm->pcap - 1;

	for (size_t i = hash32(pid) & mask, n = 0; n < pm->pcap; i = (i + 1) & mask, n++) {
		struct proc *p = &pm->procs[i];

		if (p->pid == pid)
			return p;
		if (!p->pid && !p->tomb)
			return NULL;
	}
	return NULL;
}

static int proc_grow(struct procmaps *pm)
{
	size_t ncap = pm->pcap * 2;
	struct proc *nv = calloc(ncap, sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < pm->pcap; i++) {
		struct proc *p = &pm->procs[i];

		if (!p->pid)
			continue;
		for (size_t j = hash32(p->pid) & (ncap - 1);; j = (j + 1) & (ncap - 1)) {
			if (!nv[j].pid) {
				nv[j] = *p;
				break;
			}
		}
	}
	free(pm->procs);
	pm->procs = nv;
	pm->pcap = ncap;
	pm->pused = pm->pcount;
	return 0;
}

static struct proc *proc_get(struct procmaps *pm, uint32_t pid)
{
	struct proc *p = proc_lookup(pm, pid);
	size_t mask;

	if (p)
		return p;
	if ((pm->pused + 1) * 4 > pm->pcap * 3 && proc_grow(pm) < 0)
		return NULL;
	mask = pm->pcap - 1;
	for (size_t i = hash32(pid) & mask;; i = (i + 1) & mask) {
		p = &pm->procs[i];
		if (!p->pid) {
			if (!p->tomb)
				pm->pused++;
			memset(p, 0, sizeof(*p));
			p->pid = pid;
			snprintf(p->root, sizeof(p->root), "/proc/%" PRIu32 "/root", pid);
			pm->pcount++;
			return p;
		}
	}
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
			if (p->nmaps == p->cap) {
				size_t nc = p->cap ? p->cap * 2 : 32;
				struct pmap_entry *v = realloc(p->maps, nc * sizeof(*v));

				if (!v) {
					free(tail.path);
					return -ENOMEM;
				}
				p->maps = v;
				p->cap = nc;
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
	if (p->nmaps == p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 32;
		struct pmap_entry *v = realloc(p->maps, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->maps = v;
		p->cap = nc;
	}
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
		f = maps_open(pm, p->pid);
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
	ct = thread_get(pm, pid, false);
	if (ct && ct->comm[0] && !ct->exited && child && !child->exited)
		return;
	child = proc_get(pm, pid);
	parent = proc_lookup(pm, ppid); /* proc_get may have moved the table */
	if (!child)
		return;
	proc_clear(child);
	child->exited = 0;
	child->gone = false;
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
	/* The child's name is its parent's until it execs (no COMM record says so). */
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
	size_t mask;

	if (create && (pm->tused + 1) * 4 > pm->tcap * 3) {
		size_t ncap = pm->tcap * 2;
		struct thread *nv = calloc(ncap, sizeof(*nv));

		if (!nv)
			return NULL;
		for (size_t i = 0; i < pm->tcap; i++) {
			if (!pm->threads[i].tid)
				continue;
			for (size_t j = hash32(pm->threads[i].tid) & (ncap - 1);;
			     j = (j + 1) & (ncap - 1)) {
				if (!nv[j].tid) {
					nv[j] = pm->threads[i];
					break;
				}
			}
		}
		free(pm->threads);
		pm->threads = nv;
		pm->tcap = ncap;
		pm->tused = pm->tcount;
	}
	mask = pm->tcap - 1;
	for (size_t i = hash32(tid) & mask, n = 0; n < pm->tcap; i = (i + 1) & mask, n++) {
		struct thread *t = &pm->threads[i];

		if (t->tid == tid)
			return t;
		if (!t->tid && (!t->tomb || create)) {
			if (!create)
				return NULL;
			if (!t->tomb)
				pm->tused++;
			memset(t, 0, sizeof(*t));
			t->tid = tid;
			pm->tcount++;
			return t;
		}
	}
	return NULL;
}

void procmaps_comm(struct procmaps *pm, uint32_t pid, uint32_t tid, const char *comm, bool exec)
{
	struct thread *t = thread_get(pm, tid, true);

	if (t) {
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
		}
	}
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
	for (size_t i = 0; i < pm->pcap; i++) {
		struct proc *p = &pm->procs[i];

		if (p->pid && p->exited == 1) {
			p->exited = 2; /* samples of it may still be in other rings */
		} else if (p->pid && p->exited == 2) {
			proc_clear(p);
			p->pid = 0;
			p->tomb = true;
			pm->pcount--;
		}
	}
	for (size_t i = 0; i < pm->tcap; i++) {
		struct thread *t = &pm->threads[i];

		if (t->tid && t->exited == 1) {
			t->exited = 2;
		} else if (t->tid && t->exited == 2) {
			t->tid = 0;
			t->tomb = true;
			pm->tcount--;
		}
	}
}

size_t procmaps_nprocs(const struct procmaps *pm)
{
	return pm->pcount;
}
