// SPDX-License-Identifier: MIT
/*
 * DWARF unwinding of a perf sample, without the process.
 *
 * What the kernel gives us. With PERF_SAMPLE_REGS_USER and
 * PERF_SAMPLE_STACK_USER a sample carries the user registers at the moment
 * of the interrupt and a copy of the stack from SP upwards (dyn_size valid
 * bytes). By the time we read the ring buffer the thread has moved on, may
 * have exited, and may live in another mount namespace: everything has to
 * come from the sample and from the files the process had mapped.
 *
 * Who does the work. libunwind's "remote" interface runs the CFI
 * interpreter against an address space we describe with callbacks
 * (unw_accessors_t). The callbacks here answer from three places:
 *
 *   registers  access_reg() maps UNW_X86_64_* onto perf's register numbers
 *              and picks the value out of the packed regs array (values are
 *              packed in increasing bit order of the mask).
 *   memory     access_mem() serves, in order: the stack copy (only a whole
 *              8-byte word inside [SP, SP + dyn_size)); the cached
 *              .eh_frame_hdr/.eh_frame bytes of the binaries the process
 *              has met (its "bins", below), with the few data words their
 *              CFI points at indirectly (C++ personality routines, see
 *              "indirect pointers of the CFI"); and lastly the mapped file
 *              itself (text, for libunwind's PLT and signal-trampoline
 *              checks), read through one small window per sample.
 *   tables     find_proc_info() finds the mapping of an IP (in the bins,
 *              else through find_map), gets the binary's tables from the
 *              cache and hands libunwind an UNW_INFO_FORMAT_REMOTE_TABLE
 *              descriptor: the binary-search table inside .eh_frame_hdr, at
 *              its runtime address. dwarf_search_unwind_table() then reads
 *              the table, the FDE and the CIE through access_mem() by
 *              runtime address.
 *
 * Runtime addresses. A cache entry is about a file and knows only link-time
 * addresses (vaddr). The load bias is per process: a mapping whose file
 * offset pgoff falls in PT_LOAD (p_offset, p_vaddr) starts at the runtime
 * address of vaddr p_vaddr - p_offset + pgoff, so bias = start - that. The
 * bias lives next to the entry in a process's bins, so one entry serves
 * every process that maps the binary, at any address.
 *
 * The binary cache. Reading .eh_frame is the expensive part (open, ELF
 * headers, up to megabytes of tables), so an entry per binary, keyed by
 * (dev, ino), keeps the bytes in memory; failures are cached too, so a
 * binary without tables costs one open, not one per sample. Entries form an
 * LRU bounded by max_entries; the entries a running unwind uses are pinned
 * (libunwind holds addresses into them between callbacks), so during one
 * call the cache may exceed its bound by the binaries of that one stack,
 * and is trimmed when the call ends.
 *
 * Rules. Without its cache libunwind re-finds and re-parses the FDE and
 * CIE of every frame of every sample, a byte per access_mem() call, with a
 * mempool lock around each parse; its own cache (UNW_CACHE_GLOBAL) is keyed
 * by IP alone, wrong across processes, holds 128 IPs, and still takes a
 * mutex with two sigprocmask() calls per step (~0.4 us of a ~0.5 us step).
 * So libunwind runs uncached, and we cache instead: the first time a frame
 * falls in an FDE, unw_reg_states_iterate() on a scratch cursor hands us
 * every row of it (one opaque register state per address range), kept in
 * an unwind_func; every later frame in that function is a binary search and
 * unw_apply_reg_state() on the walking cursor, then the same end-of-stack
 * check unw_step() makes (RBP undefined). The rows hold runtime addresses
 * (DW_CFA_expression rules point into .eh_frame), so they are kept per
 * (binary, bias) (struct unwind_rules, under the binary's cache entry):
 * shared by every process that maps the binary at that address, as forked
 * children do, and gone with the entry. Their bytes are bounded by
 * UNWIND_RULES_MAX, past which all are dropped and refilled on demand.
 * Which rows serve a frame: the leaf's IP, and a caller's return address
 * minus 1 (inside the call) unless the frame below is a signal frame, as
 * libunwind's use_prev_instr does. Frames without rows (no FDE, vDSO, JIT)
 * go through unw_step() and its heuristics, as before.
 *
 * Processes. Which binary, at which bias, serves an address is a question
 * about one process (find_map). A sample that names its process
 * (unwind_sample.pid) gets a space of that process: up to UNWIND_SPACES,
 * least recently used recycled, each remembering the mappings it met (its
 * "bins": binary, bias, range), so a steady process asks find_map nothing.
 * The bins also serve access_mem() for .eh_frame bytes, which sit outside
 * the executable mappings find_map knows. The caller calls
 * unwind_forget_process() when the process maps new code, execs or exits;
 * evicting a binary removes it from every space's bins (a bit per space in
 * entry->spaces). Samples without a pid get bins that last one call.
 *
 * Not covered: .debug_frame (this libunwind does not export
 * dwarf_find_debug_frame), the vDSO and JIT code (no file to read; libunwind
 * then falls back to its own heuristics), and a file replaced on disk under
 * the same path while the old inode is still mapped.
 */
#include "agent/unwind.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <libunwind.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/rootfs.h"

/* Exported by libunwind-x86_64 but not declared by its headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

#define UNWIND_HDR_MAX (64u << 20)     /* .eh_frame_hdr bytes we accept */
#define UNWIND_REGION_MAX (256u << 20) /* cached bytes per region */
#define UNWIND_MERGE_GAP (64u << 10)   /* hdr and eh_frame closer than this: one region */
#define UNWIND_MAX_LOADS 64            /* PT_LOAD headers kept per binary */
#define UNWIND_MAX_SECTIONS 65536      /* sections scanned for names */
#define UNWIND_MAX_ENTRIES (1u << 20)  /* bound on max_entries */
#define UNWIND_SPACES 64               /* processes with bins (bits of a uint64_t) */
#define UNWIND_BINS 32                 /* mappings one process's bins remember */
#define UNWIND_FUNC_ROWS 1024          /* CFI rows kept per function */
#define UNWIND_RULES_MAX (16u << 20)   /* bytes of rows kept, all binaries */
#define UNWIND_WIN 128                 /* file-read window for text reads */
#define UNWIND_PREFETCH 2048           /* stack copy prefetched ahead of the walk */
#define UNWIND_POPPED 6                /* callee-saved registers: rbx, rbp, r12-r15 */
#define UNWIND_RED_ZONE 128            /* bytes below SP a leaf may still address */
#define UNWIND_PAGE 4096ull
#define UNWIND_SLOTS 16                /* indirect CFI pointers kept per binary */
#define UNWIND_CIES 64                 /* CIEs remembered while scanning .eh_frame */

/* DWARF pointer encodings used by .eh_frame_hdr. */
#define EH_PE_absptr 0x00
#define EH_PE_udata2 0x02
#define EH_PE_udata4 0x03
#define EH_PE_udata8 0x04
#define EH_PE_sdata2 0x0a
#define EH_PE_sdata4 0x0b
#define EH_PE_sdata8 0x0c
#define EH_PE_uleb128 0x01
#define EH_PE_sleb128 0x09
#define EH_PE_pcrel 0x10
#define EH_PE_datarel 0x30
#define EH_PE_aligned 0x50
#define EH_PE_indirect 0x80
#define EH_PE_omit 0xff

struct unwind_seg {
	uint64_t offset, vaddr, filesz;
	bool exec;
};

/* File bytes kept in memory, 8-byte aligned at both ends (libunwind reads aligned words). */
struct unwind_region {
	uint64_t vaddr, size;
	uint8_t *data;
};

/* The CFI rows of one FDE: libunwind register states, opaque to us. */
struct unwind_func {
	uint64_t start, end; /* runtime addresses */
	bool signal;         /* a signal trampoline: its caller's IP is exact */
	uint32_t nrows;
	uint64_t *row_end;   /* row i covers [row_end[i - 1] (or start), row_end[i]) */
	uint8_t *states;     /* nrows states of unwind_cache.state_size bytes */
	size_t bytes;
};

/* The functions of one binary met at one bias, sorted by start. */
struct unwind_rules {
	struct unwind_rules *next;
	uint64_t bias;
	uint64_t *start; /* v[i]->start, dense for the binary search */
	struct unwind_func **v;
	size_t n, cap;
};

