// SPDX-License-Identifier: MIT
/*
 * agent/sampler without perf events: the record parser fed hand-made and
 * malformed records (table-driven, plus every truncation and random bytes),
 * then the ring walker on a fake ring (records across the end, corrupt
 * sizes). The live sampling tests are in test_sampler_live.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <asm/perf_regs.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/perf/cpumap.h"
#include "agent/perf/events.h"
#include "agent/perf/sampler.h"
#include "cgroup/mount.h"
#include "lib/clock.h"
#include "tests/unit/testlib.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* x86_64 user registers as perf's DWARF mode asks for them (no segments). */
#define REGS_MASK                                                                      \
	(((1ULL << PERF_REG_X86_64_MAX) - 1) &                                         \
	 ~((1ULL << PERF_REG_X86_DS) | (1ULL << PERF_REG_X86_ES) |                     \
	   (1ULL << PERF_REG_X86_FS) | (1ULL << PERF_REG_X86_GS)))

/* ================= hand-made records ================= */

/* Parse layout used by the table: every field the agent asks for, 3 regs. */
static const struct sampler_layout L = {
	.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
		       PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
		       PERF_SAMPLE_STACK_USER | PERF_SAMPLE_CGROUP,
	.regs_mask = 0x7,
	.sample_id_all = true,
};

struct rec {
	uint64_t w[64];
	size_t n;
};

static void rec_start(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	r->n = 1; /* header, written by rec_end */
}

static void put(struct rec *r, uint64_t v)
{
	assert_true(r->n < NELEM(r->w));
	r->w[r->n++] = v;
}

static void put2(struct rec *r, uint32_t lo, uint32_t hi)
{
	put(r, lo | (uint64_t)hi << 32);
}

/* NUL-terminated unless @nul is false, padded with zeros to 8 bytes. */
static void put_str(struct rec *r, const char *s, bool nul)
{
	size_t len = strlen(s) + (nul ? 1 : 0), words = (len + 7) / 8;

	assert_true(r->n + words <= NELEM(r->w));
	memcpy(&r->w[r->n], s, strlen(s));
	r->n += words;
}

#define TRAILER_TIME 777000u

/* sample_id trailer: TID, TIME, CPU. Zeros would hide a missing NUL. */
static void put_trailer(struct rec *r)
{
	put2(r, 0, 0);
	put(r, TRAILER_TIME);
	put2(r, 0, 0);
}

static void rec_end(struct rec *r, uint32_t type, uint16_t misc)
{
	r->w[0] = type | (uint64_t)misc << 32 | (uint64_t)(r->n * 8) << 48;
}

static size_t rec_len(const struct rec *r)
{
	return r->n * 8;
}

/* What the callbacks saw. */
struct seen {
	int samples, mmaps, comms, forks, exits, losts;
	uint64_t time; /* of the last COMM */
	struct sample s;
	uint64_t chain[4], regs[3];
	uint8_t stack[16];
	struct sample_mmap m;
	char name[64];
	bool exec;
	uint32_t pid, ppid, tid;
	uint64_t lost;
};

static void seen_sample(void *ctx, const struct sample *s)
{
	struct seen *v = ctx;

	v->samples++;
	v->s = *s;
	if (s->callchain && s->nr_callchain <= NELEM(v->chain))
		memcpy(v->chain, s->callchain, s->nr_callchain * 8);
	if (s->regs)
		memcpy(v->regs, s->regs, sizeof(v->regs));
	if (s->stack && s->stack_size <= sizeof(v->stack))
		memcpy(v->stack, s->stack, s->stack_size);
}

static void seen_mmap(void *ctx, const struct sample_mmap *m)
{
	struct seen *v = ctx;

	v->mmaps++;
	v->m = *m;
	snprintf(v->name, sizeof(v->name), "%s", m->filename);
	v->m.filename = v->name;
}

static void seen_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		      uint64_t time)
{
	struct seen *v = ctx;

	v->comms++;
	v->pid = pid;
	v->tid = tid;
	v->exec = exec;
	v->time = time;
	snprintf(v->name, sizeof(v->name), "%s", comm);
}

static void seen_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	struct seen *v = ctx;

	v->forks++;
	v->pid = pid;
	v->ppid = ppid;
	v->tid = tid;
}

static void seen_exit(void *ctx, uint32_t pid, uint32_t tid)
{
	struct seen *v = ctx;

	v->exits++;
	v->pid = pid;
	v->tid = tid;
}

