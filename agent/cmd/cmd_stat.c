// SPDX-License-Identifier: MIT
/*
 * cgperf-agent stat: perf stat -a -G, for every cgroup at once.
 *
 * Targets are cgroups: named with -G, chosen by regex with
 * --for-each-cgroup, all of them with -a, or a fresh transient cgroup that
 * holds the command given after "--". With -a and --for-each-cgroup the
 * hierarchy is watched and cgroups that appear are counted from then on;
 * removed ones are reported one last time and closed.
 *
 * Signals arrive through a signalfd in the same poll() as the interval
 * timer and the cgroup watch, so an interval read is never interrupted
 * half-way and Ctrl-C still prints the totals, as perf does.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/cmd.h"
#include "agent/cmd/cmd_rt.h"
#include "agent/cmd/stat.h"
#include "agent/perf/counters.h"
#include "agent/perf/cpumap.h"
#include "agent/perf/events.h"
#include "lib/json.h"
#include "agent/cmd/spawn.h"
#include "agent/cmd/workload.h"
#include "lib/clock.h"
#include "cgroup/identity.h"
#include "cgroup/mount.h"
#include "cgroup/tree.h"
#include "cgroup/watch.h"
#include "lib/grow.h"

static const char *const default_events[] = {
	"task-clock", "context-switches", "cpu-migrations", "page-faults",
	"cycles",     "instructions",     "branches",       "branch-misses",
};

static const struct cmd_spec stat_spec = {
	.name = "stat",
	.synopsis = "[-a | -G CG[,CG...] | --for-each-cgroup REGEX]\n"
		    "[-e EVENT[,EVENT...]] [-I MSEC] [--json]\n"
		    "[--duration SECONDS | -- COMMAND [ARGS...]]\n",
	.notes = "\n"
		 "With -- COMMAND and no cgroup option, COMMAND runs in a new cgroup that is counted.\n",
	.col = 27,
	.in_order = true,
	.opts = {
		{"all-cgroups", 'a', true, NULL, "count every cgroup of the host, following new ones"},
		{"cgroup", 'G', true, "CG,...", "count these cgroups (paths relative to the cgroup mount)"},
		{"for-each-cgroup", 'R', false, "RE", "count every cgroup whose path matches the regex"},
		{"event", 'e', true, "EV,...", "events, as perf names them (default: perf stat's set)"},
		{"interval", 'I', true, "MSEC", "print deltas every MSEC milliseconds"},
		{"interval-print", 'I', false, "MSEC", NULL},
		{"duration", 'd', true, "SECONDS", "stop after this long (default: Ctrl-C or COMMAND's end)"},
		{"json", 'j', true, NULL, "JSON Lines on stdout, one object per cgroup and event"},
		{"list-events", 'l', true, NULL, "list the event names this command knows"},
		{"verbose", 'v', true, NULL, "print the agent's own costs (setup, reads) on stderr"},
	},
};

/* Print "unknown event" with the closest names and return 2. */
static int unknown_event(const char *prog, const char *name, int err)
{
	char *sugg[6];
	size_t n;

	if (err == -EINVAL) {
		fprintf(stderr, "%s: malformed event '%s'\n", prog, name);
		return 2;
	}
	n = ev_suggest(name, ev_tracefs(), sugg, 6);
	fprintf(stderr, "%s: unknown event '%s'", prog, name);
	if (strchr(name, ':') && !ev_tracefs())
		fprintf(stderr, " (tracefs is not mounted, so no tracepoint can be found)");
	if (n) {
		fputs("; did you mean:\n", stderr);
		for (size_t i = 0; i < n; i++) {
			fprintf(stderr, "    %s\n", sugg[i]);
			free(sugg[i]);
		}
	} else {
		fputc('\n', stderr);
	}
	fprintf(stderr, "  (cgperf-agent stat --list-events lists the known names)\n");
	return 2;
}

