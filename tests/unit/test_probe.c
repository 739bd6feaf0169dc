// SPDX-License-Identifier: MIT
/*
 * agent/probe: probe specs resolved against the host (libc, PostgreSQL's
 * server binary, binaries through PATH and processes' maps, SDT notes).
 *
 * Expected offsets come from outside probe.c where that is possible: the
 * address the dynamic linker gives for libc's malloc turned into a file
 * offset through /proc/self/maps; SDT offsets from usdt.c. Malformed specs
 * are table-driven. Probes opened for real are in test_probe_attach.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <asm/perf_regs.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/perf/events.h"
#include "agent/perf/probe.h"
#include "agent/symbols/symtab.h"
#include "agent/perf/usdt.h"
#include "tests/unit/probe_fixture.h"
#include "tests/unit/testlib.h"

#define POSTGRES "/usr/lib/postgresql/15/bin/postgres"
#define CALLS 1000
/* This very file even if a rebuild replaces it under its name meanwhile:
 * the uprobe PMU resolves the path in our context, symtab reads it here. */
#define SELF "/proc/self/exe"

/* ---- the function this binary probes in itself ---- */
/* ---- helpers ---- */

static char *self_exe(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	assert_true(n > 0);
	path[n] = '\0';
	return path;
}

/* File offset of @addr in this process, from /proc/self/maps. */
static uint64_t self_file_offset(const void *addr, char *path, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 256];
	uint64_t a = (uint64_t)(uintptr_t)addr, off = UINT64_MAX;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		int at = 0;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &pgoff, &at) != 3)
			continue;
		if (a >= start && a < end) {
			off = a - start + pgoff;
			line[strcspn(line, "\n")] = '\0';
			snprintf(path, size, "%s", line + at);
			break;
		}
	}
	fclose(f);
	assert_true(off != UINT64_MAX);
	return off;
}

/* ---- uprobes on libc ---- */

static void test_libc_malloc(void **state)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	char mapped[PATH_MAX];
	struct symtab *s;
	struct probe p, q;
	uint64_t want, off;
	void *addr;

	/* libc's own malloc (under ASan, RTLD_DEFAULT would give the interposer) */
	assert_non_null(libc);
	addr = dlsym(libc, "malloc");
	assert_non_null(addr);
	want = self_file_offset(addr, mapped, sizeof(mapped));
	dlclose(libc);

	resolve_ok("u:libc:malloc", NULL, 0, &p);
	assert_int_equal(p.kind, PROBE_UPROBE);
	assert_true(tl_ends_with(p.path, "/libc.so.6"));
	assert_true(tl_same_file(p.path, mapped));
	assert_string_equal(p.symbol, "malloc");
	assert_string_equal(p.label, "u:libc:malloc");
	assert_string_equal(p.spec, "u:libc:malloc");
	assert_int_equal(p.offset, want);
	assert_false(p.retprobe);
	assert_int_equal(p.ref_ctr, 0);
	assert_int_equal(p.nargs, 0);
	assert_int_equal(p.regs_mask, 0);
	assert_int_equal(p.nsites, 1);

	s = symtab_open(p.path, "");
	assert_non_null(s);
	assert_int_equal(symtab_find(s, "malloc", &off), 0);
	assert_int_equal(off, p.offset);
	symtab_free(s);

	/* "c", the exact file name and the path find the same file */
	const char *const same[] = { "u:c:malloc", "u:libc.so.6:malloc" };

	for (size_t i = 0; i < 2; i++) {
		resolve_ok(same[i], NULL, 0, &q);
		assert_string_equal(q.path, p.path);
		assert_int_equal(q.offset, p.offset);
		probe_release(&q);
	}
	{
		char spec[PATH_MAX + 16];

		snprintf(spec, sizeof(spec), "u:%s:malloc", mapped);
		resolve_ok(spec, NULL, 0, &q);
		assert_string_equal(q.path, mapped);
		assert_int_equal(q.offset, p.offset);
		assert_string_equal(q.label, "u:libc.so.6:malloc");
		probe_release(&q);
	}
	probe_release(&p);
	probe_release(&p); /* released twice: harmless */
	probe_release(NULL);
}

