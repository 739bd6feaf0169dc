// SPDX-License-Identifier: MIT
/*
 * The wire: building batches on the agent, checking them on the collector.
 *
 * Building. The builder keeps its own growable arrays of protobuf-c message
 * structs (cgroups, counters, profiles, probes) and of plain records for
 * stacks, whose frame ids live in one shared pool of uint32. Nothing points
 * into those arrays while a batch grows, so they may move freely; only
 * wire_encode() lays out the pointer arrays protobuf-c wants, packs, and
 * throws them away. The string table is interned through an open-addressing
 * hash of ids; each string remembers the cgroup whose path it is, which is
 * how a path added twice finds its first index. Modules are interned the
 * same way by (path id, build-id); a stack's module indexes live in a second
 * pool parallel to the frame pool (same offsets), filled only for stacks
 * that carry modules.
 *
 * Checking. A push body is untrusted, and protobuf's parser checks only
 * the framing. wire_decode() bounds every stage: the body (the collector's
 * cap), its gunzipped size (the same cap, checked while inflating, so a
 * gzip bomb stops at cap + 1 bytes), and the memory protobuf-c allocates
 * while unpacking (a counting allocator: two wire bytes can become an
 * 80-byte struct plus parser bookkeeping, so the budget is 32 bytes per
 * wire byte plus 1 MiB, well above what real batches need, ~12). Then every
 * reference and integer is checked, so a caller can index strings[] and
 * cgroups[] with any id it finds without looking again.
 */
#include "wire/wire.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "lib/gzip.h"

struct str_meta {
	uint32_t hash;
	uint32_t len;
	int32_t cg; /* cgroup whose path this is, or -1 */
};

struct cg_rec {
	Cgperf__V1__Cgroup m;
	int32_t prof_head; /* newest profile of this cgroup, chained by next */
};

struct prof_rec {
	Cgperf__V1__Profile m; /* stacks filled in by wire_encode() */
	int32_t next;
	size_t nstk;
	uint64_t total; /* sum of the stack counts, kept <= WIRE_VALUE_MAX */
};

struct stack_rec {
	uint32_t profile;
	uint32_t n;
	size_t off; /* into frames[], and into fmods[] when has_mods */
	uint64_t count;
	bool has_mods;
};

struct mod_rec {
	uint32_t path; /* string id */
	uint32_t hash;
	char build_id[WIRE_BUILD_ID_MAX + 1];
};

struct probe_rec {
	Cgperf__V1__Probe m; /* histograms filled in by wire_encode() */
	bool has_values, has_latency;
	struct hist values, latency;
};

struct wire_batch {
	Cgperf__V1__Batch hdr; /* the header fields, owned copies */
	Cgperf__V1__AgentStats self;

	char **str;
	struct str_meta *meta;
	size_t nstr, cap_str, cap_meta;
	uint32_t *slot; /* id + 1, 0 = free; power-of-two size, at most half full */
	size_t nslot;

	struct cg_rec *cg;
	size_t ncg, cap_cg;
	Cgperf__V1__Counter *ctr;
	size_t nctr, cap_ctr;
	struct prof_rec *prof;
	size_t nprof, cap_prof;
	struct stack_rec *stk;
	size_t nstk, cap_stk;
	uint32_t *frames;
	size_t nframes, cap_frames;
	uint32_t *fmods; /* 1 + module index per frame; valid up to nfmods */
	size_t nfmods, cap_fmods;
	struct mod_rec *mod;
	size_t nmod, cap_mod;
	uint32_t *mslot; /* module index + 1, 0 = free; power of two, at most half full */
	size_t nmslot;
	struct probe_rec *probe;
	size_t nprobe, cap_probe;
};

/* Items of any kind a batch may hold: ids and indexes stay within int. */
#define WIRE_ITEMS_MAX ((size_t)INT32_MAX - 1)

static uint64_t sat(uint64_t v)
{
	return v > WIRE_VALUE_MAX ? WIRE_VALUE_MAX : v;
}

/*
 * Room for element @n (0-based) in @v of @cap elements of @elem bytes: the
 * array, moved if it had to grow, or NULL (then @v is untouched).
 */
static void *grow(void *v, size_t n, size_t *cap, size_t elem)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return v;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap <= n)
		ncap = n + 1;
	if (ncap > SIZE_MAX / elem)
		return NULL;
	nv = realloc(v, ncap * elem);
	if (!nv)
		return NULL;
	*cap = ncap;
	return nv;
}

/* ---- UTF-8 ---- */

/* Length of the well-formed UTF-8 sequence at @s (@n > 0 bytes left), 0
 * if there is none: no overlongs, surrogates or code points past U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c < 0xc2)
		return 0;
	if (c < 0xe0)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c < 0xf0) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))
			return 0;
		return 3;
	}
	if (c < 0xf5) {
		if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

/* Bytes of @s[0..@n) that are valid UTF-8 before the first bad one. */
static size_t utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		k = utf8_seq(p + i, n - i);
		if (!k)
			break;
		i += k;
	}
	return i;
}

/*
 * A copy of @s with each byte that starts no valid sequence replaced by
 * U+FFFD, cut on a character boundary to at most @max (>= 3) bytes. NULL
 * when out of memory.
 */
