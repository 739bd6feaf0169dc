// SPDX-License-Identifier: MIT
/*
 * cgroup/proc: reading processes from a fake procfs tree built in a temp
 * dir (odd comms, kernel threads, vanished pids, missing cgroup v2 line),
 * from the real /proc (ourselves, a zombie child, a reaped child), and
 * selector parsing and matching driven by tables of cases kept as data
 * (tests/unit/data/proc_selector_match.tsv, proc_selector_bad.tsv).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/proc.h"
#include "tests/unit/testlib.h"

/* A process directory; @exe NULL leaves out the exe link, as for kernel threads. */
static void fake_proc(const struct tl_fake *f, int pid, const char *comm, const char *stat,
		      const char *exe, const void *cmdline, size_t cmdline_len, const char *cgroup)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "%d", pid);
	tl_mkdirs(f->root, rel);
	snprintf(rel, sizeof(rel), "%d/comm", pid);
	tl_write_file(f->root, rel, comm);
	snprintf(rel, sizeof(rel), "%d/stat", pid);
	tl_write_file(f->root, rel, stat);
	if (exe) {
		snprintf(rel, sizeof(rel), "%d/exe", pid);
		tl_symlink(f->root, rel, exe);
	}
	snprintf(rel, sizeof(rel), "%d/cmdline", pid);
	tl_write_data(f->root, rel, cmdline, cmdline_len);
	snprintf(rel, sizeof(rel), "%d/cgroup", pid);
	tl_write_file(f->root, rel, cgroup);
}

#define LONG_EXE_LEN 3000 /* well past readlink's first buffer */
#define BIG_CMDLINE_LEN (CG_PROC_CMDLINE_MAX + 6000)

static const char pg_cmdline[] = "/usr/lib/postgresql/15/bin/postgres\0-D\0/var/lib/pg/15/main\0";
/* setproctitle() style: one string padded with NULs. */
static const char ckpt_cmdline[] = "postgres: 15/main: checkpointer\0\0\0\0\0";
static const char odd_cmdline[] = "evil\0a,b\0\0x\0";

static int fake_setup(void **state)
{
	struct tl_fake *f = tl_fake_new("test_proc", sizeof(*f));
	char *long_exe, *big;

	fake_proc(f, 1, "systemd\n", "1 (systemd) S 0 1 1 0 -1 4194560 1 2 3\n",
		  "/usr/lib/systemd/systemd", "/sbin/init\0splash", 17, "0::/init.scope\n");
	fake_proc(f, 2, "kthreadd\n", "2 (kthreadd) S 0 0 0 0 -1 2129984\n", NULL, "", 0,
		  "0::/\n");
	fake_proc(f, 100, "postgres\n", "100 (postgres) S 1 100 100 0 -1 4194560\n",
		  "/usr/lib/postgresql/15/bin/postgres", pg_cmdline, sizeof(pg_cmdline) - 1,
		  "12:pids:/system.slice/postgresql@15-main.service\n"
		  "1:name=systemd:/system.slice/postgresql@15-main.service\n"
		  "0::/system.slice/postgresql@15-main.service\n");
	fake_proc(f, 101, "postgres\n", "101 (postgres) S 100 100 100 0 -1 4194368\n",
		  "/usr/lib/postgresql/15/bin/postgres", ckpt_cmdline, sizeof(ckpt_cmdline) - 1,
		  "0::/system.slice/postgresql@15-main.service\n");
	/* A comm that imitates the fields after it, with spaces and ')'. */
	fake_proc(f, 4242, "x) S 9 (y z)\n", "4242 (x) S 9 (y z)) R 100 4242 4242 0 -1 0\n",
		  "/tmp/evil (deleted)", odd_cmdline, sizeof(odd_cmdline) - 1,
		  "0::/user.slice/user-1000.slice/session-3.scope");

	/* No cgroup v2 line; oversized comm, exe target and cmdline. */
	long_exe = malloc(LONG_EXE_LEN + 1);
	big = malloc(BIG_CMDLINE_LEN);
	assert_non_null(long_exe);
	assert_non_null(big);
	memset(long_exe, 'e', LONG_EXE_LEN);
	long_exe[0] = '/';
	long_exe[LONG_EXE_LEN] = '\0';
	memset(big, 'a', BIG_CMDLINE_LEN);
	fake_proc(f, 31337, "averyveryverylongcommname\n", "31337 (averyveryverylo) S 1 0\n",
		  long_exe, big, BIG_CMDLINE_LEN, "2:cpu:/legacy\n1:name=systemd:/legacy\n");
	free(long_exe);
	free(big);

	/* Gone between readdir() and the read: the directory has no files left. */
	tl_mkdirs(f->root, "9999");
	/* Entries that are not processes. */
	tl_symlink(f->root, "self", "100");
	tl_mkdirs(f->root, "sys");
	tl_mkdirs(f->root, "12ab");
	tl_mkdirs(f->root, "0");
	tl_write_file(f->root, "77", "not a directory\n");

	*state = f;
	return 0;
}

