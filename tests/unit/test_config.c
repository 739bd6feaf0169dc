// SPDX-License-Identifier: MIT
/*
 * agent/config: the defaults, the example of docs/config.md (kept as
 * tests/data/agent-example.yaml, and checked to be the same text as the
 * doc's, so neither rots), its probes resolved against the host's
 * PostgreSQL, accepted values (durations, sizes), loading files, cgroup
 * globs, and config_dump() read back to the same values. The error
 * messages are in test_config_errors.c.
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
#include "tests/unit/testlib.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))
#define EXAMPLE "tests/data/agent-example.yaml"
#define DOC "docs/config.md"
#define POSTGRES "/usr/lib/postgresql/15/bin/postgres"
static struct config *parse_ok(const char *yaml)
{
	struct config *c = NULL;
	char err[512];
	int rc = config_parse("t.yaml", yaml, strlen(yaml), &c, err, sizeof(err));

	if (rc)
		fail_msg("rc %d for:\n%s\n%s", rc, yaml, err);
	assert_non_null(c);
	return c;
}

/* The example file (EXAMPLE) loaded; the test fails with the reason when
 * it does not load. Its path in *@path when not NULL (the caller frees). */
static struct config *load_example(char **path)
{
	char *p = tl_tree_file(EXAMPLE), err[512];
	struct config *c = NULL;

	if (config_load(p, &c, err, sizeof(err)))
		fail_msg("%s: %s", p, err);
	if (path)
		*path = p;
	else
		free(p);
	return c;
}

/* DOC shows @yaml (@what in the message), byte for byte, in a ```yaml
 * block. */
static void assert_doc_shows(const char *yaml, const char *what)
{
	char *dpath = tl_tree_file(DOC), *doc = tl_read_text(dpath), *block;

	if (asprintf(&block, "```yaml\n%s```\n", yaml) < 0)
		fail();
	if (!strstr(doc, block))
		fail_msg("%s does not show %s verbatim in a ```yaml block:\n%s", DOC, what, yaml);
	free(block);
	free(doc);
	free(dpath);
}

static void assert_lists_equal(char **a, size_t na, char **b, size_t nb)
{
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++)
		assert_string_equal(a[i], b[i]);
}

/* Every value (not the path or the probes' positions). */
static void assert_config_equal(const struct config *a, const struct config *b)
{
	assert_string_equal(a->host.name, b->host.name);
	assert_string_equal(a->host.agent_id_file, b->host.agent_id_file);
	assert_lists_equal(a->cgroups.include, a->cgroups.ninclude, b->cgroups.include,
			   b->cgroups.ninclude);
	assert_lists_equal(a->cgroups.exclude, a->cgroups.nexclude, b->cgroups.exclude,
			   b->cgroups.nexclude);
	assert_int_equal(a->cgroups.containers_only, b->cgroups.containers_only);
	assert_int_equal(a->counters.enabled, b->counters.enabled);
	assert_lists_equal(a->counters.events, a->counters.nevents, b->counters.events,
			   b->counters.nevents);
	assert_int_equal(a->sampling.enabled, b->sampling.enabled);
	assert_int_equal(a->sampling.frequency, b->sampling.frequency);
	assert_int_equal(a->sampling.call_graph, b->sampling.call_graph);
	assert_int_equal(a->sampling.stack_bytes, b->sampling.stack_bytes);
	assert_string_equal(a->sampling.event, b->sampling.event);
	assert_int_equal(a->sampling.per_cgroup, b->sampling.per_cgroup);
	assert_int_equal(a->symbols.demangle, b->symbols.demangle);
	assert_int_equal(a->nprobes, b->nprobes);
	for (size_t i = 0; i < a->nprobes; i++) {
		assert_string_equal(a->probes[i].spec, b->probes[i].spec);
		tl_assert_str_or_null(a->probes[i].hist, b->probes[i].hist);
		tl_assert_str_or_null(a->probes[i].latency_end, b->probes[i].latency_end);
		assert_int_equal(a->probes[i].stacks, b->probes[i].stacks);
	}
	assert_int_equal(a->push.interval_ms, b->push.interval_ms);
	assert_lists_equal(a->push.collectors, a->push.ncollectors, b->push.collectors,
			   b->push.ncollectors);
	tl_assert_str_or_null(a->push.token_file, b->push.token_file);
	assert_int_equal(a->push.timeout_ms, b->push.timeout_ms);
	tl_assert_str_or_null(a->push.tls.ca_file, b->push.tls.ca_file);
	tl_assert_str_or_null(a->push.tls.cert_file, b->push.tls.cert_file);
	tl_assert_str_or_null(a->push.tls.key_file, b->push.tls.key_file);
	assert_int_equal(a->push.tls.verify, b->push.tls.verify);
	assert_string_equal(a->push.spool.dir, b->push.spool.dir);
	assert_int_equal(a->push.spool.max_bytes, b->push.spool.max_bytes);
	assert_int_equal(a->push.retry.initial_ms, b->push.retry.initial_ms);
	assert_int_equal(a->push.retry.max_ms, b->push.retry.max_ms);
	assert_int_equal(a->log.format, b->log.format);
	assert_int_equal(a->log.level, b->log.level);
	tl_assert_str_or_null(a->metrics.listen, b->metrics.listen);
}

