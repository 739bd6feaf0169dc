// SPDX-License-Identifier: MIT
/*
 * cgperf-agent annotate: perf record + perf annotate --stdio of one
 * function, per cgroup, process, selector or command.
 *
 * Sampling is record's (cmd_record_emit()): the same events, targets and
 * "-- COMMAND" handling, in its leaf mode (no stacks), where every sample
 * becomes one (binary, file offset) in the stacks engine. When sampling
 * ends, the engine hands over its sampled addresses (stacks_foreach_leaf())
 * and this file does what perf annotate does:
 *
 *   1. find SYMBOL in the binaries that were sampled (their symbol tables,
 *      the dsos' members, so containers' binaries were opened through
 *      /proc/PID/root by lib/rootfs's rules), or, for MODULE+0xOFF (the
 *      folded text's name of an unnamed frame), the .eh_frame FDE that
 *      covers that offset of the binary whose name is MODULE;
 *   2. read its bytes through the dso's fd and decode them
 *      (agent/symbols/disasm.h);
 *   3. give each instruction the samples whose address falls in it;
 *   4. look up source lines in DWARF (agent/symbols/srcline.h) and read the
 *      lines' text through lib/rootfs inside the root of the process the
 *      binary was sampled in (the stacks engine notes it), never a path a
 *      container's DWARF names resolved in the host's root;
 *   5. print (annotate_print.c).
 *
 * Only binaries with samples are searched: a symbol of a library that got
 * no sample is reported as not found (exit 2, with near names), a symbol
 * found but without samples exits 0 with a message and no listing.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cmd/annotate.h"
#include "agent/cmd/cmd.h"
#include "agent/stacks/stacks.h"
#include "agent/symbols/demangle.h"
#include "agent/symbols/disasm.h"
#include "agent/symbols/dso.h"
#include "agent/symbols/srcline.h"
#include "agent/symbols/symtab.h"
#include "lib/grow.h"
#include "lib/rootfs.h"
#include "lib/strv.h"
#include "lib/suggest.h"

#define PROG "cgperf-agent annotate"
#define ANN_MAX_BINS 4096	  /* distinct binaries remembered */
#define ANN_WINDOW 256		  /* bytes shown for MODULE+0xOFF without an FDE */
#define ANN_SRC_MAX_BYTES (16u << 20) /* a source file read for its lines */
#define ANN_SRC_MAX_LINE 4096
#define ANN_SRC_FILES 16	  /* source files read per function */
#define ANN_TOP 10

/* A sampled binary. */
struct ann_bin {
	struct dso *dso; /* a reference */
	struct symtab *st;
	char *path, *base;
	char *root; /* stacks_leaf's root: NULL unknown */
	uint64_t samples;
};

/* Samples at one offset of one binary. */
struct ann_hit {
	size_t bin;
	uint64_t off, count;
};

/* A source file's lines, read once. */
struct ann_src {
	char *path;
	char **lines;
	size_t n;
};

struct annotate {
	const char *symbol, *event;
	size_t top;
	struct ann_bin *bins;
	size_t nbins, capbins;
	struct ann_hit *hits;
	size_t nhits, caphits;
	uint64_t total, unnamed; /* all samples; those outside any binary */
	bool own_command;	  /* "-- COMMAND": we started what is sampled */
	struct ann_src src[ANN_SRC_FILES];
	size_t nsrc;
	int err;
};

/* ---- what was sampled ---- */

static int bin_index(struct annotate *an, const struct stacks_leaf *l, size_t *out)
{
	struct ann_bin *b;

	for (size_t i = an->nbins; i-- > 0;)
		if (an->bins[i].dso == l->dso) {
			*out = i;
			return 0;
		}
	if (an->nbins >= ANN_MAX_BINS)
		return -E2BIG;
	if (GROW_ARRAY(an->bins, an->nbins, an->capbins, 16) < 0)
		return -ENOMEM;
	b = &an->bins[an->nbins];
	*b = (struct ann_bin){.dso = dso_get(l->dso), .st = l->symtab};
	an->nbins++;
	if (strv_set(&b->path, l->path) || strv_set(&b->base, l->base) ||
	    strv_set(&b->root, l->root))
		return -ENOMEM;
	*out = an->nbins - 1;
	return 0;
}

