/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_DSO_H
#define CGPERF_AGENT_DSO_H

/*
 * One object per binary, as perf's dso: every reader of a binary (the
 * stacks engine's object registry, the symbolizer, the DWARF unwinder,
 * USDT notes, the probe resolver) asks for it here and shares what was
 * read. A dso is opened once, through agent/symbols/elfobj.h (so through
 * lib/rootfs.h: in-root resolution of /proc/PID/root paths, regular files
 * only, FIFOs/devices/pseudo files/magic links refused, ROOTFS_ELF_MAX,
 * files on FUSE read by the slowopen helper within its time limit), and
 * keeps:
 *   - its fd (a process that exited still resolves: nothing is reopened
 *     by path), and the file's stat;
 *   - the ELF header, the PT_LOAD segments with file bytes, the GNU
 *     build-id;
 *   - .eh_frame_hdr parsed once (the one parser: where .eh_frame is, where
 *     the sorted search table is and how many entries it has);
 *   - members built on first use and kept with it (dso_member()): the
 *     symbol table (agent/symbols/symtab.h's dso_symtab()) and the
 *     unwinder's .eh_frame regions (agent/stacks/unwind_tables.c).
 *
 * The libelf handle of the scan goes to the first reader that needs
 * sections (dso_elf_begin()); later readers open their own on the fd.
 *
 * Interned and refcounted: dso_open() of a binary already open returns
 * the same object with one more reference, found by its key, the
 * (dev, ino) the caller gives (from /proc/PID/maps, which for overlayfs
 * names the underlying inode) or, when it gives none, the (dev, ino) of
 * the file opened. dso_put() drops a reference; the last one frees it.
 * A binary reached by two keys (an overlayfs file by its maps identity
 * and by its path) may be two dsos: correct, merely not shared.
 *
 * Thread-safe: one mutex over the table and the counts, one per dso over
 * its members (a member is built under it, once, by the first caller).
 * Library module: does not print.
 */

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "agent/symbols/elfobj.h"

/* DWARF pointer encodings (.eh_frame_hdr, .eh_frame; LSB "Exception Frames"). */
#define EH_PE_absptr 0x00
#define EH_PE_uleb128 0x01
#define EH_PE_udata2 0x02
#define EH_PE_udata4 0x03
#define EH_PE_udata8 0x04
#define EH_PE_sleb128 0x09
#define EH_PE_sdata2 0x0a
#define EH_PE_sdata4 0x0b
#define EH_PE_sdata8 0x0c
#define EH_PE_pcrel 0x10
#define EH_PE_datarel 0x30
#define EH_PE_aligned 0x50
#define EH_PE_indirect 0x80
#define EH_PE_omit 0xff

/*
 * The value formats of fixed size (the low four bits of an encoding): the
 * byte count of @enc's value, 2, 4 or 8, or 0 for the LEB128 forms and
 * unknown ones; and @v, read as that many little-endian bytes, sign-extended
 * to 64 bits when @enc's format is a signed one.
 */
size_t dso_eh_pe_size(uint8_t enc);
uint64_t dso_eh_pe_extend(uint8_t enc, uint64_t v);

#define DSO_HDR_MAX (64u << 20)	 /* .eh_frame_hdr bytes accepted */
#define DSO_MAX_SECTIONS 65536	 /* sections scanned for .eh_frame(_hdr) */
#define DSO_MEMBERS 4		 /* member slots per dso */

struct dso;

/* .eh_frame_hdr as parsed: link-time addresses. */
struct dso_eh {
	uint64_t hdr_vaddr, hdr_size; /* hdr_size clipped to its segment's file bytes */
	uint64_t eh_vaddr, eh_size;   /* .eh_frame; eh_size 0: unknown (no section header) */
	uint64_t table_vaddr;	      /* the sorted table: fde_count (datarel sdata4) pairs */
	uint64_t fde_count;
};

