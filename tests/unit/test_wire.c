// SPDX-License-Identifier: MIT
/*
 * agent/wire: a realistic batch survives encode -> gzip -> decode intact;
 * the builder cleans what it is given; and the decoder refuses, with a
 * reason, every kind of bad body a collector may be sent: bad references,
 * bad text, bad numbers, truncation, noise, gzip bombs, memory bombs.
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
	char container_id[65];
	const char *runtime, *qos, *unit, *slice;
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
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
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

static void make_cgroup(struct exp_cg *c, int i)
{
	memset(c, 0, sizeof(*c));
	c->id = 1000 + (uint64_t)i * 7;
	c->slice = "system.slice";
	switch (i % 4) {
	case 0:
		snprintf(c->path, sizeof(c->path), "/system.slice/postgresql@15-main%d.service", i);
		c->unit = "postgresql@15-main.service";
		break;
	case 1:
		for (int k = 0; k < 64; k++)
			c->container_id[k] = "0123456789abcdef"[(i * 7 + k) % 16];
		c->container_id[0] = "0123456789abcdef"[i / 16 % 16];
		c->container_id[1] = "0123456789abcdef"[i % 16];
		snprintf(c->path, sizeof(c->path), "/system.slice/docker-%s.scope", c->container_id);
		c->runtime = "docker";
		break;
	case 2:
		for (int k = 0; k < 64; k++)
			c->container_id[k] = "fedcba9876543210"[(i * 3 + k) % 16];
		c->container_id[0] = "0123456789abcdef"[i / 16 % 16];
		c->container_id[1] = "0123456789abcdef"[i % 16];
		snprintf(c->pod_uid, sizeof(c->pod_uid), "1234%04d-aaaa-bbbb-cccc-0123456789ab", i);
		snprintf(c->path, sizeof(c->path),
			 "/kubepods.slice/kubepods-burstable.slice/cri-containerd-%s.scope",
			 c->container_id);
		c->runtime = "containerd";
		c->qos = "burstable";
		c->slice = "kubepods-burstable.slice";
		break;
	default:
		/* hostile but valid: quotes, backslash, newline, UTF-8 */
		snprintf(c->path, sizeof(c->path), "/user.slice/we\"ird\\ name\n%d-\xc3\xa9t\xc3\xa9.scope",
			 i);
		c->slice = "user.slice";
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
		struct wire_cgroup_info info = { .container_id = c->container_id,
						 .runtime = c->runtime,
						 .pod_uid = c->pod_uid,
						 .qos = c->qos,
						 .unit = c->unit,
						 .slice = c->slice };
		const char *frames[MAX_DEPTH];
		int cg, prof;

		cg = wire_add_cgroup(b, c->path, c->id, &info);
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
		assert_string_equal(wire_string(m, g->runtime), c->runtime ? c->runtime : "");
		assert_string_equal(wire_string(m, g->pod_uid), c->pod_uid);
		assert_string_equal(wire_string(m, g->qos), c->qos ? c->qos : "");
		assert_string_equal(wire_string(m, g->unit), c->unit ? c->unit : "");
		assert_string_equal(wire_string(m, g->slice), c->slice);
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

/* ---- the decoder, against hand-made bad batches ---- */

/* A minimal valid batch in protobuf-c structs, to be broken one way per
 * case. Everything lives in the fixture: nothing to free. */
struct fx {
	Cgperf__V1__Batch b;
	Cgperf__V1__AgentStats self;
	char *strings[4];
	Cgperf__V1__Cgroup cg, *cgp[1];
	Cgperf__V1__Counter ctr, *ctrp[1];
	Cgperf__V1__Stack stk, stk2, *stkp[2];
	uint32_t frames[2];
	Cgperf__V1__Profile prof, *profp[1];
	Cgperf__V1__Histogram hist;
	uint64_t buckets[3];
	Cgperf__V1__Probe probe, *probep[1];
	Cgperf__V1__Module mod, *modp[1];
	uint32_t mods[2];
	char bid[WIRE_BUILD_ID_MAX + 2];
	char big[WIRE_STRING_MAX + 2];
	uint32_t deep[WIRE_STACK_MAX + 1];
};

