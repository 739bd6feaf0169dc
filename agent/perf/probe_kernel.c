// SPDX-License-Identifier: MIT
/*
 * Kernel probes: `k:FUNC[+OFF][%return] [ARG...]` (contract in probe.h).
 *
 * The kernel offers two doors to a kprobe, and this file takes each for
 * what it does best:
 *
 *  - The kprobe PMU (Linux 4.17+, /sys/bus/event_source/devices/kprobe):
 *    perf_event_open() with the PMU's type, config1 pointing at the
 *    function's name, config2 the offset, and the retprobe bit that the
 *    PMU's format/retprobe names ("config:0" today; read, not assumed).
 *    The probe lives exactly as long as the event's file descriptor:
 *    nothing is written anywhere, nothing is left behind if we are killed.
 *    It cannot fetch arguments: the event records only the hit.
 *  - kprobe_events in tracefs: a line such as
 *        p:cgperf/tcp_sendmsg_4242_0 tcp_sendmsg size=%dx:u64
 *    makes a dynamic trace event whose fields the kernel fills at each hit
 *    (registers, memory at a register plus an offset, $retval). It is then
 *    an ordinary tracepoint (events/cgperf/NAME/{id,format}): opened as
 *    PERF_TYPE_TRACEPOINT with PERF_SAMPLE_RAW, its arguments decoded like
 *    any tracepoint's fields, kernel filters work. The price is state
 *    outside the process: the event is removed ("-:cgperf/NAME") when the
 *    probe is released, and one left by a killed agent is swept at the next
 *    creation (its name carries the PID that made it).
 *
 * So a probe without arguments goes through the PMU, and one with
 * arguments (or on a kernel with kprobe_events but no PMU) through
 * kprobe_events. The line is written here, with write(2), rather than
 * through libtracefs: Debian 12's libtracefs 1.6 has tracefs_kprobe_raw()
 * and tracefs_dynevent_create(), but they write to the system's tracefs
 * only, whereas a tracefs directory given by the caller lets the tests run
 * creation, field resolution and removal against a fixture; the line is
 * the kernel's ABI either way (Documentation/trace/kprobetrace.rst), and
 * error_log is read here for the kernel's reason when it refuses one.
 *
 * Before anything is placed, the probe is checked against the kernel:
 * kprobes at all (a kernel without CONFIG_KPROBE_EVENTS has neither door:
 * refused, naming both), FUNC among the text symbols of /proc/kallsyms (a
 * misspelling gets the nearest names), not on the kernel's kprobe
 * blacklist (/sys/kernel/debug/kprobes/blacklist, when debugfs is there to
 * read), +OFF inside the function when kallsyms shows addresses.
 * Arguments by parameter name come from BTF (probe_btf.c).
 *
 * This project's VM has no kprobes; both doors, the checks and BTF were
 * run for real on Debian 12's 6.1 kernel in a QEMU guest
 * (tests/tools/kprobe_vm.sh). That kernel answered a bad +OFF with
 * EILSEQ at perf_event_open().
 */
#include "agent/perf/probe_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/perf/events.h"
#include "agent/perf/probe_spec.h"
#include "agent/symbols/ksyms.h"
#include "lib/grow.h"
#include "lib/slurp.h"
#include "lib/suggest.h"

#define KPROBE_GROUP "cgperf"
#define KPROBE_PMU "/sys/bus/event_source/devices/kprobe"
#define KPROBE_KALLSYMS "/proc/kallsyms"
#define KPROBE_BLACKLIST "/sys/kernel/debug/kprobes/blacklist"
#define KPROBE_SUGGEST 5
#define KPROBE_LINE_MAX 8192		/* a spec is at most 4096 bytes */
#define KPROBE_FILE_MAX (16u << 20)	/* blacklist, kprobe_events, error_log */
#define KPROBE_EVENT_FUNC 40		/* of the function in an event's name (the kernel: 63) */

