// SPDX-License-Identifier: MIT
/*
 * agent/sampler on real perf events: system-wide cpu-clock sampling with
 * call chains, the side-band records of a child that forks and execs
 * /bin/true, user stack copies, sampling one cgroup, following one process,
 * a tiny ring that wraps and overruns, and open errors. They need root
 * (perf_event_open system-wide and cgroup creation). The record parser and
 * the ring walker alone are tested in test_sampler.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <asm/perf_regs.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/perf/cpumap.h"
#include "agent/perf/events.h"
#include "agent/perf/sampler.h"
#include "cgroup/mount.h"
#include "lib/clock.h"
#include "tests/unit/testfix.h"
#include "tests/unit/testlib.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* x86_64 user registers as perf's DWARF mode asks for them (no segments). */
#define REGS_MASK                                                                      \
	(((1ULL << PERF_REG_X86_64_MAX) - 1) &                                         \
	 ~((1ULL << PERF_REG_X86_DS) | (1ULL << PERF_REG_X86_ES) |                     \
	   (1ULL << PERF_REG_X86_FS) | (1ULL << PERF_REG_X86_GS)))
/* ================= live sampling ================= */

static struct ev_spec g_clock;
static int *g_cpus;
static size_t g_ncpu;
static uint64_t g_max_rate;

static int group_setup(void **state)
{
	FILE *f;
	unsigned long long rate = 0;
	int n;

	if (ev_parse("cpu-clock", NULL, &g_clock))
		return -1;
	n = cpumap_online(&g_cpus);
	if (n <= 0)
		return -1;
	g_ncpu = (size_t)n;
	/* The kernel lowers this when sampling interrupts take long: stay under it. */
	f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
	if (f) {
		if (fscanf(f, "%llu", &rate) != 1)
			rate = 0;
		fclose(f);
	}
	g_max_rate = rate ? rate : 1000;
	return 0;
}

static int group_teardown(void **state)
{
	ev_spec_release(&g_clock);
	free(g_cpus);
	return 0;
}

static void need_root(void)
{
	if (geteuid() != 0) {
		print_message("needs root: system-wide and cgroup perf events\n");
		skip();
	}
}

static uint64_t freq(uint64_t want)
{
	return want < g_max_rate ? want : g_max_rate;
}

static volatile uint64_t g_sink;

static __attribute__((noinline)) void spin_leaf(void)
{
	for (int i = 0; i < 1000; i++)
		g_sink += (uint64_t)i;
}

static __attribute__((noinline)) void spin_ms(unsigned ms)
{
	uint64_t end = clock_mono_ns() + (uint64_t)ms * 1000000u;

	while (clock_mono_ns() < end)
		spin_leaf();
}

static struct sampler_opts base_opts(void)
{
	return (struct sampler_opts){ .event = &g_clock, .freq = freq(999), .cpus = g_cpus,
				      .ncpu = g_ncpu, .mmap_pages = 64 };
}

static struct sampler *open_or_fail(const struct sampler_opts *o)
{
	struct sampler *s = sampler_open(o);

	if (!s)
		fail_msg("sampler_open: %s", strerror(errno));
	return s;
}

/* What the live callbacks collect. */
#define MAX_PIDS 64
#define MAX_SB 4096

struct pidcount {
	uint32_t pid, tid;
	uint64_t n;
};

struct sb {
	char kind; /* 'f'ork, 'c'omm, 'x' exit, 'm'map */
	uint32_t pid, ppid, tid;
	bool exec;
	char name[64];
};

struct live {
	uint64_t samples, self, self_user;
	uint64_t bad_cpu, time_back, no_chain;
	uint64_t *last_time; /* by CPU number */
	size_t ncpu_ids;
	bool want_chain;
	/* user_stack checks, on our own user-mode samples */
	bool want_stack;
	uint32_t stack_bytes;
	uintptr_t stack_lo, stack_hi;
	uint64_t stack_ok, stack_bad;
	/* cgroup checks */
	uint64_t want_cgroup_id, cgroup_bad;
	struct pidcount tids[MAX_PIDS];
	size_t ntids;
	uint64_t tids_overflow;
	struct sb sb[MAX_SB];
	size_t nsb;
	uint64_t lost;
};