static char *text_clean(const char *s, size_t max, size_t *outlen)
{
	static const char repl[] = "\xef\xbf\xbd";
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, k;
	size_t cap = (n < max / 3 ? n * 3 : max) + 1;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	while (i < n) {
		k = utf8_seq(p + i, n - i);
		if (k) {
			if (o + k > max)
				break;
			memcpy(out + o, p + i, k);
			i += k;
		} else {
			if (o + 3 > max)
				break;
			memcpy(out + o, repl, 3);
			i++;
		}
		o += k ? k : 3;
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

/* ---- building ---- */

static uint32_t hash_str(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return (uint32_t)(h ^ (h >> 32));
}

static int slots_grow(struct wire_batch *b)
{
	size_t n = b->nslot ? b->nslot * 2 : 256, mask = n - 1;
	uint32_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t id = 0; id < b->nstr; id++) {
		size_t i = b->meta[id].hash & mask;

		while (slot[i])
			i = (i + 1) & mask;
		slot[i] = (uint32_t)id + 1;
	}
	free(b->slot);
	b->slot = slot;
	b->nslot = n;
	return 0;
}

/* The id of @s (@len bytes, clean UTF-8, within limits). @owned, when not
 * NULL, is @s itself in malloc'd memory: kept as the entry or freed. */
static int intern(struct wire_batch *b, const char *s, size_t len, char *owned)
{
	uint32_t h = hash_str(s, len);
	size_t mask = b->nslot - 1, i, id = b->nstr;
	void *p;

	for (i = h & mask; b->slot[i]; i = (i + 1) & mask) {
		const struct str_meta *e = &b->meta[b->slot[i] - 1];

		if (e->hash == h && e->len == len && !memcmp(b->str[b->slot[i] - 1], s, len)) {
			free(owned);
			return (int)(b->slot[i] - 1);
		}
	}
	if (id >= WIRE_ITEMS_MAX)
		goto err_big;
	p = grow(b->str, id, &b->cap_str, sizeof(*b->str));
	if (!p)
		goto err_nomem;
	b->str = p;
	p = grow(b->meta, id, &b->cap_meta, sizeof(*b->meta));
	if (!p)
		goto err_nomem;
	b->meta = p;
	if ((id + 1) * 2 > b->nslot) {
		if (slots_grow(b) < 0)
			goto err_nomem;
		mask = b->nslot - 1;
		for (i = h & mask; b->slot[i]; i = (i + 1) & mask)
			;
	}
	if (!owned) {
		owned = malloc(len + 1);
		if (!owned)
			goto err_nomem;
		memcpy(owned, s, len);
		owned[len] = '\0';
	}
	b->str[id] = owned;
	b->meta[id] = (struct str_meta){ .hash = h, .len = (uint32_t)len, .cg = -1 };
	b->slot[i] = (uint32_t)id + 1;
	b->nstr++;
	return (int)id;

err_big:
	free(owned);
	return -E2BIG;
err_nomem:
	free(owned);
	return -ENOMEM;
}

int wire_intern(struct wire_batch *b, const char *s)
{
	char *clean = NULL;
	size_t len;

	if (!b)
		return -EINVAL;
	if (!s || !*s)
		return 0;
	len = strnlen(s, WIRE_STRING_MAX + 1);
	if (len > WIRE_STRING_MAX || utf8_valid(s, len) != len) {
		clean = text_clean(s, WIRE_STRING_MAX, &len);
		if (!clean)
			return -ENOMEM;
		s = clean;
	}
	return intern(b, s, len, clean);
}

/* A header string: cleaned, cut to WIRE_HEADER_MAX, always a fresh copy. */
static char *header_dup(const char *s)
{
	size_t len;

	return text_clean(s ? s : "", WIRE_HEADER_MAX, &len);
}

struct wire_batch *wire_batch_new(const char *host, const char *machine_id,
				  const char *agent_id, const char *version, uint64_t seq,
				  uint64_t start_ns, uint64_t end_ns)
{
	Cgperf__V1__Batch init = CGPERF__V1__BATCH__INIT;
	Cgperf__V1__AgentStats self_init = CGPERF__V1__AGENT_STATS__INIT;
	struct wire_batch *b;

	if (!host || !agent_id || !*agent_id || seq > WIRE_VALUE_MAX ||
	    end_ns > WIRE_VALUE_MAX || start_ns > end_ns) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		goto err;
	b->hdr = init;
	b->self = self_init;
	b->hdr.host = header_dup(host);
	b->hdr.machine_id = header_dup(machine_id);
	b->hdr.agent_id = header_dup(agent_id);
	b->hdr.agent_version = header_dup(version);
	if (!b->hdr.host || !b->hdr.machine_id || !b->hdr.agent_id || !b->hdr.agent_version)
		goto err_free;
	b->hdr.schema_version = WIRE_SCHEMA_VERSION;
	b->hdr.seq = seq;
	b->hdr.start_ns = start_ns;
	b->hdr.end_ns = end_ns;
	/* id 0 is "" */
	if (slots_grow(b) < 0 || intern(b, "", 0, NULL) != 0)
		goto err_free;
	return b;

err_free:
	wire_batch_free(b);
err:
	errno = ENOMEM;
	return NULL;
}

void wire_batch_free(struct wire_batch *b)
{
	if (!b)
		return;
	/* header strings are NULL or our copies, never protobuf_c_empty_string */
	free(b->hdr.host);
	free(b->hdr.machine_id);
	free(b->hdr.agent_id);
	free(b->hdr.agent_version);
	for (size_t i = 0; i < b->nstr; i++)
		free(b->str[i]);
	free(b->str);
	free(b->meta);
	free(b->slot);
	free(b->cg);
	free(b->ctr);
	free(b->prof);
	free(b->stk);
	free(b->frames);
	free(b->fmods);
	free(b->mod);
	free(b->mslot);
	free(b->probe);
	free(b);
}

/* Intern @s into *@field when *@field is still unknown. */
static int fill(struct wire_batch *b, uint32_t *field, const char *s)
{
	int id;

	if (*field || !s || !*s)
		return 0;
	id = wire_intern(b, s);
	if (id < 0)
		return id;
	*field = (uint32_t)id;
	return 0;
}

int wire_add_cgroup(struct wire_batch *b, const char *path, uint64_t id,
		    const struct wire_cgroup_info *info)
{
	Cgperf__V1__Cgroup init = CGPERF__V1__CGROUP__INIT;
	Cgperf__V1__Cgroup *c;
	int p, idx, ret = 0;
	void *nv;

	if (!b || !path || !*path)
		return -EINVAL;
	p = wire_intern(b, path);
	if (p < 0)
		return p;
	idx = b->meta[p].cg;
	if (idx < 0) {
		if (b->ncg >= WIRE_ITEMS_MAX)
			return -E2BIG;
		nv = grow(b->cg, b->ncg, &b->cap_cg, sizeof(*b->cg));
		if (!nv)
			return -ENOMEM;
		b->cg = nv;
		idx = (int)b->ncg++;
		b->cg[idx].m = init;
		b->cg[idx].m.path = (uint32_t)p;
		b->cg[idx].prof_head = -1;
		b->meta[p].cg = idx;
	}
	c = &b->cg[idx].m;
	if (!c->id)
		c->id = sat(id);
	if (!info)
		return idx;
	/* A failure leaves a valid cgroup with some fields unknown. */
	if ((ret = fill(b, &c->container_id, info->container_id)) < 0 ||
	    (ret = fill(b, &c->runtime, info->runtime)) < 0 ||
	    (ret = fill(b, &c->pod_uid, info->pod_uid)) < 0 ||
	    (ret = fill(b, &c->qos, info->qos)) < 0 ||
	    (ret = fill(b, &c->k8s_namespace, info->k8s_namespace)) < 0 ||
	    (ret = fill(b, &c->pod_name, info->pod_name)) < 0 ||
	    (ret = fill(b, &c->container_name, info->container_name)) < 0 ||
	    (ret = fill(b, &c->unit, info->unit)) < 0 ||
	    (ret = fill(b, &c->slice, info->slice)) < 0)
		return ret;
	return idx;
}

static bool cg_ok(const struct wire_batch *b, int cg)
{
	return cg >= 0 && (size_t)cg < b->ncg;
}

int wire_add_counter(struct wire_batch *b, int cg, const char *event, uint64_t value,
		     uint64_t enabled, uint64_t running, bool supported)
{
	Cgperf__V1__Counter init = CGPERF__V1__COUNTER__INIT;
	Cgperf__V1__Counter *c;
	int ev;
	void *nv;

	if (!b || !cg_ok(b, cg) || !event || !*event || running > enabled)
		return -EINVAL;
	if (b->nctr >= WIRE_ITEMS_MAX)
		return -E2BIG;
	ev = wire_intern(b, event);
	if (ev < 0)
		return ev;
	nv = grow(b->ctr, b->nctr, &b->cap_ctr, sizeof(*b->ctr));
	if (!nv)
		return -ENOMEM;
	b->ctr = nv;
	c = &b->ctr[b->nctr++];
	*c = init;
	c->cgroup = (uint32_t)cg;
	c->event = (uint32_t)ev;
	c->value = sat(value);
	c->time_enabled = sat(enabled);
	c->time_running = sat(running);
	c->supported = supported;
	return 0;
}

int wire_add_profile(struct wire_batch *b, int cg, const char *event, uint64_t period,
		     uint64_t freq_hz)
{
	Cgperf__V1__Profile init = CGPERF__V1__PROFILE__INIT;
	struct prof_rec *r;
	int ev, i;
	void *nv;

	if (!b || !cg_ok(b, cg) || !event || !*event)
		return -EINVAL;
	ev = wire_intern(b, event);
	if (ev < 0)
		return ev;
	period = sat(period);
	freq_hz = sat(freq_hz);
	for (i = b->cg[cg].prof_head; i >= 0; i = b->prof[i].next) {
		const Cgperf__V1__Profile *m = &b->prof[i].m;

		if (m->event == (uint32_t)ev && m->period == period && m->frequency == freq_hz)
			return i;
	}
	if (b->nprof >= WIRE_ITEMS_MAX)
		return -E2BIG;
	nv = grow(b->prof, b->nprof, &b->cap_prof, sizeof(*b->prof));
	if (!nv)
		return -ENOMEM;
	b->prof = nv;
	i = (int)b->nprof++;
	r = &b->prof[i];
	memset(r, 0, sizeof(*r));
	r->m = init;
	r->m.cgroup = (uint32_t)cg;
	r->m.event = (uint32_t)ev;
	r->m.period = period;
	r->m.frequency = freq_hz;
	r->next = b->cg[cg].prof_head;
	b->cg[cg].prof_head = i;
	return i;
}

int wire_add_truncated(struct wire_batch *b, int profile, const uint64_t counts[WIRE_TRUNC_REASONS])
{
	Cgperf__V1__Profile *m;

	if (!b || profile < 0 || (size_t)profile >= b->nprof || !counts)
		return -EINVAL;
	m = &b->prof[profile].m;
	m->truncated_stack_copy = sat(sat(m->truncated_stack_copy) + sat(counts[0]));
	m->truncated_max_stack = sat(sat(m->truncated_max_stack) + sat(counts[1]));
	m->truncated_bad_return_address =
		sat(sat(m->truncated_bad_return_address) + sat(counts[2]));
	return 0;
}

/* A build-id as the wire wants it in @out: lowercase hex, whole bytes,
 * 2..WIRE_BUILD_ID_MAX digits; "" for anything else. */
static void build_id_clean(const char *s, char out[WIRE_BUILD_ID_MAX + 1])
{
	size_t n = s ? strnlen(s, WIRE_BUILD_ID_MAX + 1) : 0;

	out[0] = '\0';
	if (n < 2 || n > WIRE_BUILD_ID_MAX || n % 2)
		return;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
			out[0] = '\0';
			return;
		}
		out[i] = c;
	}
	out[n] = '\0';
}

