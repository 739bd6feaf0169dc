// SPDX-License-Identifier: MIT
/*
 * agent/wire, the decoder: it refuses, with a reason, every kind of bad body
 * a collector may be sent: bad references, bad text, bad numbers,
 * truncation, noise, gzip bombs, memory bombs.
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

#include "tests/unit/testlib.h"
#include "wire/wire.h"

/* The build id test_wire.c uses too. */
static const char BID_A[] = "4f0c8a1e2d3b5a6978e0f1d2c3b4a59687786950";

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
	gz = tl_gzip(buf, len, &gzlen);
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
	gz = tl_gzip(buf, len, &gzlen);
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
	gz = tl_gzip(buf, 0, &gzlen);
	expect_refused(gz, gzlen, 0, EBADMSG, "empty body");
	/* gzip of something that is not protobuf */
	free(gz);
	gz = tl_gzip((const uint8_t *)"hello, world", 12, &gzlen);
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
	uint64_t rng = 0x1234567887654321ull;
	uint8_t buf[600];

	for (int i = 0; i < 5000; i++) {
		size_t len = tl_rand(&rng) % sizeof(buf);
		char err[256];
		Cgperf__V1__Batch *m;

		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)tl_rand(&rng);
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

TL_MAIN(test_modules_cap, test_fixture_valid, test_invalid, test_truncated, test_gzip_bad,
	test_field_zero, test_caps, test_gzip_bomb, test_memory_bomb, test_random_bytes)