static void fx_init(struct fx *f)
{
	static char s0[] = "", s1[] = "/pg.slice", s2[] = "task-clock", s3[] = "main";
	Cgperf__V1__Batch b = CGPERF__V1__BATCH__INIT;
	Cgperf__V1__AgentStats self = CGPERF__V1__AGENT_STATS__INIT;
	Cgperf__V1__Cgroup cg = CGPERF__V1__CGROUP__INIT;
	Cgperf__V1__Counter ctr = CGPERF__V1__COUNTER__INIT;
	Cgperf__V1__Stack stk = CGPERF__V1__STACK__INIT;
	Cgperf__V1__Profile prof = CGPERF__V1__PROFILE__INIT;
	Cgperf__V1__Histogram hist = CGPERF__V1__HISTOGRAM__INIT;
	Cgperf__V1__Probe probe = CGPERF__V1__PROBE__INIT;
	Cgperf__V1__Module mod = CGPERF__V1__MODULE__INIT;

	memset(f, 0, sizeof(*f));
	f->strings[0] = s0;
	f->strings[1] = s1;
	f->strings[2] = s2;
	f->strings[3] = s3;
	f->b = b;
	f->b.schema_version = 1;
	f->b.host = (char *)"h";
	f->b.agent_id = (char *)"a";
	f->b.seq = 1;
	f->b.start_ns = 10;
	f->b.end_ns = 20;
	f->b.n_strings = 4;
	f->b.strings = f->strings;
	f->self = self;
	f->self.samples = 5;
	f->b.self = &f->self;

	f->cg = cg;
	f->cg.path = 1;
	f->cgp[0] = &f->cg;
	f->b.n_cgroups = 1;
	f->b.cgroups = f->cgp;

	f->ctr = ctr;
	f->ctr.event = 2;
	f->ctr.value = 100;
	f->ctr.time_enabled = 50;
	f->ctr.time_running = 40;
	f->ctr.supported = 1;
	f->ctrp[0] = &f->ctr;
	f->b.n_counters = 1;
	f->b.counters = f->ctrp;

	f->frames[0] = 3;
	f->frames[1] = 2;
	f->stk = stk;
	f->stk.n_frames = 2;
	f->stk.frames = f->frames;
	f->stk.count = 7;
	/* "main" in module 0, "task-clock" (standing in for a comm) in none */
	snprintf(f->bid, sizeof(f->bid), "%s", BID_A);
	f->mod = mod;
	f->mod.path = 1;
	f->mod.build_id = f->bid;
	f->modp[0] = &f->mod;
	f->b.n_modules = 1;
	f->b.modules = f->modp;
	f->mods[0] = 1;
	f->mods[1] = 0;
	f->stk.n_modules = 2;
	f->stk.modules = f->mods;
	f->stk2 = f->stk;
	f->stkp[0] = &f->stk;
	f->stkp[1] = &f->stk2;
	f->prof = prof;
	f->prof.event = 2;
	f->prof.frequency = 99;
	f->prof.n_stacks = 2;
	f->prof.stacks = f->stkp;
	f->profp[0] = &f->prof;
	f->b.n_profiles = 1;
	f->b.profiles = f->profp;

	f->buckets[0] = 1;
	f->buckets[1] = 2;
	f->buckets[2] = 3;
	f->hist = hist;
	f->hist.offset = 4;
	f->hist.n_buckets = 3;
	f->hist.buckets = f->buckets;
	f->hist.count = 7;
	f->hist.negative = 1;
	f->hist.min = 8;
	f->hist.max = 50;
	f->hist.sum = 150;
	f->probe = probe;
	f->probe.label = 3;
	f->probe.hits = 9;
	f->probe.values = &f->hist;
	f->probep[0] = &f->probe;
	f->b.n_probes = 1;
	f->b.probes = f->probep;
}

static uint8_t *fx_pack(const struct fx *f, size_t *len)
{
	uint8_t *buf;

	*len = cgperf__v1__batch__get_packed_size(&f->b);
	buf = malloc(*len ? *len : 1);
	assert_non_null(buf);
	assert_int_equal(cgperf__v1__batch__pack(&f->b, buf), *len);
	return buf;
}