static uint32_t mod_hash(uint32_t path, const char *build_id)
{
	return hash_str(build_id, strlen(build_id)) ^ (path * 0x9e3779b1u);
}

static int mslots_grow(struct wire_batch *b)
{
	size_t n = b->nmslot ? b->nmslot * 2 : 64, mask = n - 1;
	uint32_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t k = 0; k < b->nmod; k++) {
		size_t i = b->mod[k].hash & mask;

		while (slot[i])
			i = (i + 1) & mask;
		slot[i] = (uint32_t)k + 1;
	}
	free(b->mslot);
	b->mslot = slot;
	b->nmslot = n;
	return 0;
}

int wire_add_module(struct wire_batch *b, const char *path, const char *build_id)
{
	char bid[WIRE_BUILD_ID_MAX + 1];
	struct mod_rec *r;
	uint32_t h;
	size_t mask, i;
	int pid;
	void *nv;

	if (!b || !path || !*path)
		return -EINVAL;
	build_id_clean(build_id, bid);
	pid = wire_intern(b, path);
	if (pid < 0)
		return pid;
	h = mod_hash((uint32_t)pid, bid);
	if (!b->nmslot && mslots_grow(b) < 0)
		return -ENOMEM;
	mask = b->nmslot - 1;
	for (i = h & mask; b->mslot[i]; i = (i + 1) & mask) {
		r = &b->mod[b->mslot[i] - 1];
		if (r->hash == h && r->path == (uint32_t)pid && !strcmp(r->build_id, bid))
			return (int)(b->mslot[i] - 1);
	}
	if (b->nmod >= WIRE_MODULES_MAX)
		return -E2BIG;
	nv = grow(b->mod, b->nmod, &b->cap_mod, sizeof(*b->mod));
	if (!nv)
		return -ENOMEM;
	b->mod = nv;
	if ((b->nmod + 1) * 2 > b->nmslot) {
		if (mslots_grow(b) < 0)
			return -ENOMEM;
		mask = b->nmslot - 1;
		for (i = h & mask; b->mslot[i]; i = (i + 1) & mask)
			;
	}
	r = &b->mod[b->nmod];
	r->path = (uint32_t)pid;
	r->hash = h;
	memcpy(r->build_id, bid, sizeof(bid));
	b->mslot[i] = (uint32_t)b->nmod + 1;
	return (int)b->nmod++;
}

int wire_add_stack(struct wire_batch *b, int profile, const char *const *frames, size_t n,
		   uint64_t count)
{
	return wire_add_stack_mod(b, profile, frames, NULL, n, count);
}