static void live_init(struct live *c)
{
	int max = 0;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < g_ncpu; i++)
		if (g_cpus[i] > max)
			max = g_cpus[i];
	c->ncpu_ids = (size_t)max + 1;
	c->last_time = calloc(c->ncpu_ids, sizeof(*c->last_time));
	assert_non_null(c->last_time);
}

static void live_release(struct live *c)
{
	free(c->last_time);
	c->last_time = NULL;
}

static bool cpu_listed(uint32_t cpu)
{
	for (size_t i = 0; i < g_ncpu; i++)
		if ((uint32_t)g_cpus[i] == cpu)
			return true;
	return false;
}

static void live_sample(void *ctx, const struct sample *s)
{
	struct live *c = ctx;
	size_t i;

	c->samples++;
	if (!cpu_listed(s->cpu) || s->cpu >= c->ncpu_ids) {
		c->bad_cpu++;
	} else {
		if (s->time <= c->last_time[s->cpu])
			c->time_back++;
		c->last_time[s->cpu] = s->time;
	}
	if (c->want_chain && (!s->callchain || s->nr_callchain == 0))
		c->no_chain++;
	if (s->pid == (uint32_t)getpid()) {
		c->self++;
		if (s->user_mode)
			c->self_user++;
		if (c->want_stack && s->user_mode) {
			int sp = __builtin_popcountll(REGS_MASK & ((1ULL << PERF_REG_X86_SP) - 1));
			bool ok = s->regs_abi != PERF_SAMPLE_REGS_ABI_NONE && s->regs && s->stack &&
				  s->stack_size > 0 && s->stack_size <= c->stack_bytes &&
				  s->regs[sp] >= c->stack_lo && s->regs[sp] <= c->stack_hi;

			if (ok)
				c->stack_ok++;
			else
				c->stack_bad++;
		}
	}
	if (c->want_cgroup_id && s->cgroup_id != c->want_cgroup_id)
		c->cgroup_bad++;
	for (i = 0; i < c->ntids; i++) {
		if (c->tids[i].tid == s->tid && c->tids[i].pid == s->pid) {
			c->tids[i].n++;
			return;
		}
	}
	if (c->ntids == MAX_PIDS) {
		c->tids_overflow++;
		return;
	}
	c->tids[c->ntids++] = (struct pidcount){ s->pid, s->tid, 1 };
}

static struct sb *live_sb(struct live *c, char kind)
{
	if (c->nsb == MAX_SB)
		return NULL;
	c->sb[c->nsb] = (struct sb){ .kind = kind };
	return &c->sb[c->nsb++];
}

static void live_mmap(void *ctx, const struct sample_mmap *m)
{
	struct sb *e = live_sb(ctx, 'm');

	if (e) {
		e->pid = m->pid;
		e->tid = m->tid;
		snprintf(e->name, sizeof(e->name), "%s", m->filename);
	}
}

static void live_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		      uint64_t time)
{
	struct sb *e = live_sb(ctx, 'c');

	if (e) {
		e->pid = pid;
		e->tid = tid;
		e->exec = exec;
		snprintf(e->name, sizeof(e->name), "%s", comm);
	}
}

static void live_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	struct sb *e = live_sb(ctx, 'f');

	if (e) {
		e->pid = pid;
		e->ppid = ppid;
		e->tid = tid;
	}
}

static void live_exit(void *ctx, uint32_t pid, uint32_t tid)
{
	struct sb *e = live_sb(ctx, 'x');

	if (e) {
		e->pid = pid;
		e->tid = tid;
	}
}

static void live_lost(void *ctx, uint64_t lost)
{
	((struct live *)ctx)->lost += lost;
}

static struct sampler_cb live_cb(struct live *c)
{
	return (struct sampler_cb){ .ctx = c, .sample = live_sample, .mmap = live_mmap,
				    .comm = live_comm, .fork = live_fork, .exit = live_exit,
				    .lost = live_lost };
}

/* First side-band record of @kind for @pid (and @ppid, @name if given). */
static const struct sb *find_sb(const struct live *c, char kind, uint32_t pid, uint32_t ppid,
				const char *name)
{
	for (size_t i = 0; i < c->nsb; i++) {
		const struct sb *e = &c->sb[i];

		if (e->kind != kind || (pid && e->pid != pid) || (ppid && e->ppid != ppid))
			continue;
		if (name && !strstr(e->name, name))
			continue;
		return e;
	}
	return NULL;
}

