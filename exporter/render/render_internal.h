/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_RENDER_INTERNAL_H
#define CGPERF_EXPORTER_RENDER_INTERNAL_H

/*
 * What render.c, render_pprof.c and render_svg.c share; not for callers of
 * render.h.
 *
 * A fold_set keeps every distinct frame name once (struct rtab: name ->
 * dense id) and every distinct stack once as a run of frame ids, root
 * first (the key of its entry in a lib/hashmap). The outputs work on ids: pprof maps ids to functions
 * and locations, the SVG builds its trie from the stacks sorted by frame
 * name, the folded text sorts them by their text.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter/render/render.h"
#include "lib/hashmap.h"

/* Frames per stack (a deeper stack is refused with -E2BIG). The wire caps a
 * stack at 1024 frames, but one wire frame may hold several ';'-joined
 * inlined calls. */
#define FOLD_SET_DEPTH_MAX 8192

/* Interning table: byte strings -> ids 0, 1, 2... in insertion order, on a
 * lib/hashmap (key -> id + 1) that holds the one copy of each key,
 * NUL-terminated; keys[] finds it by id. */
struct rtab_key {
	const char *s;
	uint32_t len;
};

struct rtab {
	struct hashmap *map; /* NULL until the first key */
	struct rtab_key *keys;
	uint32_t n;
	size_t cap;
};

void rtab_init(struct rtab *t);
void rtab_release(struct rtab *t);
/* Intern @key: its id in *id. 1 when new, 0 when already there, -ENOMEM,
 * -E2BIG (key over 4 GiB or 2^31 keys). */
int rtab_intern(struct rtab *t, const void *key, size_t len, uint32_t *id);
/* Valid until rtab_release(). */
static inline const char *rtab_str(const struct rtab *t, uint32_t id)
{
	return t->keys[id].s;
}

static inline uint32_t rtab_len(const struct rtab *t, uint32_t id)
{
	return t->keys[id].len;
}

uint32_t render_hash(const void *p, size_t len);

struct fold_stack {
	const uint32_t *ids; /* its frame ids, root first: fold_set.stacks' key */
	size_t off;     /* its first frame's place in the run of every stack's
			 * frames (fold_set.mods, render_pprof's arrays) */
	uint32_t depth; /* frames */
	uint64_t count, value_ns;
	uint64_t base; /* fold_set_add_base()'s count */
};

struct fold_set {
	struct rtab frames;
	struct hashmap *stacks; /* a stack's frame ids -> index in st + 1 */
	uint32_t *mods; /* by off: module keys; NULL until a stack has some */
	size_t nids, capmods; /* frames of every stack */
	struct fold_stack *st;
	uint32_t nst;
	size_t capst;
	uint32_t *scratch; /* frame ids of the stack being added */
	uint64_t samples, value_ns;
	uint64_t base_samples;
};

static inline const uint32_t *fold_stack_ids(const struct fold_set *fs, const struct fold_stack *s)
{
	(void)fs;
	return s->ids;
}

/*
 * Stack indexes in a malloc'd array (*out, fold_set_stacks() entries):
 * by_text orders them as their folded text compares bytewise (a stack
 * before its extensions); otherwise frame by frame by name, so every stack
 * sharing a prefix of frames is contiguous (what the flame graph's trie
 * needs). 0 or -ENOMEM.
 */
int fold_set_order(const struct fold_set *fs, bool by_text, uint32_t **out);

/* "name_[k]": a kernel frame, as flamegraph.pl marks them. */
bool render_is_kernel(const char *name, size_t len);
/* "module+0x1a2b": a frame the agent could not name. */
bool render_is_unnamed(const char *name, size_t len);

#endif
