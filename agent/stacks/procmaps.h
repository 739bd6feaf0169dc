/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_PROCMAPS_H
#define CGPERF_AGENT_PROCMAPS_H

/*
 * What every sampled process has mapped, kept current from PERF_RECORD_MMAP2,
 * FORK, COMM and EXIT records, and seeded from /proc/PID/maps the first time
 * a process is seen (it may predate the sampling). Processes that exit are
 * kept until procmaps_gc() so samples still in the ring buffer, or not yet
 * folded, are symbolized against the maps they ran with.
 *
 * Files are opened through /proc/PID/root so binaries of containers (other
 * mount namespaces) are found; the path the process sees is kept for names.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pmap_entry {
	uint64_t start, end, pgoff;
	uint64_t dev, ino;
	bool exec;
	char *path; /* as the process sees it; "[anon]", "[vdso]", "//anon" ... */
	int32_t tag; /* free for the caller (record caches its object id); -1 when new */
};

struct procmaps;

struct procmaps *procmaps_new(const char *procfs);
void procmaps_free(struct procmaps *pm);

/* The mapping of @pid containing @addr, seeding from /proc on first use.
 * NULL when unknown. The pointer is valid until the next call that
 * modifies @pid's maps. */
const struct pmap_entry *procmaps_find(struct procmaps *pm, uint32_t pid, uint64_t addr);

void procmaps_mmap(struct procmaps *pm, uint32_t pid, uint64_t start, uint64_t len,
		   uint64_t pgoff, uint64_t dev, uint64_t ino, bool exec, const char *path);
/*
 * @pid was forked from @ppid: it gets a copy of @ppid's maps and its name.
 * When @ppid's maps are not known yet they are read from /proc first (at
 * most PROCMAPS_FORK_SEEDS_PER_S parents a second, each once until it
 * execs): children that live a few ms are gone before anything else could
 * read theirs.
 */
void procmaps_fork(struct procmaps *pm, uint32_t pid, uint32_t ppid);
/* Parents whose maps procmaps_fork() read. */
uint64_t procmaps_fork_seeds(const struct procmaps *pm);
/*
 * True when nothing is known of @pid's maps and /proc has none either (it
 * exited before we looked, and no FORK record has given it its parent's
 * yet): a caller may hold its samples until the other rings are read.
 */
bool procmaps_unknown(struct procmaps *pm, uint32_t pid);
/*
 * A COMM record: @tid is named @comm (from an exec when @exec). Rings are
 * drained one CPU at a time and exec moves a task to another CPU, so the
 * records of two execs in a row can be read newest first: one older (by
 * @time, the record's; 0 unknown) than the last applied is ignored: false.
 */
bool procmaps_comm(struct procmaps *pm, uint32_t pid, uint32_t tid, const char *comm,
		   bool exec, uint64_t time);
void procmaps_exit(struct procmaps *pm, uint32_t pid, uint32_t tid);

/*
 * A sample of live @pid hit an address its maps do not cover. Rings are
 * drained one CPU at a time, so an exec or mmap on another CPU may not have
 * been read yet: re-read /proc/PID/maps and the comm of @tid, at most once
 * a second per process. True when the maps were re-read (the caller drops
 * whatever it derived from the old ones).
 */
bool procmaps_refresh(struct procmaps *pm, uint32_t pid, uint32_t tid);

/* Name of thread @tid of @pid ("" unknown): from COMM records or /proc. */
const char *procmaps_comm_of(struct procmaps *pm, uint32_t pid, uint32_t tid);

/* A path under which the files of @pid can be opened right now:
 * "/proc/PID/root" while it lives, "" after (host view). */
const char *procmaps_root(struct procmaps *pm, uint32_t pid);

/* Forget processes that had already exited at the previous gc (two calls
 * after their EXIT), so late samples from other CPUs' rings still resolve. */
void procmaps_gc(struct procmaps *pm);
size_t procmaps_nprocs(const struct procmaps *pm);

#endif