/* What cg_proc_read() gives for the fake processes (exe NULL: none). */
static const struct {
	int pid, ppid;
	const char *comm, *exe, *cmdline, *cgroup;
} procs[] = {
	{ 100, 1, "postgres", "/usr/lib/postgresql/15/bin/postgres",
	  "/usr/lib/postgresql/15/bin/postgres -D /var/lib/pg/15/main",
	  "/system.slice/postgresql@15-main.service" },
	/* no trailing NUL at all; NUL padding */
	{ 1, 0, "systemd", "/usr/lib/systemd/systemd", "/sbin/init splash", "/init.scope" },
	{ 101, 100, "postgres", "/usr/lib/postgresql/15/bin/postgres",
	  "postgres: 15/main: checkpointer", "/system.slice/postgresql@15-main.service" },
	/* A comm that imitates the fields after it: the ppid is not the 9
	 * inside it; an empty argument between two NULs stays visible as a
	 * double blank; the cgroup's last line has no newline. */
	{ 4242, 100, "x) S 9 (y z)", "/tmp/evil (deleted)", "evil a,b  x",
	  "/user.slice/user-1000.slice/session-3.scope" },
	/* a kernel thread: no exe, an empty command line */
	{ 2, 0, "kthreadd", NULL, "", "/" },
};

static void test_read_table(void **state)
{
	struct tl_fake *f = *state;
	struct cg_proc p;

	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		assert_int_equal(cg_proc_read(f->root, procs[i].pid, &p), 0);
		assert_int_equal(p.pid, procs[i].pid);
		assert_int_equal(p.ppid, procs[i].ppid);
		assert_string_equal(p.comm, procs[i].comm);
		tl_assert_str_or_null(p.exe, procs[i].exe);
		assert_string_equal(p.cmdline, procs[i].cmdline);
		assert_string_equal(p.cgroup, procs[i].cgroup);
		cg_proc_release(&p);
	}
	/* released: nothing left, and releasing again is harmless */
	assert_null(p.exe);
	assert_null(p.cmdline);
	assert_null(p.cgroup);
	cg_proc_release(&p);
	cg_proc_release(NULL);
}

static void test_read_caps_and_no_v2(void **state)
{
	struct tl_fake *f = *state;
	struct cg_proc p;
	size_t i;

	assert_int_equal(cg_proc_read(f->root, 31337, &p), 0);
	assert_int_equal(p.ppid, 1);
	assert_string_equal(p.comm, "averyveryverylon"); /* cut to 16 bytes */
	assert_null(p.cgroup);
	assert_non_null(p.exe);
	assert_int_equal(strlen(p.exe), LONG_EXE_LEN);
	assert_int_equal(strlen(p.cmdline), CG_PROC_CMDLINE_MAX);
	for (i = 1; i < LONG_EXE_LEN; i++)
		assert_int_equal(p.exe[i], 'e');
	cg_proc_release(&p);
}

static void test_read_errors(void **state)
{
	static char sentinel[] = "untouched";
	struct tl_fake *f = *state;
	struct cg_proc p = { .pid = -7, .exe = sentinel, .cmdline = sentinel, .cgroup = sentinel };
	char path[PATH_MAX];

	assert_int_equal(cg_proc_read(f->root, 9999, &p), -ENOENT); /* vanished */
	assert_int_equal(cg_proc_read(f->root, 12345, &p), -ENOENT); /* never existed */
	assert_int_equal(cg_proc_read(f->root, 0, &p), -EINVAL);
	assert_int_equal(cg_proc_read(f->root, -1, &p), -EINVAL);
	assert_int_equal(cg_proc_read(f->root, 77, &p), -ENOTDIR);
	assert_int_equal(cg_proc_read("/nonexistent/procfs", 1, &p), -ENOENT);
	assert_int_equal(cg_proc_read(NULL, 1, &p), -EINVAL);
	assert_int_equal(cg_proc_read(f->root, 1, NULL), -EINVAL);

	/* A process that dies after its stat was read: cmdline is gone. */
	tl_pathf(path, sizeof(path), "%s/%s", f->root, "101/cmdline");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(cg_proc_read(f->root, 101, &p), -ENOENT);

	assert_int_equal(p.pid, -7);
	assert_ptr_equal(p.exe, sentinel);
	assert_ptr_equal(p.cmdline, sentinel);
	assert_ptr_equal(p.cgroup, sentinel);
}

