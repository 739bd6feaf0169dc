// SPDX-License-Identifier: MIT
/*
 * agent/wire, the builder: a realistic batch survives encode -> gzip ->
 * decode intact, and the builder cleans what it is given. The decoder's
 * refusals are tested in test_wire_decode.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/unit/testalloc.h"
#include "tests/unit/testlib.h"
#include "wire/wire.h"

/* ---- a realistic batch, with everything needed to check it ---- */

#define N_CG 20
#define N_VOCAB 1500
#define N_STACKS 150
#define MAX_DEPTH 48

static const char *const events[] = { "task-clock",    "context-switches", "cpu-migrations",
				      "page-faults",   "cycles",	   "instructions" };
#define N_EVENTS (sizeof(events) / sizeof(events[0]))

struct exp_stack {
	int depth;
	int frame[MAX_DEPTH]; /* vocab indexes, root first */
	uint64_t count;
};

struct exp_cg {
	char path[256];
	uint64_t id;
	/* What the builder is handed: its container_id and pod_uid point at
	 * the two arrays below. */
	struct wire_cgroup_info info;
	char container_id[65];
	char pod_uid[40];
	uint64_t ctr[N_EVENTS][3];
	struct exp_stack stacks[N_STACKS];
};

struct realistic {
	char *vocab[N_VOCAB];
	struct exp_cg cg[N_CG];
	struct hist values, latency;
	struct wire_self self;
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return tl_rand(&rng_state);
}

static void make_vocab(struct realistic *r)
{
	static const char *const mods[] = { "postgres", "libc.so.6", "[kernel.kallsyms]",
					    "libssl.so.3", "python3.11" };
	static const char *const words[] = { "Exec", "Scan", "Hash", "Join", "Sort", "Heap",
					     "Buffer", "Lock", "Index", "Tuple", "Plan", "Read" };

	for (int i = 0; i < N_VOCAB; i++) {
		char buf[160];
		int kind = i % 10;

		if (kind < 5)
			snprintf(buf, sizeof(buf), "%s%s%s_%d", words[i % 12], words[(i / 12) % 12],
				 words[(i / 144) % 12], i);
		else if (kind < 8)
			snprintf(buf, sizeof(buf), "%s_%s_%d_[k]", i % 2 ? "__x64_sys" : "do",
				 words[i % 12], i);
		else if (kind == 8)
			snprintf(buf, sizeof(buf), "%s+0x%x", mods[i % 5], 0x1000 + i * 37);
		else
			snprintf(buf, sizeof(buf),
				 "std::vector<%s_%d, std::allocator<%s> >::push_back(%s const&)",
				 words[i % 12], i, words[i % 12], words[i % 12]);
		r->vocab[i] = strdup(buf);
	}
}

/* A 64-digit container id from @digits, unique by its first two (@i). */
static void make_container_id(char *id, const char *digits, int mul, int i)
{
	for (int k = 0; k < 64; k++)
		id[k] = digits[(i * mul + k) % 16];
	id[0] = "0123456789abcdef"[i / 16 % 16];
	id[1] = "0123456789abcdef"[i % 16];
}

static void make_cgroup(struct exp_cg *c, int i)
{
	memset(c, 0, sizeof(*c));
	c->info.container_id = c->container_id;
	c->info.pod_uid = c->pod_uid;
	c->id = 1000 + (uint64_t)i * 7;
	c->info.slice = "system.slice";
	switch (i % 4) {
	case 0:
		snprintf(c->path, sizeof(c->path), "/system.slice/postgresql@15-main%d.service", i);
		c->info.unit = "postgresql@15-main.service";
		break;
	case 1:
		make_container_id(c->container_id, "0123456789abcdef", 7, i);
		snprintf(c->path, sizeof(c->path), "/system.slice/docker-%s.scope", c->container_id);
		c->info.runtime = "docker";
		break;
	case 2:
		make_container_id(c->container_id, "fedcba9876543210", 3, i);
		snprintf(c->pod_uid, sizeof(c->pod_uid), "1234%04d-aaaa-bbbb-cccc-0123456789ab", i);
		snprintf(c->path, sizeof(c->path),
			 "/kubepods.slice/kubepods-burstable.slice/cri-containerd-%s.scope",
			 c->container_id);
		c->info.runtime = "containerd";
		c->info.qos = "burstable";
		c->info.slice = "kubepods-burstable.slice";
		break;
	default:
		/* hostile but valid: quotes, backslash, newline, UTF-8 */
		snprintf(c->path, sizeof(c->path), "/user.slice/we\"ird\\ name\n%d-\xc3\xa9t\xc3\xa9.scope",
			 i);
		c->info.slice = "user.slice";
		break;
	}
	for (size_t e = 0; e < N_EVENTS; e++) {
		bool supported = e < 4;

		c->ctr[e][0] = supported ? rnd() % 10000000000ull : 0;
		c->ctr[e][1] = supported ? 2000000000ull + (uint64_t)i : 0;
		c->ctr[e][2] = supported ? c->ctr[e][1] - (e == 3 ? 500000000ull : 0) : 0;
	}
	/* Stacks as real profiles have them: each shares a prefix with an
	 * earlier one and goes on along a call graph of small fan-out. */
	for (int s = 0; s < N_STACKS; s++) {
		struct exp_stack *st = &c->stacks[s];
		int keep = 0;

		st->depth = 5 + (int)(rnd() % (MAX_DEPTH - 5));
		if (s) {
			const struct exp_stack *parent = &c->stacks[rnd() % (uint64_t)s];

			keep = (int)(rnd() % (uint64_t)parent->depth);
			if (keep > st->depth - 1)
				keep = st->depth - 1;
			memcpy(st->frame, parent->frame, (size_t)keep * sizeof(st->frame[0]));
		}
		for (int d = keep; d < st->depth; d++)
			st->frame[d] = d ? (int)((uint64_t)st->frame[d - 1] * 31 + 7 + rnd() % 5) % N_VOCAB
					 : i % 3;
		st->count = 1 + rnd() % 500;
	}
}