int wire_add_stack_mod(struct wire_batch *b, int profile, const char *const *frames,
		       const int *modules, size_t n, uint64_t count)
{
	size_t skip = 0, keep = n, off;
	struct prof_rec *pr;
	struct stack_rec *s;
	void *nv;
	int id;

	if (!b || profile < 0 || (size_t)profile >= b->nprof || !frames || !n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!frames[i] || !*frames[i])
			return -EINVAL;
		/* -1 = none, else an index wire_add_module() gave */
		if (modules && (modules[i] < -1 || (modules[i] >= 0 && (size_t)modules[i] >= b->nmod)))
			return -EINVAL;
	}
	if (b->nstk >= WIRE_ITEMS_MAX)
		return -E2BIG;
	if (n > WIRE_STACK_MAX) {
		skip = n - (WIRE_STACK_MAX - 1);
		keep = WIRE_STACK_MAX;
	}
	if (b->nframes > SIZE_MAX - keep)
		return -ENOMEM;
	nv = grow(b->frames, b->nframes + keep - 1, &b->cap_frames, sizeof(*b->frames));
	if (!nv)
		return -ENOMEM;
	b->frames = nv;
	if (modules) {
		nv = grow(b->fmods, b->nframes + keep - 1, &b->cap_fmods, sizeof(*b->fmods));
		if (!nv)
			return -ENOMEM;
		b->fmods = nv;
	}
	nv = grow(b->stk, b->nstk, &b->cap_stk, sizeof(*b->stk));
	if (!nv)
		return -ENOMEM;
	b->stk = nv;

	/* Ids go straight to the pool; committed only once all are known. */
	off = b->nframes;
	for (size_t i = 0, k = 0; k < keep; k++) {
		const char *name = skip && !k ? WIRE_TRUNCATED_FRAME : frames[skip + i++];

		id = wire_intern(b, name);
		if (id < 0)
			return id;
		b->frames[off + k] = (uint32_t)id;
	}
	b->nframes += keep;
	if (modules) {
		/* Stacks added without modules since the last one leave a gap. */
		if (b->nfmods < off)
			memset(b->fmods + b->nfmods, 0, (off - b->nfmods) * sizeof(*b->fmods));
		for (size_t i = 0, k = 0; k < keep; k++)
			b->fmods[off + k] = skip && !k ? 0 : (uint32_t)(modules[skip + i++] + 1);
		b->nfmods = off + keep;
	}

	pr = &b->prof[profile];
	count = sat(count);
	if (count > WIRE_VALUE_MAX - pr->total)
		count = WIRE_VALUE_MAX - pr->total;
	pr->total += count;
	pr->nstk++;
	s = &b->stk[b->nstk++];
	s->profile = (uint32_t)profile;
	s->n = (uint32_t)keep;
	s->off = off;
	s->count = count;
	s->has_mods = modules != NULL;
	return 0;
}

/* count = negative + buckets, without overflow; min <= max. */
static bool hist_consistent(const struct hist *h)
{
	uint64_t n = h->negative;

	for (int i = 0; i < HIST_BUCKETS; i++) {
		if (h->b[i] > UINT64_MAX - n)
			return false;
		n += h->b[i];
	}
	return n == h->count && h->min <= h->max;
}

int wire_add_probe(struct wire_batch *b, int cg, const char *label, uint64_t hits,
		   const struct hist *values, const struct hist *latency_ns)
{
	Cgperf__V1__Probe init = CGPERF__V1__PROBE__INIT;
	struct probe_rec *r;
	int id;
	void *nv;

	if (!b || !cg_ok(b, cg) || !label || !*label)
		return -EINVAL;
	if ((values && !hist_consistent(values)) || (latency_ns && !hist_consistent(latency_ns)))
		return -EINVAL;
	if (b->nprobe >= WIRE_ITEMS_MAX)
		return -E2BIG;
	id = wire_intern(b, label);
	if (id < 0)
		return id;
	nv = grow(b->probe, b->nprobe, &b->cap_probe, sizeof(*b->probe));
	if (!nv)
		return -ENOMEM;
	b->probe = nv;
	r = &b->probe[b->nprobe++];
	memset(r, 0, sizeof(*r));
	r->m = init;
	r->m.label = (uint32_t)id;
	r->m.cgroup = (uint32_t)cg;
	r->m.hits = sat(hits);
	if (values) {
		r->has_values = true;
		r->values = *values;
	}
	if (latency_ns) {
		r->has_latency = true;
		r->latency = *latency_ns;
	}
	return 0;
}

void wire_set_self(struct wire_batch *b, const struct wire_self *s)
{
	if (!b || !s)
		return;
	b->self.samples = sat(s->samples);
	b->self.lost_samples = sat(s->lost_samples);
	b->self.unwind_failures = sat(s->unwind_failures);
	b->self.push_failures = sat(s->push_failures);
	b->self.push_rejected = sat(s->push_rejected);
	b->self.spool_bytes = sat(s->spool_bytes);
	b->self.spool_batches = sat(s->spool_batches);
	b->self.spool_dropped_batches = sat(s->spool_dropped_batches);
	b->self.stacks_refused = sat(s->stacks_refused);
}

/* The message form of @h, pointing into @h's buckets. */
static void hist_msg(Cgperf__V1__Histogram *m, const struct hist *h)
{
	Cgperf__V1__Histogram init = CGPERF__V1__HISTOGRAM__INIT;
	int first = -1, last = -1;

	*m = init;
	for (int i = 0; i < HIST_BUCKETS; i++) {
		if (!h->b[i])
			continue;
		if (first < 0)
			first = i;
		last = i;
	}
	if (first >= 0) {
		m->offset = (uint32_t)first;
		m->n_buckets = (size_t)(last - first + 1);
		m->buckets = (uint64_t *)&h->b[first];
	}
	/* Consistency was checked when the probe was added: every bucket and
	 * the count are <= count, and min <= max survive saturation. */
	m->count = sat(h->count);
	m->negative = sat(h->negative);
	m->sum = sat(h->sum);
	m->min = sat(h->min);
	m->max = sat(h->max);
}

static void *calloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