static void test_read_bad_stat(void **state)
{
	static const char *const bad[] = {
		"",
		"500 no parens S 1\n",
		"500 (x)",
		"500 (x) ",
		"500 (x) S",
		"500 (x) S ",
		"500 (x) S -1 0\n",
		"500 (x) S x 0\n",
		"500 (x) S 12x 0\n",
		"500 (x)S 1 0\n",
		"500 (x)  1 0\n",
		"500 (x) S 99999999999 0\n",
		"500 (x) S 1 (y) 0\n", /* the last ')' wins, and no state follows it */
	};
	struct tl_fake *f = *state;
	struct cg_proc p;
	size_t i;

	fake_proc(f, 500, "x\n", "500 (x) S 42\n", NULL, "", 0, "0::/\n");
	assert_int_equal(cg_proc_read(f->root, 500, &p), 0);
	assert_int_equal(p.ppid, 42); /* end of file right after the ppid */
	cg_proc_release(&p);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tl_write_file(f->root, "500/stat", bad[i]);
		if (cg_proc_read(f->root, 500, &p) != -EBADMSG)
			fail_msg("stat \"%s\" was not rejected", bad[i]);
	}

	/* Not a vanished process: the listing must report it, not skip it. */
	errno = 0;
	assert_null(cg_proc_list_read(f->root));
	assert_int_equal(errno, EBADMSG);
}

static void test_list_fake(void **state)
{
	static const pid_t want[] = { 1, 2, 100, 101, 4242, 31337 };
	struct tl_fake *f = *state;
	struct cg_proc_list *l;
	const struct cg_proc *p;
	size_t i;

	l = cg_proc_list_read(f->root);
	assert_non_null(l);
	assert_int_equal(cg_proc_list_count(l), sizeof(want) / sizeof(want[0]));
	for (i = 0; i < cg_proc_list_count(l); i++) {
		p = cg_proc_list_get(l, i);
		assert_non_null(p);
		assert_int_equal(p->pid, want[i]);
	}
	assert_null(cg_proc_list_get(l, i));
	p = cg_proc_list_get(l, 4);
	assert_string_equal(p->comm, "x) S 9 (y z)");
	assert_int_equal(p->ppid, 100);
	cg_proc_list_free(l);

	assert_int_equal(cg_proc_list_count(NULL), 0);
	assert_null(cg_proc_list_get(NULL, 0));
	cg_proc_list_free(NULL);

	errno = 0;
	assert_null(cg_proc_list_read("/nonexistent/procfs"));
	assert_int_equal(errno, ENOENT);
}

/* Many entries, created in an order that readdir() will not sort. */
static void test_list_grows_and_sorts(void **state)
{
	struct tl_fake *f = *state;
	struct cg_proc_list *l;
	char stat[64];
	int i, pid, n = 0;

	for (i = 0; i < 700; i++) {
		pid = 200000 + (i * 389) % 700; /* a permutation of 0..699 */
		snprintf(stat, sizeof(stat), "%d (w) S 1 0\n", pid);
		fake_proc(f, pid, "w\n", stat, NULL, "w", 1, "0::/w\n");
	}
	l = cg_proc_list_read(f->root);
	assert_non_null(l);
	assert_int_equal(cg_proc_list_count(l), 6 + 700);
	for (i = 1; i < (int)cg_proc_list_count(l); i++) {
		assert_true(cg_proc_list_get(l, i - 1)->pid < cg_proc_list_get(l, i)->pid);
		if (cg_proc_list_get(l, i)->pid >= 200000)
			n++;
	}
	assert_int_equal(n, 700);
	cg_proc_list_free(l);
}