static void on_leaf(void *ctx, const struct stacks_leaf *l, uint64_t count)
{
	struct annotate *an = ctx;
	size_t bi;
	int err;

	an->total += count;
	if (!l->dso || an->err) {
		an->unnamed += count;
		return;
	}
	if ((err = bin_index(an, l, &bi)) < 0) {
		an->err = err == -E2BIG ? 0 : err;
		an->unnamed += count;
		return;
	}
	if (GROW_ARRAY(an->hits, an->nhits, an->caphits, 1024) < 0) {
		an->err = -ENOMEM;
		return;
	}
	an->hits[an->nhits++] = (struct ann_hit){bi, l->off, count};
	an->bins[bi].samples += count;
}

/* ---- finding the function ---- */

/* The range to show: a file offset and a size in a binary. */
struct ann_range {
	size_t bin;
	uint64_t off, size, samples;
	bool window; /* MODULE+0xOFF without an FDE: a fixed window */
};

static uint64_t samples_in(const struct annotate *an, size_t bin, uint64_t off, uint64_t size)
{
	uint64_t n = 0;

	for (size_t i = 0; i < an->nhits; i++)
		if (an->hits[i].bin == bin && an->hits[i].off - off < size)
			n += an->hits[i].count;
	return n;
}

/* "MODULE+0xOFF": 1 with the parts, 0 when @sym is not of that form. */
static int parse_module_off(const char *sym, char *mod, size_t modlen, uint64_t *off)
{
	const char *plus = strrchr(sym, '+');
	char *end;

	if (!plus || plus == sym || strncmp(plus + 1, "0x", 2) || !plus[3])
		return 0;
	errno = 0;
	*off = strtoull(plus + 3, &end, 16);
	if (errno || *end || (size_t)(plus - sym) >= modlen)
		return 0;
	memcpy(mod, sym, (size_t)(plus - sym));
	mod[plus - sym] = '\0';
	return 1;
}

/* Keep @c in *@best when it has more samples (the first wins a tie). */
static void consider(const struct annotate *an, struct ann_range *best, bool *found,
		     struct ann_range c)
{
	c.samples = samples_in(an, c.bin, c.off, c.size);
	if (!*found || c.samples > best->samples)
		*best = c;
	*found = true;
}

/* Whether mangled @name reads @want demangled, in the full or short form
 * (as record shows it). */
static bool demangles_to(const char *name, const char *want)
{
	bool hit = false;

	if (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2))
		return false;
	for (int style = DEMANGLE_SHORT; style <= DEMANGLE_FULL && !hit; style++) {
		char *d = demangle_name(name, (enum demangle_style)style);

		hit = d && !strcmp(d, want);
		free(d);
	}
	return hit;
}

/* SYMBOL by name in binary @i: its own name, else every C++/Rust function
 * that demangles to it (a function and its .cold part both read "f" in the
 * short form: the one with the most samples is kept). */
static void find_named(const struct annotate *an, size_t i, struct ann_range *out, bool *found)
{
	const struct symtab *st = an->bins[i].st;
	uint64_t start, size;
	const char *name;

	if (symtab_find_sized(st, an->symbol, &start, &size) == 0) {
		consider(an, out, found, (struct ann_range){.bin = i, .off = start, .size = size});
		return;
	}
	for (size_t k = 0; (name = symtab_name_at(st, k, NULL)); k++)
		if (demangles_to(name, an->symbol) && symtab_find_sized(st, name, &start, &size) == 0)
			consider(an, out, found,
				 (struct ann_range){.bin = i, .off = start, .size = size});
}

