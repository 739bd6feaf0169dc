// SPDX-License-Identifier: MIT
/*
 * Kernel function parameters by name, from BTF (contract in probe_int.h).
 *
 * The kernel describes its own functions in /sys/kernel/btf/vmlinux: a FUNC
 * names a FUNC_PROTO whose parameters have names and types. At a function's
 * first instruction, the x86_64 calling convention puts the first six
 * integer-class parameters in %rdi, %rsi, %rdx, %rcx, %r8, %r9, so a
 * parameter's name gives its register and its type gives the width and
 * signedness to fetch (`tcp_sendmsg(struct sock *sk, struct msghdr *msg,
 * size_t size)`: size is %dx as u64). That is what `perf probe tcp_sendmsg
 * size` does with DWARF; BTF is always there on a kernel built with
 * CONFIG_DEBUG_INFO_BTF (Debian's are), DWARF seldom is.
 *
 * What is refused rather than guessed: a parameter past the sixth (on the
 * stack), one after a struct, union or floating-point parameter (those
 * take other or several registers, and the count would be off), and a
 * parameter that is itself one of those. A function the compiler changed
 * (foo.isra.0) has no BTF entry of that name: refused as "no BTF".
 *
 * libbpf (Debian's libbpf-dev) reads the BTF; without it at build time,
 * probe_btf_open() says so and parameters by name are refused, registers
 * still work.
 */
#include "agent/perf/probe_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef CGPERF_HAVE_LIBBPF
#include <bpf/btf.h>
#endif

static const char *const abi_regs[] = { "di", "si", "dx", "cx", "r8", "r9" };
#define NABI (sizeof(abi_regs) / sizeof(abi_regs[0]))

#ifdef CGPERF_HAVE_LIBBPF

/* A struct probe_btf is libbpf's struct btf itself, under a name that keeps
 * <bpf/btf.h> out of probe_int.h: there is nothing to wrap. */
static struct btf *btf_of(struct probe_btf *b)
{
	return (struct btf *)b;
}

struct probe_btf *probe_btf_open(const char *path, struct probe_msg *m)
{
	struct btf *btf;

	errno = 0;
	btf = path ? btf__parse(path, NULL) : btf__load_vmlinux_btf();
	if (!btf) {
		int e = errno ? errno : EIO;

		probe_msg_add(m, "cannot read the kernel's BTF (%s): %s", path ? path : "/sys/kernel/btf/vmlinux",
			      strerror(e));
		errno = e;
		return NULL;
	}
	return (struct probe_btf *)btf;
}

void probe_btf_close(struct probe_btf *b)
{
	btf__free(btf_of(b)); /* NULL is fine */
}

/* The fetch type of @t ("u64", "s32", "x64"), or NULL: not one register. */
static const char *scalar_type(const struct btf *btf, const struct btf_type *t)
{
	static const char *const u[] = { "u8", "u16", NULL, "u32", NULL, NULL, NULL, "u64" };
	static const char *const s[] = { "s8", "s16", NULL, "s32", NULL, NULL, NULL, "s64" };
	bool is_signed;

	if (btf_is_ptr(t))
		return "x64";
	if (btf_is_int(t))
		is_signed = btf_int_encoding(t) & BTF_INT_SIGNED;
	else if (btf_is_enum(t) || btf_is_enum64(t))
		is_signed = btf_kflag(t);
	else
		return NULL;
	if (t->size < 1 || t->size > 8)
		return NULL;
	(void)btf;
	return is_signed ? s[t->size - 1] : u[t->size - 1];
}

int probe_btf_param(struct probe_btf *b, const char *func, const char *param, char reg[6],
		    char type[4], struct probe_msg *m)
{
	const struct btf *btf = btf_of(b);
	const struct btf_type *fn, *proto;
	const struct btf_param *ps;
	const char *blocked = NULL;
	int id, n;

	id = btf__find_by_name_kind(btf, func, BTF_KIND_FUNC);
	fn = id > 0 ? btf__type_by_id(btf, (unsigned)id) : NULL;
	proto = fn ? btf__type_by_id(btf, fn->type) : NULL;
	if (!proto || !btf_is_func_proto(proto)) {
		probe_msg_add(m, "no BTF for %s (an inlined, renamed or module function?): name "
				 "the register, e.g. %s=%%di",
			      func, param);
		return -ENOENT;
	}
	ps = btf_params(proto);
	n = btf_vlen(proto);
	for (int i = 0; i < n; i++) {
		const char *name = btf__name_by_offset(btf, ps[i].name_off);
		int tid = btf__resolve_type(btf, ps[i].type);
		const struct btf_type *t = tid > 0 ? btf__type_by_id(btf, (unsigned)tid) : NULL;
		const char *ft = t ? scalar_type(btf, t) : NULL;

		if (!name || strcmp(name, param) != 0) {
			if (!ft && !blocked)
				blocked = name && name[0] ? name : "?";
			continue;
		}
		if (!ft) {
			probe_msg_add(m, "%s: parameter %s is not a number or pointer (a struct, "
					 "union or float by value): not in one register",
				      func, param);
			return -EINVAL;
		}
		if (blocked) {
			probe_msg_add(m, "%s: parameter %s follows %s, passed by value in other "
					 "registers: its register is not known",
				      func, param, blocked);
			return -EINVAL;
		}
		if ((size_t)i >= NABI) {
			probe_msg_add(m, "%s: parameter %s is the %dth: on the stack, not in a "
					 "register",
				      func, param, i + 1);
			return -EINVAL;
		}
		snprintf(reg, 6, "%s", abi_regs[i]);
		snprintf(type, 4, "%s", ft);
		return 0;
	}
	probe_msg_add(m, "%s has no parameter \"%s\"; its parameters:", func, param);
	for (int i = 0; i < n; i++) {
		const char *name = btf__name_by_offset(btf, ps[i].name_off);

		probe_msg_add(m, "%s%s", i ? ", " : " ", name && name[0] ? name : "...");
	}
	if (!n)
		probe_msg_add(m, " none");
	return -ENOENT;
}

#else /* no libbpf */

struct probe_btf *probe_btf_open(const char *path, struct probe_msg *m)
{
	(void)path;
	probe_msg_add(m, "parameters by name need BTF, and this cgperf-agent was built without "
			 "libbpf: name the register, e.g. size=%%dx");
	errno = EOPNOTSUPP;
	return NULL;
}

void probe_btf_close(struct probe_btf *b)
{
	(void)b;
}

int probe_btf_param(struct probe_btf *b, const char *func, const char *param, char reg[6],
		    char type[4], struct probe_msg *m)
{
	(void)b;
	(void)func;
	(void)param;
	(void)reg;
	(void)type;
	(void)m;
	(void)abi_regs;
	return -EOPNOTSUPP;
}

#endif
