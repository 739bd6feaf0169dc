// SPDX-License-Identifier: MIT
/*
 * Cgroups live in a hash table keyed by (host, path) that doubles when it
 * gets full; each holds small arrays of its counter and probe series, and
 * the escaped label text its series share ("host=\"..\",id=\"..\",..."),
 * rebuilt only when the identity changes. Rendering a family is then one
 * pass over the table writing that text, the series' own labels and a
 * number: 100,000 series take a few tens of milliseconds.
 *
 * A series is found by one more hash table, keyed by (cgroup, kind, name)
 * and holding the series' index in its cgroup's array, so that a batch of
 * a million distinct events in one cgroup costs a million lookups, not
 * half a million million string compares under the lock every scrape
 * waits for. Expiry compacts the arrays and rebuilds that table.
 */
#include "exporter/totals_internal.h"
#include "lib/hashmap.h"
#include "lib/grow.h"
#include "lib/prom.h"

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
#define SERIES_OVERHEAD (sizeof(struct probe_series) + 2 * sizeof(struct sref) + 32)
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

static uint64_t hash_str(uint64_t h, const char *s)
{
	h = hash_fnv1a_str(h, s);
	return (h ^ 0xff) * HASH_FNV_PRIME; /* a separator no string holds */
}

static uint64_t cg_hash(const char *host, const char *path)
{
	return hash_str(hash_str(HASH_FNV_OFFSET, host), path);
}

struct totals *totals_new(void)
{
	struct totals *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cg_buckets = 1024;
	t->cgs = calloc(t->cg_buckets, sizeof(*t->cgs));
	if (!t->cgs) {
		free(t);
		return NULL;
	}
	return t;
}

static void cg_free(struct cg *c)
{
	free(c->host);
	free(c->path);
	for (int i = 0; i < ID_N; i++)
		free(c->id[i]);
	free(c->labels);
	for (size_t i = 0; i < c->ncounters; i++)
		free(c->counters[i].event);
	free(c->counters);
	for (size_t i = 0; i < c->nprobes; i++)
		free(c->probes[i].label);
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
	for (size_t i = 0; i < t->cg_buckets; i++) {
		for (struct cg *c = t->cgs[i], *next; c; c = next) {
			next = c->next;
			cg_free(c);
		}
	}
	for (struct agent *a = t->agents, *next; a; a = next) {
		next = a->next;
		agent_free(a);
	}
	free(t->cgs);
	free(t->sidx);
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

static void grow_table(struct totals *t)
{
	size_t n = t->cg_buckets * 2;
	struct cg **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < t->cg_buckets; i++) {
		for (struct cg *c = t->cgs[i], *next; c; c = next) {
			next = c->next;
			c->next = b[cg_hash(c->host, c->path) % n];
			b[cg_hash(c->host, c->path) % n] = c;
		}
	}
	free(t->cgs);
	t->cgs = b;
	t->cg_buckets = n;
}

static struct cg *cg_get(struct totals *t, const char *host, const char *path)
{
	struct cg **head = &t->cgs[cg_hash(host, path) % t->cg_buckets], *c;

	for (c = *head; c; c = c->next)
		if (!strcmp(c->host, host) && !strcmp(c->path, path))
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->host = strdup(host);
	c->path = strdup(path);
	for (int i = 0; i < ID_N; i++)
		c->id[i] = strdup("");
	for (int i = 0; i < ID_N; i++)
		if (!c->id[i])
			goto err;
	if (!c->host || !c->path)
		goto err;
	c->next = *head;
	*head = c;
	if (++t->ncg > t->cg_buckets)
		grow_table(t);
	return c;
err:
	cg_free(c);
	return NULL;
}

/* The escaped label text of @c: host, id, container, container_name,
 * pod, pod_name, namespace, unit, runtime, and image and container labels
 * when known (an empty label is no label to Prometheus; older series keep
 * their text). 0 or
 * -ENOMEM. */