static int parse_events(struct stat_ctx *c, char **names, size_t nnames)
{
	c->evs = calloc(nnames, sizeof(*c->evs));
	if (!c->evs)
		return 1;
	for (size_t i = 0; i < nnames; i++) {
		int err = ev_parse(names[i], ev_tracefs(), &c->evs[i]);

		if (err == -EACCES || err == -EPERM) {
			fprintf(stderr, "%s: cannot read tracepoint '%s' from tracefs: %s\n",
				c->prog, names[i], strerror(-err));
			return 1;
		}
		if (err)
			return unknown_event(c->prog, names[i], err);
		c->nev++;
	}
	return 0;
}

/* Split a comma list into @out (pointers into @s, which is modified). */
static size_t split_commas(char *s, char ***out, size_t *cap, size_t n)
{
	char *save = NULL;

	for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (GROW_ARRAY(*out, n, *cap, 8) < 0)
			return n;
		(*out)[n++] = t;
	}
	return n;
}

static struct target *find_target(struct stat_ctx *c, const char *path)
{
	for (size_t i = 0; i < c->ntg; i++)
		if (!strcmp(c->tg[i].path, path) && !c->tg[i].removed)
			return &c->tg[i];
	return NULL;
}

static char *abs_path(const struct stat_ctx *c, const char *rel)
{
	size_t n = strlen(c->mount) + strlen(rel) + 1;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s", c->mount, strcmp(rel, "/") ? rel : "");
	return s;
}

/*
 * Start counting @rel. Returns 0, or -errno: the caller decides whether a
 * vanished cgroup matters (it does for -G, not for a watched tree).
 */
static int add_target(struct stat_ctx *c, const char *rel)
{
	struct target *t;
	char *abs;
	int slot;
	uint64_t id = 0;

	if (find_target(c, rel))
		return 0;
	if (GROW_ARRAY(c->tg, c->ntg, c->captg, 32) < 0)
		return -ENOMEM;
	abs = abs_path(c, rel);
	if (!abs)
		return -ENOMEM;
	slot = counters_add(c->ctr, abs);
	if (slot >= 0)
		cg_path_id(c->mount, strcmp(rel, "/") ? rel : "", &id);
	free(abs);
	if (slot < 0)
		return slot;
	t = &c->tg[c->ntg];
	memset(t, 0, sizeof(*t));
	t->path = strdup(rel);
	if (!t->path) {
		counters_remove(c->ctr, slot);
		return -ENOMEM;
	}
	t->slot = slot;
	t->id = id;
	cg_identity_parse(rel, &t->ident);
	if (c->rt)
		cg_rtcache_want(c->rt, rel);
	c->ntg++;
	return 0;
}

static bool wanted(const struct stat_ctx *c, const char *rel)
{
	if (c->mode == SEL_ALL)
		return true;
	if (c->mode == SEL_REGEX)
		return regexec(&c->re, rel, 0, NULL, 0) == 0;
	return false;
}

static int report_add_error(struct stat_ctx *c, const char *rel, int err)
{
	if (err == -EACCES || err == -EPERM) {
		cmd_explain_perf_permission(c->prog, -err);
		return 1;
	}
	if (err == -EMFILE || err == -ENFILE) {
		struct rlimit rl = {0};

		getrlimit(RLIMIT_NOFILE, &rl);
		fprintf(stderr,
			"%s: out of file descriptors at cgroup %s: %zu open (one per cgroup, event"
			" and CPU), limit %llu; raise it with ulimit -n\n",
			c->prog, rel, counters_nfds(c->ctr), (unsigned long long)rl.rlim_cur);
		return 1;
	}
	if (err == -ENOENT || err == -ENOTDIR) {
		fprintf(stderr, "%s: cgroup '%s' not found (no directory %s%s)\n", c->prog, rel,
			c->mount, strcmp(rel, "/") ? rel : "");
		return 2;
	}
	fprintf(stderr, "%s: cannot count cgroup %s: %s\n", c->prog, rel, strerror(-err));
	return 1;
}