static bool has_file(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	return dir && (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) < sizeof(path) &&
	       stat(path, &st) == 0;
}

/* ---- the function, in kallsyms ---- */

struct kfind {
	const char *want;
	bool found, any_addr;
	uint64_t addr;
	uint64_t *addrs; /* every text address: the function ends at the next */
	size_t n, cap;
	struct suggest near;
};

static int kfind_cb(void *ctx, uint64_t addr, const char *name, const char *module)
{
	struct kfind *f = ctx;

	(void)module;
	if (addr)
		f->any_addr = true;
	if (!f->found && strcmp(name, f->want) == 0) {
		f->found = true;
		f->addr = addr;
	} else if (!f->found) {
		suggest_consider(&f->near, f->want, name);
	}
	if (GROW_ARRAY(f->addrs, f->n, f->cap, 1 << 16) < 0)
		return -ENOMEM;
	f->addrs[f->n++] = addr;
	return 0;
}

static int check_kallsyms(const char *path, const struct probe_spec *ps, struct probe_msg *m)
{
	struct kfind f = { .want = ps->name };
	uint64_t end = UINT64_MAX;
	int err;

	suggest_init(&f.near, KPROBE_SUGGEST);
	err = ksyms_each(path, kfind_cb, &f);
	if (err < 0) {
		probe_msg_add(m, "%s: cannot read %s: %s", ps->head, path, strerror(-err));
		goto out;
	}
	if (!f.found) {
		probe_msg_add(m, "%s: no kernel function \"%s\" in %s", ps->head, ps->name, path);
		for (size_t i = 0; i < f.near.n; i++)
			probe_msg_add(m, "%s%s", i ? ", " : "; did you mean ", f.near.name[i]);
		if (f.near.n)
			probe_msg_add(m, "?");
		err = -ENOENT;
		goto out;
	}
	/* addresses hidden (kptr_restrict, no CAP_SYSLOG): the size is unknown */
	for (size_t i = 0; f.any_addr && i < f.n; i++) {
		if (f.addrs[i] > f.addr && f.addrs[i] < end)
			end = f.addrs[i];
	}
	if (ps->offset && f.any_addr && end != UINT64_MAX && ps->offset >= end - f.addr) {
		probe_msg_add(m, "%s: +%#" PRIx64 " is outside %s (%" PRIu64 " bytes)", ps->head,
			      ps->offset, ps->name, end - f.addr);
		err = -EINVAL;
	}
out:
	suggest_release(&f.near);
	free(f.addrs);
	return err;
}

/* ---- the kprobe blacklist ---- */

/* Lines "0xSTART-0xEND\tname" (older kernels: "name"); unreadable
 * (debugfs not mounted, not root): not checked, the kernel still refuses. */
static int check_blacklist(const char *path, const struct probe_spec *ps, struct probe_msg *m)
{
	size_t len = 0, want = strlen(ps->name);
	char *buf = NULL;
	int err = 0;

	if (slurp_at(AT_FDCWD, path, KPROBE_FILE_MAX, &buf, &len, NULL) < 0)
		return 0;
	for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		char *name;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		name = strrchr(line, '\t');
		name = name ? name + 1 : (strrchr(line, ' ') ? strrchr(line, ' ') + 1 : line);
		if (strlen(name) == want && memcmp(name, ps->name, want) == 0) {
			probe_msg_add(m,
				      "%s: %s is on the kernel's kprobe blacklist (%s): probing it "
				      "could crash the kernel, so the kernel refuses it",
				      ps->head, ps->name, path);
			err = -EPERM;
			break;
		}
	}
	free(buf);
	return err;
}

/* ---- arguments ---- */

