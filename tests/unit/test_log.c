// SPDX-License-Identifier: MIT
/*
 * agent/log: the two line formats (logfmt and JSON) with their escaping,
 * the level threshold, the flood guard (LOG_BURST lines per message and
 * minute, then counted, then summarized), and several threads writing at
 * once: every line whole, and lines written + lines suppressed adding up to
 * lines asked for (the guard is shared state; without its lock both break).
 * Under TSan too: gcc -fsanitize=thread -I. -D_GNU_SOURCE tests/unit/test_log.c
 * tests/unit/testlib.c lib/log.c lib/json.c -lcmocka -lpthread
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/hashmap.h"
#include "lib/log.h"
#include "tests/unit/testlib.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

/* Each test writes its own message texts: the guard keeps state across
 * tests, and a text seen in another test must not count against this one. */

static char *capture(enum log_level lvl, const char *msg, const char *k1, const char *v1,
		     const char *k2, const char *v2)
{
	FILE *f = tl_capture_begin();

	log_set_stream(f);
	log_kv(lvl, msg, k1, v1, k2, v2, NULL);
	log_set_stream(NULL);
	return tl_capture_end(f);
}

/* The text after the timestamp field: "ts=...Z " or {"ts":"...Z",. */
static const char *after_ts(const char *line, bool json)
{
	const char *p;

	if (json) {
		assert_true(!strncmp(line, "{\"ts\":\"", 7));
		p = strchr(line + 7, '"');
		assert_non_null(p);
		assert_int_equal(p[-1], 'Z');
		assert_int_equal(p[1], ',');
		return p + 2;
	}
	assert_true(!strncmp(line, "ts=", 3));
	p = strchr(line, ' ');
	assert_non_null(p);
	assert_int_equal(p[-1], 'Z');
	/* 2026-11-24T13:18:18.123Z */
	assert_int_equal(p - (line + 3), 24);
	return p + 1;
}

static void test_logfmt(void **state)
{
	static const struct {
		const char *msg, *v;
		const char *want; /* after the timestamp */
	} cases[] = {
		{ "plain", "word", "level=info msg=plain k=word\n" },
		{ "two words", "a b", "level=info msg=\"two words\" k=\"a b\"\n" },
		{ "q", "say \"hi\"", "level=info msg=q k=\"say \\\"hi\\\"\"\n" },
		{ "b", "C:\\dir", "level=info msg=b k=\"C:\\\\dir\"\n" },
		{ "n", "line1\nline2", "level=info msg=n k=\"line1\\nline2\"\n" },
		{ "t", "tab\there", "level=info msg=t k=\"tab\\x09here\"\n" },
		{ "e", "k=v", "level=info msg=e k=\"k=v\"\n" },
		{ "empty", "", "level=info msg=empty k=\"\"\n" },
		/* bytes over 0x7f are quoted, passed as they are */
		{ "utf8", "caf\xc3\xa9", "level=info msg=utf8 k=\"caf\xc3\xa9\"\n" },
		{ "del", "a\x7f", "level=info msg=del k=\"a\\x7f\"\n" },
	};

	assert_int_equal(log_setup("logfmt", "info"), 0);
	for (size_t i = 0; i < NCASES(cases); i++) {
		char *out = capture(LOG_INFO, cases[i].msg, "k", cases[i].v, NULL, NULL);

		assert_int_equal(tl_count_lines(out), 1);
		if (strcmp(after_ts(out, false), cases[i].want))
			fail_msg("case %zu: got %s", i, out);
		free(out);
	}
	/* A NULL value is written as empty. */
	{
		char *out = capture(LOG_WARN, "null value", "k", NULL, NULL, NULL);

		assert_string_equal(after_ts(out, false), "level=warn msg=\"null value\" k=\"\"\n");
		free(out);
	}
}

static void test_json(void **state)
{
	char *out;

	assert_int_equal(log_setup("json", NULL), 0);
	out = capture(LOG_ERROR, "json \"quoted\"\n", "path", "/a\\b", "n", "\x01");
	assert_int_equal(tl_count_lines(out), 1);
	assert_string_equal(after_ts(out, true),
			    "\"level\":\"error\",\"msg\":\"json \\\"quoted\\\"\\n\","
			    "\"path\":\"/a\\\\b\",\"n\":\"\\u0001\"}\n");
	free(out);
	/* Invalid UTF-8 does not reach a JSON reader as is. */
	out = capture(LOG_INFO, "json bad utf8", "v", "\xff", NULL, NULL);
	assert_null(strchr(out, '\xff'));
	free(out);
	assert_int_equal(log_setup("logfmt", NULL), 0);
}

static void test_setup_and_levels(void **state)
{
	char *out;

	assert_int_equal(log_setup("xml", NULL), -EINVAL);
	assert_int_equal(log_setup(NULL, "loud"), -EINVAL);
	/* A bad level leaves the format alone too. */
	assert_int_equal(log_setup("logfmt", "info"), 0);
	assert_int_equal(log_setup("json", "nope"), -EINVAL);
	out = capture(LOG_INFO, "still logfmt", NULL, NULL, NULL, NULL);
	assert_true(!strncmp(out, "ts=", 3));
	free(out);

	assert_int_equal(log_setup(NULL, "warn"), 0);
	out = capture(LOG_INFO, "below warn", NULL, NULL, NULL, NULL);
	assert_string_equal(out, "");
	free(out);
	out = capture(LOG_ERROR, "above warn", NULL, NULL, NULL, NULL);
	assert_string_equal(after_ts(out, false), "level=error msg=\"above warn\"\n");
	free(out);
	assert_int_equal(log_setup(NULL, "debug"), 0);
	out = capture(LOG_DEBUG, "debug shown", NULL, NULL, NULL, NULL);
	assert_string_equal(after_ts(out, false), "level=debug msg=\"debug shown\"\n");
	free(out);
	assert_int_equal(log_setup(NULL, "info"), 0);
}