/* ---- defaults ---- */

static void check_defaults(const struct config *c)
{
	static const char *const events[] = {"task-clock",   "context-switches", "cpu-migrations",
					     "page-faults", "cycles",		"instructions"};

	assert_string_equal(c->host.name, "");
	assert_string_equal(c->host.agent_id_file, "/var/lib/cgperf/agent-id");
	assert_int_equal(c->cgroups.ninclude, 1);
	assert_string_equal(c->cgroups.include[0], "/**");
	assert_int_equal(c->cgroups.nexclude, 0);
	assert_false(c->cgroups.containers_only);
	assert_true(c->counters.enabled);
	assert_int_equal(c->counters.nevents, NCASES(events));
	for (size_t i = 0; i < NCASES(events); i++)
		assert_string_equal(c->counters.events[i], events[i]);
	assert_true(c->sampling.enabled);
	assert_int_equal(c->sampling.frequency, 49);
	assert_int_equal(c->sampling.call_graph, CONFIG_CALL_GRAPH_FP);
	assert_int_equal(c->sampling.stack_bytes, 8192);
	assert_string_equal(c->sampling.event, "cpu-clock");
	assert_true(c->sampling.per_cgroup);
	assert_int_equal(c->symbols.demangle, DEMANGLE_FULL);
	assert_int_equal(c->nprobes, 0);
	assert_int_equal(c->push.interval_ms, 15000);
	assert_int_equal(c->push.ncollectors, 1);
	assert_string_equal(c->push.collectors[0], "http://127.0.0.1:9090/api/v1/push");
	assert_null(c->push.token_file);
	assert_int_equal(c->push.timeout_ms, 10000);
	assert_null(c->push.tls.ca_file);
	assert_null(c->push.tls.cert_file);
	assert_null(c->push.tls.key_file);
	assert_true(c->push.tls.verify);
	assert_string_equal(c->push.spool.dir, "/var/lib/cgperf/spool");
	assert_int_equal(c->push.spool.max_bytes, 256ULL << 20);
	assert_int_equal(c->push.retry.initial_ms, 1000);
	assert_int_equal(c->push.retry.max_ms, 60000);
	assert_int_equal(c->log.format, CONFIG_LOG_LOGFMT);
	assert_int_equal(c->log.level, CONFIG_LOG_INFO);
	assert_null(c->metrics.listen);
}

