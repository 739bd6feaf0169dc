// SPDX-License-Identifier: MIT
/*
 * Disassembly through capstone (see disasm.h). One capstone handle per
 * call: annotate decodes one function per run, so there is nothing worth
 * keeping between calls, and a handle is not shared between threads.
 *
 * Capstone is loaded (lib/dynlib) by the first call, not linked: the library
 * carries ~77,000 relocations and 1.3 MiB of relocated tables, which every
 * agent command paid at start (about 2 ms and 4 MiB of RSS: record, run
 * and stat alike) for a disassembler only annotate uses. Only the major
 * version of the headers we were built with is accepted (struct cs_insn's
 * layout is theirs).
 */
#include "agent/symbols/disasm.h"

#include <capstone/capstone.h>
#include <pthread.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/dso.h"
#include "lib/dynlib.h"
#include "lib/grow.h"

/* capstone's arch, mode and the unit an undecodable stretch is skipped by. */
#define CS_STR2(x) #x
#define CS_STR(x) CS_STR2(x)
#define CS_SONAME "libcapstone.so." CS_STR(CS_API_MAJOR)

static struct {
	cs_err (*open)(cs_arch arch, cs_mode mode, csh *h);
	cs_err (*option)(csh h, cs_opt_type type, size_t value);
	cs_insn *(*malloc)(csh h);
	bool (*disasm_iter)(csh h, const uint8_t **code, size_t *size, uint64_t *addr,
			    cs_insn *insn);
	void (*free)(cs_insn *insn, size_t count);
	cs_err (*close)(csh *h);
} cs;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;
static bool cs_ok;

static void cs_load(void)
{
	const struct dynlib_sym syms[] = {
		{ "cs_open", (void **)&cs.open },
		{ "cs_option", (void **)&cs.option },
		{ "cs_malloc", (void **)&cs.malloc },
		{ "cs_disasm_iter", (void **)&cs.disasm_iter },
		{ "cs_free", (void **)&cs.free },
		{ "cs_close", (void **)&cs.close },
	};

	cs_ok = dynlib_load(CS_SONAME, syms, sizeof(syms) / sizeof(syms[0]), NULL, 0) == 0;
}

const char *disasm_library(void)
{
	return CS_SONAME;
}

static int arch_of(uint16_t e_machine, cs_arch *arch, cs_mode *mode, size_t *skip)
{
	switch (e_machine) {
	case EM_X86_64:
		*arch = CS_ARCH_X86;
		*mode = CS_MODE_64;
		*skip = 1;
		return 0;
	case EM_AARCH64:
		*arch = CS_ARCH_ARM64;
		*mode = CS_MODE_ARM;
		*skip = 4;
		return 0;
	default:
		return -ENOTSUP;
	}
}

/* An instruction capstone could not decode: its bytes as data. */
static void undecoded(struct disasm_insn *in, const uint8_t *p, size_t skip)
{
	if (skip == 4)
		snprintf(in->text, sizeof(in->text), ".inst 0x%08x",
			 (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 |
				 (unsigned)p[3] << 24);
	else
		snprintf(in->text, sizeof(in->text), ".byte 0x%02x", p[0]);
}

int disasm_bytes(uint16_t e_machine, const uint8_t *code, size_t len, uint64_t addr,
		 struct disasm_insn **out, size_t *n)
{
	struct disasm_insn *v = NULL;
	size_t nv = 0, cap = 0, skip;
	cs_insn *ci = NULL;
	csh h = 0;
	cs_arch arch;
	cs_mode mode;
	int err;

	if ((err = arch_of(e_machine, &arch, &mode, &skip)))
		return err;
	if (!len)
		return -EINVAL;
	if (len > DISASM_MAX_BYTES)
		return -EFBIG;
	pthread_once(&cs_once, cs_load);
	if (!cs_ok)
		return -ELIBACC;
	if (cs.open(arch, mode, &h) != CS_ERR_OK)
		return -ENOMEM;
	if (arch == CS_ARCH_X86)
		cs.option(h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	if (!(ci = cs.malloc(h))) {
		err = -ENOMEM;
		goto out;
	}
	const uint8_t *p = code;
	size_t left = len;
	uint64_t at = addr;

	while (left) {
		struct disasm_insn *in;

		if (GROW_ARRAY(v, nv, cap, 256) < 0) {
			err = -ENOMEM;
			goto out;
		}
		in = &v[nv++];
		in->addr = at;
		if (cs.disasm_iter(h, &p, &left, &at, ci)) {
			in->size = ci->size;
			snprintf(in->text, sizeof(in->text), "%s%s%s", ci->mnemonic,
				 ci->op_str[0] ? " " : "", ci->op_str);
			continue;
		}
		/* a tail shorter than the unit goes byte by byte */
		size_t k = skip <= left ? skip : 1;

		undecoded(in, p, k);
		in->size = (uint32_t)k;
		p += k;
		left -= k;
		at += k;
	}
	*out = v;
	*n = nv;
	v = NULL;
out:
	free(v);
	if (ci)
		cs.free(ci, 1);
	cs.close(&h);
	return err;
}

int disasm_dso(struct dso *d, uint64_t off, uint64_t size, struct disasm_insn **out, size_t *n)
{
	uint64_t vaddr;
	uint8_t *buf;
	int err;

	if (!size)
		return -EINVAL;
	if (size > DISASM_MAX_BYTES)
		return -EFBIG;
	if ((err = dso_off_to_vaddr(d, off, &vaddr)) < 0)
		return err;
	if (!(buf = malloc(size)))
		return -ENOMEM;
	err = dso_pread(d, buf, size, off);
	if (!err)
		err = disasm_bytes(dso_ehdr(d)->e_machine, buf, size, vaddr, out, n);
	free(buf);
	return err;
}