static void seen_lost(void *ctx, uint64_t lost)
{
	struct seen *v = ctx;

	v->losts++;
	v->lost += lost;
}

static struct sampler_cb seen_cb(struct seen *v)
{
	return (struct sampler_cb){ .ctx = v, .sample = seen_sample, .mmap = seen_mmap,
				    .comm = seen_comm, .fork = seen_fork, .exit = seen_exit,
				    .lost = seen_lost };
}

/* A sample record; each knob breaks one field. */
struct sample_knobs {
	uint64_t nr, nr_written; /* callchain nr as claimed / ips actually present */
	uint64_t abi, regs_written;
	uint64_t stack_size, stack_written, dyn;
	bool no_dyn, no_cgroup, trailing;
};

static void build_sample(struct rec *r, const struct sample_knobs *k)
{
	rec_start(r);
	put(r, 0x401000);        /* ip */
	put2(r, 1234, 1235);     /* pid, tid */
	put(r, 987654321);       /* time */
	put2(r, 1, 0);           /* cpu, res */
	put(r, 1001001);         /* period */
	put(r, k->nr);
	for (uint64_t i = 0; i < k->nr_written; i++)
		put(r, 0xffffffff81000000ULL + i);
	put(r, k->abi);
	for (uint64_t i = 0; i < k->regs_written; i++)
		put(r, 0x1000 + i);
	put(r, k->stack_size);
	for (uint64_t i = 0; i < k->stack_written / 8; i++)
		put(r, 0x0101010101010101ULL * (i + 1));
	if (k->stack_size && !k->no_dyn)
		put(r, k->dyn);
	if (!k->no_cgroup)
		put(r, 42);
	if (k->trailing)
		put(r, 0);
	rec_end(r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
}

static const struct sample_knobs good_knobs = {
	.nr = 3, .nr_written = 3, .abi = PERF_SAMPLE_REGS_ABI_64, .regs_written = 3,
	.stack_size = 16, .stack_written = 16, .dyn = 8,
};

static void build_mmap2(struct rec *r, uint16_t misc, const char *name, bool nul)
{
	rec_start(r);
	put2(r, 77, 78);
	put(r, 0x7f0000000000ULL);
	put(r, 0x2000);
	put(r, 0x1000);
	if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		put(r, 20);            /* build_id_size, reserved */
		put(r, 0x1122334455667788ULL);
		put(r, 0x99aabbccddeeff00ULL);
	} else {
		put2(r, 8, 1);         /* maj, min */
		put(r, 123456);        /* ino */
		put(r, 9);             /* ino_generation */
	}
	put2(r, 5, 2);                 /* prot, flags */
	put_str(r, name, nul);
	put_trailer(r);
	rec_end(r, PERF_RECORD_MMAP2, misc);
}

/* Each case builds one record; len 0 means the record's own length. */
struct parse_case {
	const char *name;
	void (*build)(struct rec *r);
	size_t len;
	int ret;          /* 0 or -EBADMSG */
	int samples, mmaps, comms, forks, exits, losts, throttled;
};

#define SAMPLE_CASE(fn, ...)                                                  \
	static void fn(struct rec *r)                                         \
	{                                                                     \
		struct sample_knobs k = good_knobs;                           \
		__VA_ARGS__;                                                  \
		build_sample(r, &k);                                          \
	}

SAMPLE_CASE(b_sample_good, (void)0)
SAMPLE_CASE(b_sample_bare, k.nr = 0; k.nr_written = 0; k.abi = 0; k.regs_written = 0;
	    k.stack_size = 0; k.stack_written = 0)
SAMPLE_CASE(b_chain_past_end, k.nr = 100; k.nr_written = 2)
SAMPLE_CASE(b_chain_overflow, k.nr = 1ULL << 61; k.nr_written = 1)
SAMPLE_CASE(b_chain_huge, k.nr = UINT64_MAX; k.nr_written = 1)
SAMPLE_CASE(b_regs_truncated, k.regs_written = 1; k.stack_size = 0; k.stack_written = 0;
	    k.no_cgroup = true)
SAMPLE_CASE(b_stack_past_end, k.stack_size = 4096)
SAMPLE_CASE(b_stack_huge, k.stack_size = UINT64_MAX)
SAMPLE_CASE(b_dyn_past_size, k.dyn = 24)
SAMPLE_CASE(b_dyn_missing, k.no_dyn = true; k.no_cgroup = true)
SAMPLE_CASE(b_no_cgroup, k.no_cgroup = true)
SAMPLE_CASE(b_trailing, k.trailing = true)

