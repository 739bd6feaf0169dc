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
 */
#include "agent/symtab.h"

#include <ctype.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/rootfs.h"
#include "agent/symcache.h"

#define SYMTAB_MAX_SYMS (4u << 20)  /* symbols kept per object */
#define SYMTAB_MAX_NAME 1024	    /* longer names (templates) are cut */
#define SYMTAB_MAX_LOADS 1024	    /* PT_LOAD headers considered */
#define SYMTAB_MAX_BUILD_ID 64	    /* bytes; linkers write 20 (SHA-1) */
#define SYMTAB_OVERLAP_SCAN 16	    /* symbols searched back for nesting */

struct symtab_sym {
	uint64_t addr;
	uint32_t size;
	uint32_t name; /* offset into names */
};

struct symtab_load {
	uint64_t off, filesz, vaddr;
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
	struct symtab_load *loads;
	size_t nloads;
	const char *source;
	char build_id[2 * SYMTAB_MAX_BUILD_ID + 1];
	/* the file holding DWARF, opened on first symtab_inlines() */
	char *dwarf_path;
	int dwarf_fd;
	Dwarf *dwarf;
	bool dwarf_failed;
	/* when DWARF comes from the cache's decompressed copy */
	Elf *dwarf_elf;
	int dwarf_cache_fd;
	bool dwarf_cached;
	/* per compile unit, the address ranges of its outermost scopes */
	struct cu_index *cus;
	size_t ncus, capcus;
	/* function extents from .eh_frame FDEs: for code no symbol covers */
	uint64_t *fde_start, *fde_end;
	size_t nfde;
};

/* ---- opening ELF files ---- */

struct elf_file {
	int fd;
	Elf *elf;
	struct stat st;
};

#define ELF_FILE_INIT { .fd = -1, .elf = NULL }

static void elf_file_close(struct elf_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

static int elf_file_open(struct elf_file *f, const char *path)
{
	GElf_Ehdr eh;

	/* A /proc/PID/root/... path is resolved inside that root, and only a
	 * regular file of sane size is opened (agent/rootfs.h): a FIFO or a
	 * link to a host file planted in a container is refused. */
	f->fd = rootfs_open_path(path, ROOTFS_ELF_MAX, &f->st);
	if (f->fd < 0) {
		int err = f->fd;

		f->fd = -1;
		return err == -EINVAL || err == -EISDIR ? -ENOEXEC : err;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &eh)) {
		elf_file_close(f);
		return -ENOEXEC;
	}
	return 0;
}

/* ---- build-id ---- */

static size_t notes_build_id(Elf_Data *d, uint8_t *out)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	/* gelf_getnote() checks each note against d_size and always advances */
	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
		    nh.n_descsz <= SYMTAB_MAX_BUILD_ID) {
			memcpy(out, (const char *)d->d_buf + desc_off, nh.n_descsz);
			return nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

/* Build-id of @elf into @out (SYMTAB_MAX_BUILD_ID bytes); its length or 0. */
static size_t elf_build_id(Elf *elf, uint8_t *out)
{
	Elf_Scn *scn = NULL;
	size_t n, len;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && (len = notes_build_id(d, out)) > 0)
			return len;
	}
	/* files whose section headers were stripped still have PT_NOTE */
	if (elf_getphdrnum(elf, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && i < SYMTAB_MAX_LOADS; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d && (len = notes_build_id(d, out)) > 0)
			return len;
	}
	return 0;
}

/* ---- what a file offers ---- */

struct elf_info {
	Elf_Scn *symtab, *dynsym;
	bool has_dwarf;
	bool has_link;
	char link[NAME_MAX + 1]; /* .gnu_debuglink file name */
	uint32_t link_crc;
};

static void parse_debuglink(Elf *elf, Elf_Scn *scn, struct elf_info *info)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const unsigned char *p;
	size_t len, crc_off;
	GElf_Ehdr eh;

	if (!d || !d->d_buf || !gelf_getehdr(elf, &eh))
		return;
	p = d->d_buf;
	len = strnlen((const char *)p, d->d_size);
	/* a file name in the same directory, then the CRC 4-aligned after it */
	crc_off = (len + 4) & ~(size_t)3;
	if (len == 0 || len > NAME_MAX || crc_off + 4 > d->d_size)
		return;
	if (memchr(p, '/', len) || (len == 1 && p[0] == '.') ||
	    (len == 2 && p[0] == '.' && p[1] == '.'))
		return;
	memcpy(info->link, p, len);
	info->link[len] = '\0';
	p += crc_off;
	if (eh.e_ident[EI_DATA] == ELFDATA2MSB)
		info->link_crc = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	else
		info->link_crc = (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
	info->has_link = true;
}

