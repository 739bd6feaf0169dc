// SPDX-License-Identifier: MIT
/*
 * cgperf-agent record: perf record -g + perf script + stackcollapse-perf.pl
 * in one step, per cgroup.
 *
 * The hot path (one call per sample) does no symbolization and no string
 * work: each frame becomes (object id, file offset), the whole stack a
 * small array of integers, counted in a hash table (raw fold). Objects are
 * interned the first time a mapping is hit, while the process is alive, so
 * binaries of short-lived processes and of other mount namespaces can still
 * be opened (through /proc/PID/root). Only at the end is every distinct
 * frame named once and the raw stacks turned into folded text.
 *
 * User stacks come from one of two unwinders behind one small ops struct:
 * frame pointers (the kernel already walked them into the callchain) or
 * DWARF CFI over the copied user stack (agent/stacks/unwind.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/cmd.h"
#include "agent/perf/cpumap.h"
#include "agent/perf/events.h"
#include "agent/stacks/fold.h"
#include "agent/perf/sampler.h"
#include "agent/cmd/spawn.h"
#include "agent/symbols/refusals.h"
#include "agent/stacks/stacks.h"
#include "cgroup/proc.h"
#include "cgroup/tree.h"

struct record {
	const char *prog;
	enum stacks_mode mode;
	struct stacks *st;
	struct fold *pidsel; /* pid -> 1 match, 2 no match, 3 the command's tree (--target) */
	struct cg_selector *sel;
	char *mount;
	uint64_t samples, lost, filtered;
};

static bool selected(struct record *r, uint32_t pid)
{
	uint64_t *slot;

	if (!r->sel)
		return true;
	slot = fold_slot(r->pidsel, &pid, sizeof(pid));
	if (!slot)
		return false;
	if (!*slot) {
		struct cg_proc p;

		*slot = 2;
		if (cg_proc_read("/proc", (pid_t)pid, &p) == 0) {
			if (cg_selector_match(r->sel, &p))
				*slot = 1;
			cg_proc_release(&p);
		}
	}
	return *slot == 1 || *slot == 3;
}

/*
 * Raw stack key: [cgroup id, comm id, nframes, then per frame (obj << 48 |
 * offset)]. File offsets fit 48 bits; kernel addresses keep their low 48
 * bits and are re-extended when named.
 */
static void on_sample(void *ctx, const struct sample *s)
{
	struct record *r = ctx;

	r->samples++;
	if (!selected(r, s->pid)) {
		r->filtered++;
		return;
	}
	stacks_add(r->st, s, NULL);
}

struct trunc_report {
	struct record *r;
};

/* One "cgroup reason count" line of the summary. */
static void trunc_line(void *ctx, uint64_t cgroup_id, enum stacks_trunc reason, uint64_t count)
{
	struct trunc_report *t = ctx;

	fprintf(stderr, "%s:   %s %s %" PRIu64 "\n", t->r->prog,
		stacks_cgroup_label(t->r->st, cgroup_id), stacks_trunc_name(reason), count);
}

static void on_mmap(void *ctx, const struct sample_mmap *m)
{
	struct record *r = ctx;

	stacks_mmap(r->st, m);
}

static void on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec)
{
	struct record *r = ctx;

	stacks_comm(r->st, pid, tid, comm, exec);
	if (exec && r->sel) {
		uint64_t *slot = fold_slot(r->pidsel, &pid, sizeof(pid));

		/* A new program: ask the selector again, except for the command
		 * we ran and its descendants (3), which are targets by definition. */
		if (slot && *slot != 3)
			*slot = 0;
	}
}

static void on_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	struct record *r = ctx;

	stacks_fork(r->st, pid, ppid, tid);
	if (r->sel && pid != ppid) {
		uint64_t *ps = fold_slot(r->pidsel, &ppid, sizeof(ppid));
		uint64_t v = ps ? *ps : 0;
		uint64_t *cs = fold_slot(r->pidsel, &pid, sizeof(pid));

		if (cs)
			*cs = v == 1 || v == 3 ? v : 0; /* children of a target are targets */
	}
}

static void on_exit_rec(void *ctx, uint32_t pid, uint32_t tid)
{
	struct record *r = ctx;

	stacks_exit(r->st, pid, tid);
}

static void on_lost(void *ctx, uint64_t lost)
{
	struct record *r = ctx;

	r->lost += lost;
}

