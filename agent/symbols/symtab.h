/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_SYMTAB_H
#define CGPERF_AGENT_SYMTAB_H

/*
 * Symbols of one ELF object (executable or shared library), looked up by
 * FILE OFFSET, which is what a sample's address minus its mapping's start
 * plus the mapping's pgoff gives: independent of where the object is
 * loaded and of ASLR, so one symtab serves every process mapping the file.
 *
 * Sources, best first: .symtab of the file; .symtab of separate debuginfo
 * found by build-id (/usr/lib/debug/.build-id/xx/yyyy.debug) or
 * .gnu_debuglink (next to the file, its .debug/ dir, /usr/lib/debug/PATH);
 * .dynsym. Debuginfo with DWARF also yields inlined frames.
 *
 * A symtab costs 16 bytes per symbol plus the names; libelf's handle is
 * dropped when it is built (the binary stays open in its dso). Lookups are read-only and may run
 * concurrently; symtab_inlines() and symtab_dwarf_lines() are not (they
 * open DWARF on first use).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symtab;
struct dso;
struct Dwarf;

/*
 * Open @path (may be a /proc/PID/root/... path into another mount
 * namespace, then resolved inside that root, as the debuginfo paths under
 * it are: lib/rootfs.h). @debug_root is where /usr/lib/debug is looked
 * up, normally "" (host) or "/proc/PID/root" (the container's). NULL +
 * errno on failure (ENOENT, ENOEXEC for a non-ELF or non-regular file,
 * EFBIG over ROOTFS_ELF_MAX, the other refusals of lib/rootfs.h).
 */
struct symtab *symtab_open(const char *path, const char *debug_root);
void symtab_free(struct symtab *s);

/*
 * The same from an open binary (agent/symbols/dso.h), read through its fd:
 * nothing of the binary is opened again. symtab_new(): the caller owns the
 * result (symtab_free). dso_symtab(): the dso's member, built on the first
 * call (with that call's @debug_root) and owned by @d, freed with it; NULL
 * + errno as symtab_open().
 */
struct symtab *symtab_new(struct dso *d, const char *debug_root);
struct symtab *dso_symtab(struct dso *d, const char *debug_root);

/*
 * Name of the function containing file offset @off. Returns 0 and sets
 * @name (owned by @s, valid until symtab_free) and @sym_off (offset of
 * @off into the function); -ENOENT when no symbol covers it.
 */
int symtab_lookup(const struct symtab *s, uint64_t off, const char **name, uint64_t *sym_off);

/*
 * Inlined frames at @off, innermost first, from DWARF debuginfo, not
 * including the containing function itself. Fills up to @max names (owned
 * by @s) and returns how many (0 without DWARF).
 * The DWARF file is opened (by path) on the first call and kept until
 * symtab_free(); each call walks one compile unit, so callers should cache
 * results per offset. Compressed debuginfo is inflated once into the
 * symbolization cache (keyed by build-id) and mapped from there.
 */
size_t symtab_inlines(struct symtab *s, uint64_t off, const char **names, size_t max);

/*
 * Open the file that holds DWARF now (keeping one fd), so symtab_inlines()
 * still works after the path has become unreachable, e.g. a container
 * process that exited. Cheap: the DWARF itself is read on first use.
 * 0 (also when there is no DWARF) or -errno.
 */
int symtab_hold_dwarf(struct symtab *s);

/*
 * True once symtab_inlines() reads DWARF from the symbolization cache's
 * inflated copy (see agent/symbols/symcache.h and symtab_dwarf.c) rather than from the
 * compressed debuginfo file itself. The names are the same either way.
 */
bool symtab_dwarf_cached(const struct symtab *s);

/*
 * For code no symbol covers: the file offset where its function starts,
 * from the .eh_frame FDE containing @off. 0, or -ENOENT when no FDE does.
 */
int symtab_func_start(const struct symtab *s, uint64_t off, uint64_t *start_off);
/* The same with the FDE's length in *@size (may be NULL): the extent of
 * the unnamed function containing @off. */
int symtab_func_extent(const struct symtab *s, uint64_t off, uint64_t *start_off, uint64_t *size);

/* GNU build-id as lowercase hex ("" when the file has none). */
const char *symtab_build_id(const struct symtab *s);
/* Number of symbols loaded; where they came from ("symtab", "debuginfo",
 * "dynsym", or "none" when the file has no function symbols). */
size_t symtab_count(const struct symtab *s);
const char *symtab_source(const struct symtab *s);

/*
 * File offset of the function named @name (exact match, no demangling).
 * Where one address has several names only the one symtab kept is known
 * (see symtab.c: malloc, not __libc_malloc); where several local
 * functions share a name, the lowest address wins. 0, -ENOENT when no
 * kept symbol has that name or its address has no file bytes.
 */
int symtab_find(const struct symtab *s, const char *name, uint64_t *off);
/* The same with the symbol's size in bytes in *@size (may be NULL): as
 * kept, so a symbol without one reaches to the next symbol or its
 * section's end. */
int symtab_find_sized(const struct symtab *s, const char *name, uint64_t *off, uint64_t *size);

/*
 * libdw's handle on @s's DWARF with every section, line tables included,
 * for readers of source lines (agent/symbols/srcline.h): owned by @s and
 * valid until symtab_free(). It reads the file symtab_inlines() reads,
 * opened once for both (the binary's own fd, or its separate debuginfo
 * opened by the rules of lib/rootfs.h inside the container's root), and is
 * the very handle symtab_inlines() uses unless that one is the cache's
 * inflated copy, which leaves .debug_line out. Begun on the first call;
 * NULL when there is no DWARF or it cannot be read (remembered). Not for
 * concurrent use, as symtab_inlines().
 */
struct Dwarf *symtab_dwarf_lines(struct symtab *s);

/*
 * Symbol @i (0 <= i < symtab_count(), in address order) for listings and
 * near-match suggestions: its name (owned by @s), and in @off (may be
 * NULL) its file offset, or UINT64_MAX when its address maps to no file
 * bytes. NULL when @i is out of range.
 */
const char *symtab_name_at(const struct symtab *s, size_t i, uint64_t *off);

/*
 * Convert a file offset to the ELF virtual address (via PT_LOAD program
 * headers) and back; used by the unwinder and for probes. 0 or -ENOENT.
 */
int symtab_off_to_vaddr(const struct symtab *s, uint64_t off, uint64_t *vaddr);
int symtab_vaddr_to_off(const struct symtab *s, uint64_t vaddr, uint64_t *off);

#endif
