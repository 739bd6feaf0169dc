// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for wire_decode(), the collector's parser of untrusted
 * push bodies (gzip or not). Properties checked on every input:
 *   - refused input comes with a reason and errno EBADMSG or EMSGSIZE;
 *   - accepted input keeps the validator's promises: every string id and
 *     cgroup index can be followed, stacks are within WIRE_STACK_MAX, all
 *     integers within WIRE_VALUE_MAX (ASan sees any stray read);
 *   - accepted input, packed again, is accepted again (short of the memory
 *     budget, which denser bytes may now exceed).
 *
 * Built with -DFUZZ_WIRE_SEEDS the same file is a program that writes a
 * seed corpus of valid batches (raw and gzip) into the directory it is
 * given: `make fuzz` does both.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

#define FUZZ_CAP (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch(const Cgperf__V1__Batch *m, uint32_t id, size_t *acc)
{
	/* the validator promised id is in range; ASan checks the promise */
	*acc += strlen(wire_string(m, id));
	if (id && id >= m->n_strings)
		abort();
}

static void walk(const Cgperf__V1__Batch *m)
{
	size_t acc = 0;

	for (size_t i = 0; i < m->n_strings; i++)
		acc += strlen(m->strings[i]);
	for (size_t i = 0; i < m->n_cgroups; i++) {
		const Cgperf__V1__Cgroup *c = m->cgroups[i];

		touch(m, c->path, &acc);
		touch(m, c->container_id, &acc);
		touch(m, c->runtime, &acc);
		touch(m, c->pod_uid, &acc);
		touch(m, c->qos, &acc);
		touch(m, c->k8s_namespace, &acc);
		touch(m, c->pod_name, &acc);
		touch(m, c->container_name, &acc);
		touch(m, c->unit, &acc);
		touch(m, c->slice, &acc);
	}
	for (size_t i = 0; i < m->n_counters; i++) {
		const Cgperf__V1__Counter *c = m->counters[i];

		touch(m, m->cgroups[c->cgroup]->path, &acc);
		touch(m, c->event, &acc);
		if (c->value > WIRE_VALUE_MAX || c->time_running > c->time_enabled)
			abort();
	}
	for (size_t i = 0; i < m->n_profiles; i++) {
		const Cgperf__V1__Profile *p = m->profiles[i];
		uint64_t total = 0;

		touch(m, m->cgroups[p->cgroup]->path, &acc);
		touch(m, p->event, &acc);
		for (size_t k = 0; k < p->n_stacks; k++) {
			const Cgperf__V1__Stack *s = p->stacks[k];

			if (!s->n_frames || s->n_frames > WIRE_STACK_MAX)
				abort();
			for (size_t f = 0; f < s->n_frames; f++)
				touch(m, s->frames[f], &acc);
			total += s->count; /* cannot wrap: checked */
			if (total > WIRE_VALUE_MAX)
				abort();
		}
	}
	for (size_t i = 0; i < m->n_probes; i++) {
		const Cgperf__V1__Probe *p = m->probes[i];
		const Cgperf__V1__Histogram *hs[2] = { p->values, p->latency_ns };

		touch(m, m->cgroups[p->cgroup]->path, &acc);
		touch(m, p->label, &acc);
		for (int k = 0; k < 2; k++) {
			const Cgperf__V1__Histogram *h = hs[k];
			uint64_t n;

			if (!h)
				continue;
			n = h->negative;
			if (h->offset + h->n_buckets > HIST_BUCKETS)
				abort();
			for (size_t j = 0; j < h->n_buckets; j++)
				n += h->buckets[j];
			if (n != h->count)
				abort();
		}
	}
	if (!m->self || !m->agent_id[0])
		abort();
	/* keep acc alive */
	if (acc == SIZE_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256] = "";
	Cgperf__V1__Batch *m, *again;
	uint8_t *buf;
	size_t len;

	m = wire_decode(data, size, FUZZ_CAP, err, sizeof(err));
	if (!m) {
		if (!err[0] || (errno != EBADMSG && errno != EMSGSIZE))
			abort();
		return 0;
	}
	walk(m);

	len = cgperf__v1__batch__get_packed_size(m);
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	if (cgperf__v1__batch__pack(m, buf) != len)
		abort();
	/* Re-packing may make the bytes denser (overlong varints, unpacked
	 * repeated fields), so only the memory budget may refuse them now. */
	again = wire_decode(buf, len, FUZZ_CAP + len, err, sizeof(err));
	if (!again && errno != EMSGSIZE) {
		fprintf(stderr, "re-packed batch refused: %s\n", err);
		abort();
	}
	wire_batch_decoded_free(again);
	free(buf);
	wire_batch_decoded_free(m);
	return 0;
}