/* SYMBOL in the sampled binaries: 0 and *@out, or -ENOENT. */
static int find_range(const struct annotate *an, struct ann_range *out)
{
	char mod[PATH_MAX];
	uint64_t off, size;
	bool found = false;
	bool modform = parse_module_off(an->symbol, mod, sizeof(mod), &off);

	for (size_t i = 0; i < an->nbins; i++) {
		const struct ann_bin *b = &an->bins[i];
		uint64_t start;

		if (!modform) {
			find_named(an, i, out, &found);
			continue;
		}
		if (strcmp(b->base, mod))
			continue;
		if (symtab_func_extent(b->st, off, &start, &size) == 0)
			consider(an, out, &found, (struct ann_range){.bin = i, .off = start, .size = size});
		else
			consider(an, out, &found, (struct ann_range){.bin = i, .off = off,
								     .size = ANN_WINDOW, .window = true});
	}
	return found ? 0 : -ENOENT;
}

/* Not found: say so, with the nearest names of the sampled binaries. */
static void not_found(const struct annotate *an)
{
	struct suggest sg;
	char *names[6];
	size_t n;

	fprintf(stderr, "%s: no function '%s' in the %zu binar%s sampled (%" PRIu64 " samples)\n",
		PROG, an->symbol, an->nbins, an->nbins == 1 ? "y" : "ies", an->total);
	suggest_init(&sg, 6);
	for (size_t i = 0; i < an->nbins; i++) {
		const char *name;

		for (size_t k = 0; (name = symtab_name_at(an->bins[i].st, k, NULL)); k++)
			suggest_consider(&sg, an->symbol, name);
	}
	for (size_t i = 0; i < an->nbins; i++) {
		const char *src = symtab_source(an->bins[i].st);

		if (strcmp(src, "symtab") && strcmp(src, "debuginfo"))
			fprintf(stderr, "%s: %s is stripped (symbols: %s); name its code as %s+0xOFFSET,"
				" as record's folded stacks do\n",
				PROG, an->bins[i].path, src, an->bins[i].base);
	}
	n = suggest_take(&sg, names);
	if (n)
		fprintf(stderr, "%s: did you mean:\n", PROG);
	for (size_t i = 0; i < n; i++) {
		fprintf(stderr, "    %s\n", names[i]);
		free(names[i]);
	}
	suggest_release(&sg);
}

/* ---- source text ---- */

/*
 * The root a binary's source files are read in: the one its process saw,
 * the host's only for a process in the host's root; none (false: no source
 * text, only file:line) when that process is gone and had its own root,
 * or was gone before its root could be seen, unless we started it
 * (@own: "-- COMMAND" runs in our root, whatever it does after).
 */
static bool root_of(const struct ann_bin *b, bool own, char *root, size_t len)
{
	root[0] = '\0';
	if (!b->root)
		return own;
	snprintf(root, len, "%s", b->root);
	return !root[0] || access(root, X_OK) == 0;
}

static int src_load(struct ann_src *f, const char *root, const char *path)
{
	struct rootfs_lines *lr;
	const char *line;
	size_t len, cap = 0;
	int fd, r;

	if (strv_set(&f->path, path))
		return -ENOMEM;
	fd = rootfs_open(root, path, ANN_SRC_MAX_BYTES, NULL);
	if (fd < 0)
		return fd;
	lr = rootfs_lines_new(fd, ANN_SRC_MAX_LINE, ANN_SRC_MAX_BYTES);
	if (!lr)
		return -errno;
	while ((r = rootfs_lines_next(lr, &line, &len)) == 1) {
		/* a line skipped for length shifts the numbers: stop there */
		if (rootfs_lines_skipped(lr) || GROW_ARRAY(f->lines, f->n, cap, 256) < 0 ||
		    !(f->lines[f->n] = strdup(line)))
			break;
		f->n++;
	}
	rootfs_lines_free(lr);
	return 0;
}

