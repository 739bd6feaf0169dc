// SPDX-License-Identifier: MIT
/*
 * Inlined frames from DWARF, for symtab_inlines(): the DWARF file found by
 * symtab_open() is opened on first use, its compressed sections inflated
 * once into the symbolization cache, and each compile unit indexed by the
 * address ranges of its outermost scopes so one lookup walks one subtree.
 */
#include "agent/symbols/symtab_priv.h"

#include <dwarf.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zlib.h>

#include "lib/rootfs.h"
#include "lib/search.h"
#include "agent/symbols/symcache.h"
#include "lib/grow.h"

/*
 * Decompressed DWARF, cached. Distributions compress debuginfo sections
 * (SHF_COMPRESSED, zlib) and libdw inflates every one of them in
 * dwarf_begin(): ~10 MB and ~40 ms for libc, paid by every run that wants
 * one inlined frame of it. The first such run writes the sections inlined
 * frames need, inflated, to an ELF file of their own in the symbolization
 * cache, keyed by build-id (content-addressed: it never goes stale); later
 * runs map that instead, and libdw only reads the pages it touches.
 * .debug_line, .debug_loc(lists), .debug_frame and macros are left out:
 * naming inlined frames does not read them.
 */
#define DWARF_CACHE_PREFIX "dwarf-"
#define DWARF_CACHE_MAX_BYTES (512ull << 20) /* all dwarf-* entries together */

static bool dwarf_section_wanted(const char *name)
{
	static const char *const skip[] = {
		".debug_line", ".debug_loc", ".debug_loclists", ".debug_frame",
		".debug_macro", ".debug_macinfo",
	};

	if (strncmp(name, ".debug_", 7) != 0)
		return false;
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (!strcmp(name, skip[i]))
			return false;
	return true;
}

static bool elf_native(Elf *elf)
{
	const char *id = elf_getident(elf, NULL);
	const uint16_t one = 1;

	return id && id[EI_DATA] == (*(const uint8_t *)&one ? ELFDATA2LSB : ELFDATA2MSB);
}

/* Append @name to the section-name table being built; its offset or -1. */
static long shstr_add(char **tab, size_t *len, const char *name)
{
	size_t n = strlen(name) + 1;
	char *t = realloc(*tab, *len + n);
	long off = (long)*len;

	if (!t)
		return -1;
	memcpy(t + *len, name, n);
	*tab = t;
	*len += n;
	return off;
}

/*
 * Write the wanted debug sections of @src, inflated, plus its notes (the
 * build-id), as a new ELF to @fd. -ENOENT when @src has no compressed
 * debug section (libdw reads it cheaply as it is), else 0 or -errno.
 */
