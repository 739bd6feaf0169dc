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
 *
 * Files. This one holds the walk and the libunwind callbacks;
 * unwind_cache.c the entries, bins and rows; unwind_tables.c the reading of
 * one binary's tables; unwind_priv.h what the three share.
 */
#include "agent/stacks/unwind_priv.h"
#include "agent/symbols/dso.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gelf.h>
#include <libelf.h>

#include "lib/rootfs.h"

/* Exported by libunwind-x86_64 but not declared by its headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

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

/* ---- libunwind callbacks ---- */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need_unwind_info, void *arg)
{
	struct unwind_state *st = arg;
	struct unwind_bin *b;
	unw_dyn_info_t di;
	int err;

	b = unwind_state_bin(st, ip, &err);
	if (!b)
		return err;
	if (b->e->err)
		return -UNW_ENOINFO;

	memset(&di, 0, sizeof(di));
	di.start_ip = b->start;
	di.end_ip = b->end;
	di.gp = 0;
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.u.rti.segbase = b->bias + b->e->t->hdr_vaddr;
	di.u.rti.table_data = b->bias + b->e->t->table_vaddr;
	/* In words: two int32 per entry. */
	di.u.rti.table_len = b->e->t->fde_count * 8 / sizeof(unw_word_t);
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

		for (size_t k = 0; k < b->e->t->nreg; k++) {
			const struct unwind_region *r = &b->e->t->reg[k];

			if (vaddr >= r->vaddr && vaddr - r->vaddr < r->size &&
			    r->size - (vaddr - r->vaddr) >= 8) {
				memcpy(val, r->data + (vaddr - r->vaddr), 8);
				sp->hint = i;
				unwind_cache_touch(st->c, b->e);
				return true;
			}
		}
		for (size_t k = 0; k < b->e->t->nslots; k++) {
			if (b->e->t->slot_vaddr[k] == vaddr) {
				*val = b->e->t->slot_val[k];
				unwind_cache_touch(st->c, b->e);
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

/* The fd of the dso this process's bins already hold for @m's file (any
 * of its mappings, rodata too), or -1: borrowed, not to be closed. */
static int bin_fd(const struct unwind_state *st, const struct unwind_map *m)
{
	const struct unwind_space *sp = st->sp;

	if (!m->dev && !m->ino)
		return -1;
	for (size_t i = 0; i < sp->nbins; i++) {
		const struct unwind_entry *e = sp->bins[i].e;

		if (e->dso && e->dev == m->dev && e->ino == m->ino)
			return dso_fd(e->dso);
	}
	return -1;
}

/* Text and rodata straight from the mapped file, through a small window:
 * the dso's fd when the process's bins have the file (the common case, no
 * open per sample), else the file opened inside the process's root. */
static bool read_file(struct unwind_state *st, uint64_t addr, uint64_t *val)
{
	const struct unwind_map *m = st->s->find_map(st->s->ctx, addr);
	uint64_t ws;
	ssize_t n;

	if (!m || !m->path || addr < m->start || addr >= m->end || m->end - addr < 8)
		return false;
	if (!st->fmap.path || !map_same(m, &st->fmap)) {
		if (st->fd_owned && st->fd >= 0)
			close(st->fd);
		st->fmap = *m;
		st->win_len = 0;
		st->fd = bin_fd(st, m);
		st->fd_owned = st->fd < 0;
		if (st->fd_owned)
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
		unwind_cache_evict(c, c->head);
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
	st.sp = s->pid ? unwind_space_get(c, s->pid) : &c->shared;
	prev_sp = sp;
	stack_prefetch(&st, UNWIND_PREFETCH);

	if (unw_init_remote(&cur, c->as, &st) < 0)
		goto out;
	while (n < max) {
		bool signal = false;
		const void *rows = unwind_frame_rows(&st, ip, exact, &signal);
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
	if (st.fd_owned && st.fd >= 0)
		close(st.fd);
	free(st.once);
	/* The pid-less space's bins last one call: their entries are unpinned now. */
	unwind_space_clear(&c->shared);
	c->gen++; /* unpin this call's entries */
	unwind_cache_trim(c);
	if (s->end)
		*s->end = end;
	return (int)n;
}
