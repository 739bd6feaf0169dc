// SPDX-License-Identifier: MIT
/*
 * ELF and kernel symbol tables.
 *
 * A profiler sees an instruction pointer inside some mapping of some file.
 * The mapping's start and pgoff turn it into a FILE OFFSET, which is the
 * same in every process and every container that maps the file, so one
 * symtab per file serves them all. Symbols, however, are keyed by virtual
 * address; the PT_LOAD program headers translate between the two (an
 * offset belongs to the segment whose file bytes contain it).
 *
 * Where the symbols come from matters more than how they are stored:
 *
 *  - The file's own .symtab is complete but distributions strip it.
 *  - Separate debuginfo (a -dbg/-dbgsym package) carries that .symtab and
 *    the DWARF. It is found by build-id under /usr/lib/debug/.build-id,
 *    or by the .gnu_debuglink name next to the file, in its .debug/
 *    directory, or under /usr/lib/debug/<dir>. For a file inside a
 *    container, "/usr/lib/debug" is the container's, reached through
 *    debug_root = /proc/PID/root. A candidate found by name must prove it
 *    belongs to the file: equal build-ids, or failing that the CRC-32 the
 *    debuglink records (a whole-file read, so only when build-ids cannot
 *    decide).
 *  - .dynsym survives stripping but holds only exported functions. Its
 *    entries are merged in behind the better source, filling gaps only.
 *
 * Several names often share one address (malloc, __libc_malloc,
 * __GI___libc_malloc); one is kept: global over weak over local, then the
 * fewest leading underscores, then the shortest, so profiles show the name
 * a user would type. Symbols without a size (hand-written assembly) reach
 * to the next symbol, but never past their section.
 *
 * Memory: a symbol is 16 bytes (address, 32-bit size, 32-bit offset into
 * one name arena) plus its name and a NUL; nothing else survives
 * symtab_open(). The ELF is unmapped and closed before returning; DWARF,
 * which can be large once decompressed, is opened only when inlined
 * frames are first asked for.
 *
 * Everything read from the file is hostile until checked: libelf bounds
 * sections by the file size and checks string termination, and this file
 * checks the rest (sh_link, symbol values against their sections, counts,
 * name lengths, note sizes).
 *
 * The work is spread by job: this file collects ELF symbols and answers
 * lookups; elfobj.c opens ELF files and reads their segments and
 * build-id; symtab_debuginfo.c finds separate debuginfo; symtab_dwarf.c
 * names inlined frames from DWARF and keeps its inflated cache;
 * symtab_priv.h is what they share. Kernel symbols are ksyms.c.
 */
#include "agent/symbols/symtab_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/symrank.h"
#include "lib/grow.h"
#include "lib/search.h"

/* ---- collecting symbols ---- */

struct cand {
	uint64_t addr, size;
	uint64_t limit; /* end of its section; UINT64_MAX when unknown */
	const char *name; /* in the ELF's mapped string table */
	uint32_t len;	  /* without any @VERSION suffix */
	uint8_t rank;	  /* source and binding: lower wins */
	uint8_t unders;	  /* leading underscores: fewer wins */
};

struct builder {
	struct cand *v;
	size_t n, cap;
	char *owned; /* names made here ("memset@plt"), one buffer */
	size_t olen, ocap;
};

static int builder_push(struct builder *b, const struct cand *c)
{
	if (b->n >= SYMTAB_MAX_SYMS)
		return -E2BIG;
	if (GROW_ARRAY(b->v, b->n, b->cap, 1024) < 0)
		return -ENOMEM;
	b->v[b->n++] = *c;
	return 0;
}

