/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_STACKS_H
#define CGPERF_AGENT_STACKS_H

/*
 * Stacks from samples, folded: the engine behind `record` and `trace
 * --stacks`.
 *
 * The hot path (stacks_add, once per sample) does no symbolization and no
 * string work: each frame becomes (object id, file offset), the whole stack
 * a small array of integers, counted in a hash table. Objects are interned
 * the first time a mapping is hit, while the process is alive, so binaries
 * of short-lived processes and of other mount namespaces can still be
 * opened (through /proc/PID/root). Only stacks_write() names every distinct
 * frame, once, and produces folded text.
 *
 * User stacks come from one of two unwinders behind one ops table: frame
 * pointers (the kernel already walked them into the callchain) or DWARF CFI
 * over the copied user stack (agent/stacks/unwind.c).
 *
 * Memory stays bounded on hosts where binaries come and go: an object (a
 * binary with its symbols and unwind tables) is dropped at stacks_gc() once
 * no process the engine still tracks maps it and none of its samples are
 * waiting to be folded (in `record`, until stacks_write(); in `run`, until
 * the stacks_reset() after the interval's stacks_foreach*()).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/symbols/demangle.h"
#include "agent/perf/sampler.h"

enum stacks_mode {
	STACKS_FP,    /* PERF_SAMPLE_CALLCHAIN as the kernel walked it */
	STACKS_DWARF, /* CFI over PERF_SAMPLE_STACK_USER + REGS_USER */
	STACKS_LEAF,  /* the sampled function only (perf record without -g) */
};

struct stacks;

/* @cgroup_mount is needed for cgroup labels with @per_cgroup (may be NULL
 * otherwise). NULL + errno. */
struct stacks *stacks_new(enum stacks_mode mode, bool per_cgroup, const char *cgroup_mount);
void stacks_free(struct stacks *st);

/*
 * How symbol names are shown (see agent/symbols/demangle.h): DEMANGLE_FULL unless
 * set otherwise. Frames named already are named again. 0 or -errno.
 */
int stacks_set_demangle(struct stacks *st, enum demangle_style style);

/*
 * Name containers in per_cgroup labels with what their runtime says
 * (cgroup/runtime.h): "podman:4c98b64b071d web (localhost/img:1)", the
 * label stat shows, then the image. @rt is borrowed and must outlive
 * @st (or be unset with NULL first). A label is made when a cgroup is
 * first named; the cache is then given up to 1 s to answer for it.
 */
struct cg_rtcache;
void stacks_set_runtime(struct stacks *st, struct cg_rtcache *rt);

/* sample_regs_user the mode needs (0 but for DWARF). */
uint64_t stacks_regs_mask(enum stacks_mode mode);
const char *stacks_mode_name(enum stacks_mode mode);

/* Count the stack of @s. @prefix (may be NULL) becomes a frame before the
 * cgroup and comm ("the probe that fired"). */
void stacks_add(struct stacks *st, const struct sample *s, const char *prefix);
/* The same, adding @weight to the stack's count instead of 1 (off-CPU
 * stacks count microseconds). */
void stacks_add_weight(struct stacks *st, const struct sample *s, const char *prefix,
		       uint64_t weight);

/* Side-band records keep process maps and thread names current. */
void stacks_mmap(struct stacks *st, const struct sample_mmap *m);
void stacks_comm(struct stacks *st, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		 uint64_t time);
/* The comm of @tid as of the events handled so far (read from /proc when
 * none told it): "" when unknown. */
const char *stacks_comm_of(struct stacks *st, uint32_t pid, uint32_t tid);
/* A child gets a copy of its parent's maps; when the parent's are not
 * known yet (it was never sampled), they are read from /proc at the fork,
 * so children that live a few ms are named (see procmaps_fork). */
void stacks_fork(struct stacks *st, uint32_t pid, uint32_t ppid, uint32_t tid);
void stacks_exit(struct stacks *st, uint32_t pid, uint32_t tid);
/* Count the samples held back by stacks_add() (a process whose maps were
 * unknown and whose /proc entry was gone: its FORK record may sit in a ring
 * not read yet), then forget processes gone since two calls ago, and the
 * objects only they mapped (see above); call after each drain of every
 * ring. stacks_write() and stacks_foreach*() count held samples first too. */
void stacks_gc(struct stacks *st);

/* Name every frame and write "frames count" lines, sorted. 0 or -errno. */
int stacks_write(struct stacks *st, FILE *out, size_t *nlines);

/*
 * For the wire: every distinct stack of the interval as its cgroup id and
 * folded text without a cgroup frame ("[prefix;]comm;root;...;leaf"), with
 * its count. 0 or -errno.
 */
int stacks_foreach(struct stacks *st,
		   void (*cb)(void *ctx, uint64_t cgroup_id, const char *folded, uint64_t count),
		   void *ctx);
