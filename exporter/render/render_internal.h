/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_RENDER_INTERNAL_H
#define CGPERF_EXPORTER_RENDER_INTERNAL_H

/*
 * What render.c, render_pprof.c and render_svg.c share; not for callers of
 * render.h.
 *
 * A fold_set keeps every distinct frame name once (struct rtab: name ->
 * dense id) and every distinct stack once as a run of frame ids, root
 * first, in one pool. The outputs work on ids: pprof maps ids to functions
 * and locations, the SVG builds its trie from the stacks sorted by frame
 * name, the folded text sorts them by their text.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter/render/render.h"

/* Frames per stack (a deeper stack is refused with -E2BIG). The wire caps a
 * stack at 1024 frames, but one wire frame may hold several ';'-joined
 * inlined calls. */
#define FOLD_SET_DEPTH_MAX 8192

/* Interning table: byte strings -> ids 0, 1, 2... in insertion order. Keys
 * are copied, NUL-terminated, into one text buffer. */
struct rtab {
	char *text;
	size_t tlen, tcap;
	size_t *off;   /* per id: offset of the key in text */
	uint32_t *len; /* per id: key length */
	uint32_t *hash;
	uint32_t n, cap;
	uint32_t *slot; /* open addressing: id + 1, 0 = empty */
	uint32_t nslot; /* power of two */
};

void rtab_init(struct rtab *t);
void rtab_release(struct rtab *t);
/* Intern @key: its id in *id. 1 when new, 0 when already there, -ENOMEM,
 * -E2BIG (key over 4 GiB or 2^31 keys). */
int rtab_intern(struct rtab *t, const void *key, size_t len, uint32_t *id);
/* Valid until the next rtab_intern() on @t. */
static inline const char *rtab_str(const struct rtab *t, uint32_t id)
{
	return t->text + t->off[id];
}

static inline uint32_t rtab_len(const struct rtab *t, uint32_t id)
{
	return t->len[id];
}

uint32_t render_hash(const void *p, size_t len);

struct fold_stack {
	size_t off;     /* first frame id in fold_set.ids */
	uint32_t depth; /* frames */
	uint64_t count, value_ns;
};

struct fold_set {
	struct rtab frames;
	uint32_t *ids; /* all stacks' frames, root first */
	uint32_t *mods; /* parallel to ids: module keys; NULL until a stack has some */
	size_t nids, capids, capmods;
	struct fold_stack *st;
	uint32_t nst, capst;
	uint32_t *slot; /* stack hash table: index + 1 */
	uint32_t *sthash;
	uint32_t nslot;
	uint32_t *scratch; /* frame ids of the stack being added */
	uint64_t samples, value_ns;
};

static inline const uint32_t *fold_stack_ids(const struct fold_set *fs, const struct fold_stack *s)
{
	return fs->ids + s->off;
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

#endif