static void elf_scan(Elf *elf, struct elf_info *info)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool named = elf_getshdrstrndx(elf, &shstrndx) == 0;

	memset(info, 0, sizeof(*info));
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !info->symtab)
			info->symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !info->dynsym)
			info->dynsym = scn;
		if (!named || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		/* a debuginfo-stripped file keeps .debug_* headers as NOBITS */
		if (strcmp(name, ".debug_info") == 0 && sh.sh_type != SHT_NOBITS && sh.sh_size > 0)
			info->has_dwarf = true;
		else if (strcmp(name, ".gnu_debuglink") == 0 && !info->has_link)
			parse_debuglink(elf, scn, info);
	}
}

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
	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 1024;
		struct cand *nv;

		if (b->cap >= SYMTAB_MAX_SYMS)
			return -E2BIG;
		if (ncap > SYMTAB_MAX_SYMS)
			ncap = SYMTAB_MAX_SYMS;
		nv = realloc(b->v, ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		b->v = nv;
		b->cap = ncap;
	}
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
		while (c.unders < len && c.unders < 255 && c.name[c.unders] == '_')
			c.unders++;
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
		if (b->olen + len + 5 > b->ocap) {
			size_t nc = (b->olen + len + 5) * 2;
			char *nb = realloc(b->owned, nc);

			if (!nb)
				return -ENOMEM;
			b->owned = nb;
			b->ocap = nc;
		}
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
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->unders != b->unders)
		return a->unders < b->unders ? -1 : 1;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return memcmp(a->name, b->name, a->len);
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
	for (size_t i = 0; i < s->nloads; i++) {
		const struct symtab_load *l = &s->loads[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz)
			return l->vaddr + l->filesz;
	}
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
 * table of .eh_frame_hdr and each FDE's pc_begin/pc_range; only the
 * encodings x86_64 toolchains emit (table datarel|sdata4, FDE pointers
 * pcrel|sdata4) are understood, anything else is skipped.
 */
static int read_fdes(struct symtab *s, Elf *elf)
{
	GElf_Shdr hsh, fsh;
	Elf_Scn *hdr = section_named(elf, ".eh_frame_hdr", &hsh);
	Elf_Scn *frame = section_named(elf, ".eh_frame", &fsh);
	Elf_Data *hd, *fd;
	const unsigned char *h;
	uint32_t count;
	size_t n = 0;

	if (!hdr || !frame || hsh.sh_type == SHT_NOBITS || fsh.sh_type == SHT_NOBITS)
		return 0;
	hd = elf_getdata(hdr, NULL);
	fd = elf_getdata(frame, NULL);
	if (!hd || !fd || !hd->d_buf || hd->d_size < 12)
		return 0;
	h = hd->d_buf;
	/* version 1; eh_frame_ptr pcrel|sdata4; count udata4; table datarel|sdata4 */
	if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b || !get_le32(hd, 8, &count))
		return 0;
	if (count == 0 || count > SYMTAB_MAX_SYMS || (uint64_t)count * 8 > hd->d_size - 12)
		return 0;
	s->fde_start = malloc(count * sizeof(*s->fde_start));
	s->fde_end = malloc(count * sizeof(*s->fde_end));
	if (!s->fde_start || !s->fde_end)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t loc, fde, len, range;
		int32_t pcrel;
		uint64_t start, fde_vaddr, at;

		if (!get_le32(hd, 12 + (uint64_t)i * 8, &loc) ||
		    !get_le32(hd, 16 + (uint64_t)i * 8, &fde))
			break;
		start = hsh.sh_addr + (uint64_t)(int64_t)(int32_t)loc;
		fde_vaddr = hsh.sh_addr + (uint64_t)(int64_t)(int32_t)fde;
		if (fde_vaddr < fsh.sh_addr)
			continue;
		at = fde_vaddr - fsh.sh_addr;
		/* length, CIE pointer, pc_begin (pcrel sdata4), pc_range (udata4) */
		if (!get_le32(fd, at, &len) || len == 0xffffffffu || len < 12 ||
		    !get_le32(fd, at + 8, (uint32_t *)&pcrel) || !get_le32(fd, at + 12, &range))
			continue;
		if (fde_vaddr + 8 + (uint64_t)(int64_t)pcrel != start || range == 0)
			continue;
		/* sorted by start in the table; keep it so */
		if (n && start < s->fde_start[n - 1])
			continue;
		s->fde_start[n] = start;
		s->fde_end[n] = start + range;
		n++;
	}
	s->nfde = n;
	return 0;
}

int symtab_func_start(const struct symtab *s, uint64_t off, uint64_t *start_off)
{
	uint64_t vaddr;
	size_t lo = 0, hi;

	if (!s || symtab_off_to_vaddr(s, off, &vaddr) < 0)
		return -ENOENT;
	hi = s->nfde;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->fde_start[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || vaddr >= s->fde_end[lo - 1])
		return -ENOENT;
	return symtab_vaddr_to_off(s, s->fde_start[lo - 1], start_off);
}

