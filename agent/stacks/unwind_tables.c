// SPDX-License-Identifier: MIT
/*
 * Reading one binary's unwind tables (see the essay at the head of
 * unwind.c): its PT_LOAD segments, .eh_frame_hdr checked and its
 * binary-search table located, the .eh_frame bytes kept in one or two
 * 8-byte-aligned regions, and the few words the CFI points at indirectly
 * (personality routines), read once so libunwind never needs the process.
 * Every byte comes from the file and is checked before use.
 */
#include "agent/stacks/unwind_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gelf.h>
#include <libelf.h>

#include "agent/symbols/elfobj.h"

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

static int elf_scan(const struct elfobj *o, struct unwind_entry *e, struct unwind_elf_info *info)
{
	Elf *elf = o->elf;
	size_t shnum, shstrndx;
	bool have_hdr = false;

	if (o->eh.e_ident[EI_CLASS] != ELFCLASS64 || o->eh.e_machine != EM_X86_64 || o->phdrs_bad)
		return -ENOEXEC;
	if (o->nloads > UNWIND_MAX_LOADS || o->loads_cut)
		return -E2BIG;
	for (size_t i = 0; i < o->nloads; i++) {
		const struct elfobj_load *l = &o->loads[i];

		/* Headroom for 8-byte rounding past the end. */
		if (l->vaddr > UINT64_MAX - 16 - l->filesz || l->offset > UINT64_MAX - 16 - l->filesz)
			return -ENOEXEC;
		e->segs[e->nsegs++] = (struct unwind_seg){
			.offset = l->offset,
			.vaddr = l->vaddr,
			.filesz = l->filesz,
			.exec = l->exec,
		};
	}
	if (o->eh_frame_hdr_size) {
		info->hdr_vaddr = o->eh_frame_hdr_vaddr;
		info->hdr_size = o->eh_frame_hdr_size;
		have_hdr = true;
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

int unwind_entry_load(struct unwind_entry *e, const char *path)
{
	struct unwind_elf_info info = { 0 };
	const struct unwind_seg *hs, *es;
	uint64_t lo, hi, eh_end;
	struct elfobj o;
	int fd, ret;

	/* inside the process's root, regular files only; read on demand */
	ret = elfobj_open(&o, path, ELF_C_READ);
	if (ret < 0)
		return ret;
	fd = o.fd;
	ret = elf_scan(&o, e, &info);
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
	elfobj_close(&o);
	return ret;
}