/* Decode @buf; expect refusal with @code and @reason in the message. */
static void expect_refused(const uint8_t *buf, size_t len, size_t max, int code,
			   const char *reason)
{
	char err[256];
	Cgperf__V1__Batch *m;

	errno = 0;
	err[0] = 'X';
	m = wire_decode(buf, len, max, err, sizeof(err));
	if (m) {
		wire_batch_decoded_free(m);
		fail_msg("accepted a body that should fail with \"%s\"", reason);
	}
	if (errno != code || !strstr(err, reason))
		fail_msg("want errno %d and \"%s\", got errno %d and \"%s\"", code, reason, errno,
			 err);
}

static void m_schema0(struct fx *f) { f->b.schema_version = 0; }
static void m_schema2(struct fx *f) { f->b.schema_version = 2; }
static void m_no_agent(struct fx *f) { f->b.agent_id = (char *)""; }
static void m_interval(struct fx *f) { f->b.start_ns = 30; }
static void m_seq(struct fx *f) { f->b.seq = (uint64_t)INT64_MAX + 1; }
static void m_no_self(struct fx *f) { f->b.self = NULL; }
static void m_self_big(struct fx *f) { f->self.spool_bytes = UINT64_MAX; }
static void m_str0(struct fx *f) { f->strings[0] = (char *)"x"; }
static void m_utf8_bad(struct fx *f) { f->strings[3] = (char *)"ma\xc3\x28in"; }
static void m_utf8_overlong(struct fx *f) { f->strings[3] = (char *)"\xc0\xaf"; }
static void m_utf8_surrogate(struct fx *f) { f->strings[2] = (char *)"x\xed\xa0\x80"; }
static void m_utf8_big(struct fx *f) { f->strings[3] = (char *)"\xf4\x90\x80\x80"; }
static void m_utf8_cut(struct fx *f) { f->strings[3] = (char *)"ab\xe2\x82"; }
static void m_host_utf8(struct fx *f) { f->b.host = (char *)"h\xff"; }
static void m_host_long(struct fx *f)
{
	memset(f->big, 'h', WIRE_HEADER_MAX + 1);
	f->b.host = f->big;
}
static void m_string_long(struct fx *f)
{
	memset(f->big, 's', WIRE_STRING_MAX + 1);
	f->strings[3] = f->big;
}
static void m_frame_range(struct fx *f) { f->frames[1] = 40; }
static void m_frame_huge(struct fx *f) { f->frames[0] = UINT32_MAX; }
static void m_frame_empty(struct fx *f) { f->frames[1] = 0; }
static void m_stack_empty(struct fx *f) { f->stk.n_frames = 0; }
static void m_stack_deep(struct fx *f)
{
	for (int i = 0; i <= WIRE_STACK_MAX; i++)
		f->deep[i] = 3;
	f->stk2.frames = f->deep;
	f->stk2.n_frames = WIRE_STACK_MAX + 1;
}
static void m_stack_count(struct fx *f) { f->stk.count = (uint64_t)INT64_MAX + 1; }
static void m_stack_sum(struct fx *f)
{
	f->stk.count = INT64_MAX;
	f->stk2.count = 1;
}
static void m_prof_cg(struct fx *f) { f->prof.cgroup = 1; }
static void m_prof_event(struct fx *f) { f->prof.event = 0; }
static void m_prof_freq(struct fx *f) { f->prof.frequency = UINT64_MAX; }
static void m_ctr_cg(struct fx *f) { f->ctr.cgroup = 7; }
static void m_ctr_event(struct fx *f) { f->ctr.event = 9; }
static void m_ctr_running(struct fx *f) { f->ctr.time_running = 51; }
static void m_ctr_value(struct fx *f) { f->ctr.value = UINT64_MAX; }
static void m_cg_path(struct fx *f) { f->cg.path = 0; }
static void m_cg_runtime(struct fx *f) { f->cg.runtime = 4; }
static void m_cg_id(struct fx *f) { f->cg.id = UINT64_MAX; }
static void m_probe_label(struct fx *f) { f->probe.label = 100; }
static void m_probe_cg(struct fx *f) { f->probe.cgroup = 2; }
static void m_hist_count(struct fx *f) { f->hist.count = 6; }
static void m_hist_range(struct fx *f) { f->hist.offset = 63; }
static void m_hist_minmax(struct fx *f) { f->hist.min = 51; }
static void m_hist_overflow(struct fx *f)
{
	f->buckets[0] = INT64_MAX;
	f->buckets[1] = INT64_MAX;
}
static void m_mods_short(struct fx *f) { f->stk.n_modules = 1; }
static void m_mods_long(struct fx *f)
{
	f->stk2.modules = f->deep;
	f->stk2.n_modules = 3;
}
static void m_mod_range(struct fx *f) { f->mods[1] = 2; }
static void m_mod_huge(struct fx *f) { f->mods[0] = UINT32_MAX; }
static void m_mod_path(struct fx *f) { f->mod.path = 0; }
static void m_mod_path_range(struct fx *f) { f->mod.path = 4; }
static void m_bid_upper(struct fx *f) { f->bid[3] = 'C'; }
static void m_bid_nonhex(struct fx *f) { f->bid[5] = 'g'; }
static void m_bid_odd(struct fx *f) { f->bid[39] = '\0'; }
static void m_bid_long(struct fx *f)
{
	memset(f->bid, 'a', WIRE_BUILD_ID_MAX + 1);
	f->bid[WIRE_BUILD_ID_MAX + 1] = '\0';
}
static void m_latency(struct fx *f)
{
	f->probe.values = NULL;
	f->probe.latency_ns = &f->hist;
	f->hist.sum = UINT64_MAX;
}