/* Parameters by name: their registers and types from BTF, once. */
static int settle_args(const struct probe_spec *ps, const struct probe_host *h,
		       char (*regs)[6], char (*types)[4], struct probe_msg *m)
{
	struct probe_btf *btf = NULL;
	int err = 0;

	for (int i = 0; i < ps->nargs && !err; i++) {
		const struct probe_karg *k = &ps->args[i].k;
		char btype[4] = "";

		snprintf(regs[i], 6, "%s", k->reg);
		snprintf(types[i], 4, "%s", k->type);
		if (!k->param)
			continue;
		if (!btf) {
			probe_msg_add(m, "%s: ", ps->head);
			btf = probe_btf_open(h->btf, m);
			if (!btf)
				return errno == ENOMEM ? -ENOMEM : -EOPNOTSUPP;
			probe_msg_init(m, m->buf, m->cap);
		}
		probe_msg_add(m, "%s: ", ps->head);
		err = probe_btf_param(btf, ps->name, k->param, regs[i], btype, m);
		if (err)
			break;
		probe_msg_init(m, m->buf, m->cap);
		/* the memory at a pointer parameter is not the pointer's type */
		if (!types[i][0] && !k->mem)
			snprintf(types[i], 4, "%s", btype);
	}
	probe_btf_close(btf);
	return err;
}

int probe_kernel_line(const struct probe_spec *ps, const char *group, const char *event,
		      char (*regs)[6], char (*types)[4], char *buf, size_t len)
{
	size_t at;
	int n;

	n = snprintf(buf, len, "%c:%s/%s %s", ps->retprobe ? 'r' : 'p', group, event, ps->name);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	at = (size_t)n;
	if (ps->offset) {
		n = snprintf(buf + at, len - at, "+%" PRIu64, ps->offset);
		if (n < 0 || (size_t)n >= len - at)
			return -ENAMETOOLONG;
		at += (size_t)n;
	}
	for (int i = 0; i < ps->nargs; i++) {
		const struct probe_karg *k = &ps->args[i].k;
		const char *type = types[i][0] ? types[i] : "u64";

		if (k->retval)
			n = snprintf(buf + at, len - at, " %s=$retval:%s", ps->args[i].name, type);
		else if (k->mem)
			n = snprintf(buf + at, len - at, " %s=%+" PRId64 "(%%%s):%s",
				     ps->args[i].name, k->off, regs[i], type);
		else
			n = snprintf(buf + at, len - at, " %s=%%%s:%s", ps->args[i].name, regs[i],
				     type);
		if (n < 0 || (size_t)n >= len - at)
			return -ENAMETOOLONG;
		at += (size_t)n;
	}
	return 0;
}

/* ---- the dynamic event ---- */

/* Append @line and a newline to @tracefs/kprobe_events. 0 or -errno. */
static int kevents_write(const char *tracefs, const char *line)
{
	char path[PATH_MAX];
	size_t len = strlen(line);
	char *l = malloc(len + 2);
	ssize_t n;
	int fd, err = 0;

	if (!l)
		return -ENOMEM;
	memcpy(l, line, len);
	memcpy(l + len, "\n", 2);
	if ((size_t)snprintf(path, sizeof(path), "%s/kprobe_events", tracefs) >= sizeof(path)) {
		free(l);
		return -ENAMETOOLONG;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		err = -errno;
	else if ((n = write(fd, l, len + 1)) != (ssize_t)(len + 1))
		err = n < 0 ? -errno : -EIO;
	if (fd >= 0)
		close(fd);
	free(l);
	return err;
}

/* The kernel's last word in @tracefs/error_log ("error: Invalid argument"
 * and the like), appended to @m. */
static void kevents_why(const char *tracefs, struct probe_msg *m)
{
	char path[PATH_MAX], *buf = NULL, *at = NULL;
	size_t len = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/error_log", tracefs) >= sizeof(path) ||
	    slurp_at(AT_FDCWD, path, KPROBE_FILE_MAX, &buf, &len, NULL) < 0)
		return;
	for (char *p = buf; (p = strstr(p, "error: ")); p++)
		at = p;
	if (at)
		probe_msg_add(m, " (kernel: %.*s)", (int)strcspn(at + 7, "\n"), at + 7);
	free(buf);
}

