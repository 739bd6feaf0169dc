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
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

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

	/* O_NONBLOCK: a FIFO planted at the path must not hang the agent */
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f->fd < 0)
		return -errno;
	if (fstat(f->fd, &f->st) < 0) {
		int err = -errno;

		elf_file_close(f);
		return err;
	}
	if (!S_ISREG(f->st.st_mode)) {
		elf_file_close(f);
		return -ENOEXEC;
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
	qsort(b->v, b->n, sizeof(*b->v), cand_cmp);
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
	if (s->dwarf)
		dwarf_end(s->dwarf);
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

static Dwarf *symtab_dwarf(struct symtab *s)
{
	if (s->dwarf || s->dwarf_failed || !s->dwarf_path)
		return s->dwarf;
	if (s->dwarf_fd < 0)
		s->dwarf_fd = open(s->dwarf_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (s->dwarf_fd >= 0)
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

int symtab_hold_dwarf(struct symtab *s)
{
	if (!s || !s->dwarf_path || s->dwarf || s->dwarf_failed || s->dwarf_fd >= 0)
		return 0;
	s->dwarf_fd = open(s->dwarf_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return s->dwarf_fd < 0 ? -errno : 0;
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

size_t symtab_inlines(struct symtab *s, uint64_t off, const char **names, size_t max)
{
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

#define KSYMS_LINE_MAX 1024	/* KSYM_NAME_LEN is 512, plus address and module */
#define KSYMS_MAX (4u << 20)	/* far above any kernel (~200k text symbols) */
#define KSYMS_MAX_MODULES 65535 /* module index is 16 bits */
#define KSYMS_LAST_SPAN (1u << 20) /* the last symbol has no successor to end it */

struct ksym {
	uint64_t addr;
	uint32_t name;	 /* offset into names */
	uint16_t module; /* 0: vmlinux, else modules[module - 1] */
	uint8_t rank;	 /* T, W, t, w: lower wins among aliases */
	uint8_t unders;
};

struct ksyms {
	struct ksym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	uint32_t *modules; /* offsets into names */
	size_t nmodules;
	bool hidden; /* kptr_restrict: every address read as 0 */
};

static int ksyms_name(struct ksyms *k, const char *s, size_t len, uint32_t *off)
{
	if (k->names_len + len + 1 > UINT32_MAX)
		return -E2BIG;
	if (k->names_len + len + 1 > k->names_cap) {
		size_t ncap = k->names_cap ? k->names_cap * 2 : 1 << 16;
		char *nn;

		while (ncap < k->names_len + len + 1)
			ncap *= 2;
		nn = realloc(k->names, ncap);
		if (!nn)
			return -ENOMEM;
		k->names = nn;
		k->names_cap = ncap;
	}
	memcpy(k->names + k->names_len, s, len);
	k->names[k->names_len + len] = '\0';
	*off = (uint32_t)k->names_len;
	k->names_len += len + 1;
	return 0;
}

/* Index for module @s (1-based), reusing one already seen. */
static int ksyms_module(struct ksyms *k, const char *s, size_t len, uint16_t *idx)
{
	uint32_t off;
	int err;

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
	err = ksyms_name(k, s, len, &off);
	if (err < 0)
		return err;
	k->modules[k->nmodules++] = off;
	*idx = (uint16_t)k->nmodules;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

struct ksyms_line {
	uint64_t addr;
	char type;
	const char *name, *module;
	size_t name_len, module_len;
};

/* "ffffffff810001c0 T name\t[module]"; false for anything else */
static bool ksyms_parse(const char *p, struct ksyms_line *l)
{
	int digits = 0, v;

	memset(l, 0, sizeof(*l));
	for (; (v = hexval(*p)) >= 0; p++) {
		if (++digits > 16)
			return false;
		l->addr = l->addr << 4 | (uint64_t)v;
	}
	if (digits == 0 || *p != ' ' || p[1] == '\0' || p[2] != ' ')
		return false;
	l->type = p[1];
	p += 3;
	l->name = p;
	while (*p && *p != '\t' && *p != ' ' && *p != '\n')
		p++;
	l->name_len = (size_t)(p - l->name);
	if (l->name_len == 0)
		return false;
	while (*p == '\t' || *p == ' ')
		p++;
	if (*p == '[') {
		const char *end = strchr(p, ']');

		if (!end || end == p + 1)
			return false;
		l->module = p + 1;
		l->module_len = (size_t)(end - p - 1);
	}
	return true;
}

static int ksyms_add(struct ksyms *k, const struct ksyms_line *l)
{
	static const char types[] = "TWtw";
	const char *t = strchr(types, l->type);
	struct ksym sym = { .addr = l->addr };
	int err;

	if (!t || l->type == '\0')
		return 0;
	if (k->n >= KSYMS_MAX)
		return -E2BIG;
	sym.rank = (uint8_t)(t - types);
	while (sym.unders < l->name_len && sym.unders < 255 && l->name[sym.unders] == '_')
		sym.unders++;
	if (l->module) {
		err = ksyms_module(k, l->module, l->module_len, &sym.module);
		if (err < 0)
			return err;
	}
	err = ksyms_name(k, l->name, l->name_len, &sym.name);
	if (err < 0)
		return err;
	if (k->n == k->cap) {
		size_t ncap = k->cap ? k->cap * 2 : 4096;
		struct ksym *nv = realloc(k->syms, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		k->syms = nv;
		k->cap = ncap;
	}
	k->syms[k->n++] = sym;
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

/* Give back the slack of the doubling growth; failure keeps the old block. */
static void ksyms_shrink(struct ksyms *k)
{
	struct ksym *syms = realloc(k->syms, k->n * sizeof(*k->syms));
	char *names = realloc(k->names, k->names_len);

	if (syms) {
		k->syms = syms;
		k->cap = k->n;
	}
	if (names) {
		k->names = names;
		k->names_cap = k->names_len;
	}
}

struct ksyms *ksyms_load(const char *path)
{
	char line[KSYMS_LINE_MAX];
	struct ksyms *k;
	bool any_nonzero = false;
	size_t n = 0;
	FILE *f;
	int err = 0;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	f = fopen(path, "re");
	if (!f)
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k) {
		fclose(f);
		errno = ENOMEM;
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		struct ksyms_line l;

		if (!strchr(line, '\n') && !feof(f)) {
			int c;

			/* over-long: drop the whole line, not just its head */
			while ((c = getc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (!ksyms_parse(line, &l))
			continue;
		if (l.addr != 0)
			any_nonzero = true;
		err = ksyms_add(k, &l);
		if (err == -E2BIG) {
			err = 0;
			break;
		}
		if (err < 0)
			goto err_free;
	}
	if (ferror(f)) {
		err = -EIO;
		goto err_free;
	}
	fclose(f);
	f = NULL;
	k->hidden = k->n > 0 && !any_nonzero;
	if (k->n > 0 && !k->hidden) {
		qsort_r(k->syms, k->n, sizeof(*k->syms), ksym_cmp, k->names);
		for (size_t i = 0; i < k->n; i++)
			if (n == 0 || k->syms[n - 1].addr != k->syms[i].addr)
				k->syms[n++] = k->syms[i];
		k->n = n;
		ksyms_shrink(k);
	}
	return k;

err_free:
	if (f)
		fclose(f);
	ksyms_free(k);
	errno = -err;
	return NULL;
}

size_t ksyms_count(const struct ksyms *k)
{
	return k && !k->hidden ? k->n : 0;
}

const char *ksyms_lookup(const struct ksyms *k, uint64_t addr, const char **module)
{
	size_t lo = 0, hi;
	const struct ksym *sym;

	if (!k || k->hidden || k->n == 0)
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

void ksyms_free(struct ksyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k->modules);
	free(k);
}