static int cg_labels(struct cg *c)
{
	static const struct {
		const char *name;
		int field;
	} ids[] = {
		{ ",container=\"", ID_CONTAINER }, { ",container_name=\"", ID_CONTAINER_NAME },
		{ ",pod=\"", ID_POD },		   { ",pod_name=\"", ID_POD_NAME },
		{ ",namespace=\"", ID_NS },	   { ",unit=\"", ID_UNIT },
		{ ",runtime=\"", ID_RUNTIME },
	};
	struct page p;
	char *s;

	page_init(&p, 0);
	page_put(&p, "host=\"");
	page_label(&p, c->host);
	page_put(&p, "\",id=\"");
	page_label(&p, c->path);
	page_putc(&p, '"');
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		page_put(&p, ids[i].name);
		page_label(&p, c->id[ids[i].field]);
		page_putc(&p, '"');
	}
	if (*c->id[ID_IMAGE]) {
		page_put(&p, ",image=\"");
		page_label(&p, c->id[ID_IMAGE]);
		page_putc(&p, '"');
	}
	page_put(&p, c->id[ID_CLABELS]); /* written text already */
	s = page_take(&p, NULL);
	if (!s)
		return -ENOMEM;
	free(c->labels);
	c->labels = s;
	return 0;
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
	ret = cg_labels(c);
	t->bytes -= c->charged;
	c->charged = cg_cost(c);
	t->bytes += c->charged;
	return ret;
}

/* ---- the series index ---- */

static uint64_t series_hash(const struct cg *c, unsigned kind, const char *name)
{
	uint64_t h = ((uint64_t)(uintptr_t)c ^ kind) * 0x9e3779b97f4a7c15ull;

	return hash_str(h, name);
}

static const char *series_name(const struct sref *r)
{
	return r->kind == SK_COUNTER ? r->cg->counters[r->idx].event : r->cg->probes[r->idx].label;
}

/* The index of @c's series @name of @kind, or -1. */
static long sidx_find(const struct totals *t, const struct cg *c, unsigned kind, const char *name)
{
	uint64_t h = series_hash(c, kind, name);

	if (!t->nslots)
		return -1;
	for (size_t i = h & (t->nslots - 1);; i = (i + 1) & (t->nslots - 1)) {
		const struct sref *r = &t->sidx[i];

		if (!r->cg)
			return -1;
		if (r->hash == h && r->cg == c && r->kind == kind && !strcmp(series_name(r), name))
			return r->idx;
	}
}

static void sidx_put(struct sref *slots, size_t nslots, const struct sref *r)
{
	size_t i = r->hash & (nslots - 1);

	while (slots[i].cg)
		i = (i + 1) & (nslots - 1);
	slots[i] = *r;
}

/* Room for one more series, so that adding it cannot fail. 0 or -ENOMEM. */
static int sidx_reserve(struct totals *t)
{
	size_t n = t->nslots ? t->nslots : 1024;
	struct sref *slots;

	while ((t->nseries + 1) * 2 > n)
		n *= 2;
	if (n == t->nslots)
		return 0;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->nslots; i++)
		if (t->sidx[i].cg)
			sidx_put(slots, n, &t->sidx[i]);
	free(t->sidx);
	t->sidx = slots;
	t->nslots = n;
	return 0;
}

static void sidx_add(struct totals *t, struct cg *c, unsigned kind, uint32_t idx)
{
	struct sref r = { .cg = c, .idx = idx, .kind = kind };

	r.hash = series_hash(c, kind, series_name(&r));
	sidx_put(t->sidx, t->nslots, &r);
}

/* After expiry moved and freed series: every series again. */
static void sidx_rebuild(struct totals *t)
{
	if (!t->nslots)
		return;
	memset(t->sidx, 0, t->nslots * sizeof(*t->sidx));
	for (size_t b = 0; b < t->cg_buckets; b++) {
		for (struct cg *c = t->cgs[b]; c; c = c->next) {
			for (size_t i = 0; i < c->ncounters; i++)
				sidx_add(t, c, SK_COUNTER, (uint32_t)i);
			for (size_t i = 0; i < c->nprobes; i++)
				sidx_add(t, c, SK_PROBE, (uint32_t)i);
		}
	}
}

/* The series of @kind named @name in @c; a new one (zeroed, named) when
 * there is none yet. NULL at a cap or out of memory. */
