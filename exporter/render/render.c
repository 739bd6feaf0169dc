// SPDX-License-Identifier: MIT
/*
 * fold_set: stacks summed over a selection, and their folded text.
 *
 * Frame names repeat endlessly across stacks (every stack of a process
 * starts with the same comm, main, ...), so each distinct name is stored
 * once and a stack is a run of 32-bit frame ids. Stacks are keyed by those
 * runs in an open-addressing table. 100k stacks of depth 30 cost ~12 MB of
 * ids plus the distinct names, and every output works on ids: comparing
 * two frames is comparing two integers until names must be ordered.
 */
#include "exporter/render/render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/render/render_internal.h"
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
	free(t->text);
	free(t->off);
	free(t->len);
	free(t->hash);
	free(t->slot);
	rtab_init(t);
}

/*
 * Double an open-addressing table of ids (slot = id + 1, 0 empty; @nslot 0
 * starts at @first) and re-place the @n entries by their @hash. 0, -E2BIG
 * or -ENOMEM (the old table kept).
 */
static int grow_slots(uint32_t **slots, uint32_t *nslot, uint32_t first, const uint32_t *hash,
		      uint32_t n)
{
	uint32_t size = *nslot ? *nslot * 2 : first;
	uint32_t *slot;

	if (size < *nslot)
		return -E2BIG;
	slot = calloc(size, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (uint32_t id = 0; id < n; id++) {
		uint32_t i = hash[id] & (size - 1);

		while (slot[i])
			i = (i + 1) & (size - 1);
		slot[i] = id + 1;
	}
	free(*slots);
	*slots = slot;
	*nslot = size;
	return 0;
}

static int rtab_grow_slots(struct rtab *t)
{
	return grow_slots(&t->slot, &t->nslot, 256, t->hash, t->n);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / size)
			return -ENOMEM;
		n *= 2;
	}
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

int rtab_intern(struct rtab *t, const void *key, size_t len, uint32_t *id)
{
	uint32_t h = render_hash(key, len), i;
	int ret;

	if (len > UINT32_MAX - 1 || t->n >= (1u << 31))
		return -E2BIG;
	if ((uint64_t)(t->n + 1) * 4 > (uint64_t)t->nslot * 3) {
		ret = rtab_grow_slots(t);
		if (ret < 0)
			return ret;
	}
	for (i = h & (t->nslot - 1); t->slot[i]; i = (i + 1) & (t->nslot - 1)) {
		uint32_t e = t->slot[i] - 1;

		if (t->hash[e] == h && t->len[e] == len && !memcmp(t->text + t->off[e], key, len)) {
			*id = e;
			return 0;
		}
	}
	if (t->n == t->cap) {
		size_t cap = t->cap, c2 = cap, c3 = cap;
		void *off = t->off, *ln = t->len, *hs = t->hash;

		/* Three parallel arrays grown to the same capacity. */
		if (grow(&off, &cap, t->n + 1, sizeof(size_t)) < 0)
			return -ENOMEM;
		t->off = off;
		if (grow(&ln, &c2, t->n + 1, sizeof(uint32_t)) < 0)
			return -ENOMEM;
		t->len = ln;
		if (grow(&hs, &c3, t->n + 1, sizeof(uint32_t)) < 0)
			return -ENOMEM;
		t->hash = hs;
		if (cap > UINT32_MAX)
			cap = UINT32_MAX;
		t->cap = (uint32_t)cap;
	}
	{
		void *text = t->text;

		if (grow(&text, &t->tcap, t->tlen + len + 1, 1) < 0)
			return -ENOMEM;
		t->text = text;
	}
	memcpy(t->text + t->tlen, key, len);
	t->text[t->tlen + len] = '\0';
	t->off[t->n] = t->tlen;
	t->len[t->n] = (uint32_t)len;
	t->hash[t->n] = h;
	t->tlen += len + 1;
	t->slot[i] = t->n + 1;
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
	fs->scratch = malloc(FOLD_SET_DEPTH_MAX * sizeof(*fs->scratch));
	if (!fs->scratch) {
		free(fs);
		return NULL;
	}
	return fs;
}

