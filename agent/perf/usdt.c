// SPDX-License-Identifier: MIT
/*
 * USDT probes: reading SystemTap SDT notes and their argument specs.
 *
 * A USDT probe is a single NOP that <sys/sdt.h> plants in the code, plus an
 * ELF note that tells a tracer where it is and where its arguments live.
 * Nothing runs at the probe site until a tracer puts a uprobe (an int3) on
 * that NOP; the arguments are then read from the registers and memory of
 * the stopped thread, following the note's argument spec.
 *
 * The note (section .note.stapsdt, owner "stapsdt", type 3) carries three
 * addresses of the file's address size, then three strings:
 *
 *	pc        link-time address of the NOP
 *	base      link-time address of the .stapsdt.base section
 *	semaphore link-time address of a 2-byte counter, 0 if none
 *	"provider\0name\0args\0"
 *
 * Addresses are as linked. If a tool (prelink) later moved the file, the
 * note was not rewritten but .stapsdt.base was, so pc and semaphore are
 * shifted by (sh_addr of .stapsdt.base - base). The kernel wants neither:
 * a uprobe is placed at a FILE OFFSET, which we get from the PT_LOAD
 * segment whose file bytes hold pc.
 *
 * Semaphores. Costly argument preparation is guarded by "if (semaphore)",
 * and the kernel's uprobe increments the counter for as long as the probe
 * is attached (perf_event_attr's ref_ctr_offset). That too is a file
 * offset: of the counter's bytes in the section that holds it (normally
 * .probes, writable PROGBITS), or failing a section, in a PT_LOAD. A
 * semaphore in .bss has no file bytes and cannot be used, so a probe whose
 * semaphore does not resolve is dropped, like one whose pc does not: an
 * attach to it would succeed and never fire.
 *
 * Argument specs are space-separated "SIZE@OPERAND" in AT&T syntax, SIZE
 * being 1, 2, 4 or 8 bytes, negative for a signed type: "-4@%eax" (a
 * register), "8@$42" (a constant), "-4@-20(%rbp)" (memory at register +
 * offset). gcc picks the operand form (constraint "nor"), so any of them
 * can appear for any argument. Not handled, and reported as unparsed:
 * globals ("-4@NBuffers(%rip)", "4@40+sym(%rip)": need the symbol's load
 * address), indexed memory ("(%rax,%rdx,8)"), floats ("8f@%xmm0"), the
 * high-byte registers (%ah). A probe with such an argument is still listed
 * and still usable for counting hits: it gets nargs = 0 and keeps its raw
 * arg_spec, so callers can tell "no arguments" from "arguments we cannot
 * read" and refuse only when an argument is actually asked for.
 *
 * Everything read from the file is hostile until checked: libelf bounds
 * sections by the file size and gelf_getnote() bounds each note by its
 * section; this file checks the descriptor size, string termination and
 * lengths, the characters of names, that computed offsets lie inside the
 * file, and caps the number of probes, segments and sections considered.
 */
#include "agent/perf/usdt.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/symbols/dso.h"
#include "lib/grow.h"

#define USDT_NOTE_OWNER "stapsdt"
#define USDT_NOTE_TYPE 3
#define USDT_MAX_PROBES (1u << 16) /* probes kept per file */
#define USDT_MAX_NAME 255          /* provider or probe name */
#define USDT_MAX_SPEC 1024         /* whole argument string */
#define USDT_MAX_TOKEN 63          /* one argument spec */
#define USDT_MAX_SECTIONS 1024     /* semaphore-capable sections considered */
#define USDT_SEMA_BYTES 2          /* unsigned short */

struct usdt_list {
	struct usdt_probe *probes;
	size_t n, cap;
	size_t skipped;
};

/* [addr, addr + size) of the address space is at file offset off */
struct usdt_range {
	uint64_t addr, size, off;
};