struct unwind_entry {
	struct unwind_entry *prev, *next; /* LRU list, head is the most recent */
	struct unwind_entry *hnext;       /* hash chain */
	uint64_t dev, ino;
	char *path; /* kept only when dev and ino are both 0 (then it is the key) */
	int err;    /* 0, or why this binary has no usable table */
	uint64_t pin;
	uint64_t spaces;             /* bit i: in the bins of spaces[i] */
	struct unwind_rules *rules; /* per bias */
	uint64_t hdr_vaddr, table_vaddr, fde_count;
	struct unwind_seg segs[UNWIND_MAX_LOADS];
	size_t nsegs;
	struct unwind_region reg[2];
	size_t nreg;
	/* Words the CFI points at indirectly (personality, LSDA): link-time
	 * address and the file's bytes there (see cfi_scan_indirect()). */
	uint64_t slot_vaddr[UNWIND_SLOTS], slot_val[UNWIND_SLOTS];
	size_t nslots;
};

/* One executable mapping a process has met: a binary at a bias. */
struct unwind_bin {
	struct unwind_entry *e;
	uint64_t bias;
	uint64_t start, end; /* the mapping find_map returned */
};

/* What the unwinder remembers of one process. */
struct unwind_space {
	uint32_t pid; /* 0: a free slot, or the pid-less samples' space */
	int slot;     /* bit in unwind_entry.spaces; -1 for the pid-less space */
	uint64_t used; /* unwind_cache.clock when last used */
	struct unwind_bin bins[UNWIND_BINS];
	size_t nbins, next_bin, hint;
};

struct unwind_cache {
	unw_addr_space_t as; /* UNW_CACHE_NONE: the rows are cached here */
	size_t max, count;
	struct unwind_entry *head, *tail;
	struct unwind_entry **buckets;
	size_t nbuckets; /* power of two */
	uint64_t gen;    /* entries with pin == gen are in use by the running unwind */
	uint64_t loads;
	size_t state_size;  /* libunwind's register state, once seen; 0 before */
	size_t rule_bytes;  /* in all unwind_funcs */
	uint64_t rule_fills; /* FDEs turned into rows */
	/* Rows of the FDE being read (unw_reg_states_iterate's callback). */
	uint64_t fill_start, *fill_end;
	uint8_t *fill_states;
	size_t fill_n, fill_cap;
	bool fill_bad;
	uint64_t clock;
	struct unwind_space shared; /* samples without a pid; bins reset per call */
	struct unwind_space *last;  /* the space of the previous pid */
	struct unwind_space spaces[UNWIND_SPACES];
};

/* Everything one unwind_dwarf() call needs; the libunwind callbacks' arg. */
struct unwind_state {
	struct unwind_cache *c;
	const struct unwind_sample *s;
	struct unwind_space *sp;
	uint64_t stack_lo, stack_size;
	const uint8_t *stack;
	uint64_t prefetched; /* bytes of the copy prefetched */
	bool above_copy;     /* a read since the last step fell above the copy */
	bool filling;     /* the scratch cursor's RIP is fill_ip */
	uint64_t fill_ip;
	struct unwind_func *once; /* rows that could not be cached, freed after use */
	/* Registers the leaf popped: their save slots lie below SP, outside the copy. */
	uint64_t popped_addr[UNWIND_POPPED], popped_val[UNWIND_POPPED];
	size_t npopped;
	/* The file behind the text window, by value: find_map may reuse its answers. */
	struct unwind_map fmap;
	int fd;
	uint64_t win_start;
	size_t win_len;
	uint8_t win[UNWIND_WIN];
};

/* ---- registers ---- */

/* UNW_X86_64_* (DWARF order) to PERF_REG_X86_*. */
static const int unwind_perf_reg[] = {
	[UNW_X86_64_RAX] = PERF_REG_X86_AX, [UNW_X86_64_RDX] = PERF_REG_X86_DX,
	[UNW_X86_64_RCX] = PERF_REG_X86_CX, [UNW_X86_64_RBX] = PERF_REG_X86_BX,
	[UNW_X86_64_RSI] = PERF_REG_X86_SI, [UNW_X86_64_RDI] = PERF_REG_X86_DI,
	[UNW_X86_64_RBP] = PERF_REG_X86_BP, [UNW_X86_64_RSP] = PERF_REG_X86_SP,
	[UNW_X86_64_R8] = PERF_REG_X86_R8,  [UNW_X86_64_R9] = PERF_REG_X86_R9,
	[UNW_X86_64_R10] = PERF_REG_X86_R10, [UNW_X86_64_R11] = PERF_REG_X86_R11,
	[UNW_X86_64_R12] = PERF_REG_X86_R12, [UNW_X86_64_R13] = PERF_REG_X86_R13,
	[UNW_X86_64_R14] = PERF_REG_X86_R14, [UNW_X86_64_R15] = PERF_REG_X86_R15,
	[UNW_X86_64_RIP] = PERF_REG_X86_IP,
};

uint64_t unwind_dwarf_regs_mask(void)
{
	uint64_t mask = 0;

	for (size_t i = 0; i < sizeof(unwind_perf_reg) / sizeof(unwind_perf_reg[0]); i++)
		mask |= 1ull << unwind_perf_reg[i];
	return mask;
}

static int sample_reg(const struct unwind_sample *s, int perf_reg, uint64_t *val)
{
	uint64_t bit = 1ull << perf_reg;

	if (!(s->regs_mask & bit))
		return -ENOENT;
	*val = s->regs[__builtin_popcountll(s->regs_mask & (bit - 1))];
	return 0;
}

/* ---- cache ---- */

static size_t cache_hash(const struct unwind_cache *c, uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino ^ (dev * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return (size_t)(h >> 32) & (c->nbuckets - 1);
}

static bool entry_matches(const struct unwind_entry *e, uint64_t dev, uint64_t ino,
			  const char *path)
{
	if (e->dev != dev || e->ino != ino)
		return false;
	if (dev || ino)
		return true;
	return e->path && path && !strcmp(e->path, path);
}

static void entry_free(struct unwind_entry *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nreg; i++)
		free(e->reg[i].data);
	free(e->path);
	free(e);
}

static void lru_unlink(struct unwind_cache *c, struct unwind_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push_head(struct unwind_cache *c, struct unwind_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

/* ---- a process's bins ---- */

/* Remove bins[i] of @sp; @e's bit goes when no other bin of @sp holds it. */
static void space_unbin(struct unwind_space *sp, size_t i)
{
	struct unwind_entry *e = sp->bins[i].e;

	sp->bins[i] = sp->bins[--sp->nbins];
	if (sp->hint >= sp->nbins)
		sp->hint = 0;
	if (sp->next_bin >= sp->nbins)
		sp->next_bin = 0;
	if (sp->slot < 0)
		return;
	for (size_t k = 0; k < sp->nbins; k++)
		if (sp->bins[k].e == e)
			return;
	e->spaces &= ~(1ull << sp->slot);
}

static void space_clear(struct unwind_space *sp)
{
	while (sp->nbins)
		space_unbin(sp, sp->nbins - 1);
	sp->hint = sp->next_bin = 0;
}

/* @e is going away: no process may keep a bin of it. */
static void spaces_drop_entry(struct unwind_cache *c, struct unwind_entry *e)
{
	uint64_t mask = e->spaces;

	while (mask) {
		struct unwind_space *sp = &c->spaces[__builtin_ctzll(mask)];

		mask &= mask - 1;
		for (size_t i = sp->nbins; i-- > 0;)
			if (sp->bins[i].e == e)
				space_unbin(sp, i);
	}
	e->spaces = 0;
}

/* ---- rows ---- */

static void rules_free(struct unwind_cache *c, struct unwind_entry *e)
{
	while (e->rules) {
		struct unwind_rules *r = e->rules;

		e->rules = r->next;
		for (size_t i = 0; i < r->n; i++) {
			c->rule_bytes -= r->v[i]->bytes;
			free(r->v[i]);
		}
		c->rule_bytes -= r->cap * (sizeof(*r->v) + sizeof(*r->start)) + sizeof(*r);
		free(r->start);
		free(r->v);
		free(r);
	}
}

static void cache_evict(struct unwind_cache *c, struct unwind_entry *e)
{
	struct unwind_entry **pp = &c->buckets[cache_hash(c, e->dev, e->ino)];

	spaces_drop_entry(c, e);
	rules_free(c, e);

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	lru_unlink(c, e);
	c->count--;
	entry_free(e);
}

/* Evict least recently used entries down to the bound, sparing pinned ones. */
static void cache_trim(struct unwind_cache *c)
{
	/* Pinned entries were moved to the head when used: stop at the first one. */
	while (c->count > c->max && c->tail && c->tail->pin != c->gen)
		cache_evict(c, c->tail);
}

void unwind_cache_forget(struct unwind_cache *c, uint64_t dev, uint64_t ino)
{
	struct unwind_entry *e, *next;

	if (!c)
		return;
	for (e = c->buckets[cache_hash(c, dev, ino)]; e; e = next) {
		next = e->hnext;
		if (e->dev == dev && e->ino == ino)
			cache_evict(c, e);
	}
}

uint64_t unwind_cache_loads(const struct unwind_cache *c)
{
	return c ? c->loads : 0;
}

size_t unwind_cache_entries(const struct unwind_cache *c)
{
	return c ? c->count : 0;
}

/* ---- reading one binary's tables ---- */

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENODATA; /* file shorter than its headers say */
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static const struct unwind_seg *seg_of_vaddr(const struct unwind_entry *e, uint64_t vaddr)
{
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct unwind_seg *s = &e->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz)
			return s;
	}
	return NULL;
}

