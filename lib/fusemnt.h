/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_FUSEMNT_H
#define CGPERF_LIB_FUSEMNT_H

/*
 * Which paths of a process lie on a FUSE file system: the test that
 * decides whether a file may be opened on the caller's thread or must go
 * to a helper process (lib/rootfs.h, rootfs_set_slow_opener). A FUSE
 * daemon answers every lookup, getattr and read of its files when it
 * likes, and the kernel's wait for it cannot be interrupted once it has
 * the request; files elsewhere open as fast as ever.
 *
 * A mount table is /proc/PID/mountinfo read once (at most FUSEMNT_MAX_BYTES,
 * lines at most FUSEMNT_MAX_LINE) and kept per mount namespace, keyed by
 * the (dev, inode) of /proc/PID/ns/mnt, for FUSEMNT_TTL_S seconds: the
 * common case (no FUSE anywhere) costs a stat of the ns link per open.
 * A table that could not be read whole counts every path as at risk.
 *
 * Library module: does not print. The cache is process-wide and
 * thread-safe (one mutex; the read of a mountinfo happens under it, a
 * procfs file that the kernel writes and no daemon can delay).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FUSEMNT_MAX_BYTES (4u << 20)
#define FUSEMNT_MAX_LINE 8192
#define FUSEMNT_TTL_S 5
#define FUSEMNT_CACHE_SLOTS 64

/* The mount points of FUSE file systems (fstype fuse, fuse.*, fuseblk) in
 * one mount table, as that process sees them (relative to its root). */
struct fusemnt_table;

/* Parse mountinfo text from @fd (read to FUSEMNT_MAX_BYTES; the fd is not
 * closed). NULL + errno. A table read only in part is marked "all". */
struct fusemnt_table *fusemnt_table_read(int fd);
/* The same from a string (tests). */
struct fusemnt_table *fusemnt_table_parse(const char *text);
void fusemnt_table_free(struct fusemnt_table *t);
/* FUSE mount points held (0 for a table marked "all"). */
size_t fusemnt_table_count(const struct fusemnt_table *t);

/*
 * Is absolute @path under a FUSE mount point of @t (the mount point
 * itself, or below it, component by component: "/mnt/f" covers
 * "/mnt/f/x", not "/mnt/fx")? Any FUSE ancestor counts, even when another
 * file system is mounted deeper (the walk to it still asks the daemon).
 * A table marked "all" covers everything; a relative path is covered
 * when the table has any FUSE mount.
 */
bool fusemnt_table_covers(const struct fusemnt_table *t, const char *path);

/*
 * For @path inside process @pid's root (0: the agent's own view, host
 * paths), through the per-namespace cache:
 *   FUSEMNT_NONE    the namespace has no FUSE mount: open as usual
 *   FUSEMNT_AT_RISK @path is under a FUSE mount point
 *   FUSEMNT_ELSEWHERE FUSE mounts exist, @path is not under one (a link on
 *                   the way may still lead there)
 * or -errno (-ESRCH: no such process).
 */
enum { FUSEMNT_NONE = 0, FUSEMNT_AT_RISK = 1, FUSEMNT_ELSEWHERE = 2 };
int fusemnt_classify(pid_t pid, const char *path);

/* Forget the cache (tests). */
void fusemnt_cache_reset(void);
/* Mount tables read so far (figures, tests). */
uint64_t fusemnt_tables_read(void);

#endif