static void usage(FILE *f)
{
	fputs("usage: cgperf-agent record [-a | -G CG[,CG...] | -p PID | --target SELECTOR]\n"
	      "                           [-F HZ | -c PERIOD] [-e EVENT] [-g | --call-graph fp|dwarf[,BYTES]]\n"
	      "                           [-o FILE] [--per-cgroup] [--demangle=STYLE | --no-demangle]\n"
	      "                           [--duration SECONDS | -- COMMAND...]\n"
	      "\n"
	      "  -a, --all-cpus          sample the whole host (default)\n"
	      "  -G, --cgroup CG,...     only these cgroups (paths relative to the cgroup mount)\n"
	      "  -p, --pid PID           only this process and the children it forks\n"
	      "  -t, --target SELECTOR   processes matching comm=, exe=, cgroup=, pid=, cmdline~\n"
	      "  -F, --freq HZ           samples per second per CPU (default 99)\n"
	      "  -c, --count PERIOD      one sample every PERIOD events instead\n"
	      "  -e, --event EVENT       sampling event (default cpu-clock)\n"
	      "  -g                      stacks by frame pointers (= --call-graph fp)\n"
	      "      --call-graph MODE   fp, or dwarf[,BYTES] to unwind a BYTES copy of the user\n"
	      "                          stack with .eh_frame (default 8192)\n"
	      "  -o, --output FILE       folded stacks to FILE (default stdout)\n"
	      "      --per-cgroup        the cgroup (container identity when known) as first frame\n"
	      "      --demangle STYLE    C++/Rust names: full (default, as perf -v: parameters,\n"
	      "                          clone suffixes), short (as perf: no parameters), none\n"
	      "      --no-demangle       symbol names as the binary has them (= --demangle none)\n"
	      "  -d, --duration SECONDS  stop after this long (default: Ctrl-C or COMMAND's end)\n"
	      "  -v, --verbose           print the agent's own figures on stderr\n",
	      f);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int parse_u64(const char *prog, const char *what, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || s[0] == '-') {
		fprintf(stderr, "%s: %s must be a positive integer, not '%s'\n", prog, what, s);
		return 2;
	}
	*out = v;
	return 0;
}