/*
 * Read [vaddr, vaddr + size) into a new region, widened to 8-byte alignment.
 * The widening may step outside the segment's file bytes: those read as 0.
 */
static int region_load(struct unwind_entry *e, int fd, uint64_t vaddr, uint64_t size)
{
	const struct unwind_seg *s = seg_of_vaddr(e, vaddr);
	struct unwind_region *r = &e->reg[e->nreg];
	uint64_t lo, hi, rlo, rhi, seg_end;
	int ret;

	if (!s || !size)
		return -ENOENT;
	seg_end = s->vaddr + s->filesz;
	if (size > seg_end - vaddr)
		size = seg_end - vaddr;
	if (size > UNWIND_REGION_MAX)
		size = UNWIND_REGION_MAX; /* FDEs past the cap just go unfound */
	lo = vaddr & ~7ull;
	hi = (vaddr + size + 7) & ~7ull;
	r->data = calloc(1, hi - lo);
	if (!r->data)
		return -ENOMEM;
	rlo = lo < s->vaddr ? s->vaddr : lo;
	rhi = hi > seg_end ? seg_end : hi;
	ret = pread_full(fd, r->data + (rlo - lo), rhi - rlo, s->offset + (rlo - s->vaddr));
	if (ret < 0) {
		free(r->data);
		r->data = NULL;
		return ret;
	}
	r->vaddr = lo;
	r->size = hi - lo;
	e->nreg++;
	return 0;
}

/* Decode one encoded pointer of .eh_frame_hdr at *pos. */
static int hdr_read_ptr(const uint8_t *buf, size_t len, size_t *pos, uint8_t enc,
			uint64_t hdr_vaddr, uint64_t *out)
{
	size_t p = *pos, n;
	uint64_t base, v = 0;

	switch (enc & 0x70) {
	case 0:
		base = 0;
		break;
	case EH_PE_pcrel:
		base = hdr_vaddr + p;
		break;
	case EH_PE_datarel:
		base = hdr_vaddr;
		break;
	default:
		return -ENOTSUP;
	}
	switch (enc & 0x8f) {
	case EH_PE_absptr:
	case EH_PE_udata8:
	case EH_PE_sdata8:
		n = 8;
		break;
	case EH_PE_udata4:
	case EH_PE_sdata4:
		n = 4;
		break;
	case EH_PE_udata2:
	case EH_PE_sdata2:
		n = 2;
		break;
	default:
		return -ENOTSUP; /* also DW_EH_PE_indirect */
	}
	if (p > len || len - p < n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)buf[p + i] << (8 * i);
	if ((enc & 0x0f) == EH_PE_sdata4)
		v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
	else if ((enc & 0x0f) == EH_PE_sdata2)
		v = (uint64_t)(int64_t)(int16_t)(uint16_t)v;
	*out = base + v;
	*pos = p + n;
	return 0;
}

struct unwind_elf_info {
	uint64_t hdr_vaddr, hdr_size;
	uint64_t eh_vaddr, eh_size; /* eh_size 0: unknown */
};

static int elf_scan(Elf *elf, struct unwind_entry *e, struct unwind_elf_info *info)
{
	GElf_Ehdr ehdr;
	size_t phnum, shnum, shstrndx;
	bool have_hdr = false;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		return -ENOEXEC;
	if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_machine != EM_X86_64)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &phnum) < 0)
		return -ENOEXEC;
	for (size_t i = 0; i < phnum && i < 65536; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type == PT_LOAD && ph.p_filesz) {
			if (e->nsegs == UNWIND_MAX_LOADS)
				return -E2BIG;
			/* Headroom for 8-byte rounding past the end. */
			if (ph.p_vaddr > UINT64_MAX - 16 - ph.p_filesz ||
			    ph.p_offset > UINT64_MAX - 16 - ph.p_filesz)
				return -ENOEXEC;
			e->segs[e->nsegs++] = (struct unwind_seg){
				.offset = ph.p_offset,
				.vaddr = ph.p_vaddr,
				.filesz = ph.p_filesz,
				.exec = ph.p_flags & PF_X,
			};
		} else if (ph.p_type == PT_GNU_EH_FRAME && ph.p_filesz) {
			info->hdr_vaddr = ph.p_vaddr;
			info->hdr_size = ph.p_filesz;
			have_hdr = true;
		}
	}
	/* Section headers, when present, also give .eh_frame's size. */
	if (elf_getshdrnum(elf, &shnum) == 0 && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		Elf_Scn *scn = NULL;
		size_t seen = 0;

		while ((scn = elf_nextscn(elf, scn)) && seen++ < UNWIND_MAX_SECTIONS) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (!name)
				continue;
			if (!strcmp(name, ".eh_frame_hdr")) {
				info->hdr_vaddr = sh.sh_addr;
				info->hdr_size = sh.sh_size;
				have_hdr = true;
			} else if (!strcmp(name, ".eh_frame")) {
				info->eh_vaddr = sh.sh_addr;
				info->eh_size = sh.sh_size;
			}
		}
	}
	return have_hdr ? 0 : -ENOENT;
}

/* Parse .eh_frame_hdr: where .eh_frame is, where the sorted table is. */
static int hdr_parse(struct unwind_entry *e, int fd, struct unwind_elf_info *info)
{
	const struct unwind_seg *s = seg_of_vaddr(e, info->hdr_vaddr);
	uint64_t eh_frame, count, size = info->hdr_size;
	size_t pos = 4;
	uint8_t *buf;
	int ret;

	if (!s)
		return -ENOENT;
	if (size > s->vaddr + s->filesz - info->hdr_vaddr)
		size = s->vaddr + s->filesz - info->hdr_vaddr;
	if (size < 12 || size > UNWIND_HDR_MAX)
		return -EINVAL;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	ret = pread_full(fd, buf, size, s->offset + (info->hdr_vaddr - s->vaddr));
	if (ret < 0)
		goto out;
	ret = -ENOTSUP;
	/*
	 * Version 1; a plain count; the table must be datarel sdata4, the only
	 * form libunwind's remote lookup reads.
	 */
	if (buf[0] != 1 || (buf[2] & 0x70) || buf[3] != (EH_PE_datarel | EH_PE_sdata4))
		goto out;
	ret = hdr_read_ptr(buf, size, &pos, buf[1], info->hdr_vaddr, &eh_frame);
	if (ret < 0)
		goto out;
	ret = hdr_read_ptr(buf, size, &pos, buf[2], 0, &count);
	if (ret < 0)
		goto out;
	ret = -EINVAL;
	if (!count || count > (size - pos) / 8)
		goto out;
	/* The header's pointer wins over a section of that name elsewhere. */
	if (info->eh_vaddr != eh_frame)
		info->eh_size = 0;
	info->eh_vaddr = eh_frame;
	info->hdr_size = size;
	e->hdr_vaddr = info->hdr_vaddr;
	e->table_vaddr = info->hdr_vaddr + pos;
	e->fde_count = count;
	ret = 0;
out:
	free(buf);
	return ret;
}