static void test_libc_variants(void **state)
{
	struct probe base, p;

	resolve_ok("u:libc:malloc", NULL, 0, &base);

	resolve_ok("u:libc:malloc%return", NULL, 0, &p);
	assert_true(p.retprobe);
	assert_int_equal(p.offset, base.offset);
	assert_string_equal(p.label, "u:libc:malloc%return");
	probe_release(&p);

	resolve_ok("u:libc:malloc+4", NULL, 0, &p);
	assert_false(p.retprobe);
	assert_int_equal(p.offset, base.offset + 4);
	assert_string_equal(p.symbol, "malloc");
	assert_string_equal(p.label, "u:libc:malloc+0x4");
	probe_release(&p);

	resolve_ok("u:libc:malloc+0x8", NULL, 0, &p);
	assert_int_equal(p.offset, base.offset + 8);
	probe_release(&p);
	resolve_ok("u:libc:malloc+010", NULL, 0, &p); /* decimal, not octal */
	assert_int_equal(p.offset, base.offset + 10);
	probe_release(&p);

	/* +0 is no offset: allowed with %return */
	resolve_ok("u:libc:malloc+0%return", NULL, 0, &p);
	assert_true(p.retprobe);
	assert_int_equal(p.offset, base.offset);
	probe_release(&p);

	resolve_ok("u:libc:malloc size=%di", NULL, 0, &p);
	assert_int_equal(p.nargs, 1);
	assert_string_equal(p.args[0].name, "size");
	assert_null(p.args[0].field);
	assert_int_equal(p.args[0].a.kind, USDT_ARG_REG);
	assert_int_equal(p.args[0].a.size, 8);
	assert_int_equal(p.args[0].a.reg, PERF_REG_X86_DI);
	assert_int_equal(p.args[0].a.reg_bytes, 8); /* perf's %di is all of %rdi */
	assert_int_equal(p.regs_mask, UINT64_C(1) << PERF_REG_X86_DI);
	probe_release(&p);

	/* several registers, spelt every way, and ABI argument numbers */
	resolve_ok("u:libc:malloc\ta=%rdi  b=%esi c=arg2 arg3 %r8 d=%r9d", NULL, 0, &p);
	assert_int_equal(p.nargs, 6);
	assert_string_equal(p.args[3].name, "arg3");
	assert_string_equal(p.args[4].name, "r8");
	assert_int_equal(p.args[1].a.reg, PERF_REG_X86_SI);
	assert_int_equal(p.args[1].a.reg_bytes, 4);
	assert_int_equal(p.args[2].a.reg, PERF_REG_X86_DX);
	assert_int_equal(p.args[3].a.reg, PERF_REG_X86_CX);
	assert_int_equal(p.args[5].a.reg, PERF_REG_X86_R9);
	assert_int_equal(p.args[5].a.reg_bytes, 4);
	assert_int_equal(p.regs_mask,
			 (UINT64_C(1) << PERF_REG_X86_DI) | (UINT64_C(1) << PERF_REG_X86_SI) |
				 (UINT64_C(1) << PERF_REG_X86_DX) | (UINT64_C(1) << PERF_REG_X86_CX) |
				 (UINT64_C(1) << PERF_REG_X86_R8) | (UINT64_C(1) << PERF_REG_X86_R9));
	probe_release(&p);

	resolve_ok("u:libc:malloc pc=%ip", NULL, 0, &p);
	assert_int_equal(p.args[0].a.reg, PERF_REG_X86_IP);
	assert_int_equal(p.args[0].a.reg_bytes, 8);
	probe_release(&p);

	/* the return value at return */
	resolve_ok("u:libc:malloc%return ret=%ax", NULL, 0, &p);
	assert_int_equal(p.args[0].a.reg, PERF_REG_X86_AX);
	assert_int_equal(p.regs_mask, UINT64_C(1) << PERF_REG_X86_AX);
	probe_release(&p);
	probe_release(&base);
}

static void test_unknown_symbol(void **state)
{
	const char *const mallok[] = { "mallok", "malloc", "did you mean", NULL };

	resolve_fails("u:libc:mallok", NULL, 0, -ENOENT, mallok);
	/* something far from everything: no suggestions, still what was searched */
	resolve_fails("u:libc:qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq", NULL, 0, -ENOENT,
		      (const char *const[]){ "libc.so.6", "functions", NULL });
}

static void test_unknown_binary(void **state)
{
	const char *const needles[] = { "nosuchbinary", "PATH", "/usr/lib/x86_64-linux-gnu",
					"give its path", NULL };
	const char *const with_pid[] = { "not mapped by pid", NULL };
	int pid = getpid();

	resolve_fails("u:nosuchbinary:x", NULL, 0, -ENOENT, needles);
	resolve_fails("u:nosuchbinary:x", &pid, 1, -ENOENT, with_pid);
}