int cmd_record(int argc, char **argv)
{
	enum { OPT_CALLGRAPH = 256, OPT_PERCG, OPT_DEMANGLE, OPT_NO_DEMANGLE };
	static const struct option longopts[] = {
		{"all-cpus", no_argument, NULL, 'a'},
		{"cgroup", required_argument, NULL, 'G'},
		{"pid", required_argument, NULL, 'p'},
		{"target", required_argument, NULL, 't'},
		{"freq", required_argument, NULL, 'F'},
		{"count", required_argument, NULL, 'c'},
		{"event", required_argument, NULL, 'e'},
		{"call-graph", required_argument, NULL, OPT_CALLGRAPH},
		{"output", required_argument, NULL, 'o'},
		{"per-cgroup", no_argument, NULL, OPT_PERCG},
		{"demangle", required_argument, NULL, OPT_DEMANGLE},
		{"no-demangle", no_argument, NULL, OPT_NO_DEMANGLE},
		{"duration", required_argument, NULL, 'd'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct record r = {.prog = "cgperf-agent record", .mode = STACKS_LEAF};
	struct sampler_opts so = {.freq = 99, .stack_bytes = 8192, .mmap_pages = 64};
	struct sampler *smp = NULL;
	struct ev_spec ev = {0};
	const char *evname = "cpu-clock", *outpath = NULL;
	char *groups_arg = NULL;
	bool all = false;
	char *groups_copy = NULL, **cgdirs = NULL, *trans_rel = NULL, *trans_abs = NULL;
	size_t ncgdirs = 0;
	double duration = 0;
	bool verbose = false, have_ev = false, per_cgroup = false;
	enum demangle_style dstyle = DEMANGLE_FULL;
	int opt, ret = 0, *cpus = NULL, ncpu, sfd = -1, *fds = NULL;
	struct spawn sp = {.pid = -1, .go_fd = -1};
	sigset_t oldmask;
	bool sigmask_set = false;
	int child_status = 0;
	pid_t child = -1;
	FILE *out = stdout;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+aG:p:t:F:c:e:go:d:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'a': all = true; break;
		case 'G': {
			/* Repeated -G options add up, as in stat. */
			size_t n = (groups_arg ? strlen(groups_arg) + 1 : 0) + strlen(optarg) + 1;
			char *g = malloc(n);

			if (!g) {
				ret = 1;
				goto out;
			}
			snprintf(g, n, "%s%s%s", groups_arg ? groups_arg : "", groups_arg ? "," : "",
				 optarg);
			free(groups_arg);
			groups_arg = g;
			break;
		}
		case 'p': {
			uint64_t v;

			if ((ret = parse_u64(r.prog, "-p", optarg, &v)))
				goto out;
			if (v > 4194304) { /* PID_MAX_LIMIT */
				fprintf(stderr, "%s: no process %s\n", r.prog, optarg);
				ret = 2;
				goto out;
			}
			so.pid = (pid_t)v;
			break;
		}
		case 't': {
			char err[256];

			r.sel = cg_selector_parse(optarg, err, sizeof(err));
			if (!r.sel) {
				fprintf(stderr, "%s: bad --target: %s\n", r.prog, err);
				ret = 2;
				goto out;
			}
			break;
		}
		case 'F':
			if ((ret = parse_u64(r.prog, "-F", optarg, &so.freq)))
				goto out;
			so.period = 0;
			break;
		case 'c':
			if ((ret = parse_u64(r.prog, "-c", optarg, &so.period)))
				goto out;
			so.freq = 0;
			break;
		case 'e': evname = optarg; break;
		case 'g': r.mode = STACKS_FP; break;
		case OPT_CALLGRAPH:
			if (!strcmp(optarg, "fp")) {
				r.mode = STACKS_FP;
			} else if (!strncmp(optarg, "dwarf", 5) && (!optarg[5] || optarg[5] == ',')) {
				r.mode = STACKS_DWARF;
				if (optarg[5]) {
					uint64_t v;

					if ((ret = parse_u64(r.prog, "dwarf stack size", optarg + 6, &v)))
						goto out;
					if (v > 65528) {
						fprintf(stderr, "%s: dwarf stack size is at most 65528\n", r.prog);
						ret = 2;
						goto out;
					}
					so.stack_bytes = (uint32_t)((v + 7) & ~7ull);
				}
			} else {
				fprintf(stderr, "%s: --call-graph takes fp or dwarf[,BYTES], not '%s'\n",
					r.prog, optarg);
				ret = 2;
				goto out;
			}
			break;
		case 'o': outpath = optarg; break;
		case OPT_PERCG: per_cgroup = true; break;
		case OPT_DEMANGLE:
			if (demangle_style_parse(optarg, &dstyle) < 0) {
				fprintf(stderr, "%s: --demangle takes full, short or none, not '%s'\n",
					r.prog, optarg);
				ret = 2;
				goto out;
			}
			break;
		case OPT_NO_DEMANGLE: dstyle = DEMANGLE_NONE; break;
		case 'd': {
			char *end;

			errno = 0;
			duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(duration > 0) || !isfinite(duration)) {
				fprintf(stderr, "%s: --duration must be a positive number, not '%s'\n",
					r.prog, optarg);
				ret = 2;
				goto out;
			}
			break;
		}
		case 'v': verbose = true; break;
		case 'h': usage(stdout); goto out;
		default: usage(stderr); ret = 2; goto out;
		}
	}
	if (all + (groups_arg != NULL) + (so.pid > 0) + (r.sel != NULL) > 1) {
		fprintf(stderr, "%s: choose one of -a, -G, -p and --target\n", r.prog);
		ret = 2;
		goto out;
	}
	if (optind < argc && (duration > 0 || so.pid > 0)) {
		fprintf(stderr, "%s: a command cannot be combined with --duration or -p\n", r.prog);
		ret = 2;
		goto out;
	}

	ret = ev_parse(evname, ev_tracefs(), &ev);
	if (ret) {
		char *sugg[6];
		size_t n = ret == -ENOENT ? ev_suggest(evname, ev_tracefs(), sugg, 6) : 0;

		fprintf(stderr, "%s: unknown event '%s'%s\n", r.prog, evname,
			n ? "; did you mean:" : "");
		for (size_t i = 0; i < n; i++) {
			fprintf(stderr, "    %s\n", sugg[i]);
			free(sugg[i]);
		}
		ret = 2;
		goto out;
	}
	have_ev = true;

	r.mount = cmd_perf_cgroup_mount(r.prog);
	if ((groups_arg || (optind < argc && !r.sel && !all)) && !r.mount) {
		ret = 1;
		goto out;
	}
	if (groups_arg && (ret = cmd_cgroup_dirs(r.prog, r.mount, groups_arg, &cgdirs, &ncgdirs)))
		goto out;
	if (optind < argc && !groups_arg && !r.sel && !all &&
	    (ret = cmd_command_cgroup(r.prog, r.mount, "record", &trans_abs, &cgdirs, &ncgdirs)))
		goto out;

	ncpu = cpumap_online(&cpus);
	if (ncpu < 0) {
		fprintf(stderr, "%s: cannot read the online CPUs: %s\n", r.prog, strerror(-ncpu));
		ret = 1;
		goto out;
	}
	if (cmd_refusals_start(r.prog, verbose) < 0) {
		fprintf(stderr, "%s: out of memory\n", r.prog);
		ret = 1;
		goto out;
	}
	r.st = stacks_new(r.mode, per_cgroup, r.mount);
	r.pidsel = fold_new();
	if (!r.st || !r.pidsel || stacks_set_demangle(r.st, dstyle) < 0) {
		fprintf(stderr, "%s: out of memory\n", r.prog);
		ret = 1;
		goto out;
	}

	so.event = &ev;
	so.callchain = r.mode != STACKS_LEAF;
	so.user_stack = r.mode == STACKS_DWARF;
	so.regs_mask = stacks_regs_mask(r.mode);
	/* perf's default depth, or less when the sysctl says so (more fails). */
	int sysmax = sampler_max_stack_default();

	so.max_stack = sysmax > 0 && sysmax < 127 ? (uint32_t)sysmax : 127;
	stacks_set_max_stack(r.st, so.max_stack);
	so.cpus = cpus;
	so.ncpu = (size_t)ncpu;
	so.cgroup_dirs = (const char *const *)cgdirs;
	so.ncgroups = ncgdirs;
	cmd_raise_nofile();
	smp = sampler_open(&so);
	if (!smp) {
		int err = errno;

		if (err == EACCES || err == EPERM)
			cmd_explain_perf_permission(r.prog, err);
		else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
			fprintf(stderr, "%s: event '%s' cannot sample on this host (%s)%s\n", r.prog,
				ev.name, strerror(err),
				ev.kind == EV_HARDWARE ? "; no hardware PMU here? try -e cpu-clock" : "");
		else if (err == ESRCH)
			fprintf(stderr, "%s: no process %d\n", r.prog, (int)so.pid);
		else
			fprintf(stderr, "%s: cannot open sampling events: %s\n", r.prog, strerror(err));
		ret = err == ESRCH ? 2 : 1;
		goto out;
	}
	if (outpath) {
		out = fopen(outpath, "we");
		if (!out) {
			fprintf(stderr, "%s: cannot write %s: %s\n", r.prog, outpath, strerror(errno));
			out = stdout;
			ret = 1;
			goto out;
		}
	}

	sfd = cmd_signalfd(&oldmask);
	if (sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", r.prog, strerror(-sfd));
		ret = 1;
		goto out;
	}
	sigmask_set = true;
	if (optind < argc) {
		int err = spawn_held(&sp, argv + optind, trans_abs, &oldmask, r.prog);

		if (err) {
			fprintf(stderr, "%s: fork: %s\n", r.prog, strerror(-err));
			ret = 1;
			goto out;
		}
		child = sp.pid;
		if (r.sel) {
			/* the command is a target whatever the selector says */
			uint32_t cp = (uint32_t)child;
			uint64_t *slot = fold_slot(r.pidsel, &cp, sizeof(cp));

			if (slot)
				*slot = 3;
		}
	}

	struct sampler_cb cb = {
		.ctx = &r,
		.sample = on_sample,
		.mmap = on_mmap,
		.comm = on_comm,
		.fork = on_fork,
		.exit = on_exit_rec,
		.lost = on_lost,
	};
	size_t nfds = sampler_fds(smp, NULL, 0);

	fds = calloc(nfds + 1, sizeof(*fds));
	struct pollfd *pfd = calloc(nfds + 1, sizeof(*pfd));

	if (!fds || !pfd) {
		free(pfd);
		ret = 1;
		goto out;
	}
	sampler_fds(smp, fds, nfds);
	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	for (size_t i = 0; i < nfds; i++) {
		pfd[i + 1].fd = fds[i];
		pfd[i + 1].events = POLLIN;
	}

	double cpu0 = cpu_seconds();
	uint64_t t0 = now_ns(), end = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : 0;
	bool stop = false;

	if (sampler_enable(smp) < 0) {
		fprintf(stderr, "%s: cannot enable sampling: %s\n", r.prog, strerror(errno));
		free(pfd);
		ret = 1;
		goto out;
	}
	spawn_release(&sp);
	while (!stop) {
		uint64_t now = now_ns();
		int timeout = 1000;

		if (end)
			timeout = now >= end ? 0 : (int)((end - now + 999999) / 1000000);
		if (timeout > 1000)
			timeout = 1000;
		if (poll(pfd, nfds + 1, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo != SIGCHLD)
					stop = true;
				else if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
					child = -1;
					stop = true;
				}
			}
		}
		sampler_drain(smp, &cb);
		stacks_gc(r.st);
		if (end && now_ns() >= end)
			stop = true;
		if (so.pid > 0 && kill(so.pid, 0) < 0 && errno == ESRCH)
			stop = true; /* as perf record -p: done when the process is */
	}
	sampler_disable(smp);
	sampler_drain(smp, &cb);
	free(pfd);
	double elapsed = (double)(now_ns() - t0) / 1e9, cpu_sample = cpu_seconds() - cpu0;

	size_t nlines = 0;
	int err = stacks_write(r.st, out, &nlines);

	if (err) {
		fprintf(stderr, "%s: writing the folded stacks failed: %s\n", r.prog, strerror(-err));
		ret = 1;
	}
	if (out != stdout && fclose(out) != 0 && !ret) {
		fprintf(stderr, "%s: writing %s failed: %s\n", r.prog, outpath, strerror(errno));
		ret = 1;
	}
	out = stdout;

	struct sampler_stats st;
	struct stacks_stats sst;
	double cpu_total = cpu_seconds() - cpu0;

	sampler_stats(smp, &st);
	stacks_stats(r.st, &sst);
	fprintf(stderr,
		"%s: %" PRIu64 " samples in %.2f s, %" PRIu64 " kept, %" PRIu64
		" lost, %zu distinct stacks%s%s\n",
		r.prog, r.samples, elapsed, sst.kept, st.lost, nlines,
		outpath ? " -> " : "", outpath ? outpath : "");
	if (sst.truncated[0] + sst.truncated[1] + sst.truncated[2]) {
		struct trunc_report tr = {.r = &r};

		fprintf(stderr,
			"%s: stacks cut short: %" PRIu64 " [truncated: stack copy], %" PRIu64
			" [truncated: max stack], %" PRIu64 " [bad return address]\n",
			r.prog, sst.truncated[STACKS_TRUNC_STACK_COPY],
			sst.truncated[STACKS_TRUNC_MAX_STACK], sst.truncated[STACKS_TRUNC_BAD_ADDRESS]);
		stacks_foreach_truncated(r.st, trunc_line, &tr);
	}
	char refused[256];

	cmd_refusals_text(refused, sizeof(refused));
	if (!verbose && refused[0] != '0')
		fprintf(stderr, "%s: container files refused: %s; -v names them\n", r.prog, refused);
	if (verbose) {
		fprintf(stderr,
			"%s: mode %s; agent CPU %.3f s (%.3f s sampling+unwinding, %.3f s naming)"
			" = %.1f us/sample; %zu objects, %zu processes tracked;"
			" unwind errors %" PRIu64 ", no user regs %" PRIu64 ", filtered %" PRIu64
			", malformed %" PRIu64 ", throttled %" PRIu64 ", refused %" PRIu64
			"; container files refused %s\n",
			r.prog, stacks_mode_name(r.mode), cpu_total, cpu_sample, cpu_total - cpu_sample,
			r.samples ? cpu_total * 1e6 / (double)r.samples : 0.0, sst.objects,
			sst.processes, sst.unwind_errors, sst.no_user_regs, r.filtered,
			st.malformed, st.throttled, sst.refused, refused);
	}
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child = -1;
	}
	if (optind < argc && !ret) {
		ret = cmd_exit_status(child_status);
	}
out:
	if (sp.go_fd >= 0)
		spawn_abort(&sp);
	else if (child > 0)
		waitpid(child, NULL, 0);
	if (out != stdout)
		fclose(out);
	if (sfd >= 0)
		close(sfd);
	if (sigmask_set)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	sampler_close(smp);
	if (trans_abs && rmdir(trans_abs) < 0 && errno != ENOENT)
		fprintf(stderr, "%s: cgroup %s left behind: %s\n", r.prog, trans_abs,
			strerror(errno));
	free(trans_abs);
	free(trans_rel);
	cmd_dirs_free(cgdirs, ncgdirs);
	free(groups_copy);
	free(groups_arg);
	free(fds);
	free(cpus);
	if (have_ev)
		ev_spec_release(&ev);
	stacks_free(r.st);
	refusals_stop();
	fold_free(r.pidsel);
	cg_selector_free(r.sel);
	free(r.mount);
	return ret;
}