int wire_encode(const struct wire_batch *b, uint8_t **buf, size_t *len)
{
	Cgperf__V1__Batch m;
	Cgperf__V1__Cgroup **cgs = NULL;
	Cgperf__V1__Counter **ctrs = NULL;
	Cgperf__V1__Profile *profs = NULL, **prof_ptrs = NULL;
	Cgperf__V1__Stack *stks = NULL, **stk_ptrs = NULL;
	Cgperf__V1__Probe *probes = NULL, **probe_ptrs = NULL;
	Cgperf__V1__Histogram *hists = NULL;
	Cgperf__V1__Module *mods = NULL, **mod_ptrs = NULL;
	size_t *at = NULL, size, pos = 0;
	uint8_t *out = NULL;
	int ret = -ENOMEM;

	if (!b || !buf || !len)
		return -EINVAL;
	cgs = calloc_n(b->ncg, sizeof(*cgs));
	ctrs = calloc_n(b->nctr, sizeof(*ctrs));
	profs = calloc_n(b->nprof, sizeof(*profs));
	prof_ptrs = calloc_n(b->nprof, sizeof(*prof_ptrs));
	at = calloc_n(b->nprof, sizeof(*at));
	stks = calloc_n(b->nstk, sizeof(*stks));
	stk_ptrs = calloc_n(b->nstk, sizeof(*stk_ptrs));
	probes = calloc_n(b->nprobe, sizeof(*probes));
	probe_ptrs = calloc_n(b->nprobe, sizeof(*probe_ptrs));
	mods = calloc_n(b->nmod, sizeof(*mods));
	mod_ptrs = calloc_n(b->nmod, sizeof(*mod_ptrs));
	if (!cgs || !ctrs || !profs || !prof_ptrs || !at || !stks || !stk_ptrs || !probes ||
	    !probe_ptrs || !mods || !mod_ptrs)
		goto out;
	if (b->nprobe > SIZE_MAX / 2)
		goto out;
	hists = calloc_n(b->nprobe * 2, sizeof(*hists));
	if (!hists)
		goto out;

	for (size_t i = 0; i < b->ncg; i++)
		cgs[i] = (Cgperf__V1__Cgroup *)&b->cg[i].m;
	for (size_t i = 0; i < b->nctr; i++)
		ctrs[i] = (Cgperf__V1__Counter *)&b->ctr[i];

	/* Stacks grouped by profile, in the order they were added. */
	for (size_t i = 0; i < b->nprof; i++) {
		profs[i] = b->prof[i].m;
		profs[i].n_stacks = b->prof[i].nstk;
		profs[i].stacks = stk_ptrs + pos;
		at[i] = pos;
		pos += b->prof[i].nstk;
		prof_ptrs[i] = &profs[i];
	}
	for (size_t i = 0; i < b->nstk; i++) {
		Cgperf__V1__Stack init = CGPERF__V1__STACK__INIT;
		const struct stack_rec *r = &b->stk[i];

		stks[i] = init;
		stks[i].n_frames = r->n;
		stks[i].frames = b->frames + r->off;
		stks[i].count = r->count;
		if (r->has_mods) {
			stks[i].n_modules = r->n;
			stks[i].modules = b->fmods + r->off;
		}
		stk_ptrs[at[r->profile]++] = &stks[i];
	}
	for (size_t i = 0; i < b->nmod; i++) {
		Cgperf__V1__Module init = CGPERF__V1__MODULE__INIT;

		mods[i] = init;
		mods[i].path = b->mod[i].path;
		mods[i].build_id = (char *)b->mod[i].build_id;
		mod_ptrs[i] = &mods[i];
	}

	for (size_t i = 0; i < b->nprobe; i++) {
		const struct probe_rec *r = &b->probe[i];

		probes[i] = r->m;
		if (r->has_values) {
			hist_msg(&hists[2 * i], &r->values);
			probes[i].values = &hists[2 * i];
		}
		if (r->has_latency) {
			hist_msg(&hists[2 * i + 1], &r->latency);
			probes[i].latency_ns = &hists[2 * i + 1];
		}
		probe_ptrs[i] = &probes[i];
	}

	m = b->hdr;
	m.n_strings = b->nstr;
	m.strings = b->str;
	m.n_cgroups = b->ncg;
	m.cgroups = cgs;
	m.n_counters = b->nctr;
	m.counters = ctrs;
	m.n_profiles = b->nprof;
	m.profiles = prof_ptrs;
	m.n_probes = b->nprobe;
	m.probes = probe_ptrs;
	m.n_modules = b->nmod;
	m.modules = mod_ptrs;
	m.self = (Cgperf__V1__AgentStats *)&b->self;

	size = cgperf__v1__batch__get_packed_size(&m);
	out = malloc(size ? size : 1);
	if (!out)
		goto out;
	if (cgperf__v1__batch__pack(&m, out) != size) {
		free(out);
		ret = -EIO;
		goto out;
	}
	*buf = out;
	*len = size;
	ret = 0;
out:
	free(cgs);
	free(ctrs);
	free(profs);
	free(prof_ptrs);
	free(at);
	free(stks);
	free(stk_ptrs);
	free(probes);
	free(probe_ptrs);
	free(hists);
	free(mods);
	free(mod_ptrs);
	return ret;
}

int wire_encode_gzip(const struct wire_batch *b, uint8_t **buf, size_t *len)
{
	uint8_t *raw = NULL;
	size_t rawlen;
	int ret;

	if (!b || !buf || !len)
		return -EINVAL;
	ret = wire_encode(b, &raw, &rawlen);
	if (ret < 0)
		return ret;
	ret = gzip_compress(raw, rawlen, GZIP_DEFAULT, buf, len);
	free(raw);
	return ret;
}

/* ---- decoding ---- */

__attribute__((format(printf, 4, 5))) static int say(char *err, size_t errlen, int code,
						     const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -code;
}

/*
 * protobuf-c allocations, counted against a budget. Each block carries its
 * size in a header so frees give the budget back (the parser's scratch
 * space comes and goes while it runs). Freeing needs no budget (@data NULL).
 */
#define BUDGET_HDR _Alignof(max_align_t)

struct budget {
	size_t left;
	bool over, oom;
};

static void *budget_alloc(void *data, size_t size)
{
	struct budget *bg = data;
	unsigned char *p;

	if (bg && size > bg->left) {
		bg->over = true;
		return NULL;
	}
	if (size > SIZE_MAX - BUDGET_HDR)
		return NULL;
	p = malloc(BUDGET_HDR + size);
	if (!p) {
		if (bg)
			bg->oom = true;
		return NULL;
	}
	memcpy(p, &size, sizeof(size));
	if (bg)
		bg->left -= size;
	return p + BUDGET_HDR;
}

static void budget_free(void *data, void *ptr)
{
	struct budget *bg = data;
	unsigned char *p;
	size_t size;

	if (!ptr)
		return;
	p = (unsigned char *)ptr - BUDGET_HDR;
	memcpy(&size, p, sizeof(size));
	if (bg)
		bg->left += size;
	free(p);
}