static uint8_t bind_rank(unsigned char bind)
{
	switch (bind) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

/*
 * Add the function symbols of symbol table @scn of @elf, ranked behind
 * earlier sources by @source_rank. Returns how many were added (the cap
 * silently ends the table) or -ENOMEM.
 */
static long add_symbols(struct builder *b, Elf *elf, Elf_Scn *scn, uint8_t source_rank)
{
	size_t shnum, entsize, nent;
	long added = 0;
	GElf_Shdr sh;
	Elf_Data *d;

	if (!scn || !gelf_getshdr(scn, &sh) || elf_getshdrnum(elf, &shnum) < 0)
		return 0;
	/* the string table must be another section of this file */
	if (sh.sh_link == 0 || sh.sh_link >= shnum)
		return 0;
	d = elf_getdata(scn, NULL);
	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!d || d->d_type != ELF_T_SYM || entsize == 0)
		return 0;
	nent = d->d_size / entsize;
	if (nent > INT_MAX) /* gelf_getsym() takes an int */
		nent = INT_MAX;
	for (size_t i = 1; i < nent; i++) {
		struct cand c = { .limit = UINT64_MAX };
		unsigned char type;
		const char *at;
		GElf_Sym sym;
		size_t len;
		int err;

		if (!gelf_getsym(d, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_value == 0 ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		if (sym.st_shndx < SHN_LORESERVE) {
			Elf_Scn *home = elf_getscn(elf, sym.st_shndx);
			GElf_Shdr hs;

			/* a value outside its section is corruption, not a function */
			if (!home || !gelf_getshdr(home, &hs) || sym.st_value < hs.sh_addr ||
			    sym.st_value - hs.sh_addr >= hs.sh_size)
				continue;
			c.limit = hs.sh_addr + hs.sh_size < hs.sh_addr ? UINT64_MAX
								       : hs.sh_addr + hs.sh_size;
		} else if (sym.st_shndx != SHN_XINDEX) {
			continue; /* SHN_ABS, SHN_COMMON: no code behind them */
		}
		c.name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!c.name)
			continue;
		len = strnlen(c.name, SYMTAB_MAX_NAME);
		/* "memcpy@GLIBC_2.2.5": the version is noise in a profile */
		at = memchr(c.name, '@', len);
		if (at)
			len = (size_t)(at - c.name);
		if (len == 0)
			continue;
		c.len = (uint32_t)len;
		c.addr = sym.st_value;
		c.size = sym.st_size;
		c.rank = (uint8_t)(source_rank * 4 + bind_rank(GELF_ST_BIND(sym.st_info)));
		c.unders = symrank_unders(c.name, len);
		err = builder_push(b, &c);
		if (err == -E2BIG)
			break;
		if (err < 0)
			return err;
		added++;
	}
	return added;
}

static Elf_Scn *section_named(Elf *elf, const char *want, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, out))
			continue;
		name = elf_strptr(elf, shstrndx, out->sh_name);
		if (name && strcmp(name, want) == 0)
			return scn;
	}
	return NULL;
}

/*
 * PLT stubs have no symbols; name them "func@plt" as perf and objdump do.
 * On x86_64 the i-th R_X86_64_JUMP_SLOT relocation of .rela.plt belongs to
 * the i-th 16-byte entry of .plt.sec when the binary has one (IBT builds),
 * else to entry i + 1 of .plt (entry 0 is the resolver trampoline).
 * Names are built in b->owned; their offsets are turned into pointers by
 * builder_fix_owned() once the buffer stops moving. Best effort: any
 * inconsistency just means no PLT names.
 */
#define PLT_ENTRY 16
#define OWNED_TAG ((const char *)1) /* cand.name placeholder until builder_fix_owned() */

