// SPDX-License-Identifier: MIT
/*
 * The wire: building batches on the agent, checking them on the collector.
 *
 * Building. The builder keeps its own growable arrays of protobuf-c message
 * structs (cgroups, counters, profiles, probes) and of plain records for
 * stacks, whose frame ids live in one shared pool of uint32. Nothing points
 * into those arrays while a batch grows, so they may move freely; only
 * wire_encode() lays out the pointer arrays protobuf-c wants, packs, and
 * throws them away. The string table is interned through a pooled
 * lib/hashmap from the bytes to 1 + id, and str[] points at the map's own
 * copies of the keys (no string has an allocation of its own, all go with
 * the map); each string remembers the cgroup whose path it
 * is, which is how a path added twice finds its first index. Modules are
 * interned the same way, keyed by (path id, build-id); a stack's module
 * indexes live in a second
 * pool parallel to the frame pool (same offsets), filled only for stacks
 * that carry modules.
 *
 * Checking (wire_decode.c). A push body is untrusted, and protobuf's
 * parser checks only the framing. wire_decode() bounds every stage: the body (the collector's
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

#include "lib/gzip.h"
#include "lib/utf8.h"

#include "lib/hashmap.h"

struct cg_rec {
	Cgperf__V1__Cgroup m; /* m.labels is labp */
	Cgperf__V1__Label **labp; /* one block: the pointers, then the labels */
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
	char build_id[WIRE_BUILD_ID_MAX + 1];
};

struct probe_rec {
	Cgperf__V1__Probe m; /* histograms filled in by wire_encode() */
	bool has_values, has_latency;
	struct hist values, latency;
};

struct wire_batch {
	Cgperf__V1__Batch hdr; /* its strings point into hdr_text */
	Cgperf__V1__AgentStats self;
	struct {
		char host[WIRE_HEADER_MAX + 1], machine_id[WIRE_HEADER_MAX + 1];
		char agent_id[WIRE_HEADER_MAX + 1], version[WIRE_HEADER_MAX + 1];
	} hdr_text;