struct usdt_elf {
	struct dso *dso;   /* the binary (not a reference: the caller's) */
	Elf *elf;          /* on the dso's fd, ours */
	uint64_t file_size;
	unsigned addr_bytes; /* 8 for ELFCLASS64, 4 for ELFCLASS32 */
	bool msb;
	bool x86;            /* argument specs are in x86 AT&T syntax */
	struct usdt_range *loads, *secs;
	size_t nloads, nsecs, last_sec;
	bool has_base;
	uint64_t base_addr;  /* sh_addr of .stapsdt.base */
};

/* ---- registers ---- */

/* x86_64 general-purpose registers by width: 8, 4, 2 and 1 byte names. The
 * legacy high bytes (%ah, %bh, %ch, %dh) are absent on purpose: they are
 * bits 8..15, which struct usdt_arg has no shift to express. */
static const struct {
	int reg;
	const char *name[4];
} usdt_regs[] = {
	{ PERF_REG_X86_AX, { "rax", "eax", "ax", "al" } },
	{ PERF_REG_X86_BX, { "rbx", "ebx", "bx", "bl" } },
	{ PERF_REG_X86_CX, { "rcx", "ecx", "cx", "cl" } },
	{ PERF_REG_X86_DX, { "rdx", "edx", "dx", "dl" } },
	{ PERF_REG_X86_SI, { "rsi", "esi", "si", "sil" } },
	{ PERF_REG_X86_DI, { "rdi", "edi", "di", "dil" } },
	{ PERF_REG_X86_BP, { "rbp", "ebp", "bp", "bpl" } },
	{ PERF_REG_X86_SP, { "rsp", "esp", "sp", "spl" } },
	{ PERF_REG_X86_R8, { "r8", "r8d", "r8w", "r8b" } },
	{ PERF_REG_X86_R9, { "r9", "r9d", "r9w", "r9b" } },
	{ PERF_REG_X86_R10, { "r10", "r10d", "r10w", "r10b" } },
	{ PERF_REG_X86_R11, { "r11", "r11d", "r11w", "r11b" } },
	{ PERF_REG_X86_R12, { "r12", "r12d", "r12w", "r12b" } },
	{ PERF_REG_X86_R13, { "r13", "r13d", "r13w", "r13b" } },
	{ PERF_REG_X86_R14, { "r14", "r14d", "r14w", "r14b" } },
	{ PERF_REG_X86_R15, { "r15", "r15d", "r15w", "r15b" } },
	{ PERF_REG_X86_IP, { "rip", "eip", NULL, NULL } },
};

int usdt_reg_lookup(const char *name, int *perf_reg, int *bytes)
{
	static const int widths[4] = { 8, 4, 2, 1 };

	if (!name)
		return -EINVAL;
	if (*name == '%')
		name++;
	for (size_t i = 0; i < sizeof(usdt_regs) / sizeof(usdt_regs[0]); i++) {
		for (size_t w = 0; w < 4; w++) {
			if (usdt_regs[i].name[w] && strcmp(usdt_regs[i].name[w], name) == 0) {
				if (perf_reg)
					*perf_reg = usdt_regs[i].reg;
				if (bytes)
					*bytes = widths[w];
				return 0;
			}
		}
	}
	return -EINVAL;
}

/* ---- argument specs ---- */

static bool usdt_valid_size(int n)
{
	return n == 1 || n == 2 || n == 4 || n == 8;
}

/*
 * An integer as gas reads it: optional '-', then decimal or 0x hex. A
 * leading zero would make gas read octal; gcc never writes one, so "010"
 * is rejected rather than guessed at. Positive values up to 2^64 - 1 are
 * kept modulo 2^64 (an unsigned 8-byte constant), negative ones down to
 * -2^63. Advances *p past the digits.
 */
static int usdt_parse_int(const char **p, int64_t *out)
{
	const char *s = *p;
	bool neg = false, hex = false;
	uint64_t v = 0;
	unsigned base = 10, ndigits = 0;

	if (*s == '-') {
		neg = true;
		s++;
	}
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		hex = true;
		base = 16;
		s += 2;
	}
	for (;; s++, ndigits++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (hex && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (hex && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			return -EINVAL;
		v = v * base + d;
	}
	if (ndigits == 0 || (!hex && ndigits > 1 && (*p)[neg] == '0'))
		return -EINVAL;
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -EINVAL;
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		*out = (int64_t)v;
	}
	*p = s;
	return 0;
}