/*
 * ---- indirect pointers of the CFI ----
 *
 * A C++ function with cleanups or handlers has an FDE whose CIE carries the
 * augmentation "zPLR": P, the personality routine, is usually encoded
 * DW_EH_PE_indirect | pcrel | sdata4, i.e. the CIE holds the address of a
 * word (DW.ref.__gxx_personality_v0, in .data) that holds the routine's
 * address. libunwind's CIE parser dereferences it through access_mem()
 * while it looks up the FDE, even though unwinding never calls the routine,
 * and fails the whole lookup when the read fails: every C++ frame with a
 * cleanup ended the stack. The same holds for an 'L' (LSDA) pointer with
 * an indirect encoding in an FDE. Those words sit in writable data we do
 * not copy, so the binary's CFI is scanned once, when its entry is loaded:
 * the addresses of every such word are collected and the file's bytes
 * there kept, for access_mem() to serve (their values, unrelocated, are
 * never used for unwinding).
 *
 * The scan reads the .eh_frame format (LSB's "Exception Frames"): records
 * of a 32-bit length (0xffffffff: a 64-bit length follows; 0: the end), then
 * a 32-bit CIE id, 0 for a CIE, else the distance back to the FDE's CIE.
 * A CIE: version (1, 3 or 4), the augmentation string, for version 4 the
 * address and segment sizes, code and data alignment (LEB128), the return
 * register (a byte in version 1, else ULEB128), and with a 'z' first, the
 * augmentation data's length and then, per letter, L (LSDA encoding byte),
 * P (encoding byte, then a pointer so encoded), R (FDE pointer encoding
 * byte), S (signal frame), B and G (AArch64 BTI and MTE: no data). Any
 * other letter ends what can be understood; the 'z' length still bounds
 * the data. An FDE: the initial location and range, encoded as its CIE's
 * R says, then with 'z' its augmentation data length and the LSDA pointer.
 */
struct cfi_cur {
	const uint8_t *buf;
	size_t len, pos;
	uint64_t vaddr; /* link-time address of buf[0] */
};

static int cfi_u8(struct cfi_cur *c, uint8_t *v)
{
	if (c->pos >= c->len)
		return -EINVAL;
	*v = c->buf[c->pos++];
	return 0;
}

static int cfi_fixed(struct cfi_cur *c, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	if (c->pos > c->len || c->len - c->pos < n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)c->buf[c->pos + i] << (8 * i);
	c->pos += n;
	*v = x;
	return 0;
}

static int cfi_leb(struct cfi_cur *c, bool is_signed, uint64_t *v)
{
	uint64_t x = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (cfi_u8(c, &b) < 0 || shift >= 64)
			return -EINVAL;
		x |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (is_signed && shift < 64 && (b & 0x40))
		x |= ~0ull << shift;
	*v = x;
	return 0;
}

/*
 * One pointer encoded as @enc at the cursor. *@v is its value, or with
 * DW_EH_PE_indirect the address of the word holding it (*@indirect set);
 * *@known is false for bases the scan cannot know (textrel, datarel,
 * funcrel): the bytes are still consumed. -EINVAL: truncated or an unknown
 * value format.
 */
static int cfi_ptr(struct cfi_cur *c, uint8_t enc, uint64_t *v, bool *indirect, bool *known)
{
	uint64_t at, x;
	int ret;

	*indirect = false;
	*known = true;
	*v = 0;
	if (enc == EH_PE_omit)
		return 0;
	if ((enc & 0x70) == EH_PE_aligned) {
		/* An absolute pointer, at the next multiple of its size. */
		uint64_t pad = (8 - ((c->vaddr + c->pos) & 7)) & 7;

		if (c->pos > c->len || c->len - c->pos < pad)
			return -EINVAL;
		c->pos += pad;
		if ((ret = cfi_fixed(c, 8, &x)) < 0)
			return ret;
		*v = x;
		*indirect = enc & EH_PE_indirect;
		return 0;
	}
	at = c->vaddr + c->pos;
	switch (enc & 0x0f) {
	case EH_PE_absptr:
	case EH_PE_udata8:
	case EH_PE_sdata8:
		ret = cfi_fixed(c, 8, &x);
		break;
	case EH_PE_udata4:
		ret = cfi_fixed(c, 4, &x);
		break;
	case EH_PE_sdata4:
		ret = cfi_fixed(c, 4, &x);
		x = (uint64_t)(int64_t)(int32_t)(uint32_t)x;
		break;
	case EH_PE_udata2:
		ret = cfi_fixed(c, 2, &x);
		break;
	case EH_PE_sdata2:
		ret = cfi_fixed(c, 2, &x);
		x = (uint64_t)(int64_t)(int16_t)(uint16_t)x;
		break;
	case EH_PE_uleb128:
		ret = cfi_leb(c, false, &x);
		break;
	case EH_PE_sleb128:
		ret = cfi_leb(c, true, &x);
		break;
	default:
		return -EINVAL;
	}
	if (ret < 0)
		return ret;
	switch (enc & 0x70) {
	case 0:
		break;
	case EH_PE_pcrel:
		x += at;
		break;
	default:
		*known = false;
		break;
	}
	*v = x;
	*indirect = enc & EH_PE_indirect;
	return 0;
}

struct cfi_cie {
	size_t off; /* of its length field in .eh_frame */
	bool z;
	uint8_t fde_enc, lsda_enc;
};

static void slot_add(uint64_t *slots, size_t *n, size_t max, uint64_t v)
{
	size_t i = 0;

	while (i < *n && slots[i] < v)
		i++;
	if ((i < *n && slots[i] == v) || *n == max)
		return;
	memmove(slots + i + 1, slots + i, (*n - i) * sizeof(*slots));
	slots[i] = v;
	(*n)++;
}

/* Parse the CIE whose body (after the id) is [c->pos, end). */
static int cfi_cie_parse(struct cfi_cur *c, size_t end, struct cfi_cie *cie, uint64_t *slots,
			 size_t *nslots, size_t max)
{
	struct cfi_cur a;
	const char *aug;
	size_t auglen;
	uint8_t ver, b;
	uint64_t x, dlen;
	bool ind, known;

	cie->z = false;
	cie->fde_enc = EH_PE_absptr;
	cie->lsda_enc = EH_PE_omit;
	c->len = end;
	if (cfi_u8(c, &ver) < 0 || (ver != 1 && ver != 3 && ver != 4))
		return -EINVAL;
	aug = (const char *)c->buf + c->pos;
	auglen = strnlen(aug, end - c->pos);
	if (auglen == end - c->pos)
		return -EINVAL;
	c->pos += auglen + 1;
	if (aug[0] != 'z')
		return 0; /* no augmentation data we could find our way through */
	cie->z = true;
	if (ver == 4 && (cfi_u8(c, &b) < 0 || cfi_u8(c, &b) < 0))
		return -EINVAL;
	if (cfi_leb(c, false, &x) < 0 || cfi_leb(c, true, &x) < 0)
		return -EINVAL;
	if (ver == 1 ? cfi_u8(c, &b) < 0 : cfi_leb(c, false, &x) < 0)
		return -EINVAL;
	if (cfi_leb(c, false, &dlen) < 0 || dlen > end - c->pos)
		return -EINVAL;
	a = *c;
	a.len = c->pos + dlen;
	for (size_t i = 1; i < auglen; i++) {
		switch (aug[i]) {
		case 'L':
			if (cfi_u8(&a, &cie->lsda_enc) < 0)
				return -EINVAL;
			break;
		case 'R':
			if (cfi_u8(&a, &cie->fde_enc) < 0)
				return -EINVAL;
			break;
		case 'P':
			if (cfi_u8(&a, &b) < 0 || cfi_ptr(&a, b, &x, &ind, &known) < 0)
				return -EINVAL;
			if (ind && known)
				slot_add(slots, nslots, max, x);
			break;
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			return 0; /* unknown letter: the rest is not ours to read */
		}
	}
	return 0;
}

