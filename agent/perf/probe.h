/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_PROBE_H
#define CGPERF_AGENT_PROBE_H

/*
 * Probe specs, resolved and opened. One string: the probe, then its
 * arguments, separated by whitespace:
 *   u:BINARY:SYMBOL[+OFF][%return] [[NAME=]%REG ...]   uprobe / uretprobe
 *   sdt:PROVIDER:NAME[@BINARY] [[NAME=]argN ...]       USDT (semaphore via ref_ctr_offset)
 *   SUBSYS:EVENT [[NAME=]FIELD ...]                    tracepoint
 *   k:FUNC[+OFF][%return] [[NAME=]FETCH[:TYPE] ...]    kprobe / kretprobe
 * A uprobe argument is a register as perf names it (%di, %si, %ax, %r8: the
 * whole 64-bit register) or as the assembler does (%rdi, %edi), or argN for
 * the N-th integer argument of the SysV x86_64 calling convention (arg0 =
 * %di ... arg5 = %r9; only meaningful at function entry). A USDT argN is
 * the probe's own N-th argument spec; a tracepoint argument names a field
 * of its tracefs format. NAME defaults to the argument as written, minus
 * the '%'. OFF must fall on an instruction boundary (not checked here).
 *
 * BINARY: a name containing '/' is a path. Otherwise, in this order: the
 * files mapped by the given processes (through /proc/PID/root, so a
 * container's own libc is probed, not the host's), an executable in PATH,
 * an ELF file in the library directories (/lib/x86_64-linux-gnu,
 * /usr/lib/x86_64-linux-gnu, /lib64, /usr/lib64, /lib, /usr/lib). A file
 * matches NAME when it is NAME, NAME.so, libNAME.so or a versioned one of
 * those, or NAME followed by '.' or '-' ("libc" and "c" -> libc.so.6).
 * Without @BINARY an SDT probe is looked for in every file the processes
 * map, then in a binary named like its provider; else the error asks for
 * @BINARY.
 * A kernel probe's arguments (FETCH: %REG, argN, a parameter name from the
 * kernel's BTF, $retval, +OFF(BASE); TYPE u8..u64, s8..s64, x8..x64) are
 * described in probe_spec.c and docs/trace.md; probe_kernel.c says how
 * kernel probes are placed.
 * Uprobes are opened through the uprobe PMU (perf_event_open type from
 * /sys/bus/event_source/devices/uprobe/type, config1 = path, config2 =
 * offset, the retprobe bit and ref_ctr_offset field from its format/), so
 * nothing is written to tracefs and nothing is left behind on exit.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/perf/probe_spec.h"
#include "agent/perf/usdt.h"

struct probe_argdef {
	char *name;        /* as the user named it ("size", "arg0") */
	struct usdt_arg a; /* REG for %reg, USDT arg spec for argN */
	char *field;       /* tracepoint field name, else NULL */
	/* Tracepoint field in the PERF_SAMPLE_RAW record, from the format
	 * file: byte offset and size (arrays such as char[16] are larger than
	 * 8), signedness. A dynamic field (__data_loc) holds a u32 at
	 * field_offset: data offset in the low 16 bits, length in the high. */
	int field_offset, field_size;
	bool field_signed;
	bool field_dynamic;
	int usdt_index;    /* argN of a USDT probe: N (its spec differs per site); else -1 */
};

struct probe {
	char *spec;        /* as written */
	char *label;       /* short display name: "u:libc:malloc", "sdt:postgresql:query__start" */
	enum probe_kind kind;
	char *path;        /* resolved binary (uprobe/usdt) */
	char *symbol;      /* uprobe symbol, or USDT "provider:name" */
	uint64_t offset;   /* file offset of the probe point */
	uint64_t ref_ctr;  /* semaphore file offset (USDT), 0 = none */
	int nsites;        /* USDT: sites of this probe in the binary; only the
			    * first (offset, args) is resolved. 1 otherwise. */
	bool retprobe;
	uint64_t tp_id;    /* tracepoint id */
	struct probe_argdef args[USDT_MAX_ARGS];
	int nargs;
	uint64_t regs_mask; /* sample_regs_user needed for the args */
	/* A kernel probe placed as a dynamic event (arguments, or no kprobe
	 * PMU): "cgperf/NAME", made in @kevent_tracefs/kprobe_events by
	 * probe_resolve() and removed by probe_release(); kind is then
	 * PROBE_TRACEPOINT (its arguments are the event's fields). NULL else. */
	char *kevent;
	char *kevent_tracefs;
};

