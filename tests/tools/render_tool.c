// SPDX-License-Identifier: MIT
/*
 * render_tool: exporter/render/render.h from the command line, for tests and
 * benchmarks (test-only; not installed).
 *
 *   render_tool [OPTS] folded|pprof|svg < IN > OUT
 *       IN is folded text ("root;...;leaf COUNT" per line, the count after
 *       the last space); lines of the same stack are summed.
 *   render_tool [--stacks N] [--depth N] bench
 *       N distinct synthetic stacks (default 100000 x 30), timed per output,
 *       figures on stdout.
 *
 * OPTS: --period NS (pprof period; each sample is then worth NS of CPU),
 * --time NS, --duration NS, --title T, --subtitle S, --width PX.
 *
 * Modules for pprof, by the frame's name: "..._[k]" is in
 * "[kernel.kallsyms]", "PATH+0xHEX" in PATH (build-id "b1d" + the length
 * of PATH, so tests can check it), anything else unknown.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporter/render/render.h"

static char build_id[32];

static int lookup(void *arg, const char *frame, uint32_t module, struct render_module *out)
{
	size_t len = strlen(frame);
	const char *plus = strstr(frame, "+0x");
	static char path[4096];

	if (len > 4 && !strcmp(frame + len - 4, "_[k]")) {
		out->path = "[kernel.kallsyms]";
		out->build_id = "";
		return 0;
	}
	if (!plus || plus == frame || (size_t)(plus - frame) >= sizeof(path))
		return -1;
	memcpy(path, frame, plus - frame);
	path[plus - frame] = '\0';
	snprintf(build_id, sizeof(build_id), "b1d%zu", strlen(path));
	out->path = path;
	out->build_id = build_id;
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static int read_folded(struct fold_set *fs, FILE *in, uint64_t period)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long lineno = 0;
	int ret = 0;

	while ((n = getline(&line, &cap, in)) >= 0) {
		char *sp;
		uint64_t count;

		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (!n)
			continue;
		sp = strrchr(line, ' ');
		if (!sp || parse_u64(sp + 1, &count) < 0) {
			fprintf(stderr, "render_tool: line %lu: no count\n", lineno);
			ret = -EINVAL;
			break;
		}
		*sp = '\0';
		ret = fold_set_add(fs, line, count, count * period);
		if (ret < 0) {
			fprintf(stderr, "render_tool: line %lu: %s\n", lineno, strerror(-ret));
			break;
		}
	}
	free(line);
	return ret;
}

/* CPU time of this process: what the code costs, whatever else runs on
 * the machine (wall time on a loaded 2-vCPU VM says little). */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Stacks shaped like a real profile: a few processes, shared root-most
 * frames, a branching middle, distinct leaves. */