/* "%reg" up to @end (or the string's end when @end is NULL) */
static int usdt_parse_reg(const char *s, const char *end, int *reg, int *bytes)
{
	char name[8];
	size_t len = end ? (size_t)(end - s) : strlen(s);

	if (len < 2 || s[0] != '%' || s[1] == '%' || len - 1 >= sizeof(name))
		return -EINVAL;
	memcpy(name, s + 1, len - 1);
	name[len - 1] = '\0';
	return usdt_reg_lookup(name, reg, bytes);
}

int usdt_parse_arg(const char *spec, struct usdt_arg *out)
{
	struct usdt_arg a = { .size = 8 };
	const char *at, *s;
	int64_t v;

	if (!spec || !out)
		return -EINVAL;
	at = strchr(spec, '@');
	s = spec;
	if (at) {
		/* the size: [-]1|2|4|8 and nothing else ("8f@" is a float) */
		if (*s == '-') {
			a.is_signed = 1;
			s++;
		}
		if (at - s != 1 || !usdt_valid_size(*s - '0'))
			return -EINVAL;
		a.size = *s - '0';
		s = at + 1;
	}

	if (*s == '%') {
		a.kind = USDT_ARG_REG;
		if (usdt_parse_reg(s, NULL, &a.reg, &a.reg_bytes) < 0)
			return -EINVAL;
	} else if (*s == '$') {
		s++;
		a.kind = USDT_ARG_CONST;
		if (usdt_parse_int(&s, &v) < 0 || *s)
			return -EINVAL;
		a.value = v;
	} else {
		const char *close;

		a.kind = USDT_ARG_MEM;
		if (*s != '(') {
			if (usdt_parse_int(&s, &v) < 0)
				return -EINVAL;
			a.value = v;
		}
		/* "(%reg)" and nothing after: no index, no scale, no symbol */
		close = strchr(s, ')');
		if (*s != '(' || !close || close[1])
			return -EINVAL;
		if (usdt_parse_reg(s + 1, close, &a.reg, &a.reg_bytes) < 0)
			return -EINVAL;
		/* %rip-relative operands name a symbol's link-time address */
		if (a.reg == PERF_REG_X86_IP)
			return -EINVAL;
	}
	*out = a;
	return 0;
}

/* ---- argument values ---- */

static uint64_t usdt_extend(uint64_t v, int bytes, int is_signed)
{
	unsigned shift;

	if (bytes >= 8)
		return v;
	shift = 64 - 8 * (unsigned)bytes;
	v <<= shift;
	if (is_signed)
		return (uint64_t)((int64_t)v >> shift);
	return v >> shift;
}

static bool usdt_arg_ok(const struct usdt_arg *a)
{
	if (!usdt_valid_size(a->size))
		return false;
	switch (a->kind) {
	case USDT_ARG_CONST:
		return true;
	case USDT_ARG_REG:
	case USDT_ARG_MEM:
		return a->reg >= 0 && a->reg < 64 && usdt_valid_size(a->reg_bytes);
	}
	return false;
}

int usdt_arg_value(const struct usdt_arg *a, const uint64_t *regs, uint64_t regs_valid,
		   usdt_read_mem_fn rd, void *ctx, int64_t *out)
{
	uint8_t buf[8];
	uint64_t v;
	int err;

	if (!a || !out || !usdt_arg_ok(a))
		return -EINVAL;
	if (a->kind == USDT_ARG_CONST) {
		*out = (int64_t)usdt_extend((uint64_t)a->value, a->size, a->is_signed);
		return 0;
	}
	if (!(regs_valid & (1ull << a->reg)))
		return -ENOENT;
	if (!regs)
		return -EINVAL;
	v = usdt_extend(regs[a->reg], a->reg_bytes, 0);
	if (a->kind == USDT_ARG_MEM) {
		if (!rd)
			return -EINVAL;
		err = rd(ctx, v + (uint64_t)a->value, buf, (size_t)a->size);
		if (err)
			return err < 0 ? err : -EIO;
		/* the target is x86: little-endian whatever we run on */
		v = 0;
		for (int i = a->size - 1; i >= 0; i--)
			v = v << 8 | buf[i];
	}
	*out = (int64_t)usdt_extend(v, a->size, a->is_signed);
	return 0;
}

