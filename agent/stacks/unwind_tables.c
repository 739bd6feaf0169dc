// SPDX-License-Identifier: MIT
/*
 * Reading one binary's unwind tables (see the essay at the head of
 * unwind.c), a member of its dso (agent/symbols/dso.h, which opened the
 * file and parsed .eh_frame_hdr): its PT_LOAD segments, the .eh_frame
 * bytes kept in one or two 8-byte-aligned regions, and the few words the CFI points at indirectly
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

#include "agent/symbols/dso.h"

/* ---- reading one binary's tables ---- */

/*
 * Read [vaddr, vaddr + size) into a new region, widened to 8-byte alignment.
 * The widening may step outside the segment's file bytes: those read as 0.
 */
static int region_load(struct unwind_tables *t, const struct dso *d, uint64_t vaddr,
		       uint64_t size)
{
	const struct elfobj_load *s = dso_load_at(d, vaddr);
	struct unwind_region *r = &t->reg[t->nreg];
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
	ret = dso_pread(d, r->data + (rlo - lo), rhi - rlo, s->offset + (rlo - s->vaddr));
	if (ret < 0) {
		free(r->data);
		r->data = NULL;
		return ret;
	}
	r->vaddr = lo;
	r->size = hi - lo;
	t->nreg++;
	return 0;
}

/* The segments of @d, checked for what the unwinder handles. */
static int tables_segs(struct unwind_tables *t, const struct dso *d)
{
	const GElf_Ehdr *eh = dso_ehdr(d);
	const struct elfobj_load *l;
	size_t n;
	bool cut;

	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_X86_64)
		return -ENOEXEC;
	l = dso_loads(d, &n, &cut);
	if (cut)
		return n > UNWIND_MAX_LOADS ? -E2BIG : -ENOEXEC;
	if (n > UNWIND_MAX_LOADS)
		return -E2BIG;
	/* Headroom for 8-byte rounding past the end. */
	for (size_t i = 0; i < n; i++)
		if (l[i].vaddr > UINT64_MAX - 16 - l[i].filesz ||
		    l[i].offset > UINT64_MAX - 16 - l[i].filesz)
			return -ENOEXEC;
	t->segs = l;
	t->nsegs = n;
	return 0;
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
	if ((enc & 0x0f) == EH_PE_uleb128 || (enc & 0x0f) == EH_PE_sleb128)
		ret = cfi_leb(c, (enc & 0x0f) == EH_PE_sleb128, &x);
	else if (dso_eh_pe_size(enc))
		ret = cfi_fixed(c, dso_eh_pe_size(enc), &x);
	else
		return -EINVAL;
	if (ret < 0)
		return ret;
	x = dso_eh_pe_extend(enc, x);
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

/* Collect the indirect words of @t's .eh_frame and read them from @d. */
static void tables_slots(struct unwind_tables *t, const struct dso *d, uint64_t eh_vaddr,
			 uint64_t eh_end)
{
	for (size_t k = 0; k < t->nreg; k++) {
		const struct unwind_region *r = &t->reg[k];

		if (eh_vaddr < r->vaddr || eh_vaddr - r->vaddr >= r->size)
			continue;
		if (eh_end > r->vaddr + r->size)
			eh_end = r->vaddr + r->size;
		t->nslots = unwind_cfi_indirect(r->data + (eh_vaddr - r->vaddr), eh_end - eh_vaddr,
						eh_vaddr, t->slot_vaddr, UNWIND_SLOTS);
		break;
	}
	for (size_t i = 0; i < t->nslots; i++) {
		uint64_t v = t->slot_vaddr[i];
		const struct elfobj_load *s = dso_load_at(d, v);
		uint8_t w[8] = { 0 };

		/* Past the file's bytes (.bss) the word is 0, as the loader leaves it. */
		if (s && s->filesz - (v - s->vaddr) >= 8)
			(void)dso_pread(d, w, 8, s->offset + (v - s->vaddr));
		memcpy(&t->slot_val[i], w, 8);
	}
}

static void tables_free(void *p)
{
	struct unwind_tables *t = p;

	if (!t)
		return;
	for (size_t i = 0; i < t->nreg; i++)
		free(t->reg[i].data);
	free(t);
}

/* The dso member: @d's segments, its parsed .eh_frame_hdr, the .eh_frame
 * bytes in one or two regions, the indirect words. */
static int tables_build(struct dso *d, void *arg, void **out)
{
	struct unwind_tables *t = calloc(1, sizeof(*t));
	const struct elfobj_load *hs, *es;
	const struct dso_eh *eh;
	uint64_t lo, hi, eh_end;
	int ret;

	(void)arg;
	if (!t)
		return -ENOMEM;
	ret = tables_segs(t, d);
	if (ret == 0)
		ret = dso_eh_frame(d, &eh);
	if (ret < 0)
		goto out;
	t->hdr_vaddr = eh->hdr_vaddr;
	t->table_vaddr = eh->table_vaddr;
	t->fde_count = eh->fde_count;
	hs = dso_load_at(d, eh->hdr_vaddr);
	es = dso_load_at(d, eh->eh_vaddr);
	ret = -ENOENT;
	if (!es || !hs)
		goto out;
	/* Unknown .eh_frame size (no section headers): up to the end of its segment. */
	eh_end = es->vaddr + es->filesz;
	if (eh->eh_size && eh->eh_size < eh_end - eh->eh_vaddr)
		eh_end = eh->eh_vaddr + eh->eh_size;

	lo = eh->hdr_vaddr < eh->eh_vaddr ? eh->hdr_vaddr : eh->eh_vaddr;
	hi = eh->hdr_vaddr + eh->hdr_size > eh_end ? eh->hdr_vaddr + eh->hdr_size : eh_end;
	if (hs == es && hi - lo <= eh->hdr_size + (eh_end - eh->eh_vaddr) + UNWIND_MERGE_GAP) {
		ret = region_load(t, d, lo, hi - lo);
	} else {
		ret = region_load(t, d, eh->hdr_vaddr, eh->hdr_size);
		if (ret == 0)
			ret = region_load(t, d, eh->eh_vaddr, eh_end - eh->eh_vaddr);
	}
	if (ret == 0)
		tables_slots(t, d, eh->eh_vaddr, eh_end);
out:
	if (ret < 0) {
		tables_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

static const struct dso_member_ops tables_member = {
	.build = tables_build,
	.free = tables_free,
};

int unwind_entry_load(struct unwind_entry *e, const struct unwind_map *m)
{
	static const struct unwind_tables none;
	void *p;
	int ret;

	e->t = &none;
	/* inside the process's root, regular files only; shared with other readers */
	e->dso = dso_open(m->path, m->dev, m->ino);
	if (!e->dso)
		return -errno;
	ret = dso_member(e->dso, &tables_member, NULL, &p);
	if (ret == 0)
		e->t = p;
	return ret;
}
