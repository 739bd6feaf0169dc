// SPDX-License-Identifier: MIT
/*
 * lib/prom: label values with hostile text (quotes, backslashes, newlines,
 * UTF-8), and HELP/TYPE lines in both formats, through the stream writer
 * and through an append function; container labels as name/value pairs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/prom.h"
#include "tests/unit/testlib.h"

/* Label values with hostile text, through the append function and the
 * stream writer (tests/unit/data/prom_labels.tsv). */
static void test_label(void **state)
{
	struct tl_table *t = tl_table_load("prom_labels.tsv", 2);

	for (size_t i = 0; i < tl_table_rows(t); i++) {
		const char *const *c = tl_table_row(t, i);
		struct tl_text k = { 0 };
		FILE *f = tl_capture_begin();
		char *got;

		prom_label_to(tl_text_put, &k, c[0]);
		if (strcmp(k.s ? k.s : "", c[1]))
			fail_msg("%s: got %s, want %s", tl_table_where(t, i), k.s, c[1]);
		free(k.s);
		prom_label(f, c[0]);
		got = tl_capture_end(f);
		assert_string_equal(got, c[1]);
		free(got);
	}
	tl_table_free(t);
}

static void test_label_null(void **state)
{
	struct tl_text k = { 0 };

	prom_label_to(tl_text_put, &k, NULL);
	assert_int_equal(k.len, 0);
}

static void test_family(void **state)
{
	static const struct {
		bool om;
		const char *name, *type, *want;
	} cases[] = {
		{ false, "x_total", "counter", "# HELP x_total h\n# TYPE x_total counter\n" },
		{ true, "x_total", "counter", "# HELP x h\n# TYPE x counter\n" },
		{ true, "x_seconds", "gauge", "# HELP x_seconds h\n# TYPE x_seconds gauge\n" },
		{ true, "x_total", "gauge", "# HELP x_total h\n# TYPE x_total gauge\n" },
		{ true, "_total", "counter", "# HELP _total h\n# TYPE _total counter\n" },
		{ false, "lat", "histogram", "# HELP lat h\n# TYPE lat histogram\n" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tl_text k = { 0 };
		FILE *f = tl_capture_begin();
		char *got;

		prom_family_to(tl_text_put, &k, cases[i].om, cases[i].name, cases[i].type, "h");
		if (strcmp(k.s, cases[i].want))
			fail_msg("case %zu: got %s, want %s", i, k.s, cases[i].want);
		free(k.s);
		prom_family(f, cases[i].om, cases[i].name, cases[i].type, "h");
		got = tl_capture_end(f);
		assert_string_equal(got, cases[i].want);
		free(got);
	}
}

/* Container labels as pairs: names made safe, a name repeated after that
 * written once, values escaped; none writes nothing. */
static void test_pairs(void **state)
{
	const char *k[] = { "team", "app.kubernetes.io/name", "a.b", "a_b", "x", "é" };
	const char *v[] = { "db", "pg", "1", "2", "say \"hi\"", "u" };
	const char *want = ",l_team=\"db\",l_app_kubernetes_io_name=\"pg\",l_a_b=\"1\","
			   "l_x=\"say \\\"hi\\\"\",l___=\"u\"";
	struct tl_text t = { 0 };
	FILE *f = tl_capture_begin();
	char *got;

	prom_pairs_to(tl_text_put, &t, "l_", k, v, 6);
	assert_string_equal(t.s, want);
	free(t.s);
	prom_pairs(f, "l_", k, v, 0);
	got = tl_capture_end(f);
	assert_string_equal(got, "");
	free(got);
}

TL_MAIN(test_label, test_label_null, test_family, test_pairs)
