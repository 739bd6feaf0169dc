// SPDX-License-Identifier: MIT
/*
 * Cgroups are found by (host, path) in a lib/hashmap and walked, for a
 * scrape, in the array they were appended to; each holds small arrays of
 * its counter and probe series, and the escaped label text its series share
 * ("host=\"..\",id=\"..\",..."), rebuilt only when the identity changes.
 * Series names are interned with their escaped label text, so rendering a
 * family is one pass over the array writing the cgroup's text, the series'
 * text and a number: 100,000 series take a few tens of milliseconds.
 *
 * A series is found by one more map, keyed by (cgroup, kind, name) and
 * holding the series' index in its cgroup's array, so that a batch of a
 * million distinct events in one cgroup costs a million lookups, not half
 * a million million string compares under the lock every scrape waits
 * for. Expiry compacts the arrays and moves or drops their index entries.
 */
#include "exporter/totals_internal.h"
#include "lib/hashmap.h"
#include "lib/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


/*
 * What an entry costs, for the cap on totals.bytes: a cgroup's strings
 * (its identity fields are agent-chosen, up to 8 KiB each, and its label
 * text repeats them escaped) and a series' name, with their structs and
 * index slots. Each entry keeps what it was charged, so that releasing it
 * gives back the same amount.
 */
#define CG_OVERHEAD (sizeof(struct cg) + 16 * (ID_N + 3))
/* The label text without its values: host="",id="",container="",... */
#define LABEL_NAMES 128
#define SERIES_OVERHEAD (sizeof(struct probe_series) + 2 * 32 + 32)
#define AGENT_OVERHEAD (sizeof(struct agent) + 64)

static size_t cg_cost(const struct cg *c)
{
	size_t n = CG_OVERHEAD + strlen(c->host) + strlen(c->path);

	for (int i = 0; i < ID_N; i++)
		n += strlen(c->id[i]);
	return n + (c->labels ? strlen(c->labels) : 0);
}

static size_t agent_cost(const struct agent *a)
{
	return AGENT_OVERHEAD + strlen(a->agent_id) + strlen(a->host) + strlen(a->version);
}

/* ---- keys of two parts ---- */

/* A map key: in the small buffer, or on the heap when longer. */
struct key {
	char small[256];
	char *buf;
	size_t len;
};

static int key_set(struct key *k, const void *a, size_t na, const void *b, size_t nb)
{
	k->len = na + nb;
	k->buf = k->len <= sizeof(k->small) ? k->small : malloc(k->len);
	if (!k->buf)
		return -ENOMEM;
	memcpy(k->buf, a, na);
	memcpy(k->buf + na, b, nb);
	return 0;
}

static void key_release(struct key *k)
{
	if (k->buf != k->small)
		free(k->buf);
}

/* "host\0path" */
static int cg_key(struct key *k, const char *host, const char *path)
{
	return key_set(k, host, strlen(host) + 1, path, strlen(path));
}

/* The cgroup's address, the kind, the name. */
static int series_key(struct key *k, const struct cg *c, unsigned kind, const char *name)
{
	unsigned char h[sizeof(c) + 1];

	memcpy(h, &c, sizeof(c));
	h[sizeof(c)] = (unsigned char)kind;
	return key_set(k, h, sizeof(h), name, strlen(name));
}

struct totals *totals_new(void)
{
	struct totals *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cgmap = hashmap_new();
	t->sidx = hashmap_new();
	t->names = hashmap_new();
	if (!t->cgmap || !t->sidx || !t->names) {
		totals_free(t);
		return NULL;
	}
	return t;
}

/* The cgroup's own strings and arrays; its series' names are totals.names'. */
static void cg_free(struct cg *c)
{
	for (int i = 0; i < ID_N; i++)
		free(c->id[i]);
	free(c->labels);
	free(c->counters);
	free(c->probes);
	free(c);
}

static void agent_free(struct agent *a)
{
	free(a->agent_id);
	free(a->host);
	free(a->version);
	free(a);
}