/*
 * The same stacks with their frames one by one, for the wire: @frames[0..@n)
 * root first as in the folded text ([prefix,] comm, user frames, kernel
 * frames; a function with inlined calls gives one frame per call, as the
 * folded text does), each with the binary it was found in. Stacks that are
 * the same text but not the same binaries stay apart. Everything @frames
 * points to is valid during the call only. 0 or -errno.
 */
struct stacks_frame {
	const char *name;     /* as in the folded text */
	const char *module;   /* the binary's path as the process saw it, or
			       * "[kernel.kallsyms]", "[vdso]", "[jit]"; NULL for
			       * the comm and prefix frames and unmapped addresses */
	const char *build_id; /* GNU build-id, lowercase hex, "" unknown; NULL
			       * when module is */
};
int stacks_foreach_frames(struct stacks *st,
			  void (*cb)(void *ctx, uint64_t cgroup_id, const struct stacks_frame *frames,
				     size_t n, uint64_t count),
			  void *ctx);

/*
 * For annotate: the sampled address of every stack counted (in STACKS_LEAF
 * mode, every sample), once per distinct (object, offset), with its count.
 * @l->dso and @l->symtab are NULL for kernel, JIT and unmapped addresses
 * (which are still counted, so a caller knows the whole). Everything @l
 * points to is valid during the call only (take a dso_get() to keep it).
 * 0 or -errno.
 */
struct dso;
struct symtab;
struct stacks_leaf {
	struct dso *dso;
	struct symtab *symtab;	 /* its symbols (the dso's member), may be NULL */
	const char *path;	 /* the binary as the process saw it */
	const char *base;	 /* its last path component: the folded text's module */
	const char *open_path;	 /* where it was opened ("/proc/PID/root/...") */
	const char *root;	 /* the root its (first) process saw: "" the host's,
				  * "/proc/PID/root", NULL unknown (it was gone) */
	uint64_t off;		 /* file offset of the sampled instruction */
};
int stacks_foreach_leaf(struct stacks *st,
			void (*cb)(void *ctx, const struct stacks_leaf *l, uint64_t count),
			void *ctx);

/*
 * Stacks that could not be completed. The walk is cut where it stops being
 * trustworthy and a marker frame takes the root's place, right after the
 * comm frame:
 *   "[truncated: stack copy]"  DWARF: the next frame lies above the user
 *                              stack the kernel copied (raise --call-graph
 *                              dwarf,SIZE)
 *   "[truncated: max stack]"   the kernel's callchain reached its depth cap
 *                              (kernel.perf_event_max_stack, see
 *                              stacks_set_max_stack()), or the engine's own
 *                              254 frames
 *   "[bad return address]"     a return address outside every executable
 *                              mapping of the process (frame pointers over
 *                              code built without them, junk in a DWARF walk):
 *                              that frame and all above it are dropped
 * Counted per cgroup (the sample's, per_cgroup or not; 0 when unknown) and
 * reason, per interval.
 */
enum stacks_trunc {
	STACKS_TRUNC_STACK_COPY,
	STACKS_TRUNC_MAX_STACK,
	STACKS_TRUNC_BAD_ADDRESS,
	STACKS_TRUNC_N
};
/* "stack_copy", "max_stack", "bad_return_address": label values. */
const char *stacks_trunc_name(enum stacks_trunc t);
/* The callchain depth the sampling events were opened with (their
 * sample_max_stack): a callchain that long was cut by the kernel. 0 = 127. */
void stacks_set_max_stack(struct stacks *st, uint32_t max_stack);
/* The label a cgroup id gets in folded text ("[no-cgroup]" for 0). Valid
 * until stacks_free(). */
const char *stacks_cgroup_label(struct stacks *st, uint64_t cgroup_id);
/* Every (cgroup id, reason) counted since the last stacks_reset(). */
void stacks_foreach_truncated(const struct stacks *st,
			      void (*cb)(void *ctx, uint64_t cgroup_id, enum stacks_trunc reason,
					 uint64_t count),
			      void *ctx);

/* Start a new interval: counts cleared, objects and maps kept (objects of
 * processes gone may be dropped at the next stacks_gc()). */
int stacks_reset(struct stacks *st);

struct stacks_stats {
	uint64_t kept;          /* samples counted */
	uint64_t refused;       /* dropped: distinct-stack cap reached */
	uint64_t unwind_errors; /* DWARF unwinding failed outright */
	uint64_t no_user_regs;  /* DWARF: sample without user registers (kernel threads) */
	size_t objects;          /* binaries held now (symbols, unwind tables) */
	uint64_t objects_dropped; /* binaries dropped once no process mapped them */
	size_t processes, distinct;
	uint64_t truncated[STACKS_TRUNC_N]; /* since stacks_new(), by reason */
	uint64_t fork_seeds; /* parents' maps read at a fork (see stacks_fork) */
	uint64_t deferred;   /* samples held until the drain's FORK records were read */
};
void stacks_stats(const struct stacks *st, struct stacks_stats *out);

#endif