static void test_postgres(void **state)
{
	const char *spec = "u:" POSTGRES ":exec_simple_query";
	struct symtab *s;
	struct probe p;
	uint64_t off;

	if (access(POSTGRES, R_OK) != 0) {
		print_message("%s missing: PostgreSQL 15 not installed\n", POSTGRES);
		skip();
	}
	s = symtab_open(POSTGRES, "");
	assert_non_null(s);
	if (symtab_find(s, "exec_simple_query", &off) == 0) {
		/* debuginfo installed: the static function is known */
		resolve_ok(spec, NULL, 0, &p);
		assert_string_equal(p.path, POSTGRES);
		assert_int_equal(p.offset, off);
		probe_release(&p);
	} else {
		/* stripped, exported symbols only: say so */
		print_message("exec_simple_query is static and %s has no debuginfo here\n",
			      POSTGRES);
		resolve_fails(spec, NULL, 0, -ENOENT,
			      (const char *const[]){ "exec_simple_query", "no debuginfo", NULL });
	}
	/* an exported function resolves either way */
	assert_int_equal(symtab_find(s, "PostgresMain", &off), 0);
	resolve_ok("u:" POSTGRES ":PostgresMain", NULL, 0, &p);
	assert_int_equal(p.offset, off);
	assert_string_equal(p.label, "u:postgres:PostgresMain");
	probe_release(&p);
	symtab_free(s);
}

/* symtab_find() and symtab_name_at(), added for probes */
static void test_symtab_names(void **state)
{
	struct symtab *s = symtab_open(SELF, "");
	size_t n = symtab_count(s), found = 0;
	uint64_t off, off2, in;
	const char *name, *back;

	assert_non_null(s);
	assert_true(n > 10);
	assert_null(symtab_name_at(s, n, &off));
	assert_null(symtab_name_at(NULL, 0, &off));
	assert_int_equal(symtab_find(NULL, "probe_target", &off), -ENOENT);
	assert_int_equal(symtab_find(s, NULL, &off), -ENOENT);
	assert_int_equal(symtab_find(s, "no_such_function_here", &off), -ENOENT);
	/* the function's own address, through our maps */
	{
		char mapped[PATH_MAX];

		assert_int_equal(symtab_find(s, "probe_target", &off), 0);
		assert_int_equal(off, self_file_offset((const void *)probe_target, mapped,
						       sizeof(mapped)));
	}
	/* every name leads back to itself (where it is the only one) */
	for (size_t i = 0; i < n; i++) {
		name = symtab_name_at(s, i, &off);
		assert_non_null(name);
		assert_ptr_equal(symtab_name_at(s, i, NULL), name);
		if (off == UINT64_MAX || symtab_find(s, name, &off2) < 0 || off2 != off)
			continue;
		assert_int_equal(symtab_lookup(s, off, &back, &in), 0);
		assert_string_equal(back, name);
		assert_int_equal(in, 0);
		found++;
	}
	assert_true(found * 10 >= n * 9);
	symtab_free(s);
}

/* ---- binaries found through PATH and through processes' maps ---- */

static char tmpdir[] = "/tmp/test_probe.XXXXXX";

