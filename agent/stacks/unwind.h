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
/* Why a DWARF walk ended (unwind_sample.end). */
enum unwind_end {
	UNWIND_END_COMPLETE,   /* the CFI said the stack ends here (or a zero IP) */
	UNWIND_END_STACK_COPY, /* the next frame lies above the copied user stack */
	UNWIND_END_MAX,        /* @max frames written */
	UNWIND_END_BROKEN,     /* no unwind info, bad CFI, or a frame not above the last */
};

typedef const struct unwind_map *(*unwind_find_map_fn)(void *ctx, uint64_t ip);

struct unwind_sample {
	const uint64_t *regs;  /* PERF_SAMPLE_REGS_USER values, in mask order */
	uint64_t regs_mask;    /* the sample_regs_user mask the event used */
	const uint8_t *stack;  /* PERF_SAMPLE_STACK_USER copy */
	uint64_t stack_size;   /* dyn_size: bytes of @stack actually valid */
	unwind_find_map_fn find_map;
	void *ctx;
	/*
	 * The sampled process, or 0. With a pid, which binary find_map put at
	 * which address is remembered for that process across calls (see
	 * unwind_forget_process()); with 0, only for the call.
	 */
	uint32_t pid;
	/* Out, may be NULL: why the walk ended (set when 0 or more is returned). */
	enum unwind_end *end;
};

/*
 * Per-binary unwind tables, cached by (dev, ino) across samples/processes
 * (by path when both are 0). Each entry holds the binary's dso
 * (agent/symbols/dso.h: opened from unwind_map.path once, or shared with
 * whoever opened it, e.g. the stacks engine) and the dso's .eh_frame_hdr and
 * .eh_frame bytes, read once; a binary without usable tables is remembered
 * too, so it is not reopened per sample. Under an entry,
 * per load address, the CFI rows of each function a frame has fallen in,
 * decoded once (at most 16 MiB of them in all, then decoded again on
 * demand). At most @max_entries (1..2^20) binaries stay cached between
 * unwind_dwarf() calls, least recently used evicted first; one call may
 * hold more while it needs them. Returns NULL with errno set (EINVAL,
 * ENOMEM, ...) on failure. Not thread-safe: one cache per unwinding thread.
 */
struct unwind_cache;
struct unwind_cache *unwind_cache_new(size_t max_entries);
void unwind_cache_free(struct unwind_cache *c);
/* Drop the entry of a binary no longer mapped by anyone (or changed on disk). */
void unwind_cache_forget(struct unwind_cache *c, uint64_t dev, uint64_t ino);
/*
 * How many times a binary's unwind tables were read from its file since
 * unwind_cache_new() (failed attempts included: they are cached too), and
 * how many binaries the cache holds now. For tests and self-metrics: a
 * steady workload should see the first stop growing.
 */
uint64_t unwind_cache_loads(const struct unwind_cache *c);
size_t unwind_cache_entries(const struct unwind_cache *c);

/*
 * Per-process state. For samples with a pid the cache remembers which of
 * the process's mappings (binary, load address, range) it has met, so
 * find_map is asked again only about addresses outside them. At most 64
 * processes keep one, least recently unwound dropped first.
 *
 * The caller must call unwind_forget_process() whenever what find_map
 * answers for @pid may change: a new executable mapping, exec, fork (a
 * child's maps become its parent's) and exit (pid reuse). Until then,
 * remembered answers for that pid are used as they are.
 */
void unwind_forget_process(struct unwind_cache *c, uint32_t pid);
/* How many processes hold per-process state now. */
size_t unwind_cache_processes(const struct unwind_cache *c);
/*
 * How many functions' CFI rows were read (FDE found, rows cached) since
 * unwind_cache_new(). Steady samples of known code should not add any.
 */
uint64_t unwind_cache_rule_fills(const struct unwind_cache *c);

/*
 * The link-time addresses of the words that .eh_frame bytes @eh (@len
 * bytes at link-time address @eh_vaddr) point at with DW_EH_PE_indirect:
 * CIE personality pointers ('P') and FDE LSDA pointers ('L'), which
 * libunwind dereferences while it looks an FDE up. Up to @max, sorted, no
 * duplicates; returns how many. Malformed bytes end the scan (what was
 * found before is kept). Used when a binary is loaded; exposed for tests.
 */
size_t unwind_cfi_indirect(const uint8_t *eh, size_t len, uint64_t eh_vaddr, uint64_t *slots,
			   size_t max);

/* The register mask the DWARF backend needs (for perf_event_attr.sample_regs_user). */
uint64_t unwind_dwarf_regs_mask(void);

/*
 * Unwind @s with DWARF CFI: writes the user IPs, leaf first, into @ips
 * (at most @max) and returns how many (>= 1 when the IP register was
 * present), or -errno. Never reads outside @s->stack.
 *
 * @s->regs holds one value per bit set in @s->regs_mask. ips[0] is the
 * sampled IP; the others are return addresses as found on the stack (the
 * instruction after each call: subtract 1 before a line lookup). The walk
 * ends where the CFI says the stack ends, where the stack copy or the
 * unwind info runs out, at a zero IP, or at a frame whose SP is not above
 * the previous one (a loop, or junk); *@s->end says which. A step that had
 * to read above the copy (the caller's frame was not copied) ends with
 * UNWIND_END_STACK_COPY. -EINVAL: bad arguments or no IP in
 * the sample. Files are read through @s->find_map's paths: the binaries'
 * unwind tables (once, into @c) and, when CFI is missing, a few words of
 * text for libunwind's PLT and signal-frame checks.
 */
int unwind_dwarf(struct unwind_cache *c, const struct unwind_sample *s, uint64_t *ips, size_t max);

#endif