static void test_defaults(void **state)
{
	/* Documents that say nothing: the defaults. */
	static const char *const empty[] = {"", "\n", "# only a comment\n", "---\n", "~\n",
					    "null\n", "{}\n", "host:\nsampling: ~\nprobes:\n"};
	struct config *c = config_defaults(), *l = NULL;
	char err[256];

	assert_non_null(c);
	check_defaults(c);
	assert_null(c->path);
	assert_int_equal(config_load(NULL, &l, err, sizeof(err)), 0);
	check_defaults(l);
	config_free(l);
	for (size_t i = 0; i < NCASES(empty); i++) {
		l = parse_ok(empty[i]);
		check_defaults(l);
		assert_string_equal(l->path, "t.yaml");
		config_free(l);
	}
	config_free(c);
	config_free(NULL);
}

/* ---- the example of docs/config.md ---- */

static void test_example(void **state)
{
	char *path;
	struct config *c = load_example(&path);

	assert_string_equal(c->path, path);
	assert_string_equal(c->host.name, "");
	assert_int_equal(c->cgroups.ninclude, 1);
	assert_string_equal(c->cgroups.include[0], "/**/postgresql@*.service");
	assert_int_equal(c->counters.nevents, 6);
	assert_int_equal(c->sampling.frequency, 99);
	assert_int_equal(c->sampling.call_graph, CONFIG_CALL_GRAPH_DWARF);
	assert_int_equal(c->sampling.stack_bytes, 16384);
	assert_int_equal(c->nprobes, 5);
	assert_string_equal(c->probes[0].spec,
			    "sdt:postgresql:query__start@/usr/lib/postgresql/15/bin/postgres");
	assert_string_equal(c->probes[0].latency_end,
			    "sdt:postgresql:query__done@/usr/lib/postgresql/15/bin/postgres");
	assert_null(c->probes[0].hist);
	assert_false(c->probes[0].stacks);
	assert_true(c->probes[1].stacks);
	assert_string_equal(c->probes[2].hist, "bytes");
	assert_null(c->probes[2].latency_end);
	assert_string_equal(c->probes[3].hist, "space_kb");
	assert_null(c->probes[4].hist);
	assert_int_equal(c->probes[0].line, 32);
	assert_int_equal(c->probes[0].col, 11);
	assert_int_equal(c->push.ncollectors, 2);
	assert_string_equal(c->push.token_file, "/etc/cgperf/token");
	assert_string_equal(c->push.tls.ca_file, "/etc/cgperf/ca.pem");
	assert_null(c->push.tls.cert_file);
	assert_int_equal(c->push.spool.max_bytes, 1ULL << 30);
	assert_int_equal(c->push.retry.max_ms, 120000);
	assert_string_equal(c->metrics.listen, "127.0.0.1:9465");

	/* Some backends of the cluster, and what is not one. */
	assert_true(config_cgroup_wanted(
		c, "/system.slice/system-postgresql.slice/postgresql@15-main.service"));
	assert_true(config_cgroup_wanted(c, "/system.slice/postgresql@15-main.service"));
	assert_false(config_cgroup_wanted(c, "/system.slice/postgresql.service"));
	assert_false(config_cgroup_wanted(c, "/"));
	config_free(c);
	free(path);
}

/* The doc shows the example file, byte for byte, in a ```yaml block. */
static void test_example_in_doc(void **state)
{
	char *epath = tl_tree_file(EXAMPLE), *ex = tl_read_text(epath);

	assert_doc_shows(ex, EXAMPLE);
	free(ex);
	free(epath);
}

/* Its probes exist in Debian's PostgreSQL 15, with the arguments named. */
static void test_example_probes_resolve(void **state)
{
	struct config *c;
	char err[2048];

	if (access(POSTGRES, R_OK) != 0) {
		print_message("skip: %s not installed\n", POSTGRES);
		skip();
	}
	c = load_example(NULL);
	for (size_t i = 0; i < c->nprobes; i++) {
		const struct config_probe *cp = &c->probes[i];
		const char *specs[2] = {cp->spec, cp->latency_end};

		for (int k = 0; k < 2 && specs[k]; k++) {
			struct probe p;
			bool found = !cp->hist || k == 1;
			int rc = probe_resolve(specs[k], NULL, 0, &p, err, sizeof(err));

			if (rc)
				fail_msg("%s: %s", specs[k], err);
			for (int a = 0; a < p.nargs && !found; a++)
				found = !strcmp(p.args[a].name, cp->hist);
			if (!found)
				fail_msg("%s: no argument %s", specs[k], cp->hist);
			probe_release(&p);
		}
	}
	config_free(c);
}