/* Line @line of source file @path (NULL when unreadable). */
static const char *src_text(struct annotate *an, const char *root, const char *path, int line)
{
	struct ann_src *f = NULL;

	for (size_t i = 0; i < an->nsrc; i++)
		if (!strcmp(an->src[i].path, path))
			f = &an->src[i];
	if (!f) {
		if (an->nsrc >= ANN_SRC_FILES)
			return NULL;
		f = &an->src[an->nsrc++];
		src_load(f, root, path);
	}
	if (line <= 0 || (size_t)line > f->n)
		return NULL;
	/* tabs would break the margin: the text starts after leading blanks */
	const char *t = f->lines[line - 1];

	return t + strspn(t, " \t");
}

/* ---- the listing ---- */

/* Which instruction holds @vaddr (the last one starting at or below it). */
static size_t insn_at(const struct disasm_insn *v, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The address a direct branch or call goes to, from its text ("jne
 * 0x115d", "callq 0xcd7d0", aarch64 "b.ne #0x7f0", "bl #0x5c0"). */
static bool branch_target(const char *text, uint64_t *to)
{
	const char *x = strrchr(text, ' ');
	char *end;

	if (!x || !(text[0] == 'j' || !strncmp(text, "call", 4) || text[0] == 'b' ||
		    !strncmp(text, "cb", 2) || !strncmp(text, "tb", 2)))
		return false;
	x += x[1] == '#' ? 2 : 1;
	if (strncmp(x, "0x", 2))
		return false;
	errno = 0;
	*to = strtoull(x + 2, &end, 16);
	return !errno && !*end && end != x + 2;
}

/* Name the targets of direct branches and calls as perf does: "jne 0x115d
 * <hotloop_sum+0x14>", "callq 0xcd7d0 <elog_start@plt>" (C++ names
 * demangled, as record's default); an unnamed function as record does
 * ("<postgres+0x1aec00>", a file offset). */
static void name_targets(const struct ann_bin *b, struct disasm_insn *in, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(in[i].text);
		uint64_t to, off, symoff;
		const char *name;

		if (!branch_target(in[i].text, &to) || dso_vaddr_to_off(b->dso, to, &off) < 0)
			continue;
		if (symtab_lookup(b->st, off, &name, &symoff) < 0) {
			/* unnamed: as the folded stacks name it, when it starts a function */
			uint64_t start;

			if (symtab_func_start(b->st, off, &start) == 0 && start == off)
				snprintf(in[i].text + len, sizeof(in[i].text) - len, " <%s+0x%" PRIx64 ">",
					 b->base, off);
			continue;
		}
		char *dm = demangle_name(name, DEMANGLE_FULL);

		if (symoff)
			snprintf(in[i].text + len, sizeof(in[i].text) - len, " <%s+0x%" PRIx64 ">",
				 dm ? dm : name, symoff);
		else
			snprintf(in[i].text + len, sizeof(in[i].text) - len, " <%s>", dm ? dm : name);
		free(dm);
	}
}

static int listing(struct annotate *an, const struct ann_range *r, const struct disasm_insn *in,
		   size_t n)
{
	struct ann_bin *b = &an->bins[r->bin];
	struct annot_line *v = calloc(n, sizeof(*v));
	struct srcline *sl = srcline_open(b->st);
	char root[64];
	int err;

	if (!v) {
		srcline_free(sl);
		return -ENOMEM;
	}
	bool readable = root_of(b, an->own_command, root, sizeof(root));

	for (size_t i = 0; i < n; i++) {
		v[i].addr = in[i].addr;
		v[i].text = in[i].text;
		if (sl && srcline_find(sl, in[i].addr, &v[i].file, &v[i].line) == 0 && readable)
			v[i].src = src_text(an, root, v[i].file, v[i].line);
	}
	for (size_t i = 0; i < an->nhits; i++) {
		const struct ann_hit *h = &an->hits[i];
		uint64_t vaddr;

		if (h->bin == r->bin && h->off - r->off < r->size &&
		    dso_off_to_vaddr(b->dso, h->off, &vaddr) == 0)
			v[insn_at(in, n, vaddr)].count += h->count;
	}
	struct annot_view view = {
		.symbol = an->symbol, .module = b->path, .event = an->event,
		.v = v, .n = n, .top = an->top,
	};

	err = annot_print(stdout, &view);
	srcline_free(sl);
	free(v);
	return err;
}

/* After sampling (record's emit): find, decode, count, print. */
static int annotate_emit(void *ctx, struct stacks *st, size_t *nlines)
{
	struct annotate *an = ctx;
	struct disasm_insn *in = NULL;
	struct ann_range r = {0};
	size_t n = 0;
	int err;

	stacks_foreach_leaf(st, on_leaf, an);
	*nlines = an->nhits;
	if (an->err) {
		fprintf(stderr, "%s: %s\n", PROG, strerror(-an->err));
		return 1;
	}
	if (find_range(an, &r) < 0) {
		not_found(an);
		return 2;
	}
	const struct ann_bin *b = &an->bins[r.bin];

	if (!r.samples) {
		fprintf(stderr, "%s: no samples in %s of %s (%" PRIu64 " samples in all, %" PRIu64
			" in that binary)\n",
			PROG, an->symbol, b->path, an->total, b->samples);
		return 0;
	}
	if (r.size > DISASM_MAX_BYTES) {
		fprintf(stderr, "%s: %s is %" PRIu64 " bytes, over the %u bytes annotate decodes\n",
			PROG, an->symbol, r.size, DISASM_MAX_BYTES);
		return 2;
	}
	if ((err = disasm_dso(b->dso, r.off, r.size, &in, &n)) < 0) {
		if (err == -ELIBACC)
			fprintf(stderr, "%s: annotate needs %s (Debian: libcapstone4): %s\n", PROG,
				disasm_library(), strerror(-err));
		else
			fprintf(stderr, "%s: cannot disassemble %s of %s: %s\n", PROG, an->symbol,
				b->path,
				err == -ENOTSUP ? "not an x86_64 or aarch64 binary" : strerror(-err));
		return 1;
	}
	if (r.window)
		fprintf(stderr, "%s: no .eh_frame entry covers %s: %u bytes from there\n", PROG,
			an->symbol, ANN_WINDOW);
	name_targets(b, in, n);
	err = listing(an, &r, in, n);
	free(in);
	if (err < 0) {
		fprintf(stderr, "%s: %s\n", PROG, strerror(-err));
		return 1;
	}
	fprintf(stderr,
		"%s: %" PRIu64 " of %" PRIu64 " samples (%.1f%%) in %s; %" PRIu64
		" in the kernel, JIT code or no binary\n",
		PROG, r.samples, an->total, 100.0 * (double)r.samples / (double)an->total, an->symbol,
		an->unnamed);
	return 0;
}

/* ---- the command line ---- */

enum { OPT_TOP = 256 };

static const struct cmd_spec annotate_spec = {
	.name = "annotate",
	.synopsis = "[-a | -G CG[,CG...] | -p PID | --target SELECTOR]\n"
		    "[-F HZ] [-e EVENT] [--top N]\n"
		    "SYMBOL | MODULE+0xOFFSET [--duration SECONDS | -- COMMAND...]\n",
	.col = 26,
	.opts = {
		CMD_OPTS_SAMPLE_TARGETS,
		{"freq", 'F', true, "HZ", "samples per second per CPU (default 99)"},
		{"event", 'e', true, "EVENT", "sampling event (default cpu-clock)"},
		{"duration", 'd', true, "SECONDS", "stop after this long (default: Ctrl-C or COMMAND's end)"},
		{"top", OPT_TOP, false, "N", "lines in the sorted summary (default 10, 0: none)"},
		{"verbose", 'v', true, NULL, "print the agent's own figures on stderr"},
	},
};

/* record's argv, built: owned strings, NULL-terminated at the end. */
struct argv_b {
	char **v;
	size_t n, cap;
};

/* Append a copy of @s (NULL: the terminator). 0 or -ENOMEM. */
static int argv_push(struct argv_b *b, const char *s)
{
	char *c = s ? strdup(s) : NULL;

	if ((s && !c) || GROW_ARRAY(b->v, b->n, b->cap, 16) < 0) {
		free(c);
		return -ENOMEM;
	}
	b->v[b->n++] = c;
	return 0;
}

static int parse_top(struct annotate *an, const char *arg)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*end || end == arg || v > 1000 || arg[0] == '-') {
		fprintf(stderr, "%s: --top takes 0 to 1000, not '%s'\n", PROG, arg);
		return 2;
	}
	an->top = v;
	return 0;
}