static int add_plt(struct builder *b, Elf *elf)
{
	GElf_Shdr rsh, psh, dsh;
	Elf_Scn *rela = section_named(elf, ".rela.plt", &rsh), *plt, *dyn;
	Elf_Data *rd, *dd;
	GElf_Ehdr eh;
	uint64_t base, limit, first;
	size_t entsize, nrel;

	if (!rela || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    rsh.sh_type != SHT_RELA)
		return 0;
	plt = section_named(elf, ".plt.sec", &psh);
	first = 0;
	if (!plt) {
		plt = section_named(elf, ".plt", &psh);
		first = 1;
	}
	dyn = elf_getscn(elf, rsh.sh_link);
	if (!plt || !dyn || !gelf_getshdr(dyn, &dsh) || dsh.sh_type != SHT_DYNSYM)
		return 0;
	rd = elf_getdata(rela, NULL);
	dd = elf_getdata(dyn, NULL);
	entsize = gelf_fsize(elf, ELF_T_RELA, 1, EV_CURRENT);
	if (!rd || !dd || rd->d_type != ELF_T_RELA || !entsize)
		return 0;
	nrel = rd->d_size / entsize;
	base = psh.sh_addr;
	limit = psh.sh_addr + psh.sh_size;
	for (size_t i = 0; i < nrel && i < (size_t)INT_MAX; i++) {
		struct cand c = { .limit = limit, .size = PLT_ENTRY, .rank = 3 * 4 };
		GElf_Rela r;
		GElf_Sym sym;
		const char *name;
		size_t len;
		uint64_t addr = base + (i + first) * PLT_ENTRY;

		if (!gelf_getrela(rd, (int)i, &r))
			break;
		if (addr + PLT_ENTRY > limit || addr < base)
			break;
		if (GELF_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT ||
		    GELF_R_SYM(r.r_info) > (uint64_t)INT_MAX ||
		    !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym) ||
		    !(name = elf_strptr(elf, dsh.sh_link, sym.st_name)))
			continue;
		len = strnlen(name, SYMTAB_MAX_NAME - 8);
		if (memchr(name, '@', len))
			len = (size_t)((const char *)memchr(name, '@', len) - name);
		if (!len)
			continue;
		while (b->olen + len + 5 > b->ocap)
			if (GROW_ARRAY(b->owned, b->ocap, b->ocap, 4096) < 0)
				return -ENOMEM;
		memcpy(b->owned + b->olen, name, len);
		memcpy(b->owned + b->olen + len, "@plt", 4);
		c.addr = addr;
		c.name = OWNED_TAG;
		c.len = (uint32_t)(len + 4);
		/* The offset into b->owned rides in .size's upper half until fixed. */
		c.size = PLT_ENTRY | ((uint64_t)b->olen << 32);
		b->olen += len + 4;
		if (builder_push(b, &c) < 0)
			break;
	}
	return 0;
}

/* Turn the placeholder names of add_plt() into pointers into b->owned. */
static void builder_fix_owned(struct builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct cand *c = &b->v[i];

		if (c->name != OWNED_TAG)
			continue;
		c->name = b->owned + (c->size >> 32);
		c->size &= 0xffffffffu;
		c->unders = 0;
	}
}

static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return symrank_cmp(&(struct symrank){ a->rank, a->unders, a->name, a->len },
			   &(struct symrank){ b->rank, b->unders, b->name, b->len });
}

/*
 * Sort candidates as cand_cmp() orders them: a stable LSD radix sort on the
 * address (qsort's comparisons were most of symtab_open() for a 10k-symbol
 * .dynsym), then each run of aliases at one address by cand_cmp().
 */
#define RADIX_BITS 11
#define RADIX_PASSES 6 /* 6 * 11 >= 64 */

static int cand_sort(struct cand *v, size_t n)
{
	const uint64_t mask = (1u << RADIX_BITS) - 1;
	struct cand *tmp, *src = v, *dst;
	uint32_t (*count)[1u << RADIX_BITS];

	if (n < 64) {
		qsort(v, n, sizeof(*v), cand_cmp);
		return 0;
	}
	tmp = malloc(n * sizeof(*tmp));
	count = calloc(RADIX_PASSES, sizeof(*count));
	if (!tmp || !count) {
		free(tmp);
		free(count);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		for (int p = 0; p < RADIX_PASSES; p++)
			count[p][(v[i].addr >> (p * RADIX_BITS)) & mask]++;
	dst = tmp;
	for (int p = 0; p < RADIX_PASSES; p++) {
		uint32_t *c = count[p], sum = 0;

		/* every address has the same digit here: nothing to do */
		if (c[(v[0].addr >> (p * RADIX_BITS)) & mask] == n)
			continue;
		for (size_t d = 0; d <= mask; d++) {
			uint32_t k = c[d];

			c[d] = sum;
			sum += k;
		}
		for (size_t i = 0; i < n; i++)
			dst[c[(src[i].addr >> (p * RADIX_BITS)) & mask]++] = src[i];
		dst = src;
		src = src == v ? tmp : v;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	free(count);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && v[j].addr == v[i].addr; j++)
			;
		if (j - i > 1)
			qsort(v + i, j - i, sizeof(*v), cand_cmp);
	}
	return 0;
}