static int select_from_tree(struct stat_ctx *c)
{
	struct cg_tree *t = cg_tree_scan(c->mount);

	if (!t) {
		fprintf(stderr, "%s: cannot scan %s: %s\n", c->prog, c->mount, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < cg_tree_count(t); i++) {
		const struct cg_node *n = cg_tree_get(t, i);
		int err;

		if (!wanted(c, n->path))
			continue;
		err = add_target(c, n->path);
		if (err == -ENOENT || err == -ENOTDIR)
			continue; /* removed since the scan */
		if (err) {
			cg_tree_free(t);
			return report_add_error(c, n->path, err);
		}
	}
	cg_tree_free(t);
	return 0;
}

static void on_watch(void *ctx, enum cg_watch_kind kind, const char *path)
{
	struct stat_ctx *c = ctx;
	struct target *t;
	int err;

	switch (kind) {
	case CG_WATCH_ADDED:
		if (!wanted(c, path))
			return;
		err = add_target(c, path);
		if (err && err != -ENOENT && err != -ENOTDIR && !c->fatal)
			c->fatal = report_add_error(c, path, err);
		break;
	case CG_WATCH_REMOVED:
		t = find_target(c, path);
		if (t)
			t->removed = true; /* reported once more, then closed */
		break;
	case CG_WATCH_OVERFLOW:
		/* Events were lost: drop what vanished, add what appeared. */
		for (size_t i = 0; i < c->ntg; i++) {
			uint64_t id;

			if (cg_path_id(c->mount, strcmp(c->tg[i].path, "/") ? c->tg[i].path : "",
				       &id) < 0)
				c->tg[i].removed = true;
		}
		if (!c->fatal)
			c->fatal = select_from_tree(c);
		break;
	}
}

static void timed_read(struct stat_ctx *c)
{
	uint64_t t = clock_mono_ns();

	counters_read(c->ctr);
	t = clock_mono_ns() - t;
	c->read_ns_total += t;
	if (t > c->read_ns_max)
		c->read_ns_max = t;
	c->nreads++;
}

/* Close the slots of cgroups that went away, after their last report. */
static void reap_removed(struct stat_ctx *c)
{
	size_t j = 0;

	for (size_t i = 0; i < c->ntg; i++) {
		if (c->tg[i].removed) {
			counters_remove(c->ctr, c->tg[i].slot);
			free(c->tg[i].path);
			continue;
		}
		c->tg[j++] = c->tg[i];
	}
	c->ntg = j;
}


static int make_transient(struct stat_ctx *c)
{
	char *rel = NULL;
	int err = spawn_make_cgroup(c->mount, "stat", &rel, &c->transient);

	if (err) {
		fprintf(stderr, "%s: cannot create a cgroup under %s for the command: %s\n",
			c->prog, c->mount, strerror(-err));
		return 1;
	}
	err = add_target(c, rel);
	if (err)
		err = report_add_error(c, rel, err);
	free(rel);
	return err;
}

static void remove_transient(struct stat_ctx *c)
{
	if (!c->transient)
		return;
	if (rmdir(c->transient) < 0 && errno != ENOENT)
		fprintf(stderr, "%s: cgroup %s left behind: %s (processes still in it?)\n", c->prog,
			c->transient, strerror(errno));
	free(c->transient);
	c->transient = NULL;
}

static void list_events(void)
{
	for (size_t i = 0; i < ev_builtin_count(); i++) {
		const char *kind, *name = ev_builtin_name(i, &kind);

		printf("  %-40s [%s]\n", name, kind);
	}
	printf("  %-40s [Tracepoint event, from %s/events]\n", "SUBSYS:EVENT",
	       ev_tracefs() ? ev_tracefs() : "tracefs (not mounted)");
	printf("  %-40s [Raw hardware event descriptor]\n", "rNNN");
	printf("  modifiers: EVENT:u (user only), EVENT:k (kernel only)\n");
}

/* What the command line asked for, besides what goes into the context. */
struct stat_args {
	char **evnames, **groups;
	size_t nevnames, evcap, ngroups, gcap;
	double duration;
	char **cmd; /* "-- COMMAND", or NULL */
	bool done;  /* --help or --list-events: nothing more to do */
};

static int parse_regex(struct stat_ctx *c, const char *re)
{
	int rc = regcomp(&c->re, re, REG_EXTENDED | REG_NOSUB);

	if (rc) {
		char msg[256];

		regerror(rc, &c->re, msg, sizeof(msg));
		fprintf(stderr, "%s: bad --for-each-cgroup regex '%s': %s\n", c->prog, re, msg);
		return 2;
	}
	c->have_re = true;
	return 0;
}

static int parse_interval(struct stat_ctx *c, const char *s)
{
	double interval;
	int ret = cmd_parse_seconds(c->prog, "-I", s, &interval);

	if (ret)
		return ret;
	if (interval < 10) {
		fprintf(stderr, "%s: -I must be at least 10 ms\n", c->prog);
		return 2;
	}
	c->interval_ms = (long)interval;
	return 0;
}

/* The options into @c and @a: 0, or the exit status (usage errors 2). */
static int parse_args(struct stat_ctx *c, struct stat_args *a, int argc, char **argv)
{
	struct cmd_getopt g;
	enum select_mode want;
	int opt, ret = 0;

	cmd_getopt_init(&g, &stat_spec);
	while (!ret && (opt = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
		want = opt == 'a' ? SEL_ALL : opt == 'G' ? SEL_NAMED : opt == 'R' ? SEL_REGEX : SEL_NONE;
		if (want != SEL_NONE && c->mode != SEL_NONE && (c->mode != want || want == SEL_REGEX)) {
			fprintf(stderr, "%s: choose one of -a, -G and --for-each-cgroup\n", c->prog);
			return 2;
		}
		if (want != SEL_NONE)
			c->mode = want;
		switch (opt) {
		case 'a': break;
		case 'G': a->ngroups = split_commas(optarg, &a->groups, &a->gcap, a->ngroups); break;
		case 'R': ret = parse_regex(c, optarg); break;
		case 'e': a->nevnames = split_commas(optarg, &a->evnames, &a->evcap, a->nevnames); break;
		case 'I': ret = parse_interval(c, optarg); break;
		case 'd': ret = cmd_parse_seconds(c->prog, "--duration", optarg, &a->duration); break;
		case 'j': c->json = true; break;
		case 'v': c->verbose = true; break;
		case 'l': list_events(); a->done = true; return 0;
		case 'h': cmd_usage(stdout, &stat_spec); a->done = true; return 0;
		default: cmd_usage(stderr, &stat_spec); return 2;
		}
	}
	if (ret)
		return ret;
	if (c->mode == SEL_NAMED && !a->ngroups) {
		fprintf(stderr, "%s: -G needs at least one cgroup\n", c->prog);
		return 2;
	}
	if (optind < argc && a->duration > 0) {
		fprintf(stderr, "%s: give either --duration or a command, not both\n", c->prog);
		return 2;
	}
	a->cmd = optind < argc ? argv + optind : NULL;
	if (c->mode == SEL_NONE && !a->cmd)
		c->mode = SEL_ALL;
	return 0;
}

/* Named cgroups are checked before anything opens: exit 2 naming the path. */
static int check_named(struct stat_ctx *c, const struct stat_args *a)
{
	for (size_t i = 0; i < a->ngroups; i++) {
		char *rel = cg_path_normalize(c->mount, a->groups[i]);
		uint64_t id;
		int err;

		if (!rel) {
			fprintf(stderr, "%s: bad cgroup path '%s': %s\n", c->prog, a->groups[i],
				errno == EINVAL ? "'..' is not allowed" : strerror(errno));
			return errno == EINVAL ? 2 : 1;
		}
		err = cg_path_id(c->mount, strcmp(rel, "/") ? rel : "", &id);
		if (err)
			err = report_add_error(c, rel, err);
		free(rel);
		if (err)
			return err;
	}
	return 0;
}

/* The targets: every cgroup (-a, regex; watched), the named ones, or a new
 * one for the command. 0 or the exit status. */
static int select_targets(struct stat_ctx *c, const struct stat_args *a, struct cg_watch **watch)
{
	int ret;

	if (c->mode == SEL_ALL || c->mode == SEL_REGEX) {
		/* Watch first, then scan: a cgroup made in between is seen twice
		 * (harmless), never missed. */
		*watch = cg_watch_new(c->mount);
		if (!*watch)
			fprintf(stderr, "%s: warning: cannot watch %s for new cgroups: %s\n",
				c->prog, c->mount, strerror(errno));
		ret = select_from_tree(c);
		if (!ret && c->mode == SEL_REGEX && !c->ntg)
			fprintf(stderr, "%s: no cgroup matches the regex yet; waiting for one\n",
				c->prog);
		return ret;
	}
	if (c->mode != SEL_NAMED)
		return make_transient(c);
	for (size_t i = 0; i < a->ngroups; i++) {
		char *rel = cg_path_normalize(c->mount, a->groups[i]);
		int err = rel ? add_target(c, rel) : -ENOMEM;

		if (err)
			err = report_add_error(c, rel ? rel : a->groups[i], err);
		free(rel);
		if (err)
			return err;
	}
	return 0;
}

/* One interval's output, when it is due (or the run stops). */
static void interval_tick(struct stat_ctx *c, uint64_t now, bool stop, uint64_t t0,
			  uint64_t *last, uint64_t *next)
{
	if (!c->interval_ms || (now < *next && !stop))
		return;
	timed_read(c);
	/* The last interval is printed even when partial, so no count
	 * between the previous tick and the stop is lost. */
	if (now > *last)
		stat_print_interval(c, (double)(now - t0) / 1e9, (double)(now - *last));
	*last = now;
	while (*next && *next <= now)
		*next += (uint64_t)c->interval_ms * 1000000ull;
	reap_removed(c);
}

/* Count until a signal, the command's end, or @end (0: none). 0 or 1. */
static int count_loop(struct stat_ctx *c, struct workload *w, struct cg_watch *watch,
		      uint64_t t0, uint64_t end)
{
	uint64_t last = t0, next = c->interval_ms ? t0 + (uint64_t)c->interval_ms * 1000000ull : 0;
	bool stop = false;

	while (!stop && !c->fatal) {
		struct pollfd pfd[2] = {{.fd = workload_fd(w), .events = POLLIN},
					{.fd = watch ? cg_watch_fd(watch) : -1, .events = POLLIN}};
		uint64_t now = clock_mono_ns(), wake = UINT64_MAX;
		int timeout;

		if (next && next < wake)
			wake = next;
		if (end && end < wake)
			wake = end;
		if (wake == UINT64_MAX)
			timeout = -1;
		else
			timeout = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
			return 1;
		if ((pfd[0].revents & POLLIN) && workload_signals(w))
			stop = true;
		if (watch && (pfd[1].revents & POLLIN))
			cg_watch_read(watch, on_watch, c);
		now = clock_mono_ns();
		if (end && now >= end)
			stop = true;
		interval_tick(c, now, stop, t0, &last, &next);
	}
	return 0;
}

/* Without -I: one read and the totals, titled with the command line. */
static void final_report(struct stat_ctx *c, char **cmd, uint64_t t0)
{
	uint64_t now = clock_mono_ns();
	char what[256] = "";
	size_t o = 0;

	timed_read(c);
	for (int i = 0; cmd && cmd[i] && o + 2 < sizeof(what); i++)
		o += (size_t)snprintf(what + o, sizeof(what) - o, "%s%s", i ? " " : "", cmd[i]);
	stat_print_totals(c, (double)(now - t0), what[0] ? what : NULL);
}

/* Open the counters, start the command, count, report. 0 or the exit status. */
static int stat_run(struct stat_ctx *c, struct stat_args *a, struct workload *w)
{
	struct cg_watch *watch = NULL;
	int ret, *cpus = NULL, ncpu = cpumap_online(&cpus);

	if (ncpu < 0) {
		fprintf(stderr, "%s: cannot read the online CPUs: %s\n", c->prog, strerror(-ncpu));
		return 1;
	}
	cmd_raise_nofile();
	uint64_t setup_t0 = clock_mono_ns();

	c->ctr = counters_new(c->evs, c->nev, cpus, (size_t)ncpu);
	c->rt = cmd_rt_cache_new();
	ret = c->ctr ? select_targets(c, a, &watch) : 1;
	if (ret || (ret = workload_start(w, c->prog, a->cmd, c->transient)))
		goto out;
	if ((ret = counters_start(c->ctr)) < 0) {
		fprintf(stderr, "%s: cannot enable counters: %s\n", c->prog, strerror(-ret));
		ret = 1;
		goto out;
	}
	uint64_t t0 = clock_mono_ns();

	if (c->verbose)
		fprintf(stderr,
			"%s: setup %.3f ms: %zu cgroups x %zu events x %d CPUs = %zu fds\n",
			c->prog, (double)(t0 - setup_t0) / 1e6, c->ntg, c->nev, ncpu,
			counters_nfds(c->ctr));
	workload_go(w); /* let the command run */
	counters_read(c->ctr);
	ret = count_loop(c, w, watch, t0, a->duration > 0 ? t0 + (uint64_t)(a->duration * 1e9) : 0);
	if (ret)
		goto out;
	if (c->fatal) {
		ret = c->fatal;
		goto out;
	}
	if (c->verbose && c->interval_ms && c->nreads)
		fprintf(stderr, "%s: read %.3f ms per interval (max %.3f ms) over %" PRIu64
				" intervals, %zu fds open\n",
			c->prog, (double)c->read_ns_total / (double)c->nreads / 1e6,
			(double)c->read_ns_max / 1e6, c->nreads, counters_nfds(c->ctr));
	if (!c->interval_ms)
		final_report(c, a->cmd, t0);
	ret = workload_finish(w);
out:
	cg_watch_free(watch);
	free(cpus);
	return ret;
}

int cmd_stat(int argc, char **argv)
{
	struct stat_ctx c = {.prog = "cgperf-agent stat", .out = stdout};
	struct stat_args a = {0};
	struct workload w = WORKLOAD_INIT;
	int ret;

	ret = parse_args(&c, &a, argc, argv);
	if (ret || a.done)
		goto out;
	if (!a.nevnames) {
		for (size_t i = 0; i < sizeof(default_events) / sizeof(default_events[0]); i++)
			a.nevnames = split_commas(strdupa(default_events[i]), &a.evnames, &a.evcap,
						  a.nevnames);
	}
	ret = parse_events(&c, a.evnames, a.nevnames);
	if (ret)
		goto out;
	c.mount = cmd_perf_cgroup_mount(c.prog);
	if (!c.mount) {
		ret = 1;
		goto out;
	}
	ret = check_named(&c, &a);
	if (!ret)
		ret = stat_run(&c, &a, &w);
out:
	workload_release(&w);
	counters_free(c.ctr);
	cg_rtcache_free(c.rt);
	remove_transient(&c);
	for (size_t i = 0; i < c.ntg; i++)
		free(c.tg[i].path);
	free(c.tg);
	for (size_t i = 0; i < c.nev; i++)
		ev_spec_release(&c.evs[i]);
	free(c.evs);
	free(a.evnames);
	free(a.groups);
	free(c.mount);
	if (c.have_re)
		regfree(&c.re);
	return ret;
}