static int dwarf_write_inflated(Elf *src, int fd)
{
	char *shstr = NULL;
	size_t shstr_len = 0, shstrndx, copied = 0;
	bool compressed = false;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh, neh;
	Elf *dst = NULL;
	long off;
	int err = -ENOENT;

	if (!gelf_getehdr(src, &eh) || eh.e_type == ET_REL || !elf_native(src) ||
	    elf_getshdrstrndx(src, &shstrndx) != 0)
		return -ENOENT;
	while ((scn = elf_nextscn(src, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (sh.sh_flags & SHF_COMPRESSED) &&
		    (name = elf_strptr(src, shstrndx, sh.sh_name)) && dwarf_section_wanted(name))
			compressed = true;
	}
	if (!compressed)
		return -ENOENT;

	err = -EIO;
	dst = elf_begin(fd, ELF_C_WRITE, NULL);
	if (!dst || !gelf_newehdr(dst, gelf_getclass(src)) || !gelf_getehdr(dst, &neh))
		goto out;
	memcpy(neh.e_ident, eh.e_ident, EI_NIDENT);
	neh.e_type = eh.e_type;
	neh.e_machine = eh.e_machine;
	neh.e_version = eh.e_version;
	neh.e_flags = eh.e_flags;
	if (shstr_add(&shstr, &shstr_len, "") < 0)
		goto out;
	scn = NULL;
	while ((scn = elf_nextscn(src, scn))) {
		GElf_Shdr sh, nsh;
		const char *name;
		Elf_Scn *nscn;
		Elf_Data *d, *nd;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(src, shstrndx, sh.sh_name)))
			continue;
		if (!dwarf_section_wanted(name) && sh.sh_type != SHT_NOTE)
			continue;
		/* in memory only: libelf inflates into a buffer of its own */
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			goto out;
		d = sh.sh_type == SHT_NOTE ? elf_rawdata(scn, NULL) : elf_getdata(scn, NULL);
		if (!d || (d->d_size && !d->d_buf))
			goto out;
		nscn = elf_newscn(dst);
		nd = nscn ? elf_newdata(nscn) : NULL;
		off = shstr_add(&shstr, &shstr_len, name);
		if (!nd || off < 0 || !gelf_getshdr(nscn, &nsh))
			goto out;
		nd->d_buf = d->d_buf;
		nd->d_size = d->d_size;
		nd->d_type = ELF_T_BYTE;
		nd->d_align = sh.sh_addralign ? sh.sh_addralign : 1;
		nsh.sh_name = (GElf_Word)off;
		nsh.sh_type = sh.sh_type;
		nsh.sh_flags = sh.sh_flags & ~(GElf_Xword)SHF_COMPRESSED;
		nsh.sh_addralign = nd->d_align;
		nsh.sh_entsize = sh.sh_entsize;
		nsh.sh_addr = sh.sh_addr;
		if (!gelf_update_shdr(nscn, &nsh))
			goto out;
		copied++;
	}
	{
		Elf_Scn *sscn = elf_newscn(dst);
		Elf_Data *sd = sscn ? elf_newdata(sscn) : NULL;
		GElf_Shdr ssh;

		off = shstr_add(&shstr, &shstr_len, ".shstrtab");
		if (!sd || off < 0 || !gelf_getshdr(sscn, &ssh))
			goto out;
		sd->d_buf = shstr;
		sd->d_size = shstr_len;
		sd->d_type = ELF_T_BYTE;
		sd->d_align = 1;
		ssh.sh_name = (GElf_Word)off;
		ssh.sh_type = SHT_STRTAB;
		ssh.sh_addralign = 1;
		if (!gelf_update_shdr(sscn, &ssh))
			goto out;
		neh.e_shstrndx = (GElf_Half)elf_ndxscn(sscn);
	}
	if (copied == 0 || !gelf_update_ehdr(dst, &neh) || elf_update(dst, ELF_C_WRITE) < 0)
		goto out;
	err = 0;
out:
	if (dst)
		elf_end(dst);
	free(shstr);
	return err;
}

/* The build-id of @elf is @want (lowercase hex)? */
static bool elf_build_id_is(Elf *elf, const char *want)
{
	uint8_t bid[SYMTAB_MAX_BUILD_ID];
	char hex[2 * SYMTAB_MAX_BUILD_ID + 1];
	size_t n = elfobj_build_id(elf, bid);

	elfobj_hex(bid, n, hex);
	return n > 0 && !strcmp(hex, want);
}

/* Open the cached copy of @s's DWARF: 0, or -ENOENT when there is none. */
static int dwarf_cache_open(struct symtab *s, const char *dir, const char *name)
{
	int fd = symcache_open(dir, name);
	Elf *elf;

	if (fd < 0)
		return -ENOENT;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !elf_build_id_is(elf, s->build_id) ||
	    !(s->dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL))) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOENT;
	}
	(void)futimens(fd, NULL); /* recently used: trimmed last */
	s->dwarf_elf = elf;
	s->dwarf_cache_fd = fd;
	s->dwarf_cached = true;
	return 0;
}

/*
 * DWARF of @s through the cache: a hit, or on a miss an inflated copy
 * written from the open s->dwarf_fd and then used. -ENOENT when the cache
 * cannot serve (off, no build-id, nothing compressed, a write failed).
 */