static uint64_t load_end(const struct symtab *s, uint64_t vaddr)
{
	size_t n;
	const struct elfobj_load *l = dso_loads(s->dso, &n, NULL);

	for (size_t i = 0; i < n; i++)
		if (vaddr >= l[i].vaddr && vaddr - l[i].vaddr < l[i].filesz)
			return l[i].vaddr + l[i].filesz;
	return vaddr;
}

/* Sort, keep one name per address, settle sizes, copy names into the arena. */
static int symtab_finish(struct symtab *s, struct builder *b)
{
	size_t n = 0, bytes = 0, pos = 0;

	if (b->n == 0)
		return 0;
	if (cand_sort(b->v, b->n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		if (n > 0 && b->v[n - 1].addr == b->v[i].addr) {
			/* an alias may know the size the preferred name lacks */
			if (b->v[i].size > b->v[n - 1].size)
				b->v[n - 1].size = b->v[i].size;
			continue;
		}
		b->v[n++] = b->v[i];
	}
	/* names are 32-bit offsets: stop before the arena would overflow them */
	for (size_t i = 0; i < n; i++) {
		if (bytes + b->v[i].len + 1 > UINT32_MAX) {
			n = i;
			break;
		}
		bytes += b->v[i].len + 1;
	}
	s->syms = malloc(n * sizeof(*s->syms));
	s->names = malloc(bytes);
	if (!s->syms || !s->names)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct cand *c = &b->v[i];
		uint64_t next = i + 1 < n ? b->v[i + 1].addr : UINT64_MAX;
		uint64_t limit = c->limit != UINT64_MAX ? c->limit : load_end(s, c->addr);
		uint64_t end;

		if (c->size == 0)
			end = next < limit ? next : limit;
		else
			end = c->addr + c->size < c->addr ? UINT64_MAX : c->addr + c->size;
		if (end > limit)
			end = limit;
		if (end < c->addr)
			end = c->addr;
		s->syms[i].addr = c->addr;
		s->syms[i].size = end - c->addr > UINT32_MAX ? UINT32_MAX : (uint32_t)(end - c->addr);
		s->syms[i].name = (uint32_t)pos;
		memcpy(s->names + pos, c->name, c->len);
		pos += c->len;
		s->names[pos++] = '\0';
	}
	s->nsyms = n;
	return 0;
}

static bool get_le32(const Elf_Data *d, uint64_t at, uint32_t *v)
{
	const unsigned char *p = d->d_buf;

	if (!p || at > d->d_size || d->d_size - at < 4)
		return false;
	*v = (uint32_t)p[at] | (uint32_t)p[at + 1] << 8 | (uint32_t)p[at + 2] << 16 |
	     (uint32_t)p[at + 3] << 24;
	return true;
}

/*
 * Function extents from .eh_frame, for code that has unwind info but no
 * symbol (static functions of a stripped binary): an unnamed frame is then
 * reported at its function's start, so all samples of one function fold
 * into one frame instead of one per instruction. Reads the sorted search
 * table that the dso found in .eh_frame_hdr (agent/symbols/dso.h: the one
 * parser of it) and each FDE's pc_begin/pc_range; FDE pointers are
 * understood in the form x86_64 toolchains emit (pcrel|sdata4), any other
 * FDE is skipped.
 */