static int read_loads(struct symtab *s, Elf *elf)
{
	size_t n;

	if (elf_getphdrnum(elf, &n) < 0 || n == 0)
		return 0; /* no segments: nothing maps, lookups fail */
	if (n > SYMTAB_MAX_LOADS)
		n = SYMTAB_MAX_LOADS;
	s->loads = calloc(n, sizeof(*s->loads));
	if (!s->loads)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || ph.p_filesz == 0)
			continue;
		s->loads[s->nloads++] = (struct symtab_load){
			.off = ph.p_offset,
			.filesz = ph.p_filesz,
			.vaddr = ph.p_vaddr,
		};
	}
	return 0;
}

/* ---- separate debuginfo ---- */

struct debug_want {
	const struct elf_file *main;
	const uint8_t *build_id;
	size_t build_id_len;
	const struct elf_info *info;
};

__attribute__((format(printf, 3, 4))) static int path_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int file_crc32(int fd, uint32_t *out)
{
	const size_t chunk = 1 << 16;
	unsigned char *buf = malloc(chunk);
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t pos = 0;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r = pread(fd, buf, chunk, pos);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		crc = crc32(crc, buf, (uInt)r);
		pos += r;
	}
	free(buf);
	if (err == 0)
		*out = (uint32_t)crc;
	return err;
}

/*
 * Open @path as the debuginfo of @w->main if it is one. @by_link: found by
 * the debuglink name, which anyone can reuse, so it must match by build-id
 * or by CRC.
 */
static int debug_try(struct elf_file *out, const char *path, const struct debug_want *w,
		     bool by_link, struct elf_info *info)
{
	struct elf_file f = ELF_FILE_INIT;
	uint8_t bid[SYMTAB_MAX_BUILD_ID];
	GElf_Ehdr meh, deh;
	size_t blen;
	int err;

	err = elf_file_open(&f, path);
	if (err < 0)
		return err;
	err = -ENOENT;
	if (f.st.st_dev == w->main->st.st_dev && f.st.st_ino == w->main->st.st_ino)
		goto out_close; /* a debuglink naming the file itself */
	if (!gelf_getehdr(w->main->elf, &meh) || !gelf_getehdr(f.elf, &deh) ||
	    meh.e_ident[EI_CLASS] != deh.e_ident[EI_CLASS] || meh.e_machine != deh.e_machine)
		goto out_close;
	blen = elf_build_id(f.elf, bid);
	if (w->build_id_len > 0 && blen > 0) {
		if (blen != w->build_id_len || memcmp(bid, w->build_id, blen) != 0)
			goto out_close;
	} else if (by_link) {
		uint32_t crc = 0;

		if (file_crc32(f.fd, &crc) < 0 || crc != w->info->link_crc)
			goto out_close;
	}
	elf_scan(f.elf, info);
	if (!info->symtab && !info->has_dwarf)
		goto out_close;
	*out = f;
	return 0;

out_close:
	elf_file_close(&f);
	return err;
}

/*
 * Find separate debuginfo for @path: by build-id, then by debuglink. On
 * success @out is open, @info describes it and @found holds its path.
 */