/* ---- accepted variations ---- */

static void test_accepted(void **state)
{
	struct config *c;

	c = parse_ok("sampling: {frequency: 10000, stack_bytes: 65528, call_graph: dwarf, "
		     "enabled: False, per_cgroup: FALSE}\n");
	assert_int_equal(c->sampling.frequency, 10000);
	assert_int_equal(c->sampling.stack_bytes, 65528);
	assert_false(c->sampling.enabled);
	assert_false(c->sampling.per_cgroup);
	config_free(c);

	/* Probe stacks without CPU sampling: they still take its unwinding
	 * settings. */
	c = parse_ok("sampling: {enabled: false, call_graph: dwarf, stack_bytes: 4KiB, "
		     "per_cgroup: false}\nprobes:\n  - {spec: u:libc:malloc, stacks: true}\n");
	assert_false(c->sampling.enabled);
	assert_int_equal(c->sampling.call_graph, CONFIG_CALL_GRAPH_DWARF);
	assert_int_equal(c->sampling.stack_bytes, 4096);
	assert_false(c->sampling.per_cgroup);
	assert_true(c->probes[0].stacks);
	config_free(c);

	/* symbols.demangle: the three styles, and YAML booleans. */
	{
		static const struct {
			const char *v;
			enum demangle_style want;
		} dm[] = { { "full", DEMANGLE_FULL },	{ "short", DEMANGLE_SHORT },
			   { "none", DEMANGLE_NONE },	{ "true", DEMANGLE_FULL },
			   { "false", DEMANGLE_NONE } };
		char text[64];

		for (size_t i = 0; i < NCASES(dm); i++) {
			snprintf(text, sizeof(text), "symbols:\n  demangle: %s\n", dm[i].v);
			c = parse_ok(text);
			assert_int_equal(c->symbols.demangle, dm[i].want);
			config_free(c);
		}
	}

	c = parse_ok("sampling:\n  frequency: 1\n  stack_bytes: 8\n  event: \"cs:u\"\n");
	assert_int_equal(c->sampling.frequency, 1);
	assert_int_equal(c->sampling.stack_bytes, 8);
	assert_string_equal(c->sampling.event, "cs:u");
	config_free(c);

	/* Tracepoints and raw events are looked up when the agent starts. */
	c = parse_ok("counters:\n  events: [sched:sched_switch, r00c0, 'cycles:u', cs]\n");
	assert_int_equal(c->counters.nevents, 4);
	assert_string_equal(c->counters.events[0], "sched:sched_switch");
	config_free(c);

	c = parse_ok("counters:\n  enabled: false\n  events: []\n");
	assert_false(c->counters.enabled);
	assert_int_equal(c->counters.nevents, 0);
	config_free(c);

	/* No collector is fine when the agent serves /metrics. */
	c = parse_ok("push:\n  collectors: []\nmetrics:\n  listen: \":9465\"\n");
	assert_int_equal(c->push.ncollectors, 0);
	assert_string_equal(c->metrics.listen, ":9465");
	config_free(c);

	c = parse_ok("push:\n  collectors:\n    - HTTPS://[::1]:9443/push\n    - http://a_b.example:1\n"
		     "    - https://collector\n  interval: 1h\n  timeout: 100ms\n"
		     "  retry: {initial: 10ms, max: 24h}\n  spool: {max_bytes: 1MiB}\n"
		     "  tls: {cert_file: /c.pem, key_file: /k.pem, verify: false}\n"
		     "metrics: {listen: \"[::1]:9465\"}\n");
	assert_int_equal(c->push.ncollectors, 3);
	assert_int_equal(c->push.interval_ms, 3600000);
	assert_int_equal(c->push.timeout_ms, 100);
	assert_int_equal(c->push.retry.initial_ms, 10);
	assert_int_equal(c->push.retry.max_ms, 24 * 3600000);
	assert_int_equal(c->push.spool.max_bytes, 1 << 20);
	assert_string_equal(c->push.tls.key_file, "/k.pem");
	assert_false(c->push.tls.verify);
	config_free(c);

	/* A probe can be its spec alone; anchors and aliases work. */
	c = parse_ok("probes:\n  - \"u:libc:malloc size=%di\"\n  - spec: sched:sched_switch\n"
		     "    stacks: true\n  - spec: u:libc:free\n    latency_end: u:libc:free%return\n"
		     "push:\n  interval: &t 30s\n  timeout: *t\n");
	assert_int_equal(c->nprobes, 3);
	assert_string_equal(c->probes[0].spec, "u:libc:malloc size=%di");
	assert_int_equal(c->probes[0].line, 2);
	assert_int_equal(c->probes[0].col, 5);
	assert_null(c->probes[0].hist);
	assert_true(c->probes[1].stacks);
	assert_string_equal(c->probes[2].latency_end, "u:libc:free%return");
	assert_int_equal(c->probes[2].nlatency_key, 0);
	assert_int_equal(c->push.interval_ms, 30000);
	assert_int_equal(c->push.timeout_ms, 30000);
	config_free(c);

	/* latency_key: fields both specs name. */
	c = parse_ok("probes:\n  - spec: block:block_rq_issue dev sector\n"
		     "    latency_end: block:block_rq_complete dev sector\n"
		     "    latency_key: [dev, sector]\n");
	assert_int_equal(c->probes[0].nlatency_key, 2);
	assert_string_equal(c->probes[0].latency_key[1], "sector");
	config_free(c);

	/* hist names an argument as written or as named. */
	c = parse_ok("probes:\n  - {spec: \"u:libc:malloc %di\", hist: di}\n"
		     "  - {spec: \"sched:sched_switch prev_pid\", hist: prev_pid}\n"
		     "  - {spec: \"sdt:p:n arg0 len=arg1\", hist: len}\n");
	assert_string_equal(c->probes[0].hist, "di");
	config_free(c);

	c = parse_ok("host: {name: ~, agent_id_file: relative/id}\n"
		     "cgroups:\n  include: [\"/\", \"/system.slice/**\", \"/[a-c]?/*.scope\", "
		     "'/\\[x', '/[]a]', '/[!]]']\n"
		     "  exclude: [/system.slice/cron.service]\n  containers_only: true\n"
		     "log: {format: json, level: debug}\n");
	assert_string_equal(c->host.name, "");
	assert_string_equal(c->host.agent_id_file, "relative/id");
	assert_int_equal(c->cgroups.ninclude, 6);
	assert_string_equal(c->cgroups.include[3], "/\\[x");
	assert_true(c->cgroups.containers_only);
	assert_int_equal(c->log.format, CONFIG_LOG_JSON);
	assert_int_equal(c->log.level, CONFIG_LOG_DEBUG);
	config_free(c);
}

