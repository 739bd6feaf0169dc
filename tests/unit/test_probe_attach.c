// SPDX-License-Identifier: MIT
/*
 * agent/probe: resolved probes opened for real. The uprobe PMU is asked to
 * count and sample a function of this binary (entry and return, with its
 * argument registers), a tracepoint's raw record is decoded with the field
 * offsets read here from its format file, and the sdtprobe workload shows a
 * USDT semaphore raised by the ref_ctr_offset probe_attr() encodes. The PMU
 * description is also read from fake directories.
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
#include "tests/unit/testfix.h"
#include "tests/unit/testlib.h"

#define POSTGRES "/usr/lib/postgresql/15/bin/postgres"
#define CALLS 1000
/* This very file even if a rebuild replaces it under its name meanwhile:
 * the uprobe PMU resolves the path in our context, symtab reads it here. */
#define SELF "/proc/self/exe"

static long perf_open(struct perf_event_attr *attr, pid_t pid)
{
	return syscall(SYS_perf_event_open, attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static uint64_t read_count(int fd)
{
	uint64_t v = 0;

	assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	return v;
}

/* A perf ring buffer read once, after the event is disabled. */
struct ring {
	int fd;
	unsigned char *base;
	size_t size, data_size;
	uint64_t pos, head;
};

#define RING_PAGES 16

static void ring_open(struct perf_event_attr *attr, pid_t pid, struct ring *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	long fd = perf_open(attr, pid);

	if (fd < 0)
		fail_msg("perf_event_open: %s", strerror(errno));
	r->fd = (int)fd;
	r->data_size = RING_PAGES * page;
	r->size = r->data_size + page;
	r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	assert_true(r->base != MAP_FAILED);
}

static void ring_stop(struct ring *r)
{
	struct perf_event_mmap_page *mp = (void *)r->base;

	assert_int_equal(ioctl(r->fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	r->head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	r->pos = mp->data_tail;
}

/* Next record, copied out of the ring (records may wrap); false at the end. */
static bool ring_next(struct ring *r, unsigned char *buf, size_t size)
{
	const unsigned char *data = r->base + (r->size - r->data_size);
	struct perf_event_header h;

	if (r->pos + sizeof(h) > r->head)
		return false;
	for (size_t i = 0; i < sizeof(h); i++)
		((unsigned char *)&h)[i] = data[(r->pos + i) % r->data_size];
	assert_true(h.size >= sizeof(h) && h.size <= size && r->pos + h.size <= r->head);
	for (size_t i = 0; i < h.size; i++)
		buf[i] = data[(r->pos + i) % r->data_size];
	r->pos += h.size;
	return true;
}

static void ring_close(struct ring *r)
{
	munmap(r->base, r->size);
	close(r->fd);
}

/* The sdtprobe workload, or NULL (with the reason printed) when not built. */
static const char *sdtprobe_path(void)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/workloads/sdtprobe", tf_build_dir());
	if (access(path, X_OK) != 0) {
		print_message("%s not built\n", path);
		return NULL;
	}
	return path;
}

/* Start @path with @argv, stdout to a pipe (returned in *out), held until
 * *go is written. */
static pid_t spawn_held(char *const argv[], int *out, int *go)
{
	int o[2], g[2];
	pid_t pid;

	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	assert_int_equal(pipe2(g, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;

		dup2(o[1], 1);
		if (read(g[0], &c, 1) != 1)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	close(g[0]);
	*out = o[0];
	*go = g[1];
	return pid;
}

static long wait_armed(pid_t pid, int out)
{
	char buf[128] = "";
	ssize_t n, len = 0;
	int status;
	long armed = -1;

	while ((n = read(out, buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	close(out);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(sscanf(buf, "armed %ld", &armed), 1);
	return armed;
}

static void test_sdt_workload(void **state)
{
	const char *path = sdtprobe_path();
	char spec[PATH_MAX + 64];
	struct probe p;
	pid_t pid;
	int out, go, ipid;

	if (!path)
		skip();

	snprintf(spec, sizeof(spec), "sdt:cgperf_test:hit@%s v=arg0 k=arg1 b=arg2", path);
	resolve_ok(spec, NULL, 0, &p);
	assert_true(p.ref_ctr != 0);
	assert_int_equal(p.nargs, 3);
	assert_int_equal(p.args[1].a.kind, USDT_ARG_CONST);
	assert_int_equal(p.args[1].a.value, -7);
	probe_release(&p);
	snprintf(spec, sizeof(spec), "sdt:cgperf_test:mem@%s a=arg0", path);
	resolve_ok(spec, NULL, 0, &p);
	assert_int_equal(p.args[0].a.kind, USDT_ARG_MEM);
	assert_int_equal(p.regs_mask, UINT64_C(1) << p.args[0].a.reg);
	probe_release(&p);

	/* no @BINARY: found in what a running process maps */
	{
		char *argv[] = { (char *)path, "100000", "1000", NULL };

		pid = spawn_held(argv, &out, &go);
		assert_int_equal(write(go, "g", 1), 1);
		close(go);
		ipid = (int)pid;
		/* until it has exec'd, the child maps this test binary */
		for (int i = 0; i < 500; i++) {
			char exe[PATH_MAX], proc[64];
			ssize_t n;

			snprintf(proc, sizeof(proc), "/proc/%d/exe", ipid);
			n = readlink(proc, exe, sizeof(exe) - 1);
			if (n > 0 && (exe[n] = '\0', tl_ends_with(exe, "/sdtprobe")))
				break;
			usleep(10000);
		}
		resolve_ok("sdt:cgperf_test:hit", &ipid, 1, &p);
		assert_true(tl_same_file(p.path, path));
		probe_release(&p);
		resolve_fails("sdt:cgperf_test:hitt", &ipid, 1, -ENOENT,
			      (const char *const[]){ "cgperf_test:hit", NULL });
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(out);
	}
}

/* The semaphore: raised in the workload exactly while the probe exists. */
static void test_sdt_semaphore(void **state)
{
	const char *path = sdtprobe_path();
	char spec[PATH_MAX + 64], err[512];
	struct perf_event_attr attr;
	struct probe p;
	pid_t pid;
	int out, go;
	long fd;

	if (!path)
		skip();

	/* nobody attached: never armed */
	{
		char *argv[] = { (char *)path, "50", NULL };

		pid = spawn_held(argv, &out, &go);
		assert_int_equal(write(go, "g", 1), 1);
		close(go);
		assert_int_equal(wait_armed(pid, out), 0);
	}

	snprintf(spec, sizeof(spec), "sdt:cgperf_test:hit@%s", path);
	resolve_ok(spec, NULL, 0, &p);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(probe_attr_at(&p, NULL, &attr, err, sizeof(err)), 0);
	assert_int_equal(attr.config >> 32, p.ref_ctr);
	attr.disabled = 0;
	{
		char *argv[] = { (char *)path, "500", NULL };

		pid = spawn_held(argv, &out, &go);
		/* attached before exec: follows the task into the new image */
		fd = perf_open(&attr, pid);
		if (fd < 0)
			fail_msg("perf_event_open: %s", strerror(errno));
		assert_int_equal(write(go, "g", 1), 1);
		close(go);
		assert_int_equal(wait_armed(pid, out), 500);
		assert_int_equal(read_count((int)fd), 500);
		close((int)fd);
	}
	probe_release(&p);
}

/* ---- tracepoints ---- */

/* The field line of @name in tracefs's format of @event: offset and size. */
static bool format_lookup(const char *event, const char *name, int *offset, int *size)
{
	char path[PATH_MAX], line[512], want[128];
	const char *tracefs = ev_tracefs();
	bool found = false;
	FILE *f;

	assert_non_null(tracefs);
	snprintf(path, sizeof(path), "%s/events/%s/format", tracefs, event);
	f = fopen(path, "re");
	assert_non_null(f);
	snprintf(want, sizeof(want), " %s;", name);
	while (fgets(line, sizeof(line), f)) {
		char *at = strstr(line, want);

		if (at && strstr(line, "field:") &&
		    sscanf(strchr(at, ';'), ";\toffset:%d;\tsize:%d;", offset, size) == 2) {
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

static uint64_t tracepoint_id(const char *event)
{
	char path[PATH_MAX];
	unsigned long long id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/events/%s/id", ev_tracefs(), event);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%llu", &id), 1);
	fclose(f);
	return id;
}

static void test_tracepoint(void **state)
{
	struct probe p;
	int off, size;

	if (!ev_tracefs()) {
		print_message("tracefs not mounted\n");
		skip();
	}
	resolve_ok("syscalls:sys_enter_write count", NULL, 0, &p);
	assert_int_equal(p.kind, PROBE_TRACEPOINT);
	assert_int_equal(p.tp_id, tracepoint_id("syscalls/sys_enter_write"));
	assert_string_equal(p.label, "syscalls:sys_enter_write");
	assert_null(p.path);
	assert_int_equal(p.nargs, 1);
	assert_string_equal(p.args[0].name, "count");
	assert_string_equal(p.args[0].field, "count");
	assert_true(format_lookup("syscalls/sys_enter_write", "count", &off, &size));
	assert_int_equal(p.args[0].field_offset, off);
	assert_int_equal(p.args[0].field_size, size);
	assert_false(p.args[0].field_signed);
	assert_false(p.args[0].field_dynamic);
	assert_int_equal(p.regs_mask, 0);
	probe_release(&p);

	/* renamed, several, the common ones too */
	resolve_ok("syscalls:sys_enter_write n=count fd pid=common_pid", NULL, 0, &p);
	assert_int_equal(p.nargs, 3);
	assert_string_equal(p.args[0].name, "n");
	assert_string_equal(p.args[0].field, "count");
	assert_string_equal(p.args[2].field, "common_pid");
	assert_true(p.args[2].field_signed);
	probe_release(&p);

	/* an array is not a number: refused with its size; a dynamic string
	 * gives its length */
	{
		char e2[512];

		assert_int_equal(probe_resolve("sched:sched_switch prev_comm next_pid", NULL, 0, &p,
					       e2, sizeof(e2)),
				 -EINVAL);
		assert_non_null(strstr(e2, "16 bytes"));
	}
	resolve_ok("sched:sched_switch prev_pid next_pid", NULL, 0, &p);
	assert_true(format_lookup("sched/sched_switch", "prev_pid", &off, &size));
	assert_int_equal(p.args[0].field_offset, off);
	assert_int_equal(p.args[0].field_size, size);
	assert_true(p.args[1].field_signed);
	probe_release(&p);
	resolve_ok("sched:sched_process_exec filename", NULL, 0, &p);
	assert_true(p.args[0].field_dynamic);
	assert_int_equal(p.args[0].field_size, 4);
	probe_release(&p);

	/* without arguments the format is not needed */
	resolve_ok("sched:sched_switch", NULL, 0, &p);
	assert_int_equal(p.nargs, 0);
	probe_release(&p);
}

static void test_tracepoint_errors(void **state)
{
	const char *err_field[] = { "nosuch", "fields:", "count", "fd", "buf", NULL };
	struct probe p;
	char err[2048];

	if (!ev_tracefs()) {
		print_message("tracefs not mounted\n");
		skip();
	}
	resolve_fails("syscalls:sys_enter_write nosuch", NULL, 0, -ENOENT, err_field);
	assert_int_equal(probe_resolve("syscalls:sys_enter_write nosuch", NULL, 0, &p, err,
				       sizeof(err)),
			 -ENOENT);
	assert_null(strstr(err, "common_")); /* the list is the event's own fields */
	resolve_fails("sched:nosuch", NULL, 0, -ENOENT,
		      (const char *const[]){ "sched:nosuch", "no such tracepoint", NULL });
	resolve_fails("sched:sched_swich", NULL, 0, -ENOENT,
		      (const char *const[]){ "sched:sched_switch", NULL });
	resolve_fails("nosuchsys:nosuch", NULL, 0, -ENOENT, NULL);
	resolve_fails("syscalls:sys_enter_write count count", NULL, 0, -EINVAL,
		      (const char *const[]){ "named twice", NULL });
}

/* ---- probe_attr ---- */

static void test_attr_fake_pmu(void **state)
{
	char dir[] = "/tmp/test_probe_pmu.XXXXXX", sub[PATH_MAX], err[512];
	struct probe p = { .kind = PROBE_UPROBE, .path = "/bin/true", .offset = 0x1234 };
	struct perf_event_attr attr;

	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/format", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	tl_write_file(dir, "type", "42\n");
	tl_write_file(dir, "format/retprobe", "config:0\n");
	tl_write_file(dir, "format/ref_ctr_offset", "config:32-63\n");

	memset(&attr, 0, sizeof(attr));
	attr.sample_period = 7; /* the caller's fields stay */
	assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), 0);
	assert_int_equal(attr.type, 42);
	assert_int_equal(attr.size, sizeof(attr));
	assert_int_equal(attr.config, 0);
	assert_int_equal(attr.config1, (uint64_t)(uintptr_t)p.path);
	assert_int_equal(attr.config2, 0x1234);
	assert_int_equal(attr.sample_period, 7);

	p.retprobe = true;
	p.ref_ctr = 0x88595e;
	assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), 0);
	assert_int_equal(attr.config, (UINT64_C(0x88595e) << 32) | 1);

	/* another bit, as a range of one */
	tl_write_file(dir, "format/retprobe", "config:5-5\n");
	p.ref_ctr = 0;
	assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), 0);
	assert_int_equal(attr.config, UINT64_C(1) << 5);

	/* a semaphore offset too wide for the field */
	p.ref_ctr = UINT64_C(1) << 32;
	assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), -ERANGE);
	assert_non_null(strstr(err, "does not fit"));

	/* format entries not understood */
	const char *const bad_formats[] = { "config1:0", "config:64", "config:9-3", "config:",
					    "config:1x", "" };

	p.ref_ctr = 0;
	for (size_t i = 0; i < sizeof(bad_formats) / sizeof(bad_formats[0]); i++) {
		tl_write_file(dir, "format/retprobe", bad_formats[i]);
		assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), -EIO);
	}
	tl_write_file(dir, "format/retprobe", "config:0-1");
	assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), -EIO);

	/* an old kernel: no ref_ctr_offset, no retprobe */
	snprintf(sub, sizeof(sub), "%s/format/ref_ctr_offset", dir);
	assert_int_equal(unlink(sub), 0);
	snprintf(sub, sizeof(sub), "%s/format/retprobe", dir);
	assert_int_equal(unlink(sub), 0);
	p.ref_ctr = 0x10;
	p.retprobe = false;
	assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "ref_ctr_offset"));
	p.ref_ctr = 0;
	p.retprobe = true;
	assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), -EOPNOTSUPP);

	/* a type that is not a number */
	tl_write_file(dir, "type", "uprobe\n");
	assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), -EIO);

	assert_int_equal(tl_rmtree(strdup(dir)), 0);
	/* no PMU at all */
	assert_int_equal(probe_attr_at(&p, dir, &attr, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no uprobe PMU"));
	assert_int_equal(probe_attr_at(&p, dir, &attr, NULL, 0), -ENOENT);
	assert_int_equal(probe_attr_at(NULL, dir, &attr, NULL, 0), -EINVAL);
}

static void test_attr_system(void **state)
{
	struct perf_event_attr attr;
	struct probe p;
	unsigned type;
	FILE *f;

	f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	assert_non_null(f); /* these machines have the uprobe PMU */
	assert_int_equal(fscanf(f, "%u", &type), 1);
	fclose(f);

	resolve_ok("u:libc:malloc%return", NULL, 0, &p);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(probe_attr(&p, &attr), 0);
	assert_int_equal(attr.type, type);
	assert_int_equal(attr.config, 1); /* config:0 here */
	assert_string_equal((const char *)(uintptr_t)attr.config1, p.path);
	assert_int_equal(attr.config2, p.offset);
	probe_release(&p);

	resolve_ok("sched:sched_switch", NULL, 0, &p);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(probe_attr(&p, &attr), 0);
	assert_int_equal(attr.type, PERF_TYPE_TRACEPOINT);
	assert_int_equal(attr.config, tracepoint_id("sched/sched_switch"));
	probe_release(&p);
}

/* ---- opened for real ---- */

static void count_self(bool ret)
{
	char spec[PATH_MAX + 64];
	struct perf_event_attr attr;
	struct probe p;
	long fd;

	snprintf(spec, sizeof(spec), "u:%s:probe_target%s", SELF, ret ? "%return" : "");
	resolve_ok(spec, NULL, 0, &p);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(probe_attr(&p, &attr), 0);
	attr.disabled = 1;
	fd = perf_open(&attr, getpid());
	if (fd < 0)
		fail_msg("perf_event_open(%s): %s", spec, strerror(errno));
	assert_int_equal(ioctl((int)fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	for (unsigned long i = 0; i < CALLS; i++)
		probe_target(i);
	assert_int_equal(ioctl((int)fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	probe_target(0); /* not counted */
	assert_int_equal(read_count((int)fd), CALLS);
	close((int)fd);
	probe_release(&p);
}

static void test_count_entry(void **state)
{
	count_self(false);
}

static void test_count_return(void **state)
{
	count_self(true);
}

/* Sample the argument (at entry) or the return value (at return) through
 * regs_mask and read it back with usdt_arg_value(). */
static void sample_self(const char *suffix, const char *arg, unsigned long mul)
{
	unsigned char rec[1024];
	char spec[PATH_MAX + 64];
	struct perf_event_attr attr;
	struct probe p;
	struct ring r;
	unsigned long seen = 0;

	snprintf(spec, sizeof(spec), "u:%s:probe_target%s v=%s", SELF, suffix, arg);
	resolve_ok(spec, NULL, 0, &p);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(probe_attr(&p, &attr), 0);
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_REGS_USER;
	attr.sample_regs_user = p.regs_mask;
	attr.disabled = 1;
	ring_open(&attr, getpid(), &r);
	assert_int_equal(ioctl(r.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	for (unsigned long i = 0; i < 100; i++)
		probe_target(1000 + i);
	ring_stop(&r);
	while (ring_next(&r, rec, sizeof(rec))) {
		const struct perf_event_header *h = (const void *)rec;
		uint64_t regs[64] = { 0 }, abi, v;
		const unsigned char *at = rec + sizeof(*h);
		int64_t got;

		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		memcpy(&abi, at, 8);
		at += 8;
		assert_int_equal(abi, PERF_SAMPLE_REGS_ABI_64);
		for (int b = 0; b < 64; b++) {
			if (!(p.regs_mask & (UINT64_C(1) << b)))
				continue;
			memcpy(&v, at, 8);
			at += 8;
			regs[b] = v;
		}
		assert_int_equal(usdt_arg_value(&p.args[0].a, regs, p.regs_mask, NULL, NULL, &got),
				 0);
		assert_int_equal(got, (int64_t)((1000 + seen) * mul));
		seen++;
	}
	assert_int_equal(seen, 100);
	ring_close(&r);
	probe_release(&p);
}

static void test_sample_args(void **state)
{
	sample_self("", "%di", 1);
	sample_self("", "arg0", 1);
	sample_self("%return", "%ax", 3);
}

/* sys_enter_write's raw record decoded with the field offsets */
static void test_tracepoint_raw(void **state)
{
	static char payload[12345];
	unsigned char rec[4096];
	struct perf_event_attr attr;
	struct probe p;
	struct ring r;
	int devnull, hits = 0;

	resolve_ok("syscalls:sys_enter_write fd count", NULL, 0, &p);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(probe_attr(&p, &attr), 0);
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_RAW;
	attr.disabled = 1;
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(devnull >= 0);
	ring_open(&attr, getpid(), &r);
	assert_int_equal(ioctl(r.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	assert_int_equal(write(devnull, payload, sizeof(payload)), sizeof(payload));
	ring_stop(&r);
	while (ring_next(&r, rec, sizeof(rec))) {
		const struct perf_event_header *h = (const void *)rec;
		const unsigned char *raw = rec + sizeof(*h) + 4;
		uint32_t size;
		uint64_t fd = 0, count = 0;

		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		memcpy(&size, rec + sizeof(*h), 4);
		assert_true(p.args[1].field_offset + p.args[1].field_size <= (int)size);
		assert_int_equal(p.args[0].field_size, 8);
		assert_int_equal(p.args[1].field_size, 8);
		memcpy(&fd, raw + p.args[0].field_offset, 8);
		memcpy(&count, raw + p.args[1].field_offset, 8);
		if (fd == (uint64_t)devnull && count == sizeof(payload))
			hits++;
	}
	assert_int_equal(hits, 1);
	ring_close(&r);
	close(devnull);
	probe_release(&p);
}

TL_MAIN(test_sdt_workload, test_sdt_semaphore, test_tracepoint, test_tracepoint_errors,
	test_attr_fake_pmu, test_attr_system, test_count_entry, test_count_return,
	test_sample_args, test_tracepoint_raw)