void totals_free(struct totals *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->ncg; i++)
		cg_free(t->cgv[i]);
	for (struct agent *a = t->agents, *next; a; a = next) {
		next = a->next;
		agent_free(a);
	}
	free(t->cgv);
	hashmap_free(t->cgmap);
	hashmap_free(t->sidx);
	hashmap_free(t->names);
	free(t);
}

/* Replace *@dst by a copy of @src unless equal; *@changed set when it was
 * replaced. 0 or -ENOMEM. */
static int set_str(char **dst, const char *src, bool *changed)
{
	char *c;

	if (*dst && strcmp(*dst, src) == 0)
		return 0;
	c = strdup(src);
	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	if (changed)
		*changed = true;
	return 0;
}

static struct cg *cg_find(const struct totals *t, const char *host, const char *path)
{
	struct key k;
	uint64_t *v;

	if (cg_key(&k, host, path))
		return NULL;
	v = hashmap_find(t->cgmap, k.buf, k.len);
	key_release(&k);
	return v ? (struct cg *)(uintptr_t)*v : NULL;
}

static struct cg *cg_get(struct totals *t, const char *host, const char *path)
{
	size_t nhost = strlen(host) + 1, len;
	const char *stored;
	struct cg *c = NULL;
	struct key k;
	uint64_t *v;

	if (cg_key(&k, host, path))
		return NULL;
	len = k.len;
	stored = hashmap_intern(t->cgmap, k.buf, k.len, &v);
	key_release(&k);
	if (!stored)
		return NULL;
	if (*v)
		return (struct cg *)(uintptr_t)*v;
	if (GROW_ARRAY(t->cgv, t->ncg, t->cgcap, 64) < 0)
		goto err;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto err;
	c->host = stored;
	c->path = stored + nhost;
	for (int i = 0; i < ID_N; i++)
		c->id[i] = strdup("");
	for (int i = 0; i < ID_N; i++)
		if (!c->id[i])
			goto err;
	t->cgv[t->ncg++] = c;
	*v = (uintptr_t)c;
	return c;
err:
	if (c)
		cg_free(c);
	hashmap_remove(t->cgmap, stored, len, NULL);
	return NULL;
}

/* Take the non-empty fields of @v (ID_N strings) as @c's identity. */
static int cg_identity(struct totals *t, struct cg *c, const char *const *v, uint64_t cgroup_id)
{
	bool changed = !c->labels;
	int ret;

	for (int i = 0; i < ID_N; i++)
		if (v[i] && *v[i] && set_str(&c->id[i], v[i], &changed))
			return -ENOMEM;
	if (cgroup_id)
		c->cgroup_id = cgroup_id;
	if (!changed)
		return 0;
	ret = totals_expo_labels(c);
	t->bytes -= c->charged;
	c->charged = cg_cost(c);
	t->bytes += c->charged;
	return ret;
}

/* ---- interned names ---- */

/* @s interned in totals.names, one more reference; NULL: out of memory. */
static const char *name_ref(struct totals *t, const char *s, size_t len)
{
	uint64_t *refs;
	const char *in = hashmap_intern(t->names, s, len, &refs);

	if (in)
		(*refs)++;
	return in;
}

static void name_unref(struct totals *t, const char *in)
{
	size_t len = strlen(in);
	uint64_t *refs = hashmap_find(t->names, in, len);

	if (refs && !--*refs)
		hashmap_remove(t->names, in, len, NULL);
}

/* *@name and *@elabel: @raw and its escaped label text, interned. */
static int names_ref(struct totals *t, const char *raw, const char **name, const char **elabel)
{
	char *esc;
	size_t n;

	*name = name_ref(t, raw, strlen(raw));
	if (!*name)
		return -ENOMEM;
	if (totals_expo_value(raw, &esc, &n) < 0)
		goto fail;
	if (!esc) {
		*elabel = *name;
		return 0;
	}
	*elabel = name_ref(t, esc, n);
	free(esc);
	if (*elabel)
		return 0;
fail:
	name_unref(t, *name);
	return -ENOMEM;
}

