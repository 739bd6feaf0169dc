// SPDX-License-Identifier: MIT
/*
 * fold_set: stacks summed over a selection, and their folded text.
 *
 * Frame names repeat endlessly across stacks (every stack of a process
 * starts with the same comm, main, ...), so each distinct name is stored
 * once and a stack is a run of 32-bit frame ids. Stacks are keyed by those
 * runs in a lib/hashmap, which holds the one copy of each run. 100k stacks of depth 30 cost ~12 MB of
 * ids plus the distinct names, and every output works on ids: comparing
 * two frames is comparing two integers until names must be ordered.
 */
#include "exporter/render/render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/render/render_internal.h"
#include "lib/grow.h"
#include "lib/hashmap.h"

/* ---- hashing and interning ---------------------------------------------- */

uint32_t render_hash(const void *p, size_t len)
{
	/* FNV-1a, then a final avalanche so the low bits used as the slot
	 * index depend on every byte. */
	return (uint32_t)hash_mix64(hash_fnv1a(HASH_FNV_OFFSET, p, len));
}

void rtab_init(struct rtab *t)
{
	memset(t, 0, sizeof(*t));
}

void rtab_release(struct rtab *t)
{
	if (!t)
		return;
	hashmap_free(t->map);
	free(t->keys);
	rtab_init(t);
}

int rtab_intern(struct rtab *t, const void *key, size_t len, uint32_t *id)
{
	const char *k;
	uint64_t *v;

	if (len > UINT32_MAX - 1 || t->n >= (1u << 31))
		return -E2BIG;
	if (!t->map && !(t->map = hashmap_new_pooled()))
		return -ENOMEM;
	k = hashmap_intern(t->map, key, len, &v);
	if (!k)
		return -ENOMEM;
	if (*v) {
		*id = (uint32_t)(*v - 1);
		return 0;
	}
	if (GROW_ARRAY(t->keys, t->n, t->cap, 64) < 0) {
		hashmap_remove(t->map, key, len, NULL);
		return -ENOMEM;
	}
	t->keys[t->n] = (struct rtab_key){ .s = k, .len = (uint32_t)len };
	*v = (uint64_t)t->n + 1;
	*id = t->n++;
	return 1;
}

/* ---- the set ------------------------------------------------------------ */

struct fold_set *fold_set_new(void)
{
	struct fold_set *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	rtab_init(&fs->frames);
	fs->stacks = hashmap_new_pooled();
	fs->scratch = malloc(FOLD_SET_DEPTH_MAX * sizeof(*fs->scratch));
	if (!fs->scratch || !fs->stacks) {
		fold_set_free(fs);
		return NULL;
	}
	return fs;
}

void fold_set_free(struct fold_set *fs)
{
	if (!fs)
		return;
	rtab_release(&fs->frames);
	hashmap_free(fs->stacks);
	free(fs->mods);
	free(fs->st);
	free(fs->scratch);
	free(fs);
}

size_t fold_set_stacks(const struct fold_set *fs)
{
	return fs->nst;
}

uint64_t fold_set_samples(const struct fold_set *fs)
{
	return fs->samples;
}

uint64_t fold_set_base_samples(const struct fold_set *fs)
{
	return fs->base_samples;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* Give the @n frames at @off their module keys (NULL: zeros); fs->mods is
 * made on first use and from then on covers every frame. 0 or -ENOMEM. */
static int set_mods(struct fold_set *fs, size_t off, const uint32_t *mods, uint32_t n)
{
	if (off + n > fs->capmods) {
		size_t cap = fs->capmods ? fs->capmods : 1024;
		uint32_t *m;

		while (cap < off + n)
			cap *= 2;
		m = cap <= SIZE_MAX / sizeof(*m) ? realloc(fs->mods, cap * sizeof(*m)) : NULL;
		if (!m)
			return -ENOMEM;
		memset(m + fs->capmods, 0, (cap - fs->capmods) * sizeof(*m));
		fs->mods = m;
		fs->capmods = cap;
	}
	if (mods)
		memcpy(fs->mods + off, mods, n * sizeof(*mods));
	else
		memset(fs->mods + off, 0, n * sizeof(*fs->mods));
	return 0;
}

static bool no_mods(const struct fold_set *fs, const struct fold_stack *s)
{
	if (!fs->mods)
		return true;
	for (uint32_t i = 0; i < s->depth; i++)
		if (fs->mods[s->off + i])
			return false;
	return true;
}

int fold_set_add(struct fold_set *fs, const char *folded, uint64_t count, uint64_t value_ns)
{
	return fold_set_add_mod(fs, folded, NULL, 0, count, value_ns);
}

/* Split @folded into fs->scratch; its depth in *@depth. 0, -EINVAL, -E2BIG, -ENOMEM. */
static int scratch_frames(struct fold_set *fs, const char *folded, uint32_t *depth)
{
	const char *p = folded;
	int ret;

	*depth = 0;
	if (!folded || !*folded)
		return -EINVAL;
	for (;;) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (!len)
			return -EINVAL; /* "a;;b", ";a", "a;" */
		if (*depth == FOLD_SET_DEPTH_MAX)
			return -E2BIG;
		ret = rtab_intern(&fs->frames, p, len, &fs->scratch[*depth]);
		if (ret < 0)
			return ret;
		(*depth)++;
		if (!end)
			return 0;
		p = end + 1;
	}
}