/* Remove cgperf/NAME_PID_SEQ events whose PID no longer lives. */
static void kevents_sweep(const char *tracefs)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/kprobe_events", tracefs) >= sizeof(path) ||
	    slurp_at(AT_FDCWD, path, KPROBE_FILE_MAX, &buf, &len, NULL) < 0)
		return;
	for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		char *ev, *sp, *end, *us, cmd[128];
		long pid;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		/* "p:cgperf/NAME FUNC ...": the group in the first word only */
		ev = strstr(line, ":" KPROBE_GROUP "/");
		sp = strchr(line, ' ');
		if (!ev || !sp || ev > sp)
			continue;
		ev += 1;
		end = ev + strcspn(ev, " ");
		*end = '\0';
		us = strrchr(ev, '_');
		if (!us)
			continue;
		*us = '\0';
		pid = strrchr(ev, '_') ? strtol(strrchr(ev, '_') + 1, NULL, 10) : 0;
		*us = '_';
		if (pid <= 0 || pid > INT_MAX || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if ((size_t)snprintf(cmd, sizeof(cmd), "-:%s", ev) < sizeof(cmd))
			(void)kevents_write(tracefs, cmd);
	}
	free(buf);
}

void probe_kernel_remove(struct probe *p)
{
	char cmd[128];

	if (!p)
		return;
	if (p->kevent && p->kevent_tracefs &&
	    (size_t)snprintf(cmd, sizeof(cmd), "-:%s", p->kevent) < sizeof(cmd))
		(void)kevents_write(p->kevent_tracefs, cmd);
	free(p->kevent);
	free(p->kevent_tracefs);
	p->kevent = NULL;
	p->kevent_tracefs = NULL;
}

/* "tcp_sendmsg_4242_0": the function (dots as _), the PID, a sequence. */
static void event_name(const char *func, char *buf, size_t len)
{
	static unsigned seq;
	char f[KPROBE_EVENT_FUNC + 1];

	snprintf(f, sizeof(f), "%s", func);
	for (char *c = f; *c; c++) {
		if (*c == '.')
			*c = '_';
	}
	snprintf(buf, len, "%s_%d_%u", f, (int)getpid(), seq++);
}

/* Make the event, then resolve it as the tracepoint cgperf:NAME. */
static int place_event(struct probe *p, const struct probe_spec *ps, const char *tracefs,
		       char (*regs)[6], char (*types)[4], struct probe_msg *m)
{
	char event[96], *line = malloc(KPROBE_LINE_MAX), *tp = NULL, *kevent = NULL;
	struct probe_spec tps = { 0 };
	size_t tlen = 0;
	int err = -ENOMEM;

	if (!line)
		return err;
	event_name(ps->name, event, sizeof(event));
	err = probe_kernel_line(ps, KPROBE_GROUP, event, regs, types, line, KPROBE_LINE_MAX);
	if (err)
		goto out;
	err = -ENOMEM;
	tlen = strlen(KPROBE_GROUP) + strlen(event) + 2;
	kevent = malloc(tlen);
	p->kevent_tracefs = strdup(tracefs);
	if (!kevent || !p->kevent_tracefs)
		goto out;
	snprintf(kevent, tlen, "%s/%s", KPROBE_GROUP, event);
	kevents_sweep(tracefs);
	err = kevents_write(tracefs, line);
	if (err) {
		probe_msg_add(m, "%s: cannot write \"%s\" to %s/kprobe_events: %s", ps->head, line,
			      tracefs, strerror(-err));
		if (err == -EINVAL || err == -ENOENT)
			kevents_why(tracefs, m);
		if (err == -EACCES || err == -EPERM)
			probe_msg_add(m, " (needs CAP_SYS_ADMIN or write access to tracefs)");
		goto out;
	}
	/* placed: probe_release() removes it from here on */
	p->kevent = kevent;
	kevent = NULL;
	/* "cgperf:NAME arg...": the event's fields, by the tracepoint code */
	err = -ENOMEM;
	for (int i = 0; i < ps->nargs; i++)
		tlen += strlen(ps->args[i].name) + 1;
	tp = malloc(tlen);
	if (!tp)
		goto out;
	snprintf(tp, tlen, "%s:%s", KPROBE_GROUP, event);
	for (int i = 0; i < ps->nargs; i++)
		snprintf(tp + strlen(tp), tlen - strlen(tp), " %s", ps->args[i].name);
	err = probe_spec_parse(tp, &tps, NULL, 0);
	if (!err)
		err = probe_resolve_tp(p, &tps, tracefs, m);
out:
	probe_spec_release(&tps);
	free(kevent);
	free(tp);
	free(line);
	return err;
}