static int bench(unsigned nstacks, unsigned depth)
{
	struct fold_set *fs = fold_set_new();
	struct pprof_opts po = { .period_ns = 10000000 };
	struct flame_opts fo = { .title = "bench" };
	char *buf = malloc((size_t)depth * 48 + 1);
	uint64_t seed = 1;
	uint8_t *pb = NULL;
	char *text = NULL;
	size_t pblen = 0, svglen = 0, foldlen = 0, textlen = 0;
	FILE *mem = open_memstream(&text, &textlen);
	double t0, t1, t2, t3, t4;
	int ret = -ENOMEM;

	if (!fs || !buf || !mem)
		goto out;
	t0 = now();
	for (unsigned s = 0; s < nstacks; s++) {
		size_t off = 0;

		for (unsigned d = 0; d < depth; d++) {
			unsigned v;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			if (d < 3)
				v = d * 7 + s % 5; /* comm, _start, main */
			else if (d + 1 < depth)
				v = (unsigned)(seed >> 33) % (4 + d * 3);
			else
				v = s; /* distinct leaf */
			off += (size_t)snprintf(buf + off, 48, "%s%s_%u_%u", d ? ";" : "",
						d + 1 == depth ? "leaf" : d < 3 ? "root" : "fn", d, v);
		}
		ret = fold_set_add(fs, buf, 1 + s % 7, (1 + s % 7) * po.period_ns);
		if (ret < 0)
			goto out;
	}
	t1 = now();
	ret = render_folded(fs, mem);
	foldlen = textlen;
	t2 = now();
	if (!ret)
		ret = render_pprof(fs, &po, lookup, NULL, &pb, &pblen);
	t3 = now();
	if (!ret) {
		ret = render_svg(fs, &fo, mem);
		fflush(mem);
		svglen = textlen - foldlen;
	}
	t4 = now();
	if (ret < 0)
		goto out;
	printf("stacks %zu depth %u samples %" PRIu64 " (CPU seconds)\n", fold_set_stacks(fs), depth,
	       fold_set_samples(fs));
	printf("add     %.3f s\n", t1 - t0);
	printf("folded  %.3f s (%zu bytes)\n", t2 - t1, foldlen);
	printf("pprof   %.3f s (%zu bytes gzip'd)\n", t3 - t2, pblen);
	printf("svg     %.3f s (%zu bytes)\n", t4 - t3, svglen);
out:
	if (mem)
		fclose(mem);
	free(text);
	free(pb);
	free(buf);
	fold_set_free(fs);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "period", required_argument, NULL, 'p' },
		{ "time", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "title", required_argument, NULL, 'T' },
		{ "subtitle", required_argument, NULL, 'S' },
		{ "width", required_argument, NULL, 'w' },
		{ "stacks", required_argument, NULL, 'n' },
		{ "depth", required_argument, NULL, 'D' },
		{ 0 },
	};
	struct pprof_opts po = { 0 };
	struct flame_opts fo = { .title = "Flame Graph" };
	uint64_t v, nstacks = 100000, depth = 30;
	struct fold_set *fs;
	const char *what;
	int c, ret;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'T') {
			fo.title = optarg;
			continue;
		}
		if (c == 'S') {
			fo.subtitle = optarg;
			continue;
		}
		if (c == '?' || parse_u64(optarg, &v) < 0)
			goto usage;
		switch (c) {
		case 'p':
			po.period_ns = v;
			break;
		case 't':
			po.time_ns = v;
			break;
		case 'd':
			po.duration_ns = v;
			break;
		case 'w':
			fo.width = v > 100000 ? 100000 : (unsigned)v;
			break;
		case 'n':
			nstacks = v;
			break;
		case 'D':
			depth = v;
			break;
		}
	}
	if (optind + 1 != argc)
		goto usage;
	what = argv[optind];
	if (!strcmp(what, "bench")) {
		if (!nstacks || nstacks > 10000000 || !depth || depth > 1000)
			goto usage;
		ret = bench((unsigned)nstacks, (unsigned)depth);
		if (ret < 0)
			fprintf(stderr, "render_tool: bench: %s\n", strerror(-ret));
		return ret < 0;
	}
	if (strcmp(what, "folded") && strcmp(what, "pprof") && strcmp(what, "svg"))
		goto usage;

	fs = fold_set_new();
	if (!fs) {
		fprintf(stderr, "render_tool: out of memory\n");
		return 1;
	}
	ret = read_folded(fs, stdin, po.period_ns);
	if (ret < 0)
		goto out;
	if (!strcmp(what, "folded")) {
		ret = render_folded(fs, stdout);
	} else if (!strcmp(what, "svg")) {
		ret = render_svg(fs, &fo, stdout);
	} else {
		uint8_t *buf;
		size_t len;

		ret = render_pprof(fs, &po, lookup, NULL, &buf, &len);
		if (!ret) {
			if (fwrite(buf, 1, len, stdout) != len || fflush(stdout))
				ret = -EIO;
			free(buf);
		}
	}
	if (ret < 0)
		fprintf(stderr, "render_tool: %s: %s\n", what, strerror(-ret));
out:
	fold_set_free(fs);
	return ret < 0;
usage:
	fprintf(stderr, "usage: render_tool [--period NS] [--time NS] [--duration NS] [--title T]\n"
			"                   [--subtitle S] [--width PX] folded|pprof|svg < FOLDED\n"
			"       render_tool [--stacks N] [--depth N] bench\n");
	return 2;
}