size_t unwind_cfi_indirect(const uint8_t *eh, size_t len, uint64_t eh_vaddr, uint64_t *slots,
			   size_t max)
{
	struct cfi_cie cies[UNWIND_CIES];
	size_t ncies = 0, nslots = 0, pos = 0;

	if (!eh || (!slots && max))
		return 0;
	while (pos < len && len - pos >= 4) {
		struct cfi_cur c = { .buf = eh, .len = len, .pos = pos, .vaddr = eh_vaddr };
		uint64_t rlen, id, x, dlen;
		size_t start = pos, body, end;
		const struct cfi_cie *cie = NULL;
		bool ind, known;

		if (cfi_fixed(&c, 4, &rlen) < 0 || !rlen)
			break;
		if (rlen == 0xffffffffull && cfi_fixed(&c, 8, &rlen) < 0)
			break;
		body = c.pos;
		if (rlen > len - body || rlen < 4)
			break;
		end = body + rlen;
		pos = end;
		if (cfi_fixed(&c, 4, &id) < 0)
			break;
		if (!id) {
			struct cfi_cie one = { .off = start };

			if (cfi_cie_parse(&c, end, &one, slots, &nslots, max) == 0 &&
			    ncies < UNWIND_CIES)
				cies[ncies++] = one;
			continue;
		}
		/* An FDE: only an LSDA with an indirect encoding concerns us. */
		if (id > body)
			continue;
		for (size_t i = 0; i < ncies; i++)
			if (cies[i].off == body - id)
				cie = &cies[i];
		if (!cie || !cie->z || cie->lsda_enc == EH_PE_omit ||
		    !(cie->lsda_enc & EH_PE_indirect))
			continue;
		c.len = end;
		if (cfi_ptr(&c, cie->fde_enc, &x, &ind, &known) < 0 ||
		    cfi_ptr(&c, cie->fde_enc & 0x0f, &x, &ind, &known) < 0 ||
		    cfi_leb(&c, false, &dlen) < 0 || dlen > end - c.pos)
			continue;
		c.len = c.pos + dlen;
		if (cfi_ptr(&c, cie->lsda_enc, &x, &ind, &known) == 0 && ind && known && x)
			slot_add(slots, &nslots, max, x);
	}
	return nslots;
}

/* Collect the indirect words of @e's .eh_frame and read them from @fd. */
static void entry_slots(struct unwind_entry *e, int fd, uint64_t eh_vaddr, uint64_t eh_end)
{
	for (size_t k = 0; k < e->nreg; k++) {
		const struct unwind_region *r = &e->reg[k];

		if (eh_vaddr < r->vaddr || eh_vaddr - r->vaddr >= r->size)
			continue;
		if (eh_end > r->vaddr + r->size)
			eh_end = r->vaddr + r->size;
		e->nslots = unwind_cfi_indirect(r->data + (eh_vaddr - r->vaddr), eh_end - eh_vaddr,
						eh_vaddr, e->slot_vaddr, UNWIND_SLOTS);
		break;
	}
	for (size_t i = 0; i < e->nslots; i++) {
		uint64_t v = e->slot_vaddr[i];
		const struct unwind_seg *s = seg_of_vaddr(e, v);
		uint8_t w[8] = { 0 };

		/* Past the file's bytes (.bss) the word is 0, as the loader leaves it. */
		if (s && s->filesz - (v - s->vaddr) >= 8)
			(void)pread_full(fd, w, 8, s->offset + (v - s->vaddr));
		memcpy(&e->slot_val[i], w, 8);
	}
}

static int entry_load(struct unwind_entry *e, const char *path)
{
	struct unwind_elf_info info = { 0 };
	const struct unwind_seg *hs, *es;
	uint64_t lo, hi, eh_end;
	struct stat st;
	Elf *elf;
	int fd, ret;

	/* inside the process's root, regular files only (agent/rootfs.h) */
	fd = rootfs_open_path(path, ROOTFS_ELF_MAX, &st);
	if (fd < 0)
		return fd == -EINVAL || fd == -EISDIR ? -ENOEXEC : fd;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		ret = -ENOEXEC;
		goto out_close;
	}
	ret = elf_scan(elf, e, &info);
	elf_end(elf);
	if (ret < 0)
		goto out_close;
	ret = hdr_parse(e, fd, &info);
	if (ret < 0)
		goto out_close;

	hs = seg_of_vaddr(e, info.hdr_vaddr);
	es = seg_of_vaddr(e, info.eh_vaddr);
	if (!es) {
		ret = -ENOENT;
		goto out_close;
	}
	/* Unknown .eh_frame size (no section headers): up to the end of its segment. */
	eh_end = es->vaddr + es->filesz;
	if (info.eh_size && info.eh_size < eh_end - info.eh_vaddr)
		eh_end = info.eh_vaddr + info.eh_size;

	lo = info.hdr_vaddr < info.eh_vaddr ? info.hdr_vaddr : info.eh_vaddr;
	hi = info.hdr_vaddr + info.hdr_size > eh_end ? info.hdr_vaddr + info.hdr_size : eh_end;
	if (hs == es && hi - lo <= info.hdr_size + (eh_end - info.eh_vaddr) + UNWIND_MERGE_GAP) {
		ret = region_load(e, fd, lo, hi - lo);
	} else {
		ret = region_load(e, fd, info.hdr_vaddr, info.hdr_size);
		if (ret == 0)
			ret = region_load(e, fd, info.eh_vaddr, eh_end - info.eh_vaddr);
	}
	if (ret == 0)
		entry_slots(e, fd, info.eh_vaddr, eh_end);
out_close:
	close(fd);
	return ret;
}

/* The entry of @m's binary, loaded on a miss; NULL only when out of memory. */
static struct unwind_entry *cache_get(struct unwind_cache *c, const struct unwind_map *m)
{
	size_t b = cache_hash(c, m->dev, m->ino);
	struct unwind_entry *e;

	for (e = c->buckets[b]; e; e = e->hnext)
		if (entry_matches(e, m->dev, m->ino, m->path))
			break;
	if (e) {
		lru_unlink(c, e);
		lru_push_head(c, e);
		e->pin = c->gen;
		return e;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->dev = m->dev;
	e->ino = m->ino;
	if (!m->dev && !m->ino) {
		e->path = strndup(m->path, 4096);
		if (!e->path) {
			free(e);
			return NULL;
		}
	}
	c->loads++;
	e->err = entry_load(e, m->path);
	if (e->err) {
		/* Keep the negative answer, not the half-read bytes. */
		for (size_t i = 0; i < e->nreg; i++)
			free(e->reg[i].data);
		e->nreg = 0;
	}
	e->pin = c->gen;
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	lru_push_head(c, e);
	c->count++;
	cache_trim(c);
	return e;
}

/* Runtime address minus link-time address of @e's binary as mapped by @m. */
static uint64_t entry_bias(const struct unwind_entry *e, const struct unwind_map *m)
{
	const struct unwind_seg *best = NULL;

	for (size_t i = 0; i < e->nsegs; i++) {
		const struct unwind_seg *s = &e->segs[i];

		if ((s->offset & ~(UNWIND_PAGE - 1)) <= m->pgoff &&
		    m->pgoff < s->offset + s->filesz && (!best || (s->exec && !best->exec)))
			best = s;
	}
	/* The map starts at file offset pgoff, which is vaddr s->vaddr - s->offset + pgoff. */
	if (best)
		return m->start - (best->vaddr - best->offset + m->pgoff);
	return m->start - m->pgoff;
}

/* ---- processes ---- */

/* Mark @e in use by the running unwind (pinned, most recent). */
static void cache_touch(struct unwind_cache *c, struct unwind_entry *e)
{
	if (e->pin == c->gen)
		return;
	e->pin = c->gen;
	lru_unlink(c, e);
	lru_push_head(c, e);
}

/* Remember @e mapped at [start, end) with @bias in @sp; returns its bin. */
static struct unwind_bin *space_bin_add(struct unwind_space *sp, struct unwind_entry *e,
					uint64_t bias, uint64_t start, uint64_t end)
{
	size_t i;

	if (sp->nbins == UNWIND_BINS) {
		/*
		 * Full: drop one. Not one the walk under way still needs:
		 * libunwind holds no .eh_frame address from one frame to the
		 * next, and the walk looks each frame's bin up afresh.
		 */
		space_unbin(sp, sp->next_bin);
		sp->next_bin = (sp->next_bin + 1) % UNWIND_BINS;
	}
	i = sp->nbins++;
	sp->bins[i] = (struct unwind_bin){ .e = e, .bias = bias, .start = start, .end = end };
	if (sp->slot >= 0)
		e->spaces |= 1ull << sp->slot;
	sp->hint = i;
	return &sp->bins[i];
}

/* The bin whose mapping holds @addr, or NULL. */
static struct unwind_bin *space_bin_of(struct unwind_space *sp, uint64_t addr)
{
	for (size_t n = 0, i = sp->hint; n < sp->nbins; n++, i = i + 1 == sp->nbins ? 0 : i + 1) {
		struct unwind_bin *b = &sp->bins[i];

		if (addr >= b->start && addr < b->end) {
			sp->hint = i;
			return b;
		}
	}
	return NULL;
}

/*
 * The bin of the executable mapping holding @addr, asking find_map (and
 * reading the binary's tables) on a miss; NULL if no mapping with a file
 * holds it (*err then says why).
 */
static struct unwind_bin *state_bin(struct unwind_state *st, uint64_t addr, int *err)
{
	struct unwind_bin *b = space_bin_of(st->sp, addr);
	const struct unwind_map *m;
	struct unwind_entry *e;