/*
 * Parse and resolve @spec. @pids (may be NULL) are processes whose maps
 * help resolve a bare BINARY name; a file a process sees at another path
 * (another mount namespace) gets p->path "/proc/PID/root/...", usable while
 * that process lives. Reads the ELF file (symbols or SDT notes) and, for
 * tracepoint fields, tracefs; opens no event.
 *
 * 0 with @out filled (release with probe_release()) and @err "". On
 * failure @out is untouched and a complete, user-facing message, starting
 * with the probe as written, is in @err (cut to @errlen; @err may be NULL):
 *   -EINVAL  malformed spec or argument, %return with +OFF, +OFF outside
 *            the function, argN beyond the probe's arguments
 *   -ENOENT  binary not found (what was searched), function not found
 *            (near names), SDT probe not found (near probes, or "FILE has
 *            no SDT notes"), tracepoint or field not found (near
 *            tracepoints, the event's fields)
 *   -ENOEXEC BINARY is not ELF
 *   -E2BIG   spec over 4096 bytes or more than USDT_MAX_ARGS arguments
 *   -EOPNOTSUPP a kernel probe on a kernel without kprobes (no kprobe PMU,
 *            no kprobe_events), or arguments without kprobe_events
 *   -EPERM   a kernel function on the kernel's kprobe blacklist
 *   -ENOMEM, or another -errno from reading the files
 * A kernel probe with arguments writes a dynamic event to kprobe_events
 * (see struct probe); nothing else is opened.
 */
int probe_resolve(const char *spec, const int *pids, size_t npids, struct probe *out, char *err,
		  size_t errlen);

/* Where the kernel is described, for kernel probes; each NULL field means
 * this host's. For tests with fixture directories. */
struct probe_host {
	const char *kprobe_pmu; /* /sys/bus/event_source/devices/kprobe */
	const char *tracefs;    /* the tracefs mount (ev_tracefs()) */
	const char *kallsyms;   /* /proc/kallsyms */
	const char *blacklist;  /* /sys/kernel/debug/kprobes/blacklist */
	const char *btf;        /* /sys/kernel/btf/vmlinux */
};

/* probe_resolve() against @host (NULL: this host). */
int probe_resolve_at(const char *spec, const int *pids, size_t npids, const struct probe_host *host,
		     struct probe *out, char *err, size_t errlen);
/* Free what probe_resolve() allocated and zero @p; NULL and zeroed are fine. */
void probe_release(struct probe *p);

struct sample;

/*
 * Value of argument @a of @p in sample @s: a tracepoint field from the raw
 * record, or a register/USDT argument from the sampled registers (packed in
 * the order of @regs_mask, the sample_regs_user the event used). @site_arg
 * (may be NULL) overrides the USDT spec for probes with several sites.
 * Memory arguments are read from the live process (best effort, after the
 * fact). 0 or -errno (-ENOENT: not in this sample).
 */
int probe_arg_value(const struct probe *p, int a, const struct usdt_arg *site_arg,
		    const struct sample *s, uint64_t regs_mask, int64_t *out);

/* Resolve a BINARY the way probe specs do ("libc", "postgres", a path).
 * 0 with a malloc'd *path, or -errno with a message in @err. */
int probe_find_binary(const char *name, const int *pids, size_t npids, char **path, char *err,
		      size_t errlen);

/*
 * perf_event_attr type/config for @p (uprobe PMU or tracepoint). Sets only
 * type, config, config1 and config2 (and size when 0); the caller sets the
 * rest (sampling, sample_regs_user = p->regs_mask, ...). For a uprobe,
 * config1 points at p->path: @attr is valid while @p is. 0 or -errno:
 * -ENOENT no uprobe PMU on this kernel, -EOPNOTSUPP a semaphore but no
 * ref_ctr_offset field (kernel before 4.20), -ERANGE a semaphore offset
 * that does not fit the field, -EIO an unreadable PMU description.
 */
struct perf_event_attr;
int probe_attr(const struct probe *p, struct perf_event_attr *attr);

/*
 * probe_attr() with the PMU directory given (NULL: the system's,
 * /sys/bus/event_source/devices/uprobe, or .../kprobe for a kernel probe)
 * and, on failure, a user-facing message in @err (may be NULL) naming the
 * cause. A kernel probe (PROBE_KPROBE) goes through the kprobe PMU:
 * config1 points at p->symbol (the function), config2 is the offset, the
 * retprobe bit comes from the PMU's format/retprobe.
 */
int probe_attr_at(const struct probe *p, const char *pmu_dir, struct perf_event_attr *attr,
		  char *err, size_t errlen);

#endif