static int debug_find(struct elf_file *out, struct elf_info *info, char *found, size_t size,
		      const char *path, const char *debug_root, const struct debug_want *w)
{
	const char *slash = strrchr(path, '/'), *indir;
	size_t rootlen = strlen(debug_root);
	char dir[PATH_MAX];
	int err;

	if (w->build_id_len >= 2) {
		char hex[2 * SYMTAB_MAX_BUILD_ID + 1];

		for (size_t i = 0; i < w->build_id_len; i++)
			snprintf(hex + 2 * i, 3, "%02x", w->build_id[i]);
		if (path_fmt(found, size, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", debug_root, hex,
			     hex + 2) == 0 &&
		    debug_try(out, found, w, false, info) == 0)
			return 0;
	}
	if (!w->info->has_link)
		return -ENOENT;

	if (!slash)
		err = path_fmt(dir, sizeof(dir), ".");
	else
		err = path_fmt(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (err < 0)
		return err;
	if (path_fmt(found, size, "%s/%s", dir, w->info->link) == 0 &&
	    debug_try(out, found, w, true, info) == 0)
		return 0;
	if (path_fmt(found, size, "%s/.debug/%s", dir, w->info->link) == 0 &&
	    debug_try(out, found, w, true, info) == 0)
		return 0;
	/* /usr/lib/debug mirrors the directory as seen inside the root */
	if (path[0] != '/')
		return -ENOENT;
	while (rootlen > 0 && debug_root[rootlen - 1] == '/')
		rootlen--;
	indir = dir;
	if (rootlen > 0 && strncmp(dir, debug_root, rootlen) == 0 &&
	    (dir[rootlen] == '/' || dir[rootlen] == '\0'))
		indir = dir + rootlen;
	if (path_fmt(found, size, "%.*s/usr/lib/debug%s/%s", (int)rootlen, debug_root, indir,
		     w->info->link) == 0 &&
	    debug_try(out, found, w, true, info) == 0)
		return 0;
	return -ENOENT;
}

/* ---- public ---- */

struct symtab *symtab_open(const char *path, const char *debug_root)
{
	struct elf_file mf = ELF_FILE_INIT, df = ELF_FILE_INIT;
	struct elf_info minfo, dinfo;
	struct builder b = { 0 };
	uint8_t bid[SYMTAB_MAX_BUILD_ID];
	struct symtab *s;
	size_t blen;
	long added = 0;
	int err;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	if (!debug_root)
		debug_root = "";
	(void)elf_version(EV_CURRENT);
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->dwarf_fd = -1;
	s->dwarf_cache_fd = -1;
	s->source = "none";

	err = elf_file_open(&mf, path);
	if (err < 0)
		goto err_free;
	err = read_loads(s, mf.elf);
	if (err < 0)
		goto err_close;
	blen = elf_build_id(mf.elf, bid);
	for (size_t i = 0; i < blen; i++)
		snprintf(s->build_id + 2 * i, 3, "%02x", bid[i]);
	elf_scan(mf.elf, &minfo);

	added = add_symbols(&b, mf.elf, minfo.symtab, 0);
	if (added < 0) {
		err = (int)added;
		goto err_close;
	}
	if (added > 0)
		s->source = "symtab";
	if (added == 0 || !minfo.has_dwarf) {
		const struct debug_want w = {
			.main = &mf, .build_id = bid, .build_id_len = blen, .info = &minfo
		};
		char dpath[PATH_MAX];

		if (debug_find(&df, &dinfo, dpath, sizeof(dpath), path, debug_root, &w) == 0) {
			if (added == 0) {
				added = add_symbols(&b, df.elf, dinfo.symtab, 0);
				if (added < 0) {
					err = (int)added;
					goto err_close;
				}
				if (added > 0)
					s->source = "debuginfo";
			}
			if (!minfo.has_dwarf && dinfo.has_dwarf && !(s->dwarf_path = strdup(dpath))) {
				err = -ENOMEM;
				goto err_close;
			}
		}
	}
	if (minfo.has_dwarf && !(s->dwarf_path = strdup(path))) {
		err = -ENOMEM;
		goto err_close;
	}
	/* exported functions fill what the better source lacks */
	added = add_symbols(&b, mf.elf, minfo.dynsym, 1);
	if (added < 0) {
		err = (int)added;
		goto err_close;
	}
	if (added > 0 && strcmp(s->source, "none") == 0)
		s->source = "dynsym";
	err = add_plt(&b, mf.elf);
	if (err < 0)
		goto err_close;
	err = read_fdes(s, mf.elf);
	if (err < 0)
		goto err_close;
	builder_fix_owned(&b);
	err = symtab_finish(s, &b);
	if (err < 0)
		goto err_close;
	free(b.v);
	free(b.owned);
	elf_file_close(&df);
	elf_file_close(&mf);
	return s;

err_close:
	free(b.v);
	free(b.owned);
	elf_file_close(&df);
	elf_file_close(&mf);
err_free:
	symtab_free(s);
	errno = -err;
	return NULL;
}

void symtab_free(struct symtab *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ncus; i++) {
		free(s->cus[i].v);
		free(s->cus[i].maxhi);
	}
	free(s->cus);
	if (s->dwarf)
		dwarf_end(s->dwarf);
	if (s->dwarf_elf)
		elf_end(s->dwarf_elf);
	if (s->dwarf_cache_fd >= 0)
		close(s->dwarf_cache_fd);
	if (s->dwarf_fd >= 0)
		close(s->dwarf_fd);
	free(s->dwarf_path);
	free(s->syms);
	free(s->names);
	free(s->loads);
	free(s->fde_start);
	free(s->fde_end);
	free(s);
}

int symtab_off_to_vaddr(const struct symtab *s, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; s && i < s->nloads; i++) {
		const struct symtab_load *l = &s->loads[i];

		if (off >= l->off && off - l->off < l->filesz) {
			*vaddr = off - l->off + l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int symtab_vaddr_to_off(const struct symtab *s, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; s && i < s->nloads; i++) {
		const struct symtab_load *l = &s->loads[i];

		/* past p_filesz is .bss: memory with no file bytes behind it */
		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz) {
			*off = vaddr - l->vaddr + l->off;
			return 0;
		}
	}
	return -ENOENT;
}

