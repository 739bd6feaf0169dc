// SPDX-License-Identifier: MIT
/*
 * lib/httpc without a server: retry delays (full jitter within the doubling
 * ceiling, the health backoff's floor at half of it, the cap), the text
 * helpers (URL check, password redaction, an Authorization header that
 * cannot add a header line, one printable line), the option checks, and a
 * request to a closed port classified as a retry that cannot have been
 * delivered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/httpc.h"
#include "tests/unit/testlib.h"

static void test_backoff(void **state)
{
	(void)state;
	uint64_t rng = httpc_rng_seed("x");
	static const struct {
		unsigned attempts;
		uint64_t ceil;
	} cases[] = { { 1, 100 }, { 2, 200 }, { 3, 400 }, { 5, 1000 }, { 60, 1000 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t lo = UINT64_MAX, hi = 0, hlo = UINT64_MAX;

		for (int k = 0; k < 2000; k++) {
			uint64_t d = httpc_backoff_ms(&rng, cases[i].attempts, 100, 1000, false);
			uint64_t h = httpc_backoff_ms(&rng, cases[i].attempts, 100, 1000, true);

			lo = d < lo ? d : lo;
			hi = d > hi ? d : hi;
			hlo = h < hlo ? h : hlo;
			assert_true(h <= cases[i].ceil);
		}
		assert_true(hi <= cases[i].ceil);
		assert_true(hi > cases[i].ceil * 9 / 10); /* the range is used */
		assert_true(lo < cases[i].ceil / 10);
		assert_true(hlo >= cases[i].ceil / 2);
	}
	assert_int_not_equal(httpc_rng_seed("a"), 0);
}

static void test_text(void **state)
{
	(void)state;
	static const struct {
		const char *url, *redacted;
		bool http;
	} urls[] = {
		{ "http://a/x", "http://a/x", true },
		{ "HTTPS://u:p@h:1/x?y=@z", "HTTPS://***@h:1/x?y=@z", true },
		{ "https://h/a@b", "https://h/a@b", true },
		{ "ftp://u:p@h/", "ftp://***@h/", false },
		{ "http:/a", "http:/a", false },
	};
	char *s, line[] = "a\nb\tc\x7f";

	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		assert_int_equal(httpc_is_http_url(urls[i].url), urls[i].http);
		s = httpc_redact_url(urls[i].url);
		assert_string_equal(s, urls[i].redacted);
		free(s);
	}
	assert_int_equal(httpc_auth_header("tok \n", &s), 0);
	assert_string_equal(s, "Authorization: Bearer tok");
	free(s);
	assert_int_equal(httpc_auth_header("a\r\nX-Evil: 1", &s), -EINVAL);
	assert_int_equal(httpc_auth_header(" \n", &s), -EINVAL);
	httpc_sanitize(line);
	assert_string_equal(line, "a?b?c?");
}

static void test_new_and_refused(void **state)
{
	(void)state;
	struct httpc_result r;
	struct httpc *h;
	const char *hdrs[] = { "X-A: 1", NULL };

	errno = 0;
	assert_null(httpc_new(&(struct httpc_opts){ .url = "ftp://a/" }));
	assert_int_equal(errno, EINVAL);
	assert_null(httpc_new(&(struct httpc_opts){ .url = "http://a/", .key_file = "k" }));
	assert_int_equal(errno, EINVAL);
	/* Port 1 on loopback: nothing listens there. */
	h = httpc_new(&(struct httpc_opts){ .url = "http://127.0.0.1:1/x", .timeout_ms = 2000,
					    .basic_user = "u", .basic_password = "p" });
	assert_non_null(h);
	assert_int_equal(httpc_last_io_ms(h), 0);
	httpc_post(h, hdrs, 2, "body", 4, &r);
	assert_int_equal(r.kind, HTTPC_RETRY);
	assert_int_equal(r.status, 0);
	assert_false(r.maybe_delivered);
	assert_int_equal(r.retry_after_ms, -1);
	assert_string_equal(r.key, "curl 7");
	assert_non_null(strstr(r.text, "onnect"));
	assert_true(httpc_last_io_ms(h) > 0);
	httpc_close_idle(h);
	assert_int_equal(httpc_last_io_ms(h), 0);
	httpc_wakeup(h);
	httpc_free(h);
	httpc_free(NULL);
}

TL_MAIN(test_backoff, test_text, test_new_and_refused)