static void test_load_errors(void **state)
{
	char dir[] = "/tmp/cgperf-config-XXXXXX", path[PATH_MAX], err[512], *big;
	struct config *c = NULL;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/missing.yaml", dir);
	assert_int_equal(config_load(path, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "missing.yaml: No such file or directory"));
	assert_null(c);

	assert_int_equal(config_load(dir, &c, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, ": Is a directory"));

	/* Over 1 MiB: refused, whatever it holds. */
	snprintf(path, sizeof(path), "%s/big.yaml", dir);
	f = fopen(path, "we");
	assert_non_null(f);
	big = malloc(CONFIG_MAX_FILE + 1);
	assert_non_null(big);
	memset(big, '#', CONFIG_MAX_FILE + 1);
	assert_int_equal(fwrite(big, 1, CONFIG_MAX_FILE + 1, f), CONFIG_MAX_FILE + 1);
	fclose(f);
	assert_int_equal(config_load(path, &c, err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, "big.yaml: larger than 1048576 bytes"));
	assert_int_equal(config_parse("b", big, CONFIG_MAX_FILE + 1, &c, err, sizeof(err)), -EFBIG);
	/* Exactly 1 MiB of comment is read (and is the defaults). */
	assert_int_equal(truncate(path, CONFIG_MAX_FILE), 0);
	assert_int_equal(config_load(path, &c, err, sizeof(err)), 0);
	check_defaults(c);
	config_free(c);
	unlink(path);

	/* An error in a file names the file. */
	snprintf(path, sizeof(path), "%s/agent.yaml", dir);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs("# agent\nlog:\n  level: loud\n", f);
	fclose(f);
	c = NULL;
	assert_int_equal(config_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/agent.yaml:3:10: log.level: expected debug, info, warn or "
				    "error, got 'loud'"));
	assert_null(c);
	unlink(path);
	rmdir(dir);
	free(big);
}