static void copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	char buf[65536];
	ssize_t n;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static void test_path_and_pids(void **state)
{
	char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	char prog[PATH_MAX], script[PATH_MAX], spec[PATH_MAX + 64];
	int pid = getpid();
	struct probe p, q;
	FILE *f;

	assert_non_null(mkdtemp(tmpdir));
	snprintf(prog, sizeof(prog), "%s/myprog", tmpdir);
	snprintf(script, sizeof(script), "%s/myscript", tmpdir);
	copy_file(SELF, prog, 0755);
	f = fopen(script, "we");
	assert_non_null(f);
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	assert_int_equal(chmod(script, 0755), 0);

	/* PATH: the ELF executable, not a script; relative entries ignored */
	snprintf(spec, sizeof(spec), ".:%s:/usr/bin:/bin", tmpdir);
	setenv("PATH", spec, 1);
	resolve_ok("u:myprog:probe_target", NULL, 0, &p);
	assert_string_equal(p.path, prog);
	resolve_fails("u:myscript:x", NULL, 0, -ENOENT,
		      (const char *const[]){ "is not ELF", NULL });
	if (old)
		setenv("PATH", old, 1);
	else
		unsetenv("PATH");
	free(old);

	/* this test binary is in no PATH; our own maps find it */
	snprintf(spec, sizeof(spec), "u:%s:probe_target", strrchr(self_exe(), '/') + 1);
	resolve_ok(spec, &pid, 1, &q);
	assert_true(tl_same_file(q.path, SELF));
	assert_int_equal(q.offset, p.offset); /* the copy has the same layout */
	probe_release(&q);
	/* libc through the maps: the same file, named plainly (same mount namespace) */
	resolve_ok("u:libc:malloc", &pid, 1, &q);
	assert_true(tl_ends_with(q.path, "/libc.so.6"));
	assert_null(strstr(q.path, "/proc/"));
	probe_release(&q);
	/* a pid that does not exist is passed over */
	{
		int pids[] = { INT_MAX - 1, 0, -3 };

		resolve_ok("u:libc:malloc", pids, 3, &q);
		probe_release(&q);
	}
	probe_release(&p);
	assert_int_equal(tl_rmtree(strdup(tmpdir)), 0);
}

/* ---- malformed specs ---- */

struct bad_case {
	const char *spec;
	int err;
	const char *needle;
};

static const struct bad_case bad[] = {
	{ "", -EINVAL, "empty" },
	{ " \t ", -EINVAL, "empty" },
	{ "u:", -EINVAL, "u:BINARY:SYMBOL" },
	{ "u:libc", -EINVAL, "u:BINARY:SYMBOL" },
	{ "u:libc:", -EINVAL, "u:BINARY:SYMBOL" },
	{ "u::malloc", -EINVAL, "u:BINARY:SYMBOL" },
	{ "u:libc:malloc+", -EINVAL, "bad offset" },
	{ "u:libc:malloc+zz", -EINVAL, "bad offset" },
	{ "u:libc:malloc+-4", -EINVAL, "bad offset" },
	{ "u:libc:malloc+4x", -EINVAL, "bad offset" },
	{ "u:libc:malloc+0x", -EINVAL, "bad offset" },
	{ "u:libc:malloc+0x-4", -EINVAL, "bad offset" },
	{ "u:libc:malloc+ 4", -EINVAL, "bad offset" },
	{ "u:libc:malloc+99999999999999999999999", -EINVAL, "bad offset" },
	{ "u:libc:+4", -EINVAL, "bad offset" },
	{ "u:libc:malloc+4%return", -EINVAL, "%return" },
	{ "u:libc:malloc%ret", -EINVAL, "%return" },
	{ "u:libc:malloc%return%return", -EINVAL, "%return" },
	{ "u:libc:malloc+0x100000", -EINVAL, "outside malloc" },
	{ "u:libc:malloc x=%nosuch", -EINVAL, "unknown register" },
	{ "u:libc:malloc x=%ah", -EINVAL, "unknown register" },
	{ "u:libc:malloc x=%", -EINVAL, "unknown register" },
	{ "u:libc:malloc x=di", -EINVAL, "%REG or argN" },
	{ "u:libc:malloc =%di", -EINVAL, "bad argument name" },
	{ "u:libc:malloc 1x=%di", -EINVAL, "bad argument name" },
	{ "u:libc:malloc a-b=%di", -EINVAL, "bad argument name" },
	{ "u:libc:malloc a=%di a=%si", -EINVAL, "named twice" },
	{ "u:libc:malloc %di %di", -EINVAL, "named twice" },
	{ "u:libc:malloc a=arg6", -EINVAL, "arg0..arg5" },
	{ "u:libc:malloc a=arg01", -EINVAL, "%REG or argN" },
	{ "u:libc:malloc a=arg", -EINVAL, "%REG or argN" },
	{ "u:libc:malloc%return a=arg0", -EINVAL, "return value" },
	{ "u:libc:malloc a b c d e f g h i j k l m", -E2BIG, "too many" },
	{ "sdt:a", -EINVAL, "sdt:PROVIDER:NAME" },
	{ "sdt::x@/bin/true", -EINVAL, "sdt:PROVIDER:NAME" },
	{ "sdt:a:@/bin/true", -EINVAL, "sdt:PROVIDER:NAME" },
	{ "sdt:a:b@", -EINVAL, "sdt:PROVIDER:NAME" },
	{ "sdt:a:b:c@/bin/true", -EINVAL, "sdt:PROVIDER:NAME" },
	{ "nocolon", -EINVAL, "not a probe" },
	{ "a:b:c", -EINVAL, "not a probe" },
	{ ":x", -EINVAL, "not a probe" },
	{ "x:", -EINVAL, "not a probe" },
	{ "cycles:u", -EINVAL, "not a tracepoint" },
	{ "..:x", -EINVAL, "malformed" },
	/* well formed, with nothing to attach to on any host */
	{ "u:libc:xx_pthread_mutex_lock_xx", -ENOENT, "pthread_mutex_lock" }, /* offered */
	{ "u:/no/such/file:x", -ENOENT, "/no/such/file" },
	{ "u:/etc/hostname:x", -ENOEXEC, "not an ELF file" },
	{ "u:/tmp:x", -EINVAL, "not a regular file" },
	{ "sdt:x:y@/bin/true", -ENOENT, "/bin/true has no SDT notes" },
	{ "sdt:x:y@/etc/hostname", -ENOEXEC, "not an ELF file" },
	{ "sdt:x:y@nosuchbinary", -ENOENT, "cannot find binary" },
};

