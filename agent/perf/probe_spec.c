// SPDX-License-Identifier: MIT
#include "agent/perf/probe_spec.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole register as perf names it: %di means all 64 bits of rdi. */
static const char *const perf_reg64[] = { "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip" };

/* SysV x86_64 integer argument registers */
static const char *const abi_args[] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9" };
#define NABI_ARGS (sizeof(abi_args) / sizeof(abi_args[0]))

/* Append to @err; a message longer than the buffer is cut, never overrun. */
__attribute__((format(printf, 3, 4))) static void say(char *err, size_t errlen,
						      const char *fmt, ...)
{
	size_t used;
	va_list ap;

	if (!err || !errlen)
		return;
	used = strnlen(err, errlen - 1);
	va_start(ap, fmt);
	vsnprintf(err + used, errlen - used, fmt, ap);
	va_end(ap);
}

int probe_spec_u64(const char *s, uint64_t *out)
{
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]) || (hex && !isxdigit((unsigned char)s[2])))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, hex ? 16 : 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "argN": N, else -1. */
static int parse_argn(const char *s)
{
	uint64_t n;

	if (strncmp(s, "arg", 3) || !isdigit((unsigned char)s[3]) || strlen(s) > 5)
		return -1;
	if (probe_spec_u64(s + 3, &n) < 0 || (s[3] == '0' && s[4]))
		return -1;
	return (int)n;
}

static bool valid_argname(const char *s)
{
	if (!s[0] || strlen(s) > PROBE_ARGNAME_MAX ||
	    !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (const char *c = s; *c; c++) {
		if (!isalnum((unsigned char)*c) && *c != '_')
			return false;
	}
	return true;
}

static int reg_arg(const char *reg, struct usdt_arg *a)
{
	int perf_reg, bytes;

	/* usdt.c knows the assembler's %rip, not perf's %ip */
	if (usdt_reg_lookup(strcmp(reg, "ip") ? reg : "rip", &perf_reg, &bytes) < 0 ||
	    perf_reg < 0 || perf_reg >= 64)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(perf_reg64) / sizeof(perf_reg64[0]); i++) {
		if (strcmp(reg, perf_reg64[i]) == 0)
			bytes = 8;
	}
	memset(a, 0, sizeof(*a));
	a->kind = USDT_ARG_REG;
	a->size = 8;
	a->reg = perf_reg;
	a->reg_bytes = bytes;
	return 0;
}

/* ---- kernel probe arguments ----
 *
 *   ARG   := [NAME=]FETCH[:TYPE]
 *   FETCH := %REG | argN | PARAM | $retval | +OFF(BASE) | -OFF(BASE)
 *   BASE  := %REG | argN | PARAM
 *   TYPE  := u8 u16 u32 u64 s8 s16 s32 s64 x8 x16 x32 x64
 *
 * REG is a whole 64-bit register, by perf's name or the assembler's (%di,
 * %rdi, %r8); argN is the N-th integer argument register of the x86_64
 * calling convention (arg0 = %di ... arg5 = %r9); PARAM is a parameter
 * name the kernel's BTF gives the function; OFF is decimal or 0x hex.
 */

/* The kernel's names (arch/x86 regs_query_register_offset()). */
static const char *const kregs[] = { "ax", "bx", "cx", "dx", "si", "di", "bp", "sp",
				     "ip", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
static const char *const kabi_args[] = { "di", "si", "dx", "cx", "r8", "r9" };

/* The kernel's name of register @r ("rdi" and "di" -> "di"), or NULL. */
static const char *kreg_name(const char *r)
{
	for (size_t i = 0; i < sizeof(kregs) / sizeof(kregs[0]); i++) {
		/* rax..rip are ax..ip with the assembler's r; r8..r15 have no other name */
		if (!strcmp(r, kregs[i]) || (i < 9 && r[0] == 'r' && !strcmp(r + 1, kregs[i])))
			return kregs[i];
	}
	return NULL;
}

static bool valid_ktype(const char *t)
{
	static const char *const types[] = { "u8", "u16", "u32", "u64", "s8",  "s16",
					     "s32", "s64", "x8", "x16", "x32", "x64" };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (!strcmp(t, types[i]))
			return true;
	}
	return false;
}