/* ---- cgroup globs ---- */

struct glob_case {
	const char *glob, *path;
	bool match;
};

static const struct glob_case globs[] = {
	{"/**", "/", true},
	{"/**", "/a/b/c", true},
	{"/", "/", true},
	{"/", "/a", false},
	{"/*", "/", false},
	{"/*", "/a", true},
	{"/*", "/a/b", false},
	{"/system.slice/**", "/system.slice", true},
	{"/system.slice/**", "/system.slice/cron.service", true},
	{"/system.slice/**", "/user.slice", false},
	{"/system.slice/**", "/system.slicex", false},
	{"/**/postgresql@*.service", "/system.slice/system-postgresql.slice/postgresql@15-main.service",
	 true},
	{"/**/postgresql@*.service", "/postgresql@15-main.service", true},
	{"/**/postgresql@*.service", "/system.slice/postgresql@15-main.service/x", false},
	{"/**/postgresql@*.service", "/system.slice/postgresql.service", false},
	{"/a/**/b/**/c", "/a/x/b/y/z/c", true},
	{"/a/**/b/**/c", "/a/b/c", true},
	{"/a/**/b", "/a/bb", false},
	{"/a/**/b", "/a/b/b/b", true},
	{"/**/**/x", "/x", true},
	{"/**/x/**", "/a/x", true},
	{"/docker-*.scope", "/docker-3f2a.scope", true},
	{"/docker-**", "/docker-3f2a.scope", true},
	{"/docker-**", "/docker-3f2a.scope/init", false},
	{"/[ab]?", "/ax", true},
	{"/[!ab]?", "/ax", false},
	{"/*", "/.hidden", true},
	{"/a", "/a/", true},
	{"/\\*", "/*", true},
	{"/\\*", "/a", false},
	{"/\\[x", "/[x", true},
	{"/[]a]", "/]", true},
	{"/[!]a]", "/b", true},
	{"/a/b", "/a", false},
	{"/**/a/**/a/**/a/**/b", "/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a", false},
};

static void test_globs(void **state)
{
	for (size_t i = 0; i < NCASES(globs); i++)
		if (config_glob_match(globs[i].glob, globs[i].path) != globs[i].match)
			fail_msg("%s vs %s: want %s", globs[i].glob, globs[i].path,
				 globs[i].match ? "match" : "no match");
	assert_false(config_glob_match(NULL, "/"));
	assert_false(config_glob_match("/**", NULL));
}

#define DOCKER_ID "3f2a9c0b1d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddee"