static void *series_get(struct totals *t, struct cg *c, unsigned kind, const char *name)
{
	size_t *n = kind == SK_COUNTER ? &c->ncounters : &c->nprobes;
	long i = sidx_find(t, c, kind, name);
	char **sname;
	void *s;

	if (i >= 0)
		return kind == SK_COUNTER ? (void *)&c->counters[i] : (void *)&c->probes[i];
	if (*n >= UINT32_MAX || sidx_reserve(t))
		return NULL;
	if (kind == SK_COUNTER) {
		if (GROW_ARRAY(c->counters, c->ncounters, c->ccap, 4) < 0)
			return NULL;
		s = memset(&c->counters[*n], 0, sizeof(c->counters[0]));
		sname = &c->counters[*n].event;
	} else {
		if (GROW_ARRAY(c->probes, c->nprobes, c->pcap, 2) < 0)
			return NULL;
		s = memset(&c->probes[*n], 0, sizeof(c->probes[0]));
		sname = &c->probes[*n].label;
	}
	*sname = strdup(name);
	if (!*sname)
		return NULL;
	sidx_add(t, c, kind, (uint32_t)*n);
	(*n)++;
	t->nseries++;
	t->bytes += SERIES_OVERHEAD + strlen(name);
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
		.arg = t,
	};
}

/* ---- adding a batch ---- */

/* The container labels of @g (only those the agent's allow-list names
 * travel) as label text in *@out, "" for none. 0 or -ENOMEM. */
static int batch_clabels(const Cgperf__V1__Batch *m, const Cgperf__V1__Cgroup *g, char **out)
{
	const char *k[WIRE_LABELS_MAX], *v[WIRE_LABELS_MAX];
	size_t n = 0;
	struct page p;

	for (; n < g->n_labels && n < WIRE_LABELS_MAX; n++) {
		k[n] = wire_string(m, g->labels[n]->key);
		v[n] = wire_string(m, g->labels[n]->value);
	}
	page_init(&p, 0);
	prom_pairs_to(page_sink, &p, "container_label_", k, v, n);
	*out = page_take(&p, NULL);
	return *out ? 0 : -ENOMEM;
}

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

		if (!c || batch_clabels(m, g, &cl))
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

void totals_expire(struct totals *t, uint64_t before)
{
	size_t nseries = t->nseries;

	for (size_t b = 0; b < t->cg_buckets; b++) {
		for (struct cg **pc = &t->cgs[b], *c; (c = *pc);) {
			size_t k = 0;

			for (size_t i = 0; i < c->ncounters; i++) {
				if (c->counters[i].last_seen < before) {
					t->bytes -= SERIES_OVERHEAD + strlen(c->counters[i].event);
					free(c->counters[i].event);
					t->nseries--;
				} else {
					c->counters[k++] = c->counters[i];
				}
			}
			c->ncounters = k;
			k = 0;
			for (size_t i = 0; i < c->nprobes; i++) {
				if (c->probes[i].last_seen < before) {
					t->bytes -= SERIES_OVERHEAD + strlen(c->probes[i].label);
					free(c->probes[i].label);
					t->nseries--;
				} else {
					c->probes[k++] = c->probes[i];
				}
			}
			c->nprobes = k;
			if (c->last_seen < before && !c->ncounters && !c->nprobes) {
				*pc = c->next;
				t->bytes -= c->charged;
				cg_free(c);
				t->ncg--;
			} else {
				pc = &c->next;
			}
		}
	}
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
	if (t->nseries != nseries)
		sidx_rebuild(t);
}

size_t totals_series(const struct totals *t)
{
	return t->nseries + t->nagents;
}

size_t totals_entries(const struct totals *t)
{
	return t->ncg + t->nseries + t->nagents;
}

static const struct cg *cg_find(const struct totals *t, const char *host, const char *path)
{
	for (const struct cg *c = t->cgs[cg_hash(host, path) % t->cg_buckets]; c; c = c->next)
		if (!strcmp(c->host, host) && !strcmp(c->path, path))
			return c;
	return NULL;
}

void totals_replace(struct totals *t, struct totals *fresh)
{
	struct totals old = *t;

	/* What only this process counts (stack truncations) goes over. */
	EACH_CG(fresh, c) {
		const struct cg *was = cg_find(&old, c->host, c->path);
		struct cg *now = (struct cg *)c;

		if (was) {
			memcpy(now->truncated, was->truncated, sizeof(was->truncated));
			now->truncated_seen = was->truncated_seen;
		}
	}
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