/* Add @count samples (worth @value_ns) of @folded to the target's count,
 * or with @base to the base's (@value_ns then unused). */
static int add_side(struct fold_set *fs, const char *folded, const uint32_t *mods, size_t nmods,
		    uint64_t count, uint64_t value_ns, bool base)
{
	size_t klen;
	uint32_t depth;
	const uint32_t *key;
	uint64_t *v;
	int ret = scratch_frames(fs, folded, &depth);

	if (ret < 0)
		return ret;
	if (mods && nmods != depth)
		mods = NULL;
	klen = depth * sizeof(uint32_t);
	key = hashmap_intern(fs->stacks, fs->scratch, klen, &v);
	if (!key)
		return -ENOMEM;
	if (*v) {
		struct fold_stack *s = &fs->st[*v - 1];

		if (mods && no_mods(fs, s) && (ret = set_mods(fs, s->off, mods, depth)) < 0)
			return ret;
		if (base) {
			s->base = sat_add(s->base, count);
		} else {
			s->count = sat_add(s->count, count);
			s->value_ns = sat_add(s->value_ns, value_ns);
		}
		goto out;
	}
	if (fs->nst == UINT32_MAX - 1 || GROW_ARRAY(fs->st, fs->nst, fs->capst, 64) < 0 ||
	    ((mods || fs->mods) && set_mods(fs, fs->nids, mods, depth) < 0)) {
		hashmap_remove(fs->stacks, fs->scratch, klen, NULL);
		return fs->nst == UINT32_MAX - 1 ? -E2BIG : -ENOMEM;
	}
	fs->st[fs->nst] = (struct fold_stack){ .ids = key, .off = fs->nids, .depth = depth };
	if (base)
		fs->st[fs->nst].base = count;
	else {
		fs->st[fs->nst].count = count;
		fs->st[fs->nst].value_ns = value_ns;
	}
	fs->nids += depth;
	*v = ++fs->nst;
out:
	if (base) {
		fs->base_samples = sat_add(fs->base_samples, count);
	} else {
		fs->samples = sat_add(fs->samples, count);
		fs->value_ns = sat_add(fs->value_ns, value_ns);
	}
	return 0;
}

int fold_set_add_mod(struct fold_set *fs, const char *folded, const uint32_t *mods, size_t nmods,
		     uint64_t count, uint64_t value_ns)
{
	return add_side(fs, folded, mods, nmods, count, value_ns, false);
}

int fold_set_add_base(struct fold_set *fs, const char *folded, const uint32_t *mods, size_t nmods,
		      uint64_t count)
{
	return add_side(fs, folded, mods, nmods, count, 0, true);
}

bool render_is_kernel(const char *name, size_t len)
{
	return len > 4 && !memcmp(name + len - 4, "_[k]", 4);
}

bool render_is_unnamed(const char *name, size_t len)
{
	size_t i = len;

	while (i > 0 && strchr("0123456789abcdefABCDEF", name[i - 1]))
		i--;
	return i < len && i >= 3 && !memcmp(name + i - 3, "+0x", 3);
}

/* ---- ordering ----------------------------------------------------------- */

struct order_ctx {
	const struct fold_set *fs;
	const uint32_t *rank; /* frame id -> rank by name (by frame) */
};

/* The two stacks a comparator is given (indexes into c->fs->st), their
 * frame ids, and the depth they share. */
struct stack_pair {
	const struct fold_stack *x, *y;
	const uint32_t *xi, *yi;
	uint32_t n;
};

static struct stack_pair pair(const struct order_ctx *c, const void *a, const void *b)
{
	struct stack_pair p = {
		.x = &c->fs->st[*(const uint32_t *)a],
		.y = &c->fs->st[*(const uint32_t *)b],
	};

	p.xi = fold_stack_ids(c->fs, p.x);
	p.yi = fold_stack_ids(c->fs, p.y);
	p.n = p.x->depth < p.y->depth ? p.x->depth : p.y->depth;
	return p;
}

/* When the shared frames are equal: the shorter stack first. */
static int by_depth(const struct stack_pair *p)
{
	return p->x->depth < p->y->depth ? -1 : p->x->depth > p->y->depth;
}

/* As the folded lines' texts compare bytewise (memcmp), without building
 * them: the first differing frame decides, looking at the byte after the
 * shorter name (';' or the end of the line) when one name prefixes the
 * other. */
