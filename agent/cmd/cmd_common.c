// SPDX-License-Identifier: MIT
/*
 * Pieces the commands share: turning -G lists into cgroup directories, the
 * cgroup made for "-- COMMAND", the file-descriptor limit.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "agent/cmd/cmd.h"
#include "agent/symbols/refusals.h"
#include "agent/cmd/spawn.h"
#include "cgroup/mount.h"
#include "cgroup/tree.h"

static int dirs_push(char ***dirs, size_t *n, const char *mount, const char *rel)
{
	size_t len = strlen(mount) + strlen(rel) + 1;
	char **v = realloc(*dirs, (*n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	*dirs = v;
	v[*n] = malloc(len);
	if (!v[*n])
		return -ENOMEM;
	snprintf(v[*n], len, "%s%s", mount, strcmp(rel, "/") ? rel : "");
	(*n)++;
	return 0;
}

int cmd_cgroup_dirs(const char *prog, const char *mount, const char *csv, char ***dirs,
		    size_t *n)
{
	char *copy = strdup(csv), *save = NULL;
	int ret = 0;

	if (!copy)
		return 1;
	for (char *g = strtok_r(copy, ",", &save); g && !ret; g = strtok_r(NULL, ",", &save)) {
		char *rel = cg_path_normalize(mount, g);
		uint64_t id;

		if (!rel || cg_path_id(mount, strcmp(rel, "/") ? rel : "", &id) < 0) {
			fprintf(stderr, "%s: cgroup '%s' not found (no directory %s%s)\n", prog,
				rel ? rel : g, mount, rel && strcmp(rel, "/") ? rel : "");
			ret = 2;
		} else if (dirs_push(dirs, n, mount, rel) < 0) {
			ret = 1;
		}
		free(rel);
	}
	free(copy);
	return ret;
}

int cmd_command_cgroup(const char *prog, const char *mount, const char *name, char **abs,
		       char ***dirs, size_t *n)
{
	char *rel = NULL;
	int err = spawn_make_cgroup(mount, name, &rel, abs);

	if (err) {
		fprintf(stderr, "%s: cannot create a cgroup for the command under %s: %s\n", prog,
			mount, strerror(-err));
		return 1;
	}
	err = dirs_push(dirs, n, mount, rel);
	free(rel);
	return err ? 1 : 0;
}

void cmd_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int cmd_signalfd(sigset_t *oldmask, bool sigchld)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigchld)
		sigaddset(&mask, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &mask, oldmask) < 0)
		return -errno;
	fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0) {
		int err = errno;

		sigprocmask(SIG_SETMASK, oldmask, NULL);
		return -err;
	}
	return fd;
}

int cmd_exit_status(int wait_status)
{
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	if (WIFSIGNALED(wait_status))
		return 128 + WTERMSIG(wait_status);
	return 1;
}

static void refusal_notice(void *ctx, pid_t pid, const char *path, const char *reason)
{
	char esc[512];

	refusals_escape(path, esc, sizeof(esc));
	fprintf(stderr, "%s: refused pid %d %s: %s\n", (const char *)ctx, (int)pid, esc, reason);
}

int cmd_refusals_start(const char *prog, bool verbose)
{
	return refusals_start(verbose ? refusal_notice : NULL, (void *)prog);
}

void cmd_refusals_text(char *buf, size_t len)
{
	struct refusals_figures f;
	const char *sep = " (";
	size_t n;
	int w;

	refusals_figures(&f);
	w = snprintf(buf, len, "%llu", (unsigned long long)f.total);
	n = w > 0 ? (size_t)w : 0;
	for (int i = 0; i < ROOTFS_R_N && n < len; i++) {
		if (!f.by_reason[i])
			continue;
		w = snprintf(buf + n, len - n, "%s%s %llu", sep, rootfs_reason_name((enum rootfs_reason)i),
			     (unsigned long long)f.by_reason[i]);
		n += w > 0 ? (size_t)w : 0;
		sep = ", ";
	}
	if (f.total && n < len)
		snprintf(buf + n, len - n, ")%s", f.notices_dropped ? " (notices rate-limited)" : "");
}

char *cmd_perf_cgroup_find(char *why, size_t whylen)
{
	struct cg_mounts *m = cg_mounts_read("/proc/self/mountinfo");
	const struct cg_mount *pm;
	char *path = NULL;

	if (!m) {
		snprintf(why, whylen, "cannot read /proc/self/mountinfo: %s", strerror(errno));
		return NULL;
	}
	pm = cg_mounts_perf(m);
	if (!pm)
		snprintf(why, whylen, "no cgroup2 or perf_event cgroup v1 hierarchy is mounted");
	else if (!(path = strdup(pm->path)))
		snprintf(why, whylen, "out of memory");
	cg_mounts_free(m);
	return path;
}

char *cmd_perf_cgroup_mount(const char *prog)
{
	char why[512];
	char *path = cmd_perf_cgroup_find(why, sizeof(why));

	if (!path)
		fprintf(stderr, "%s: %s\n", prog, why);
	return path;
}

void cmd_explain_perf_permission(const char *prog, int err)
{
	char buf[32] = "?";
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	fprintf(stderr,
		"%s: perf_event_open: %s.\n"
		"  Monitoring a cgroup or the whole host is system-wide monitoring: it needs CAP_PERFMON\n"
		"  (or CAP_SYS_ADMIN on kernels before 5.8), or kernel.perf_event_paranoid <= 0.\n"
		"  This host has kernel.perf_event_paranoid = %s. Run as root, grant the\n"
		"  capability (setcap cap_perfmon+ep cgperf-agent), or as root:\n"
		"    sysctl kernel.perf_event_paranoid=0\n",
		prog, strerror(err), buf);
}

void cmd_refusals_hint(const char *prog)
{
	struct refusals_figures f;

	refusals_figures(&f);
	if (!f.denied)
		return;
	fprintf(stderr,
		"%s: %llu files of other users' processes or containers not readable (permission\n"
		"  denied): their frames stay unnamed. Naming them needs CAP_SYS_PTRACE (a process's\n"
		"  /proc/PID/root and maps) and CAP_DAC_READ_SEARCH (files its user may not read)%s.\n",
		prog, (unsigned long long)f.denied,
		cmd_have_cap(CAP_SYS_PTRACE) ? "" : "; CAP_SYS_PTRACE is missing");
}

bool cmd_have_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (cap < 0 || cap >= 64 || syscall(SYS_capget, &h, d) != 0)
		return false;
	return d[cap / 32].effective & (1u << (cap % 32));
}

int cmd_join_csv(char **acc, const char *arg)
{
	size_t n = (*acc ? strlen(*acc) + 1 : 0) + strlen(arg) + 1;
	char *g = malloc(n);

	if (!g)
		return -ENOMEM;
	snprintf(g, n, "%s%s%s", *acc ? *acc : "", *acc ? "," : "", arg);
	free(*acc);
	*acc = g;
	return 0;
}

bool cmd_target_opt(struct cmd_target *t, const char *prog, int opt, const char *arg, int *ret)
{
	int r = 0;

	switch (opt) {
	case 'a': t->all = true; break;
	case 'G': r = cmd_join_csv(&t->groups, arg) ? 1 : 0; break;
	case 'p': r = cmd_parse_pid(prog, arg, &t->pid); break;
	case 'd': r = cmd_parse_seconds(prog, "--duration", arg, &t->duration); break;
	case 'v': t->verbose = true; break;
	default: return false;
	}
	*ret = r;
	return true;
}

int cmd_target_cgroups(const struct cmd_target *t, const char *prog, const char *mount,
		       const char *name, bool other, char ***dirs, size_t *n, char **abs)
{
	bool own = t->cmd && !t->groups && !t->all && t->pid <= 0 && !other;

	if ((t->groups || own) && !mount)
		return 1;
	if (t->groups)
		return cmd_cgroup_dirs(prog, mount, t->groups, dirs, n);
	if (own)
		return cmd_command_cgroup(prog, mount, name, abs, dirs, n);
	return 0;
}

uint64_t cmd_target_deadline(const struct cmd_target *t, uint64_t t0)
{
	return t->duration > 0 ? t0 + (uint64_t)(t->duration * 1e9) : 0;
}

void cmd_getopt_init(struct cmd_getopt *g, const struct cmd_spec *s)
{
	size_t nl = 0, ns = 0;

	if (s->in_order)
		g->so[ns++] = '+';
	for (const struct cmd_opt *o = s->opts; o < s->opts + CMD_MAX_OPTS && o->val; o++) {
		int has_arg = o->arg ? required_argument : no_argument;

		if (o->name)
			g->lo[nl++] = (struct option){o->name, has_arg, NULL, o->val};
		if (o->letter) {
			g->so[ns++] = (char)o->val;
			if (o->arg)
				g->so[ns++] = ':';
		}
	}
	g->lo[nl++] = (struct option){"help", no_argument, NULL, 'h'};
	g->lo[nl] = (struct option){NULL, 0, NULL, 0};
	g->so[ns++] = 'h';
	g->so[ns] = '\0';
	optind = 1;
}

/* One option's line(s): "  -X, --NAME ARG", its help from column @col. */
static void opt_usage(FILE *f, const struct cmd_opt *o, int col)
{
	const char *h = o->help;
	int w = fprintf(f, "  %c%c%s%s%s%s%s", o->letter ? '-' : ' ', o->letter ? o->val : ' ',
			o->letter && o->name ? ", " : "  ", o->name ? "--" : "",
			o->name ? o->name : "", o->arg ? " " : "", o->arg ? o->arg : "");

	do {
		size_t len = strcspn(h, "\n");

		fprintf(f, "%*s%.*s\n", w < col ? col - w : 1, "", (int)len, h);
		h += len + (h[len] == '\n');
		w = 0;
	} while (*h);
}