static void make_realistic(struct realistic *r)
{
	memset(r, 0, sizeof(*r));
	rng_state = 0x9e3779b97f4a7c15ull;
	make_vocab(r);
	for (int i = 0; i < N_CG; i++)
		make_cgroup(&r->cg[i], i);
	for (int i = 0; i < 5000; i++)
		hist_add(&r->values, (int64_t)(rnd() % 100000) - 10);
	for (int i = 0; i < 3000; i++)
		hist_add(&r->latency, (int64_t)(rnd() % 10000000));
	r->self = (struct wire_self){ .samples = 123456,
				      .lost_samples = 7,
				      .unwind_failures = 3,
				      .push_failures = 2,
				      .push_rejected = 1,
				      .spool_bytes = 65536,
				      .spool_batches = 4,
				      .spool_dropped_batches = 1,
				      .stacks_refused = 9 };
}

static void free_realistic(struct realistic *r)
{
	for (int i = 0; i < N_VOCAB; i++)
		free(r->vocab[i]);
}

static struct wire_batch *build_realistic(const struct realistic *r)
{
	struct wire_batch *b = wire_batch_new("db-host-01", "0123456789abcdef0123456789abcdef",
					      "agent-5f3c", "0.1.0", 42, 1700000000000000000ull,
					      1700000010000000000ull);

	assert_non_null(b);
	for (int i = 0; i < N_CG; i++) {
		const struct exp_cg *c = &r->cg[i];
		const char *frames[MAX_DEPTH];
		int cg, prof;

		cg = wire_add_cgroup(b, c->path, c->id, &c->info);
		assert_int_equal(cg, i);
		for (size_t e = 0; e < N_EVENTS; e++)
			assert_int_equal(wire_add_counter(b, cg, events[e], c->ctr[e][0], c->ctr[e][1],
							  c->ctr[e][2], e < 4),
					 0);
		prof = wire_add_profile(b, cg, "cpu-clock", 0, 99);
		assert_int_equal(prof, i);
		for (int s = 0; s < N_STACKS; s++) {
			const struct exp_stack *st = &c->stacks[s];

			for (int d = 0; d < st->depth; d++)
				frames[d] = r->vocab[st->frame[d]];
			assert_int_equal(wire_add_stack(b, prof, frames, (size_t)st->depth, st->count), 0);
		}
		if (i < 4) {
			assert_int_equal(wire_add_probe(b, cg, "u:/usr/lib/libc.so.6:malloc size=%di",
							1000 + (uint64_t)i, &r->values, NULL),
					 0);
			assert_int_equal(wire_add_probe(b, cg, "sdt:postgresql:query__start",
							500 + (uint64_t)i, NULL, &r->latency),
					 0);
		}
	}
	wire_set_self(b, &r->self);
	return b;
}

static void check_hist(const Cgperf__V1__Histogram *m, const struct hist *h)
{
	assert_non_null(m);
	assert_int_equal(m->count, h->count);
	assert_int_equal(m->negative, h->negative);
	assert_int_equal(m->sum, h->sum);
	assert_int_equal(m->min, h->min);
	assert_int_equal(m->max, h->max);
	for (int k = 0; k < HIST_BUCKETS; k++) {
		uint64_t want = h->b[k], got = 0;

		if ((uint32_t)k >= m->offset && (size_t)k - m->offset < m->n_buckets)
			got = m->buckets[k - m->offset];
		assert_int_equal(got, want);
	}
}