static void b_header_small(struct rec *r)
{
	build_sample(r, &good_knobs);
	r->w[0] = (r->w[0] & 0x0000ffffffffffffULL) | (uint64_t)4 << 48;
}

static void b_mmap2_good(struct rec *r)
{
	build_mmap2(r, PERF_RECORD_MISC_USER, "/usr/lib/x86_64-linux-gnu/libc.so.6", true);
}

static void b_mmap2_build_id(struct rec *r)
{
	build_mmap2(r, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID, "/bin/true", true);
}

/* Exactly 8 name bytes and no NUL before the (zero-filled) trailer. */
static void b_mmap2_no_nul(struct rec *r)
{
	build_mmap2(r, 0, "/bin/abc", false);
}

static void b_mmap2_truncated(struct rec *r)
{
	rec_start(r);
	put2(r, 77, 78);
	put(r, 0x7f0000000000ULL);
	put_trailer(r);
	rec_end(r, PERF_RECORD_MMAP2, 0);
}

static void b_mmap_v1(struct rec *r)
{
	rec_start(r);
	put2(r, 77, 78);
	put(r, 0x400000);
	put(r, 0x1000);
	put(r, 0);
	put_str(r, "/bin/old", true);
	put_trailer(r);
	rec_end(r, PERF_RECORD_MMAP, 0);
}

static void build_comm(struct rec *r, const char *comm, bool nul, uint16_t misc)
{
	rec_start(r);
	put2(r, 300, 301); /* pid, tid */
	put_str(r, comm, nul);
	put_trailer(r);
	rec_end(r, PERF_RECORD_COMM, misc);
}

static void b_comm_exec(struct rec *r)
{
	build_comm(r, "true", true, PERF_RECORD_MISC_COMM_EXEC);
}

/* Exactly 8 name bytes and no NUL before the (zero-filled) trailer. */
static void b_comm_no_nul(struct rec *r)
{
	build_comm(r, "abcdefgh", false, 0);
}

static void b_comm_shorter_than_trailer(struct rec *r)
{
	rec_start(r);
	put2(r, 300, 301);
	rec_end(r, PERF_RECORD_COMM, 0);
}

static void build_task(struct rec *r, uint32_t type, bool truncated)
{
	rec_start(r);
	put2(r, 500, 400); /* pid, ppid */
	put2(r, 501, 401); /* tid, ptid */
	if (!truncated)
		put(r, 1111); /* time */
	put_trailer(r);
	rec_end(r, type, 0);
}

static void b_fork(struct rec *r)
{
	build_task(r, PERF_RECORD_FORK, false);
}

static void b_exit(struct rec *r)
{
	build_task(r, PERF_RECORD_EXIT, false);
}

static void b_fork_truncated(struct rec *r)
{
	build_task(r, PERF_RECORD_FORK, true);
}

/* A record of @type made of the @n words of @body, then the trailer. */
static void build_words(struct rec *r, uint32_t type, size_t n, const uint64_t body[])
{
	rec_start(r);
	for (size_t i = 0; i < n; i++)
		put(r, body[i]);
	put_trailer(r);
	rec_end(r, type, 0);
}

static void b_lost(struct rec *r)
{
	build_words(r, PERF_RECORD_LOST, 2, (const uint64_t[]){ 9, 7 }); /* id, lost */
}

static void b_lost_samples(struct rec *r)
{
	build_words(r, PERF_RECORD_LOST_SAMPLES, 1, (const uint64_t[]){ 3 });
}

static void b_lost_truncated(struct rec *r)
{
	build_words(r, PERF_RECORD_LOST, 1, (const uint64_t[]){ 9 });
}

/* time, id, stream_id */
static void b_throttle(struct rec *r)
{
	build_words(r, PERF_RECORD_THROTTLE, 3, (const uint64_t[]){ 1, 2, 3 });
}

static void b_unthrottle(struct rec *r)
{
	build_words(r, PERF_RECORD_UNTHROTTLE, 3, (const uint64_t[]){ 1, 2, 3 });
}

static void b_unknown(struct rec *r)
{
	rec_start(r);
	put(r, 1);
	rec_end(r, 200, 0);
}