/* The options record takes into @rv as "--NAME[=VALUE]", SYMBOL into @an,
 * then "--" and the command. 0, or the exit status (-1: --help shown). */
static int parse_args(struct annotate *an, int argc, char **argv, struct argv_b *rv)
{
	struct cmd_getopt g;
	char buf[PATH_MAX + 64];
	int opt;

	/* permuting: SYMBOL may come before or after the options */
	cmd_getopt_init(&g, &annotate_spec);
	while ((opt = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
		const char *name = NULL;

		for (const struct cmd_opt *o = annotate_spec.opts; o->val; o++)
			if (o->val == opt)
				name = o->name;
		if (opt == 'h') {
			cmd_usage(stdout, &annotate_spec);
			return -1;
		}
		if (!name) {
			cmd_usage(stderr, &annotate_spec);
			return 2;
		}
		if (opt == OPT_TOP) {
			if (parse_top(an, optarg))
				return 2;
			continue;
		}
		if (opt == 'e')
			an->event = optarg;
		if (snprintf(buf, sizeof(buf), "--%s%s%s", name, optarg ? "=" : "",
			     optarg ? optarg : "") >= (int)sizeof(buf)) {
			fprintf(stderr, "%s: --%s: too long\n", PROG, name);
			return 2;
		}
		if (argv_push(rv, buf))
			return 1;
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: which function? (SYMBOL or MODULE+0xOFFSET)\n", PROG);
		cmd_usage(stderr, &annotate_spec);
		return 2;
	}
	an->symbol = argv[optind++];
	an->own_command = optind < argc;
	if (optind < argc && argv_push(rv, "--"))
		return 1;
	for (int i = optind; i < argc; i++)
		if (argv_push(rv, argv[i]))
			return 1;
	return argv_push(rv, NULL) ? 1 : 0;
}

int cmd_annotate(int argc, char **argv)
{
	struct annotate an = {.event = "cpu-clock", .top = ANN_TOP};
	struct record_emit e = {.prog = PROG, .emit = annotate_emit, .ctx = &an};
	struct argv_b rv = {0};
	int ret = argv_push(&rv, "annotate") ? 1 : 0;

	if (!ret)
		ret = parse_args(&an, argc, argv, &rv);
	if (ret == 0)
		ret = cmd_record_emit((int)rv.n - 1, rv.v, &e);
	else if (ret < 0)
		ret = 0;
	else if (ret == 1)
		fprintf(stderr, "%s: out of memory\n", PROG);
	for (size_t i = 0; i < an.nbins; i++) {
		dso_put(an.bins[i].dso);
		free(an.bins[i].path);
		free(an.bins[i].base);
		free(an.bins[i].root);
	}
	for (size_t i = 0; i < an.nsrc; i++) {
		free(an.src[i].path);
		strv_free(an.src[i].lines, an.src[i].n);
	}
	free(an.bins);
	free(an.hits);
	strv_free(rv.v, rv.n);
	return ret;
}