static void check_realistic(const Cgperf__V1__Batch *m, const struct realistic *r)
{
	size_t nprobe = 0;

	assert_int_equal(m->schema_version, WIRE_SCHEMA_VERSION);
	assert_string_equal(m->host, "db-host-01");
	assert_string_equal(m->machine_id, "0123456789abcdef0123456789abcdef");
	assert_string_equal(m->agent_id, "agent-5f3c");
	assert_string_equal(m->agent_version, "0.1.0");
	assert_int_equal(m->seq, 42);
	assert_int_equal(m->start_ns, 1700000000000000000ull);
	assert_int_equal(m->end_ns, 1700000010000000000ull);
	assert_string_equal(m->strings[0], "");

	assert_int_equal(m->n_cgroups, N_CG);
	assert_int_equal(m->n_counters, N_CG * N_EVENTS);
	assert_int_equal(m->n_profiles, N_CG);
	for (size_t i = 0; i < N_CG; i++) {
		const struct exp_cg *c = &r->cg[i];
		const Cgperf__V1__Cgroup *g = m->cgroups[i];
		const Cgperf__V1__Profile *p = m->profiles[i];

		assert_string_equal(wire_string(m, g->path), c->path);
		assert_int_equal(g->id, c->id);
		assert_string_equal(wire_string(m, g->container_id), c->container_id);
		assert_string_equal(wire_string(m, g->runtime), c->info.runtime ? c->info.runtime : "");
		assert_string_equal(wire_string(m, g->pod_uid), c->pod_uid);
		assert_string_equal(wire_string(m, g->qos), c->info.qos ? c->info.qos : "");
		assert_string_equal(wire_string(m, g->unit), c->info.unit ? c->info.unit : "");
		assert_string_equal(wire_string(m, g->slice), c->info.slice);
		assert_int_equal(g->k8s_namespace, 0);

		for (size_t e = 0; e < N_EVENTS; e++) {
			const Cgperf__V1__Counter *k = m->counters[i * N_EVENTS + e];

			assert_int_equal(k->cgroup, i);
			assert_string_equal(wire_string(m, k->event), events[e]);
			assert_int_equal(k->value, c->ctr[e][0]);
			assert_int_equal(k->time_enabled, c->ctr[e][1]);
			assert_int_equal(k->time_running, c->ctr[e][2]);
			assert_int_equal(k->supported, e < 4);
		}

		assert_int_equal(p->cgroup, i);
		assert_string_equal(wire_string(m, p->event), "cpu-clock");
		assert_int_equal(p->frequency, 99);
		assert_int_equal(p->period, 0);
		assert_int_equal(p->n_stacks, N_STACKS);
		for (size_t s = 0; s < N_STACKS; s++) {
			const Cgperf__V1__Stack *st = p->stacks[s];

			assert_int_equal(st->n_frames, c->stacks[s].depth);
			assert_int_equal(st->count, c->stacks[s].count);
			for (size_t d = 0; d < st->n_frames; d++)
				assert_string_equal(wire_string(m, st->frames[d]),
						    r->vocab[c->stacks[s].frame[d]]);
		}
	}

	assert_int_equal(m->n_probes, 8);
	for (size_t i = 0; i < m->n_probes; i++) {
		const Cgperf__V1__Probe *p = m->probes[i];

		assert_int_equal(p->cgroup, i / 2);
		if (i % 2 == 0) {
			assert_string_equal(wire_string(m, p->label),
					    "u:/usr/lib/libc.so.6:malloc size=%di");
			assert_int_equal(p->hits, 1000 + i / 2);
			check_hist(p->values, &r->values);
			assert_null(p->latency_ns);
		} else {
			assert_string_equal(wire_string(m, p->label), "sdt:postgresql:query__start");
			assert_int_equal(p->hits, 500 + i / 2);
			assert_null(p->values);
			check_hist(p->latency_ns, &r->latency);
		}
		nprobe++;
	}
	assert_int_equal(nprobe, 8);

	assert_non_null(m->self);
	assert_int_equal(m->self->samples, r->self.samples);
	assert_int_equal(m->self->lost_samples, r->self.lost_samples);
	assert_int_equal(m->self->unwind_failures, r->self.unwind_failures);
	assert_int_equal(m->self->push_failures, r->self.push_failures);
	assert_int_equal(m->self->push_rejected, r->self.push_rejected);
	assert_int_equal(m->self->spool_bytes, r->self.spool_bytes);
	assert_int_equal(m->self->spool_batches, r->self.spool_batches);
	assert_int_equal(m->self->spool_dropped_batches, r->self.spool_dropped_batches);
	assert_int_equal(m->self->stacks_refused, r->self.stacks_refused);
}