/* Mount point of the cgroup v2 hierarchy, from /proc/self/mountinfo. */
static bool cgroup2_mount(char *buf, size_t len)
{
	char line[4096], mnt[PATH_MAX], fstype[64];
	const char *sep;
	bool found = false;
	FILE *fp;

	fp = fopen("/proc/self/mountinfo", "re");
	assert_non_null(fp);
	while (!found && fgets(line, sizeof(line), fp)) {
		sep = strstr(line, " - ");
		if (!sep || sscanf(sep, " - %63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && strlen(mnt) < len) {
			memcpy(buf, mnt, strlen(mnt) + 1);
			found = true;
		}
	}
	fclose(fp);
	return found;
}

static bool file_has_pid(const char *path, pid_t pid)
{
	FILE *fp = fopen(path, "re");
	bool found = false;
	int v;

	if (!fp)
		return false;
	while (!found && fscanf(fp, "%d", &v) == 1)
		found = v == pid;
	fclose(fp);
	return found;
}

static void test_read_self(void **state)
{
	char comm[16], mnt[PATH_MAX], dir[PATH_MAX * 2 + 32];
	struct stat st_link, st_exe;
	struct cg_proc p;

	assert_int_equal(cg_proc_read("/proc", getpid(), &p), 0);
	assert_int_equal(p.pid, getpid());
	assert_int_equal(p.ppid, getppid());

	/* Our own view of our name (not program_invocation_short_name: a
	 * wrapper such as valgrind execs under its own name). */
	assert_int_equal(prctl(PR_GET_NAME, comm), 0);
	comm[sizeof(comm) - 1] = '\0';
	assert_string_equal(p.comm, comm);

	assert_non_null(p.exe);
	assert_int_equal(p.exe[0], '/');
	assert_int_equal(stat("/proc/self/exe", &st_link), 0);
	assert_int_equal(stat(p.exe, &st_exe), 0);
	assert_true(st_link.st_dev == st_exe.st_dev && st_link.st_ino == st_exe.st_ino);

	assert_non_null(p.cmdline);
	assert_non_null(strstr(p.cmdline, program_invocation_name));

	/* Cross-check the cgroup path against the hierarchy itself. */
	assert_non_null(p.cgroup);
	assert_int_equal(p.cgroup[0], '/');
	if (!cgroup2_mount(mnt, sizeof(mnt))) {
		cg_proc_release(&p);
		print_message("no cgroup2 mount: cgroup path not cross-checked\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "%s%s/cgroup.procs", mnt, p.cgroup);
	if (!file_has_pid(dir, getpid()))
		fail_msg("pid %d not in %s", (int)getpid(), dir);
	cg_proc_release(&p);
}

static void test_list_self(void **state)
{
	struct cg_proc_list *l = cg_proc_list_read("/proc");
	const struct cg_proc *p;
	bool self = false;
	size_t i;

	assert_non_null(l);
	assert_true(cg_proc_list_count(l) >= 1);
	for (i = 0; i < cg_proc_list_count(l); i++) {
		p = cg_proc_list_get(l, i);
		if (i > 0)
			assert_true(cg_proc_list_get(l, i - 1)->pid < p->pid);
		assert_non_null(p->cmdline);
		if (p->pid == getpid()) {
			self = true;
			assert_non_null(p->exe);
		}
	}
	assert_true(self);
	cg_proc_list_free(l);
}

/* Real processes in their last states: an unreaped zombie, then none at all. */
static void test_read_zombie_and_reaped(void **state)
{
	struct cg_proc p;
	siginfo_t si;
	pid_t child;
	int status;

	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	/* WNOWAIT: wait for the exit but leave the zombie in place. */
	memset(&si, 0, sizeof(si));
	assert_int_equal(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0);

	assert_int_equal(cg_proc_read("/proc", child, &p), 0);
	assert_int_equal(p.pid, child);
	assert_int_equal(p.ppid, getpid());
	assert_null(p.exe);
	assert_string_equal(p.cmdline, "");
	cg_proc_release(&p);

	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(cg_proc_read("/proc", child, &p), -ENOENT);
}

/* The records tests/unit/data/proc_selector_match.tsv matches, by name. */
static const struct {
	const char *name;
	struct cg_proc proc;
} records[] = {
	{ "pg", {
		.pid = 100, .ppid = 1, .comm = "postgres",
		.exe = "/usr/lib/postgresql/15/bin/postgres",
		.cmdline = "postgres: 15/main: checkpointer",
		.cgroup = "/system.slice/postgresql@15-main.service",
	} },
	{ "kthread", {
		.pid = 7, .ppid = 2, .comm = "kworker/0:1", .exe = NULL, .cmdline = "",
		.cgroup = "/",
	} },
	{ "nocg", {
		.pid = 300, .ppid = 1, .comm = "legacy", .exe = "/opt/legacy",
		.cmdline = "/opt/legacy --v1", .cgroup = NULL,
	} },
	{ "odd", {
		.pid = 4242, .ppid = 100, .comm = "x) S 9 (y z)", .exe = "/tmp/evil (deleted)",
		.cmdline = "evil a,b", .cgroup = "/user.slice/user-1000.slice/session-3.scope",
	} },
};

static const struct cg_proc *record(const char *name)
{
	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++)
		if (!strcmp(records[i].name, name))
			return &records[i].proc;
	fail_msg("no record \"%s\"", name);
	return NULL;
}

static void test_selector_match(void **state)
{
	struct tl_table *t = tl_table_load("proc_selector_match.tsv", 3);
	char err[256];
	struct cg_selector *s;
	bool got, want;

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *const *c = tl_table_row(t, i);

		s = cg_selector_parse(c[0], err, sizeof(err));
		if (!s)
			fail_msg("%s: \"%s\" rejected: %s", tl_table_where(t, i), c[0], err);
		assert_string_equal(err, "");
		got = cg_selector_match(s, record(c[1]));
		want = tl_table_u64(t, i, 2) != 0;
		if (got != want)
			fail_msg("%s: \"%s\" on record %s: got %d, want %d", tl_table_where(t, i),
				 c[0], c[1], got, want);
		cg_selector_free(s);
	}
	tl_table_free(t);

	s = cg_selector_parse("postgres", NULL, 0);
	assert_non_null(s);
	assert_false(cg_selector_match(s, NULL));
	assert_false(cg_selector_match(NULL, record("pg")));
	cg_selector_free(s);
	cg_selector_free(NULL);
}

static void test_selector_bad(void **state)
{
	struct tl_table *t = tl_table_load("proc_selector_bad.tsv", 2);
	char err[256], small[10], why[128];
	struct cg_selector *s;
	regex_t re;
	size_t i;
	int rc;

	for (i = 0; i < tl_table_rows(t); i++) {
		const char *spec = tl_table_row(t, i)[0], *msg = tl_table_row(t, i)[1];

		errno = 0;
		s = cg_selector_parse(spec, err, sizeof(err));
		if (s)
			fail_msg("%s: \"%s\" accepted", tl_table_where(t, i), spec);
		assert_int_equal(errno, EINVAL);
		if (strncmp(err, msg, strlen(msg)) != 0)
			fail_msg("%s: \"%s\": got \"%s\", want \"%s...\"", tl_table_where(t, i), spec,
				 err, msg);
	}
	tl_table_free(t);

	/* The regex error carries regerror()'s own words. */
	rc = regcomp(&re, "(unclosed", REG_EXTENDED | REG_NOSUB);
	assert_int_not_equal(rc, 0);
	regerror(rc, &re, why, sizeof(why));
	assert_null(cg_selector_parse("cmdline~(unclosed", err, sizeof(err)));
	assert_non_null(strstr(err, why));

	assert_null(cg_selector_parse(NULL, err, sizeof(err)));
	assert_string_equal(err, "empty selector");
	assert_null(cg_selector_parse("foo=bar", NULL, 0));
	/* A short buffer gets a cut but terminated message. */
	assert_null(cg_selector_parse("foo=bar", small, sizeof(small)));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	/* Long values are echoed only in part. */
	{
		char spec[1024], big_err[1024];

		memset(spec, 'x', sizeof(spec) - 1);
		spec[sizeof(spec) - 1] = '\0';
		memcpy(spec, "pid=", 4);
		assert_null(cg_selector_parse(spec, big_err, sizeof(big_err)));
		assert_true(strlen(big_err) < 256);
	}
}

int main(void)
{
	int failed = 0;

	failed += tl_run(TL_TESTS(test_read_table, test_read_caps_and_no_v2, test_read_errors,
		test_read_bad_stat, test_list_fake, test_list_grows_and_sorts),
		NULL, NULL, fake_setup, tl_fake_teardown);
	failed += tl_run(TL_TESTS(test_read_self, test_list_self, test_read_zombie_and_reaped,
		test_selector_match, test_selector_bad),
		NULL, NULL, NULL, NULL);
	return failed;
}
