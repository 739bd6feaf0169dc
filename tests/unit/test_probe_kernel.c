// SPDX-License-Identifier: MIT
/*
 * Kernel probes (agent/perf/probe_kernel.c, probe_btf.c, the k: part of
 * probe_spec.c): the grammar, good and bad; the kprobe_events line; the
 * kprobe PMU's perf_event_attr from a fixture sysfs directory; the checks
 * against a fixture kallsyms and blacklist; a dynamic event made, resolved
 * as a tracepoint and removed in a fixture tracefs; parameters by name from
 * a BTF made here and from this machine's /sys/kernel/btf/vmlinux; and the
 * refusal on this machine, which has no kprobes (on one with kprobes, the
 * same case resolves).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/perf/probe.h"
#include "agent/perf/probe_int.h"
#include "agent/perf/probe_spec.h"
#include "tests/unit/testlib.h"

#ifdef CGPERF_HAVE_LIBBPF
#include <bpf/btf.h>
#endif

/* ---- the grammar ---- */

static void test_spec_good(void **state)
{
	static const struct {
		const char *spec, *func;
		uint64_t off;
		int nargs;
		/* the first argument */
		const char *name, *reg, *param, *type;
		bool mem, retval;
		int64_t moff;
	} cases[] = {
		/* spec, func, off, nargs; the first argument: name, reg, param, type, mem, retval, off */
		{ "k:do_sys_openat2", "do_sys_openat2", 0, 0, NULL, NULL, NULL, NULL, false, false, 0 },
		{ "k:vfs_read+0x10", "vfs_read", 0x10, 0, NULL, NULL, NULL, NULL, false, false, 0 },
		{ "k:vfs_read+16", "vfs_read", 16, 0, NULL, NULL, NULL, NULL, false, false, 0 },
		{ "k:tcp_sendmsg%return", "tcp_sendmsg", 0, 0, NULL, NULL, NULL, NULL, false, false, 0 },
		{ "k:foo.isra.0", "foo.isra.0", 0, 0, NULL, NULL, NULL, NULL, false, false, 0 },
		{ "k:tcp_sendmsg size=%dx:u64", "tcp_sendmsg", 0, 1, "size", "dx", NULL, "u64", false,
		  false, 0 },
		{ "k:tcp_sendmsg %di", "tcp_sendmsg", 0, 1, "di", "di", NULL, "", false, false, 0 },
		{ "k:tcp_sendmsg %rsi:x64", "tcp_sendmsg", 0, 1, "rsi", "si", NULL, "x64", false, false,
		  0 },
		{ "k:tcp_sendmsg %r8 %r15", "tcp_sendmsg", 0, 2, "r8", "r8", NULL, "", false, false, 0 },
		{ "k:tcp_sendmsg arg2:s32", "tcp_sendmsg", 0, 1, "arg2", "dx", NULL, "s32", false, false,
		  0 },
		{ "k:tcp_sendmsg size", "tcp_sendmsg", 0, 1, "size", "", "size", "", false, false, 0 },
		{ "k:tcp_sendmsg n=size:u32", "tcp_sendmsg", 0, 1, "n", "", "size", "u32", false, false,
		  0 },
		{ "k:vfs_read +0(%si):u32", "vfs_read", 0, 1, "si_0", "si", NULL, "u32", true, false, 0 },
		{ "k:vfs_read f=-0x10(%rdi)", "vfs_read", 0, 1, "f", "di", NULL, "", true, false, -16 },
		{ "k:tcp_sendmsg +8(msg):u64", "tcp_sendmsg", 0, 1, "msg_8", "", "msg", "u64", true,
		  false, 8 },
		{ "k:vfs_read -8(%bp)", "vfs_read", 0, 1, "bp_m8", "bp", NULL, "", true, false, -8 },
		{ "k:vfs_read%return $retval:s64", "vfs_read", 0, 1, "retval", "", NULL, "s64", false,
		  true, 0 },
		{ "k:vfs_read%return ret=%ax", "vfs_read", 0, 1, "ret", "ax", NULL, "", false, false, 0 },
	};
	struct probe_spec s;
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (probe_spec_parse(cases[i].spec, &s, err, sizeof(err)))
			fail_msg("\"%s\": %s", cases[i].spec, err);
		assert_int_equal(s.kind, PROBE_KPROBE);
		assert_string_equal(s.name, cases[i].func);
		assert_int_equal(s.offset, cases[i].off);
		assert_int_equal(s.retprobe, strstr(cases[i].spec, "%return") != NULL);
		assert_int_equal(s.nargs, cases[i].nargs);
		if (cases[i].name) {
			const struct probe_karg *k = &s.args[0].k;

			assert_string_equal(s.args[0].name, cases[i].name);
			assert_string_equal(k->reg, cases[i].reg);
			tl_assert_str_or_null(k->param, cases[i].param);
			assert_string_equal(k->type, cases[i].type);
			assert_int_equal(k->mem, cases[i].mem);
			assert_int_equal(k->retval, cases[i].retval);
			assert_int_equal(k->off, cases[i].moff);
		}
		probe_spec_release(&s);
	}
	assert_int_equal(probe_spec_parse("k:f %r8 %r15", &s, err, sizeof(err)), 0);
	assert_string_equal(s.args[1].k.reg, "r15");
	probe_spec_release(&s);
}

