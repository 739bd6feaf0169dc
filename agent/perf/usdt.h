/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_USDT_H
#define CGPERF_AGENT_USDT_H

/*
 * USDT (SystemTap SDT) probes of an ELF file: the .note.stapsdt notes that
 * <sys/sdt.h> leaves in a binary (PostgreSQL has 72 of them, provider
 * "postgresql"), with their addresses made file-relative, their semaphores
 * located, and their argument specs parsed.
 *
 * A note holds: pc, the address of .stapsdt.base as linked, the semaphore
 * address (0 = none), then "provider\0name\0args\0". If the file was
 * prelinked or its .stapsdt.base moved, pc and semaphore are adjusted by
 * (actual .stapsdt.base sh_addr - base in the note). The uprobe is placed
 * at the FILE OFFSET of pc; the semaphore is given to the uprobe PMU as
 * ref_ctr_offset, also a file offset (of the .probes section data).
 */

#include <stddef.h>
#include <stdint.h>

enum usdt_arg_kind {
	USDT_ARG_CONST, /* "4@$5": value */
	USDT_ARG_REG,   /* "-4@%eax": value of a register */
	USDT_ARG_MEM,   /* "8@-16(%rbp)": memory at reg + off */
};

struct usdt_arg {
	enum usdt_arg_kind kind;
	int size;        /* bytes, 1/2/4/8 */
	int is_signed;
	int64_t value;   /* constant, or offset for MEM */
	int reg;         /* perf register number (PERF_REG_X86_*), for REG/MEM */
	int reg_bytes;   /* width of the named register (%eax: 4, %ax: 2, %al: 1) */
};

#define USDT_MAX_ARGS 12

/*
 * One probe site. nargs == 0 with a non-empty arg_spec means the spec
 * could not be parsed (a form usdt_parse_arg() rejects, such as a global
 * "-4@NBuffers(%rip)"; more than USDT_MAX_ARGS arguments; a non-x86 file):
 * the site can still be attached and counted, but its arguments cannot be
 * read. One provider:name may have several sites (inlined or repeated
 * code); see usdt_find_next().
 */
struct usdt_probe {
	char *provider, *name;
	uint64_t pc_off;   /* file offset of the probe instruction */
	uint64_t sema_off; /* file offset of the semaphore, 0 = none */
	uint64_t pc_vaddr, sema_vaddr; /* after the .stapsdt.base adjustment */
	int nargs;
	struct usdt_arg args[USDT_MAX_ARGS];
	char *arg_spec;    /* raw, for listing */
};

struct usdt_list;

/* All probes of @path, in note order. NULL + errno (ENOENT, ENOEXEC for a
 * non-ELF file, ENOMEM); a file without notes gives an empty list (not an
 * error), so callers can say "no SDT notes in FILE". Notes that are
 * malformed, or whose pc or semaphore has no file offset (an attach would
 * never fire), are left out and counted by usdt_skipped(). The file is
 * opened through its dso (shared when one is open already) and released
 * when this returns; the list owns all its strings. */
struct usdt_list *usdt_read(const char *path);
/* The same from an open binary (agent/symbols/dso.h): nothing is opened
 * again; @d stays the caller's. */
struct dso;
struct usdt_list *usdt_read_dso(struct dso *d);
void usdt_free(struct usdt_list *l);
size_t usdt_count(const struct usdt_list *l);
/* stapsdt notes (or note sections) of the file that were left out */
size_t usdt_skipped(const struct usdt_list *l);
/* Probe @i, NULL when out of range. Owned by @l. */
const struct usdt_probe *usdt_get(const struct usdt_list *l, size_t i);
/* First site of @provider:@name (any provider when @provider is NULL), or
 * NULL. */
const struct usdt_probe *usdt_find(const struct usdt_list *l, const char *provider,
				   const char *name);
/* Next site of @provider:@name after @prev (a probe of @l; NULL = first),
 * or NULL: for (p = usdt_find(l, P, N); p; p = usdt_find_next(l, p, P, N)) */
const struct usdt_probe *usdt_find_next(const struct usdt_list *l, const struct usdt_probe *prev,
					const char *provider, const char *name);

/* Parse one argument spec: "[-]N@%reg", "[-]N@$imm", "[-]N@[OFF](%reg)"
 * (N = 1, 2, 4, 8 bytes, '-' = signed; OFF and imm decimal or 0x hex,
 * possibly negative), or the same without "N@" (8 bytes, unsigned).
 * Rejected: %rip-relative and symbolic operands, index/scale forms,
 * floats ("8f@"), high-byte registers (%ah). @out is written only on
 * success. 0 or -EINVAL. */
int usdt_parse_arg(const char *spec, struct usdt_arg *out);

/* Map an x86_64 register name ("rdi", "%edi", "di", "dil", "r8d", "rip")
 * to its perf register number and width; lower case, one optional '%'.
 * %ah..%dh are rejected (bits 8..15 of a register). 0 or -EINVAL. */
int usdt_reg_lookup(const char *name, int *perf_reg, int *bytes);

/* Value of @a given the sampled user registers (indexed by perf register
 * number, @regs_valid a bitmask) and a memory reader for MEM args; the
 * reader returns 0 or -errno. A register is cut to its named width
 * (reg_bytes), then the value to @a->size bytes, then sign- or zero-
 * extended to 64 bits; memory is read as @a->size little-endian bytes at
 * register + offset. 0, -ENOENT (register not in @regs_valid), -EINVAL
 * (malformed @a, or no @rd for a MEM arg) or the reader's error; @out is
 * written only on success. */
typedef int (*usdt_read_mem_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
int usdt_arg_value(const struct usdt_arg *a, const uint64_t *regs, uint64_t regs_valid,
		   usdt_read_mem_fn rd, void *ctx, int64_t *out);

#endif
