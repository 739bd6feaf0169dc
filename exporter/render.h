/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_RENDER_H
#define CGPERF_EXPORTER_RENDER_H

/*
 * Stacks out of the exporter: a set of folded stacks summed over a
 * selection, written as folded text, as a gzip'd pprof profile or as an
 * interactive SVG flame graph. Pure functions of their input: no store,
 * no HTTP, nothing printed. Not thread-safe per set; distinct sets are
 * independent.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fold_set;

struct fold_set *fold_set_new(void);
void fold_set_free(struct fold_set *fs);

/*
 * Add @count samples worth @value_ns nanoseconds of CPU (0 when the event
 * is not time-based) of the folded stack @folded ("root;...;leaf", frames
 * separated by ';'). The same stack added twice is summed. 0 or -ENOMEM
 * (-EINVAL for an empty stack).
 */
int fold_set_add(struct fold_set *fs, const char *folded, uint64_t count, uint64_t value_ns);

/* Distinct stacks and total samples so far. */
size_t fold_set_stacks(const struct fold_set *fs);
uint64_t fold_set_samples(const struct fold_set *fs);

/*
 * Folded text: one "frame;frame;... count" line per distinct stack, sorted
 * by stack, as flamegraph.pl, speedscope and Pyroscope read it. 0 or -errno.
 */
int render_folded(const struct fold_set *fs, FILE *out);

/* The binary a frame was found in, for pprof's mappings. */
struct render_module {
	const char *path;     /* "/usr/lib/postgresql/15/bin/postgres", "[kernel.kallsyms]" */
	const char *build_id; /* lowercase hex, "" unknown */
};

/*
 * Look up @frame's module: 0 and *out filled (strings valid until the
 * render call returns), or non-zero when unknown.
 */
typedef int (*render_module_fn)(void *arg, const char *frame, struct render_module *out);

struct pprof_opts {
	uint64_t time_ns;     /* start of the selection, Unix ns */
	uint64_t duration_ns; /* its length */
	uint64_t period_ns;   /* nanoseconds per sample (1e9 / frequency), 0 unknown */
};

/*
 * A pprof profile (profile.proto), gzip'd, in a malloc'd buffer: sample
 * types samples/count and cpu/nanoseconds, one function and location per
 * distinct frame, one mapping per module (with its build-id) when @fn
 * knows it (@fn may be NULL). 0 or -errno.
 */
int render_pprof(const struct fold_set *fs, const struct pprof_opts *o, render_module_fn fn,
		 void *arg, uint8_t **out, size_t *len);

struct flame_opts {
	const char *title;    /* escaped by the renderer */
	const char *subtitle; /* may be NULL */
	unsigned width;       /* pixels, 0 = 1200 */
};

/*
 * A self-contained SVG flame graph (root at the bottom, like
 * flamegraph.pl): frames coloured by kind, a tooltip with samples and
 * share, click to zoom, search with highlight and matched share, reset.
 * Well-formed XML whatever the frame names contain. 0 or -errno.
 */
int render_svg(const struct fold_set *fs, const struct flame_opts *o, FILE *out);

#endif