static const struct bad_case {
	const char *name;
	void (*mutate)(struct fx *f);
	const char *reason;
} bad_cases[] = {
	{ "schema missing", m_schema0, "schema_version missing" },
	{ "schema unknown", m_schema2, "schema_version 2 not supported" },
	{ "agent id missing", m_no_agent, "agent_id missing" },
	{ "interval reversed", m_interval, "interval ends before it starts" },
	{ "seq too big", m_seq, "seq 9223372036854775808" },
	{ "self missing", m_no_self, "self: the agent's figures are missing" },
	{ "self too big", m_self_big, "self: spool_bytes 18446744073709551615 above 2^63-1" },
	{ "strings[0] not empty", m_str0, "strings[0]: must be the empty string" },
	{ "bad UTF-8", m_utf8_bad, "strings[3]: not valid UTF-8 at byte 2" },
	{ "overlong UTF-8", m_utf8_overlong, "strings[3]: not valid UTF-8 at byte 0" },
	{ "surrogate", m_utf8_surrogate, "strings[2]: not valid UTF-8 at byte 1" },
	{ "past U+10FFFF", m_utf8_big, "strings[3]: not valid UTF-8 at byte 0" },
	{ "cut sequence", m_utf8_cut, "strings[3]: not valid UTF-8 at byte 2" },
	{ "host not UTF-8", m_host_utf8, "host: not valid UTF-8 at byte 1" },
	{ "host too long", m_host_long, "host: longer than 255 bytes" },
	{ "string too long", m_string_long, "strings[3]: longer than 8192 bytes" },
	{ "frame id out of range", m_frame_range,
	  "profiles[0].stacks[0].frames[1]: string id 40 out of range (4 strings)" },
	{ "frame id huge", m_frame_huge, "string id 4294967295 out of range" },
	{ "frame empty", m_frame_empty, "profiles[0].stacks[0].frames[1]: empty name" },
	{ "stack without frames", m_stack_empty, "profiles[0].stacks[0]: 0 frames (1..1024" },
	{ "stack too deep", m_stack_deep, "profiles[0].stacks[1]: 1025 frames" },
	{ "stack count too big", m_stack_count, "profiles[0].stacks[0]: count 9223372036854775808" },
	{ "stack counts overflow", m_stack_sum, "profiles[0].stacks[1]: count 1 takes the profile" },
	{ "profile cgroup", m_prof_cg, "profiles[0]: cgroup 1 out of range (1 cgroups)" },
	{ "profile event", m_prof_event, "profiles[0]: event: empty name" },
	{ "profile frequency", m_prof_freq, "profiles[0]: frequency 18446744073709551615" },
	{ "counter cgroup", m_ctr_cg, "counters[0]: cgroup 7 out of range (1 cgroups)" },
	{ "counter event", m_ctr_event, "counters[0]: event: string id 9 out of range" },
	{ "counter running > enabled", m_ctr_running,
	  "counters[0]: time_running 51 exceeds time_enabled 50" },
	{ "counter value", m_ctr_value, "counters[0]: value 18446744073709551615 above 2^63-1" },
	{ "cgroup path", m_cg_path, "cgroups[0]: path: empty name" },
	{ "cgroup runtime", m_cg_runtime, "cgroups[0]: runtime: string id 4 out of range" },
	{ "cgroup id", m_cg_id, "cgroups[0]: id 18446744073709551615" },
	{ "probe label", m_probe_label, "probes[0]: label: string id 100 out of range" },
	{ "probe cgroup", m_probe_cg, "probes[0]: cgroup 2 out of range" },
	{ "hist count", m_hist_count, "probes[0].values: count 6 is not negative + buckets (7)" },
	{ "hist buckets", m_hist_range, "probes[0].values: buckets 63+3 past bucket 64" },
	{ "hist min > max", m_hist_minmax, "probes[0].values: min 51 above max 50" },
	{ "hist overflow", m_hist_overflow, "probes[0].values: bucket counts overflow" },
	{ "modules shorter than frames", m_mods_short,
	  "profiles[0].stacks[0]: 1 modules for 2 frames (none or one per frame)" },
	{ "modules longer than frames", m_mods_long, "profiles[0].stacks[1]: 3 modules for 2 frames" },
	{ "module index out of range", m_mod_range,
	  "profiles[0].stacks[0].modules[1]: module 2 out of range (1 modules)" },
	{ "module index huge", m_mod_huge, "modules[0]: module 4294967295 out of range" },
	{ "module path empty", m_mod_path, "modules[0]: path: empty name" },
	{ "module path out of range", m_mod_path_range,
	  "modules[0]: path: string id 4 out of range (4 strings)" },
	{ "build-id upper case", m_bid_upper, "modules[0]: build_id: not lowercase hex at byte 3" },
	{ "build-id not hex", m_bid_nonhex, "modules[0]: build_id: not lowercase hex at byte 5" },
	{ "build-id odd", m_bid_odd, "modules[0]: build_id of 39 hex digits (whole bytes only)" },
	{ "build-id too long", m_bid_long, "modules[0]: build_id longer than 64 hex digits" },
	{ "latency sum", m_latency, "probes[0].latency_ns: sum 18446744073709551615 above 2^63-1" },
};

