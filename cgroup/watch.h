/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_CGROUP_WATCH_H
#define CGPERF_CGROUP_WATCH_H

/*
 * Follow cgroups as they are created and removed, with inotify on every
 * directory of one hierarchy. Containers come and go; the agent reacts to
 * the events instead of rescanning the tree on a timer.
 *
 * inotify is not recursive: a directory created, and populated, before its
 * watch is in place would be missed, so a new directory is scanned right
 * after its watch is added and everything found is reported too.
 */

#include <stdint.h>

enum cg_watch_kind {
	CG_WATCH_ADDED,
	CG_WATCH_REMOVED,
	CG_WATCH_OVERFLOW, /* events were lost: rescan the tree (path is "/") */
};

struct cg_watch;

/* Watch every cgroup under @mount. NULL + errno (ENOENT or ENOTDIR when
 * @mount is not a directory, ENOSPC when out of inotify watches). */
struct cg_watch *cg_watch_new(const char *mount);
void cg_watch_free(struct cg_watch *w);

/* The inotify fd (non-blocking) for poll(). */
int cg_watch_fd(const struct cg_watch *w);

typedef void (*cg_watch_cb)(void *ctx, enum cg_watch_kind kind, const char *path);

/* Drain pending events, calling @cb with paths relative to the mount ("/a/b").
 * Returns the number of callbacks made or -errno. Never blocks. */
int cg_watch_read(struct cg_watch *w, cg_watch_cb cb, void *ctx);

#endif