static void test_cgroup_wanted(void **state)
{
	struct config *c = parse_ok("cgroups:\n  include: [\"/system.slice/**\", \"/machine.slice/*\"]\n"
				    "  exclude: [\"/system.slice/cron.service\"]\n");

	assert_true(config_cgroup_wanted(c, "/system.slice"));
	assert_true(config_cgroup_wanted(c, "/system.slice/ssh.service"));
	assert_false(config_cgroup_wanted(c, "/system.slice/cron.service"));
	assert_true(config_cgroup_wanted(c, "/system.slice/cron.service/sub")); /* not excluded */
	assert_true(config_cgroup_wanted(c, "/machine.slice/m.scope"));
	assert_false(config_cgroup_wanted(c, "/user.slice"));
	assert_false(config_cgroup_wanted(c, "/"));
	assert_false(config_cgroup_wanted(NULL, "/"));
	c->cgroups.containers_only = true;
	assert_false(config_cgroup_wanted(c, "/system.slice/ssh.service"));
	assert_true(config_cgroup_wanted(c, "/system.slice/docker-" DOCKER_ID ".scope"));
	config_free(c);

	c = config_defaults();
	assert_true(config_cgroup_wanted(c, "/"));
	assert_true(config_cgroup_wanted(c, "/user.slice/user-1000.slice"));
	config_free(c);
}

/* ---- dump ---- */

static char *dump(const struct config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(config_dump(c, f), 0);
	fclose(f);
	return buf;
}

/* dump -> parse gives the same values, and dumping those the same text. */
static void round_trip(const struct config *c)
{
	char *text = dump(c), *text2, err[512];
	struct config *back = NULL;
	int rc = config_parse("dump.yaml", text, strlen(text), &back, err, sizeof(err));

	if (rc)
		fail_msg("%s\nin:\n%s", err, text);
	assert_config_equal(c, back);
	text2 = dump(back);
	/* Only the first line (which file) differs. */
	assert_string_equal(strchr(text, '\n'), strchr(text2, '\n'));
	free(text);
	free(text2);
	config_free(back);
}

static void test_dump_round_trip(void **state)
{
	struct config *c = config_defaults();
	char err[512];

	round_trip(c);
	config_free(c);

	c = load_example(NULL);
	round_trip(c);
	config_free(c);

	/* Hostile strings, odd durations and sizes, no probes or lists. */
	c = parse_ok("host: {name: \"q\\\"uote\\\\back/slash # not: a comment 'é' ✓\"}\n"
		     "cgroups: {include: ['/a b/[x]*'], exclude: []}\n"
		     "counters: {enabled: false, events: []}\n"
		     "sampling: {stack_bytes: 1000, frequency: 1}\n"
		     "push:\n  interval: 59m59s\n  timeout: 1500ms\n  collectors: []\n"
		     "  spool: {max_bytes: 1048577, dir: \"- [x]\"}\n"
		     "  retry: {initial: 10ms, max: 1439m}\n"
		     "metrics: {listen: \":1\"}\n"
		     "probes:\n  - spec: \"u:/opt/a\'b:f\"\n    stacks: true\n");
	round_trip(c);
	config_free(c);

	/* Written by code, with what a file cannot hold: escaped on the way out. */
	c = config_defaults();
	free(c->host.name);
	c->host.name = strdup("line\nbreak\x01\x7f\xc2\x85");
	c->log.level = CONFIG_LOG_ERROR;
	c->log.format = CONFIG_LOG_JSON;
	{
		char *text = dump(c);
		struct config *back = NULL;

		/* YAML's escapes: \x7F, and \N for U+0085 (next line) */
		assert_non_null(strstr(text, "name: \"line\\nbreak\\x01\\x7F\\N\""));
		assert_non_null(strstr(text, "level: error"));
		assert_non_null(strstr(text, "format: json"));
		/* Control characters are refused on the way back in. */
		assert_int_equal(config_parse("d", text, strlen(text), &back, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "host.name: contains a control character"));
		free(text);
	}
	config_free(c);
}