static void test_round_trip(void **state)
{
	struct realistic *r = malloc(sizeof(*r));
	struct wire_batch *b;
	uint8_t *raw, *gz, *raw2;
	size_t rawlen, gzlen, rawlen2, frames = 0;
	Cgperf__V1__Batch *m;
	char err[256];

	assert_non_null(r);
	make_realistic(r);
	b = build_realistic(r);
	assert_int_equal(wire_encode(b, &raw, &rawlen), 0);
	assert_int_equal(wire_encode_gzip(b, &gz, &gzlen), 0);
	/* encoding does not change the batch */
	assert_int_equal(wire_encode(b, &raw2, &rawlen2), 0);
	assert_int_equal(rawlen2, rawlen);
	assert_memory_equal(raw2, raw, rawlen);
	free(raw2);
	assert_true(gz[0] == 0x1f && gz[1] == 0x8b);
	for (int i = 0; i < N_CG; i++)
		for (int s = 0; s < N_STACKS; s++)
			frames += (size_t)r->cg[i].stacks[s].depth;
	print_message("typical batch: %d cgroups, %zu counters, %d stacks (%zu frames), "
		      "8 probes: %zu bytes protobuf, %zu bytes gzip (%.1f%%)\n",
		      N_CG, N_CG * N_EVENTS, N_CG * N_STACKS, frames, rawlen, gzlen,
		      100.0 * (double)gzlen / (double)rawlen);
	assert_true(gzlen < rawlen / 2);

	m = wire_decode(gz, gzlen, 0, err, sizeof(err));
	if (!m)
		fail_msg("gzip body refused: %s", err);
	check_realistic(m, r);
	wire_batch_decoded_free(m);

	m = wire_decode(raw, rawlen, 0, err, sizeof(err));
	if (!m)
		fail_msg("raw body refused: %s", err);
	check_realistic(m, r);
	wire_batch_decoded_free(m);

	/* the cap: exactly the decompressed size passes, a byte less does not */
	m = wire_decode(gz, gzlen, rawlen, err, sizeof(err));
	assert_non_null(m);
	wire_batch_decoded_free(m);
	errno = 0;
	m = wire_decode(gz, gzlen, rawlen - 1, err, sizeof(err));
	assert_null(m);
	assert_int_equal(errno, EMSGSIZE);
	assert_non_null(strstr(err, "decompressed body exceeds"));

	/* a few truncations of the big body (every prefix of a small one is
	 * tried in test_truncated) */
	for (size_t cut = 1; cut < 64; cut++) {
		m = wire_decode(raw, rawlen - cut, 0, err, sizeof(err));
		assert_null(m);
		m = wire_decode(gz, gzlen - cut, 0, err, sizeof(err));
		assert_null(m);
		assert_non_null(strstr(err, "gzip: truncated"));
	}

	free(raw);
	free(gz);
	wire_batch_free(b);
	free_realistic(r);
	free(r);
}

/* ---- the builder ---- */

static struct wire_batch *small_batch(void)
{
	struct wire_batch *b = wire_batch_new("h", NULL, "a", NULL, 1, 10, 20);

	assert_non_null(b);
	return b;
}

static Cgperf__V1__Batch *roundtrip(struct wire_batch *b)
{
	Cgperf__V1__Batch *m;
	uint8_t *buf;
	size_t len;
	char err[256];

	assert_int_equal(wire_encode_gzip(b, &buf, &len), 0);
	m = wire_decode(buf, len, 0, err, sizeof(err));
	if (!m)
		fail_msg("refused: %s", err);
	free(buf);
	return m;
}

static void test_new_args(void **state)
{
	errno = 0;
	assert_null(wire_batch_new("h", NULL, "", NULL, 1, 1, 2));
	assert_int_equal(errno, EINVAL);
	assert_null(wire_batch_new("h", NULL, NULL, NULL, 1, 1, 2));
	assert_null(wire_batch_new(NULL, NULL, "a", NULL, 1, 1, 2));
	assert_null(wire_batch_new("h", NULL, "a", NULL, 1, 3, 2));
	assert_null(wire_batch_new("h", NULL, "a", NULL, UINT64_MAX, 1, 2));
	assert_null(wire_batch_new("h", NULL, "a", NULL, 1, 1, UINT64_MAX));
	wire_batch_free(NULL);
}