void cmd_usage(FILE *f, const struct cmd_spec *s)
{
	static const char form[] = "cgperf-agent ";
	const struct cmd_opt *end = s->opts + CMD_MAX_OPTS;
	const char *l = s->synopsis;
	int indent = fprintf(f, "usage: %s%s ", form, s->name);
	bool first = true;

	while (*l) {
		size_t len = strcspn(l, "\n");

		fprintf(f, "%.*s\n", (int)len, l);
		l += len + (l[len] == '\n');
		if (!strncmp(l, form, strlen(form)))
			fputs("       ", f); /* another form, under the first */
		else if (*l)
			fprintf(f, "%*s", indent, "");
	}
	for (const struct cmd_opt *o = s->opts; o < end && o->val; o++) {
		if (!o->help)
			continue;
		if (first)
			fputc('\n', f);
		first = false;
		opt_usage(f, o, s->col);
	}
	if (s->notes)
		fputs(s->notes, f);
}

int cmd_parse_demangle(const char *prog, const char *arg, enum demangle_style *out)
{
	if (demangle_style_parse(arg, out) < 0) {
		fprintf(stderr, "%s: --demangle takes full, short or none, not '%s'\n", prog, arg);
		return 2;
	}
	return 0;
}

int cmd_parse_pid(const char *prog, const char *arg, pid_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > 4194304 /* PID_MAX_LIMIT */) {
		fprintf(stderr, "%s: -p takes a process id, not '%s'\n", prog, arg);
		return 2;
	}
	*out = (pid_t)v;
	return 0;
}

int cmd_parse_seconds(const char *prog, const char *what, const char *arg, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || !isfinite(v)) {
		fprintf(stderr, "%s: %s must be a positive number, not '%s'\n", prog, what, arg);
		return 2;
	}
	*out = v;
	return 0;
}