static const struct parse_case parse_cases[] = {
	{ .name = "sample", .build = b_sample_good, .len = 0, .ret = 0, .samples = 1 },
	{ .name = "sample without chain/regs/stack", .build = b_sample_bare, .len = 0, .ret = 0, .samples = 1 },
	{ .name = "callchain nr past the record", .build = b_chain_past_end, .len = 0, .ret = -EBADMSG },
	{ .name = "callchain nr*8 overflows", .build = b_chain_overflow, .len = 0, .ret = -EBADMSG },
	{ .name = "callchain nr UINT64_MAX", .build = b_chain_huge, .len = 0, .ret = -EBADMSG },
	{ .name = "regs past the record", .build = b_regs_truncated, .len = 0, .ret = -EBADMSG },
	{ .name = "stack size past the record", .build = b_stack_past_end, .len = 0, .ret = -EBADMSG },
	{ .name = "stack size UINT64_MAX", .build = b_stack_huge, .len = 0, .ret = -EBADMSG },
	{ .name = "dyn_size > size", .build = b_dyn_past_size, .len = 0, .ret = -EBADMSG },
	{ .name = "dyn_size missing", .build = b_dyn_missing, .len = 0, .ret = -EBADMSG },
	{ .name = "cgroup id missing", .build = b_no_cgroup, .len = 0, .ret = -EBADMSG },
	{ .name = "bytes after the last field", .build = b_trailing, .len = 0, .ret = -EBADMSG },
	{ .name = "header.size 4", .build = b_header_small, .len = 0, .ret = -EBADMSG },
	{ .name = "header.size beyond the buffer", .build = b_sample_good, .len = 24, .ret = -EBADMSG },
	{ .name = "buffer shorter than a header", .build = b_sample_good, .len = 4, .ret = -EBADMSG },
	{ .name = "mmap2", .build = b_mmap2_good, .len = 0, .ret = 0, .mmaps = 1 },
	{ .name = "mmap2 with build id", .build = b_mmap2_build_id, .len = 0, .ret = 0, .mmaps = 1 },
	{ .name = "mmap2 name without NUL", .build = b_mmap2_no_nul, .len = 0, .ret = -EBADMSG },
	{ .name = "mmap2 truncated", .build = b_mmap2_truncated, .len = 0, .ret = -EBADMSG },
	{ .name = "mmap", .build = b_mmap_v1, .len = 0, .ret = 0, .mmaps = 1 },
	{ .name = "comm exec", .build = b_comm_exec, .len = 0, .ret = 0, .comms = 1 },
	{ .name = "comm without NUL", .build = b_comm_no_nul, .len = 0, .ret = -EBADMSG },
	{ .name = "comm shorter than sample_id", .build = b_comm_shorter_than_trailer, .len = 0, .ret = -EBADMSG },
	{ .name = "fork", .build = b_fork, .len = 0, .ret = 0, .forks = 1 },
	{ .name = "exit", .build = b_exit, .len = 0, .ret = 0, .exits = 1 },
	{ .name = "fork truncated", .build = b_fork_truncated, .len = 0, .ret = -EBADMSG },
	{ .name = "lost", .build = b_lost, .len = 0, .ret = 0, .losts = 1 },
	{ .name = "lost samples", .build = b_lost_samples, .len = 0, .ret = 0, .losts = 1 },
	{ .name = "lost truncated", .build = b_lost_truncated, .len = 0, .ret = -EBADMSG },
	{ .name = "throttle", .build = b_throttle, .len = 0, .ret = 0, .throttled = 1 },
	{ .name = "unthrottle", .build = b_unthrottle, .len = 0, .ret = 0 },
	{ .name = "unknown type", .build = b_unknown, .len = 0, .ret = 0 },
};