	if (b) {
		cache_touch(st->c, b->e);
		return b;
	}
	m = st->s->find_map(st->s->ctx, addr);
	if (!m || !m->path || addr < m->start || addr >= m->end) {
		*err = -UNW_ENOINFO;
		return NULL;
	}
	e = cache_get(st->c, m);
	if (!e) {
		*err = -UNW_ENOMEM;
		return NULL;
	}
	/* A binary without tables gets a bin too: the next miss is quick. */
	return space_bin_add(st->sp, e, e->err ? 0 : entry_bias(e, m), m->start, m->end);
}

/* The space of @pid, recycling the least recently used one. */
static struct unwind_space *space_get(struct unwind_cache *c, uint32_t pid)
{
	struct unwind_space *sp = c->last, *victim = NULL;

	if (sp && sp->pid == pid)
		goto out;
	for (size_t i = 0; i < UNWIND_SPACES; i++) {
		sp = &c->spaces[i];
		if (sp->pid == pid)
			goto out;
		if (!victim || (victim->pid && (!sp->pid || sp->used < victim->used)))
			victim = sp;
	}
	sp = victim;
	space_clear(sp);
	sp->pid = pid;
out:
	sp->used = ++c->clock;
	c->last = sp;
	return sp;
}

void unwind_forget_process(struct unwind_cache *c, uint32_t pid)
{
	if (!c || !pid)
		return;
	for (size_t i = 0; i < UNWIND_SPACES; i++) {
		struct unwind_space *sp = &c->spaces[i];

		if (sp->pid == pid) {
			space_clear(sp);
			sp->pid = 0;
			if (c->last == sp)
				c->last = NULL;
			return;
		}
	}
}

size_t unwind_cache_processes(const struct unwind_cache *c)
{
	size_t n = 0;

	for (size_t i = 0; c && i < UNWIND_SPACES; i++)
		n += c->spaces[i].pid != 0;
	return n;
}

/* ---- rows: lookup and filling ---- */

static struct unwind_rules *rules_of(struct unwind_cache *c, struct unwind_entry *e,
				     uint64_t bias, bool create)
{
	struct unwind_rules *r;

	for (r = e->rules; r; r = r->next)
		if (r->bias == bias)
			return r;
	if (!create)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->bias = bias;
	r->next = e->rules;
	e->rules = r;
	c->rule_bytes += sizeof(*r);
	return r;
}

/* Index of the last function starting at or below @addr, or r->n when none. */
static size_t rules_pos(const struct unwind_rules *r, uint64_t addr)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->start[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : r->n;
}

static struct unwind_func *rules_find(const struct unwind_rules *r, uint64_t addr)
{
	size_t i = r ? rules_pos(r, addr) : 0;

	if (!r || i == r->n || addr >= r->v[i]->end)
		return NULL;
	return r->v[i];
}

/* Does @f overlap a function of @r? (Only junk CFI has overlapping FDEs.) */
static bool rules_overlap(const struct unwind_rules *r, const struct unwind_func *f)
{
	size_t i = r->n ? rules_pos(r, f->end - 1) : 0;

	return i != r->n && r->v[i]->end > f->start;
}

static int rules_insert(struct unwind_cache *c, struct unwind_rules *r, struct unwind_func *f)
{
	size_t i = r->n ? rules_pos(r, f->start) : 0;

	if (i == r->n)
		i = 0; /* all start above f */
	else
		i++;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct unwind_func **v = realloc(r->v, cap * sizeof(*v));
		uint64_t *start;

		if (!v)
			return -ENOMEM;
		r->v = v;
		start = realloc(r->start, cap * sizeof(*start));
		if (!start)
			return -ENOMEM;
		r->start = start;
		c->rule_bytes += (cap - r->cap) * (sizeof(*v) + sizeof(*start));
		r->cap = cap;
	}
	memmove(r->v + i + 1, r->v + i, (r->n - i) * sizeof(*r->v));
	memmove(r->start + i + 1, r->start + i, (r->n - i) * sizeof(*r->start));
	r->v[i] = f;
	r->start[i] = f->start;
	r->n++;
	c->rule_bytes += f->bytes;
	return 0;
}

static void rules_flush_all(struct unwind_cache *c)
{
	for (struct unwind_entry *e = c->head; e; e = e->next)
		rules_free(c, e);
}

static int fill_row(void *token, void *state, size_t size, unw_word_t start, unw_word_t end)
{
	struct unwind_cache *c = token;

	if (!c->state_size)
		c->state_size = (size + 7) & ~(size_t)7;
	if (!size || size > c->state_size || c->fill_n == UNWIND_FUNC_ROWS)
		goto bad;
	/* Rows tile the FDE from its start, in order. */
	if (end <= start || (c->fill_n && start != c->fill_end[c->fill_n - 1]))
		goto bad;
	if (c->fill_n == c->fill_cap) {
		size_t cap = c->fill_cap ? 2 * c->fill_cap : 32;
		uint64_t *ends = realloc(c->fill_end, cap * sizeof(*ends));
		uint8_t *states;

		if (!ends)
			goto bad;
		c->fill_end = ends;
		states = realloc(c->fill_states, cap * c->state_size);
		if (!states)
			goto bad;
		c->fill_states = states;
		c->fill_cap = cap;
	}
	memcpy(c->fill_states + c->fill_n * c->state_size, state, size);
	memset(c->fill_states + c->fill_n * c->state_size + size, 0, c->state_size - size);
	c->fill_end[c->fill_n++] = end;
	if (c->fill_n == 1)
		c->fill_start = start;
	return 0;
bad:
	c->fill_bad = true;
	return -UNW_EINVAL;
}

/*
 * The rows of the FDE holding @lookup, read through a scratch cursor whose
 * IP is @lookup itself (a fresh cursor looks its IP up as is), or NULL when
 * libunwind finds none (no FDE, bad CFI, out of memory).
 */
static struct unwind_func *rows_fill(struct unwind_state *st, uint64_t lookup)
{
	struct unwind_cache *c = st->c;
	struct unwind_func *f = NULL;
	unw_cursor_t scratch;
	size_t ends, bytes;
	bool signal;
	int ret;

	c->fill_n = 0;
	c->fill_bad = false;
	st->filling = true;
	st->fill_ip = lookup;
	ret = unw_init_remote(&scratch, c->as, st);
	if (ret >= 0)
		ret = unw_reg_states_iterate(&scratch, fill_row, c);
	/* Set from the FDE's CIE ('S') while looking it up. */
	signal = ret >= 0 && unw_is_signal_frame(&scratch) > 0;
	st->filling = false;
	if (ret < 0 || c->fill_bad || !c->fill_n || lookup < c->fill_start ||
	    lookup >= c->fill_end[c->fill_n - 1])
		return NULL;