/* BASE of a kernel argument: %REG, argN or a parameter name. */
static int karg_base(const char *head, bool retprobe, const char *v, struct probe_karg *k,
		     char *err, size_t errlen)
{
	const char *r;
	int n;

	if (v[0] == '%') {
		r = kreg_name(v + 1);
		if (!r) {
			say(err, errlen,
			    "%s: unknown register \"%s\" (a whole register: %%di, %%rsi, %%ax, "
			    "%%r8...; %%edi and the like as %%di:u32)",
			    head, v);
			return -EINVAL;
		}
		snprintf(k->reg, sizeof(k->reg), "%s", r);
		return 0;
	}
	if (retprobe) {
		say(err, errlen,
		    "%s: \"%s\" is gone at return; a %%return probe takes $retval or %%REG", head,
		    v);
		return -EINVAL;
	}
	n = parse_argn(v);
	if (n >= 0) {
		if ((size_t)n >= sizeof(kabi_args) / sizeof(kabi_args[0])) {
			say(err, errlen, "%s: %s: only arg0..arg5 are passed in registers", head, v);
			return -EINVAL;
		}
		snprintf(k->reg, sizeof(k->reg), "%s", kabi_args[n]);
		return 0;
	}
	if (!valid_argname(v)) {
		say(err, errlen,
		    "%s: argument \"%s\": want %%REG, argN, a parameter name, $retval or "
		    "+OFF(BASE), then :TYPE",
		    head, v);
		return -EINVAL;
	}
	k->param = strdup(v);
	return k->param ? 0 : -ENOMEM;
}

/* "+OFF(BASE)" / "-OFF(BASE)" in @v (cut in place). */
static int karg_mem(const char *head, bool retprobe, char *v, struct probe_karg *k, char *err,
		    size_t errlen)
{
	char *open = strchr(v, '('), *close = strrchr(v, ')');
	uint64_t off;

	if (!open || !close || close < open || close[1]) {
		say(err, errlen, "%s: argument \"%s\": want +OFF(BASE)", head, v);
		return -EINVAL;
	}
	*open = '\0';
	*close = '\0';
	if (probe_spec_u64(v + 1, &off) < 0 || off > INT32_MAX) {
		say(err, errlen, "%s: bad offset \"%s\" (decimal or 0x hex, under 2^31)", head, v);
		return -EINVAL;
	}
	k->mem = true;
	k->off = v[0] == '-' ? -(int64_t)off : (int64_t)off;
	if (open[1] == '+' || open[1] == '-' || open[1] == '$') {
		say(err, errlen, "%s: +OFF(BASE): BASE is %%REG, argN or a parameter", head);
		return -EINVAL;
	}
	return karg_base(head, retprobe, open + 1, k, err, errlen);
}

static int probe_spec_karg(const char *head, bool retprobe, const char *value, struct probe_karg *k,
		    char *err, size_t errlen)
{
	char *v = strdup(value), *colon;
	int rc = -ENOMEM;

	memset(k, 0, sizeof(*k));
	if (!v)
		return rc;
	colon = strrchr(v, ':');
	if (colon) {
		*colon++ = '\0';
		if (!valid_ktype(colon)) {
			say(err, errlen, "%s: unknown type \":%s\" (u8..u64, s8..s64, x8..x64)",
			    head, colon);
			rc = -EINVAL;
			goto out;
		}
		snprintf(k->type, sizeof(k->type), "%s", colon);
	}
	if (!strcmp(v, "$retval")) {
		k->retval = true;
		rc = 0;
		if (!retprobe) {
			say(err, errlen, "%s: $retval is for a %%return probe", head);
			rc = -EINVAL;
		}
	} else if (v[0] == '+' || v[0] == '-') {
		rc = karg_mem(head, retprobe, v, k, err, errlen);
	} else {
		rc = karg_base(head, retprobe, v, k, err, errlen);
	}
out:
	free(v);
	if (rc) {
		free(k->param);
		k->param = NULL;
	}
	return rc;
}