/* ---- the ELF file ---- */

static void usdt_elf_close(struct usdt_elf *f)
{
	if (f->elf)
		elf_end(f->elf);
	f->elf = NULL;
	free(f->loads);
	free(f->secs);
}

static int usdt_elf_open(struct usdt_elf *f, struct dso *d)
{
	const GElf_Ehdr *eh = dso_ehdr(d);

	/* The dso was opened inside a /proc/PID/root path's root, regular
	 * files only: a FIFO or a link to a host file planted in a container
	 * is refused (dso.h, elfobj.h). */
	f->dso = d;
	f->elf = dso_elf_begin(d);
	if (!f->elf)
		return -ENOEXEC;
	f->file_size = (uint64_t)dso_stat(d)->st_size;
	switch (eh->e_ident[EI_CLASS]) {
	case ELFCLASS64:
		f->addr_bytes = 8;
		break;
	case ELFCLASS32:
		f->addr_bytes = 4;
		break;
	default:
		return -ENOEXEC;
	}
	f->msb = eh->e_ident[EI_DATA] == ELFDATA2MSB;
	f->x86 = eh->e_machine == EM_X86_64 || eh->e_machine == EM_386;
	return 0;
}

static int usdt_elf_loads(struct usdt_elf *f)
{
	size_t n;
	const struct elfobj_load *l = dso_loads(f->dso, &n, NULL);

	/* no program headers: nothing can be placed */
	f->loads = calloc(n ? n : 1, sizeof(*f->loads));
	if (!f->loads)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		f->loads[f->nloads++] = (struct usdt_range){ l[i].vaddr, l[i].filesz, l[i].offset };
	return 0;
}

/* Semaphore-capable sections and .stapsdt.base; the note sections are
 * read in a second pass, once these are known. */
static int usdt_elf_sections(struct usdt_elf *f, size_t shstrndx)
{
	Elf_Scn *scn = NULL;

	f->secs = calloc(USDT_MAX_SECTIONS, sizeof(*f->secs));
	if (!f->secs)
		return -ENOMEM;
	while ((scn = elf_nextscn(f->elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(f->elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".stapsdt.base") == 0 && !f->has_base) {
			f->has_base = true;
			f->base_addr = sh.sh_addr;
		}
		if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_ALLOC) && sh.sh_size &&
		    f->nsecs < USDT_MAX_SECTIONS)
			f->secs[f->nsecs++] = (struct usdt_range){ sh.sh_addr, sh.sh_size, sh.sh_offset };
	}
	return 0;
}

/* File offset of [addr, addr + len) inside one of @r; 0 if none (offset
 * 0 is the ELF header, never a probe or a semaphore). */
static uint64_t usdt_range_off(const struct usdt_range *r, size_t n, uint64_t addr, uint64_t len,
			       uint64_t file_size, size_t *hint)
{
	for (size_t k = 0; k < n; k++) {
		size_t i = hint ? (*hint + k) % n : k;
		uint64_t in = addr - r[i].addr, off;

		if (addr < r[i].addr || in >= r[i].size || r[i].size - in < len)
			continue;
		off = r[i].off + in;
		if (off < r[i].off || off >= file_size || file_size - off < len)
			continue;
		if (hint)
			*hint = i;
		return off;
	}
	return 0;
}

static uint64_t usdt_read_addr(const struct usdt_elf *f, const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < f->addr_bytes; i++)
		v = v << 8 | p[f->msb ? i : f->addr_bytes - 1 - i];
	return v;
}

/* Providers and names are C identifiers in practice; anything printable
 * but ':' (our "provider:name" separator) and space is let through. */
static bool usdt_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > USDT_MAX_NAME)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == ':')
			return false;
	return true;
}