static void test_intern(void **state)
{
	struct wire_batch *b = small_batch();
	char *big = malloc(20001), *euro = malloc(9001);
	Cgperf__V1__Batch *m;
	int a, a2, c, bad, id_big, id_euro;

	memset(big, 'x', 20000);
	big[20000] = '\0';
	for (int i = 0; i < 3000; i++)
		memcpy(euro + 3 * i, "\xe2\x82\xac", 3);
	euro[9000] = '\0';

	assert_int_equal(wire_intern(b, ""), 0);
	assert_int_equal(wire_intern(b, NULL), 0);
	a = wire_intern(b, "ExecScan");
	c = wire_intern(b, "ExecSort");
	a2 = wire_intern(b, "ExecScan");
	assert_true(a > 0 && c > 0 && a != c);
	assert_int_equal(a, a2);
	bad = wire_intern(b, "a\xff" "b\xc0\xaf" "c\xed\xa0\x80");
	assert_int_equal(wire_intern(b, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd" "c\xef\xbf\xbd"
					"\xef\xbf\xbd\xef\xbf\xbd"),
			 bad);
	id_big = wire_intern(b, big);
	id_euro = wire_intern(b, euro);
	/* many strings: the hash grows */
	for (int i = 0; i < 5000; i++) {
		char s[32];

		snprintf(s, sizeof(s), "fn%d", i);
		assert_int_equal(wire_intern(b, s), wire_intern(b, s));
	}
	assert_int_equal(wire_intern(b, "ExecScan"), a);

	m = roundtrip(b);
	assert_string_equal(m->strings[a], "ExecScan");
	assert_int_equal(strlen(m->strings[id_big]), WIRE_STRING_MAX);
	/* cut on a character boundary: 2730 whole euro signs */
	assert_int_equal(strlen(m->strings[id_euro]), 8190);
	assert_int_equal(m->n_strings, 5000 + 6);
	wire_batch_decoded_free(m);
	wire_batch_free(b);
	free(big);
	free(euro);
}