	ends = c->fill_n * sizeof(uint64_t);
	bytes = sizeof(*f) + ends + c->fill_n * c->state_size;
	if (c->rule_bytes + bytes > UNWIND_RULES_MAX)
		rules_flush_all(c); /* rare: start over, on demand */
	f = malloc(bytes);
	if (!f)
		return NULL;
	f->start = c->fill_start;
	f->end = c->fill_end[c->fill_n - 1];
	f->signal = signal;
	f->nrows = (uint32_t)c->fill_n;
	f->row_end = (uint64_t *)(f + 1);
	f->states = (uint8_t *)f->row_end + ends;
	f->bytes = bytes;
	memcpy(f->row_end, c->fill_end, ends);
	memcpy(f->states, c->fill_states, c->fill_n * c->state_size);
	c->rule_fills++;
	return f;
}

/*
 * The register state that unwinds a frame at @ip (@exact: the leaf, or the
 * caller of a signal frame; else a return address, looked up at ip - 1),
 * filling its function's rows on a miss; NULL when there are none.
 */
static const void *frame_rows(struct unwind_state *st, uint64_t ip, bool exact, bool *signal)
{
	uint64_t lookup = exact ? ip : ip - 1;
	struct unwind_rules *r;
	struct unwind_func *f;
	struct unwind_bin *b;
	size_t lo = 0, hi;
	int err;

	b = state_bin(st, lookup, &err);
	if (!b || b->e->err)
		return NULL;
	r = rules_of(st->c, b->e, b->bias, false);
	f = rules_find(r, lookup);
	if (!f) {
		struct unwind_entry *e = b->e;
		uint64_t bias = b->bias;

		/* Filling may move bins and drop rows: b and r are stale after it. */
		f = rows_fill(st, lookup);
		if (!f)
			return NULL;
		r = rules_of(st->c, e, bias, true);
		if (!r || rules_overlap(r, f) || rules_insert(st->c, r, f) < 0) {
			/* Overlapping FDEs (junk CFI), or no memory: use it once. */
			free(st->once);
			st->once = f;
		}
	}
	/* The row holding lookup: the first whose end is above it. */
	hi = f->nrows - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->row_end[mid] <= lookup)
			lo = mid + 1;
		else
			hi = mid;
	}
	*signal = f->signal;
	return f->states + lo * st->c->state_size;
}

/* ---- libunwind callbacks ---- */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need_unwind_info, void *arg)
{
	struct unwind_state *st = arg;
	struct unwind_bin *b;
	unw_dyn_info_t di;
	int err;

	b = state_bin(st, ip, &err);
	if (!b)
		return err;
	if (b->e->err)
		return -UNW_ENOINFO;

	memset(&di, 0, sizeof(di));
	di.start_ip = b->start;
	di.end_ip = b->end;
	di.gp = 0;
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.u.rti.segbase = b->bias + b->e->hdr_vaddr;
	di.u.rti.table_data = b->bias + b->e->table_vaddr;
	/* In words: two int32 per entry. */
	di.u.rti.table_len = b->e->fde_count * 8 / sizeof(unw_word_t);
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	/* dwarf_search_unwind_table()'s info is libunwind's to free. */
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	return -UNW_ENOINFO; /* no JIT registration list in a sample */
}

/* An 8-byte word of the cached tables of a binary the process has met. */
static bool read_cached(struct unwind_state *st, uint64_t addr, uint64_t *val)
{
	struct unwind_space *sp = st->sp;

	for (size_t n = 0, i = sp->hint; n < sp->nbins; n++, i = i + 1 == sp->nbins ? 0 : i + 1) {
		const struct unwind_bin *b = &sp->bins[i];
		uint64_t vaddr = addr - b->bias;

		for (size_t k = 0; k < b->e->nreg; k++) {
			const struct unwind_region *r = &b->e->reg[k];

			if (vaddr >= r->vaddr && vaddr - r->vaddr < r->size &&
			    r->size - (vaddr - r->vaddr) >= 8) {
				memcpy(val, r->data + (vaddr - r->vaddr), 8);
				sp->hint = i;
				cache_touch(st->c, b->e);
				return true;
			}
		}
		for (size_t k = 0; k < b->e->nslots; k++) {
			if (b->e->slot_vaddr[k] == vaddr) {
				*val = b->e->slot_val[k];
				cache_touch(st->c, b->e);
				return true;
			}
		}
	}
	return false;
}

static bool map_same(const struct unwind_map *a, const struct unwind_map *b)
{
	if (a->start != b->start || a->end != b->end || a->pgoff != b->pgoff ||
	    a->dev != b->dev || a->ino != b->ino)
		return false;
	return a->dev || a->ino || (a->path == b->path || !strcmp(a->path, b->path));
}

/* Text and rodata straight from the mapped file, through a small window. */
static bool read_file(struct unwind_state *st, uint64_t addr, uint64_t *val)
{
	const struct unwind_map *m = st->s->find_map(st->s->ctx, addr);
	uint64_t ws;
	ssize_t n;

	if (!m || !m->path || addr < m->start || addr >= m->end || m->end - addr < 8)
		return false;
	if (!st->fmap.path || !map_same(m, &st->fmap)) {
		if (st->fd >= 0)
			close(st->fd);
		st->fmap = *m;
		st->win_len = 0;
		st->fd = rootfs_open_path(m->path, ROOTFS_ELF_MAX, NULL);
	}
	if (st->fd < 0)
		return false;
	if (addr < st->win_start || addr - st->win_start > st->win_len ||
	    st->win_len - (addr - st->win_start) < 8) {
		ws = addr & ~63ull;
		if (ws < m->start)
			ws = m->start;
		n = m->end - ws < UNWIND_WIN ? (size_t)(m->end - ws) : UNWIND_WIN;
		n = pread(st->fd, st->win, (size_t)n, (off_t)(ws - m->start + m->pgoff));
		if (n < 0) {
			st->win_len = 0;
			return false;
		}
		st->win_start = ws;
		st->win_len = (size_t)n;
		if (addr - ws > st->win_len || st->win_len - (addr - ws) < 8)
			return false;
	}
	memcpy(val, st->win + (addr - st->win_start), 8);
	return true;
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
			  void *arg)
{
	struct unwind_state *st = arg;
	uint64_t off = addr - st->stack_lo; /* wraps far out of range below SP */
	uint64_t val = 0;

	if (off < st->stack_size && !write) {
		/* Inside the copy, the common case: the whole word or nothing. */
		if (st->stack_size - off < 8) {
			*valp = 0;
			return -UNW_EINVAL;
		}
		memcpy(valp, st->stack + off, 8);
		return 0;
	}
	/* Above the copy, below where the copy could have gone on (8 MiB):
	 * the frame is real and was cut off, not junk. */
	if (addr >= st->stack_lo && off - st->stack_size < (8ull << 20))
		st->above_copy = true;
	*valp = 0;
	if (write)
		return -UNW_EINVAL;
	for (size_t i = 0; i < st->npopped; i++) {
		if (st->popped_addr[i] == addr) {
			*valp = st->popped_val[i];
			return 0;
		}
	}
	if (!read_cached(st, addr, &val) && !read_file(st, addr, &val))
		return -UNW_EINVAL;
	*valp = val;
	return 0;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t regnum, unw_word_t *valp, int write,
			  void *arg)
{
	struct unwind_state *st = arg;
	uint64_t val;

	if (write)
		return -UNW_EREADONLYREG;
	if (st->filling && regnum == UNW_X86_64_RIP) {
		*valp = st->fill_ip; /* the scratch cursor of rows_fill() */
		return 0;
	}
	if (regnum < 0 || (size_t)regnum >= sizeof(unwind_perf_reg) / sizeof(unwind_perf_reg[0]))
		return -UNW_EBADREG;
	if (sample_reg(st->s, unwind_perf_reg[regnum], &val) < 0)
		return -UNW_EBADREG;
	*valp = val;
	return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t regnum, unw_fpreg_t *fpvalp,
			    int write, void *arg)
{
	return -UNW_EINVAL;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	return -UNW_EINVAL;
}

static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *bufp, size_t buf_len,
			     unw_word_t *offp, void *arg)
{
	return -UNW_EINVAL; /* symbols are symtab's business */
}

static const unw_accessors_t unwind_accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = acc_get_proc_name,
};