static bool usdt_spec_ok(const char *s, size_t len)
{
	if (len > USDT_MAX_SPEC)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < ' ' || s[i] > '~')
			return false;
	return true;
}

/* Fill p->args from p->arg_spec; all or nothing (see the top comment). */
static void usdt_parse_args(struct usdt_probe *p)
{
	const char *s = p->arg_spec;
	int n = 0;

	while (*s) {
		char tok[USDT_MAX_TOKEN + 1];
		size_t len;

		while (*s == ' ')
			s++;
		if (!*s)
			break;
		len = strcspn(s, " ");
		if (len > USDT_MAX_TOKEN || n == USDT_MAX_ARGS)
			goto unparsed;
		memcpy(tok, s, len);
		tok[len] = '\0';
		if (usdt_parse_arg(tok, &p->args[n]) < 0)
			goto unparsed;
		n++;
		s += len;
	}
	p->nargs = n;
	return;
unparsed:
	memset(p->args, 0, sizeof(p->args));
	p->nargs = 0;
}

static void usdt_probe_release(struct usdt_probe *p)
{
	free(p->provider);
	free(p->name);
	free(p->arg_spec);
}

/*
 * One note descriptor into @p. -EBADMSG for a malformed descriptor,
 * -ENOENT when the probe or its semaphore has no file offset, -ENOMEM.
 */
static int usdt_parse_note(struct usdt_elf *f, const uint8_t *desc, size_t len,
			   struct usdt_probe *p)
{
	size_t hdr = 3 * (size_t)f->addr_bytes, slen[3];
	const char *str[3];
	const char *s = (const char *)desc + hdr;
	uint64_t pc, base, sema;

	if (len < hdr + 3)
		return -EBADMSG;
	pc = usdt_read_addr(f, desc);
	base = usdt_read_addr(f, desc + f->addr_bytes);
	sema = usdt_read_addr(f, desc + 2 * (size_t)f->addr_bytes);
	len -= hdr;
	for (int i = 0; i < 3; i++) {
		const char *nul = memchr(s, '\0', len);

		if (!nul)
			return -EBADMSG;
		str[i] = s;
		slen[i] = (size_t)(nul - s);
		len -= slen[i] + 1;
		s = nul + 1;
	}
	if (!usdt_name_ok(str[0], slen[0]) || !usdt_name_ok(str[1], slen[1]) ||
	    !usdt_spec_ok(str[2], slen[2]))
		return -EBADMSG;

	/* moved since link time: shift by how far .stapsdt.base moved; an
	 * address-size wrap is what the file's own arithmetic would do */
	if (f->has_base && base) {
		uint64_t delta = f->base_addr - base;

		pc += delta;
		if (sema)
			sema += delta;
		if (f->addr_bytes == 4) {
			pc &= UINT32_MAX;
			sema &= UINT32_MAX;
		}
	}

	memset(p, 0, sizeof(*p));
	p->pc_vaddr = pc;
	p->sema_vaddr = sema;
	p->pc_off = usdt_range_off(f->loads, f->nloads, pc, 1, f->file_size, NULL);
	if (!p->pc_off)
		return -ENOENT;
	if (sema) {
		p->sema_off = usdt_range_off(f->secs, f->nsecs, sema, USDT_SEMA_BYTES, f->file_size,
					     &f->last_sec);
		if (!p->sema_off)
			p->sema_off = usdt_range_off(f->loads, f->nloads, sema, USDT_SEMA_BYTES,
						     f->file_size, NULL);
		if (!p->sema_off)
			return -ENOENT;
	}

	p->provider = strndup(str[0], slen[0]);
	p->name = strndup(str[1], slen[1]);
	p->arg_spec = strndup(str[2], slen[2]);
	if (!p->provider || !p->name || !p->arg_spec) {
		usdt_probe_release(p);
		return -ENOMEM;
	}
	if (f->x86)
		usdt_parse_args(p);
	return 0;
}

static int usdt_list_push(struct usdt_list *l, struct usdt_probe *p)
{
	if (GROW_ARRAY(l->probes, l->n, l->cap, 16) < 0)
		return -ENOMEM;
	l->probes[l->n++] = *p;
	return 0;
}

