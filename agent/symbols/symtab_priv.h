/* SPDX-License-Identifier: MIT */
/*
 * Inside struct symtab: shared by the files that build one (symtab.c: ELF
 * symbols and lookups; symtab_debuginfo.c: what a file offers and finding
 * separate debuginfo; symtab_dwarf.c: inlined frames from DWARF and
 * its cache). Not for use outside agent/symbols/symtab*.c.
 */
#ifndef CGPERF_AGENT_SYMTAB_PRIV_H
#define CGPERF_AGENT_SYMTAB_PRIV_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "agent/symbols/dso.h"
#include "agent/symbols/elfobj.h"
#include "agent/symbols/symtab.h"

#define SYMTAB_MAX_SYMS (4u << 20)  /* symbols kept per object */
#define SYMTAB_MAX_NAME 1024	    /* longer names (templates) are cut */
#define SYMTAB_MAX_BUILD_ID ELFOBJ_MAX_BUILD_ID
#define SYMTAB_OVERLAP_SCAN 16	    /* symbols searched back for nesting */

struct symtab_sym {
	uint64_t addr;
	uint32_t size;
	uint32_t name; /* offset into names */
};

/* A function's extent [start, end) as its .eh_frame FDE gives it. */
struct symtab_fde {
	uint64_t start, end;
};

/* One compile unit's outermost scopes (see cu_index_get()). */
struct cu_span {
	uint64_t lo, hi;
	uint64_t die; /* DIE offset: the first in DIE order wins */
	int level;    /* recursion level it was found at */
};

struct cu_index {
	uint64_t cu; /* CU DIE offset */
	struct cu_span *v; /* by lo */
	uint64_t *maxhi;   /* max hi of v[0..i] */
	size_t n;
	bool failed;
};

struct symtab {
	struct symtab_sym *syms;
	size_t nsyms;
	char *names;
	/* the binary: segments (offset <-> address), its fd for DWARF in the
	 * file itself; a reference when owns_dso, else the symtab is its member */
	struct dso *dso;
	bool owns_dso;
	const char *source;
	char build_id[2 * SYMTAB_MAX_BUILD_ID + 1];
	/* the file holding DWARF, opened once on first use: the dso's own fd
	 * (borrowed) when the binary has DWARF itself, else dwarf_path */
	bool dwarf_in_dso;
	char *dwarf_path;
	int dwarf_fd;
	bool dwarf_failed; /* the file or libdw failed once: not retried */
	/* libdw over that file, every section (line tables too), begun once:
	 * srcline's (symtab_dwarf_lines()) and the inlined frames' unless the
	 * cache serves those */
	Dwarf *dwarf_full;
	/* what symtab_inlines() reads: dwarf_full, or the cache's copy */
	Dwarf *dwarf;
	/* when DWARF comes from the cache's decompressed copy */
	Elf *dwarf_elf;
	int dwarf_cache_fd;
	bool dwarf_cached;
	/* per compile unit, the address ranges of its outermost scopes */
	struct cu_index *cus;
	size_t ncus, capcus;
	/* function extents from .eh_frame FDEs: for code no symbol covers */
	struct symtab_fde *fdes; /* by start */
	size_t nfde;
};

/* What an ELF file offers symbols (symtab_elf_scan()). */
struct elf_info {
	Elf_Scn *symtab, *dynsym;
	bool has_dwarf;
	bool has_link;
	char link[NAME_MAX + 1]; /* .gnu_debuglink file name */
	uint32_t link_crc;
};

/* What a separate debuginfo file must match. */
struct debug_want {
	const struct stat *main_st; /* the file itself: a debuglink naming it is no debuginfo */
	const GElf_Ehdr *main_eh;
	const uint8_t *build_id;
	size_t build_id_len;
	const struct elf_info *info;
};


/* The symbol tables, DWARF presence and .gnu_debuglink of @elf. */
void symtab_elf_scan(Elf *elf, struct elf_info *info);
/*
 * Find separate debuginfo for @path under @debug_root: by build-id, then by
 * debuglink. On success @out is open (the caller closes it), @info describes
 * it and @found holds its path; -ENOENT otherwise.
 */
int symtab_debug_find(struct elfobj *out, struct elf_info *info, char *found, size_t size,
		      const char *path, const char *debug_root, const struct debug_want *w);
/* Free what symtab_dwarf.c attached to @s (DWARF handles, CU indexes). */
void symtab_dwarf_release(struct symtab *s);

#endif
