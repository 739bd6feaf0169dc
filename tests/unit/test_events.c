// SPDX-License-Identifier: MIT
/*
 * agent/events: every built-in name and alias, modifiers, raw events,
 * tracepoints resolved from a fake tracefs built in a temp dir (including
 * names that try to walk out of it), the edit distance and the suggestions
 * offered for misspelt names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/perf/events.h"
#include "tests/unit/testlib.h"

/* ---- built-ins ---- */

struct builtin_case {
	const char *name, *canonical;
	enum ev_kind kind;
	uint32_t type;
	uint64_t config;
	bool is_clock;
};

#define SW(n, c, cfg) { n, c, EV_SOFTWARE, PERF_TYPE_SOFTWARE, cfg, false }
#define HW(n, c, cfg) { n, c, EV_HARDWARE, PERF_TYPE_HARDWARE, cfg, false }

static const struct builtin_case builtins[] = {
	{ "task-clock", "task-clock", EV_SOFTWARE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, true },
	{ "cpu-clock", "cpu-clock", EV_SOFTWARE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, true },
	SW("context-switches", "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES),
	SW("cs", "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES),
	SW("cpu-migrations", "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS),
	SW("migrations", "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS),
	SW("page-faults", "page-faults", PERF_COUNT_SW_PAGE_FAULTS),
	SW("faults", "page-faults", PERF_COUNT_SW_PAGE_FAULTS),
	SW("minor-faults", "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN),
	SW("major-faults", "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ),
	SW("alignment-faults", "alignment-faults", PERF_COUNT_SW_ALIGNMENT_FAULTS),
	SW("emulation-faults", "emulation-faults", PERF_COUNT_SW_EMULATION_FAULTS),
	SW("cgroup-switches", "cgroup-switches", 11 /* PERF_COUNT_SW_CGROUP_SWITCHES */),
	HW("cycles", "cycles", PERF_COUNT_HW_CPU_CYCLES),
	HW("cpu-cycles", "cycles", PERF_COUNT_HW_CPU_CYCLES),
	HW("instructions", "instructions", PERF_COUNT_HW_INSTRUCTIONS),
	HW("cache-references", "cache-references", PERF_COUNT_HW_CACHE_REFERENCES),
	HW("cache-misses", "cache-misses", PERF_COUNT_HW_CACHE_MISSES),
	HW("branches", "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS),
	HW("branch-instructions", "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS),
	HW("branch-misses", "branch-misses", PERF_COUNT_HW_BRANCH_MISSES),
	HW("bus-cycles", "bus-cycles", PERF_COUNT_HW_BUS_CYCLES),
	HW("stalled-cycles-frontend", "stalled-cycles-frontend",
	   PERF_COUNT_HW_STALLED_CYCLES_FRONTEND),
	HW("stalled-cycles-backend", "stalled-cycles-backend",
	   PERF_COUNT_HW_STALLED_CYCLES_BACKEND),
	HW("ref-cycles", "ref-cycles", PERF_COUNT_HW_REF_CPU_CYCLES),
};

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

static void test_builtins(void **state)
{
	for (size_t i = 0; i < NCASES(builtins); i++) {
		const struct builtin_case *c = &builtins[i];
		struct ev_spec ev;
		int err = ev_parse(c->name, NULL, &ev);

		if (err)
			fail_msg("\"%s\": %d", c->name, err);
		if (strcmp(ev.name, c->canonical))
			fail_msg("\"%s\": named \"%s\", want \"%s\"", c->name, ev.name, c->canonical);
		if (ev.kind != c->kind || ev.type != c->type || ev.config != c->config)
			fail_msg("\"%s\": kind %d type %u config %llu, want %d %u %llu", c->name,
				 ev.kind, ev.type, (unsigned long long)ev.config, c->kind, c->type,
				 (unsigned long long)c->config);
		if (ev.is_clock != c->is_clock || ev.exclude_user || ev.exclude_kernel)
			fail_msg("\"%s\": is_clock %d excl u%d k%d", c->name, ev.is_clock,
				 ev.exclude_user, ev.exclude_kernel);
		ev_spec_release(&ev);
		assert_null(ev.name);
	}
}

/* The table above covers every name the module lists, and the other way. */
static void test_builtin_listing(void **state)
{
	assert_int_equal(ev_builtin_count(), NCASES(builtins));
	for (size_t i = 0; i < ev_builtin_count(); i++) {
		const char *kind = NULL, *name = ev_builtin_name(i, &kind);
		bool found = false;

		assert_non_null(name);
		for (size_t j = 0; j < NCASES(builtins) && !found; j++) {
			if (strcmp(builtins[j].name, name))
				continue;
			found = true;
			assert_string_equal(kind, builtins[j].kind == EV_SOFTWARE ? "Software event"
										   : "Hardware event");
		}
		if (!found)
			fail_msg("listed \"%s\" is not tested", name);
	}
	assert_non_null(ev_builtin_name(0, NULL));
	assert_null(ev_builtin_name(ev_builtin_count(), NULL));
}

/*
 * ev_parse() of case @row of @t (the name in field 0, \N: NULL) with
 * @tracefs, checked against field 1: the error's errno name (ENOENT) or 0.
 * true when it parsed (*@ev to check and release), false when it failed
 * as it should, handing nothing out.
 */
static bool parse_case(const struct tl_table *t, size_t row, const char *tracefs,
		       struct ev_spec *ev)
{
	const char *const *c = tl_table_row(t, row);
	int err;
	const char *got;

	memset(ev, 0, sizeof(*ev));
	err = ev_parse(c[0], tracefs, ev);
	got = err ? strerrorname_np(-err) : "0";
	if (!got || strcmp(got, c[1]))
		fail_msg("%s: \"%s\": %d (%s), want %s", tl_table_where(t, row),
			 c[0] ? c[0] : "(null)", err, got ? got : "?", c[1]);
	if (err)
		assert_null(ev->name); /* nothing handed out on failure */
	return err == 0;
}

/* tests/unit/data/events_modifiers.tsv */
static void test_modifiers(void **state)
{
	struct tl_table *t = tl_table_load("events_modifiers.tsv", 5);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *const *c = tl_table_row(t, i);
		struct ev_spec ev;

		if (!parse_case(t, i, NULL, &ev))
			continue;
		if (strcmp(ev.name, c[2]) || ev.exclude_user != tl_table_u64(t, i, 3) ||
		    ev.exclude_kernel != tl_table_u64(t, i, 4))
			fail_msg("%s: \"%s\": named \"%s\", exclude_user %d exclude_kernel %d",
				 tl_table_where(t, i), c[0], ev.name, ev.exclude_user,
				 ev.exclude_kernel);
		ev_spec_release(&ev);
	}
	ev_spec_release(NULL);
	tl_table_free(t);
}

/* tests/unit/data/events_raw.tsv */
static void test_raw(void **state)
{
	struct tl_table *t = tl_table_load("events_raw.tsv", 4);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *name = tl_table_row(t, i)[0];
		struct ev_spec ev;

		if (!parse_case(t, i, NULL, &ev))
			continue;
		assert_int_equal(ev.kind, EV_RAW);
		assert_int_equal(ev.type, PERF_TYPE_RAW);
		assert_string_equal(ev.name, name);
		if (ev.config != tl_table_u64(t, i, 2) || ev.exclude_kernel != tl_table_u64(t, i, 3))
			fail_msg("%s: \"%s\": config %#llx exclude_kernel %d", tl_table_where(t, i),
				 name, (unsigned long long)ev.config, ev.exclude_kernel);
		assert_false(ev.exclude_user);
		assert_false(ev.is_clock);
		ev_spec_release(&ev);
	}
	tl_table_free(t);
}

/* ---- a fake tracefs ---- */

struct fake {
	struct tl_fake t; /* t.root holds the tracefs and what lies around it */
	char tracefs[PATH_MAX]; /* root/tracing */
};

static int fake_setup(void **state)
{
	struct fake *f = tl_fake_new("test_events", sizeof(*f));

	tl_pathf(f->tracefs, sizeof(f->tracefs), "%s/tracing", f->t.root);

	tl_write_file(f->t.root, "tracing/events/enable", "0\n");
	tl_write_file(f->t.root, "tracing/events/header_page", "\tfield: u64 timestamp;\n");
	tl_write_file(f->t.root, "tracing/events/sched/enable", "0\n");
	tl_write_file(f->t.root, "tracing/events/sched/sched_switch/id", "316\n");
	tl_write_file(f->t.root, "tracing/events/sched/sched_wakeup/id", "318\n");
	tl_write_file(f->t.root, "tracing/events/sched/sched_process_exec/id", "312\n");
	/* Every subsystem of a real tracefs has an enable file: libtracefs lists
	 * a directory of events/ as a subsystem by it. */
	tl_write_file(f->t.root, "tracing/events/syscalls/enable", "0\n");
	tl_write_file(f->t.root, "tracing/events/syscalls/sys_enter_read/id", "655\n");
	tl_write_file(f->t.root, "tracing/events/block/enable", "0\n");
	tl_write_file(f->t.root, "tracing/events/block/block_rq_issue/id", "1210");
	/* broken entries: no id, an id that is not a number, an empty id */
	tl_mkdirs(f->t.root, "tracing/events/broken/no_id");
	tl_write_file(f->t.root, "tracing/events/broken/bad_id/id", "bogus\n");
	tl_write_file(f->t.root, "tracing/events/broken/empty_id/id", "");
	/* What a name walking out of events/ would reach, were it allowed. */
	tl_write_file(f->t.root, "tracing/x/y/id", "999\n");
	tl_write_file(f->t.root, "outside/y/id", "998\n");
	tl_write_file(f->t.root, "tracing/events/sched/sched_switch/../../x/y/id", "997\n");
	*state = f;
	return 0;
}

/* tests/unit/data/events_tracepoints.tsv, in the tracefs fake_setup() builds */
static void test_tracepoints(void **state)
{
	struct fake *f = *state;
	struct tl_table *t = tl_table_load("events_tracepoints.tsv", 3);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *name = tl_table_row(t, i)[0];
		struct ev_spec ev;

		if (!parse_case(t, i, f->tracefs, &ev))
			continue;
		assert_int_equal(ev.kind, EV_TRACEPOINT);
		assert_int_equal(ev.type, PERF_TYPE_TRACEPOINT);
		if (ev.config != tl_table_u64(t, i, 2))
			fail_msg("%s: \"%s\": id %llu", tl_table_where(t, i), name,
				 (unsigned long long)ev.config);
		assert_string_equal(ev.name, name);
		assert_false(ev.is_clock || ev.exclude_user || ev.exclude_kernel);
		ev_spec_release(&ev);
	}
	tl_table_free(t);
}

static void test_tracepoint_without_tracefs(void **state)
{
	struct fake *f = *state;
	char missing[PATH_MAX];
	struct ev_spec ev = { 0 };

	assert_int_equal(ev_parse("sched:sched_switch", NULL, &ev), -ENOENT);
	snprintf(missing, sizeof(missing), "%s/no-tracefs", f->t.root);
	assert_int_equal(ev_parse("sched:sched_switch", missing, &ev), -ENOENT);
	assert_null(ev.name);
	/* Built-ins need no tracefs. */
	assert_int_equal(ev_parse("cs", missing, &ev), 0);
	ev_spec_release(&ev);
}

/* ---- distance and suggestions ---- */

#define MAX_SUGG 6

struct suggest_case {
	const char *name;
	bool tracefs;
	const char *first; /* NULL: no suggestion at all */
	const char *also;  /* must be among the suggestions too, or NULL */
};

static const struct suggest_case suggest_cases[] = {
	{ "task-clok", false, "task-clock", NULL },
	{ "task-clok", true, "task-clock", NULL },
	{ "context-switch", false, "context-switches", NULL },
	{ "cycle", false, "cycles", "cpu-cycles" },
	{ "instructons", false, "instructions", NULL },
	{ "sched:sched_swich", true, "sched:sched_switch", NULL },
	{ "shed:sched_switch", true, "sched:sched_switch", NULL },
	{ "sched:sched_wakup", true, "sched:sched_wakeup", NULL },
	{ "sched_switch", true, "sched:sched_switch", NULL },
	{ "sys_enter_red", true, "syscalls:sys_enter_read", NULL },
	{ "sched:sched_swich", false, NULL, NULL },
	{ "zzzzzzzzzz", false, NULL, NULL },
	{ "zzzzzzzzzz", true, NULL, NULL },
	{ "zz:zzzzzzzz", true, NULL, NULL },
};

static void free_suggestions(char **s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s[i]);
}

static void test_suggest(void **state)
{
	struct fake *f = *state;

	for (size_t i = 0; i < NCASES(suggest_cases); i++) {
		const struct suggest_case *c = &suggest_cases[i];
		char *s[MAX_SUGG] = { 0 };
		size_t n = ev_suggest(c->name, c->tracefs ? f->tracefs : NULL, s, MAX_SUGG);
		bool also = !c->also;

		assert_true(n <= MAX_SUGG);
		if (!c->first && n)
			fail_msg("\"%s\": suggested \"%s\", want nothing", c->name, s[0]);
		if (c->first && (!n || strcmp(s[0], c->first)))
			fail_msg("\"%s\": first suggestion \"%s\", want \"%s\"", c->name,
				 n ? s[0] : "(none)", c->first);
		for (size_t j = 0; j < n; j++) {
			assert_non_null(s[j]);
			also |= c->also && !strcmp(s[j], c->also);
			/* no name twice */
			for (size_t k = 0; k < j; k++)
				assert_string_not_equal(s[j], s[k]);
			/* every suggestion is something ev_parse accepts */
			{
				struct ev_spec ev;

				if (ev_parse(s[j], f->tracefs, &ev))
					fail_msg("\"%s\": suggested \"%s\" does not parse", c->name, s[j]);
				ev_spec_release(&ev);
			}
		}
		if (!also)
			fail_msg("\"%s\": \"%s\" not suggested", c->name, c->also);
		free_suggestions(s, n);
	}
}

/* @max bounds the answer; the best stays first whatever the bound. */
static void test_suggest_bounds(void **state)
{
	struct fake *f = *state;
	char *s[MAX_SUGG], *one[1];
	size_t n;

	n = ev_suggest("cycle", f->tracefs, s, MAX_SUGG);
	assert_true(n >= 2);
	assert_int_equal(ev_suggest("cycle", f->tracefs, one, 1), 1);
	assert_string_equal(one[0], s[0]);
	free(one[0]);
	free_suggestions(s, n);

	assert_int_equal(ev_suggest("cycle", NULL, s, 0), 0);
	assert_int_equal(ev_suggest(NULL, NULL, s, MAX_SUGG), 0);
}

int main(void)
{
	int failed = 0;

	failed += tl_run(TL_TESTS(test_builtins, test_builtin_listing, test_modifiers, test_raw),
		NULL, NULL, NULL, NULL);
	failed += tl_run(TL_TESTS(test_tracepoints, test_tracepoint_without_tracefs, test_suggest,
		test_suggest_bounds),
		NULL, NULL, fake_setup, tl_fake_teardown);
	return failed;
}