struct unwind_cache *unwind_cache_new(size_t max_entries)
{
	unw_accessors_t acc = unwind_accessors; /* libunwind keeps a copy */
	struct unwind_cache *c;
	size_t nb = 16;

	if (!max_entries || max_entries > UNWIND_MAX_ENTRIES) {
		errno = EINVAL;
		return NULL;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOTSUP;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	while (nb < max_entries)
		nb <<= 1;
	c->buckets = calloc(nb, sizeof(*c->buckets));
	if (!c->buckets)
		goto err_free;
	c->nbuckets = nb;
	c->max = max_entries;
	c->gen = 1;
	c->shared.slot = -1;
	for (size_t i = 0; i < UNWIND_SPACES; i++)
		c->spaces[i].slot = (int)i;

	c->as = unw_create_addr_space(&acc, 0);
	if (!c->as) {
		errno = ENOMEM;
		goto err_free;
	}
	if (unw_set_caching_policy(c->as, UNW_CACHE_NONE) < 0) {
		unw_destroy_addr_space(c->as);
		errno = EINVAL;
		goto err_free;
	}
	return c;

err_free:
	free(c->buckets);
	free(c);
	return NULL;
}

void unwind_cache_free(struct unwind_cache *c)
{
	if (!c)
		return;
	while (c->head)
		cache_evict(c, c->head);
	if (c->as)
		unw_destroy_addr_space(c->as);
	free(c->fill_end);
	free(c->fill_states);
	free(c->buckets);
	free(c);
}

uint64_t unwind_cache_rule_fills(const struct unwind_cache *c)
{
	return c ? c->rule_fills : 0;
}

/* ---- the walk ---- */

/*
 * One step with cached rows: what unw_step() does after finding them
 * (dwarf_step's apply, then x86_64's end-of-stack check, RBP undefined).
 */
static int step_rows(unw_cursor_t *cur, const void *rows)
{
	unw_save_loc_t rbp;
	int ret = unw_apply_reg_state(cur, (void *)rows);

	if (ret > 0 && unw_get_save_loc(cur, UNW_X86_64_RBP, &rbp) == 0 &&
	    rbp.type == UNW_SLT_NONE)
		ret = 0;
	return ret;
}

/*
 * A leaf sampled in its epilogue (between the pops and the ret, or at a
 * tail call's jmp) has already popped some callee-saved registers: its CFI
 * still says "saved at CFA-N", but CFA-N now lies below SP, which the
 * kernel's stack copy does not hold, and the walk would stop one frame up
 * (the caller's CFA is RBP+16). The pop left the value in the register, so
 * the live register is the saved value. Only the leaf, only slots in the
 * red zone, and only when the leaf's next instruction is a pop, ret or jmp:
 * a leaf that saved a register in the red zone without popping it (hand
 * written code) keeps today's stop rather than get a wrong value.
 */
static bool at_epilogue(struct unwind_state *st, uint64_t ip)
{
	uint64_t word;
	uint8_t b[8];

	if (!read_cached(st, ip, &word) && !read_file(st, ip, &word))
		return false;
	memcpy(b, &word, sizeof(b));
	if (b[0] == 0xf3 || b[0] == 0x41) /* rep ret, pop r8-r15 */
		memmove(b, b + 1, sizeof(b) - 1);
	return b[0] == 0xc3 || b[0] == 0xc2 ||       /* ret */
	       b[0] == 0xe9 || b[0] == 0xeb ||       /* jmp rel32, rel8 */
	       (b[0] == 0xff && ((b[1] >> 3) & 7) == 4) || /* jmp r/m */
	       (b[0] >= 0x58 && b[0] <= 0x5f);       /* pop */
}

static void leaf_popped(struct unwind_state *st, unw_cursor_t *cur, uint64_t ip, uint64_t sp)
{
	static const unw_regnum_t saved[UNWIND_POPPED] = {
		UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
		UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15,
	};
	bool checked = false;

	for (size_t i = 0; i < UNWIND_POPPED; i++) {
		unw_save_loc_t loc;
		uint64_t val;

		if (unw_get_save_loc(cur, saved[i], &loc) < 0 || loc.type != UNW_SLT_MEMORY ||
		    loc.u.addr >= sp || sp - loc.u.addr > UNWIND_RED_ZONE)
			continue;
		if (!checked && !at_epilogue(st, ip))
			return;
		checked = true;
		if (sample_reg(st->s, unwind_perf_reg[saved[i]], &val) < 0)
			continue;
		st->popped_addr[st->npopped] = loc.u.addr;
		st->popped_val[st->npopped++] = val;
	}
}

/*
 * The walk reads words scattered up the stack copy, which the kernel has
 * just written (often from another CPU): keep the lines up to @upto bytes
 * into it on their way, UNWIND_PREFETCH ahead of the frame being unwound,
 * rather than miss on them one frame at a time.
 */
static void stack_prefetch(struct unwind_state *st, uint64_t upto)
{
	if (upto > st->stack_size)
		upto = st->stack_size;
	for (; st->prefetched < upto; st->prefetched += 64)
		__builtin_prefetch(st->stack + st->prefetched);
}

int unwind_dwarf(struct unwind_cache *c, const struct unwind_sample *s, uint64_t *ips, size_t max)
{
	struct unwind_state st = { .c = c, .s = s, .fd = -1 };
	enum unwind_end end = UNWIND_END_BROKEN;
	uint64_t ip, sp, prev_sp;
	bool exact = true; /* the leaf's IP is where it is */
	unw_cursor_t cur;
	size_t n = 0;

	if (!c || !s || !s->regs || !s->find_map || (!s->stack && s->stack_size) || (!ips && max))
		return -EINVAL;
	if (sample_reg(s, PERF_REG_X86_IP, &ip) < 0)
		return -EINVAL;
	if (s->end)
		*s->end = max ? UNWIND_END_BROKEN : UNWIND_END_MAX;
	if (!max)
		return 0;
	if (max > INT_MAX)
		max = INT_MAX;
	ips[n++] = ip;
	if (sample_reg(s, PERF_REG_X86_SP, &sp) < 0 || !ip)
		return 1;
	st.stack_lo = sp;
	st.stack = s->stack;
	st.stack_size = s->stack_size;
	st.sp = s->pid ? space_get(c, s->pid) : &c->shared;
	prev_sp = sp;
	stack_prefetch(&st, UNWIND_PREFETCH);

	if (unw_init_remote(&cur, c->as, &st) < 0)
		goto out;
	while (n < max) {
		bool signal = false;
		const void *rows = frame_rows(&st, ip, exact, &signal);
		unw_word_t nip, nsp;
		int ret;

		/*
		 * No rows: libunwind's own step, heuristics and all. (Its own
		 * FDE lookup takes the IP as is, since our steps never tell the
		 * cursor about ip - 1; that differs from ours only when a call
		 * without CFI is followed by a function with some.)
		 */
		st.above_copy = false;
		ret = rows ? step_rows(&cur, rows) : unw_step(&cur);
		if (ret == 0)
			end = UNWIND_END_COMPLETE;
		if (ret <= 0)
			break;
		if (n == 1)
			leaf_popped(&st, &cur, ip, sp);
		if (unw_get_reg(&cur, UNW_REG_IP, &nip) < 0 ||
		    unw_get_reg(&cur, UNW_REG_SP, &nsp) < 0)
			break;
		if (!nip) {
			end = UNWIND_END_COMPLETE;
			break;
		}
		/* A caller's frame sits above its callee's: anything else is a loop or junk. */
		if (nsp <= prev_sp)
			break;
		ips[n++] = nip;
		ip = nip;
		prev_sp = nsp;
		stack_prefetch(&st, nsp - sp + UNWIND_PREFETCH);
		exact = signal;
	}
	if (n == max)
		end = UNWIND_END_MAX;
	else if (end == UNWIND_END_BROKEN && (st.above_copy || prev_sp - sp >= st.stack_size))
		end = UNWIND_END_STACK_COPY;
out:
	if (st.fd >= 0)
		close(st.fd);
	free(st.once);
	/* The pid-less space's bins last one call: their entries are unpinned now. */
	space_clear(&c->shared);
	c->gen++; /* unpin this call's entries */
	cache_trim(c);
	if (s->end)
		*s->end = end;
	return (int)n;
}