static int gunzip(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *outlen,
		  char *err, size_t errlen)
{
	size_t limit = max + 1, cap, have = 0, n = 0, in_left = len, chunk;
	uint8_t *buf = NULL;
	z_stream z;
	void *nv;
	int zret, ret;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return say(err, errlen, ENOMEM, "gzip: cannot set up zlib");
	cap = len < limit / 4 ? len * 4 : limit;
	if (cap < 4096)
		cap = limit < 4096 ? limit : 4096;
	for (;;) {
		if (n == cap) {
			/* Room for one byte past the cap tells "over" from "exactly". */
			if (cap == limit) {
				ret = say(err, errlen, EMSGSIZE,
					  "gzip: decompressed body exceeds the %zu byte cap", max);
				goto out;
			}
			cap = cap > limit / 2 ? limit : cap * 2;
		}
		if (have != cap) {
			nv = realloc(buf, cap);
			if (!nv) {
				ret = say(err, errlen, ENOMEM, "gzip: out of memory (%zu bytes)", cap);
				goto out;
			}
			buf = nv;
			have = cap;
		}
		if (!z.avail_in && in_left) {
			chunk = in_left > UINT_MAX ? UINT_MAX : in_left;
			z.next_in = (Bytef *)(in + (len - in_left));
			z.avail_in = (uInt)chunk;
			in_left -= chunk;
		}
		chunk = cap - n > UINT_MAX ? UINT_MAX : cap - n;
		z.next_out = buf + n;
		z.avail_out = (uInt)chunk;
		zret = inflate(&z, Z_NO_FLUSH);
		n += chunk - z.avail_out;
		if (zret == Z_STREAM_END)
			break;
		if (zret == Z_MEM_ERROR) {
			ret = say(err, errlen, ENOMEM, "gzip: out of memory");
			goto out;
		}
		if (zret != Z_OK && zret != Z_BUF_ERROR) {
			ret = say(err, errlen, EBADMSG, "gzip: corrupt stream (%s)",
				  z.msg ? z.msg : "bad data");
			goto out;
		}
		if (!z.avail_in && !in_left && z.avail_out) {
			ret = say(err, errlen, EBADMSG, "gzip: truncated stream (%zu bytes in)", len);
			goto out;
		}
	}
	if (n > max) {
		ret = say(err, errlen, EMSGSIZE, "gzip: decompressed body exceeds the %zu byte cap",
			  max);
		goto out;
	}
	if (z.avail_in || in_left) {
		ret = say(err, errlen, EBADMSG, "gzip: %zu bytes after the end of the stream",
			  (size_t)z.avail_in + in_left);
		goto out;
	}
	*out = buf;
	*outlen = n;
	buf = NULL;
	ret = 0;
out:
	inflateEnd(&z);
	free(buf);
	return ret;
}

struct vctx {
	const Cgperf__V1__Batch *m;
	char *err;
	size_t errlen;
};

#define VBAD(v, ...) say((v)->err, (v)->errlen, EBADMSG, __VA_ARGS__)

static int check_value(const struct vctx *v, const char *what, size_t i, const char *field,
		       uint64_t x)
{
	if (x <= WIRE_VALUE_MAX)
		return 0;
	return VBAD(v, "%s[%zu]: %s %" PRIu64 " above 2^63-1", what, i, field, x);
}

/* @id is a string id; @name: it must name something (not ""). */
static int check_sid(const struct vctx *v, const char *what, size_t i, const char *field,
		     uint32_t id, bool name)
{
	if (id && id >= v->m->n_strings)
		return VBAD(v, "%s[%zu]: %s: string id %" PRIu32 " out of range (%zu strings)",
			    what, i, field, id, v->m->n_strings);
	if (name && (!id || !v->m->strings[id][0]))
		return VBAD(v, "%s[%zu]: %s: empty name (string id %" PRIu32 ")", what, i, field,
			    id);
	return 0;
}

static int check_cg(const struct vctx *v, const char *what, size_t i, uint32_t cg)
{
	if (cg < v->m->n_cgroups)
		return 0;
	return VBAD(v, "%s[%zu]: cgroup %" PRIu32 " out of range (%zu cgroups)", what, i, cg,
		    v->m->n_cgroups);
}

static int check_header(const struct vctx *v, const char *field, const char *s)
{
	size_t len = strnlen(s, WIRE_HEADER_MAX + 1), ok;

	if (len > WIRE_HEADER_MAX)
		return VBAD(v, "%s: longer than %d bytes", field, WIRE_HEADER_MAX);
	ok = utf8_valid(s, len);
	if (ok != len)
		return VBAD(v, "%s: not valid UTF-8 at byte %zu", field, ok);
	return 0;
}

static int check_strings(const struct vctx *v)
{
	const Cgperf__V1__Batch *m = v->m;

	if (m->n_strings && m->strings[0][0])
		return VBAD(v, "strings[0]: must be the empty string");
	for (size_t i = 0; i < m->n_strings; i++) {
		const char *s = m->strings[i];
		size_t len = strnlen(s, WIRE_STRING_MAX + 1), ok;

		if (len > WIRE_STRING_MAX)
			return VBAD(v, "strings[%zu]: longer than %d bytes", i, WIRE_STRING_MAX);
		ok = utf8_valid(s, len);
		if (ok != len)
			return VBAD(v, "strings[%zu]: not valid UTF-8 at byte %zu", i, ok);
	}
	return 0;
}