static int dwarf_from_cache(struct symtab *s)
{
	char name[sizeof(DWARF_CACHE_PREFIX) + sizeof(s->build_id)], tmp[PATH_MAX];
	const char *dir;
	Elf *src;
	int fd, err;

	if (!s->build_id[0] || !(dir = symcache_dir()))
		return -ENOENT;
	snprintf(name, sizeof(name), DWARF_CACHE_PREFIX "%s", s->build_id);
	if (dwarf_cache_open(s, dir, name) == 0)
		return 0;
	src = elf_begin(s->dwarf_fd, ELF_C_READ_MMAP, NULL);
	if (!src)
		return -ENOENT;
	/* the file must be what symtab_open() matched: same build-id */
	if (elf_kind(src) != ELF_K_ELF || !elf_build_id_is(src, s->build_id)) {
		elf_end(src);
		return -ENOENT;
	}
	fd = symcache_create(dir, name, tmp, sizeof(tmp));
	if (fd < 0) {
		elf_end(src);
		return -ENOENT;
	}
	err = dwarf_write_inflated(src, fd);
	elf_end(src);
	if (err < 0) {
		symcache_abort(fd, tmp);
		return -ENOENT;
	}
	if (symcache_commit(fd, tmp, dir, name) < 0)
		return -ENOENT;
	symcache_trim(dir, DWARF_CACHE_PREFIX, name, DWARF_CACHE_MAX_BYTES);
	return dwarf_cache_open(s, dir, name);
}

/*
 * The file holding DWARF, opened once and kept in s->dwarf_fd: the dso's
 * own fd when it is the binary itself, else dwarf_path (maybe inside a
 * container's root) by the same rules as elfobj_open(). 0 or -errno.
 */
static int dwarf_file_hold(struct symtab *s)
{
	int fd;

	if (s->dwarf_fd >= 0)
		return 0;
	fd = s->dwarf_in_dso ? dso_fd(s->dso) : rootfs_open_path(s->dwarf_path, ROOTFS_ELF_MAX, NULL);
	if (fd < 0)
		return fd;
	s->dwarf_fd = fd;
	return 0;
}

/* Give up what dwarf_file_hold() opened (the dso's fd stays the dso's). */
static void dwarf_file_drop(struct symtab *s)
{
	if (s->dwarf_fd >= 0 && !s->dwarf_in_dso)
		close(s->dwarf_fd);
	s->dwarf_fd = -1;
}

struct Dwarf *symtab_dwarf_lines(struct symtab *s)
{
	if (!s)
		return NULL;
	if (s->dwarf_full || s->dwarf_failed || !s->dwarf_path)
		return s->dwarf_full;
	if (dwarf_file_hold(s) == 0)
		s->dwarf_full = dwarf_begin(s->dwarf_fd, DWARF_C_READ);
	if (!s->dwarf_full) {
		/* remembered: a file that failed once is not re-read per sample */
		s->dwarf_failed = true;
		dwarf_file_drop(s);
	}
	return s->dwarf_full;
}

/* The DWARF inlined frames are read from: the cache's inflated copy when
 * it serves and the whole file is not read yet, else the whole file. */
static Dwarf *symtab_dwarf(struct symtab *s)
{
	if (s->dwarf || s->dwarf_failed || !s->dwarf_path)
		return s->dwarf;
	if (!s->dwarf_full && dwarf_file_hold(s) == 0 && dwarf_from_cache(s) == 0)
		return s->dwarf;
	s->dwarf = symtab_dwarf_lines(s);
	return s->dwarf;
}

bool symtab_dwarf_cached(const struct symtab *s)
{
	return s && s->dwarf_cached;
}

int symtab_hold_dwarf(struct symtab *s)
{
	if (!s || !s->dwarf_path || s->dwarf_failed)
		return 0;
	return dwarf_file_hold(s);
}

static const char *inline_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Die origin;
	const char *name = NULL;

	if (dwarf_attr(die, DW_AT_abstract_origin, &attr) && dwarf_formref_die(&attr, &origin))
		name = dwarf_diename(&origin);
	if (!name) /* follows origin and specification chains */
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return name;
}

/*
 * Bounds for walking DWARF: real inline nesting is a few levels deep, and
 * corrupt DWARF must cost neither the stack nor unbounded time.
 */
