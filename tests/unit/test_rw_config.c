// SPDX-License-Identifier: MIT
/*
 * The exporter's remote_write settings (exporter/config.c): a URL list or
 * one URL in the file, flags adding URLs, defaults, copies on reparse, and
 * the refusals (not http, twice, too many, bad interval/queue, a list of
 * something else) with the file's line and column.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "exporter/config.h"
#include "tests/unit/testlib.h"

static int parse(struct exporter_config *c, const char *text, char *err, size_t len)
{
	return exporter_config_parse(c, "x.yaml", text, strlen(text), err, len);
}

static void test_defaults_and_list(void **state)
{
	(void)state;
	struct exporter_config c;
	char err[256] = "";

	assert_int_equal(exporter_config_defaults(&c), 0);
	assert_int_equal(c.remote_write.nurls, 0);
	assert_int_equal(c.remote_write.interval_ns, 15000000000ull);
	assert_int_equal(c.remote_write.queue, 64);
	assert_int_equal(parse(&c,
			       "remote_write_url:\n  - http://a:9090/api/v1/write\n  - HTTPS://b/w\n"
			       "remote_write_interval: 5s\nremote_write_queue: 3\n"
			       "remote_write_instance: e1\nremote_write_basic_auth_user: u\n"
			       "remote_write_basic_auth_password_file: /p\n",
			       err, sizeof(err)),
			 0);
	assert_int_equal(c.remote_write.nurls, 2);
	assert_string_equal(c.remote_write.urls[1], "HTTPS://b/w");
	assert_int_equal(c.remote_write.interval_ns, 5000000000ull);
	assert_int_equal(c.remote_write.queue, 3);
	assert_string_equal(c.remote_write.instance, "e1");
	assert_string_equal(c.remote_write.basic_user, "u");
	/* A second file over the first keeps it (copied) and adds. */
	assert_int_equal(parse(&c, "remote_write_url: http://c/w\nremote_write_bearer_token_file: /t\n", err,
			       sizeof(err)),
			 0);
	assert_int_equal(c.remote_write.nurls, 3);
	assert_string_equal(c.remote_write.bearer_token_file, "/t");
	/* As a flag does. */
	assert_int_equal(exporter_config_set(&c, "remote_write_url", "http://d/w", err, sizeof(err)), 0);
	assert_int_equal(c.remote_write.nurls, 4);
	exporter_config_release(&c);
}

static void test_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "remote_write_url: ftp://a/\n", "x.yaml:1:19: remote_write_url: 'ftp://a/' is not an http" },
		{ "remote_write_url: [http://a/, http://a/]\n", "x.yaml:1:31: remote_write_url: 'http://a/' given twice" },
		{ "remote_write_url: [http://1/, http://2/, http://3/, http://4/, http://5/, http://6/, http://7/, "
		  "http://8/, http://9/]\n",
		  "at most 8 URLs" },
		{ "remote_write_url: [[http://a/]]\n", "remote_write_url: a list of URLs" },
		{ "remote_write_interval: 0s\n", "remote_write_interval: '0s' is not a duration" },
		{ "remote_write_queue: 0\n", "remote_write_queue: '0': want a whole number 1..100000" },
		{ "remote_write_instance: \"\"\n", "remote_write_instance: empty" },
		{ "remote_write_urls: http://a/\n", "did you mean 'remote_write_url'?" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct exporter_config c;
		char err[256] = "";

		assert_int_equal(exporter_config_defaults(&c), 0);
		assert_int_equal(parse(&c, cases[i].text, err, sizeof(err)), -EINVAL);
		if (!strstr(err, cases[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].want);
		assert_int_equal(c.remote_write.nurls, 0); /* unchanged on failure */
		exporter_config_release(&c);
	}
}

TL_MAIN(test_defaults_and_list, test_refusals)