static char *probe_spec_kname(const char *tok)
{
	size_t n = strcspn(tok, ":(");
	const char *base;
	char *name;

	if (tok[0] == '%')
		return strndup(tok + 1, n - 1);
	if (tok[0] == '$')
		return strndup(tok + 1, n - 1); /* "retval" */
	if (tok[0] != '+' && tok[0] != '-')
		return strndup(tok, n);
	/* +OFF(BASE): BASE and OFF, "+8(%si)" -> "si_8", "-0x10(msg)" -> "msg_m16" */
	base = strchr(tok, '(');
	if (!base || !base[1])
		return strdup("mem");
	base += base[1] == '%' ? 2 : 1;
	{
		uint64_t off = 0;
		char *o = strndup(tok + 1, n - 1);
		size_t bl = strcspn(base, ")"), len = bl + 32;

		if (o)
			(void)probe_spec_u64(o, &off);
		free(o);
		name = malloc(len);
		if (name)
			snprintf(name, len, "%.*s_%s%" PRIu64, (int)bl, base, tok[0] == '-' ? "m" : "",
				 off);
	}
	return name;
}

/* A "%return" suffix of @body, cut off. */
static int cut_return(struct probe_spec *s, char *body, char *err, size_t errlen)
{
	char *pct = strchr(body, '%');

	if (!pct)
		return 0;
	if (strcmp(pct, "%return") != 0) {
		say(err, errlen, "%s: unknown suffix \"%s\" (only %%return)", s->head, pct);
		return -EINVAL;
	}
	*pct = '\0';
	s->retprobe = true;
	return 0;
}

/* A "+OFF" suffix of the function @sym, cut off; after cut_return(). */
static int cut_offset(struct probe_spec *s, char *sym, char *err, size_t errlen)
{
	char *plus = strchr(sym, '+');

	if (!plus)
		return 0;
	*plus++ = '\0';
	if (!sym[0] || probe_spec_u64(plus, &s->offset) < 0) {
		say(err, errlen, "%s: bad offset \"+%s\" (decimal or 0x hex)", s->head, plus);
		return -EINVAL;
	}
	if (s->retprobe && s->offset) {
		say(err, errlen, "%s: %%return probes a function's return; it takes no +OFF",
		    s->head);
		return -EINVAL;
	}
	return 0;
}

/* "u:BINARY:SYMBOL[+OFF][%return]", @body after "u:" (cut in place) */
static int parse_uprobe(struct probe_spec *s, char *body, char *err, size_t errlen)
{
	char *sym;
	int rc = cut_return(s, body, err, errlen);

	if (rc)
		return rc;
	sym = strrchr(body, ':');
	if (!sym || sym == body || !sym[1]) {
		say(err, errlen, "%s: want u:BINARY:SYMBOL[+OFF][%%return]", s->head);
		return -EINVAL;
	}
	*sym++ = '\0';
	rc = cut_offset(s, sym, err, errlen);
	if (rc)
		return rc;
	s->kind = PROBE_UPROBE;
	s->binary = body;
	s->name = sym;
	return 0;
}