static int cmp_text(const void *a, const void *b, void *arg)
{
	const struct order_ctx *c = arg;
	struct stack_pair p = pair(c, a, b);
	const uint32_t *xi = p.xi, *yi = p.yi;

	for (uint32_t i = 0; i < p.n; i++) {
		const struct rtab *t = &c->fs->frames;
		uint32_t lx, ly;
		int r;

		if (xi[i] == yi[i])
			continue;
		lx = rtab_len(t, xi[i]);
		ly = rtab_len(t, yi[i]);
		r = memcmp(rtab_str(t, xi[i]), rtab_str(t, yi[i]), lx < ly ? lx : ly);
		if (r)
			return r;
		if (lx < ly) {
			unsigned char nx = i + 1 < p.x->depth ? ';' : 0;

			return (int)nx - (int)(unsigned char)rtab_str(t, yi[i])[lx];
		}
		unsigned char ny = i + 1 < p.y->depth ? ';' : 0;

		return (int)(unsigned char)rtab_str(t, xi[i])[ly] - (int)ny;
	}
	return by_depth(&p);
}

static int cmp_frames(const void *a, const void *b, void *arg)
{
	const struct order_ctx *c = arg;
	struct stack_pair p = pair(c, a, b);

	for (uint32_t i = 0; i < p.n; i++) {
		if (p.xi[i] != p.yi[i])
			return c->rank[p.xi[i]] < c->rank[p.yi[i]] ? -1 : 1;
	}
	return by_depth(&p);
}

static int cmp_names(const void *a, const void *b, void *arg)
{
	const struct rtab *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t lx = rtab_len(t, x), ly = rtab_len(t, y);
	int r = memcmp(rtab_str(t, x), rtab_str(t, y), lx < ly ? lx : ly);

	return r ? r : lx < ly ? -1 : lx > ly;
}

int fold_set_order(const struct fold_set *fs, bool by_text, uint32_t **out)
{
	struct order_ctx c = { .fs = fs };
	uint32_t *order, *byname = NULL, *rank = NULL;
	uint32_t n = fs->frames.n;

	order = malloc((fs->nst ? fs->nst : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (uint32_t i = 0; i < fs->nst; i++)
		order[i] = i;
	if (by_text) {
		qsort_r(order, fs->nst, sizeof(*order), cmp_text, &c);
		*out = order;
		return 0;
	}
	/* Rank the distinct names once; stacks then compare as integers. */
	byname = malloc((n ? n : 1) * sizeof(*byname));
	rank = malloc((n ? n : 1) * sizeof(*rank));
	if (!byname || !rank)
		goto err_out;
	for (uint32_t i = 0; i < n; i++)
		byname[i] = i;
	qsort_r(byname, n, sizeof(*byname), cmp_names, (void *)&fs->frames);
	for (uint32_t i = 0; i < n; i++)
		rank[byname[i]] = i;
	c.rank = rank;
	qsort_r(order, fs->nst, sizeof(*order), cmp_frames, &c);
	free(byname);
	free(rank);
	*out = order;
	return 0;

err_out:
	free(byname);
	free(rank);
	free(order);
	return -ENOMEM;
}

/* ---- folded text -------------------------------------------------------- */

static int folded_lines(const struct fold_set *fs, bool diff, FILE *out)
{
	char *line = NULL;
	size_t cap = 0;
	uint32_t *order;
	int ret = fold_set_order(fs, true, &order);

	if (ret < 0)
		return ret;
	for (uint32_t k = 0; k < fs->nst && !ret; k++) {
		const struct fold_stack *s = &fs->st[order[k]];
		const uint32_t *ids = fold_stack_ids(fs, s);
		size_t len = 0, need = 48;

		if (!diff && !s->count)
			continue; /* a base's stack */

		for (uint32_t i = 0; i < s->depth; i++)
			need += rtab_len(&fs->frames, ids[i]) + 1;
		if (need > cap) {
			char *p = realloc(line, need * 2);

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			line = p;
			cap = need * 2;
		}
		for (uint32_t i = 0; i < s->depth; i++) {
			uint32_t l = rtab_len(&fs->frames, ids[i]);

			if (i)
				line[len++] = ';';
			memcpy(line + len, rtab_str(&fs->frames, ids[i]), l);
			len += l;
		}
		/* Folded text cannot carry a line break or any other control
		 * byte: '?', as the agent's fold_sanitize() does. ';' cannot
		 * occur in a frame, fold_set_add() split on it. */
		for (size_t i = 0; i < len; i++) {
			unsigned char ch = (unsigned char)line[i];

			if (ch < 0x20 || ch == 0x7f)
				line[i] = '?';
		}
		if (diff)
			len += (size_t)snprintf(line + len, cap - len, " %llu %llu\n",
						(unsigned long long)s->base,
						(unsigned long long)s->count);
		else
			len += (size_t)snprintf(line + len, cap - len, " %llu\n",
						(unsigned long long)s->count);
		if (fwrite(line, 1, len, out) != len)
			ret = -EIO;
	}
	free(line);
	free(order);
	if (!ret && (fflush(out) == EOF || ferror(out)))
		ret = -EIO;
	return ret;
}

int render_folded(const struct fold_set *fs, FILE *out)
{
	return folded_lines(fs, false, out);
}

int render_folded_diff(const struct fold_set *fs, FILE *out)
{
	return folded_lines(fs, true, out);
}