/* Specs refused, each with a part of its reason, and one accepted among
 * them (tests/unit/data/probe_kernel_spec_bad.tsv). */
static void test_spec_bad(void **state)
{
	struct tl_table *t = tl_table_load("probe_kernel_spec_bad.tsv", 2);
	struct probe_spec s;
	char err[512];

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *spec = tl_table_row(t, i)[0], *msg = tl_table_row(t, i)[1];
		int rc = probe_spec_parse(spec, &s, err, sizeof(err));

		if (!msg) {
			assert_int_equal(rc, 0);
			probe_spec_release(&s);
			continue;
		}
		if (rc != -EINVAL)
			fail_msg("%s: \"%s\": %d (%s), want -EINVAL", tl_table_where(t, i), spec, rc,
				 err);
		if (!strstr(err, msg))
			fail_msg("%s: \"%s\": \"%s\" lacks \"%s\"", tl_table_where(t, i), spec, err,
				 msg);
	}
	tl_table_free(t);
}

/* ---- the kprobe_events line ---- */

static void line_of(const char *spec, char (*regs)[6], char (*types)[4], char *buf, size_t len)
{
	struct probe_spec s;
	char err[256];

	if (probe_spec_parse(spec, &s, err, sizeof(err)))
		fail_msg("%s: %s", spec, err);
	for (int i = 0; i < s.nargs; i++) {
		if (!regs[i][0])
			snprintf(regs[i], 6, "%s", s.args[i].k.reg);
		if (!types[i][0])
			snprintf(types[i], 4, "%s", s.args[i].k.type);
	}
	assert_int_equal(probe_kernel_line(&s, "cgperf", "ev_1_0", regs, types, buf, len), 0);
	probe_spec_release(&s);
}

static void test_line(void **state)
{
	char regs[USDT_MAX_ARGS][6] = { { 0 } }, types[USDT_MAX_ARGS][4] = { { 0 } };
	char buf[512];
	struct probe_spec s;

	line_of("k:do_sys_openat2", regs, types, buf, sizeof(buf));
	assert_string_equal(buf, "p:cgperf/ev_1_0 do_sys_openat2");
	line_of("k:vfs_read+0x10 %di n=+8(%si):u32", regs, types, buf, sizeof(buf));
	assert_string_equal(buf, "p:cgperf/ev_1_0 vfs_read+16 di=%di:u64 n=+8(%si):u32");
	memset(regs, 0, sizeof(regs));
	memset(types, 0, sizeof(types));
	line_of("k:vfs_read%return $retval:s64 f=-16(%bp)", regs, types, buf, sizeof(buf));
	assert_string_equal(buf, "r:cgperf/ev_1_0 vfs_read retval=$retval:s64 f=-16(%bp):u64");
	/* a parameter, settled by BTF: its register and type come from there */
	memset(regs, 0, sizeof(regs));
	memset(types, 0, sizeof(types));
	snprintf(regs[0], 6, "dx");
	snprintf(types[0], 4, "u64");
	line_of("k:tcp_sendmsg size", regs, types, buf, sizeof(buf));
	assert_string_equal(buf, "p:cgperf/ev_1_0 tcp_sendmsg size=%dx:u64");
	/* too small a buffer */
	assert_int_equal(probe_spec_parse("k:tcp_sendmsg", &s, NULL, 0), 0);
	assert_int_equal(probe_kernel_line(&s, "cgperf", "e", regs, types, buf, 10), -ENAMETOOLONG);
	probe_spec_release(&s);
}