/* A kernel symbol name: [A-Za-z_][A-Za-z0-9_.]* ("tcp_sendmsg", "foo.isra.0"). */
static bool valid_kfunc(const char *s)
{
	if (!s[0] || strlen(s) > PROBE_KFUNC_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (const char *c = s; *c; c++) {
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.')
			return false;
	}
	return true;
}

/* "k:FUNC[+OFF][%return]", @body after "k:" (cut in place) */
static int parse_kprobe(struct probe_spec *s, char *body, char *err, size_t errlen)
{
	int rc = cut_return(s, body, err, errlen);

	if (!rc)
		rc = cut_offset(s, body, err, errlen);
	if (rc)
		return rc;
	if (!valid_kfunc(body)) {
		say(err, errlen,
		    "%s: want k:FUNC[+OFF][%%return], FUNC a kernel function name "
		    "(letters, digits, _ and .; at most %d)",
		    s->head, PROBE_KFUNC_MAX);
		return -EINVAL;
	}
	s->kind = PROBE_KPROBE;
	s->name = body;
	return 0;
}

/* "sdt:PROVIDER:NAME[@BINARY]", @body after "sdt:" (cut in place) */
static int parse_usdt(struct probe_spec *s, char *body, char *err, size_t errlen)
{
	char *name, *binary = strchr(body, '@');

	if (binary)
		*binary++ = '\0';
	name = strchr(body, ':');
	if (name)
		*name++ = '\0';
	if (!name || !body[0] || !name[0] || strchr(name, ':') || (binary && !binary[0])) {
		say(err, errlen, "%s: want sdt:PROVIDER:NAME[@BINARY]", s->head);
		return -EINVAL;
	}
	s->kind = PROBE_USDT;
	s->group = body;
	s->name = name;
	s->binary = binary;
	return 0;
}

/* "SUBSYS:EVENT", @body (cut in place) */
static int parse_tracepoint(struct probe_spec *s, char *body, char *err, size_t errlen)
{
	char *colon = strchr(body, ':');

	if (!colon || colon == body || !colon[1] || strchr(colon + 1, ':')) {
		say(err, errlen,
		    "%s: not a probe; want u:BINARY:SYMBOL, sdt:PROVIDER:NAME[@BINARY], "
		    "k:FUNC or SUBSYS:EVENT",
		    s->head);
		return -EINVAL;
	}
	s->kind = PROBE_TRACEPOINT;
	*colon = '\0';
	s->group = body;
	s->name = colon + 1;
	return 0;
}

/* What VALUE may be for this kind of probe; fills @a's register and argn. */
static int check_value(const struct probe_spec *s, struct probe_spec_arg *a, char *err,
		       size_t errlen)
{
	const char *v = a->value;

	a->argn = parse_argn(v);
	if (s->kind == PROBE_TRACEPOINT)
		return 0; /* a field, known once tracefs is read */
	if (s->kind == PROBE_KPROBE)
		return probe_spec_karg(s->head, s->retprobe, v, &a->k, err, errlen);
	if (s->kind == PROBE_USDT) {
		if (a->argn < 0) {
			say(err, errlen, "%s: argument \"%s\": an SDT probe takes argN", s->head,
			    v);
			return -EINVAL;
		}
		return 0;
	}
	if (v[0] == '%') {
		if (reg_arg(v + 1, &a->a) < 0) {
			say(err, errlen,
			    "%s: unknown register \"%s\" (e.g. %%di, %%rsi, %%ax, %%r8)", s->head,
			    v);
			return -EINVAL;
		}
		return 0;
	}
	if (a->argn < 0) {
		say(err, errlen, "%s: argument \"%s\": want %%REG or argN", s->head, v);
		return -EINVAL;
	}
	if (s->retprobe) {
		say(err, errlen, "%s: %s is gone at return; the return value is %%ax", s->head, v);
		return -EINVAL;
	}
	if ((size_t)a->argn >= NABI_ARGS) {
		say(err, errlen, "%s: %s: only arg0..arg5 are passed in registers", s->head, v);
		return -EINVAL;
	}
	return reg_arg(abi_args[a->argn], &a->a) < 0 ? -EINVAL : 0;
}

/* One "[NAME=]VALUE" token. */
static int parse_arg(struct probe_spec *s, const char *tok, char *err, size_t errlen)
{
	struct probe_spec_arg *a = &s->args[s->nargs];
	const char *eq = strchr(tok, '=');
	int rc;

	memset(a, 0, sizeof(*a));
	a->value = strdup(eq ? eq + 1 : tok);
	if (eq)
		a->name = strndup(tok, (size_t)(eq - tok));
	else if (s->kind == PROBE_UPROBE && tok[0] == '%')
		a->name = strdup(tok + 1);
	else if (s->kind == PROBE_KPROBE)
		a->name = probe_spec_kname(tok);
	else
		a->name = strdup(tok);
	s->nargs++; /* owned from here, released with @s */
	if (!a->value || !a->name)
		return -ENOMEM;
	rc = check_value(s, a, err, errlen);
	if (rc)
		return rc;
	if (!valid_argname(a->name)) {
		say(err, errlen, "%s: bad argument name \"%s\" (letters, digits, _; at most %d)",
		    s->head, a->name, PROBE_ARGNAME_MAX);
		return -EINVAL;
	}
	/* the kernel's own fields of a dynamic event */
	if (s->kind == PROBE_KPROBE &&
	    (!strncmp(a->name, "common_", 7) || !strncmp(a->name, "__probe_", 8))) {
		say(err, errlen, "%s: argument name \"%s\" is the kernel's (common_*, __probe_*)",
		    s->head, a->name);
		return -EINVAL;
	}
	for (int i = 0; i < s->nargs - 1; i++) {
		if (strcmp(s->args[i].name, a->name) == 0) {
			say(err, errlen, "%s: argument \"%s\" named twice", s->head, a->name);
			return -EINVAL;
		}
	}
	return 0;
}

/* The probe part of @copy, then each argument. */
static int parse_tokens(struct probe_spec *s, char *copy, char *err, size_t errlen)
{
	char *save = NULL, *head = strtok_r(copy, " \t\n", &save), *body;
	char *toks[USDT_MAX_ARGS];
	size_t ntoks = 0, len;
	int rc;

	if (!head) {
		say(err, errlen, "empty probe spec");
		return -EINVAL;
	}
	for (char *t = strtok_r(NULL, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
		if (ntoks == USDT_MAX_ARGS) {
			say(err, errlen, "%s: too many arguments (at most %d)", head,
			    USDT_MAX_ARGS);
			return -E2BIG;
		}
		toks[ntoks++] = t;
	}
	/* The probe as written, and after it a copy that the parsers cut in
	 * place into binary, group and name: one allocation. */
	len = strlen(head) + 1;
	s->head = malloc(2 * len);
	if (!s->head)
		return -ENOMEM;
	memcpy(s->head, head, len);
	body = memcpy(s->head + len, head, len);
	if (!strncmp(head, "u:", 2))
		rc = parse_uprobe(s, body + 2, err, errlen);
	else if (!strncmp(head, "k:", 2))
		rc = parse_kprobe(s, body + 2, err, errlen);
	else if (!strncmp(head, "sdt:", 4))
		rc = parse_usdt(s, body + 4, err, errlen);
	else
		rc = parse_tracepoint(s, body, err, errlen);
	for (size_t i = 0; i < ntoks && !rc; i++)
		rc = parse_arg(s, toks[i], err, errlen);
	return rc;
}

int probe_spec_parse(const char *spec, struct probe_spec *out, char *err, size_t errlen)
{
	struct probe_spec s = { 0 };
	char *copy;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!spec) {
		say(err, errlen, "no probe given");
		return -EINVAL;
	}
	if (strnlen(spec, PROBE_SPEC_MAX + 1) > PROBE_SPEC_MAX) {
		say(err, errlen, "probe spec longer than %d bytes", PROBE_SPEC_MAX);
		return -E2BIG;
	}
	copy = strdup(spec);
	rc = copy ? parse_tokens(&s, copy, err, errlen) : -ENOMEM;
	free(copy);
	if (rc == -ENOMEM) {
		if (err && errlen)
			err[0] = '\0';
		say(err, errlen, "%s: out of memory", spec);
	}
	if (rc) {
		probe_spec_release(&s);
		return rc;
	}
	*out = s;
	return 0;
}

void probe_spec_release(struct probe_spec *s)
{
	if (!s)
		return;
	free(s->head); /* and binary, group and name: they point into it */
	for (int i = 0; i < s->nargs; i++) {
		free(s->args[i].name);
		free(s->args[i].value);
		free(s->args[i].k.param);
	}
	memset(s, 0, sizeof(*s));
}

const struct probe_spec_arg *probe_spec_arg(const struct probe_spec *s, const char *name)
{
	for (int i = 0; i < s->nargs; i++) {
		if (strcmp(s->args[i].name, name) == 0)
			return &s->args[i];
	}
	return NULL;
}