static int read_fdes(struct symtab *s, Elf *elf, const struct dso *d)
{
	const struct dso_eh *e;
	uint64_t toff, eoff, esize;
	Elf_Data *hd, *fd;
	size_t n = 0;

	if (dso_eh_frame(d, &e) < 0 || e->fde_count > SYMTAB_MAX_SYMS ||
	    dso_vaddr_to_off(d, e->table_vaddr, &toff) < 0 ||
	    dso_vaddr_to_off(d, e->eh_vaddr, &eoff) < 0)
		return 0;
	/* .eh_frame runs to the end of its segment when its size is unknown */
	esize = e->eh_size;
	if (!esize) {
		size_t nl;
		const struct elfobj_load *l = dso_loads(d, &nl, NULL);

		for (size_t k = 0; k < nl; k++)
			if (eoff >= l[k].offset && eoff - l[k].offset < l[k].filesz)
				esize = l[k].filesz - (eoff - l[k].offset);
	}
	hd = elf_getdata_rawchunk(elf, (int64_t)toff, e->fde_count * 8, ELF_T_BYTE);
	fd = elf_getdata_rawchunk(elf, (int64_t)eoff, esize, ELF_T_BYTE);
	if (!hd || !fd)
		return 0;
	s->fdes = malloc(e->fde_count * sizeof(*s->fdes));
	if (!s->fdes)
		return -ENOMEM;
	for (uint64_t i = 0; i < e->fde_count; i++) {
		uint32_t loc, fde, len, range;
		int32_t pcrel;
		uint64_t start, fde_vaddr, at;

		if (!get_le32(hd, i * 8, &loc) || !get_le32(hd, i * 8 + 4, &fde))
			break;
		/* datarel: relative to .eh_frame_hdr's start */
		start = e->hdr_vaddr + (uint64_t)(int64_t)(int32_t)loc;
		fde_vaddr = e->hdr_vaddr + (uint64_t)(int64_t)(int32_t)fde;
		if (fde_vaddr < e->eh_vaddr)
			continue;
		at = fde_vaddr - e->eh_vaddr;
		/* length, CIE pointer, pc_begin (pcrel sdata4), pc_range (udata4) */
		if (!get_le32(fd, at, &len) || len == 0xffffffffu || len < 12 ||
		    !get_le32(fd, at + 8, (uint32_t *)&pcrel) || !get_le32(fd, at + 12, &range))
			continue;
		if (fde_vaddr + 8 + (uint64_t)(int64_t)pcrel != start || range == 0)
			continue;
		/* sorted by start in the table; keep it so */
		if (n && start < s->fdes[n - 1].start)
			continue;
		s->fdes[n++] = (struct symtab_fde){ .start = start, .end = start + range };
	}
	s->nfde = n;
	return 0;
}

int symtab_func_extent(const struct symtab *s, uint64_t off, uint64_t *start_off, uint64_t *size)
{
	const struct symtab_fde *f;
	uint64_t vaddr;
	size_t lo;
	int err;

	if (!s || symtab_off_to_vaddr(s, off, &vaddr) < 0)
		return -ENOENT;
	lo = search_upper_u64(s->fdes, s->nfde, sizeof(*s->fdes), offsetof(struct symtab_fde, start),
			      vaddr);
	if (!lo || vaddr >= s->fdes[lo - 1].end)
		return -ENOENT;
	f = &s->fdes[lo - 1];
	err = symtab_vaddr_to_off(s, f->start, start_off);
	if (!err && size)
		*size = f->end - f->start;
	return err;
}

int symtab_func_start(const struct symtab *s, uint64_t off, uint64_t *start_off)
{
	return symtab_func_extent(s, off, start_off, NULL);
}

/* The symbols of separate debuginfo when the file has none of its own, and
 * the file holding DWARF when the file has none. @df is left open: the
 * names point into it until symtab_finish(). */