/* ---- fixtures: a kernel described by files ---- */

struct kfix {
	struct tl_fake fake;
	char pmu[256], tracefs[256], kallsyms[256], blacklist[256];
	struct probe_host host;
};

static const char fixture_kallsyms[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81200000 T do_sys_openat2\n"
	"ffffffff81200180 t do_sys_open\n"
	"ffffffff81300000 T vfs_read\n"
	"ffffffff81300200 T tcp_sendmsg\n"
	"ffffffff81300400 T nmi_handle\n"
	"ffffffff81300500 d some_data\n"
	"ffffffffc0001000 t ext4_file_open\t[ext4]\n";

static int kfix_setup(void **state)
{
	struct kfix *f = tl_fake_new("test_probe_kernel", sizeof(*f));
	const char *r = f->fake.root;

	snprintf(f->pmu, sizeof(f->pmu), "%s/devices/kprobe", r);
	snprintf(f->tracefs, sizeof(f->tracefs), "%s/tracing", r);
	snprintf(f->kallsyms, sizeof(f->kallsyms), "%s/kallsyms", r);
	snprintf(f->blacklist, sizeof(f->blacklist), "%s/blacklist", r);
	tl_mkdirs(r, "devices");
	tl_mkdirs(r, "tracing/events");
	tl_write_file(r, "kallsyms", fixture_kallsyms);
	tl_write_file(r, "blacklist", "0xffffffff81300400-0xffffffff81300500\tnmi_handle\n");
	f->host = (struct probe_host){ .kprobe_pmu = f->pmu, .tracefs = f->tracefs,
				       .kallsyms = f->kallsyms, .blacklist = f->blacklist };
	*state = f;
	return 0;
}

static void with_pmu(struct kfix *f)
{
	tl_write_file(f->fake.root, "devices/kprobe/type", "6\n");
	tl_write_file(f->fake.root, "devices/kprobe/format/retprobe", "config:0\n");
}

static int resolve_msg(struct kfix *f, const char *spec, struct probe *p, char *err, size_t len)
{
	return probe_resolve_at(spec, NULL, 0, &f->host, p, err, len);
}

/* No PMU, no kprobe_events: refused before anything else, naming both. */
static void test_refusal(void **state)
{
	struct kfix *f = *state;
	struct probe p = { 0 };
	char err[512];

	assert_int_equal(resolve_msg(f, "k:do_sys_openat2", &p, err, sizeof(err)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "k:do_sys_openat2: kernel probes are not available: no "
				    "kprobe PMU in "));
	assert_non_null(strstr(err, "/devices and no kprobe_events in tracefs "
				    "(CONFIG_KPROBE_EVENTS off)"));
	/* the refusal comes first, even for a misspelt function */
	assert_int_equal(resolve_msg(f, "k:do_sys_opnat2", &p, err, sizeof(err)), -EOPNOTSUPP);
	/* a PMU but no kprobe_events: no arguments */
	with_pmu(f);
	assert_int_equal(resolve_msg(f, "k:vfs_read %di", &p, err, sizeof(err)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "arguments need a dynamic event in tracefs"));
	assert_int_equal(p.kind, 0);
	assert_null(p.label);
}

/* This machine: without kprobes, refused; with them, placed. */
static void test_this_host(void **state)
{
	bool pmu = access("/sys/bus/event_source/devices/kprobe/type", F_OK) == 0;
	struct probe p = { 0 };
	char err[512];
	int rc = probe_resolve("k:do_sys_openat2", NULL, 0, &p, err, sizeof(err));

	if (pmu) {
		if (rc)
			fail_msg("a kernel with a kprobe PMU: %s", err);
		assert_int_equal(p.kind, PROBE_KPROBE);
		probe_release(&p);
		return;
	}
	if (rc == 0) /* kprobe_events without a PMU: a dynamic event */
		probe_release(&p);
	else
		assert_non_null(strstr(err, "kernel probes are not available"));
}

static void test_kallsyms_blacklist(void **state)
{
	struct kfix *f = *state;
	struct probe p = { 0 };
	char err[512];

	with_pmu(f);
	assert_int_equal(resolve_msg(f, "k:do_sys_opnat2", &p, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no kernel function \"do_sys_opnat2\""));
	assert_non_null(strstr(err, "did you mean do_sys_openat2"));
	/* data is not a function */
	assert_int_equal(resolve_msg(f, "k:some_data", &p, err, sizeof(err)), -ENOENT);
	assert_int_equal(resolve_msg(f, "k:nmi_handle", &p, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "kprobe blacklist"));
	/* do_sys_openat2 is 0x180 bytes, up to do_sys_open */
	assert_int_equal(resolve_msg(f, "k:do_sys_openat2+0x180", &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "outside do_sys_openat2 (384 bytes)"));
	assert_int_equal(resolve_msg(f, "k:do_sys_openat2+0x17f", &p, err, sizeof(err)), 0);
	assert_int_equal(p.offset, 0x17f);
	probe_release(&p);
	/* a module's function; a missing kallsyms */
	assert_int_equal(resolve_msg(f, "k:ext4_file_open", &p, err, sizeof(err)), 0);
	probe_release(&p);
	f->host.kallsyms = "/nonexistent/kallsyms";
	assert_int_equal(resolve_msg(f, "k:vfs_read", &p, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "cannot read /nonexistent/kallsyms"));
	/* an unreadable blacklist is not checked */
	f->host.kallsyms = f->kallsyms;
	f->host.blacklist = "/nonexistent/blacklist";
	assert_int_equal(resolve_msg(f, "k:nmi_handle", &p, err, sizeof(err)), 0);
	probe_release(&p);
}

/* Without arguments: the kprobe PMU. */
static void test_attr_pmu(void **state)
{
	struct kfix *f = *state;
	struct perf_event_attr attr;
	struct probe p = { 0 };
	char err[512];

	with_pmu(f);
	assert_int_equal(resolve_msg(f, "k:vfs_read+0x20", &p, err, sizeof(err)), 0);
	assert_int_equal(p.kind, PROBE_KPROBE);
	assert_string_equal(p.label, "k:vfs_read+0x20");
	assert_string_equal(p.symbol, "vfs_read");
	assert_null(p.kevent);
	memset(&attr, 0, sizeof(attr));
	attr.sample_period = 1;
	assert_int_equal(probe_attr_at(&p, f->pmu, &attr, err, sizeof(err)), 0);
	assert_int_equal(attr.type, 6);
	assert_int_equal(attr.config, 0);
	assert_int_equal(attr.config1, (uint64_t)(uintptr_t)p.symbol);
	assert_string_equal((const char *)(uintptr_t)attr.config1, "vfs_read");
	assert_int_equal(attr.config2, 0x20);
	assert_int_equal(attr.sample_period, 1);
	probe_release(&p);

	assert_int_equal(resolve_msg(f, "k:tcp_sendmsg%return", &p, err, sizeof(err)), 0);
	assert_string_equal(p.label, "k:tcp_sendmsg%return");
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(probe_attr_at(&p, f->pmu, &attr, err, sizeof(err)), 0);
	assert_int_equal(attr.config, 1);
	assert_int_equal(attr.config2, 0);
	/* the bit is read from format/retprobe, not assumed */
	tl_write_file(f->pmu, "format/retprobe", "config:9\n");
	assert_int_equal(probe_attr_at(&p, f->pmu, &attr, err, sizeof(err)), 0);
	assert_int_equal(attr.config, 1u << 9);
	tl_write_file(f->pmu, "format/retprobe", "config1:0\n");
	assert_int_equal(probe_attr_at(&p, f->pmu, &attr, err, sizeof(err)), -EIO);
	tl_write_file(f->pmu, "format/retprobe", "config:0\n");
	/* the PMU gone between resolve and open */
	assert_int_equal(probe_attr_at(&p, "/nonexistent", &attr, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no kprobe PMU"));
	probe_release(&p);
}

/* With arguments: a dynamic event, its fields, removed on release. */
/* The kernel would make events/cgperf/NAME when the line is written; the
 * fixture has them ready, for the next few sequence numbers. */
static void kevent_fixture(struct kfix *f, const char *format)
{
	char rel[512], text[2048];

	tl_write_file(f->tracefs, "kprobe_events", "");
	for (unsigned seq = 0; seq < 8; seq++) {
		char name[64];

		snprintf(name, sizeof(name), "tcp_sendmsg_%d_%u", (int)getpid(), seq);
		snprintf(rel, sizeof(rel), "events/cgperf/%s/id", name);
		tl_write_file(f->tracefs, rel, "1999\n");
		snprintf(rel, sizeof(rel), "events/cgperf/%s/format", name);
		snprintf(text, sizeof(text), "name: %s\n%s", name, format);
		tl_write_file(f->tracefs, rel, text);
	}
}

static void test_kevent(void **state)
{
	static const char format[] =
		"ID: 1999\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		"\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n"
		"\tfield:u64 size;\toffset:16;\tsize:8;\tsigned:0;\n"
		"\tfield:s32 fl;\toffset:24;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"(%lx) size=%Lu fl=%d\", REC->__probe_ip, REC->size, REC->fl\n";
	struct kfix *f = *state;
	char err[512], rel[512], text[1024], *got;
	struct probe p = { 0 };
	struct perf_event_attr attr;

	kevent_fixture(f, format);
	/* a stale event of a process long gone is swept; a live one stays */
	snprintf(text, sizeof(text),
		 "p:cgperf/vfs_read_999999999_0 vfs_read\np:cgperf/vfs_read_%d_77 vfs_read\n"
		 "p:other/x_1_0 vfs_read\n", (int)getpid());
	tl_write_file(f->tracefs, "kprobe_events", text);
	/* no PMU needed for a dynamic event */
	if (resolve_msg(f, "k:tcp_sendmsg size=%dx fl=+4(%si):s32", &p, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(p.kind, PROBE_TRACEPOINT);
	assert_string_equal(p.label, "k:tcp_sendmsg");
	assert_non_null(p.kevent);
	assert_int_equal(p.tp_id, 1999);
	assert_int_equal(p.nargs, 2);
	assert_string_equal(p.args[0].name, "size");
	assert_int_equal(p.args[0].field_offset, 16);
	assert_int_equal(p.args[0].field_size, 8);
	assert_int_equal(p.args[1].field_offset, 24);
	assert_true(p.args[1].field_signed);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(probe_attr(&p, &attr), 0);
	assert_int_equal(attr.type, PERF_TYPE_TRACEPOINT);
	assert_int_equal(attr.config, 1999);

	snprintf(rel, sizeof(rel), "%s/kprobe_events", f->tracefs);
	got = tl_read_file(rel, 1 << 16, NULL);
	snprintf(text, sizeof(text),
		 "-:cgperf/vfs_read_999999999_0\n"
		 "p:cgperf/%s tcp_sendmsg size=%%dx:u64 fl=+4(%%si):s32\n",
		 strchr(p.kevent, '/') + 1);
	if (!strstr(got, text))
		fail_msg("kprobe_events: \"%s\", want \"%s\" in it", got, text);
	snprintf(text, sizeof(text), "-:cgperf/vfs_read_%d_77", (int)getpid());
	assert_null(strstr(got, text)); /* its process lives: kept */
	assert_null(strstr(got, "-:other/"));
	free(got);
	snprintf(text, sizeof(text), "-:%s\n", p.kevent);
	probe_release(&p);
	got = tl_read_file(rel, 1 << 16, NULL);
	assert_non_null(strstr(got, text)); /* removed */
	free(got);

	/* a field the kernel did not make: resolving fails, the event is removed */
	tl_write_file(f->tracefs, "kprobe_events", "");
	assert_int_equal(resolve_msg(f, "k:tcp_sendmsg nosuch=%cx", &p, err, sizeof(err)), -ENOENT);
	got = tl_read_file(rel, 1 << 16, NULL);
	assert_non_null(strstr(got, "\n-:cgperf/tcp_sendmsg_"));
	free(got);
	/* kprobe_events not writable (here: a directory) */
	assert_int_equal(unlink(rel), 0);
	tl_mkdirs(f->tracefs, "kprobe_events");
	assert_int_equal(resolve_msg(f, "k:tcp_sendmsg %dx", &p, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, "k:tcp_sendmsg: cannot write \"p:cgperf/tcp_sendmsg_"));
	assert_null(p.label);
}

/* ---- BTF ---- */

#ifdef CGPERF_HAVE_LIBBPF
/* tcp_sendmsg(struct sock *sk, struct msghdr *msg, size_t size), and
 * f(int a, struct pair p, long b), g(7 longs), in a raw BTF file. */
static char *fixture_btf(const char *dir)
{
	struct btf *b = btf__new_empty();
	int ulong, sizet, sock, psock, msg, pmsg, proto, sint, pair, lng, fp;
	const void *raw;
	unsigned size;
	char *path = malloc(512);

	assert_non_null(b);
	ulong = btf__add_int(b, "long unsigned int", 8, 0);
	sint = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
	lng = btf__add_int(b, "long", 8, BTF_INT_SIGNED);
	sizet = btf__add_const(b, btf__add_typedef(b, "size_t", ulong));
	pair = btf__add_struct(b, "pair", 16);
	assert_int_equal(btf__add_field(b, "x", lng, 0, 0), 0);
	assert_int_equal(btf__add_field(b, "y", lng, 64, 0), 0);
	sock = btf__add_fwd(b, "sock", BTF_FWD_STRUCT);
	psock = btf__add_ptr(b, sock);
	msg = btf__add_fwd(b, "msghdr", BTF_FWD_STRUCT);
	pmsg = btf__add_ptr(b, msg);
	proto = btf__add_func_proto(b, sint);
	assert_true(proto > 0);
	assert_int_equal(btf__add_func_param(b, "sk", psock), 0);
	assert_int_equal(btf__add_func_param(b, "msg", pmsg), 0);
	assert_int_equal(btf__add_func_param(b, "size", sizet), 0);
	assert_true(btf__add_func(b, "tcp_sendmsg", BTF_FUNC_GLOBAL, proto) > 0);
	fp = btf__add_func_proto(b, sint);
	assert_int_equal(btf__add_func_param(b, "a", sint), 0);
	assert_int_equal(btf__add_func_param(b, "p", pair), 0);
	assert_int_equal(btf__add_func_param(b, "b", lng), 0);
	assert_true(btf__add_func(b, "f", BTF_FUNC_GLOBAL, fp) > 0);
	fp = btf__add_func_proto(b, sint);
	for (int i = 0; i < 7; i++) {
		char n[4] = { 'a', (char)('0' + i), 0 };

		assert_int_equal(btf__add_func_param(b, n, lng), 0);
	}
	assert_true(btf__add_func(b, "g", BTF_FUNC_GLOBAL, fp) > 0);
	raw = btf__raw_data(b, &size);
	assert_non_null(raw);
	tl_write_data(dir, "vmlinux.btf", raw, size);
	snprintf(path, 512, "%s/vmlinux.btf", dir);
	btf__free(b);
	return path;
}
#endif

static void btf_param_is(struct probe_btf *b, const char *func, const char *param, int rc,
			 const char *reg, const char *type, const char *msg)
{
	char r[6] = "", t[4] = "", buf[512];
	struct probe_msg m;

	probe_msg_init(&m, buf, sizeof(buf));
	if (probe_btf_param(b, func, param, r, t, &m) != rc)
		fail_msg("%s(%s): want %d: %s", func, param, rc, buf);
	if (reg) {
		assert_string_equal(r, reg);
		assert_string_equal(t, type);
	}
	if (msg && !strstr(buf, msg))
		fail_msg("%s(%s): \"%s\" lacks \"%s\"", func, param, buf, msg);
}

static void test_btf_fixture(void **state)
{
#ifdef CGPERF_HAVE_LIBBPF
	struct kfix *f = *state;
	char *path = fixture_btf(f->fake.root), err[512];
	struct probe_msg m;
	struct probe_btf *b;
	struct probe p = { 0 };
	char rel[512], text[2048], *got;

	probe_msg_init(&m, err, sizeof(err));
	b = probe_btf_open(path, &m);
	assert_non_null(b);
	btf_param_is(b, "tcp_sendmsg", "size", 0, "dx", "u64", NULL);
	btf_param_is(b, "tcp_sendmsg", "sk", 0, "di", "x64", NULL);
	btf_param_is(b, "tcp_sendmsg", "msg", 0, "si", "x64", NULL);
	btf_param_is(b, "tcp_sendmsg", "len", -ENOENT, NULL, NULL,
		     "tcp_sendmsg has no parameter \"len\"; its parameters: sk, msg, size");
	btf_param_is(b, "f", "a", 0, "di", "s32", NULL);
	btf_param_is(b, "f", "p", -EINVAL, NULL, NULL, "not in one register");
	btf_param_is(b, "f", "b", -EINVAL, NULL, NULL, "follows p");
	btf_param_is(b, "g", "a5", 0, "r9", "s64", NULL);
	btf_param_is(b, "g", "a6", -EINVAL, NULL, NULL, "on the stack");
	btf_param_is(b, "nosuch", "x", -ENOENT, NULL, NULL, "no BTF for nosuch");
	probe_btf_close(b);
	probe_btf_close(NULL);
	probe_msg_init(&m, err, sizeof(err));
	assert_null(probe_btf_open("/nonexistent/btf", &m));
	assert_non_null(strstr(err, "cannot read the kernel's BTF"));

	/* the whole way: `k:tcp_sendmsg size` becomes size=%dx:u64 */
	f->host.btf = path;
	kevent_fixture(f, "ID: 1999\nformat:\n"
			  "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
			  "\tfield:u64 size;\toffset:16;\tsize:8;\tsigned:0;\n"
			  "\tfield:u32 n;\toffset:24;\tsize:4;\tsigned:0;\n\n"
			  "print fmt: \"\"\n");
	assert_int_equal(resolve_msg(f, "k:tcp_sendmsg size n=+8(msg):u32", &p, err, sizeof(err)),
			 0);
	snprintf(rel, sizeof(rel), "%s/kprobe_events", f->tracefs);
	got = tl_read_file(rel, 1 << 16, NULL);
	snprintf(text, sizeof(text), "p:%s tcp_sendmsg size=%%dx:u64 n=+8(%%si):u32\n", p.kevent);
	if (!strstr(got, text))
		fail_msg("kprobe_events: \"%s\", want \"%s\"", got, text);
	free(got);
	probe_release(&p);
	assert_int_equal(resolve_msg(f, "k:tcp_sendmsg len", &p, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "k:tcp_sendmsg: tcp_sendmsg has no parameter \"len\""));
	free(path);
#else
	skip(); /* built without libbpf: parameters by name are refused */
#endif
}

/* This machine's BTF, where the kernel has it. */
static void test_btf_vmlinux(void **state)
{
	struct probe_msg m;
	struct probe_btf *b;
	char err[512];

	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		fprintf(stderr, "skip: no /sys/kernel/btf/vmlinux (kernel without BTF)\n");
		skip();
	}
	probe_msg_init(&m, err, sizeof(err));
	b = probe_btf_open(NULL, &m);
#ifndef CGPERF_HAVE_LIBBPF
	assert_null(b);
	assert_non_null(strstr(err, "without libbpf"));
	return;
#endif
	if (!b)
		fail_msg("%s", err);
	btf_param_is(b, "tcp_sendmsg", "size", 0, "dx", "u64", NULL);
	btf_param_is(b, "tcp_sendmsg", "sk", 0, "di", "x64", NULL);
	btf_param_is(b, "do_sys_openat2", "dfd", 0, "di", "s32", NULL);
	btf_param_is(b, "tcp_sendmsg", "bytes", -ENOENT, NULL, NULL, "sk, msg, size");
	probe_btf_close(b);
}

TL_MAIN_FIXTURE(kfix_setup, tl_fake_teardown, test_spec_good, test_spec_bad, test_line,
		test_refusal, test_this_host, test_kallsyms_blacklist, test_attr_pmu, test_kevent,
		test_btf_fixture, test_btf_vmlinux)
