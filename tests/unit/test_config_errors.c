// SPDX-License-Identifier: MIT
/*
 * agent/config: every error message with its line and column (table-driven),
 * hostile and oversized input, truncated messages, and every allocation of
 * loading the example failed in turn.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cmd/config.h"
#include "agent/perf/probe.h"
#include "tests/unit/testalloc.h"
#include "tests/unit/testlib.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))
#define EXAMPLE "tests/data/agent-example.yaml"
#define DOC "docs/config.md"
#define POSTGRES "/usr/lib/postgresql/15/bin/postgres"
/* ---- errors ---- */

struct err_case {
	const char *yaml;
	const char *msg; /* the whole message */
};

static const struct err_case err_cases[] = {
	/* keys */
	{"sampling:\n  frequncy: 99\n",
	 "t.yaml:2:3: unknown key 'frequncy' in sampling (did you mean 'frequency'?)"},
	{"frequency: 99\n",
	 "t.yaml:1:1: unknown key 'frequency' at the top level (it belongs in sampling)"},
	{"sampling:\n  enabled: true\ncounters:\n  verbose: 1\n",
	 "t.yaml:4:3: unknown key 'verbose' in counters"},
	{"host:\n  enabled: true\n",
	 "t.yaml:2:3: unknown key 'enabled' in host (it belongs in counters or sampling)"},
	{"push:\n  tls:\n    verfy: false\n",
	 "t.yaml:3:5: unknown key 'verfy' in push.tls (did you mean 'verify'?)"},
	{"push:\n  spool: {dir: /x, max: 1GiB}\n",
	 "t.yaml:2:20: unknown key 'max' in push.spool (it belongs in push.retry)"},
	{"probes:\n  - spec: sched:sched_switch\n    stack: true\n",
	 "t.yaml:3:5: unknown key 'stack' in probes[0] (did you mean 'stacks'?)"},
	{"sampling:\n  frequency: 49\n  frequency: 99\n",
	 "t.yaml:3:3: duplicate key 'frequency' in sampling (first at line 2)"},
	{"log: {level: info}\nhost: {}\nlog: {format: json}\n",
	 "t.yaml:3:1: duplicate key 'log' at the top level (first at line 1)"},
	{"? [a]\n: b\n", "t.yaml:1:3: keys at the top level must be names, got a list"},
	{"<<: {host: {}}\n", "t.yaml:1:1: unknown key '<<' at the top level"},

	/* shapes */
	{"- host\n", "t.yaml:1:1: expected a mapping of sections (host:, push:, ...), got a list"},
	{"just text\n",
	 "t.yaml:1:1: expected a mapping of sections (host:, push:, ...), got 'just text'"},
	{"sampling: 49\n",
	 "t.yaml:1:11: sampling: expected a mapping of keys (enabled: ...), got '49'"},
	{"push:\n  tls: [a]\n",
	 "t.yaml:2:8: push.tls: expected a mapping of keys (ca_file: ...), got a list"},
	{"host: {}\n---\nlog: {}\n",
	 "t.yaml:3:1: a second YAML document; the configuration is one document"},

	/* booleans, integers, enums */
	{"sampling:\n  enabled: yes\n",
	 "t.yaml:2:12: sampling.enabled: expected true or false, got 'yes'"},
	{"sampling:\n  enabled: [true]\n",
	 "t.yaml:2:12: sampling.enabled: expected true or false, got a list"},
	{"counters:\n  enabled:\n",
	 "t.yaml:2:11: counters.enabled: expected true or false, got nothing (null)"},
	{"sampling:\n  frequency: 0\n",
	 "t.yaml:2:14: sampling.frequency: '0' is out of range (1..10000)"},
	{"sampling:\n  frequency: 10001\n",
	 "t.yaml:2:14: sampling.frequency: '10001' is out of range (1..10000)"},
	{"sampling:\n  frequency: 99999999999999999999999\n",
	 "t.yaml:2:14: sampling.frequency: '99999999999999999999999' is out of range (1..10000)"},
	{"sampling:\n  frequency: fast\n",
	 "t.yaml:2:14: sampling.frequency: expected an integer, got 'fast'"},
	{"sampling:\n  frequency: -5\n", "t.yaml:2:14: sampling.frequency: expected an integer, got '-5'"},
	{"sampling:\n  frequency: 49.5\n",
	 "t.yaml:2:14: sampling.frequency: expected an integer, got '49.5'"},
	{"sampling:\n  frequency:\n",
	 "t.yaml:2:13: sampling.frequency: expected an integer, got nothing (null)"},
	{"sampling:\n  stack_bytes: 100\n",
	 "t.yaml:2:16: sampling.stack_bytes: 100 is not a multiple of 8"},
	{"sampling:\n  stack_bytes: 64KiB\n",
	 "t.yaml:2:16: sampling.stack_bytes: '64KiB' is out of range (8..65528)"},
	{"sampling:\n  stack_bytes: 4\n",
	 "t.yaml:2:16: sampling.stack_bytes: '4' is out of range (8..65528)"},
	{"sampling:\n  call_graph: dwraf\n",
	 "t.yaml:2:15: sampling.call_graph: expected fp or dwarf, got 'dwraf' (did you mean 'dwarf'?)"},
	{"symbols:\n  demangle: ful\n",
	 "t.yaml:2:13: symbols.demangle: expected none, short, full, false or true, got 'ful' (did you "
	 "mean 'full'?)"},
	{"symbols:\n  demangel: full\n",
	 "t.yaml:2:3: unknown key 'demangel' in symbols (did you mean 'demangle'?)"},
	{"demangle: full\n",
	 "t.yaml:1:1: unknown key 'demangle' at the top level (it belongs in symbols)"},
	{"sampling:\n  call_graph: lbr\n",
	 "t.yaml:2:15: sampling.call_graph: expected fp or dwarf, got 'lbr'"},
	{"log:\n  level: verbose\n",
	 "t.yaml:2:10: log.level: expected debug, info, warn or error, got 'verbose'"},
	{"log:\n  level: eror\n",
	 "t.yaml:2:10: log.level: expected debug, info, warn or error, got 'eror' (did you mean "
	 "'error'?)"},
	{"log:\n  format: text\n", "t.yaml:2:11: log.format: expected logfmt or json, got 'text'"},

	/* events */
	{"counters:\n  events: [task-clock, cyles]\n",
	 "t.yaml:2:24: counters.events[1]: unknown event 'cyles' (did you mean 'cycles'?)"},
	{"counters:\n  events: [cycles:x]\n",
	 "t.yaml:2:12: counters.events[0]: malformed event 'cycles:x' (EVENT, EVENT:u, EVENT:k, rHEX or "
	 "SUBSYS:EVENT)"},
	{"counters:\n  events: [\"sched:sched switch\"]\n",
	 "t.yaml:2:12: counters.events[0]: malformed tracepoint 'sched:sched switch' (SUBSYS:EVENT, as in "
	 "tracefs)"},
	{"counters:\n  events: [cs, cs]\n",
	 "t.yaml:2:16: counters.events[1]: 'cs' is already listed as counters.events[0]"},
	{"counters:\n  events: []\n",
	 "t.yaml:2:11: counters.events: empty (set counters.enabled: false to count nothing)"},
	{"counters:\n  events: cycles\n",
	 "t.yaml:2:11: counters.events: expected a list, got 'cycles' (write ['cycles'])"},
	{"counters:\n  events: {a: b}\n",
	 "t.yaml:2:11: counters.events: expected a list (like [task-clock, cycles]), got a mapping"},
	{"sampling:\n  event: cpu-clok\n",
	 "t.yaml:2:10: sampling.event: unknown event 'cpu-clok' (did you mean 'cpu-clock'?)"},

	/* cgroups */
	{"cgroups:\n  include: [system.slice]\n",
	 "t.yaml:2:13: cgroups.include[0]: 'system.slice' must start with '/' (cgroup paths are from the "
	 "hierarchy's root: \"/system.slice/*.service\")"},
	{"cgroups:\n  include: [\"/a//b\"]\n",
	 "t.yaml:2:13: cgroups.include[0]: '/a//b' has an empty path component"},
	{"cgroups:\n  exclude: [\"/a/\"]\n",
	 "t.yaml:2:13: cgroups.exclude[0]: '/a/' has an empty path component"},
	{"cgroups:\n  exclude: [\"/docker-[0-9\"]\n",
	 "t.yaml:2:13: cgroups.exclude[0]: '/docker-[0-9' has '[' without ']'"},
	{"cgroups:\n  exclude: [\"/a/[]\"]\n",
	 "t.yaml:2:13: cgroups.exclude[0]: '/a/[]' has '[' without ']'"},
	{"cgroups:\n  include: []\n",
	 "t.yaml:2:12: cgroups.include: empty, so no cgroup would be profiled (\"/**\" is every cgroup)"},
	{"cgroups:\n  containers_only: 1\n",
	 "t.yaml:2:20: cgroups.containers_only: expected true or false, got '1'"},

	/* durations and sizes */
	{"push:\n  interval: 15\n",
	 "t.yaml:2:13: push.interval: '15' has no unit (ms, s, m or h, like '15s')"},
	{"push:\n  interval: 1.5s\n",
	 "t.yaml:2:13: push.interval: bad duration '1.5s' (a whole number and ms, s, m or h, like 500ms, "
	 "15s, 1m30s)"},
	{"push:\n  interval: 15sec\n",
	 "t.yaml:2:13: push.interval: bad duration '15sec' (a whole number and ms, s, m or h, like 500ms, "
	 "15s, 1m30s)"},
	{"push:\n  interval: 500ms\n", "t.yaml:2:13: push.interval: '500ms' is out of range (1s..1h)"},
	{"push:\n  interval: 2h\n", "t.yaml:2:13: push.interval: '2h' is out of range (1s..1h)"},
	{"push:\n  timeout: 0s\n", "t.yaml:2:12: push.timeout: '0s' is out of range (100ms..10m)"},
	{"push:\n  idle_close: 500ms\n", "t.yaml:2:15: push.idle_close: '500ms' is out of range (1s..1h)"},
	{"push:\n  timeout: 99999999999999999999h\n",
	 "t.yaml:2:12: push.timeout: '99999999999999999999h' is out of range (100ms..10m)"},
	{"push:\n  retry:\n    initial: 5s\n    max: 2s\n",
	 "t.yaml:4:10: push.retry.max (2s) is less than push.retry.initial (5s)"},
	{"push:\n  retry:\n    initial: 2m\n",
	 "t.yaml:3:14: push.retry.max (1m) is less than push.retry.initial (2m)"},
	{"push:\n  spool:\n    max_bytes: lots\n",
	 "t.yaml:3:16: push.spool.max_bytes: bad size 'lots' (bytes, or a whole number and B, KiB, MiB, "
	 "GiB, TiB, kB, MB, GB or TB)"},
	{"push:\n  spool:\n    max_bytes: 10M\n",
	 "t.yaml:3:16: push.spool.max_bytes: bad size '10M' (bytes, or a whole number and B, KiB, MiB, "
	 "GiB, TiB, kB, MB, GB or TB)"},
	{"push:\n  spool:\n    max_bytes: 512KiB\n",
	 "t.yaml:3:16: push.spool.max_bytes: '512KiB' is out of range (1MiB..1TiB)"},
	{"push:\n  spool:\n    max_bytes: 2TiB\n",
	 "t.yaml:3:16: push.spool.max_bytes: '2TiB' is out of range (1MiB..1TiB)"},
	{"push:\n  spool:\n    dir: \"\"\n", "t.yaml:3:10: push.spool.dir: must not be empty"},
	{"push:\n  spool:\n    dir: null\n",
	 "t.yaml:3:10: push.spool.dir: expected a directory, got nothing (null)"},

	/* collectors, TLS, listen */
	{"push:\n  collectors: [\"http://a:9090/\", \"ftp://b/\"]\n",
	 "t.yaml:2:34: push.collectors[1]: 'ftp://b/' is not an http:// or https:// URL"},
	{"push:\n  collectors: [\"collector:9090\"]\n",
	 "t.yaml:2:16: push.collectors[0]: 'collector:9090' is not an http:// or https:// URL"},
	{"push:\n  collectors: [\"http://a/\", \"http://a/\"]\n",
	 "t.yaml:2:29: push.collectors[1]: 'http://a/' is already listed as push.collectors[0]"},
	{"push:\n  collectors: \"http://a/\"\n",
	 "t.yaml:2:15: push.collectors: expected a list, got 'http://a/' (write ['http://a/'])"},
	{"push:\n  collectors: [\"http://user:pw@a/\"]\n",
	 "t.yaml:2:16: push.collectors[0]: 'http://user:pw@a/' has credentials in it, which are not "
	 "supported (use push.token_file)"},
	{"push:\n  collectors: [\"http://a:0/\"]\n",
	 "t.yaml:2:16: push.collectors[0]: 'http://a:0/' has a bad port (1..65535)"},
	{"push:\n  collectors: [\"http://a:65536/\"]\n",
	 "t.yaml:2:16: push.collectors[0]: 'http://a:65536/' has a bad port (1..65535)"},
	{"push:\n  collectors: [\"https:///push\"]\n",
	 "t.yaml:2:16: push.collectors[0]: 'https:///push' has no host name"},
	{"push:\n  collectors: [\"http://a b/\"]\n",
	 "t.yaml:2:16: push.collectors[0]: 'http://a b/' contains a space"},
	{"push:\n  collectors: [\"http://a!b/\"]\n",
	 "t.yaml:2:16: push.collectors[0]: 'http://a!b/' has a bad host name"},
	{"push:\n  collectors: [\"http://[zz]/\"]\n",
	 "t.yaml:2:16: push.collectors[0]: 'http://[zz]/' has a bad IPv6 address"},
	{"push:\n  collectors: []\n",
	 "t.yaml:2:15: push.collectors: empty and no metrics.listen: the agent's data would go nowhere"},
	{"push:\n  tls:\n    cert_file: /etc/c.pem\n",
	 "t.yaml:3:5: push.tls: cert_file and key_file go together (key_file is not set)"},
	{"push:\n  token_file: \"\"\n",
	 "t.yaml:2:15: push.token_file: must not be empty (write null for none)"},
	{"metrics:\n  listen: 9465\n",
	 "t.yaml:2:11: metrics.listen: expected HOST:PORT (like 127.0.0.1:9465), got '9465'"},
	{"metrics:\n  listen: \"localhost:http\"\n",
	 "t.yaml:2:11: metrics.listen: 'localhost:http' has a bad port (1..65535)"},
	{"metrics:\n  listen: \"::1:9465\"\n",
	 "t.yaml:2:11: metrics.listen: '::1:9465': an IPv6 address goes in brackets ([::1]:9465)"},

	/* probes */
	{"probes:\n  spec: x\n",
	 "t.yaml:2:3: probes: expected a list of probes (- spec: ...), got a mapping"},
	{"probes:\n  - hist: x\n",
	 "t.yaml:2:5: probes[0]: no spec (spec: \"sdt:PROVIDER:NAME@BINARY\", say)"},
	{"probes:\n  - [a]\n",
	 "t.yaml:2:5: probes[0]: expected a probe (a spec, or a mapping with spec:), got a list"},
	{"probes:\n  - spec: malloc\n",
	 "t.yaml:2:11: probes[0].spec: malloc: not a probe; want u:BINARY:SYMBOL, "
	 "sdt:PROVIDER:NAME[@BINARY], k:FUNC or SUBSYS:EVENT"},
	{"probes:\n  - spec: \"k:vfs_read%return arg1\"\n",
	 "t.yaml:2:11: probes[0].spec: k:vfs_read%return: \"arg1\" is gone at return; a %return "
	 "probe takes $retval or %REG"},
	{"probes:\n  - \"k:tcp_sendmsg size:u128\"\n",
	 "t.yaml:2:5: probes[0]: k:tcp_sendmsg: unknown type \":u128\" (u8..u64, s8..s64, x8..x64)"},
	{"probes:\n  - \"u:malloc\"\n",
	 "t.yaml:2:5: probes[0]: u:malloc: want u:BINARY:SYMBOL[+OFF][%return]"},
	{"probes:\n  - spec: \"sdt:postgresql@/usr/bin/postgres\"\n",
	 "t.yaml:2:11: probes[0].spec: sdt:postgresql@/usr/bin/postgres: want "
	 "sdt:PROVIDER:NAME[@BINARY]"},
	{"probes:\n  - spec: \"u:libc:malloc 1x=%di\"\n",
	 "t.yaml:2:11: probes[0].spec: u:libc:malloc: bad argument name \"1x\" (letters, digits, _; "
	 "at most 63)"},
	{"probes:\n  - spec: \"u:libc:malloc size=%di\"\n    hist: bytes\n",
	 "t.yaml:3:11: probes[0].hist: 'bytes' is not an argument of the probe; it has size (name one "
	 "in the spec: \"... bytes=arg0\")"},
	{"probes:\n  - spec: \"sdt:postgresql:query__start\"\n    hist: query\n",
	 "t.yaml:3:11: probes[0].hist: 'query' is not an argument of the probe; it has none (name one "
	 "in the spec: \"... query=arg0\")"},
	{"probes:\n  - spec: u:libc:free\n    latency_end: u:libc:free\n",
	 "t.yaml:3:18: probes[0].latency_end: the same probe as spec; the latency needs another probe "
	 "(for a function: u:BINARY:SYMBOL%return)"},
	{"probes:\n  - spec: u:libc:free\n    latency_end: free\n",
	 "t.yaml:3:18: probes[0].latency_end: free: not a probe; want u:BINARY:SYMBOL, "
	 "sdt:PROVIDER:NAME[@BINARY], k:FUNC or SUBSYS:EVENT"},
	{"probes:\n  - u:libc:free\n  - sched:sched_switch\n  - spec: u:libc:free\n",
	 "t.yaml:4:5: probes[2]: the same probe as probes[0] (line 2)"},
	{"probes:\n  - spec: block:block_rq_issue dev\n    latency_key: [dev]\n",
	 "t.yaml:3:18: probes[0].latency_key: pairs a latency: give latency_end too"},
	{"probes:\n  - spec: block:block_rq_issue dev sector\n"
	 "    latency_end: block:block_rq_complete dev\n    latency_key: [dev, sector]\n",
	 "t.yaml:4:18: probes[0].latency_key: 'sector' is not an argument of latency_end; it has dev "
	 "(name the field in both specs: \"block:block_rq_issue dev sector\")"},
	{"probes:\n  - spec: u:libc:free\n    stacks: maybe\n",
	 "t.yaml:3:13: probes[0].stacks: expected true or false, got 'maybe'"},

	/* strings */
	{"host:\n  name: \"a\\x01b\"\n",
	 "t.yaml:2:9: host.name: contains a control character (at byte 1)"},
	{"host:\n  name: \"a\\0b\"\n", "t.yaml:2:9: host.name: contains a NUL character"},
	{"host:\n  name: \"a\\u0085b\"\n",
	 "t.yaml:2:9: host.name: contains a control character (at byte 1)"},
	{"host:\n  agent_id_file: [a]\n",
	 "t.yaml:2:18: host.agent_id_file: expected a file path, got a list"},

	/* YAML itself */
	{"sampling:\n\tfrequency: 49\n",
	 "t.yaml:2:1: YAML syntax error: found character that cannot start any token (while scanning for "
	 "the next token at line 2)"},
	{"host: {name: x\n",
	 "t.yaml:2:1: YAML syntax error: did not find expected ',' or '}' (while parsing a flow mapping "
	 "at line 1)"},
	{"a: *nowhere\n", "t.yaml:1:4: YAML syntax error: found undefined alias"},
	{"host: {name: \"\xff\"}\n",
	 "t.yaml: not YAML text: invalid leading UTF-8 octet (byte 0xff at offset 14)"},
	{"host: [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]\n",
	 "t.yaml:1:22: nested more than 16 levels deep"},
	{"a: &a1 x\nb: &a2 x\nc: &a3 x\nd: &a4 x\ne: &a5 x\nf: &a6 x\ng: &a7 x\nh: &a8 x\n"
	 "i: &a9 x\nj: &a10 x\nk: &a11 x\nl: &a12 x\nm: &a13 x\nn: &a14 x\no: &a15 x\np: &a16 x\n"
	 "q: [&b1 x, &b2 x, &b3 x, &b4 x, &b5 x, &b6 x, &b7 x, &b8 x, &b9 x, &b10 x, &b11 x, &b12 x,"
	 " &b13 x, &b14 x, &b15 x, &b16 x, &b17 x, &b18 x, &b19 x, &b20 x, &b21 x, &b22 x, &b23 x,"
	 " &b24 x, &b25 x, &b26 x, &b27 x, &b28 x, &b29 x, &b30 x, &b31 x, &b32 x, &b33 x, &b34 x,"
	 " &b35 x, &b36 x, &b37 x, &b38 x, &b39 x, &b40 x, &b41 x, &b42 x, &b43 x, &b44 x, &b45 x,"
	 " &b46 x, &b47 x, &b48 x, &b49 x]\n",
	 "t.yaml:17:380: more than 64 anchors (&)"},
};

