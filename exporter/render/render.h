/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_RENDER_H
#define CGPERF_EXPORTER_RENDER_H

/*
 * Stacks out of the exporter: a set of folded stacks summed over a
 * selection, written as folded text, as a gzip'd pprof profile or as an
 * interactive SVG flame graph. Pure functions of their input: no store,
 * no HTTP, nothing printed. Not thread-safe per set; distinct sets are
 * independent. The render calls only read the set: render it several
 * ways, or add more and render again.
 *
 * Cost: 100k distinct stacks of depth 30 take about 0.2 s of CPU to add
 * and about 0.2 s per output (tests/tools/render_tool bench); memory is
 * 4 bytes per frame of each distinct stack plus each distinct name once.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fold_set;

struct fold_set *fold_set_new(void);
void fold_set_free(struct fold_set *fs);

/*
 * Add @count samples worth @value_ns nanoseconds of CPU (0 when the event
 * is not time-based) of the folded stack @folded ("root;...;leaf", frames
 * separated by ';'). The same stack added twice is summed (saturating).
 * 0, -ENOMEM, -EINVAL for an empty stack or an empty frame ("a;;b", "a;"),
 * -E2BIG for more than 8192 frames; on error the set is as before, so a
 * caller may skip the row and go on.
 */
int fold_set_add(struct fold_set *fs, const char *folded, uint64_t count, uint64_t value_ns);

/*
 * The same, with the module of each frame as a caller's key (@mods[i] for
 * frame i, 0 = none), used only by render_pprof() to tell apart frames of
 * one name in different binaries ("main" of every program). @nmods must be
 * the stack's depth, or the keys are ignored. A stack added again keeps the
 * keys it was first added with, unless it had none.
 */
int fold_set_add_mod(struct fold_set *fs, const char *folded, const uint32_t *mods, size_t nmods,
		     uint64_t count, uint64_t value_ns);

/*
 * For a diff (GET /api/v1/diff): add @count samples of @folded to the
 * stack's second count, the base's, leaving the first (the target's, what
 * every other call adds to and every render but the diff ones reads) as
 * it is; a stack seen only here has 0 target samples. Modules and errors
 * as fold_set_add_mod().
 */
int fold_set_add_base(struct fold_set *fs, const char *folded, const uint32_t *mods, size_t nmods,
		      uint64_t count);

/* Distinct stacks (of either side) and total samples so far (the target's;
 * the base's). */
size_t fold_set_stacks(const struct fold_set *fs);
uint64_t fold_set_samples(const struct fold_set *fs);
uint64_t fold_set_base_samples(const struct fold_set *fs);

/*
 * Folded text: one "frame;frame;... count" line per distinct stack, sorted
 * bytewise by stack (as `LC_ALL=C sort` orders the stacks; a stack before
 * its extensions), as flamegraph.pl, speedscope and Pyroscope read it.
 * Control bytes in names (a newline would split the line) are written as
 * '?', as the agent's fold_sanitize() does. 0, -ENOMEM or -EIO.
 */
int render_folded(const struct fold_set *fs, FILE *out);

/*
 * The same order and escapes, one "frame;frame;... BASE TARGET" line per
 * distinct stack of either side (0 for the side that lacks it), as
 * FlameGraph's difffolded.pl writes and flamegraph.pl reads.
 */
int render_folded_diff(const struct fold_set *fs, FILE *out);

/* The binary a frame was found in, for pprof's mappings. */
struct render_module {
	const char *path;     /* "/usr/lib/postgresql/15/bin/postgres", "[kernel.kallsyms]" */
	const char *build_id; /* lowercase hex, "" unknown */
};

/*
 * Look up the module of @frame, whose module key from fold_set_add_mod()
 * is @module (0 when it came without one): 0 and *out filled (copied at
 * once: the strings need only live until the callback returns; build_id
 * may be NULL), or non-zero when unknown. Called once per distinct
 * (frame, key), with the frame as added ("schedule_[k]",
 * "/usr/lib/libc.so.6+0x9d3f0").
 */
typedef int (*render_module_fn)(void *arg, const char *frame, uint32_t module,
				struct render_module *out);

struct pprof_opts {
	uint64_t time_ns;     /* start of the selection, Unix ns */
	uint64_t duration_ns; /* its length */
	uint64_t period_ns;   /* nanoseconds per sample (1e9 / frequency), 0 unknown */
	/* NULL, or the sample types' names instead of samples/count and
	 * cpu/nanoseconds: (value_type, count_unit) and (value_type,
	 * nanoseconds); off-CPU profiles count microseconds, not samples. */
	const char *value_type, *count_unit;
};