#define SYMTAB_MAX_SCOPES 64
#define SYMTAB_MAX_DIES (1u << 20)

struct scope_walk {
	Dwarf_Addr pc;
	Dwarf_Die chain[SYMTAB_MAX_SCOPES]; /* outermost first */
	unsigned int budget;		    /* DIEs left to visit */
};

/* Tags that hold functions without covering addresses themselves (Rust and
 * C++ put definitions inside namespaces and types). */
static bool scope_transparent(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

/*
 * Extend w->chain below @parent with the DIEs whose ranges contain w->pc,
 * from chain[depth] on. Returns the new depth. @level counts recursion,
 * transparent levels included.
 */
static int scope_find(struct scope_walk *w, Dwarf_Die *parent, int depth, int level)
{
	Dwarf_Die child;

	if (depth >= SYMTAB_MAX_SCOPES || level >= 2 * SYMTAB_MAX_SCOPES ||
	    dwarf_child(parent, &child) != 0)
		return depth;
	do {
		if (w->budget == 0)
			return depth;
		w->budget--;
		if (dwarf_haspc(&child, w->pc) > 0) {
			w->chain[depth] = child;
			return scope_find(w, &w->chain[depth], depth + 1, level + 1);
		}
		if (scope_transparent(dwarf_tag(&child))) {
			int d = scope_find(w, &child, depth, level + 1);

			if (d > depth)
				return d;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return depth;
}

/*
 * Which outermost scope of a CU covers pc was found by scope_find() from
 * the CU's root, testing every top-level DIE in turn: tens of microseconds
 * per frame in a big CU such as libc's malloc.c. Instead each CU, on its
 * first lookup, gets a sorted table of the ranges of those DIEs (found
 * exactly as scope_find() visits them: children of the CU, and of the
 * transparent scopes among them); a lookup then starts scope_find() from
 * the DIE the table names. Same DIE, same chain: the first DIE in DIE
 * order whose ranges contain pc.
 */
#define SYMTAB_MAX_CUS 4096
#define SYMTAB_MAX_CU_SPANS (1u << 20)

static int cu_span_cmp(const void *pa, const void *pb)
{
	const struct cu_span *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->die < b->die ? -1 : a->die > b->die;
}

static void cu_index_walk(struct cu_index *ci, size_t *cap, Dwarf_Die *parent, int level,
			  unsigned int *budget)
{
	Dwarf_Die child;

	if (ci->failed || level >= 2 * SYMTAB_MAX_SCOPES || dwarf_child(parent, &child) != 0)
		return;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t it = 0;

		if (*budget == 0) {
			ci->failed = true;
			return;
		}
		(*budget)--;
		while ((it = dwarf_ranges(&child, it, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (ci->n == *cap) {
				size_t nc = *cap ? *cap * 2 : 64;
				struct cu_span *nv;

				if (nc > SYMTAB_MAX_CU_SPANS ||
				    !(nv = realloc(ci->v, nc * sizeof(*nv)))) {
					ci->failed = true;
					return;
				}
				ci->v = nv;
				*cap = nc;
			}
			ci->v[ci->n++] = (struct cu_span){
				.lo = lo, .hi = hi, .die = dwarf_dieoffset(&child), .level = level
			};
		}
		if (scope_transparent(dwarf_tag(&child)))
			cu_index_walk(ci, cap, &child, level + 1, budget);
	} while (!ci->failed && dwarf_siblingof(&child, &child) == 0);
}

/* The index of the CU of @cudie, built on first use; NULL when it cannot be. */
static const struct cu_index *cu_index_get(struct symtab *s, Dwarf_Die *cudie)
{
	uint64_t off = dwarf_dieoffset(cudie);
	unsigned int budget = SYMTAB_MAX_DIES;
	struct cu_index *ci;
	size_t cap = 0;

	for (size_t i = 0; i < s->ncus; i++)
		if (s->cus[i].cu == off)
			return s->cus[i].failed ? NULL : &s->cus[i];
	if (s->ncus >= SYMTAB_MAX_CUS)
		return NULL;
	if (GROW_ARRAY(s->cus, s->ncus, s->capcus, 16) < 0)
		return NULL;
	ci = &s->cus[s->ncus++];
	memset(ci, 0, sizeof(*ci));
	ci->cu = off;
	cu_index_walk(ci, &cap, cudie, 0, &budget);
	if (!ci->failed && ci->n) {
		qsort(ci->v, ci->n, sizeof(*ci->v), cu_span_cmp);
		ci->maxhi = malloc(ci->n * sizeof(*ci->maxhi));
		if (!ci->maxhi)
			ci->failed = true;
		for (size_t i = 0; !ci->failed && i < ci->n; i++)
			ci->maxhi[i] = i && ci->maxhi[i - 1] > ci->v[i].hi ? ci->maxhi[i - 1] : ci->v[i].hi;
	}
	if (ci->failed) {
		free(ci->v);
		free(ci->maxhi);
		ci->v = NULL;
		ci->maxhi = NULL;
		ci->n = 0;
		return NULL;
	}
	return ci;
}

/* The outermost scope containing @pc: false when none does. */
static bool cu_index_find(const struct cu_index *ci, uint64_t pc, const struct cu_span **out)
{
	const struct cu_span *best = NULL;
	size_t lo = search_upper_u64(ci->v, ci->n, sizeof(*ci->v), offsetof(struct cu_span, lo), pc);

	/* v[0..lo) start at or below pc; past the prefix max nothing reaches it */
	for (size_t i = lo; i > 0 && ci->maxhi[i - 1] > pc; i--) {
		const struct cu_span *sp = &ci->v[i - 1];

		if (pc < sp->hi && (!best || sp->die < best->die))
			best = sp;
	}
	*out = best;
	return best != NULL;
}

size_t symtab_inlines(struct symtab *s, uint64_t off, const char **names, size_t max)
{
	const struct cu_index *ci;
	const struct cu_span *top;
	struct scope_walk *w;
	Dwarf_Die cudie;
	size_t count = 0;
	uint64_t pc;
	Dwarf *dw;
	int depth;

	if (!s || max == 0 || symtab_off_to_vaddr(s, off, &pc) < 0 || !(dw = symtab_dwarf(s)))
		return 0;
	if (!dwarf_addrdie(dw, pc, &cudie))
		return 0;
	ci = cu_index_get(s, &cudie);
	if (ci && !cu_index_find(ci, pc, &top))
		return 0;
	w = malloc(sizeof(*w));
	if (!w)
		return 0;
	w->pc = pc;
	w->budget = SYMTAB_MAX_DIES;
	/*
	 * The physical nesting of DIEs around pc is the chain of call sites:
	 * subprogram > inlined_subroutine > ... (lexical blocks between).
	 * Not dwarf_getscopes(): it stops at the innermost inlined instance
	 * and continues with the abstract definition's scopes instead.
	 */
	if (ci && dwarf_offdie(dw, top->die, &w->chain[0]))
		depth = scope_find(w, &w->chain[0], 1, top->level + 1);
	else
		depth = scope_find(w, &cudie, 0, 0);
	for (int i = depth - 1; i >= 0 && count < max; i--) {
		int tag = dwarf_tag(&w->chain[i]);
		const char *name;

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		name = inline_name(&w->chain[i]);
		if (name)
			names[count++] = name;
	}
	free(w);
	return count;
}

void symtab_dwarf_release(struct symtab *s)
{
	for (size_t i = 0; i < s->ncus; i++) {
		free(s->cus[i].v);
		free(s->cus[i].maxhi);
	}
	free(s->cus);
	if (s->dwarf_full && s->dwarf_full != s->dwarf)
		dwarf_end(s->dwarf_full);
	if (s->dwarf)
		dwarf_end(s->dwarf);
	if (s->dwarf_elf)
		elf_end(s->dwarf_elf);
	if (s->dwarf_cache_fd >= 0)
		close(s->dwarf_cache_fd);
	dwarf_file_drop(s);
	free(s->dwarf_path);
}