static int usdt_read_section(struct usdt_list *l, struct usdt_elf *f, Elf_Scn *scn)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d) {
		l->skipped++;
		return 0;
	}
	if (!d->d_buf || !d->d_size)
		return 0;
	while (off < d->d_size && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const uint8_t *buf = d->d_buf;
		struct usdt_probe p;
		int err;

		off = next;
		if (nh.n_type != USDT_NOTE_TYPE || nh.n_namesz != sizeof(USDT_NOTE_OWNER) ||
		    name_off > d->d_size || d->d_size - name_off < nh.n_namesz ||
		    memcmp(buf + name_off, USDT_NOTE_OWNER, sizeof(USDT_NOTE_OWNER)) != 0)
			continue;
		if (desc_off > d->d_size || d->d_size - desc_off < nh.n_descsz) {
			l->skipped++;
			continue;
		}
		if (l->n == USDT_MAX_PROBES) {
			l->skipped++;
			continue;
		}
		err = usdt_parse_note(f, buf + desc_off, nh.n_descsz, &p);
		if (err == -ENOMEM)
			return err;
		if (err) {
			l->skipped++;
			continue;
		}
		err = usdt_list_push(l, &p);
		if (err) {
			usdt_probe_release(&p);
			return err;
		}
	}
	/* a note that runs past the section ends the walk */
	if (off < d->d_size)
		l->skipped++;
	return 0;
}

struct usdt_list *usdt_read(const char *path)
{
	struct dso *d = dso_open(path, 0, 0);
	struct usdt_list *l;
	int err;

	if (!d)
		return NULL;
	l = usdt_read_dso(d);
	err = errno;
	dso_put(d);
	errno = err;
	return l;
}

struct usdt_list *usdt_read_dso(struct dso *d)
{
	struct usdt_elf f = { 0 };
	struct usdt_list *l = NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int err;

	if (!d) {
		errno = EINVAL;
		return NULL;
	}
	err = usdt_elf_open(&f, d);
	if (err)
		goto err_close;
	l = calloc(1, sizeof(*l));
	if (!l) {
		err = -ENOMEM;
		goto err_close;
	}
	/* no section header string table: no section names, so no notes */
	if (elf_getshdrstrndx(f.elf, &shstrndx) != 0)
		goto out;
	err = usdt_elf_loads(&f);
	if (!err)
		err = usdt_elf_sections(&f, shstrndx);
	if (err)
		goto err_close;
	while ((scn = elf_nextscn(f.elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(f.elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt") != 0)
			continue;
		err = usdt_read_section(l, &f, scn);
		if (err)
			goto err_close;
	}
out:
	usdt_elf_close(&f);
	return l;

err_close:
	usdt_elf_close(&f);
	usdt_free(l);
	errno = -err;
	return NULL;
}

void usdt_free(struct usdt_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		usdt_probe_release(&l->probes[i]);
	free(l->probes);
	free(l);
}

size_t usdt_count(const struct usdt_list *l)
{
	return l ? l->n : 0;
}

size_t usdt_skipped(const struct usdt_list *l)
{
	return l ? l->skipped : 0;
}

const struct usdt_probe *usdt_get(const struct usdt_list *l, size_t i)
{
	return l && i < l->n ? &l->probes[i] : NULL;
}

const struct usdt_probe *usdt_find_next(const struct usdt_list *l, const struct usdt_probe *prev,
					const char *provider, const char *name)
{
	size_t i = 0;

	if (!l || !name)
		return NULL;
	if (prev) {
		if (prev < l->probes || prev >= l->probes + l->n)
			return NULL;
		i = (size_t)(prev - l->probes) + 1;
	}
	for (; i < l->n; i++) {
		const struct usdt_probe *p = &l->probes[i];

		if ((!provider || strcmp(p->provider, provider) == 0) && strcmp(p->name, name) == 0)
			return p;
	}
	return NULL;
}

const struct usdt_probe *usdt_find(const struct usdt_list *l, const char *provider,
				   const char *name)
{
	return usdt_find_next(l, NULL, provider, name);
}