static void test_fixture_valid(void **state)
{
	struct fx *f = malloc(sizeof(*f));
	Cgperf__V1__Batch *m;
	uint8_t *buf;
	size_t len;
	char err[256];

	fx_init(f);
	buf = fx_pack(f, &len);
	m = wire_decode(buf, len, 0, err, sizeof(err));
	if (!m)
		fail_msg("fixture refused: %s", err);
	assert_string_equal(wire_string(m, m->profiles[0]->stacks[0]->frames[0]), "main");
	assert_int_equal(m->n_modules, 1);
	assert_string_equal(m->modules[0]->build_id, BID_A);
	assert_int_equal(m->profiles[0]->stacks[0]->n_modules, 2);
	assert_int_equal(m->profiles[0]->stacks[0]->modules[0], 1);
	assert_string_equal(wire_string(m, 12345), "");
	wire_batch_decoded_free(m);
	wire_batch_decoded_free(NULL);
	free(buf);
	free(f);
}

static void test_invalid(void **state)
{
	struct fx *f = malloc(sizeof(*f));

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		uint8_t *buf;
		size_t len;

		fx_init(f);
		bad_cases[i].mutate(f);
		buf = fx_pack(f, &len);
		print_message("  %-26s -> %s\n", bad_cases[i].name, bad_cases[i].reason);
		expect_refused(buf, len, 0, EBADMSG, bad_cases[i].reason);
		free(buf);
	}
	free(f);
}

/* gzip of @len bytes with zlib, the way a client would. */
static uint8_t *gzip_bytes(const uint8_t *in, size_t len, size_t *outlen)
{
	z_stream z;
	uint8_t *out;
	size_t cap;

	memset(&z, 0, sizeof(z));
	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
	cap = deflateBound(&z, len);
	out = malloc(cap);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*outlen = z.total_out;
	deflateEnd(&z);
	return out;
}