static void test_parse_table(void **state)
{
	for (size_t i = 0; i < NELEM(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct sampler_stats st = { 0 };
		struct seen v = { 0 };
		struct sampler_cb cb = seen_cb(&v);
		struct rec r;
		int ret;

		c->build(&r);
		ret = sampler_parse_record(&L, r.w, c->len ? c->len : rec_len(&r), &cb, &st);
		if (ret != c->ret)
			fail_msg("%s: returned %d, want %d", c->name, ret, c->ret);
		if (st.malformed != (c->ret ? 1u : 0u))
			fail_msg("%s: malformed %llu", c->name, (unsigned long long)st.malformed);
		if (v.samples != c->samples || v.mmaps != c->mmaps || v.comms != c->comms ||
		    v.forks != c->forks || v.exits != c->exits || v.losts != c->losts ||
		    st.throttled != (uint64_t)c->throttled || st.samples != (uint64_t)c->samples)
			fail_msg("%s: callbacks s%d m%d c%d f%d e%d l%d t%llu", c->name, v.samples,
				 v.mmaps, v.comms, v.forks, v.exits, v.losts,
				 (unsigned long long)st.throttled);
	}
}

/* The values, not just the callbacks, of the good records. */
static void test_parse_values(void **state)
{
	struct sampler_stats st = { 0 };
	struct seen v = { 0 };
	struct sampler_cb cb = seen_cb(&v);
	struct rec r;

	b_sample_good(&r);
	assert_int_equal(sampler_parse_record(&L, r.w, rec_len(&r), &cb, &st), 0);
	assert_int_equal(v.s.ip, 0x401000);
	assert_int_equal(v.s.pid, 1234);
	assert_int_equal(v.s.tid, 1235);
	assert_int_equal(v.s.time, 987654321);
	assert_int_equal(v.s.cpu, 1);
	assert_int_equal(v.s.period, 1001001);
	assert_true(v.s.user_mode);
	assert_int_equal(v.s.nr_callchain, 3);
	assert_int_equal(v.chain[2], 0xffffffff81000002ULL);
	assert_int_equal(v.s.regs_abi, PERF_SAMPLE_REGS_ABI_64);
	assert_int_equal(v.regs[0], 0x1000);
	assert_int_equal(v.regs[2], 0x1002);
	assert_int_equal(v.s.stack_size, 8); /* dyn_size, not size */
	assert_int_equal(v.stack[0], 0x01);
	assert_int_equal(v.s.cgroup_id, 42);

	b_sample_bare(&r);
	assert_int_equal(sampler_parse_record(&L, r.w, rec_len(&r), &cb, &st), 0);
	assert_null(v.s.regs);
	assert_null(v.s.stack);
	assert_int_equal(v.s.stack_size, 0);
	assert_int_equal(v.s.nr_callchain, 0);

	b_mmap2_good(&r);
	assert_int_equal(sampler_parse_record(&L, r.w, rec_len(&r), &cb, &st), 0);
	assert_int_equal(v.m.pid, 77);
	assert_int_equal(v.m.tid, 78);
	assert_int_equal(v.m.start, 0x7f0000000000ULL);
	assert_int_equal(v.m.len, 0x2000);
	assert_int_equal(v.m.pgoff, 0x1000);
	assert_int_equal(v.m.maj, 8);
	assert_int_equal(v.m.min, 1);
	assert_int_equal(v.m.ino, 123456);
	assert_int_equal(v.m.prot, 5);
	assert_int_equal(v.m.flags, 2);
	assert_string_equal(v.name, "/usr/lib/x86_64-linux-gnu/libc.so.6");

	b_mmap2_build_id(&r);
	assert_int_equal(sampler_parse_record(&L, r.w, rec_len(&r), &cb, &st), 0);
	assert_int_equal(v.m.ino, 0);
	assert_int_equal(v.m.maj, 0);
	assert_int_equal(v.m.prot, 5);
	assert_string_equal(v.name, "/bin/true");

	b_comm_exec(&r);
	assert_int_equal(sampler_parse_record(&L, r.w, rec_len(&r), &cb, &st), 0);
	assert_string_equal(v.name, "true");
	assert_true(v.exec);
	assert_int_equal(v.time, TRAILER_TIME); /* from the sample_id trailer */
	assert_int_equal(v.pid, 300);
	assert_int_equal(v.tid, 301);

	b_fork(&r);
	assert_int_equal(sampler_parse_record(&L, r.w, rec_len(&r), &cb, &st), 0);
	assert_int_equal(v.pid, 500);
	assert_int_equal(v.ppid, 400);
	assert_int_equal(v.tid, 501);

	b_lost(&r);
	assert_int_equal(sampler_parse_record(&L, r.w, rec_len(&r), &cb, &st), 0);
	b_lost_samples(&r);
	assert_int_equal(sampler_parse_record(&L, r.w, rec_len(&r), &cb, &st), 0);
	assert_int_equal(v.lost, 10);
	assert_int_equal(st.lost, 10);
	assert_int_equal(st.malformed, 0);

	/* NULL callbacks: counted only. */
	b_sample_good(&r);
	assert_int_equal(sampler_parse_record(&L, r.w, rec_len(&r), NULL, &st), 0);
}

/* Every shorter header.size of a good record is malformed, never read past. */
static void test_parse_truncations(void **state)
{
	void (*builds[])(struct rec *) = { b_sample_good, b_mmap2_good, b_comm_exec, b_fork,
					   b_lost, b_throttle };

	for (size_t b = 0; b < NELEM(builds); b++) {
		struct rec full;

		builds[b](&full);
		for (size_t len = 8; len < rec_len(&full); len += 8) {
			struct sampler_stats st = { 0 };
			struct seen v = { 0 };
			struct sampler_cb cb = seen_cb(&v);
			/* Heap copy of exactly @len bytes: ASan sees any overread. */
			uint64_t *buf = malloc(len);

			assert_non_null(buf);
			memcpy(buf, full.w, len);
			buf[0] = (buf[0] & 0x0000ffffffffffffULL) | (uint64_t)len << 48;
			if (sampler_parse_record(&L, buf, len, &cb, &st) != -EBADMSG)
				fail_msg("builder %zu truncated to %zu parsed", b, len);
			assert_int_equal(st.malformed, 1);
			assert_int_equal(v.samples + v.mmaps + v.comms + v.forks, 0);
			free(buf);
		}
	}
}

/* Random bytes with random types and sizes: no crash, no overread. */
static void test_parse_random(void **state)
{
	static const uint32_t types[] = { PERF_RECORD_SAMPLE, PERF_RECORD_MMAP2, PERF_RECORD_MMAP,
					  PERF_RECORD_COMM, PERF_RECORD_FORK, PERF_RECORD_EXIT,
					  PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES,
					  PERF_RECORD_THROTTLE };
	struct sampler_stats st = { 0 };
	struct seen v = { 0 };
	struct sampler_cb cb = seen_cb(&v);
	unsigned seed = 12345;

	for (int i = 0; i < 20000; i++) {
		size_t words = 1 + (size_t)rand_r(&seed) % 40;
		uint64_t *buf = malloc(words * 8);

		assert_non_null(buf);
		for (size_t w = 0; w < words; w++) {
			uint64_t x = (uint64_t)rand_r(&seed) << 33 ^ (uint64_t)rand_r(&seed) << 11 ^
				     (uint64_t)rand_r(&seed);

			/* Small values now and then, so counts look plausible. */
			buf[w] = rand_r(&seed) % 3 ? x % 64 : x;
		}
		buf[0] = types[rand_r(&seed) % NELEM(types)] |
			 (uint64_t)(rand_r(&seed) & 0xffff) << 32 |
			 (uint64_t)(rand_r(&seed) % 2 ? words * 8 : (size_t)rand_r(&seed) % 400) << 48;
		int ret = sampler_parse_record(&L, buf, words * 8, &cb, &st);

		assert_true(ret == 0 || ret == -EBADMSG);
		free(buf);
	}
	assert_true(st.malformed > 0);
}

static void test_parse_bad_args(void **state)
{
	struct sampler_layout raw = L;
	struct sampler_stats st = { 0 };
	struct rec r;

	b_sample_good(&r);
	raw.sample_type |= PERF_SAMPLE_BRANCH_STACK; /* not parsed: refused */
	assert_int_equal(sampler_parse_record(&raw, r.w, rec_len(&r), NULL, &st), -EINVAL);
	assert_int_equal(sampler_parse_record(&L, (const char *)r.w + 4, 64, NULL, &st), -EINVAL);
	assert_int_equal(sampler_parse_record(&L, NULL, 64, NULL, &st), -EINVAL);
	assert_int_equal(st.malformed, 0);
}

/* ================= the ring walker on a fake ring ================= */

#define FAKE_SIZE 256

struct fake_ring {
	struct perf_event_mmap_page pg;
	uint64_t data[FAKE_SIZE / 8];
	uint64_t scratch[8192];
};

/* Write @len bytes at free-running position @pos, wrapping at the end. */
static void fake_put(struct fake_ring *f, uint64_t pos, const void *p, size_t len)
{
	uint8_t *d = (uint8_t *)f->data;

	for (size_t i = 0; i < len; i++)
		d[(pos + i) % FAKE_SIZE] = ((const uint8_t *)p)[i];
}

static int fake_read(struct fake_ring *f, struct seen *v, struct sampler_stats *st, bool scratch)
{
	struct sampler_cb cb = seen_cb(v);

	return sampler_ring_read(&L, &f->pg, (const uint8_t *)f->data, FAKE_SIZE,
				 scratch ? (uint8_t *)f->scratch : NULL, sizeof(f->scratch), &cb,
				 st);
}

static void test_ring_wrap(void **state)
{
	struct fake_ring *f = calloc(1, sizeof(*f));
	struct sampler_stats st = { 0 };
	struct seen v = { 0 };
	struct rec comm, fork, sample;
	/* Free-running counters far from zero: only "& (size - 1)" places them. */
	uint64_t tail = 10 * FAKE_SIZE + FAKE_SIZE - 24, pos = tail;

	assert_non_null(f);
	b_comm_exec(&comm);   /* 48 bytes from 24 before the end: straddles */
	b_fork(&fork);
	b_sample_bare(&sample);
	fake_put(f, pos, comm.w, rec_len(&comm));
	pos += rec_len(&comm);
	fake_put(f, pos, fork.w, rec_len(&fork));
	pos += rec_len(&fork);
	fake_put(f, pos, sample.w, rec_len(&sample));
	pos += rec_len(&sample);
	f->pg.data_tail = tail;
	f->pg.data_head = pos;

	assert_int_equal(fake_read(f, &v, &st, true), 3);
	assert_int_equal(v.comms, 1);
	assert_int_equal(v.forks, 1);
	assert_int_equal(v.samples, 1);
	assert_int_equal(v.s.cgroup_id, 42);
	assert_int_equal(st.wrapped, 1);
	assert_int_equal(st.malformed, 0);
	assert_int_equal(st.records, 3);
	assert_int_equal(f->pg.data_tail, pos);
	/* Nothing new: nothing read, no wakeup counted. */
	assert_int_equal(fake_read(f, &v, &st, true), 0);
	assert_int_equal(st.wakeups, 1);

	/* Without scratch the straddling record is skipped, the rest parsed. */
	memset(&st, 0, sizeof(st));
	memset(&v, 0, sizeof(v));
	f->pg.data_tail = tail;
	assert_int_equal(fake_read(f, &v, &st, false), 3);
	assert_int_equal(st.malformed, 1);
	assert_int_equal(v.comms, 0);
	assert_int_equal(v.forks + v.samples, 2);
	free(f);
}

static void test_ring_corrupt(void **state)
{
	static const uint16_t bad_sizes[] = { 0, 4, 12, 4096 };
	struct fake_ring *f = calloc(1, sizeof(*f));
	struct rec fork;

	assert_non_null(f);
	b_fork(&fork);
	for (size_t i = 0; i < NELEM(bad_sizes); i++) {
		struct sampler_stats st = { 0 };
		struct seen v = { 0 };
		uint64_t hdr = PERF_RECORD_FORK | (uint64_t)bad_sizes[i] << 48, pos = 40;

		memset(f->data, 0, sizeof(f->data));
		fake_put(f, pos, fork.w, rec_len(&fork));
		fake_put(f, pos + rec_len(&fork), &hdr, 8);
		f->pg.data_tail = pos;
		f->pg.data_head = pos + rec_len(&fork) + 64;
		assert_int_equal(fake_read(f, &v, &st, true), 1);
		assert_int_equal(v.forks, 1);
		assert_int_equal(st.malformed, 1);
		/* The rest was dropped: the ring is usable again. */
		assert_int_equal(f->pg.data_tail, f->pg.data_head);
	}

	/* A head more than a ring ahead of the tail. */
	struct sampler_stats st = { 0 };
	struct seen v = { 0 };

	f->pg.data_tail = 8;
	f->pg.data_head = 8 + FAKE_SIZE + 8;
	assert_int_equal(fake_read(f, &v, &st, true), 0);
	assert_int_equal(st.malformed, 1);
	assert_int_equal(f->pg.data_tail, f->pg.data_head);

	/* Sizes that are not a power of two are refused. */
	assert_int_equal(sampler_ring_read(&L, &f->pg, (const uint8_t *)f->data, 96, NULL, 0, NULL,
					   &st),
			 -EINVAL);
	free(f);
}

TL_MAIN(test_parse_table, test_parse_values, test_parse_truncations, test_parse_random,
	test_parse_bad_args, test_ring_wrap, test_ring_corrupt)