/*
 * The dso of the file at @path (a /proc/PID/root/... path is resolved
 * inside that root). @dev, @ino: the caller's identity of the file (from
 * its mapping), 0, 0 when it has none. Interned: the same binary gives the
 * same dso, with one more reference. NULL + errno as elfobj_open() fails
 * (ENOENT, ENOEXEC, EFBIG, ...); a failure is not remembered.
 */
struct dso *dso_open(const char *path, uint64_t dev, uint64_t ino);
/*
 * The same, but a file newly opened must be that very inode: ESTALE when
 * the file at @path has another (dev, ino) than @dev, @ino (for reading a
 * host path in place of a container's, only when it is the mapped file).
 */
struct dso *dso_open_exact(const char *path, uint64_t dev, uint64_t ino);
/* One more reference to @d (NULL passes through). */
struct dso *dso_get(struct dso *d);
/* Drop a reference; the last one frees the dso, its members and its fd. */
void dso_put(struct dso *d);

/* The path it was opened by (owned by @d). */
const char *dso_path(const struct dso *d);
/* Its fd (read-only, regular file; owned by @d: do not close) and stat. */
int dso_fd(const struct dso *d);
const struct stat *dso_stat(const struct dso *d);
const GElf_Ehdr *dso_ehdr(const struct dso *d);
/* PT_LOAD segments with file bytes, program header order; @cut (may be
 * NULL): more than ELFOBJ_MAX_LOADS, or unreadable program headers. */
const struct elfobj_load *dso_loads(const struct dso *d, size_t *n, bool *cut);
/* Build-id bytes (length, 0 for none) and as lowercase hex ("" for none). */
size_t dso_build_id(const struct dso *d, const uint8_t **id);
const char *dso_build_id_hex(const struct dso *d);
/*
 * The parsed .eh_frame_hdr: 0 and *@out, or why there is none: -ENOENT
 * (no .eh_frame_hdr, or outside the file's segments), -ENOTSUP (an
 * encoding other than version 1 with a datarel|sdata4 table), -EINVAL
 * (truncated, no entries), -EIO.
 */
int dso_eh_frame(const struct dso *d, const struct dso_eh **out);
/* The segment whose file bytes hold link-time address @vaddr, or NULL. */
const struct elfobj_load *dso_load_at(const struct dso *d, uint64_t vaddr);
/* File offset <-> link-time address through the PT_LOAD segments. 0 or -ENOENT. */
int dso_off_to_vaddr(const struct dso *d, uint64_t off, uint64_t *vaddr);
int dso_vaddr_to_off(const struct dso *d, uint64_t vaddr, uint64_t *off);
/* Exactly @len bytes at file offset @off: 0, -ENODATA past the end, -errno. */
int dso_pread(const struct dso *d, void *buf, size_t len, uint64_t off);
/* A libelf handle on the fd (ELF_C_READ_MMAP) for reading sections; the
 * caller elf_end()s it. The first call gets the handle the open parsed
 * (no second mapping); later ones a new one. NULL on failure. */
Elf *dso_elf_begin(struct dso *d);

/*
 * Members: what a reader builds from a dso and keeps with it. @ops names
 * the member (its address is the key): build(d, arg, &p) returns 0 and the
 * member, or -errno (remembered: not tried again); free(p) at the end.
 * The first caller builds it, under the dso's lock; the others wait and
 * get the same. The member lives as long as the dso. 0 and *@out, or the
 * build's error; -ENOSPC when DSO_MEMBERS kinds are there already.
 */
struct dso_member_ops {
	int (*build)(struct dso *d, void *arg, void **out);
	void (*free)(void *p);
};
int dso_member(struct dso *d, const struct dso_member_ops *ops, void *arg, void **out);

/* For tests and self-metrics: files opened by dso_open() since start
 * (successful opens, a reuse not counted) and dsos alive now. */
uint64_t dso_opens(void);
size_t dso_live(void);

#endif