static void test_truncated(void **state)
{
	struct fx *f = malloc(sizeof(*f));
	uint8_t *buf, *gz;
	size_t len, gzlen;

	fx_init(f);
	buf = fx_pack(f, &len);
	/* every prefix of a raw body fails (self comes last, so even a cut
	 * between fields shows), and so does every prefix of a gzip one */
	for (size_t n = 0; n < len; n++) {
		char err[256];
		Cgperf__V1__Batch *m = wire_decode(buf, n, 0, err, sizeof(err));

		if (m)
			fail_msg("accepted %zu of %zu bytes", n, len);
		assert_true(err[0] != '\0');
	}
	expect_refused(buf, 0, 0, EBADMSG, "empty body");
	expect_refused(buf, len - 1, 0, EBADMSG, "not a protobuf Batch");
	gz = gzip_bytes(buf, len, &gzlen);
	for (size_t n = 2; n < gzlen; n++)
		expect_refused(gz, n, 0, EBADMSG, "gzip: truncated stream");
	free(gz);
	free(buf);
	free(f);
}

static void test_gzip_bad(void **state)
{
	struct fx *f = malloc(sizeof(*f));
	uint8_t *buf, *gz, *more;
	size_t len, gzlen;

	fx_init(f);
	buf = fx_pack(f, &len);
	gz = gzip_bytes(buf, len, &gzlen);
	/* trailing bytes */
	more = malloc(gzlen + 3);
	memcpy(more, gz, gzlen);
	memcpy(more + gzlen, "abc", 3);
	expect_refused(more, gzlen + 3, 0, EBADMSG, "gzip: 3 bytes after the end of the stream");
	/* a wrong CRC */
	memcpy(more, gz, gzlen);
	more[gzlen - 6] ^= 0x55;
	expect_refused(more, gzlen, 0, EBADMSG, "gzip: corrupt stream (incorrect data check)");
	/* a bad header */
	memcpy(more, gz, gzlen);
	more[2] = 7;
	expect_refused(more, gzlen, 0, EBADMSG, "gzip: corrupt stream");
	/* gzip of nothing */
	free(gz);
	gz = gzip_bytes(buf, 0, &gzlen);
	expect_refused(gz, gzlen, 0, EBADMSG, "empty body");
	/* gzip of something that is not protobuf */
	free(gz);
	gz = gzip_bytes((const uint8_t *)"hello, world", 12, &gzlen);
	expect_refused(gz, gzlen, 0, EBADMSG, "not a protobuf Batch");
	free(gz);
	free(more);
	free(buf);
	free(f);
}

/* Found by fuzzing: protobuf-c reads the overlong tag "80 00" as field
 * number 0, then cannot read back what it writes for it. */
static void test_field_zero(void **state)
{
	static const uint8_t top[] = { 0x80, 0x00, 0x01 };
	static const uint8_t nested[] = { 0x72, 0x05, 0x08, 0x05, 0x80, 0x00, 0x01 };
	struct fx *f = malloc(sizeof(*f));
	uint8_t *buf, *more;
	size_t len;

	fx_init(f);
	buf = fx_pack(f, &len);
	more = malloc(len + sizeof(nested));
	memcpy(more, buf, len);
	memcpy(more + len, top, sizeof(top));
	expect_refused(more, len + sizeof(top), 0, EBADMSG, "Batch: field number 0");
	memcpy(more + len, nested, sizeof(nested));
	expect_refused(more, len + sizeof(nested), 0, EBADMSG, "AgentStats: field number 0");
	free(more);
	free(buf);
	free(f);
}