static int add_debuginfo(struct symtab *s, struct builder *b, const struct dso *d,
			 const struct elf_info *minfo, const char *debug_root, long *added,
			 struct elfobj *df)
{
	const uint8_t *bid;
	size_t blen = dso_build_id(d, &bid);
	const struct debug_want w = {
		.main_st = dso_stat(d),
		.main_eh = dso_ehdr(d),
		.build_id = bid,
		.build_id_len = blen,
		.info = minfo,
	};
	struct elf_info dinfo;
	char dpath[PATH_MAX];
	int err = 0;

	if (symtab_debug_find(df, &dinfo, dpath, sizeof(dpath), dso_path(d), debug_root, &w) < 0)
		return 0;
	if (*added == 0) {
		*added = add_symbols(b, df->elf, dinfo.symtab, 0);
		if (*added < 0)
			err = (int)*added;
		else if (*added > 0)
			s->source = "debuginfo";
	}
	if (!err && !minfo->has_dwarf && dinfo.has_dwarf && !(s->dwarf_path = strdup(dpath)))
		err = -ENOMEM;
	return err;
}

/* ---- public ---- */

/* Build the symbols of @d; the symtab holds a reference to @d if @owns
 * (else it is @d's member, freed with it). */
static struct symtab *symtab_build(struct dso *d, const char *debug_root, bool owns)
{
	struct elfobj df = ELFOBJ_INIT;
	struct elf_info minfo;
	struct builder b = { 0 };
	struct symtab *s;
	long added = 0;
	Elf *elf = NULL;
	int err;

	if (!d) {
		errno = EINVAL;
		return NULL;
	}
	if (!debug_root)
		debug_root = "";
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->dso = owns ? dso_get(d) : d;
	s->owns_dso = owns;
	s->dwarf_fd = -1;
	s->dwarf_cache_fd = -1;
	s->source = "none";
	snprintf(s->build_id, sizeof(s->build_id), "%s", dso_build_id_hex(d));
	err = -ENOEXEC;
	elf = dso_elf_begin(d);
	if (!elf)
		goto err_out;
	symtab_elf_scan(elf, &minfo);

	added = add_symbols(&b, elf, minfo.symtab, 0);
	err = added < 0 ? (int)added : 0;
	if (added > 0)
		s->source = "symtab";
	if (!err && (added == 0 || !minfo.has_dwarf))
		err = add_debuginfo(s, &b, d, &minfo, debug_root, &added, &df);
	if (err < 0)
		goto err_out;
	if (minfo.has_dwarf) {
		/* DWARF in the file itself: read later from the dso's fd, not by path */
		s->dwarf_in_dso = true;
		s->dwarf_path = strdup(dso_path(d));
		if (!s->dwarf_path) {
			err = -ENOMEM;
			goto err_out;
		}
	}
	/* exported functions fill what the better source lacks */
	added = add_symbols(&b, elf, minfo.dynsym, 1);
	if (added < 0) {
		err = (int)added;
		goto err_out;
	}
	if (added > 0 && strcmp(s->source, "none") == 0)
		s->source = "dynsym";
	err = add_plt(&b, elf);
	if (!err)
		err = read_fdes(s, elf, d);
	if (err < 0)
		goto err_out;
	builder_fix_owned(&b);
	err = symtab_finish(s, &b);
	if (err < 0)
		goto err_out;
	free(b.v);
	free(b.owned);
	elfobj_close(&df);
	elf_end(elf);
	return s;

err_out:
	free(b.v);
	free(b.owned);
	elfobj_close(&df);
	if (elf)
		elf_end(elf);
	symtab_free(s);
	errno = -err;
	return NULL;
}

struct symtab *symtab_new(struct dso *d, const char *debug_root)
{
	return symtab_build(d, debug_root, true);
}

struct symtab *symtab_open(const char *path, const char *debug_root)
{
	struct dso *d = dso_open(path, 0, 0);
	struct symtab *s;
	int err;