int symtab_lookup(const struct symtab *s, uint64_t off, const char **name, uint64_t *sym_off)
{
	size_t lo = 0, hi;
	uint64_t vaddr;

	if (!s || s->nsyms == 0 || symtab_off_to_vaddr(s, off, &vaddr) < 0)
		return -ENOENT;
	/* lo = number of symbols starting at or below vaddr */
	hi = s->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
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
	size_t n = elf_build_id(elf, bid);

	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	hex[2 * n] = '\0';
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

/* The file of dwarf_path again (maybe inside a container's root), by the
 * same rules as elf_file_open(). An fd or -errno. */
static int dwarf_file_open(const char *path)
{
	return rootfs_open_path(path, ROOTFS_ELF_MAX, NULL);
}

static Dwarf *symtab_dwarf(struct symtab *s)
{
	if (s->dwarf || s->dwarf_failed || !s->dwarf_path)
		return s->dwarf;
	if (s->dwarf_fd < 0)
		s->dwarf_fd = dwarf_file_open(s->dwarf_path);
	if (s->dwarf_fd >= 0 && dwarf_from_cache(s) < 0)
		s->dwarf = dwarf_begin(s->dwarf_fd, DWARF_C_READ);
	if (!s->dwarf) {
		/* remembered: a file that failed once is not re-read per sample */
		s->dwarf_failed = true;
		if (s->dwarf_fd >= 0)
			close(s->dwarf_fd);
		s->dwarf_fd = -1;
	}
	return s->dwarf;
}

bool symtab_dwarf_cached(const struct symtab *s)
{
	return s && s->dwarf_cached;
}

int symtab_hold_dwarf(struct symtab *s)
{
	if (!s || !s->dwarf_path || s->dwarf || s->dwarf_failed || s->dwarf_fd >= 0)
		return 0;
	s->dwarf_fd = dwarf_file_open(s->dwarf_path);
	return s->dwarf_fd < 0 ? s->dwarf_fd : 0;
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
	if (s->ncus == s->capcus) {
		size_t nc = s->capcus ? s->capcus * 2 : 16;
		struct cu_index *nv = realloc(s->cus, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		s->cus = nv;
		s->capcus = nc;
	}
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
	size_t lo = 0, hi = ci->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ci->v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
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

int symtab_find(const struct symtab *s, const char *name, uint64_t *off)
{
	if (!s || !name)
		return -ENOENT;
	/* sorted by address, not name: a probe is resolved once, a scan is fine */
	for (size_t i = 0; i < s->nsyms; i++) {
		if (strcmp(s->names + s->syms[i].name, name) == 0)
			return symtab_vaddr_to_off(s, s->syms[i].addr, off);
	}
	return -ENOENT;
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

/* ---- kernel symbols ---- */

/*
 * /proc/kallsyms is about 120k lines that the kernel formats anew on every
 * read: some 35 ms of kernel CPU on a small VM, the floor of any reader.
 * Our side is kept small: one read into one buffer, each kept name moved
 * down in place so the buffer becomes the name arena, no per-line stdio.
 * The vmlinux part comes out in address order, so only runs of aliases at
 * one address are ranked; a full sort happens only when module symbols
 * come unsorted.
 *
 * The vmlinux ("core") symbols cannot change before the next boot, so the
 * first reader of a boot writes them, sorted and deduplicated in the
 * in-memory layout, to the symbolization cache as kallsyms-<boot_id>; later
 * readers map that file and skip /proc/kallsyms. Module, BPF and ftrace
 * symbols can come and go at any time: an address outside the core range
 * sends the lookup to a live read of /proc/kallsyms (once per ksyms), so
 * the answers are those of a live read in every case.
 */

#define KSYMS_LINE_MAX 1024	/* KSYM_NAME_LEN is 512, plus address and module */
#define KSYMS_MAX (4u << 20)	/* far above any kernel (~200k text symbols) */
#define KSYMS_MAX_MODULES 65535 /* module index is 16 bits */
#define KSYMS_LAST_SPAN (1u << 20) /* the last symbol has no successor to end it */
#define KSYMS_MAX_FILE (512u << 20) /* /proc/kallsyms is ~6 MB */
#define KSYMS_LIVE "/proc/kallsyms"
#define KSYMS_BOOT_ID "/proc/sys/kernel/random/boot_id"
#define KSYMS_BOOT_ID_LEN 36

struct ksym {
	uint64_t addr;
	uint32_t name;	 /* offset into names */
	uint16_t module; /* 0: vmlinux, else modules[module - 1] */
	uint8_t rank;	 /* T, W, t, w: lower wins among aliases */
	uint8_t unders;
};

struct ksyms {
	struct ksym *syms;
	size_t n;
	char *names;
	size_t names_len;
	uint32_t *modules; /* offsets into names */
	size_t nmodules;
	bool hidden; /* kptr_restrict: every address read as 0 */
	/* from the cache: core symbols only, syms and names inside map */
	void *map;
	size_t map_len;
	char *live_path; /* set for a core-only table: where the rest is */
	struct ksyms *live;
	bool live_tried;
};

/* The cache file: this header, nsyms struct ksym, then the name arena. */
#define KSYMS_CACHE_MAGIC "CGPKSYM1"
struct ksyms_cache_hdr {
	char magic[8];
	uint32_t sym_size; /* sizeof(struct ksym): the layout is this build's */
	uint32_t reserved;
	uint64_t nsyms, names_len;
	char boot_id[40];
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

struct ksyms_line {
	uint64_t addr;
	char type;
	const char *name, *module;
	size_t name_len, module_len;
};

/* "ffffffff810001c0 T name\t[module]" in [p, e); false for anything else */
static bool ksyms_parse(const char *p, const char *e, struct ksyms_line *l)
{
	int digits = 0, v;

	memset(l, 0, sizeof(*l));
	for (; p < e && (v = hexval(*p)) >= 0; p++) {
		if (++digits > 16)
			return false;
		l->addr = l->addr << 4 | (uint64_t)v;
	}
	if (digits == 0 || e - p < 3 || p[0] != ' ' || p[1] == '\0' || p[2] != ' ')
		return false;
	l->type = p[1];
	p += 3;
	l->name = p;
	while (p < e && *p && *p != '\t' && *p != ' ')
		p++;
	l->name_len = (size_t)(p - l->name);
	if (l->name_len == 0)
		return false;
	while (p < e && (*p == '\t' || *p == ' '))
		p++;
	if (p < e && *p == '[') {
		const char *end = memchr(p, ']', (size_t)(e - p));

		if (!end || end == p + 1)
			return false;
		l->module = p + 1;
		l->module_len = (size_t)(end - p - 1);
	}
	return true;
}

/*
 * Move @len bytes at @s (at or after the arena's end, inside the same
 * buffer) to the end of the arena and terminate them.
 */
static uint32_t ksyms_keep_name(struct ksyms *k, const char *s, size_t len)
{
	uint32_t off = (uint32_t)k->names_len;

	memmove(k->names + k->names_len, s, len);
	k->names[k->names_len + len] = '\0';
	k->names_len += len + 1;
	return off;
}

/* Index for module @s (1-based), reusing one already seen. */
static int ksyms_module(struct ksyms *k, const char *s, size_t len, uint16_t *idx)
{
	/* kallsyms lists a module's symbols together: check the newest first */
	for (size_t i = k->nmodules; i > 0; i--) {
		const char *m = k->names + k->modules[i - 1];

		if (strncmp(m, s, len) == 0 && m[len] == '\0') {
			*idx = (uint16_t)i;
			return 0;
		}
	}
	if (k->nmodules >= KSYMS_MAX_MODULES)
		return -E2BIG;
	if (k->nmodules % 64 == 0) {
		uint32_t *nm = realloc(k->modules, (k->nmodules + 64) * sizeof(*nm));

		if (!nm)
			return -ENOMEM;
		k->modules = nm;
	}
	k->modules[k->nmodules++] = ksyms_keep_name(k, s, len);
	*idx = (uint16_t)k->nmodules;
	return 0;
}

/* aliases at one address sort best first: T before W before t before w */
static int ksym_cmp(const void *pa, const void *pb, void *arena)
{
	const struct ksym *a = pa, *b = pb;
	const char *names = arena, *na = names + a->name, *nb = names + b->name;
	size_t la, lb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->unders != b->unders)
		return a->unders < b->unders ? -1 : 1;
	la = strlen(na);
	lb = strlen(nb);
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(na, nb);
}

/* Whole file into a NUL-terminated buffer (procfs sizes are unknown). */
static int read_whole(const char *path, char **out, size_t *out_len)
{
	size_t cap = 1u << 20, len = 0;
	char *buf = NULL;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (len == cap) {
			char *nb;

			if (cap >= KSYMS_MAX_FILE) {
				err = -EFBIG;
				break;
			}
			nb = realloc(buf, cap * 2 + 1);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = errno == EAGAIN ? -EIO : -errno;
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (err < 0) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}

static int ksyms_push(struct ksyms *k, size_t *cap, const struct ksym *sym)
{
	if (k->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 4096;
		struct ksym *nv = realloc(k->syms, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		k->syms = nv;
		*cap = ncap;
	}
	k->syms[k->n++] = *sym;
	return 0;
}

/* Keep the best-ranked name of each address; @sorted: by address already. */
static void ksyms_settle(struct ksyms *k, bool sorted)
{
	size_t n = 0;

	if (!sorted) {
		qsort_r(k->syms, k->n, sizeof(*k->syms), ksym_cmp, k->names);
		for (size_t i = 0; i < k->n; i++)
			if (n == 0 || k->syms[n - 1].addr != k->syms[i].addr)
				k->syms[n++] = k->syms[i];
		k->n = n;
		return;
	}
	for (size_t i = 0; i < k->n; i++) {
		if (n > 0 && k->syms[n - 1].addr == k->syms[i].addr) {
			if (ksym_cmp(&k->syms[i], &k->syms[n - 1], k->names) < 0)
				k->syms[n - 1] = k->syms[i];
			continue;
		}
		k->syms[n++] = k->syms[i];
	}
	k->n = n;
}

/* Parse a kallsyms-format file (text symbols only). NULL + errno. */
static struct ksyms *ksyms_read(const char *path)
{
	bool any_nonzero = false, sorted = true;
	size_t len = 0, cap = 0;
	const char *p, *end;
	struct ksyms *k;
	char *buf = NULL;
	int err;

	err = read_whole(path, &buf, &len);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		free(buf);
		errno = ENOMEM;
		return NULL;
	}
	k->names = buf;
	/* the arena grows from the buffer's start, never past the line read */
	for (p = buf, end = buf + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *t;
		struct ksym sym = { 0 };
		struct ksyms_line l;

		bool ok = (size_t)(le - p) < KSYMS_LINE_MAX - 1 && ksyms_parse(p, le, &l);

		p = nl ? nl + 1 : end;
		if (!ok)
			continue;
		if (l.addr != 0)
			any_nonzero = true;
		if (!(t = memchr("TWtw", l.type, 4)))
			continue;
		if (k->n >= KSYMS_MAX)
			break;
		sym.addr = l.addr;
		sym.rank = (uint8_t)(t - "TWtw");
		while (sym.unders < l.name_len && sym.unders < 255 && l.name[sym.unders] == '_')
			sym.unders++;
		/* the name first: the module follows it in the line */
		sym.name = ksyms_keep_name(k, l.name, l.name_len);
		if (l.module && (err = ksyms_module(k, l.module, l.module_len, &sym.module)) < 0) {
			if (err == -E2BIG)
				break;
			goto err_free;
		}
		if (k->n > 0 && sym.addr < k->syms[k->n - 1].addr)
			sorted = false;
		err = ksyms_push(k, &cap, &sym);
		if (err < 0)
			goto err_free;
	}
	k->hidden = k->n > 0 && !any_nonzero;
	if (k->n > 0 && !k->hidden)
		ksyms_settle(k, sorted);
	/* give back the slack; failure keeps the old block */
	if (k->n) {
		struct ksym *syms = realloc(k->syms, k->n * sizeof(*k->syms));

		if (syms)
			k->syms = syms;
	}
	if (k->names_len) {
		char *names = realloc(k->names, k->names_len);

		if (names)
			k->names = names;
	}
	return k;

err_free:
	ksyms_free(k);
	errno = -err;
	return NULL;
}

static int write_all(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len > 0) {
		ssize_t w = write(fd, c, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		len -= (size_t)w;
	}
	return 0;
}

static void ksyms_cache_name(char *buf, size_t size, const char *boot_id)
{
	snprintf(buf, size, "kallsyms-%s", boot_id);
}

/* Write the core symbols of @k for boot @boot_id; best effort. */
static void ksyms_cache_store(const struct ksyms *k, const char *dir, const char *boot_id)
{
	struct ksyms_cache_hdr h = { .magic = KSYMS_CACHE_MAGIC, .sym_size = sizeof(struct ksym) };
	char name[64], tmp[PATH_MAX];
	struct ksym *core;
	size_t m = 0;
	int fd, err;

	if (k->hidden || k->n == 0 || k->names_len == 0)
		return;
	core = malloc(k->n * sizeof(*core));
	if (!core)
		return;
	for (size_t i = 0; i < k->n; i++)
		if (k->syms[i].module == 0)
			core[m++] = k->syms[i];
	ksyms_cache_name(name, sizeof(name), boot_id);
	if (m == 0 || (fd = symcache_create(dir, name, tmp, sizeof(tmp))) < 0) {
		free(core);
		return;
	}
	h.nsyms = m;
	h.names_len = k->names_len;
	memcpy(h.boot_id, boot_id, KSYMS_BOOT_ID_LEN);
	err = write_all(fd, &h, sizeof(h));
	if (!err)
		err = write_all(fd, core, m * sizeof(*core));
	if (!err)
		err = write_all(fd, k->names, k->names_len);
	free(core);
	if (err) {
		symcache_abort(fd, tmp);
		return;
	}
	if (symcache_commit(fd, tmp, dir, name) == 0)
		symcache_trim(dir, "kallsyms-", name, 0); /* earlier boots */
}

/* Map the cache entry for @boot_id; NULL when missing or not valid. */
static struct ksyms *ksyms_cache_load(const char *dir, const char *boot_id)
{
	const struct ksyms_cache_hdr *h;
	struct ksyms *k = NULL;
	char name[64];
	struct stat st;
	void *map;
	uint64_t body;
	int fd;

	ksyms_cache_name(name, sizeof(name), boot_id);
	fd = symcache_open(dir, name);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(*h) || st.st_size > KSYMS_MAX_FILE) {
		close(fd);
		return NULL;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	h = map;
	body = (uint64_t)st.st_size - sizeof(*h);
	if (memcmp(h->magic, KSYMS_CACHE_MAGIC, sizeof(h->magic)) != 0 ||
	    h->sym_size != sizeof(struct ksym) || memcmp(h->boot_id, boot_id, KSYMS_BOOT_ID_LEN) ||
	    h->nsyms == 0 || h->nsyms > KSYMS_MAX || h->names_len == 0 ||
	    h->names_len > UINT32_MAX || h->nsyms * sizeof(struct ksym) > body ||
	    body - h->nsyms * sizeof(struct ksym) != h->names_len)
		goto out_unmap;
	k = calloc(1, sizeof(*k));
	if (!k)
		goto out_unmap;
	k->map = map;
	k->map_len = (size_t)st.st_size;
	k->syms = (struct ksym *)((char *)map + sizeof(*h));
	k->n = h->nsyms;
	k->names = (char *)(k->syms + k->n);
	k->names_len = h->names_len;
	/* what a live read guarantees, checked before any lookup trusts it */
	if (k->names[k->names_len - 1] != '\0')
		goto out_free;
	for (size_t i = 0; i < k->n; i++) {
		const struct ksym *s = &k->syms[i];

		if (s->name >= k->names_len || s->module != 0 || s->rank > 3 ||
		    (i > 0 && s->addr <= k->syms[i - 1].addr) || s->addr == 0)
			goto out_free;
	}
	return k;

out_free:
	free(k);
out_unmap:
	munmap(map, (size_t)st.st_size);
	return NULL;
}

static int read_boot_id(char *out)
{
	char buf[64];
	ssize_t r;
	int fd = open(KSYMS_BOOT_ID, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r < KSYMS_BOOT_ID_LEN)
		return -EINVAL;
	for (int i = 0; i < KSYMS_BOOT_ID_LEN; i++)
		if (!isxdigit((unsigned char)buf[i]) && buf[i] != '-')
			return -EINVAL;
	memcpy(out, buf, KSYMS_BOOT_ID_LEN);
	out[KSYMS_BOOT_ID_LEN] = '\0';
	return 0;
}

struct ksyms *ksyms_load_cached(const char *path, const char *cache_dir, const char *boot_id)
{
	struct ksyms *k;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	if (!cache_dir || !boot_id || strlen(boot_id) != KSYMS_BOOT_ID_LEN || strchr(boot_id, '/'))
		return ksyms_read(path);
	k = ksyms_cache_load(cache_dir, boot_id);
	if (k) {
		k->live_path = strdup(path);
		if (k->live_path)
			return k;
		ksyms_free(k);
	}
	k = ksyms_read(path);
	if (k)
		ksyms_cache_store(k, cache_dir, boot_id);
	return k;
}

struct ksyms *ksyms_load(const char *path)
{
	char boot_id[KSYMS_BOOT_ID_LEN + 1];

	if (path && !strcmp(path, KSYMS_LIVE) && read_boot_id(boot_id) == 0)
		return ksyms_load_cached(path, symcache_dir(), boot_id);
	return ksyms_load_cached(path, NULL, NULL);
}

size_t ksyms_count(const struct ksyms *k)
{
	return k && !k->hidden ? k->n : 0;
}

bool ksyms_cached(const struct ksyms *k)
{
	return k && k->map;
}

static const char *ksyms_find(const struct ksyms *k, uint64_t addr, const char **module)
{
	size_t lo = 0, hi;
	const struct ksym *sym;

	if (k->hidden || k->n == 0)
		return NULL;
	hi = k->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	sym = &k->syms[lo - 1];
	if (lo == k->n && addr - sym->addr >= KSYMS_LAST_SPAN)
		return NULL;
	if (module)
		*module = sym->module ? k->names + k->modules[sym->module - 1] : NULL;
	return k->names + sym->name;
}

const char *ksyms_lookup(struct ksyms *k, uint64_t addr, const char **module)
{
	if (!k)
		return NULL;
	/* past the last core symbol or before the first: modules, BPF, ftrace */
	if (k->live_path && (addr < k->syms[0].addr || addr >= k->syms[k->n - 1].addr)) {
		if (!k->live_tried) {
			k->live_tried = true;
			k->live = ksyms_read(k->live_path);
		}
		if (k->live)
			return ksyms_find(k->live, addr, module);
	}
	return ksyms_find(k, addr, module);
}

void ksyms_free(struct ksyms *k)
{
	if (!k)
		return;
	if (k->map) {
		munmap(k->map, k->map_len);
	} else {
		free(k->syms);
		free(k->names);
	}
	free(k->modules);
	free(k->live_path);
	ksyms_free(k->live);
	free(k);
}