#ifdef FUZZ_WIRE_SEEDS
static int write_file(const char *dir, const char *name, const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

/* A batch of every kind of item, @scale stacks per profile. */
static struct wire_batch *seed_batch(int scale)
{
	static const char *const frames[] = { "main", "PostgresMain", "exec_simple_query",
					      "ExecScan", "heap_getnext", "do_syscall_64_[k]",
					      "libc.so.6+0x8f2a1", "\xc3\xa9t\xc3\xa9" };
	struct wire_cgroup_info info = { .runtime = "docker", .container_id = "0123abcd",
					 .unit = "docker-0123abcd.scope", .slice = "system.slice" };
	struct wire_self self = { .samples = 100, .lost_samples = 1, .spool_bytes = 4096 };
	struct wire_batch *b = wire_batch_new("host", "0123456789abcdef0123456789abcdef",
					      "agent-1", "0.1.0", 7, 1000, 2000);
	struct hist h = { 0 };
	int cg, root, p;

	if (!b)
		return NULL;
	for (int i = -2; i < 300; i += 7)
		hist_add(&h, i * i);
	root = wire_add_cgroup(b, "/", 1, NULL);
	cg = wire_add_cgroup(b, "/system.slice/docker-0123abcd.scope", 4242, &info);
	wire_add_counter(b, root, "task-clock", 123456789, 2000000000, 2000000000, true);
	wire_add_counter(b, cg, "context-switches", 4321, 2000000000, 1500000000, true);
	wire_add_counter(b, cg, "cycles", 0, 0, 0, false);
	p = wire_add_profile(b, cg, "cpu-clock", 0, 99);
	for (int i = 0; i < scale; i++)
		wire_add_stack(b, p, frames, 1 + (size_t)(i % 8), 1 + (uint64_t)i);
	p = wire_add_profile(b, root, "sdt:postgresql:query__start", 1, 0);
	wire_add_stack(b, p, frames, 3, 5);
	wire_add_probe(b, cg, "u:/usr/lib/x86_64-linux-gnu/libc.so.6:malloc size=%di", 50, &h,
		       NULL);
	wire_add_probe(b, root, "sdt:postgresql:query__start", 9, NULL, &h);
	wire_set_self(b, &self);
	return b;
}

int main(int argc, char **argv)
{
	static const int scales[] = { 0, 1, 3, 16 };
	char name[64];

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(scales) / sizeof(scales[0]); i++) {
		struct wire_batch *b = seed_batch(scales[i]);
		uint8_t *buf;
		size_t len;

		if (!b)
			return 1;
		for (int gz = 0; gz < 2; gz++) {
			if ((gz ? wire_encode_gzip : wire_encode)(b, &buf, &len) < 0)
				return 1;
			snprintf(name, sizeof(name), "seed-%s-%d", gz ? "gzip" : "raw", scales[i]);
			if (write_file(argv[1], name, buf, len) < 0)
				return 1;
			free(buf);
		}
		wire_batch_free(b);
	}
	return 0;
}
#endif