static void names_unref(struct totals *t, const char *name, const char *elabel)
{
	if (elabel != name)
		name_unref(t, elabel);
	name_unref(t, name);
}

/* ---- the series index: values are the index + 1 ---- */

/* The index of @c's series @name of @kind, or -1. */
static long sidx_find(const struct totals *t, const struct cg *c, unsigned kind, const char *name)
{
	struct key k;
	uint64_t *v;

	if (series_key(&k, c, kind, name))
		return -1;
	v = hashmap_find(t->sidx, k.buf, k.len);
	key_release(&k);
	return v ? (long)*v - 1 : -1;
}

/* Set (@idx) or drop (@idx < 0) the index entry of @c's series @name. */
static void sidx_set(struct totals *t, const struct cg *c, unsigned kind, const char *name,
		     long idx)
{
	struct key k;
	uint64_t *v;

	if (series_key(&k, c, kind, name))
		return;
	if (idx < 0) {
		hashmap_remove(t->sidx, k.buf, k.len, NULL);
	} else {
		v = hashmap_find(t->sidx, k.buf, k.len);
		if (v)
			*v = (uint64_t)idx + 1;
	}
	key_release(&k);
}

/* The series of @kind named @name in @c; a new one (zeroed, named) when
 * there is none yet. NULL at a cap or out of memory. */
static void *series_get(struct totals *t, struct cg *c, unsigned kind, const char *name)
{
	size_t *n = kind == SK_COUNTER ? &c->ncounters : &c->nprobes;
	const char **sname, **slabel;
	uint64_t *idx;
	struct key k;
	void *s = NULL;

	if (*n >= UINT32_MAX || series_key(&k, c, kind, name))
		return NULL;
	idx = hashmap_slot(t->sidx, k.buf, k.len);
	if (idx && *idx)
		s = kind == SK_COUNTER ? (void *)&c->counters[*idx - 1] : (void *)&c->probes[*idx - 1];
	if (!idx || *idx)
		goto out;
	if (kind == SK_COUNTER) {
		if (GROW_ARRAY(c->counters, c->ncounters, c->ccap, 4) < 0)
			goto undo;
		s = memset(&c->counters[*n], 0, sizeof(c->counters[0]));
		sname = &c->counters[*n].event;
		slabel = &c->counters[*n].elabel;
	} else {
		if (GROW_ARRAY(c->probes, c->nprobes, c->pcap, 2) < 0)
			goto undo;
		s = memset(&c->probes[*n], 0, sizeof(c->probes[0]));
		sname = &c->probes[*n].label;
		slabel = &c->probes[*n].elabel;
	}
	if (names_ref(t, name, sname, slabel) < 0) {
		s = NULL;
		goto undo;
	}
	if (kind == SK_COUNTER && !strcmp(name, "task-clock"))
		c->cpu = (uint32_t)*n + 1;
	(*n)++;
	*idx = *n; /* the index + 1: 0 is a new entry */
	t->nseries++;
	t->bytes += SERIES_OVERHEAD + strlen(name);
	goto out;
undo:
	hashmap_remove(t->sidx, k.buf, k.len, NULL);
out:
	key_release(&k);
	return s;
}

static struct counter_series *counter_get(struct totals *t, struct cg *c, const char *event)
{
	return series_get(t, c, SK_COUNTER, event);
}

static struct probe_series *probe_get(struct totals *t, struct cg *c, const char *label)
{
	return series_get(t, c, SK_PROBE, label);
}

static struct agent *agent_get(struct totals *t, const char *agent_id)
{
	struct agent *a;

	for (a = t->agents; a; a = a->next)
		if (!strcmp(a->agent_id, agent_id))
			return a;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->agent_id = strdup(agent_id);
	a->host = strdup("");
	a->version = strdup("");
	if (!a->agent_id || !a->host || !a->version) {
		agent_free(a);
		return NULL;
	}
	a->next = t->agents;
	t->agents = a;
	t->nagents++;
	return a;
}