/*
 * A pprof profile (profile.proto), gzip'd, in a malloc'd buffer (*out,
 * *len; the caller frees it): sample types samples/count and
 * cpu/nanoseconds (values [count, value_ns]), period type cpu/nanoseconds,
 * time and duration from @o (may be NULL). Default sample type: cpu,
 * or samples when no stack carries CPU time.
 *
 * One Function per distinct name (name = system_name); a kernel frame
 * "foo_[k]" is the function "foo" (its kernel-ness shows as its mapping
 * when @fn says "[kernel.kallsyms]"). One Mapping per module @fn reports
 * (filename, build_id, has_functions; ids from 1). One Location per
 * distinct (function, mapping), mapping_id 0 when the module is unknown
 * or @fn is NULL, with one Line pointing at the function. Samples list
 * locations leaf first. The comm and cgroup frames are ordinary
 * functions. 0, -ENOMEM, -E2BIG (profile over 2 GiB) or -EIO.
 */
int render_pprof(const struct fold_set *fs, const struct pprof_opts *o, render_module_fn fn,
		 void *arg, uint8_t **out, size_t *len);

struct flame_opts {
	const char *title;    /* escaped by the renderer; NULL = "Flame Graph" */
	const char *subtitle; /* may be NULL */
	unsigned width;       /* pixels, 0 = 1200; kept within 200..100000 */
	/* A differential flame graph of the base and target counts: widths by
	 * the target's samples, each frame coloured by the change of its
	 * (inclusive) samples from base to target: as shares of each side's
	 * total with @normalize, else as counts. Grown red, shrunk blue, the
	 * deeper the larger the change against the largest one; unchanged
	 * light grey; frames the base lacks (only in the target) yellow. */
	bool diff, normalize;
};

/*
 * A self-contained SVG flame graph (root "all" at the bottom, like
 * flamegraph.pl; siblings by name): frames coloured by kind (kernel "_[k]"
 * orange, unnamed "module+0x..." grey, others a warm colour stable per
 * name), a <title> tooltip "name (N samples, P%)", click to zoom, Reset
 * Zoom or Escape, Search or Ctrl-F (a regular expression) with highlight
 * and matched share, Reset Search. Frames narrower than 0.1 px are left
 * out with their callees. Inline CSS and script only, no external
 * reference; well-formed XML whatever the names contain (entities,
 * U+FFFD for invalid UTF-8, '?' for control characters). See
 * docs/flamegraph-svg.md. 0, -ENOMEM or -EIO.
 */
int render_svg(const struct fold_set *fs, const struct flame_opts *o, FILE *out);

/*
 * The stacks as members of a JSON object, for the explorer page (no
 * braces: the caller writes them around, with its own members):
 *
 *   "names":["postgres","main",...],     every distinct frame name once
 *   "kinds":["comm","binary",...],       per name: see render_frame_kind()
 *   "name_modules":[-1,0,...],           per name: index in modules, -1 none
 *   "modules":[{"path":..,"build_id":..}],
 *   "stacks":[[COUNT,[i,j,...]],...]     root first, indexes into names
 *
 * With @diff a stack row is [BASE,TARGET,[i,j,...]] and rows of either
 * side are written. Rows in the order of render_folded(). A name's module
 * is the first one @fn knows (looked up once per distinct module key) in
 * that order; @fn may be NULL (no modules). Every string through
 * lib/json. 0, -ENOMEM or -EIO.
 */
int render_json(const struct fold_set *fs, bool diff, render_module_fn fn, void *arg, FILE *out);

/*
 * The kind of a frame called @name (@len bytes) found in @module (a
 * render_module path, NULL unknown); @root when it is the first frame of
 * some stack and has no module there (the comm, or a probe's prefix):
 *   "marker"   "[truncated...]", "[bad return address]": a cut stack
 *   "comm"     @root
 *   "kernel"   "name_[k]", or found in "[kernel.kallsyms]"
 *   "unnamed"  "module+0xOFF", "[unmapped]+0xOFF": no symbol
 *   "jit"      in "[jit]" or an anonymous mapping (a path not from "/")
 *   "library"  a path whose file name has ".so" (then its end or '.'), "[vdso]"
 *   "binary"   any other path: the program itself
 *   "function" a name of no known module (stacks of old agents)
 * First match wins, in this order.
 */
const char *render_frame_kind(const char *name, size_t len, const char *module, bool root);

#endif