static int check_cgroups(const struct vctx *v)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
		{ "container_id", offsetof(Cgperf__V1__Cgroup, container_id) },
		{ "runtime", offsetof(Cgperf__V1__Cgroup, runtime) },
		{ "pod_uid", offsetof(Cgperf__V1__Cgroup, pod_uid) },
		{ "qos", offsetof(Cgperf__V1__Cgroup, qos) },
		{ "k8s_namespace", offsetof(Cgperf__V1__Cgroup, k8s_namespace) },
		{ "pod_name", offsetof(Cgperf__V1__Cgroup, pod_name) },
		{ "container_name", offsetof(Cgperf__V1__Cgroup, container_name) },
		{ "unit", offsetof(Cgperf__V1__Cgroup, unit) },
		{ "slice", offsetof(Cgperf__V1__Cgroup, slice) },
	};
	int ret;

	for (size_t i = 0; i < v->m->n_cgroups; i++) {
		const Cgperf__V1__Cgroup *c = v->m->cgroups[i];

		if ((ret = check_sid(v, "cgroups", i, "path", c->path, true)) < 0 ||
		    (ret = check_value(v, "cgroups", i, "id", c->id)) < 0)
			return ret;
		for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
			uint32_t id;

			memcpy(&id, (const char *)c + fields[f].off, sizeof(id));
			ret = check_sid(v, "cgroups", i, fields[f].name, id, false);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

static int check_counters(const struct vctx *v)
{
	int ret;

	for (size_t i = 0; i < v->m->n_counters; i++) {
		const Cgperf__V1__Counter *c = v->m->counters[i];

		if ((ret = check_cg(v, "counters", i, c->cgroup)) < 0 ||
		    (ret = check_sid(v, "counters", i, "event", c->event, true)) < 0 ||
		    (ret = check_value(v, "counters", i, "value", c->value)) < 0 ||
		    (ret = check_value(v, "counters", i, "time_enabled", c->time_enabled)) < 0 ||
		    (ret = check_value(v, "counters", i, "time_running", c->time_running)) < 0)
			return ret;
		if (c->time_running > c->time_enabled)
			return VBAD(v,
				    "counters[%zu]: time_running %" PRIu64
				    " exceeds time_enabled %" PRIu64,
				    i, c->time_running, c->time_enabled);
	}
	return 0;
}

static int check_profiles(const struct vctx *v)
{
	const Cgperf__V1__Batch *m = v->m;
	int ret;

	for (size_t i = 0; i < m->n_profiles; i++) {
		const Cgperf__V1__Profile *p = m->profiles[i];
		uint64_t total = 0;

		if ((ret = check_cg(v, "profiles", i, p->cgroup)) < 0 ||
		    (ret = check_sid(v, "profiles", i, "event", p->event, true)) < 0 ||
		    (ret = check_value(v, "profiles", i, "period", p->period)) < 0 ||
		    (ret = check_value(v, "profiles", i, "frequency", p->frequency)) < 0 ||
		    (ret = check_value(v, "profiles", i, "truncated_stack_copy",
				       p->truncated_stack_copy)) < 0 ||
		    (ret = check_value(v, "profiles", i, "truncated_max_stack",
				       p->truncated_max_stack)) < 0 ||
		    (ret = check_value(v, "profiles", i, "truncated_bad_return_address",
				       p->truncated_bad_return_address)) < 0)
			return ret;
		for (size_t k = 0; k < p->n_stacks; k++) {
			const Cgperf__V1__Stack *s = p->stacks[k];

			if (!s->n_frames || s->n_frames > WIRE_STACK_MAX)
				return VBAD(v,
					    "profiles[%zu].stacks[%zu]: %zu frames (1..%d allowed)",
					    i, k, s->n_frames, WIRE_STACK_MAX);
			for (size_t f = 0; f < s->n_frames; f++) {
				uint32_t id = s->frames[f];

				if (id >= m->n_strings && id)
					return VBAD(v,
						    "profiles[%zu].stacks[%zu].frames[%zu]: string id "
						    "%" PRIu32 " out of range (%zu strings)",
						    i, k, f, id, m->n_strings);
				if (!id || !m->strings[id][0])
					return VBAD(v,
						    "profiles[%zu].stacks[%zu].frames[%zu]: empty name "
						    "(string id %" PRIu32 ")",
						    i, k, f, id);
			}
			if (s->n_modules && s->n_modules != s->n_frames)
				return VBAD(v,
					    "profiles[%zu].stacks[%zu]: %zu modules for %zu frames "
					    "(none or one per frame)",
					    i, k, s->n_modules, s->n_frames);
			for (size_t f = 0; f < s->n_modules; f++)
				if (s->modules[f] > m->n_modules)
					return VBAD(v,
						    "profiles[%zu].stacks[%zu].modules[%zu]: module "
						    "%" PRIu32 " out of range (%zu modules)",
						    i, k, f, s->modules[f], m->n_modules);
			if (s->count > WIRE_VALUE_MAX - total)
				return VBAD(v,
					    "profiles[%zu].stacks[%zu]: count %" PRIu64
					    " takes the profile's total past 2^63-1",
					    i, k, s->count);
			total += s->count;
		}
	}
	return 0;
}

static int check_modules(const struct vctx *v)
{
	const Cgperf__V1__Batch *m = v->m;
	int ret;

	if (m->n_modules > WIRE_MODULES_MAX)
		return VBAD(v, "modules: %zu modules (at most %d)", m->n_modules, WIRE_MODULES_MAX);
	for (size_t i = 0; i < m->n_modules; i++) {
		const Cgperf__V1__Module *d = m->modules[i];
		const char *h = d->build_id;
		size_t n = strnlen(h, WIRE_BUILD_ID_MAX + 1);

		if ((ret = check_sid(v, "modules", i, "path", d->path, true)) < 0)
			return ret;
		if (n > WIRE_BUILD_ID_MAX)
			return VBAD(v, "modules[%zu]: build_id longer than %d hex digits", i,
				    WIRE_BUILD_ID_MAX);
		if (n % 2)
			return VBAD(v, "modules[%zu]: build_id of %zu hex digits (whole bytes only)",
				    i, n);
		for (size_t k = 0; k < n; k++)
			if (!((h[k] >= '0' && h[k] <= '9') || (h[k] >= 'a' && h[k] <= 'f')))
				return VBAD(v,
					    "modules[%zu]: build_id: not lowercase hex at byte %zu", i,
					    k);
	}
	return 0;
}

static int check_hist(const struct vctx *v, size_t i, const char *field,
		      const Cgperf__V1__Histogram *h)
{
	const struct {
		const char *name;
		uint64_t x;
	} values[] = {
		{ "count", h->count }, { "sum", h->sum },	      { "min", h->min },
		{ "max", h->max },     { "negative", h->negative },
	};
	uint64_t n = h->negative;

	if (h->offset > HIST_BUCKETS || h->n_buckets > HIST_BUCKETS - h->offset)
		return VBAD(v, "probes[%zu].%s: buckets %" PRIu32 "+%zu past bucket %d", i, field,
			    h->offset, h->n_buckets, HIST_BUCKETS - 1);
	for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); k++)
		if (values[k].x > WIRE_VALUE_MAX)
			return VBAD(v, "probes[%zu].%s: %s %" PRIu64 " above 2^63-1", i, field,
				    values[k].name, values[k].x);
	for (size_t k = 0; k < h->n_buckets; k++) {
		if (h->buckets[k] > WIRE_VALUE_MAX - n)
			return VBAD(v, "probes[%zu].%s: bucket counts overflow", i, field);
		n += h->buckets[k];
	}
	if (n != h->count)
		return VBAD(v,
			    "probes[%zu].%s: count %" PRIu64 " is not negative + buckets (%" PRIu64
			    ")",
			    i, field, h->count, n);
	if (h->min > h->max)
		return VBAD(v, "probes[%zu].%s: min %" PRIu64 " above max %" PRIu64, i, field,
			    h->min, h->max);
	return 0;
}

static int check_probes(const struct vctx *v)
{
	int ret;

	for (size_t i = 0; i < v->m->n_probes; i++) {
		const Cgperf__V1__Probe *p = v->m->probes[i];

		if ((ret = check_cg(v, "probes", i, p->cgroup)) < 0 ||
		    (ret = check_sid(v, "probes", i, "label", p->label, true)) < 0 ||
		    (ret = check_value(v, "probes", i, "hits", p->hits)) < 0)
			return ret;
		if (p->values && (ret = check_hist(v, i, "values", p->values)) < 0)
			return ret;
		if (p->latency_ns && (ret = check_hist(v, i, "latency_ns", p->latency_ns)) < 0)
			return ret;
	}
	return 0;
}

static int check_self(const struct vctx *v)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
		{ "samples", offsetof(Cgperf__V1__AgentStats, samples) },
		{ "lost_samples", offsetof(Cgperf__V1__AgentStats, lost_samples) },
		{ "unwind_failures", offsetof(Cgperf__V1__AgentStats, unwind_failures) },
		{ "push_failures", offsetof(Cgperf__V1__AgentStats, push_failures) },
		{ "spool_bytes", offsetof(Cgperf__V1__AgentStats, spool_bytes) },
		{ "spool_dropped_batches", offsetof(Cgperf__V1__AgentStats, spool_dropped_batches) },
		{ "spool_batches", offsetof(Cgperf__V1__AgentStats, spool_batches) },
		{ "push_rejected", offsetof(Cgperf__V1__AgentStats, push_rejected) },
		{ "stacks_refused", offsetof(Cgperf__V1__AgentStats, stacks_refused) },
	};
	const Cgperf__V1__AgentStats *s = v->m->self;

	if (!s)
		return VBAD(v, "self: the agent's figures are missing (truncated body?)");
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		uint64_t x;

		memcpy(&x, (const char *)s + fields[f].off, sizeof(x));
		if (x > WIRE_VALUE_MAX)
			return VBAD(v, "self: %s %" PRIu64 " above 2^63-1", fields[f].name, x);
	}
	return 0;
}

