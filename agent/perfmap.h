/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_PERFMAP_H
#define CGPERF_AGENT_PERFMAP_H

/*
 * JIT symbol maps, /tmp/perf-PID.map, as JITs (V8, the JVM with an agent,
 * LuaJIT, PostgreSQL's LLVM JIT with jit_profiling_support) write them:
 * one "START SIZE NAME" line per function, START and SIZE in hex, addresses
 * absolute in the process. PID is the process's own view of its pid (its
 * pid namespace), and /tmp is its own /tmp: callers look the file up under
 * /proc/HOSTPID/root with the namespaced pid (perfmap_path()).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct perfmap;

/*
 * The file is the container's, so it is hostile until read (see
 * docs/security.md): @path, "/proc/PID/root/tmp/perf-N.map", is resolved
 * inside PID's root (agent/rootfs.h: links cannot leave it, FIFOs,
 * devices, directories and procfs/sysfs files are refused), at most
 * PERFMAP_MAX_BYTES are read, lines over PERFMAP_MAX_LINE bytes and
 * malformed ones are skipped, and at most PERFMAP_MAX_ENTRIES are kept.
 * Reading never waits for a writer; its cost is bounded by the byte cap.
 */
#define PERFMAP_MAX_BYTES (64u << 20)
#define PERFMAP_MAX_LINE 4096
#define PERFMAP_MAX_ENTRIES (4u << 20)

/* Load @path. NULL + errno (ENOENT when the process has no map; the
 * errors of agent/rootfs.h for a file that is refused). */
struct perfmap *perfmap_load(const char *path);
/* The same from an open fd (a file, a pipe), which it closes, with the
 * same caps. NULL + errno. */
struct perfmap *perfmap_load_fd(int fd);
/* A perf map that perfmap_load() would read is at @path (cheap: one
 * resolution, nothing read). */
bool perfmap_present(const char *path);
void perfmap_free(struct perfmap *m);

/* Function containing absolute address @addr, or NULL. */
const char *perfmap_lookup(const struct perfmap *m, uint64_t addr);
size_t perfmap_count(const struct perfmap *m);

/*
 * "/proc/PID/root/tmp/perf-NSPID.map" for host pid @pid, NSPID read from
 * the NSpid line of /proc/PID/status (innermost namespace). 0 or -errno.
 */
int perfmap_path(const char *procfs, pid_t pid, char *buf, size_t len);

#endif