static void test_malformed(void **state)
{
	char *huge;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *const needles[] = { bad[i].needle, NULL };

		resolve_fails(bad[i].spec, NULL, 0, bad[i].err, needles);
	}
	huge = malloc(8192);
	assert_non_null(huge);
	memset(huge, 'a', 8191);
	huge[8191] = '\0';
	memcpy(huge, "u:libc:", 7);
	resolve_fails(huge, NULL, 0, -E2BIG, (const char *const[]){ "longer than", NULL });
	free(huge);
}

static void test_message_buffer(void **state)
{
	struct probe p;
	char small[12];

	/* no buffer at all, or none to write in */
	assert_int_equal(probe_resolve("u:libc:mallok", NULL, 0, &p, NULL, 0), -ENOENT);
	assert_int_equal(probe_resolve("u:libc:mallok", NULL, 0, &p, small, 0), -ENOENT);
	/* a short buffer is cut and terminated */
	memset(small, 'x', sizeof(small));
	assert_int_equal(probe_resolve("u:nosuchbinary:x", NULL, 0, &p, small, sizeof(small)),
			 -ENOENT);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(probe_resolve(NULL, NULL, 0, &p, small, sizeof(small)), -EINVAL);
	assert_int_equal(probe_resolve("u:libc:malloc", NULL, 0, NULL, small, sizeof(small)),
			 -EINVAL);
	/* success leaves an empty message */
	memset(small, 'x', sizeof(small));
	assert_int_equal(probe_resolve("u:libc:malloc a=%di", NULL, 0, &p, small, sizeof(small)),
			 0);
	assert_string_equal(small, "");
	probe_release(&p);
}

/* ---- USDT ---- */

static void test_sdt_postgres(void **state)
{
	const char *spec = "sdt:postgresql:query__start@" POSTGRES;
	const struct usdt_probe *up;
	struct usdt_list *l;
	struct probe p;
	int sites = 0;

	if (access(POSTGRES, R_OK) != 0) {
		print_message("%s missing: PostgreSQL 15 not installed\n", POSTGRES);
		skip();
	}
	l = usdt_read(POSTGRES);
	assert_non_null(l);
	up = usdt_find(l, "postgresql", "query__start");
	assert_non_null(up);
	for (const struct usdt_probe *o = up; o; o = usdt_find_next(l, o, "postgresql", "query__start"))
		sites++;

	resolve_ok(spec, NULL, 0, &p);
	assert_int_equal(p.kind, PROBE_USDT);
	assert_string_equal(p.path, POSTGRES);
	assert_string_equal(p.symbol, "postgresql:query__start");
	assert_string_equal(p.label, "sdt:postgresql:query__start");
	assert_int_equal(p.offset, up->pc_off);
	assert_int_equal(p.ref_ctr, up->sema_off);
	assert_true(p.ref_ctr != 0);
	assert_int_equal(p.nsites, sites);
	assert_int_equal(p.nargs, 0);
	probe_release(&p);

	/* its one argument, by number and by name */
	assert_int_equal(up->nargs, 1);
	resolve_ok("sdt:postgresql:query__start@" POSTGRES " query=arg0", NULL, 0, &p);
	assert_int_equal(p.nargs, 1);
	assert_string_equal(p.args[0].name, "query");
	assert_memory_equal(&p.args[0].a, &up->args[0], sizeof(up->args[0]));
	if (up->args[0].kind != USDT_ARG_CONST)
		assert_int_equal(p.regs_mask, UINT64_C(1) << up->args[0].reg);
	probe_release(&p);

	resolve_fails("sdt:postgresql:query__start@" POSTGRES " arg1", NULL, 0, -EINVAL,
		      (const char *const[]){ "1 argument", "arg0..arg0", NULL });
	resolve_fails("sdt:postgresql:query__start@" POSTGRES " x=%di", NULL, 0, -EINVAL,
		      (const char *const[]){ "takes argN", NULL });
	resolve_fails("sdt:postgresql:query__strat@" POSTGRES, NULL, 0, -ENOENT,
		      (const char *const[]){ "postgresql:query__start", "did you mean", NULL });
	resolve_fails("sdt:postgres:query__start@" POSTGRES, NULL, 0, -ENOENT,
		      (const char *const[]){ "postgresql:query__start", NULL });
	/* "postgres" through PATH would not be found; named, it is */
	resolve_fails("sdt:postgresql:query__start", NULL, 0, -ENOENT,
		      (const char *const[]){ "@BINARY", NULL });
	usdt_free(l);
}