/* No kprobes, or no way to fetch the arguments: the reason. */
static int check_available(const struct probe_spec *ps, const char *pmu, const char *tracefs,
			   bool have_pmu, bool have_kev, struct probe_msg *m)
{
	const char *kev_why = !tracefs ? "tracefs is not mounted"
				       : "no kprobe_events in tracefs (CONFIG_KPROBE_EVENTS off)";

	if (!have_pmu && !have_kev) {
		probe_msg_add(m,
			      "%s: kernel probes are not available: no kprobe PMU in %.*s and %s",
			      ps->head, (int)(strrchr(pmu, '/') ? strrchr(pmu, '/') - pmu : 0),
			      pmu, kev_why);
		return -EOPNOTSUPP;
	}
	if (ps->nargs && !have_kev) {
		probe_msg_add(m,
			      "%s: arguments need a dynamic event in tracefs, and %s (without "
			      "arguments, the probe goes through the kprobe PMU)",
			      ps->head, kev_why);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* label "k:FUNC[+0xOFF][%return]" */
static int set_label(struct probe *p, const struct probe_spec *ps)
{
	size_t n = strlen(ps->name) + 48;

	free(p->label);
	p->label = malloc(n);
	if (!p->label)
		return -ENOMEM;
	snprintf(p->label, n, "k:%s", ps->name);
	if (ps->offset)
		snprintf(p->label + strlen(p->label), n - strlen(p->label), "+%#" PRIx64,
			 ps->offset);
	if (ps->retprobe)
		snprintf(p->label + strlen(p->label), n - strlen(p->label), "%%return");
	return 0;
}

int probe_kernel_resolve(struct probe *p, const struct probe_spec *ps, const struct probe_host *h,
			 struct probe_msg *m)
{
	const char *pmu = h->kprobe_pmu ? h->kprobe_pmu : KPROBE_PMU;
	const char *tracefs = h->tracefs ? h->tracefs : ev_tracefs();
	bool have_pmu = has_file(pmu, "type"), have_kev = has_file(tracefs, "kprobe_events");
	char regs[USDT_MAX_ARGS][6], types[USDT_MAX_ARGS][4];
	int err;

	err = check_available(ps, pmu, tracefs, have_pmu, have_kev, m);
	if (!err)
		err = check_kallsyms(h->kallsyms ? h->kallsyms : KPROBE_KALLSYMS, ps, m);
	if (!err)
		err = check_blacklist(h->blacklist ? h->blacklist : KPROBE_BLACKLIST, ps, m);
	if (!err)
		err = settle_args(ps, h, regs, types, m);
	if (err)
		return err;
	if (!ps->nargs && have_pmu) {
		p->kind = PROBE_KPROBE;
		p->offset = ps->offset;
		p->retprobe = ps->retprobe;
		p->nsites = 1;
		p->symbol = strdup(ps->name);
		if (!p->symbol)
			return -ENOMEM;
		return set_label(p, ps);
	}
	err = place_event(p, ps, tracefs, regs, types, m);
	if (!err) {
		p->retprobe = ps->retprobe;
		err = set_label(p, ps);
	}
	return err;
}