/* The guard's slot of a message: FNV-1a 64 of the text, modulo its 64 slots
 * (log.c's GUARD_SLOTS). Used to find a second text that evicts the first. */
static unsigned guard_slot(const char *msg)
{
	return (unsigned)(hash_fnv1a_str(HASH_FNV_OFFSET, msg) % 64);
}

static void test_flood_guard(void **state)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		char msg[64], other[64], *out;
		unsigned long before = log_suppressed();
		time_t minute = time(NULL) / 60;
		FILE *f = tl_capture_begin();
		int j = 0;

		snprintf(msg, sizeof(msg), "flood %d", attempt);
		do
			snprintf(other, sizeof(other), "evictor %d.%d", attempt, j++);
		while (guard_slot(other) != guard_slot(msg));

		log_set_stream(f);
		for (int i = 0; i < LOG_BURST + 7; i++)
			log_kv(LOG_WARN, msg, "i", "x", NULL);
		/* Another text in the same slot: the summary, then its own line. */
		log_kv(LOG_WARN, other, NULL);
		log_set_stream(NULL);
		out = tl_capture_end(f);
		if (time(NULL) / 60 != minute) {
			free(out); /* a new minute resets the guard: try again */
			continue;
		}
		assert_int_equal(log_suppressed() - before, 7);
		assert_int_equal(tl_count_lines(out), LOG_BURST + 2);
		assert_non_null(strstr(out, "level=info msg=\"earlier message repeated\" suppressed=7\n"));
		assert_non_null(strstr(out, other));
		free(out);
		return;
	}
	fail_msg("the minute turned during every attempt");
}

/* Debug lines are asked for one by one: the guard lets every one through. */
static void test_flood_guard_spares_debug(void **state)
{
	unsigned long before = log_suppressed();
	FILE *f = tl_capture_begin();
	char *out;

	(void)state;
	assert_int_equal(log_setup("logfmt", "debug"), 0);
	log_set_stream(f);
	for (int i = 0; i < LOG_BURST * 4; i++)
		log_kv(LOG_DEBUG, "batch queued", "seq", "1", NULL);
	log_set_stream(NULL);
	out = tl_capture_end(f);
	assert_int_equal(tl_count_lines(out), LOG_BURST * 4);
	assert_int_equal(log_suppressed(), before);
	assert_null(strstr(out, "earlier message repeated"));
	free(out);
}

/* ---- several threads at once ---- */

#define THREADS 8
#define PER_THREAD 3000

static void *writer(void *arg)
{
	long id = (long)arg;
	char msg[64];

	for (int i = 0; i < PER_THREAD; i++) {
		/* Mostly distinct texts (never suppressed: a new text takes its
		 * slot afresh), every fourth one the shared flood text. */
		if (i % 4 == 0) {
			log_kv(LOG_INFO, "shared flood", "thread", "t", NULL);
		} else {
			snprintf(msg, sizeof(msg), "thread %ld line %d", id, i);
			log_kv(LOG_INFO, msg, "k", "v w", NULL);
		}
	}
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];
	unsigned long before = log_suppressed();
	size_t lines = 0, distinct = 0, flood = 0, summaries = 0, suppressed_told = 0;
	FILE *f = tl_capture_begin();
	char *out, *line, *save = NULL;

	assert_int_equal(log_setup("logfmt", "info"), 0);
	log_set_stream(f);
	for (long i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	log_set_stream(NULL);
	out = tl_capture_end(f);

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned n;

		lines++;
		if (sscanf(line, "level=info msg=\"earlier message repeated\" suppressed=%u", &n) == 1) {
			summaries++;
			suppressed_told += n;
			continue;
		}
		/* Every other line whole: one timestamp, one level, its pairs. */
		const char *rest = after_ts(line, false);

		if (!strcmp(rest, "level=info msg=\"shared flood\" thread=t")) {
			flood++;
		} else {
			long id;
			int i, used = 0;

			if (sscanf(rest, "level=info msg=\"thread %ld line %d\" k=\"v w\"%n", &id, &i,
				   &used) != 2 || rest[used] != '\0')
				fail_msg("torn or mixed line: %s", line);
			distinct++;
		}
	}
	assert_int_equal(distinct, THREADS * (PER_THREAD - PER_THREAD / 4));
	/* Each flood line asked for was written or counted, never both or neither. */
	assert_int_equal(flood + (log_suppressed() - before), THREADS * PER_THREAD / 4);
	assert_true(flood >= LOG_BURST);
	assert_true(suppressed_told <= log_suppressed() - before);
	assert_int_equal(lines, distinct + flood + summaries);
	free(out);
}

TL_MAIN(test_logfmt, test_json, test_setup_and_levels, test_flood_guard,
	test_flood_guard_spares_debug, test_threads)
