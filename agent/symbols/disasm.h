/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_DISASM_H
#define CGPERF_AGENT_DISASM_H

/*
 * Machine code to instructions, for `annotate`: capstone (a library, so no
 * objdump subprocess is run over files that may come from a container),
 * AT&T syntax on x86_64 as perf annotate shows it through objdump, the
 * usual syntax on aarch64. The bytes are the caller's; a range of a binary
 * is read through its dso (agent/symbols/dso.h), so nothing is opened by
 * path here. Bytes that do not decode become one ".byte 0xNN" each (x86) or
 * one ".inst 0xNNNNNNNN" (aarch64), and decoding goes on after them.
 * Library module: does not print.
 */

#include <stddef.h>
#include <stdint.h>

struct dso;

/* The most bytes decoded at once: a larger symbol is refused (-EFBIG). */
#define DISASM_MAX_BYTES (1u << 20)
#define DISASM_TEXT_MAX 192

struct disasm_insn {
	uint64_t addr;		     /* link-time address */
	uint32_t size;		     /* bytes */
	char text[DISASM_TEXT_MAX];  /* "mnemonic operands", NUL-terminated */
};

/*
 * Decode @len bytes at @code, the first at address @addr, for ELF machine
 * @e_machine (EM_X86_64, EM_AARCH64). On success 0 and a malloc'd array in
 * *@out (*@n instructions; free() it). -ENOTSUP for another machine, -EFBIG
 * over DISASM_MAX_BYTES, -EINVAL for no bytes, -ENOMEM, -ELIBACC when the
 * capstone library (disasm_library(), loaded on first use) is missing.
 */
int disasm_bytes(uint16_t e_machine, const uint8_t *code, size_t len, uint64_t addr,
		 struct disasm_insn **out, size_t *n);

/* The capstone library's file name, for messages ("libcapstone.so.4"). */
const char *disasm_library(void);

/* The same for @size bytes at file offset @off of @d (its machine from its
 * ELF header, the addresses link-time). -ENODATA when the range is not in
 * the file, -ENOENT when it is in no PT_LOAD segment. */
int disasm_dso(struct dso *d, uint64_t off, uint64_t size, struct disasm_insn **out, size_t *n);

#endif