/* More modules than a batch may hold (all the same small message). */
static void test_modules_cap(void **state)
{
	struct fx *f = malloc(sizeof(*f));
	Cgperf__V1__Module **many = malloc((WIRE_MODULES_MAX + 1) * sizeof(*many));
	uint8_t *buf;
	size_t len;

	fx_init(f);
	f->mod.build_id = (char *)"";
	for (size_t i = 0; i <= WIRE_MODULES_MAX; i++)
		many[i] = &f->mod;
	f->b.modules = many;
	f->b.n_modules = WIRE_MODULES_MAX;
	buf = fx_pack(f, &len);
	{
		char err[256];
		Cgperf__V1__Batch *m = wire_decode(buf, len, 0, err, sizeof(err));

		if (!m)
			fail_msg("%d modules refused: %s", WIRE_MODULES_MAX, err);
		wire_batch_decoded_free(m);
	}
	free(buf);
	f->b.n_modules = WIRE_MODULES_MAX + 1;
	buf = fx_pack(f, &len);
	expect_refused(buf, len, 0, EBADMSG, "modules: 65537 modules (at most 65536)");
	free(buf);
	free(many);
	free(f);
}

static void test_caps(void **state)
{
	struct fx *f = malloc(sizeof(*f));
	uint8_t *buf;
	size_t len;

	fx_init(f);
	buf = fx_pack(f, &len);
	expect_refused(buf, len, len - 1, EMSGSIZE, "exceeds the");
	expect_refused(NULL, 5, 0, EINVAL, "no buffer");
	free(buf);
	free(f);
}

/* 64 MiB of zeros, gzipped to about 64 KiB, against a 1 MiB cap: refused
 * after inflating at most cap + 1 bytes. */
static void test_gzip_bomb(void **state)
{
	const size_t total = 64u << 20;
	uint8_t *zeros = calloc(1, 1u << 20), *out;
	size_t cap = 1u << 20, done = 0;
	z_stream z;

	memset(&z, 0, sizeof(z));
	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
	out = malloc(cap);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	while (done < total) {
		z.next_in = zeros;
		z.avail_in = 1u << 20;
		done += 1u << 20;
		assert_int_equal(deflate(&z, done < total ? Z_NO_FLUSH : Z_FINISH),
				 done < total ? Z_OK : Z_STREAM_END);
	}
	print_message("gzip bomb: %zu bytes expand to %zu\n", (size_t)z.total_out, total);
	expect_refused(out, z.total_out, 1u << 20, EMSGSIZE,
		       "gzip: decompressed body exceeds the 1048576 byte cap");
	/* the default cap stops it too */
	expect_refused(out, z.total_out, 0, EMSGSIZE, "gzip: decompressed body exceeds");
	deflateEnd(&z);
	free(out);
	free(zeros);
}

/* Two bytes per empty counter, ~100 bytes each once unpacked: stopped by
 * the memory budget, not by the machine running out. */
static void test_memory_bomb(void **state)
{
	const size_t n = 1u << 20;
	uint8_t *buf = malloc(2 * n);

	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = 0x5a; /* field 11 (counters), length-delimited */
		buf[2 * i + 1] = 0;
	}
	expect_refused(buf, 2 * n, 4u << 20, EMSGSIZE, "needs more memory than the budget");
	free(buf);
}

static void test_random_bytes(void **state)
{
	uint8_t buf[600];

	rng_state = 0x1234567887654321ull;
	for (int i = 0; i < 5000; i++) {
		size_t len = rnd() % sizeof(buf);
		char err[256];
		Cgperf__V1__Batch *m;

		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)rnd();
		if (i % 3 == 0 && len >= 2) {
			buf[0] = 0x1f;
			buf[1] = 0x8b;
		}
		err[0] = '\0';
		m = wire_decode(buf, len, 4096, err, sizeof(err));
		if (m)
			fail_msg("random body %d (%zu bytes) accepted", i, len);
		assert_true(err[0] != '\0');
		assert_true(errno == EBADMSG || errno == EMSGSIZE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_new_args),
		cmocka_unit_test(test_intern),	     cmocka_unit_test(test_header_cleaned),
		cmocka_unit_test(test_cgroups),	     cmocka_unit_test(test_counters_args),
		cmocka_unit_test(test_stacks),	     cmocka_unit_test(test_probes_args),
		cmocka_unit_test(test_modules),	     cmocka_unit_test(test_modules_cap),
		cmocka_unit_test(test_fixture_valid), cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_truncated),    cmocka_unit_test(test_gzip_bad),
		cmocka_unit_test(test_field_zero),   cmocka_unit_test(test_caps),	     cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_memory_bomb),  cmocka_unit_test(test_random_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