static bool forked_by(const struct live *c, uint32_t pid, uint32_t parent)
{
	for (size_t i = 0; i < c->nsb; i++)
		if (c->sb[i].kind == 'f' && c->sb[i].pid == pid && c->sb[i].ppid == parent)
			return true;
	return false;
}

/* What a live test holds: its options, its sampler and what it saw. */
struct session {
	struct sampler_opts o;
	struct sampler_stats st;
	struct live c;
	struct sampler_cb cb;
	struct sampler *s;
};

/* Stop sampling, drain what is left and read the sampler's counts. */
static void session_finish(struct session *x)
{
	assert_int_equal(sampler_disable(x->s), 0);
	assert_true(sampler_drain(x->s, &x->cb) >= 0);
	sampler_stats(x->s, &x->st);
}

/* Drain every @every_ms for @total_ms, spinning or sleeping in between,
 * then session_finish(). */
static void session_run(struct session *x, unsigned total_ms, unsigned every_ms, bool spin)
{
	uint64_t end = clock_mono_ns() + (uint64_t)total_ms * 1000000u;

	while (clock_mono_ns() < end) {
		if (spin)
			spin_ms(every_ms);
		else
			usleep(every_ms * 1000);
		assert_true(sampler_drain(x->s, &x->cb) >= 0);
	}
	session_finish(x);
}

/* Skip without root; the default options, nothing seen yet. */
static void session_begin(struct session *x)
{
	need_root();
	x->o = base_opts();
	live_init(&x->c);
	x->cb = live_cb(&x->c);
	x->s = NULL;
}

static void session_end(struct session *x)
{
	sampler_close(x->s);
	live_release(&x->c);
}

