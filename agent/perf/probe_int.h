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
/* Call @fn on each of @pids that names a process (> 0), in order; a
 * non-zero return stops the walk and is returned. The pid searches of
 * sdt: and u: specs without a BINARY are one such walk each. */
typedef int (*probe_pid_fn)(void *ctx, int pid);
int probe_pids_foreach(const int *pids, size_t npids, probe_pid_fn fn, void *ctx);

/* ---- kernel probes (probe_kernel.c, probe_btf.c) ---- */

struct probe_spec;
struct probe_host;

/* Resolve the tracepoint of @ps (SUBSYS:EVENT and its fields) under
 * @tracefs (NULL: ev_tracefs()); probe.c. 0 or -errno, message in @m. */
int probe_resolve_tp(struct probe *p, const struct probe_spec *ps, const char *tracefs,
		     struct probe_msg *m);

/* Resolve the kernel probe @ps into @p, as probe.h says, against @h (never
 * NULL; NULL fields: this host). 0 or -errno, message in @m. */
int probe_kernel_resolve(struct probe *p, const struct probe_spec *ps, const struct probe_host *h,
			 struct probe_msg *m);

/* Remove @p's dynamic event, if it has one (probe_release() calls this). */
void probe_kernel_remove(struct probe *p);

/*
 * The kprobe_events line that places @ps as event @group/@event, with each
 * argument's register and type settled (@regs, @types: per argument, the
 * register of a parameter found in BTF and its type; "" where the spec
 * says it): "p:cgperf/tcp_sendmsg_42_0 tcp_sendmsg size=%dx:u64". No
 * newline. 0, or -ENAMETOOLONG when it does not fit @len.
 */
int probe_kernel_line(const struct probe_spec *ps, const char *group, const char *event,
		      char (*regs)[6], char (*types)[4], char *buf, size_t len);

/* The kernel's BTF: parameters by name. */
struct probe_btf;
/* @path NULL: the running kernel's. NULL + errno with the reason in @m
 * (EOPNOTSUPP: built without libbpf). */
struct probe_btf *probe_btf_open(const char *path, struct probe_msg *m);
void probe_btf_close(struct probe_btf *b);
/* The register ("dx") and fetch type ("u64") of parameter @param of @func.
 * 0; -ENOENT no such function or parameter (the parameters listed in @m);
 * -EINVAL not in a register (on the stack, a struct by value...). */
int probe_btf_param(struct probe_btf *b, const char *func, const char *param, char reg[6],
		    char type[4], struct probe_msg *m);

#endif