static void test_header_cleaned(void **state)
{
	char host[400];
	struct wire_batch *b;
	Cgperf__V1__Batch *m;

	memset(host, 'h', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	host[3] = '\xff';
	b = wire_batch_new(host, "m", "agent\xc3", "v", 1, 1, 1);
	assert_non_null(b);
	m = roundtrip(b);
	assert_int_equal(strlen(m->host), WIRE_HEADER_MAX); /* U+FFFD for the bad byte, then cut */
	assert_memory_equal(m->host, "hhh\xef\xbf\xbdhh", 8);
	assert_string_equal(m->agent_id, "agent\xef\xbf\xbd");
	assert_string_equal(m->machine_id, "m");
	wire_batch_decoded_free(m);
	wire_batch_free(b);
}

static void test_cgroups(void **state)
{
	struct wire_batch *b = small_batch();
	struct wire_cgroup_info i1 = { .runtime = "docker" };
	struct wire_cgroup_info i2 = { .runtime = "podman", .container_id = "abc", .unit = "" };
	Cgperf__V1__Batch *m;
	int a, c;

	assert_int_equal(wire_add_cgroup(b, "", 1, NULL), -EINVAL);
	assert_int_equal(wire_add_cgroup(b, NULL, 1, NULL), -EINVAL);
	a = wire_add_cgroup(b, "/docker/abc", 0, &i1);
	c = wire_add_cgroup(b, "/", 1, NULL);
	assert_int_equal(a, 0);
	assert_int_equal(c, 1);
	/* same path: same index, unknown fields filled, known ones kept */
	assert_int_equal(wire_add_cgroup(b, "/docker/abc", 77, &i2), a);
	/* a cgroup path that is also a frame name is still one string */
	assert_int_equal(wire_intern(b, "/"), wire_intern(b, "/"));
	m = roundtrip(b);
	assert_int_equal(m->n_cgroups, 2);
	assert_string_equal(wire_string(m, m->cgroups[0]->runtime), "docker");
	assert_string_equal(wire_string(m, m->cgroups[0]->container_id), "abc");
	assert_int_equal(m->cgroups[0]->id, 77);
	assert_int_equal(m->cgroups[0]->unit, 0);
	assert_string_equal(wire_string(m, m->cgroups[1]->path), "/");
	wire_batch_decoded_free(m);
	wire_batch_free(b);
}

static void test_counters_args(void **state)
{
	struct wire_batch *b = small_batch();
	Cgperf__V1__Batch *m;
	int cg = wire_add_cgroup(b, "/a", 5, NULL);

	assert_int_equal(wire_add_counter(b, cg + 1, "x", 1, 1, 1, true), -EINVAL);
	assert_int_equal(wire_add_counter(b, -1, "x", 1, 1, 1, true), -EINVAL);
	assert_int_equal(wire_add_counter(b, cg, "", 1, 1, 1, true), -EINVAL);
	assert_int_equal(wire_add_counter(b, cg, NULL, 1, 1, 1, true), -EINVAL);
	assert_int_equal(wire_add_counter(b, cg, "x", 1, 1, 2, true), -EINVAL);
	assert_int_equal(wire_add_counter(NULL, cg, "x", 1, 1, 1, true), -EINVAL);
	/* saturation keeps running <= enabled */
	assert_int_equal(wire_add_counter(b, cg, "x", UINT64_MAX, UINT64_MAX, UINT64_MAX - 1, true),
			 0);
	assert_int_equal(wire_add_counter(b, cg, "cycles", 0, 0, 0, false), 0);
	m = roundtrip(b);
	assert_int_equal(m->n_counters, 2);
	assert_int_equal(m->counters[0]->value, INT64_MAX);
	assert_int_equal(m->counters[0]->time_enabled, INT64_MAX);
	assert_int_equal(m->counters[0]->time_running, INT64_MAX);
	assert_false(m->counters[1]->supported);
	wire_batch_decoded_free(m);
	wire_batch_free(b);
}

static void test_stacks(void **state)
{
	struct wire_batch *b = small_batch();
	const char *deep[2000], *two[] = { "main", "leaf" }, *hole[] = { "main", "" };
	char names[2000][16];
	Cgperf__V1__Batch *m;
	int cg = wire_add_cgroup(b, "/a", 0, NULL), p, q;

	for (int i = 0; i < 2000; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		deep[i] = names[i];
	}
	p = wire_add_profile(b, cg, "cpu-clock", 0, 99);
	q = wire_add_profile(b, cg, "sched:sched_switch", 1, 0);
	assert_true(p >= 0 && q >= 0 && p != q);
	assert_int_equal(wire_add_profile(b, cg, "cpu-clock", 0, 99), p);
	assert_int_equal(wire_add_profile(b, cg + 1, "cpu-clock", 0, 99), -EINVAL);
	assert_int_equal(wire_add_profile(b, cg, "", 0, 99), -EINVAL);

	assert_int_equal(wire_add_stack(b, p + 5, two, 2, 1), -EINVAL);
	assert_int_equal(wire_add_stack(b, p, two, 0, 1), -EINVAL);
	assert_int_equal(wire_add_stack(b, p, hole, 2, 1), -EINVAL);
	assert_int_equal(wire_add_stack(b, p, two, 2, 3), 0);
	assert_int_equal(wire_add_stack(b, q, deep, 2000, 1), 0);
	assert_int_equal(wire_add_stack(b, p, deep, WIRE_STACK_MAX, 1), 0);
	/* counts saturate so the profile's total stays <= 2^63-1 */
	assert_int_equal(wire_add_stack(b, p, two, 2, UINT64_MAX), 0);
	assert_int_equal(wire_add_stack(b, p, two, 2, 10), 0);

	m = roundtrip(b);
	assert_int_equal(m->n_profiles, 2);
	assert_int_equal(m->profiles[0]->n_stacks, 4);
	assert_int_equal(m->profiles[1]->n_stacks, 1);
	{
		const Cgperf__V1__Stack *s = m->profiles[1]->stacks[0];

		assert_int_equal(s->n_frames, WIRE_STACK_MAX);
		assert_string_equal(wire_string(m, s->frames[0]), WIRE_TRUNCATED_FRAME);
		assert_string_equal(wire_string(m, s->frames[1]), "f977");
		assert_string_equal(wire_string(m, s->frames[WIRE_STACK_MAX - 1]), "f1999");
	}
	assert_int_equal(m->profiles[0]->stacks[0]->count, 3);
	assert_int_equal(m->profiles[0]->stacks[1]->n_frames, WIRE_STACK_MAX);
	assert_int_equal(m->profiles[0]->stacks[2]->count, INT64_MAX - 4);
	assert_int_equal(m->profiles[0]->stacks[3]->count, 0);
	assert_int_equal(m->profiles[1]->period, 1);
	wire_batch_decoded_free(m);
	wire_batch_free(b);
}

static const char BID_A[] = "4f0c8a1e2d3b5a6978e0f1d2c3b4a59687786950";
static const char BID_B[] = "0123456789abcdef0123456789abcdef";

static void test_modules(void **state)
{
	struct wire_batch *b = small_batch();
	const char *deep[1500], *two[] = { "main", "leaf" }, *three[] = { "comm", "main", "leaf" };
	char names[1500][16];
	int deep_mod[1500];
	Cgperf__V1__Batch *m;
	int cg = wire_add_cgroup(b, "/a", 0, NULL), p, a, k, v, x;

	p = wire_add_profile(b, cg, "cpu-clock", 0, 99);
	assert_true(p >= 0);
	assert_int_equal(wire_add_module(b, NULL, BID_A), -EINVAL);
	assert_int_equal(wire_add_module(b, "", BID_A), -EINVAL);
	a = wire_add_module(b, "/usr/lib/postgresql/15/bin/postgres", BID_A);
	k = wire_add_module(b, "[kernel.kallsyms]", NULL);
	v = wire_add_module(b, "[vdso]", BID_B);
	assert_int_equal(a, 0);
	assert_int_equal(k, 1);
	assert_int_equal(v, 2);
	/* interned by (path, build-id) */
	assert_int_equal(wire_add_module(b, "/usr/lib/postgresql/15/bin/postgres", BID_A), a);
	assert_int_equal(wire_add_module(b, "[kernel.kallsyms]", ""), k);
	/* the same path with another build-id (replaced on disk) is another module */
	x = wire_add_module(b, "/usr/lib/postgresql/15/bin/postgres", BID_B);
	assert_int_equal(x, 3);
	/* build-ids the decoder would refuse are sent as "", upper case lowered */
	assert_int_equal(wire_add_module(b, "/bad1", "xyz0"), 4);
	assert_int_equal(wire_add_module(b, "/bad2", "abc"), 5);
	{
		char big[WIRE_BUILD_ID_MAX + 3];

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		assert_int_equal(wire_add_module(b, "/bad3", big), 6);
		big[WIRE_BUILD_ID_MAX] = '\0';
		assert_int_equal(wire_add_module(b, "/max", big), 7);
	}
	assert_int_equal(wire_add_module(b, "/upper", "ABCDEF01"), 8);
	assert_int_equal(wire_add_module(b, "/upper", "abcdef01"), 8);

	/* indexes must come from wire_add_module() */
	assert_int_equal(wire_add_stack_mod(b, p, two, (const int[]){ a, 9 }, 2, 1), -EINVAL);
	assert_int_equal(wire_add_stack_mod(b, p, two, (const int[]){ -2, a }, 2, 1), -EINVAL);
	/* stack 0 with modules, 1 without, 2 with: the pool gap stays 0 */
	assert_int_equal(wire_add_stack_mod(b, p, three, (const int[]){ -1, a, k }, 3, 5), 0);
	assert_int_equal(wire_add_stack(b, p, two, 2, 1), 0);
	assert_int_equal(wire_add_stack_mod(b, p, two, (const int[]){ v, x }, 2, 2), 0);
	/* a too-deep stack: frames and modules stay aligned under [truncated] */
	for (int i = 0; i < 1500; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		deep[i] = names[i];
		deep_mod[i] = i % 3 == 0 ? -1 : i % 3 == 1 ? a : k;
	}
	assert_int_equal(wire_add_stack_mod(b, p, deep, deep_mod, 1500, 1), 0);

	m = roundtrip(b);
	assert_int_equal(m->n_modules, 9);
	assert_string_equal(wire_string(m, m->modules[a]->path),
			    "/usr/lib/postgresql/15/bin/postgres");
	assert_string_equal(m->modules[a]->build_id, BID_A);
	assert_string_equal(wire_string(m, m->modules[k]->path), "[kernel.kallsyms]");
	assert_string_equal(m->modules[k]->build_id, "");
	assert_string_equal(m->modules[v]->build_id, BID_B);
	assert_string_equal(m->modules[x]->build_id, BID_B);
	assert_int_equal(m->modules[x]->path, m->modules[a]->path);
	for (int i = 4; i <= 6; i++)
		assert_string_equal(m->modules[i]->build_id, "");
	assert_int_equal(strlen(m->modules[7]->build_id), WIRE_BUILD_ID_MAX);
	assert_string_equal(m->modules[8]->build_id, "abcdef01");

	const Cgperf__V1__Profile *pr = m->profiles[0];

	assert_int_equal(pr->n_stacks, 4);
	assert_int_equal(pr->stacks[0]->n_modules, 3);
	assert_int_equal(pr->stacks[0]->modules[0], 0);
	assert_int_equal(pr->stacks[0]->modules[1], a + 1);
	assert_int_equal(pr->stacks[0]->modules[2], k + 1);
	assert_int_equal(pr->stacks[1]->n_modules, 0);
	assert_int_equal(pr->stacks[2]->n_modules, 2);
	assert_int_equal(pr->stacks[2]->modules[0], v + 1);
	assert_int_equal(pr->stacks[2]->modules[1], x + 1);
	{
		const Cgperf__V1__Stack *s = pr->stacks[3];

		assert_int_equal(s->n_frames, WIRE_STACK_MAX);
		assert_int_equal(s->n_modules, WIRE_STACK_MAX);
		assert_string_equal(wire_string(m, s->frames[0]), WIRE_TRUNCATED_FRAME);
		assert_int_equal(s->modules[0], 0);
		/* every other frame has the module its name says it has */
		for (size_t f = 1; f < s->n_frames; f++) {
			int i = atoi(wire_string(m, s->frames[f]) + 1);

			assert_int_equal(s->modules[f], (uint32_t)(deep_mod[i] + 1));
		}
		assert_string_equal(wire_string(m, s->frames[1]), "f477");
	}
	wire_batch_decoded_free(m);
	wire_batch_free(b);
}

static void test_probes_args(void **state)
{
	struct wire_batch *b = small_batch();
	struct hist h = { 0 }, bad;
	int cg = wire_add_cgroup(b, "/a", 0, NULL);
	Cgperf__V1__Batch *m;

	hist_add(&h, -5);
	hist_add(&h, 0);
	hist_add(&h, 1000);
	bad = h;
	bad.count++;
	assert_int_equal(wire_add_probe(b, cg, "p", 1, &bad, NULL), -EINVAL);
	bad = h;
	bad.min = bad.max + 1;
	assert_int_equal(wire_add_probe(b, cg, "p", 1, NULL, &bad), -EINVAL);
	assert_int_equal(wire_add_probe(b, cg, "", 1, NULL, NULL), -EINVAL);
	assert_int_equal(wire_add_probe(b, 3, "p", 1, NULL, NULL), -EINVAL);
	bad = (struct hist){ 0 };
	assert_int_equal(wire_add_probe(b, cg, "p", 0, &bad, &h), 0);
	h.sum = UINT64_MAX; /* hist.c saturates at UINT64_MAX, the wire at 2^63-1 */
	assert_int_equal(wire_add_probe(b, cg, "p", 0, &h, NULL), 0);
	m = roundtrip(b);
	assert_int_equal(m->probes[0]->values->count, 0);
	assert_int_equal(m->probes[0]->values->n_buckets, 0);
	assert_int_equal(m->probes[0]->latency_ns->negative, 1);
	assert_int_equal(m->probes[0]->latency_ns->offset, 0);
	assert_int_equal(m->probes[0]->latency_ns->n_buckets, hist_bucket(1000) + 1);
	assert_int_equal(m->probes[1]->values->sum, INT64_MAX);
	wire_batch_decoded_free(m);
	wire_batch_free(b);
}

/*
 * One torture run: strings and modules interned, each retried once when an
 * allocation failed. A refused insert must leave the maps as they were: the
 * retry gets the next id, and every key keeps the id it first got.
 */
static void intern_run(void *ctx)
{
	struct wire_batch *b = wire_batch_new("h", "", "a", "v", 1, 0, 1);
	char s[32];
	int next = 1, mods = 0, id;

	(void)ctx;
	if (!b)
		return;
	for (int i = 0; i < 300; i++) {
		snprintf(s, sizeof(s), "fn%d", i % 200);
		id = wire_intern(b, s);
		if (id < 0)
			id = wire_intern(b, s);
		assert_true(id > 0);
		if (id == next)
			next++;
		assert_int_equal(id, i < 200 ? i + 1 : i - 200 + 1);
	}
	for (int i = 0; i < 40; i++) {
		snprintf(s, sizeof(s), "%08x", i % 20);
		id = wire_add_module(b, "/bin/x", s);
		if (id < 0)
			id = wire_add_module(b, "/bin/x", s);
		if (id == mods)
			mods++;
		assert_int_equal(id, i % 20);
	}
	assert_int_equal(next, 201);
	assert_int_equal(mods, 20);
	wire_batch_free(b);
}

static void test_intern_alloc_failures(void **state)
{
	(void)state;
	tl_alloc_require();
	tl_alloc_torture(intern_run, NULL, 100000);
}

TL_MAIN(test_round_trip, test_new_args, test_intern, test_header_cleaned, test_cgroups,
	test_counters_args, test_stacks, test_probes_args, test_modules, test_intern_alloc_failures)