static void test_system_wide(void **state)
{
	struct session x;
	struct pollfd pfd[64];
	int fds[64];
	size_t n;

	session_begin(&x);
	x.c.want_chain = true;
	x.o.callchain = true;
	x.s = open_or_fail(&x.o);
	n = sampler_fds(x.s, fds, NELEM(fds));
	assert_int_equal(n, g_ncpu);
	assert_int_equal(sampler_enable(x.s), 0);

	/* The watermark: 20 samples per CPU (a few KiB) wake nobody; the
	 * small-ring test sees the wake-up once a quarter is full. */
	for (size_t i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	spin_ms(20);
	assert_int_equal(poll(pfd, n, 0), 0);

	session_run(&x, 1000, 100, true);
	print_message("system-wide: %llu samples (%llu ours), %llu records, %llu lost\n",
		      (unsigned long long)x.c.samples, (unsigned long long)x.c.self,
		      (unsigned long long)x.st.records, (unsigned long long)x.st.lost);
	assert_true(x.c.samples > 500);
	assert_true(x.c.self > 0);
	assert_int_equal(x.c.bad_cpu, 0);
	assert_int_equal(x.c.time_back, 0);
	assert_int_equal(x.c.no_chain, 0);
	assert_int_equal(x.st.samples, x.c.samples);
	assert_int_equal(x.st.malformed, 0);
	assert_true(x.st.wakeups > 0);
	session_end(&x);
}

static void test_fork_exec(void **state)
{
	struct session x;
	pid_t child;
	int status;

	session_begin(&x);
	x.s = open_or_fail(&x.o);
	assert_int_equal(sampler_enable(x.s), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	session_run(&x, 100, 50, false);
	assert_int_equal(x.st.malformed, 0);

	assert_non_null(find_sb(&x.c, 'f', (uint32_t)child, (uint32_t)getpid(), NULL));
	const struct sb *e = find_sb(&x.c, 'c', (uint32_t)child, 0, "true");

	assert_non_null(e);
	assert_true(e->exec);
	assert_non_null(find_sb(&x.c, 'x', (uint32_t)child, 0, NULL));
	if (!find_sb(&x.c, 'm', (uint32_t)child, 0, "true") &&
	    !find_sb(&x.c, 'm', (uint32_t)child, 0, "libc"))
		fail_msg("no MMAP2 of /bin/true or libc for pid %d", (int)child);
	session_end(&x);
}

static void test_user_stack(void **state)
{
	struct session x;
	volatile char here = 0;

	session_begin(&x);
	x.c.want_stack = true;
	x.c.stack_bytes = 8192;
	/* Our stack pointer, during the spin below, sits under this frame. */
	x.c.stack_hi = (uintptr_t)&here + 4096;
	x.c.stack_lo = (uintptr_t)&here - (1u << 20);
	x.o.user_stack = true;
	x.o.stack_bytes = 8192;
	x.o.regs_mask = REGS_MASK;
	x.s = open_or_fail(&x.o);
	assert_int_equal(sampler_enable(x.s), 0);
	session_run(&x, 500, 25, true);
	print_message("user stack: %llu of our %llu user samples (%llu in all) ok, %llu bad\n",
		      (unsigned long long)x.c.stack_ok, (unsigned long long)x.c.self_user,
		      (unsigned long long)x.c.self, (unsigned long long)x.c.stack_bad);
	assert_true(x.c.self_user > 50);
	assert_int_equal(x.c.stack_bad, 0);
	assert_int_equal(x.c.stack_ok, x.c.self_user);
	assert_int_equal(x.st.malformed, 0);
	session_end(&x);
	(void)here;
}

/* Children and cgroups the live tests make; teardown removes them. */
struct fixture {
	pid_t child;
	int ready[2], go[2];
	char dir[PATH_MAX], idle[PATH_MAX];
};

static int fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->ready[0] = f->ready[1] = f->go[0] = f->go[1] = -1;
	*state = f;
	return 0;
}

static void rmdir_retry(const char *dir)
{
	/* A reaped child may leave the cgroup populated for a moment. */
	for (int i = 0; i < 100 && rmdir(dir) < 0 && errno == EBUSY; i++)
		usleep(10000);
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;

	if (f->child > 0) {
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
	}
	for (int i = 0; i < 2; i++) {
		if (f->ready[i] >= 0)
			close(f->ready[i]);
		if (f->go[i] >= 0)
			close(f->go[i]);
	}
	if (f->dir[0])
		rmdir_retry(f->dir);
	if (f->idle[0])
		rmdir_retry(f->idle);
	free(f);
	return 0;
}

static void wait_byte(int fd)
{
	char b;

	while (read(fd, &b, 1) < 0 && errno == EINTR)
		;
}

static void fork_true(void)
{
	pid_t p = fork();

	if (p == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (p > 0)
		waitpid(p, NULL, 0);
}

/* Child of the cgroup test: spins, forks+execs /bin/true once, spins on. */
static __attribute__((noreturn)) void cgroup_child(struct fixture *f)
{
	wait_byte(f->go[0]);
	spin_ms(200);
	fork_true();
	for (;;)
		spin_leaf();
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	if (write(fd, text, strlen(text)) < 0)
		fail_msg("write %s: %s", path, strerror(errno));
	close(fd);
}

static void test_cgroup(void **state)
{
	struct fixture *f = *state;
	struct sampler_layout lay;
	struct session x;
	const char *dirs[2];
	char procs[PATH_MAX + 32], pid[32], *perf;
	struct stat sb;
	pid_t child;

	session_begin(&x);
	perf = tf_cgroup_mount(true);
	snprintf(f->dir, sizeof(f->dir), "%s/cgperf-test-sampler-%d", perf, (int)getpid());
	snprintf(f->idle, sizeof(f->idle), "%s/cgperf-test-sampler-%d-idle", perf, (int)getpid());
	free(perf);
	if (mkdir(f->dir, 0755) < 0) {
		f->dir[0] = '\0';
		fail_msg("mkdir: %s", strerror(errno));
	}
	if (mkdir(f->idle, 0755) < 0) {
		f->idle[0] = '\0';
		fail_msg("mkdir: %s", strerror(errno));
	}
	assert_int_equal(stat(f->dir, &sb), 0);

	assert_int_equal(pipe2(f->go, O_CLOEXEC), 0);
	f->child = fork();
	assert_true(f->child >= 0);
	if (f->child == 0)
		cgroup_child(f);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", f->dir);
	snprintf(pid, sizeof(pid), "%d", (int)f->child);
	write_file(procs, pid);

	/* The busy cgroup second: its side-band comes from a redirected event. */
	dirs[0] = f->idle;
	dirs[1] = f->dir;
	x.o.cgroup_dirs = dirs;
	x.o.ncgroups = 2;
	x.o.callchain = true;
	x.c.want_chain = true;
	x.s = open_or_fail(&x.o);
	assert_int_equal(sampler_fds(x.s, (int[64]){ 0 }, 64), g_ncpu); /* one ring per CPU */
	sampler_layout(x.s, &lay);
	if (lay.sample_type & PERF_SAMPLE_CGROUP)
		x.c.want_cgroup_id = (uint64_t)sb.st_ino;
	else
		print_message("kernel without PERF_SAMPLE_CGROUP: cgroup ids not checked\n");
	assert_int_equal(sampler_enable(x.s), 0);
	assert_int_equal(write(f->go[1], "g", 1), 1);
	session_run(&x, 600, 100, false);
	child = f->child;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	f->child = 0;

	print_message("cgroup: %llu samples from %zu threads\n", (unsigned long long)x.c.samples,
		      x.c.ntids);
	assert_true(x.c.samples > 100);
	assert_int_equal(x.c.tids_overflow, 0);
	for (size_t i = 0; i < x.c.ntids; i++) {
		uint32_t p = x.c.tids[i].pid;

		if (p != (uint32_t)child && !forked_by(&x.c, p, (uint32_t)child))
			fail_msg("%llu samples of pid %u, not in the cgroup (child %d)",
				 (unsigned long long)x.c.tids[i].n, p, (int)child);
	}
	assert_int_equal(x.c.cgroup_bad, 0);
	assert_int_equal(x.c.self, 0);
	assert_int_equal(x.st.malformed, 0);
	/* The grandchild's exec, reported by the second cgroup's event. */
	const struct sb *fk = find_sb(&x.c, 'f', 0, (uint32_t)child, NULL);

	assert_non_null(fk);
	const struct sb *ex = find_sb(&x.c, 'c', fk->pid, 0, "true");

	assert_non_null(ex);
	assert_true(ex->exec);
	session_end(&x);
}

static void *spin_thread(void *arg)
{
	for (;;)
		spin_leaf();
	return arg;
}

/* Child of the pid test: a thread that exists before the sampler opens,
 * then (once sampled) a forked grandchild that spins for a while. */
static __attribute__((noreturn)) void pid_child(struct fixture *f)
{
	pthread_t t;

	if (pthread_create(&t, NULL, spin_thread, NULL))
		_exit(1);
	if (write(f->ready[1], "r", 1) != 1)
		_exit(1);
	wait_byte(f->go[0]);
	pid_t g = fork();

	if (g == 0) {
		spin_ms(200);
		_exit(0);
	}
	for (;;)
		spin_leaf();
}

static void test_pid(void **state)
{
	struct fixture *f = *state;
	struct session x;
	uint64_t main_thread = 0, other_thread = 0, grandchild = 0;

	session_begin(&x);
	assert_int_equal(pipe2(f->ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(f->go, O_CLOEXEC), 0);
	f->child = fork();
	assert_true(f->child >= 0);
	if (f->child == 0)
		pid_child(f);
	wait_byte(f->ready[0]);

	x.o.pid = f->child;
	x.s = open_or_fail(&x.o);
	assert_int_equal(sampler_fds(x.s, (int[64]){ 0 }, 64), g_ncpu);
	assert_int_equal(sampler_enable(x.s), 0);
	assert_int_equal(write(f->go[1], "g", 1), 1);
	session_run(&x, 600, 100, false);

	for (size_t i = 0; i < x.c.ntids; i++) {
		const struct pidcount *p = &x.c.tids[i];

		if (p->pid == (uint32_t)f->child && p->tid == p->pid)
			main_thread += p->n;
		else if (p->pid == (uint32_t)f->child)
			other_thread += p->n;
		else if (forked_by(&x.c, p->pid, (uint32_t)f->child))
			grandchild += p->n;
		else
			fail_msg("%llu samples of %u/%u, not the followed process",
				 (unsigned long long)p->n, p->pid, p->tid);
	}
	print_message("pid: main thread %llu, older thread %llu, forked child %llu samples\n",
		      (unsigned long long)main_thread, (unsigned long long)other_thread,
		      (unsigned long long)grandchild);
	assert_true(main_thread > 0);
	assert_true(other_thread > 0); /* a thread that existed before the open */
	assert_true(grandchild > 0);   /* inherit=1 */
	assert_int_equal(x.st.malformed, 0);
	session_end(&x);
}

/* A two-page ring, big records, slow drains: wraps and overruns. */
static void test_small_ring(void **state)
{
	struct session x;
	uint64_t t0, dt = 0;
	struct pollfd pfd[64];
	int fds[64], n;

	session_begin(&x);
	x.o.freq = freq(4000);
	x.o.mmap_pages = 2;
	x.o.user_stack = true;
	x.o.stack_bytes = 4096;
	x.o.regs_mask = REGS_MASK;
	x.o.callchain = true;
	x.s = open_or_fail(&x.o);
	n = (int)sampler_fds(x.s, fds, NELEM(fds));
	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	assert_int_equal(sampler_enable(x.s), 0);
	/* One 4 KiB stack sample passes the 2 KiB watermark. */
	assert_true(poll(pfd, (nfds_t)n, 2000) > 0);
	for (int i = 0; i < 20; i++) {
		spin_ms(50);
		t0 = clock_mono_ns();
		n = sampler_drain(x.s, &x.cb);
		dt += clock_mono_ns() - t0;
		assert_true(n >= 0);
	}
	session_finish(&x);
	print_message("small ring: %llu samples, %llu wrapped, %llu lost, %llu records in "
		      "%.2f ms of drains\n",
		      (unsigned long long)x.st.samples, (unsigned long long)x.st.wrapped,
		      (unsigned long long)x.st.lost, (unsigned long long)x.st.records, dt / 1e6);
	assert_true(x.st.samples > 20);
	assert_true(x.st.wrapped > 0);
	assert_true(x.st.lost > 0);
	assert_int_equal(x.c.lost, x.st.lost);
	assert_int_equal(x.st.malformed, 0);
	assert_int_equal(x.c.time_back, 0);
	session_end(&x);
}

static size_t count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	size_t n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void test_open_errors(void **state)
{
	struct sampler_opts o;
	const char *dirs[2];
	size_t fds;
	int max;
	pid_t dead;

	/* Options refused before any event is opened. */
	o = base_opts();
	o.mmap_pages = 3;
	errno = 0;
	assert_null(sampler_open(&o));
	assert_int_equal(errno, EINVAL);
	o = base_opts();
	o.user_stack = true;
	o.stack_bytes = 12;
	assert_null(sampler_open(&o));
	assert_int_equal(errno, EINVAL);
	o = base_opts();
	o.freq = 0;
	assert_null(sampler_open(&o));
	assert_int_equal(errno, EINVAL);
	o = base_opts();
	dirs[0] = "/";
	o.cgroup_dirs = dirs;
	o.ncgroups = 1;
	o.pid = getpid();
	assert_null(sampler_open(&o));
	assert_int_equal(errno, EINVAL);
	assert_null(sampler_open(NULL));
	assert_int_equal(errno, EINVAL);
	sampler_close(NULL);
	assert_int_equal(sampler_drain(NULL, NULL), -EINVAL);

	max = sampler_max_stack_default();
	assert_true(max > 0);

	need_root();
	fds = count_fds();
	o = base_opts();
	dirs[0] = "/nonexistent-cgroup";
	o.cgroup_dirs = dirs;
	o.ncgroups = 1;
	assert_null(sampler_open(&o));
	assert_int_equal(errno, ENOENT);

	/* A directory that is no cgroup, after a good one: the first CPU's event
	 * and ring exist when the second fails, and must be undone. */
	struct cg_mounts *m = cg_mounts_read("/proc/self/mountinfo");
	const struct cg_mount *perf = m ? cg_mounts_perf(m) : NULL;

	if (perf) {
		dirs[0] = perf->path;
		dirs[1] = "/tmp";
		o.ncgroups = 2;
		assert_null(sampler_open(&o));
		assert_int_equal(errno, EBADF);
	}
	cg_mounts_free(m);

	/* A process that is gone. */
	dead = fork();
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	o = base_opts();
	o.pid = dead;
	assert_null(sampler_open(&o));
	assert_int_equal(errno, ESRCH);

	/* Deeper chains than the sysctl allows. */
	o = base_opts();
	o.callchain = true;
	o.max_stack = (uint32_t)max + 1;
	if (o.max_stack <= UINT16_MAX) {
		assert_null(sampler_open(&o));
		assert_int_equal(errno, EOVERFLOW);
	}
	assert_int_equal(count_fds(), fds);
}

int main(void)
{
	int failed = 0;

	failed += tl_run(TL_TESTS(test_open_errors, test_system_wide, test_fork_exec, test_user_stack,
		test_small_ring),
		group_setup, group_teardown, NULL, NULL);
	failed += tl_run(TL_TESTS(test_cgroup, test_pid),
		group_setup, group_teardown, fixture_setup, fixture_teardown);
	return failed;
}
