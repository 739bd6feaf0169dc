/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_UNWIND_H
#define CGPERF_AGENT_UNWIND_H

/*
 * User-space stack unwinding for samples. Two backends behind one ops
 * struct: frame pointers (the kernel already walked them into
 * PERF_SAMPLE_CALLCHAIN) and DWARF CFI (.eh_frame / .debug_frame) applied by
 * libunwind to the copy of the user stack and registers the kernel put in
 * the sample (PERF_SAMPLE_STACK_USER + PERF_SAMPLE_REGS_USER).
 *
 * x86_64 only for now: registers in perf's PERF_REG_X86_* order.
 */

#include <stddef.h>
#include <stdint.h>

/* One executable mapping of the sampled process. */
struct unwind_map {
	uint64_t start, end; /* virtual address range */
	uint64_t pgoff;      /* file offset of start */
	const char *path;    /* file to read unwind info from (may be under /proc/PID/root) */
	uint64_t dev, ino;   /* cache key */
};

/* Find the mapping that contains @ip, or NULL. */
typedef const struct unwind_map *(*unwind_find_map_fn)(void *ctx, uint64_t ip);

struct unwind_sample {
	const uint64_t *regs;  /* PERF_SAMPLE_REGS_USER values, in mask order */
	uint64_t regs_mask;    /* the sample_regs_user mask the event used */
	const uint8_t *stack;  /* PERF_SAMPLE_STACK_USER copy */
	uint64_t stack_size;   /* dyn_size: bytes of @stack actually valid */
	unwind_find_map_fn find_map;
	void *ctx;
};

/* Per-binary unwind tables, cached by (dev, ino) across samples/processes. */
struct unwind_cache;
struct unwind_cache *unwind_cache_new(size_t max_entries);
void unwind_cache_free(struct unwind_cache *c);
/* Drop the entry of a binary no longer mapped by anyone. */
void unwind_cache_forget(struct unwind_cache *c, uint64_t dev, uint64_t ino);

/* The register mask the DWARF backend needs (for perf_event_attr.sample_regs_user). */
uint64_t unwind_dwarf_regs_mask(void);

/*
 * Unwind @s with DWARF CFI: writes the user IPs, leaf first, into @ips
 * (at most @max) and returns how many (>= 1 when the IP register was
 * present), or -errno. Never reads outside @s->stack.
 */
int unwind_dwarf(struct unwind_cache *c, const struct unwind_sample *s, uint64_t *ips, size_t max);

#endif
