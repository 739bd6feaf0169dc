// SPDX-License-Identifier: MIT
/*
 * The unwinder's memory (see the essay at the head of unwind.c): binary
 * entries keyed by (dev, ino) in an LRU bounded by max_entries, pinned while
 * an unwind uses them; each process's bins (which binary, at which bias,
 * serves an address); and the CFI rows cached per (binary, bias), filled
 * from unw_reg_states_iterate() and bounded by UNWIND_RULES_MAX.
 */
#include "agent/stacks/unwind_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/symbols/dso.h"
#include "lib/search.h"

/* ---- cache ---- */

static size_t cache_hash(const struct unwind_cache *c, uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino ^ (dev * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return (size_t)(h >> 32) & (c->nbuckets - 1);
}

static bool entry_matches(const struct unwind_entry *e, uint64_t dev, uint64_t ino,
			  const char *path)
{
	if (e->dev != dev || e->ino != ino)
		return false;
	if (dev || ino)
		return true;
	return e->path && path && !strcmp(e->path, path);
}

static void entry_free(struct unwind_entry *e)
{
	if (!e)
		return;
	dso_put(e->dso);
	free(e->path);
	free(e);
}

static void lru_unlink(struct unwind_cache *c, struct unwind_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push_head(struct unwind_cache *c, struct unwind_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

/* ---- a process's bins ---- */

/* Remove bins[i] of @sp; @e's bit goes when no other bin of @sp holds it. */
static void space_unbin(struct unwind_space *sp, size_t i)
{
	struct unwind_entry *e = sp->bins[i].e;

	sp->bins[i] = sp->bins[--sp->nbins];
	if (sp->hint >= sp->nbins)
		sp->hint = 0;
	if (sp->next_bin >= sp->nbins)
		sp->next_bin = 0;
	if (sp->slot < 0)
		return;
	for (size_t k = 0; k < sp->nbins; k++)
		if (sp->bins[k].e == e)
			return;
	e->spaces &= ~(1ull << sp->slot);
}

void unwind_space_clear(struct unwind_space *sp)
{
	while (sp->nbins)
		space_unbin(sp, sp->nbins - 1);
	sp->hint = sp->next_bin = 0;
}

/* @e is going away: no process may keep a bin of it. */
static void spaces_drop_entry(struct unwind_cache *c, struct unwind_entry *e)
{
	uint64_t mask = e->spaces;

	while (mask) {
		struct unwind_space *sp = &c->spaces[__builtin_ctzll(mask)];

		mask &= mask - 1;
		for (size_t i = sp->nbins; i-- > 0;)
			if (sp->bins[i].e == e)
				space_unbin(sp, i);
	}
	e->spaces = 0;
}

/* ---- rows ---- */

static void rules_free(struct unwind_cache *c, struct unwind_entry *e)
{
	while (e->rules) {
		struct unwind_rules *r = e->rules;

		e->rules = r->next;
		for (size_t i = 0; i < r->n; i++) {
			c->rule_bytes -= r->v[i]->bytes;
			free(r->v[i]);
		}
		c->rule_bytes -= r->cap * (sizeof(*r->v) + sizeof(*r->start)) + sizeof(*r);
		free(r->start);
		free(r->v);
		free(r);
	}
}

void unwind_cache_evict(struct unwind_cache *c, struct unwind_entry *e)
{
	struct unwind_entry **pp = &c->buckets[cache_hash(c, e->dev, e->ino)];

	spaces_drop_entry(c, e);
	rules_free(c, e);

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	lru_unlink(c, e);
	c->count--;
	entry_free(e);
}

/* Evict least recently used entries down to the bound, sparing pinned ones. */
void unwind_cache_trim(struct unwind_cache *c)
{
	/* Pinned entries were moved to the head when used: stop at the first one. */
	while (c->count > c->max && c->tail && c->tail->pin != c->gen)
		unwind_cache_evict(c, c->tail);
}

void unwind_cache_forget(struct unwind_cache *c, uint64_t dev, uint64_t ino)
{
	struct unwind_entry *e, *next;

	if (!c)
		return;
	for (e = c->buckets[cache_hash(c, dev, ino)]; e; e = next) {
		next = e->hnext;
		if (e->dev == dev && e->ino == ino)
			unwind_cache_evict(c, e);
	}
}

uint64_t unwind_cache_loads(const struct unwind_cache *c)
{
	return c ? c->loads : 0;
}

size_t unwind_cache_entries(const struct unwind_cache *c)
{
	return c ? c->count : 0;
}

/* The entry of @m's binary, loaded on a miss; NULL only when out of memory. */
static struct unwind_entry *cache_get(struct unwind_cache *c, const struct unwind_map *m)
{
	size_t b = cache_hash(c, m->dev, m->ino);
	struct unwind_entry *e;

	for (e = c->buckets[b]; e; e = e->hnext)
		if (entry_matches(e, m->dev, m->ino, m->path))
			break;
	if (e) {
		lru_unlink(c, e);
		lru_push_head(c, e);
		e->pin = c->gen;
		return e;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->dev = m->dev;
	e->ino = m->ino;
	if (!m->dev && !m->ino) {
		e->path = strndup(m->path, 4096);
		if (!e->path) {
			free(e);
			return NULL;
		}
	}
	c->loads++;
	/* A negative answer is kept too: not reopened per sample. */
	e->err = unwind_entry_load(e, m);
	e->pin = c->gen;
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	lru_push_head(c, e);
	c->count++;
	unwind_cache_trim(c);
	return e;
}

/* Runtime address minus link-time address of @e's binary as mapped by @m. */
static uint64_t entry_bias(const struct unwind_entry *e, const struct unwind_map *m)
{
	const struct elfobj_load *best = NULL;

	for (size_t i = 0; i < e->t->nsegs; i++) {
		const struct elfobj_load *s = &e->t->segs[i];

		if ((s->offset & ~(UNWIND_PAGE - 1)) <= m->pgoff &&
		    m->pgoff < s->offset + s->filesz && (!best || (s->exec && !best->exec)))
			best = s;
	}
	/* The map starts at file offset pgoff, which is vaddr s->vaddr - s->offset + pgoff. */
	if (best)
		return m->start - (best->vaddr - best->offset + m->pgoff);
	return m->start - m->pgoff;
}

/* ---- processes ---- */

/* Mark @e in use by the running unwind (pinned, most recent). */
void unwind_cache_touch(struct unwind_cache *c, struct unwind_entry *e)
{
	if (e->pin == c->gen)
		return;
	e->pin = c->gen;
	lru_unlink(c, e);
	lru_push_head(c, e);
}

/* Remember @e mapped at [start, end) with @bias in @sp; returns its bin. */
static struct unwind_bin *space_bin_add(struct unwind_space *sp, struct unwind_entry *e,
					uint64_t bias, uint64_t start, uint64_t end)
{
	size_t i;

	if (sp->nbins == UNWIND_BINS) {
		/*
		 * Full: drop one. Not one the walk under way still needs:
		 * libunwind holds no .eh_frame address from one frame to the
		 * next, and the walk looks each frame's bin up afresh.
		 */
		space_unbin(sp, sp->next_bin);
		sp->next_bin = (sp->next_bin + 1) % UNWIND_BINS;
	}
	i = sp->nbins++;
	sp->bins[i] = (struct unwind_bin){ .e = e, .bias = bias, .start = start, .end = end };
	if (sp->slot >= 0)
		e->spaces |= 1ull << sp->slot;
	sp->hint = i;
	return &sp->bins[i];
}

/* The bin whose mapping holds @addr, or NULL. */
static struct unwind_bin *space_bin_of(struct unwind_space *sp, uint64_t addr)
{
	for (size_t n = 0, i = sp->hint; n < sp->nbins; n++, i = i + 1 == sp->nbins ? 0 : i + 1) {
		struct unwind_bin *b = &sp->bins[i];

		if (addr >= b->start && addr < b->end) {
			sp->hint = i;
			return b;
		}
	}
	return NULL;
}

/*
 * The bin of the executable mapping holding @addr, asking find_map (and
 * reading the binary's tables) on a miss; NULL if no mapping with a file
 * holds it (*err then says why).
 */
struct unwind_bin *unwind_state_bin(struct unwind_state *st, uint64_t addr, int *err)
{
	struct unwind_bin *b = space_bin_of(st->sp, addr);
	const struct unwind_map *m;
	struct unwind_entry *e;

	if (b) {
		unwind_cache_touch(st->c, b->e);
		return b;
	}
	m = st->s->find_map(st->s->ctx, addr);
	if (!m || !m->path || addr < m->start || addr >= m->end) {
		*err = -UNW_ENOINFO;
		return NULL;
	}
	e = cache_get(st->c, m);
	if (!e) {
		*err = -UNW_ENOMEM;
		return NULL;
	}
	/* A binary without tables gets a bin too: the next miss is quick. */
	return space_bin_add(st->sp, e, e->err ? 0 : entry_bias(e, m), m->start, m->end);
}

/* The space of @pid, recycling the least recently used one. */
struct unwind_space *unwind_space_get(struct unwind_cache *c, uint32_t pid)
{
	struct unwind_space *sp = c->last, *victim = NULL;

	if (sp && sp->pid == pid)
		goto out;
	for (size_t i = 0; i < UNWIND_SPACES; i++) {
		sp = &c->spaces[i];
		if (sp->pid == pid)
			goto out;
		if (!victim || (victim->pid && (!sp->pid || sp->used < victim->used)))
			victim = sp;
	}
	sp = victim;
	unwind_space_clear(sp);
	sp->pid = pid;
out:
	sp->used = ++c->clock;
	c->last = sp;
	return sp;
}

void unwind_forget_process(struct unwind_cache *c, uint32_t pid)
{
	if (!c || !pid)
		return;
	for (size_t i = 0; i < UNWIND_SPACES; i++) {
		struct unwind_space *sp = &c->spaces[i];

		if (sp->pid == pid) {
			unwind_space_clear(sp);
			sp->pid = 0;
			if (c->last == sp)
				c->last = NULL;
			return;
		}
	}
}

size_t unwind_cache_processes(const struct unwind_cache *c)
{
	size_t n = 0;

	for (size_t i = 0; c && i < UNWIND_SPACES; i++)
		n += c->spaces[i].pid != 0;
	return n;
}

/* ---- rows: lookup and filling ---- */

static struct unwind_rules *rules_of(struct unwind_cache *c, struct unwind_entry *e,
				     uint64_t bias, bool create)
{
	struct unwind_rules *r;

	for (r = e->rules; r; r = r->next)
		if (r->bias == bias)
			return r;
	if (!create)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->bias = bias;
	r->next = e->rules;
	e->rules = r;
	c->rule_bytes += sizeof(*r);
	return r;
}

/* Index of the last function starting at or below @addr, or r->n when none. */
static size_t rules_pos(const struct unwind_rules *r, uint64_t addr)
{
	size_t lo = search_upper_u64(r->start, r->n, sizeof(*r->start), 0, addr);

	return lo ? lo - 1 : r->n;
}

static struct unwind_func *rules_find(const struct unwind_rules *r, uint64_t addr)
{
	size_t i = r ? rules_pos(r, addr) : 0;

	if (!r || i == r->n || addr >= r->v[i]->end)
		return NULL;
	return r->v[i];
}

/* Does @f overlap a function of @r? (Only junk CFI has overlapping FDEs.) */
static bool rules_overlap(const struct unwind_rules *r, const struct unwind_func *f)
{
	size_t i = r->n ? rules_pos(r, f->end - 1) : 0;

	return i != r->n && r->v[i]->end > f->start;
}

static int rules_insert(struct unwind_cache *c, struct unwind_rules *r, struct unwind_func *f)
{
	size_t i = r->n ? rules_pos(r, f->start) : 0;

	if (i == r->n)
		i = 0; /* all start above f */
	else
		i++;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct unwind_func **v = realloc(r->v, cap * sizeof(*v));
		uint64_t *start;

		if (!v)
			return -ENOMEM;
		r->v = v;
		start = realloc(r->start, cap * sizeof(*start));
		if (!start)
			return -ENOMEM;
		r->start = start;
		c->rule_bytes += (cap - r->cap) * (sizeof(*v) + sizeof(*start));
		r->cap = cap;
	}
	memmove(r->v + i + 1, r->v + i, (r->n - i) * sizeof(*r->v));
	memmove(r->start + i + 1, r->start + i, (r->n - i) * sizeof(*r->start));
	r->v[i] = f;
	r->start[i] = f->start;
	r->n++;
	c->rule_bytes += f->bytes;
	return 0;
}

static void rules_flush_all(struct unwind_cache *c)
{
	for (struct unwind_entry *e = c->head; e; e = e->next)
		rules_free(c, e);
}

static int fill_row(void *token, void *state, size_t size, unw_word_t start, unw_word_t end)
{
	struct unwind_cache *c = token;

	if (!c->state_size)
		c->state_size = (size + 7) & ~(size_t)7;
	if (!size || size > c->state_size || c->fill_n == UNWIND_FUNC_ROWS)
		goto bad;
	/* Rows tile the FDE from its start, in order. */
	if (end <= start || (c->fill_n && start != c->fill_end[c->fill_n - 1]))
		goto bad;
	if (c->fill_n == c->fill_cap) {
		size_t cap = c->fill_cap ? 2 * c->fill_cap : 32;
		uint64_t *ends = realloc(c->fill_end, cap * sizeof(*ends));
		uint8_t *states;

		if (!ends)
			goto bad;
		c->fill_end = ends;
		states = realloc(c->fill_states, cap * c->state_size);
		if (!states)
			goto bad;
		c->fill_states = states;
		c->fill_cap = cap;
	}
	memcpy(c->fill_states + c->fill_n * c->state_size, state, size);
	memset(c->fill_states + c->fill_n * c->state_size + size, 0, c->state_size - size);
	c->fill_end[c->fill_n++] = end;
	if (c->fill_n == 1)
		c->fill_start = start;
	return 0;
bad:
	c->fill_bad = true;
	return -UNW_EINVAL;
}

/*
 * The rows of the FDE holding @lookup, read through a scratch cursor whose
 * IP is @lookup itself (a fresh cursor looks its IP up as is), or NULL when
 * libunwind finds none (no FDE, bad CFI, out of memory).
 */
static struct unwind_func *rows_fill(struct unwind_state *st, uint64_t lookup)
{
	struct unwind_cache *c = st->c;
	struct unwind_func *f = NULL;
	unw_cursor_t scratch;
	size_t ends, bytes;
	bool signal;
	int ret;

	c->fill_n = 0;
	c->fill_bad = false;
	st->filling = true;
	st->fill_ip = lookup;
	ret = unw_init_remote(&scratch, c->as, st);
	if (ret >= 0)
		ret = unw_reg_states_iterate(&scratch, fill_row, c);
	/* Set from the FDE's CIE ('S') while looking it up. */
	signal = ret >= 0 && unw_is_signal_frame(&scratch) > 0;
	st->filling = false;
	if (ret < 0 || c->fill_bad || !c->fill_n || lookup < c->fill_start ||
	    lookup >= c->fill_end[c->fill_n - 1])
		return NULL;

	ends = c->fill_n * sizeof(uint64_t);
	bytes = sizeof(*f) + ends + c->fill_n * c->state_size;
	if (c->rule_bytes + bytes > UNWIND_RULES_MAX)
		rules_flush_all(c); /* rare: start over, on demand */
	f = malloc(bytes);
	if (!f)
		return NULL;
	f->start = c->fill_start;
	f->end = c->fill_end[c->fill_n - 1];
	f->signal = signal;
	f->nrows = (uint32_t)c->fill_n;
	f->row_end = (uint64_t *)(f + 1);
	f->states = (uint8_t *)f->row_end + ends;
	f->bytes = bytes;
	memcpy(f->row_end, c->fill_end, ends);
	memcpy(f->states, c->fill_states, c->fill_n * c->state_size);
	c->rule_fills++;
	return f;
}

/*
 * The register state that unwinds a frame at @ip (@exact: the leaf, or the
 * caller of a signal frame; else a return address, looked up at ip - 1),
 * filling its function's rows on a miss; NULL when there are none.
 */
const void *unwind_frame_rows(struct unwind_state *st, uint64_t ip, bool exact, bool *signal)
{
	uint64_t lookup = exact ? ip : ip - 1;
	struct unwind_rules *r;
	struct unwind_func *f;
	struct unwind_bin *b;
	size_t lo;
	int err;

	b = unwind_state_bin(st, lookup, &err);
	if (!b || b->e->err)
		return NULL;
	r = rules_of(st->c, b->e, b->bias, false);
	f = rules_find(r, lookup);
	if (!f) {
		struct unwind_entry *e = b->e;
		uint64_t bias = b->bias;

		/* Filling may move bins and drop rows: b and r are stale after it. */
		f = rows_fill(st, lookup);
		if (!f)
			return NULL;
		r = rules_of(st->c, e, bias, true);
		if (!r || rules_overlap(r, f) || rules_insert(st->c, r, f) < 0) {
			/* Overlapping FDEs (junk CFI), or no memory: use it once. */
			free(st->once);
			st->once = f;
		}
	}
	/* The row holding lookup: the first whose end is above it. */
	lo = search_upper_u64(f->row_end, f->nrows - 1, sizeof(*f->row_end), 0, lookup);
	*signal = f->signal;
	return f->states + lo * st->c->state_size;
}