static void test_dump_text(void **state)
{
	struct config *c = config_defaults();
	char *text = dump(c);

	/* The shape people read, from --print-config. */
	assert_non_null(strstr(text, "# cgperf-agent configuration (defaults)\n"
				     "# host.name \"\": the host's name\nhost:\n"
				     "  name: \"\"\n"
				     "  agent_id_file: \"/var/lib/cgperf/agent-id\"\n"));
	assert_non_null(strstr(text, "  include:\n  - \"/**\"\n  exclude: []\n"));
	assert_non_null(strstr(text, "sampling:\n  enabled: true\n  frequency: 49\n"
				     "  call_graph: fp\n  stack_bytes: 8192\n"));
	assert_non_null(strstr(text, "probes: []\npush:\n  interval: 15s\n"));
	assert_non_null(strstr(text, "  spool:\n    dir: \"/var/lib/cgperf/spool\"\n"
				     "    max_bytes: 256MiB\n  retry:\n    initial: 1s\n    max: 1m\n"));
	assert_non_null(strstr(text, "metrics:\n  listen: null\n"));

	/* docs/config.md shows all of it. */
	assert_doc_shows(text, "the defaults as config_dump() prints them");
	free(text);
	config_free(c);
	assert_int_equal(config_dump(NULL, stdout), -EINVAL);
}

/*
 * One grammar: a spec the command line (probe_resolve(), as `trace -e`
 * calls it) refuses for its shape, the configuration refuses with the same
 * words, and a spec the configuration accepts passes the command line's
 * grammar (what it resolves to depends on the host).
 */
static const char *const same_specs[] = {
	"u:libc:malloc", "u:libc:malloc size=%di", "u:libc:free%return ret=%ax",
	"u:/usr/bin/true:main+0x10", "sdt:postgresql:query__start q=arg0",
	"sdt:libc:setjmp@libc", "sched:sched_switch prev_pid", "malloc", "u:malloc",
	"u:libc:malloc%ret", "u:libc:malloc+0x10%return", "u:libc:malloc+zz",
	"u:libc:malloc 1x=%di", "u:libc:malloc %zz", "u:libc:malloc arg6",
	"u:libc:malloc%return arg0", "u:libc:malloc a=%di a=%si", "sdt:postgresql",
	"sdt:postgresql:query__start %di", "sdt:p:n@", "a:b:c", ":x",
	"u:libc:malloc a b c d e f g h i j k l m",
	"k:tcp_sendmsg size", "k:vfs_read%return $retval:s64", "k:vfs_read +0(%si):u32",
	"k:vfs_read %edi", "k:vfs_read+4%return", "k:1x", "k:vfs_read $retval", "k:f %di:u128",
};

static void test_probe_grammar_shared(void **state)
{
	size_t refused = 0;

	for (size_t i = 0; i < NCASES(same_specs); i++) {
		char yaml[256], err[1024] = "", cerr[1024] = "";
		struct probe_spec ps;
		struct probe p;
		struct config *c = NULL;
		int rc = probe_spec_parse(same_specs[i], &ps, err, sizeof(err));
		int crc;

		snprintf(yaml, sizeof(yaml), "probes:\n  - spec: '%s'\n", same_specs[i]);
		crc = config_parse("t.yaml", yaml, strlen(yaml), &c, cerr, sizeof(cerr));
		if ((rc == 0) != (crc == 0))
			fail_msg("\"%s\": grammar %d (%s), config %d (%s)", same_specs[i], rc, err,
				 crc, cerr);
		if (rc == 0) {
			probe_spec_release(&ps);
			config_free(c);
			continue;
		}
		refused++;
		/* the config says what the grammar says */
		if (!strstr(cerr, err))
			fail_msg("\"%s\": config says \"%s\", grammar \"%s\"", same_specs[i], cerr,
				 err);
		/* and the command line refuses it with the same code and words */
		{
			char rerr[1024] = "";
			int rrc = probe_resolve(same_specs[i], NULL, 0, &p, rerr, sizeof(rerr));

			if (rrc != rc || strcmp(rerr, err))
				fail_msg("\"%s\": resolve %d (%s), grammar %d (%s)", same_specs[i], rrc,
					 rerr, rc, err);
		}
	}
	assert_int_equal(refused, NCASES(same_specs) - 10);
}

TL_MAIN(test_defaults, test_example, test_example_in_doc, test_example_probes_resolve,
	test_accepted, test_probe_grammar_shared, test_load_errors, test_globs,
	test_cgroup_wanted, test_dump_round_trip, test_dump_text)