	if (!d)
		return NULL;
	s = symtab_new(d, debug_root); /* holds its own reference */
	err = errno;
	dso_put(d);
	errno = err;
	return s;
}

struct dso_symtab_arg {
	const char *debug_root;
};

static int symtab_member_build(struct dso *d, void *arg, void **out)
{
	const struct dso_symtab_arg *a = arg;
	struct symtab *s = symtab_build(d, a->debug_root, false);

	if (!s)
		return -errno;
	*out = s;
	return 0;
}

static void symtab_member_free(void *p)
{
	symtab_free(p);
}

static const struct dso_member_ops symtab_member = {
	.build = symtab_member_build,
	.free = symtab_member_free,
};

struct symtab *dso_symtab(struct dso *d, const char *debug_root)
{
	struct dso_symtab_arg a = { debug_root };
	void *p = NULL;
	int err;

	if (!d) {
		errno = EINVAL;
		return NULL;
	}
	err = dso_member(d, &symtab_member, &a, &p);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	return p;
}

void symtab_free(struct symtab *s)
{
	if (!s)
		return;
	symtab_dwarf_release(s);
	if (s->owns_dso)
		dso_put(s->dso);
	free(s->syms);
	free(s->names);
	free(s->fdes);
	free(s);
}

int symtab_off_to_vaddr(const struct symtab *s, uint64_t off, uint64_t *vaddr)
{
	return s ? dso_off_to_vaddr(s->dso, off, vaddr) : -ENOENT;
}

int symtab_vaddr_to_off(const struct symtab *s, uint64_t vaddr, uint64_t *off)
{
	return s ? dso_vaddr_to_off(s->dso, vaddr, off) : -ENOENT;
}

int symtab_lookup(const struct symtab *s, uint64_t off, const char **name, uint64_t *sym_off)
{
	size_t lo;
	uint64_t vaddr;

	if (!s || s->nsyms == 0 || symtab_off_to_vaddr(s, off, &vaddr) < 0)
		return -ENOENT;
	/* lo = number of symbols starting at or below vaddr */
	lo = search_upper_u64(s->syms, s->nsyms, sizeof(*s->syms), offsetof(struct symtab_sym, addr),
			      vaddr);
	/*
	 * The nearest symbol below may be a small one nested in, or ending
	 * before, the function that really contains vaddr: look a little
	 * further back.
	 */
	for (size_t i = lo, seen = 0; i > 0 && seen < SYMTAB_OVERLAP_SCAN; i--, seen++) {
		const struct symtab_sym *sym = &s->syms[i - 1];

		if (vaddr - sym->addr < sym->size) {
			*name = s->names + sym->name;
			*sym_off = vaddr - sym->addr;
			return 0;
		}
	}
	return -ENOENT;
}

int symtab_find_sized(const struct symtab *s, const char *name, uint64_t *off, uint64_t *size)
{
	if (!s || !name)
		return -ENOENT;
	/* sorted by address, not name: a probe is resolved once, a scan is fine */
	for (size_t i = 0; i < s->nsyms; i++) {
		if (strcmp(s->names + s->syms[i].name, name) == 0) {
			if (size)
				*size = s->syms[i].size;
			return symtab_vaddr_to_off(s, s->syms[i].addr, off);
		}
	}
	return -ENOENT;
}

int symtab_find(const struct symtab *s, const char *name, uint64_t *off)
{
	return symtab_find_sized(s, name, off, NULL);
}

const char *symtab_name_at(const struct symtab *s, size_t i, uint64_t *off)
{
	if (!s || i >= s->nsyms)
		return NULL;
	if (off && symtab_vaddr_to_off(s, s->syms[i].addr, off) < 0)
		*off = UINT64_MAX;
	return s->names + s->syms[i].name;
}

const char *symtab_build_id(const struct symtab *s)
{
	return s ? s->build_id : "";
}

size_t symtab_count(const struct symtab *s)
{
	return s ? s->nsyms : 0;
}

const char *symtab_source(const struct symtab *s)
{
	return s ? s->source : "none";
}