/*
 * protobuf-c takes an overlong varint tag of 0 ("80 00") as an unknown
 * field numbered 0, which it then writes back as "00" and refuses to read.
 * Field number 0 is invalid protobuf: refuse it wherever it hides.
 */
static int check_tags(const struct vctx *v, const ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	int ret;

	for (unsigned i = 0; i < msg->n_unknown_fields; i++)
		if (msg->unknown_fields[i].tag == 0)
			return VBAD(v, "%s: field number 0 (malformed protobuf)", d->short_name);
	for (unsigned f = 0; f < d->n_fields; f++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[f];
		const char *base = (const char *)msg;
		ProtobufCMessage **subs, *sub;
		size_t n;

		if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			memcpy(&n, base + fd->quantifier_offset, sizeof(n));
			memcpy(&subs, base + fd->offset, sizeof(subs));
			for (size_t k = 0; k < n; k++)
				if ((ret = check_tags(v, subs[k])) < 0)
					return ret;
		} else {
			memcpy(&sub, base + fd->offset, sizeof(sub));
			if (sub && (ret = check_tags(v, sub)) < 0)
				return ret;
		}
	}
	return 0;
}

static int validate(const struct vctx *v)
{
	const Cgperf__V1__Batch *m = v->m;
	int ret;

	if (m->schema_version != WIRE_SCHEMA_VERSION)
		return m->schema_version
			       ? VBAD(v, "schema_version %" PRIu32 " not supported (this reader: %d)",
				      m->schema_version, WIRE_SCHEMA_VERSION)
			       : VBAD(v, "schema_version missing");
	if ((ret = check_tags(v, &m->base)) < 0 ||
	    (ret = check_header(v, "host", m->host)) < 0 ||
	    (ret = check_header(v, "machine_id", m->machine_id)) < 0 ||
	    (ret = check_header(v, "agent_id", m->agent_id)) < 0 ||
	    (ret = check_header(v, "agent_version", m->agent_version)) < 0)
		return ret;
	if (!m->agent_id[0])
		return VBAD(v, "agent_id missing");
	if (m->seq > WIRE_VALUE_MAX || m->end_ns > WIRE_VALUE_MAX)
		return VBAD(v, "seq %" PRIu64 " or end_ns %" PRIu64 " above 2^63-1", m->seq,
			    m->end_ns);
	if (m->start_ns > m->end_ns)
		return VBAD(v, "interval ends before it starts (start_ns %" PRIu64 " > end_ns %" PRIu64
			    ")",
			    m->start_ns, m->end_ns);
	if ((ret = check_self(v)) < 0 || (ret = check_strings(v)) < 0 ||
	    (ret = check_cgroups(v)) < 0 || (ret = check_counters(v)) < 0 ||
	    (ret = check_modules(v)) < 0 || (ret = check_profiles(v)) < 0 ||
	    (ret = check_probes(v)) < 0)
		return ret;
	return 0;
}

Cgperf__V1__Batch *wire_decode(const uint8_t *buf, size_t len, size_t max_len, char *err,
			       size_t errlen)
{
	struct budget bg = { 0 };
	ProtobufCAllocator alloc = { .alloc = budget_alloc, .free = budget_free, .allocator_data = &bg };
	ProtobufCAllocator plain = { .alloc = budget_alloc, .free = budget_free };
	const uint8_t *p = buf;
	uint8_t *unzipped = NULL;
	Cgperf__V1__Batch *m;
	struct vctx v = { .err = err, .errlen = errlen };
	size_t plen = len;
	int ret;

	if (errlen)
		err[0] = '\0';
	if (!max_len)
		max_len = WIRE_BODY_MAX_DEFAULT;
	if (!buf && len) {
		ret = say(err, errlen, EINVAL, "no buffer");
		goto fail;
	}
	if (len > max_len) {
		ret = say(err, errlen, EMSGSIZE, "body of %zu bytes exceeds the %zu byte cap", len,
			  max_len);
		goto fail;
	}
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		ret = gunzip(buf, len, max_len, &unzipped, &plen, err, errlen);
		if (ret < 0)
			goto fail;
		p = unzipped;
	}
	if (!plen) {
		ret = say(err, errlen, EBADMSG, "empty body");
		goto fail;
	}
	bg.left = plen > (SIZE_MAX - (1u << 20)) / 32 ? SIZE_MAX : plen * 32 + (1u << 20);
	m = cgperf__v1__batch__unpack(&alloc, plen, p);
	free(unzipped);
	unzipped = NULL;
	if (!m) {
		if (bg.over)
			ret = say(err, errlen, EMSGSIZE,
				  "decoding %zu protobuf bytes needs more memory than the budget "
				  "(32 bytes per byte + 1 MiB)",
				  plen);
		else if (bg.oom)
			ret = say(err, errlen, ENOMEM, "out of memory decoding %zu bytes", plen);
		else
			ret = say(err, errlen, EBADMSG,
				  "not a protobuf Batch (malformed or truncated, %zu bytes)", plen);
		goto fail;
	}
	v.m = m;
	ret = validate(&v);
	if (ret < 0) {
		protobuf_c_message_free_unpacked(&m->base, &plain);
		goto fail;
	}
	return m;
fail:
	free(unzipped);
	errno = -ret;
	return NULL;
}

void wire_batch_decoded_free(Cgperf__V1__Batch *m)
{
	ProtobufCAllocator plain = { .alloc = budget_alloc, .free = budget_free };

	if (m)
		protobuf_c_message_free_unpacked(&m->base, &plain);
}

const char *wire_string(const Cgperf__V1__Batch *m, uint32_t id)
{
	if (!m || id >= m->n_strings)
		return "";
	return m->strings[id];
}

void wire_hist(const Cgperf__V1__Histogram *m, struct hist *h)
{
	memset(h, 0, sizeof(*h));
	if (!m)
		return;
	h->count = m->count;
	h->negative = m->negative;
	h->sum = m->sum;
	h->min = m->min;
	h->max = m->max;
	/* offset + n_buckets <= HIST_BUCKETS for a batch wire_decode passed. */
	for (size_t i = 0; i < m->n_buckets && m->offset + i < HIST_BUCKETS; i++)
		h->b[m->offset + i] = m->buckets[i];
}
