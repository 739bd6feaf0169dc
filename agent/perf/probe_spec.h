/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_PROBE_SPEC_H
#define CGPERF_AGENT_PROBE_SPEC_H

/*
 * The probe-spec grammar (probe.h describes it), one parser for every place
 * a spec is written: `trace -e`, `record`, the `probes:` of the run
 * configuration. It checks all that can be checked without the host (the
 * three shapes, +OFF and %return, argument names, registers, argN ranges)
 * and splits the spec into parts; probe_resolve() then finds the binary,
 * the symbol or SDT note, and the tracepoint fields.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/perf/usdt.h"

#define PROBE_SPEC_MAX 4096  /* whole spec, probe and arguments */
#define PROBE_ARGNAME_MAX 63 /* user-chosen argument names */

enum probe_kind { PROBE_UPROBE, PROBE_USDT, PROBE_TRACEPOINT, PROBE_KPROBE };

#define PROBE_KFUNC_MAX 511 /* KSYM_NAME_LEN - 1 */

/*
 * A kernel probe's argument, as the grammar splits it (probe.h has the
 * grammar): a register, a BTF parameter name, $retval, or the memory at
 * one of the first two plus an offset; a type, or none.
 */
struct probe_karg {
	char reg[6];     /* the kernel's name of a register ("di", "r8"); "" = by name or $retval */
	char *param;     /* a parameter of the function, found in BTF; else NULL */
	bool retval;     /* $retval (a %return probe only) */
	bool mem;        /* +OFF(BASE): the memory at BASE + off */
	int64_t off;
	char type[4];    /* "u32", "s64", "x8"...; "" = from BTF, else u64 */
};

struct probe_spec_arg {
	char *name;        /* as named, or the value minus its '%' */
	char *value;       /* "%di", "arg2", a tracepoint field */
	int argn;          /* N of "argN", else -1 */
	struct usdt_arg a; /* uprobe: the register (argN: its ABI register) */
	struct probe_karg k; /* kernel probe */
};

struct probe_spec {
	enum probe_kind kind;
	char *head;     /* the probe, without arguments: "u:libc:malloc%return" */
	/* Its parts, in the allocation of @head (not freed on their own): */
	char *binary;   /* uprobe BINARY; USDT @BINARY or NULL */
	char *group;    /* USDT PROVIDER, tracepoint SUBSYS; NULL for a uprobe */
	char *name;     /* uprobe SYMBOL, USDT NAME, tracepoint EVENT, kernel FUNC */
	uint64_t offset; /* uprobe and kernel probe +OFF */
	bool retprobe;  /* uprobe and kernel probe %return */
	struct probe_spec_arg args[USDT_MAX_ARGS];
	int nargs;
};

/*
 * Parse @spec into @out (release with probe_spec_release()). 0, or on
 * failure @out untouched and a user-facing message starting with the probe as
 * written in @err (cut to @errlen; may be NULL):
 *   -EINVAL  not one of the shapes, a bad +OFF or suffix, %return with +OFF,
 *            a bad or repeated argument name, an unknown register, argN
 *            where it cannot be (a uprobe's %return, N over 5) or VALUE not
 *            argN for an SDT probe; for a kernel probe: a FUNC that is not
 *            a kernel symbol name, a bad type or offset, $retval without
 *            %return, a parameter at %return, a name the kernel reserves
 *   -E2BIG   spec over PROBE_SPEC_MAX bytes or more than USDT_MAX_ARGS
 *            arguments
 *   -ENOMEM
 */
int probe_spec_parse(const char *spec, struct probe_spec *out, char *err, size_t errlen);

/* Free what probe_spec_parse() allocated and zero @s; NULL and zeroed are fine. */
void probe_spec_release(struct probe_spec *s);

/* Whole-string unsigned number, decimal or 0x hex (a leading 0 is not
 * octal): 0 or -EINVAL. */
int probe_spec_u64(const char *s, uint64_t *out);

/* The argument of @s named @name, or NULL. */
const struct probe_spec_arg *probe_spec_arg(const struct probe_spec *s, const char *name);

#endif