static void test_errors(void **state)
{
	size_t bad = 0;

	for (size_t i = 0; i < NCASES(err_cases); i++) {
		const struct err_case *e = &err_cases[i];
		struct config *c = (struct config *)0x1;
		char err[512];
		int rc = config_parse("t.yaml", e->yaml, strlen(e->yaml), &c, err, sizeof(err));

		if (rc != -EINVAL || strcmp(err, e->msg)) {
			print_error("case %zu (rc %d):\n%s got: %s\nwant: %s\n", i, rc, e->yaml, err,
				    e->msg);
			bad++;
			continue;
		}
		assert_ptr_equal(c, (struct config *)0x1); /* untouched */
		/* Without a buffer: the same result, nothing written. */
		rc = config_parse("t.yaml", e->yaml, strlen(e->yaml), &c, NULL, 0);
		assert_int_equal(rc, -EINVAL);
	}
	if (bad)
		fail_msg("%zu of %zu cases failed", bad, NCASES(err_cases));
}

/* Hostile shapes that make libyaml slow are refused before they cost:
 * 500,000 nested brackets, 100,000 aliases of one anchor. */
static void test_hostile(void **state)
{
	size_t n = 500000;
	char *b = malloc(2 * n + 16), err[256];
	struct config *c = NULL;

	assert_non_null(b);
	memcpy(b, "a: ", 3);
	memset(b + 3, '[', n);
	memset(b + 3 + n, ']', n);
	b[3 + 2 * n] = '\0';
	assert_int_equal(config_parse("t.yaml", b, strlen(b), &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.yaml:1:19: nested more than 16 levels deep");

	{
		size_t o = (size_t)snprintf(b, 2 * n + 16, "a: &x [1]\nb: [");

		for (size_t i = 0; i < 100000; i++, o += 4)
			memcpy(b + o, i ? ",*x " : "*x  ", 4);
		memcpy(b + o, "]\n", 3);
	}
	assert_int_equal(config_parse("t.yaml", b, strlen(b), &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.yaml:2:262: more than 64 aliases (*)");
	assert_null(c);
	free(b);
}

/* The caps on lists and strings. */
static void test_caps(void **state)
{
	char *b = malloc(16384), err[256];
	struct config *c = NULL;
	size_t o;

	assert_non_null(b);
	o = (size_t)snprintf(b, 16384, "push:\n  collectors:\n");
	for (int i = 0; i < 17; i++)
		o += (size_t)snprintf(b + o, 16384 - o, "    - http://c%d/\n", i);
	assert_int_equal(config_parse("t.yaml", b, o, &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.yaml:3:5: push.collectors: 17 items, at most 16 are allowed");

	o = (size_t)snprintf(b, 16384, "probes:\n");
	for (int i = 0; i < 33; i++)
		o += (size_t)snprintf(b + o, 16384 - o, "  - u:libc:f%d\n", i);
	assert_int_equal(config_parse("t.yaml", b, o, &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.yaml:2:3: probes: 33 probes, at most 32 are allowed");
	/* 32 is fine */
	o -= strlen("  - u:libc:f32\n");
	assert_int_equal(config_parse("t.yaml", b, o, &c, err, sizeof(err)), 0);
	assert_int_equal(c->nprobes, 32);
	config_free(c);
	c = NULL;

	o = (size_t)snprintf(b, 16384, "push:\n  spool:\n    dir: /");
	memset(b + o, 'd', 4096);
	o += 4096;
	b[o] = '\0';
	assert_int_equal(config_parse("t.yaml", b, o, &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.yaml:3:10: push.spool.dir: longer than 4096 bytes");
	assert_int_equal(config_parse("t.yaml", b, o - 1, &c, err, sizeof(err)), 0);
	assert_int_equal(strlen(c->push.spool.dir), 4096);
	config_free(c);

	/* A long value is cut in a message, at a character boundary. */
	o = (size_t)snprintf(b, 16384, "log: {level: \"");
	for (int i = 0; i < 40; i++)
		o += (size_t)snprintf(b + o, 16384 - o, "é");
	o += (size_t)snprintf(b + o, 16384 - o, "\"}\n");
	c = NULL;
	assert_int_equal(config_parse("t.yaml", b, o, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "got 'éééééééééééééééééééééééééééééé...'"));
	assert_null(c);
	free(b);
}

/* A message is cut to the buffer, never overrun. */
static void test_error_truncated(void **state)
{
	static const char yaml[] = "sampling:\n  frequncy: 99\n";
	char err[16];
	struct config *c = NULL;

	memset(err, 'X', sizeof(err));
	assert_int_equal(config_parse("t.yaml", yaml, strlen(yaml), &c, err, 10), -EINVAL);
	assert_string_equal(err, "t.yaml:2:");
	assert_int_equal(err[10], 'X');
	assert_null(c);
}

/* Every allocation of loading the example fails in turn: -ENOMEM, nothing
 * left allocated, *out untouched; then it loads. */
/* One run of the torture loop: the example parsed; failing, -ENOMEM with
 * its message and *out untouched. */
static void parse_run(void *ctx)
{
	const char *text = ctx;
	struct config *c = (struct config *)0x1;
	char err[512];
	int rc = config_parse("t.yaml", text, strlen(text), &c, err, sizeof(err));

	if (rc == 0) {
		/* only once no allocation failed */
		assert_false(tl_alloc_failed());
		config_free(c);
		return;
	}
	if (rc != -ENOMEM)
		fail_msg("rc %d (%s)", rc, err);
	assert_string_equal(err, "t.yaml: out of memory");
	assert_ptr_equal(c, (struct config *)0x1);
}

static void test_out_of_memory(void **state)
{
	char *path, *text;

	tl_alloc_require();
	path = tl_tree_file(EXAMPLE);
	text = tl_read_text(path);
	assert_true(tl_alloc_torture(parse_run, text, 100000) > 50);
	free(text);
	free(path);
}

TL_MAIN(test_errors, test_hostile, test_caps, test_error_truncated, test_out_of_memory)
