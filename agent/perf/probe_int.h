/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_PROBE_INT_H
#define CGPERF_AGENT_PROBE_INT_H

/*
 * Inside the probes module (probe.c resolves specs, probe_bin.c finds
 * binaries, probe_event.c makes perf_event_attrs and reads argument values):
 * what those files share. Not for other modules.
 */

#include <stdbool.h>
#include <stddef.h>

#include "agent/perf/probe.h"

/* The caller's message buffer: appended to, cut at its size, never overrun. */
struct probe_msg {
	char *buf;
	size_t cap, len;
};

/* Start an empty message in @buf (@cap 0 or @buf NULL: messages are dropped). */
void probe_msg_init(struct probe_msg *m, char *buf, size_t cap);
__attribute__((format(printf, 2, 3))) void probe_msg_add(struct probe_msg *m, const char *fmt,
							 ...);

/* The part of @path after its last '/'. */
const char *probe_base_name(const char *path);

/* A binary found for a spec. */
struct probe_bin {
	char *path;	   /* to open here: plain, or /proc/PID/root/... */
	char *debug_root;  /* "" or "/proc/PID/root" */
	struct dso *dso;   /* the file, opened once for symbols and notes (a reference) */
};

void probe_bin_release(struct probe_bin *b);

/* The symbols (the caller's to free) and the SDT notes (usdt_free) of @b's
 * file, through one dso (agent/symbols/dso.h) opened on the first call.
 * NULL + errno as symtab_open() and usdt_read(). */
struct symtab *probe_bin_symtab(struct probe_bin *b);
struct usdt_list *probe_bin_usdt(struct probe_bin *b);

/* @path as mapped by @pid: a plain path when it is the same inode here, else
 * /proc/PID/root/@path. 0 or -errno. */
int probe_bin_from_pid(int pid, const char *path, struct probe_bin *out);

/*
 * Find BINARY @name as probe.h says (the processes' maps, PATH, the library
 * directories). 0 with @out filled, or -errno with the reason (what was
 * searched) appended to @m.
 */
int probe_bin_resolve(const char *name, const int *pids, size_t npids, struct probe_bin *out,
		      struct probe_msg *m);

/* Call @fn on each file mapped by @pid (with whether a mapping of it is
 * executable); a non-zero return stops the walk and is returned. */
typedef int (*probe_maps_fn)(void *ctx, const char *path, bool exec);
int probe_maps_foreach(int pid, probe_maps_fn fn, void *ctx);

#endif