/* The grammar's parts, host-independent (probe_spec.h). */
static void test_spec_parts(void **state)
{
	static const struct {
		const char *spec;
		enum probe_kind kind;
		const char *head, *binary, *group, *name, *arg0;
		uint64_t offset;
		int nargs, argn0;
	} cases[] = {
		{ "u:/usr/lib/libc.so.6:malloc+0x10 n=%di arg1", PROBE_UPROBE,
		  "u:/usr/lib/libc.so.6:malloc+0x10", "/usr/lib/libc.so.6", NULL, "malloc", "n",
		  0x10, 2, -1 },
		{ "sdt:postgresql:query__start@postgres q=arg0", PROBE_USDT,
		  "sdt:postgresql:query__start@postgres", "postgres", "postgresql", "query__start",
		  "q", 0, 1, 0 },
		{ "  sched:sched_switch\tprev_pid\n", PROBE_TRACEPOINT, "sched:sched_switch", NULL,
		  "sched", "sched_switch", "prev_pid", 0, 1, -1 },
		{ "u:libc:free%return", PROBE_UPROBE, "u:libc:free%return", "libc", NULL, "free",
		  NULL, 0, 0, 0 },
	};
	struct probe_spec s;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (probe_spec_parse(cases[i].spec, &s, err, sizeof(err)))
			fail_msg("\"%s\": %s", cases[i].spec, err);
		assert_int_equal(s.kind, cases[i].kind);
		assert_string_equal(s.head, cases[i].head);
		tl_assert_str_or_null(s.binary, cases[i].binary);
		tl_assert_str_or_null(s.group, cases[i].group);
		assert_string_equal(s.name, cases[i].name);
		assert_int_equal(s.offset, cases[i].offset);
		assert_int_equal(s.retprobe, strstr(cases[i].spec, "%return") != NULL);
		assert_int_equal(s.nargs, cases[i].nargs);
		if (cases[i].arg0) {
			assert_string_equal(s.args[0].name, cases[i].arg0);
			assert_int_equal(s.args[0].argn, cases[i].argn0);
			assert_non_null(probe_spec_arg(&s, cases[i].arg0));
		}
		probe_spec_release(&s);
		probe_spec_release(&s); /* zeroed: fine */
	}
	probe_spec_release(NULL);
	memset(&s, 0xa5, sizeof(s));
	assert_int_equal(probe_spec_parse("u:libc:malloc%return arg0", &s, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "u:libc:malloc%return: arg0 is gone at return; the return value "
				 "is %ax");
	assert_int_equal(((unsigned char *)&s)[0], 0xa5); /* untouched on failure */
	assert_int_equal(probe_spec_parse(NULL, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(probe_spec_parse("u:libc:f", &s, NULL, 0), 0);
	probe_spec_release(&s);
}

TL_MAIN(test_libc_malloc, test_libc_variants, test_unknown_symbol, test_unknown_binary,
	test_postgres, test_symtab_names, test_path_and_pids, test_malformed, test_spec_parts,
	test_message_buffer, test_sdt_postgres)