static void agent_charge(struct totals *t, struct agent *a)
{
	t->bytes -= a->charged;
	a->charged = agent_cost(a);
	t->bytes += a->charged;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* @a + @b saturated at INT64_MAX (the wire's largest value), as the store
 * sums them: a restart must not bring a counter back down. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > INT64_MAX - (b > INT64_MAX ? INT64_MAX : b) ? INT64_MAX : a + b;
}

/* ---- restoring from the store ---- */

static int restore_cgroup(void *arg, const struct store_cgroup *sc)
{
	const char *v[ID_N] = { sc->container_id, sc->runtime,	    sc->pod_uid,
				sc->qos,	  sc->k8s_namespace, sc->pod_name,
				sc->container_name, sc->unit,	    sc->slice, sc->image };
	struct cg *c = cg_get(arg, sc->host, sc->path);

	if (!c || cg_identity(arg, c, v, sc->cgroup_id))
		return -ENOMEM;
	c->last_seen = max64(c->last_seen, sc->last_seen_ns);
	return 0;
}

static struct cg *cg_for_series(struct totals *t, const char *host, const char *path,
				uint64_t seen)
{
	static const char *const none[ID_N];
	struct cg *c = cg_get(t, host, path);

	if (!c || cg_identity(t, c, none, 0))
		return NULL;
	c->last_seen = max64(c->last_seen, seen);
	return c;
}

static int restore_counter(void *arg, const struct store_counter_total *st)
{
	struct cg *c = cg_for_series(arg, st->host, st->path, st->last_seen_ns);
	struct counter_series *s = c ? counter_get(arg, c, st->event) : NULL;

	if (!s)
		return -ENOMEM;
	s->total = st->total;
	s->last_seen = st->last_seen_ns;
	return 0;
}

static int restore_probe(void *arg, const struct store_probe_total *st)
{
	struct cg *c = cg_for_series(arg, st->host, st->path, st->last_seen_ns);
	struct probe_series *s = c ? probe_get(arg, c, st->label) : NULL;

	if (!s)
		return -ENOMEM;
	s->hits = st->hits;
	s->values = st->values;
	s->latency = st->latency_ns;
	s->last_seen = st->last_seen_ns;
	return 0;
}

static int restore_truncated(void *arg, const struct store_truncated *st)
{
	struct totals *t = arg;
	struct cg *c = cg_for_series(t, st->host, st->path, st->last_seen_ns);

	if (!c)
		return -ENOMEM;
	memcpy(c->truncated, st->count, sizeof(c->truncated));
	t->ntrunc += !c->truncated_seen;
	c->truncated_seen = max64(c->truncated_seen, st->last_seen_ns);
	return 0;
}

static int restore_agent(void *arg, const struct store_agent *sa)
{
	struct agent *a = agent_get(arg, sa->agent_id);

	if (!a || set_str(&a->host, sa->host, NULL) || set_str(&a->version, sa->version, NULL))
		return -ENOMEM;
	agent_charge(arg, a);
	a->first_seen = sa->first_seen_ns;
	a->last_push = sa->last_push_ns;
	a->batches = sa->batches;
	a->stack_samples = sa->stack_samples;
	a->self = sa->self;
	return 0;
}

void totals_visitor(struct totals *t, struct store_visitor *v)
{
	*v = (struct store_visitor){
		.cgroup = restore_cgroup,
		.counter = restore_counter,
		.probe = restore_probe,
		.agent = restore_agent,
		.truncated = restore_truncated,
		.arg = t,
	};
}

/* ---- adding a batch ---- */

static struct cg *batch_cg(struct totals *t, const Cgperf__V1__Batch *m, uint32_t i, uint64_t now)
{
	const Cgperf__V1__Cgroup *g;

	if (i >= m->n_cgroups) /* checked by wire_decode */
		return NULL;
	g = m->cgroups[i];
	return cg_for_series(t, m->host, wire_string(m, g->path), now);
}

int totals_add_batch(struct totals *t, const Cgperf__V1__Batch *m, uint64_t now)
{
	const Cgperf__V1__AgentStats *st = m->self;
	uint64_t samples = 0;
	struct agent *a;

	for (size_t i = 0; i < m->n_cgroups; i++) {
		const Cgperf__V1__Cgroup *g = m->cgroups[i];
		const char *v[ID_N] = {
			wire_string(m, g->container_id),  wire_string(m, g->runtime),
			wire_string(m, g->pod_uid),	  wire_string(m, g->qos),
			wire_string(m, g->k8s_namespace), wire_string(m, g->pod_name),
			wire_string(m, g->container_name), wire_string(m, g->unit),
			wire_string(m, g->slice),	  wire_string(m, g->image),
		};
		struct cg *c = cg_get(t, m->host, wire_string(m, g->path));
		char *cl = NULL;
		int ret;

		if (!c || totals_expo_clabels(m, g, &cl))
			return -ENOMEM;
		v[ID_CLABELS] = cl;
		ret = cg_identity(t, c, v, g->id);
		free(cl);
		if (ret)
			return -ENOMEM;
		c->last_seen = max64(c->last_seen, now);
	}
	for (size_t i = 0; i < m->n_counters; i++) {
		const Cgperf__V1__Counter *k = m->counters[i];
		struct cg *c;
		struct counter_series *s;

		if (!k->supported)
			continue;
		c = batch_cg(t, m, k->cgroup, now);
		s = c ? counter_get(t, c, wire_string(m, k->event)) : NULL;
		if (!s)
			return -ENOMEM;
		s->total += store_scaled(k->value, k->time_enabled, k->time_running);
		s->last_seen = max64(s->last_seen, now);
	}
	for (size_t i = 0; i < m->n_probes; i++) {
		const Cgperf__V1__Probe *p = m->probes[i];
		struct cg *c = batch_cg(t, m, p->cgroup, now);
		struct probe_series *s = c ? probe_get(t, c, wire_string(m, p->label)) : NULL;
		struct hist h;

		if (!s)
			return -ENOMEM;
		s->hits = sat_add(s->hits, p->hits);
		wire_hist(p->values, &h);
		hist_merge(&s->values, &h);
		wire_hist(p->latency_ns, &h);
		hist_merge(&s->latency, &h);
		s->last_seen = max64(s->last_seen, now);
	}
	for (size_t p = 0; p < m->n_profiles; p++) {
		const Cgperf__V1__Profile *pr = m->profiles[p];
		const uint64_t cut[WIRE_TRUNC_REASONS] = {pr->truncated_stack_copy,
							  pr->truncated_max_stack,
							  pr->truncated_bad_return_address};

		for (size_t i = 0; i < pr->n_stacks; i++)
			samples = sat_add(samples, pr->stacks[i]->count);
		if (cut[0] || cut[1] || cut[2]) {
			struct cg *c = batch_cg(t, m, pr->cgroup, now);

			if (!c)
				return -ENOMEM;
			for (int k = 0; k < WIRE_TRUNC_REASONS; k++)
				c->truncated[k] = sat_add(c->truncated[k], cut[k]);
			t->ntrunc += !c->truncated_seen;
			c->truncated_seen = max64(c->truncated_seen, now);
		}
	}
	a = agent_get(t, m->agent_id);
	if (!a || set_str(&a->host, m->host, NULL) || set_str(&a->version, m->agent_version, NULL))
		return -ENOMEM;
	agent_charge(t, a);
	if (!a->first_seen)
		a->first_seen = now;
	a->last_push = max64(a->last_push, now);
	a->batches++;
	a->stack_samples = sat_add(a->stack_samples, samples);
	if (st) {
		a->self.samples = sat_add(a->self.samples, st->samples);
		a->self.lost_samples = sat_add(a->self.lost_samples, st->lost_samples);
		a->self.unwind_failures = sat_add(a->self.unwind_failures, st->unwind_failures);
		a->self.push_failures = sat_add(a->self.push_failures, st->push_failures);
		a->self.push_rejected = sat_add(a->self.push_rejected, st->push_rejected);
		a->self.spool_dropped_batches =
			sat_add(a->self.spool_dropped_batches, st->spool_dropped_batches);
		a->self.stacks_refused = sat_add(a->self.stacks_refused, st->stacks_refused);
		a->self.spool_bytes = st->spool_bytes;
		a->self.spool_batches = st->spool_batches;
	}
	return 0;
}

/* ---- expiry ---- */

static void series_drop(struct totals *t, struct cg *c, unsigned kind, const char *name,
			const char *elabel)
{
	sidx_set(t, c, kind, name, -1);
	t->bytes -= SERIES_OVERHEAD + strlen(name);
	t->nseries--;
	names_unref(t, name, elabel);
}

/* Drop @c's series last seen before @before; the others move down. */
static void expire_series(struct totals *t, struct cg *c, uint64_t before)
{
	size_t k = 0;

	c->cpu = 0;
	for (size_t i = 0; i < c->ncounters; i++) {
		const struct counter_series *s = &c->counters[i];

		if (s->last_seen < before) {
			series_drop(t, c, SK_COUNTER, s->event, s->elabel);
			continue;
		}
		if (k != i) {
			sidx_set(t, c, SK_COUNTER, s->event, (long)k);
			c->counters[k] = *s;
		}
		if (!strcmp(c->counters[k].event, "task-clock"))
			c->cpu = (uint32_t)k + 1;
		k++;
	}
	c->ncounters = k;
	k = 0;
	for (size_t i = 0; i < c->nprobes; i++) {
		const struct probe_series *s = &c->probes[i];

		if (s->last_seen < before) {
			series_drop(t, c, SK_PROBE, s->label, s->elabel);
			continue;
		}
		if (k != i) {
			sidx_set(t, c, SK_PROBE, s->label, (long)k);
			c->probes[k] = *s;
		}
		k++;
	}
	c->nprobes = k;
}

void totals_expire(struct totals *t, uint64_t before)
{
	size_t k = 0;

	for (size_t i = 0; i < t->ncg; i++) {
		struct cg *c = t->cgv[i];

		expire_series(t, c, before);
		if (c->last_seen < before && !c->ncounters && !c->nprobes) {
			size_t nhost = strlen(c->host) + 1;

			t->bytes -= c->charged;
			t->ntrunc -= c->truncated_seen != 0;
			/* c->host is the map's key: gone with the entry. */
			hashmap_remove(t->cgmap, c->host, nhost + strlen(c->path), NULL);
			cg_free(c);
		} else {
			t->cgv[k++] = c;
		}
	}
	t->ncg = k;
	for (struct agent **pa = &t->agents, *a; (a = *pa);) {
		if (a->last_push < before) {
			*pa = a->next;
			t->bytes -= a->charged;
			agent_free(a);
			t->nagents--;
		} else {
			pa = &a->next;
		}
	}
}

size_t totals_series(const struct totals *t)
{
	return t->nseries + t->nagents;
}

size_t totals_entries(const struct totals *t)
{
	return t->ncg + t->nseries + t->nagents;
}

void totals_replace(struct totals *t, struct totals *fresh)
{
	struct totals old = *t;

	*t = *fresh;
	*fresh = old;
}

size_t totals_bytes(const struct totals *t)
{
	return t->bytes;
}

/* 1 when series @name of @kind of cgroup @cg of @m is not held yet, with
 * its cost added to *@bytes. */
static size_t series_new(const struct totals *t, const Cgperf__V1__Batch *m, uint32_t cg,
			 unsigned kind, const char *name, size_t *bytes)
{
	const struct cg *c;

	if (cg >= m->n_cgroups)
		return 0;
	c = cg_find(t, m->host, wire_string(m, m->cgroups[cg]->path));
	if (c && sidx_find(t, c, kind, name) >= 0)
		return 0;
	*bytes += SERIES_OVERHEAD + strlen(name);
	return 1;
}

/* At most what cgroup @g of @m adds in bytes: its strings, and its label
 * text (the label names, then the strings again, escaping at most
 * doubling them); for a known cgroup, what its changed fields add. */
static size_t cg_growth(const struct totals *t, const Cgperf__V1__Batch *m,
			const Cgperf__V1__Cgroup *g)
{
	const char *path = wire_string(m, g->path);
	const struct cg *c = cg_find(t, m->host, path);
	const uint32_t f[ID_N] = { g->container_id, g->runtime,	     g->pod_uid,
				   g->qos,	    g->k8s_namespace, g->pod_name,
				   g->container_name, g->unit,	      g->slice, g->image };
	size_t n = 0;

	for (int i = 0; i < ID_N; i++) {
		const char *v = wire_string(m, f[i]);

		if (!c || (*v && strcmp(v, c->id[i])))
			n += strlen(v);
	}
	for (size_t i = 0; !c && i < g->n_labels; i++) /* ID_CLABELS: names, values */
		n += 24 + strlen(wire_string(m, g->labels[i]->key)) +
		     strlen(wire_string(m, g->labels[i]->value));
	if (c)
		return 3 * n;
	return CG_OVERHEAD + LABEL_NAMES + 3 * (n + strlen(m->host) + strlen(path));
}

size_t totals_batch_growth(const struct totals *t, const Cgperf__V1__Batch *m, size_t *bytes)
{
	size_t n = 0, b = 0;
	bool agent = false;

	for (size_t i = 0; i < m->n_cgroups; i++) {
		n += !cg_find(t, m->host, wire_string(m, m->cgroups[i]->path));
		b += cg_growth(t, m, m->cgroups[i]);
	}
	for (size_t i = 0; i < m->n_counters; i++)
		if (m->counters[i]->supported)
			n += series_new(t, m, m->counters[i]->cgroup, SK_COUNTER,
					wire_string(m, m->counters[i]->event), &b);
	for (size_t i = 0; i < m->n_probes; i++)
		n += series_new(t, m, m->probes[i]->cgroup, SK_PROBE,
				wire_string(m, m->probes[i]->label), &b);
	for (const struct agent *a = t->agents; a && !agent; a = a->next)
		agent = !strcmp(a->agent_id, m->agent_id);
	if (!agent)
		b += AGENT_OVERHEAD + strlen(m->agent_id) + strlen(m->host) +
		     strlen(m->agent_version);
	if (bytes)
		*bytes = b;
	return n + !agent;
}


int totals_each_cgroup(const struct totals *t, uint64_t cutoff,
		       int (*fn)(void *arg, const struct store_cgroup *c), void *arg)
{
	EACH_CG(t, c)
	{
		struct store_cgroup sc = {
			.host = c->host,
			.path = c->path,
			.cgroup_id = c->cgroup_id,
			.container_id = c->id[ID_CONTAINER],
			.runtime = c->id[ID_RUNTIME],
			.pod_uid = c->id[ID_POD],
			.qos = c->id[ID_QOS],
			.k8s_namespace = c->id[ID_NS],
			.pod_name = c->id[ID_POD_NAME],
			.container_name = c->id[ID_CONTAINER_NAME],
			.unit = c->id[ID_UNIT],
			.slice = c->id[ID_SLICE],
			.image = c->id[ID_IMAGE],
			.last_seen_ns = c->last_seen,
		};
		int ret;

		if (c->last_seen < cutoff)
			continue;
		ret = fn(arg, &sc);
		if (ret)
			return ret;
	}
	return 0;
}

int totals_each_agent(const struct totals *t, uint64_t cutoff,
		      int (*fn)(void *arg, const struct store_agent *a), void *arg)
{
	for (const struct agent *a = t->agents; a; a = a->next) {
		struct store_agent sa = {
			.agent_id = a->agent_id,
			.host = a->host,
			.version = a->version,
			.first_seen_ns = a->first_seen,
			.last_push_ns = a->last_push,
			.batches = a->batches,
			.stack_samples = a->stack_samples,
			.self = a->self,
		};
		int ret;

		if (a->last_push < cutoff)
			continue;
		ret = fn(arg, &sa);
		if (ret)
			return ret;
	}
	return 0;
}