void fold_set_free(struct fold_set *fs)
{
	if (!fs)
		return;
	rtab_release(&fs->frames);
	free(fs->ids);
	free(fs->mods);
	free(fs->st);
	free(fs->slot);
	free(fs->sthash);
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

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static int stacks_grow_slots(struct fold_set *fs)
{
	return grow_slots(&fs->slot, &fs->nslot, 1024, fs->sthash, fs->nst);
}

/* Give the stack at @off its @n module keys (NULL: zeros); fs->mods is
 * made on first use and kept as long as fs->ids. 0 or -ENOMEM. */
static int set_mods(struct fold_set *fs, size_t off, const uint32_t *mods, uint32_t n)
{
	if (fs->capmods < fs->capids) {
		uint32_t *m = realloc(fs->mods, fs->capids * sizeof(*m));

		if (!m)
			return -ENOMEM;
		memset(m + fs->capmods, 0, (fs->capids - fs->capmods) * sizeof(*m));
		fs->mods = m;
		fs->capmods = fs->capids;
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

int fold_set_add_mod(struct fold_set *fs, const char *folded, const uint32_t *mods, size_t nmods,
		     uint64_t count, uint64_t value_ns)
{
	uint32_t depth = 0, h, i;
	const char *p = folded;
	int ret;

	if (!folded || !*folded)
		return -EINVAL;
	for (;;) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (!len)
			return -EINVAL; /* "a;;b", ";a", "a;" */
		if (depth == FOLD_SET_DEPTH_MAX)
			return -E2BIG;
		ret = rtab_intern(&fs->frames, p, len, &fs->scratch[depth]);
		if (ret < 0)
			return ret;
		depth++;
		if (!end)
			break;
		p = end + 1;
	}

	if (mods && nmods != depth)
		mods = NULL;
	h = render_hash(fs->scratch, depth * sizeof(uint32_t));
	if ((uint64_t)(fs->nst + 1) * 4 > (uint64_t)fs->nslot * 3) {
		ret = stacks_grow_slots(fs);
		if (ret < 0)
			return ret;
	}
	for (i = h & (fs->nslot - 1); fs->slot[i]; i = (i + 1) & (fs->nslot - 1)) {
		struct fold_stack *s = &fs->st[fs->slot[i] - 1];

		if (fs->sthash[fs->slot[i] - 1] == h && s->depth == depth &&
		    !memcmp(fold_stack_ids(fs, s), fs->scratch, depth * sizeof(uint32_t))) {
			if (mods && no_mods(fs, s) && (ret = set_mods(fs, s->off, mods, depth)) < 0)
				return ret;
			s->count = sat_add(s->count, count);
			s->value_ns = sat_add(s->value_ns, value_ns);
			goto out;
		}
	}
	if (fs->nst == UINT32_MAX - 1)
		return -E2BIG;
	if (fs->nst == fs->capst) {
		size_t cap = fs->capst, c2 = fs->capst;
		void *st = fs->st, *hs = fs->sthash;

		if (grow(&st, &cap, fs->nst + 1, sizeof(struct fold_stack)) < 0)
			return -ENOMEM;
		fs->st = st;
		if (grow(&hs, &c2, fs->nst + 1, sizeof(uint32_t)) < 0)
			return -ENOMEM;
		fs->sthash = hs;
		fs->capst = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	}
	{
		void *ids = fs->ids;

		if (grow(&ids, &fs->capids, fs->nids + depth, sizeof(uint32_t)) < 0)
			return -ENOMEM;
		fs->ids = ids;
	}
	if ((mods || fs->mods) && (ret = set_mods(fs, fs->nids, mods, depth)) < 0)
		return ret;
	memcpy(fs->ids + fs->nids, fs->scratch, depth * sizeof(uint32_t));
	fs->st[fs->nst] = (struct fold_stack){
		.off = fs->nids, .depth = depth, .count = count, .value_ns = value_ns
	};
	fs->sthash[fs->nst] = h;
	fs->nids += depth;
	fs->slot[i] = ++fs->nst;
out:
	fs->samples = sat_add(fs->samples, count);
	fs->value_ns = sat_add(fs->value_ns, value_ns);
	return 0;
}

bool render_is_kernel(const char *name, size_t len)
{
	return len > 4 && !memcmp(name + len - 4, "_[k]", 4);
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

int render_folded(const struct fold_set *fs, FILE *out)
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
		size_t len = 0, need = 24;
		void *p = line;

		for (uint32_t i = 0; i < s->depth; i++)
			need += rtab_len(&fs->frames, ids[i]) + 1;
		if (grow(&p, &cap, need, 1) < 0) {
			ret = -ENOMEM;
			break;
		}
		line = p;
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