	const char **str; /* the map's own copies of its keys */
	int32_t *str_cg; /* per string: the cgroup whose path it is, or -1 */
	size_t nstr, cap_str, cap_str_cg;
	struct hashmap *str_ids; /* string bytes -> 1 + id; pooled, freed whole */

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
	struct hashmap *mod_ids; /* (path id, build-id) -> 1 + module index; made on first use */
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

/*
 * Room for element @n of the array field @v (capacity field @cap) when @n is
 * below @max: 0, -E2BIG at @max, -ENOMEM (then @v is untouched).
 */
#define ROOM(v, n, cap, max)                                                                 \
	__extension__({                                                                      \
		void *room_ = (n) < (max) ? grow((v), (n), &(cap), sizeof(*(v))) : NULL;     \
		if (room_)                                                                   \
			(v) = room_;                                                         \
		room_ ? 0 : (n) < (max) ? -ENOMEM : -E2BIG;                                  \
	})

/* ---- text ---- */

/*
 * @s into @out with each byte that starts no valid sequence replaced by
 * U+FFFD, cut on a character boundary to at most @max (>= 3) bytes, and
 * NUL-terminated; the length. @out has room for min(3 * strlen(@s), @max)
 * bytes and the NUL.
 */
static size_t text_clean_into(char *out, const char *s, size_t max)
{
	static const char repl[] = "\xef\xbf\xbd";
	size_t n = strlen(s), i = 0, o = 0, k;

	while (i < n) {
		k = utf8_decode(s + i, n - i, NULL);
		if (k) {
			if (o + k > max)
				break;
			memcpy(out + o, s + i, k);
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
	return o;
}

/* The same into a new string of just the room it needs; NULL: ENOMEM. */
static char *text_clean(const char *s, size_t max, size_t *outlen)
{
	size_t n = strlen(s);
	char *out = malloc((n < max / 3 ? n * 3 : max) + 1);

	if (out)
		*outlen = text_clean_into(out, s, max);
	return out;
}

/* ---- building ---- */

/* The id of @s (@len bytes, clean UTF-8, within limits). */
static int intern(struct wire_batch *b, const char *s, size_t len)
{
	uint64_t *v;
	const char *key = hashmap_intern(b->str_ids, s, len, &v);
	size_t id = b->nstr;
	int err;

	if (!key)
		return -ENOMEM;
	if (*v)
		return (int)(*v - 1);
	/* New: the map holds it as 0 until it has its place in the arrays. */
	if ((err = ROOM(b->str, id, b->cap_str, WIRE_ITEMS_MAX)) < 0 ||
	    (err = ROOM(b->str_cg, id, b->cap_str_cg, WIRE_ITEMS_MAX)) < 0) {
		hashmap_remove(b->str_ids, s, len, NULL);
		return err;
	}
	*v = id + 1;
	b->str[id] = key;
	b->str_cg[id] = -1;
	b->nstr++;
	return (int)id;
}

int wire_intern(struct wire_batch *b, const char *s)
{
	char *clean = NULL;
	size_t len;
	int id;

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
	id = intern(b, s, len);
	free(clean);
	return id;
}

/* A header string: @s cleaned and cut to WIRE_HEADER_MAX into @out. */
static char *header_copy(char out[WIRE_HEADER_MAX + 1], const char *s)
{
	text_clean_into(out, s ? s : "", WIRE_HEADER_MAX);
	return out;
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
	b->hdr.host = header_copy(b->hdr_text.host, host);
	b->hdr.machine_id = header_copy(b->hdr_text.machine_id, machine_id);
	b->hdr.agent_id = header_copy(b->hdr_text.agent_id, agent_id);
	b->hdr.agent_version = header_copy(b->hdr_text.version, version);
	b->hdr.schema_version = WIRE_SCHEMA_VERSION;
	b->hdr.seq = seq;
	b->hdr.start_ns = start_ns;
	b->hdr.end_ns = end_ns;
	/* id 0 is "" */
	b->str_ids = hashmap_new_pooled();
	if (!b->str_ids || intern(b, "", 0) != 0)
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
	free(b->str);
	free(b->str_cg);
	hashmap_free(b->str_ids);
	for (size_t i = 0; i < b->ncg; i++)
		free(b->cg[i].labp);
	free(b->cg);
	free(b->ctr);
	free(b->prof);
	free(b->stk);
	free(b->frames);
	free(b->fmods);
	free(b->mod);
	hashmap_free(b->mod_ids);
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

/* The first WIRE_LABELS_MAX labels of @info with a non-empty key. */
static int add_labels(struct wire_batch *b, struct cg_rec *r, const struct wire_cgroup_info *info)
{
	Cgperf__V1__Label init = CGPERF__V1__LABEL__INIT;
	size_t n = info->nlabels < WIRE_LABELS_MAX ? info->nlabels : WIRE_LABELS_MAX, k = 0;
	Cgperf__V1__Label *lab;
	int ret = 0;

	_Static_assert(_Alignof(Cgperf__V1__Label) <= _Alignof(Cgperf__V1__Label *),
		       "labels can follow their pointers");
	r->labp = calloc(n, sizeof(*r->labp) + sizeof(*lab));
	if (!r->labp) {
		ret = -ENOMEM;
		goto out;
	}
	lab = (Cgperf__V1__Label *)(r->labp + n);
	for (size_t i = 0; i < n; i++) {
		int key, val = 0;

		if (!info->label_keys[i] || !info->label_keys[i][0])
			continue;
		key = wire_intern(b, info->label_keys[i]);
		if (key < 0 || (info->label_values[i] &&
				(val = wire_intern(b, info->label_values[i])) < 0)) {
			ret = key < 0 ? key : val;
			goto out;
		}
		lab[k] = init;
		lab[k].key = (uint32_t)key;
		lab[k].value = (uint32_t)val;
		r->labp[k] = &lab[k];
		k++;
	}
out:
	if (ret < 0 || !k) {
		free(r->labp);
		r->labp = NULL;
		k = 0;
	}
	r->m.labels = r->labp;
	r->m.n_labels = k;
	return ret;
}

int wire_add_cgroup(struct wire_batch *b, const char *path, uint64_t id,
		    const struct wire_cgroup_info *info)
{
	Cgperf__V1__Cgroup init = CGPERF__V1__CGROUP__INIT;
	Cgperf__V1__Cgroup *c;
	int p, idx, ret = 0;

	if (!b || !path || !*path)
		return -EINVAL;
	p = wire_intern(b, path);
	if (p < 0)
		return p;
	idx = b->str_cg[p];
	if (idx < 0) {
		if ((ret = ROOM(b->cg, b->ncg, b->cap_cg, WIRE_ITEMS_MAX)) < 0)
			return ret;
		idx = (int)b->ncg++;
		memset(&b->cg[idx], 0, sizeof(b->cg[idx]));
		b->cg[idx].m = init;
		b->cg[idx].m.path = (uint32_t)p;
		b->cg[idx].prof_head = -1;
		b->str_cg[p] = idx;
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
	    (ret = fill(b, &c->slice, info->slice)) < 0 ||
	    (ret = fill(b, &c->image, info->image)) < 0 ||
	    (ret = fill(b, &c->description, info->description)) < 0)
		return ret;
	if (info->nlabels && !c->n_labels && (ret = add_labels(b, &b->cg[idx], info)) < 0)
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

	if (!b || !cg_ok(b, cg) || !event || !*event || running > enabled)
		return -EINVAL;
	if ((ev = ROOM(b->ctr, b->nctr, b->cap_ctr, WIRE_ITEMS_MAX)) < 0 ||
	    (ev = wire_intern(b, event)) < 0)
		return ev;
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
	if ((i = ROOM(b->prof, b->nprof, b->cap_prof, WIRE_ITEMS_MAX)) < 0)
		return i;
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

int wire_add_module(struct wire_batch *b, const char *path, const char *build_id)
{
	char bid[WIRE_BUILD_ID_MAX + 1];
	unsigned char key[sizeof(uint32_t) + WIRE_BUILD_ID_MAX];
	uint32_t upid;
	struct mod_rec *r;
	size_t klen;
	uint64_t *v;
	int pid;

	if (!b || !path || !*path)
		return -EINVAL;
	build_id_clean(build_id, bid);
	pid = wire_intern(b, path);
	if (pid < 0)
		return pid;
	if (!b->mod_ids && !(b->mod_ids = hashmap_new()))
		return -ENOMEM;
	upid = (uint32_t)pid;
	memcpy(key, &upid, sizeof(upid));
	klen = strlen(bid);
	memcpy(key + sizeof(upid), bid, klen);
	klen += sizeof(upid);
	v = hashmap_slot(b->mod_ids, key, klen);
	if (!v)
		return -ENOMEM;
	if (*v)
		return (int)(*v - 1);
	/* New: the map holds it as 0 until it has its place in mod[]. */
	if ((pid = ROOM(b->mod, b->nmod, b->cap_mod, WIRE_MODULES_MAX)) < 0) {
		hashmap_remove(b->mod_ids, key, klen, NULL);
		return pid;
	}
	r = &b->mod[b->nmod];
	r->path = upid;
	memcpy(r->build_id, bid, sizeof(bid));
	*v = b->nmod + 1;
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
	if ((id = ROOM(b->stk, b->nstk, b->cap_stk, WIRE_ITEMS_MAX)) < 0)
		return id;
	if (n > WIRE_STACK_MAX) {
		skip = n - (WIRE_STACK_MAX - 1);
		keep = WIRE_STACK_MAX;
	}
	if (b->nframes > SIZE_MAX - keep)
		return -ENOMEM;
	if (ROOM(b->frames, b->nframes + keep - 1, b->cap_frames, SIZE_MAX) < 0 ||
	    (modules && ROOM(b->fmods, b->nframes + keep - 1, b->cap_fmods, SIZE_MAX) < 0))
		return -ENOMEM;

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

	if (!b || !cg_ok(b, cg) || !label || !*label)
		return -EINVAL;
	if ((values && !hist_consistent(values)) || (latency_ns && !hist_consistent(latency_ns)))
		return -EINVAL;
	if ((id = ROOM(b->probe, b->nprobe, b->cap_probe, WIRE_ITEMS_MAX)) < 0 ||
	    (id = wire_intern(b, label)) < 0)
		return id;
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
	int first, last;

	*m = init;
	if (hist_span(h, &first, &last)) {
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
	m.strings = (char **)b->str; /* only read by the packer */
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

