// SPDX-License-Identifier: MIT
/*
 * agent/push against real HTTP servers (push_fixture.h) when things go
 * wrong for longer: an outage (batches spool, then arrive in order with no
 * gap); the spool cap during an outage; two collectors, one hanging; an
 * agent restart; HTTPS with a private CA and a client certificate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/push_fixture.h"
#include "tests/unit/testlib.h"

static void test_outage_spools_then_replays(void **state)
{
	struct fixture *f = *state;
	struct push_stats st;
	struct push *p;
	int port;
	long ms;

	port = pf_dead_collector(f);

	p = pf_start_push(f, &f->o);
	for (int i = 0; i < 6; i++) {
		pf_submit_next(p);
		pf_sleep_ms(60);
	}
	pf_sleep_ms(300);
	push_stats(p, &st);
	fprintf(stderr, "  outage: sent %" PRIu64 " failures %" PRIu64 " spooled %" PRIu64 " (%" PRIu64 " bytes)\n",
		st.sent, st.failures, st.spool_count, st.spool_bytes);
	assert_int_equal(st.acked, 0);
	assert_int_equal(st.spool_count, 6);
	assert_int_equal(tl_count_batch_files(f->spool), 6);
	assert_true(st.failures >= 3);
	assert_int_equal(st.failures, st.sent);
	assert_true(st.collectors[0].failing);
	assert_int_equal(st.collectors[0].pending, 6);
	assert_non_null(strstr(st.collectors[0].last_error, "connect"));
	/* Many failed retries, one log line. */
	assert_int_equal(pf_log_count(&f->log, PUSH_LOG_WARN, NULL), 1);

	pf_srv_start(f, 0, port, "--token", TOKEN, NULL);
	ms = pf_wait_accepted(&f->srv[0], 6, 5000); /* the backoff is capped at 300 ms */
	fprintf(stderr, "  outage: all 6 arrived %ld ms after the collector came back\n", ms);
	assert_true(ms >= 0);
	pf_flush_check(p, 5000, &f->srv[0], 1, 6);
	pf_expect_stats(p, NULL, "acked=6 spool_count=0 c0.failing=0");
	assert_int_equal(pf_log_count(&f->log, PUSH_LOG_INFO, "recovered"), 1);
	pf_stop_push(f, p);
}

static void test_outage_spool_cap(void **state)
{
	struct fixture *f = *state;
	struct push_stats st;
	struct push *p;
	size_t len;
	void *b = pf_make_batch(1, &len);
	int port;

	free(b);
	/* Room for 3 batches (they are all about the same size). */
	f->o.spool_max_bytes = len * 3 + len / 2;
	port = pf_dead_collector(f);

	p = pf_start_push(f, &f->o);
	for (int i = 0; i < 10; i++)
		pf_submit_next(p);
	pf_expect_stats(p, &st, "spool_count=3 spool_dropped=7");
	assert_true(st.spool_bytes <= f->o.spool_max_bytes);
	assert_int_equal(tl_count_batch_files(f->spool), 3);
	assert_int_equal(pf_log_count(&f->log, PUSH_LOG_WARN, "full"), 1);

	pf_srv_start(f, 0, port, "--token", TOKEN, NULL);
	pf_flush_check(p, 5000, &f->srv[0], 8, 10); /* the newest survive, in order */
	pf_stop_push(f, p);
}

static void test_two_collectors_one_hangs(void **state)
{
	struct fixture *f = *state;
	uint64_t got[MAX_REQ], t0;
	struct push_stats st;
	struct push *p;
	long ms;
	int port_b;

	pf_serve(f, 0, NULL);
	/* B reads each request and never answers. */
	pf_serve(f, 1, "hang,hang,hang,hang");
	port_b = f->srv[1].port;
	f->o.n_urls = 2;
	p = pf_start_push(f, &f->o);
	t0 = pf_now_ms();
	for (int i = 0; i < 5; i++)
		pf_submit_next(p);
	ms = pf_wait_accepted(&f->srv[0], 5, 3000);
	fprintf(stderr, "  A had all 5 batches %ld ms after the first submit (B hangs)\n", ms);
	assert_true(ms >= 0);
	assert_true(pf_now_ms() - t0 < 1500);
	pf_check_accepted(&f->srv[0], 1, 5);
	/* The server logs a batch just before its answer reaches us. */
	assert_true(pf_wait_stats(p, &st, pf_first_done, 2000));
	assert_int_equal(st.collectors[1].pending, 5);
	assert_int_equal(st.spool_count, 5); /* kept for B */
	assert_int_equal(push_flush(p, 200), -ETIMEDOUT);

	/* push_free does not wait for B's request to time out. */
	t0 = pf_now_ms();
	pf_stop_push(f, p);
	fprintf(stderr, "  push_free with a request in flight: %" PRIu64 " ms\n", pf_now_ms() - t0);
	assert_true(pf_now_ms() - t0 < 1000);

	/* B comes back working; a restarted agent sends B what it missed,
	 * and A nothing twice. */
	pf_srv_stop(&f->srv[1]);
	pf_srv_start(f, 1, port_b, "--token", TOKEN, NULL);
	p = pf_start_push(f, &f->o);
	pf_flush_check(p, 5000, &f->srv[1], 1, 5);
	assert_int_equal(pf_read_accepted(&f->srv[0], got, MAX_REQ), 5);
	pf_expect_stats(p, NULL, "spool_count=0 c0.acked=0 c1.acked=5");
	pf_stop_push(f, p);
}

static void test_restart_resends(void **state)
{
	struct fixture *f = *state;
	struct push *p;
	int port;

	pf_srv_start(f, 0, 0, "--token", TOKEN, NULL);
	port = f->srv[0].port;
	pf_url_of(&f->srv[0], "http", f->srv[0].url, sizeof(f->srv[0].url));
	p = pf_start_push(f, &f->o);
	assert_int_equal(pf_submit_next(p), 1);
	assert_int_equal(pf_submit_next(p), 2);
	assert_int_equal(push_flush(p, 5000), 0);
	pf_srv_stop(&f->srv[0]);
	assert_int_equal(pf_submit_next(p), 3);
	assert_int_equal(pf_submit_next(p), 4);
	pf_stop_push(f, p); /* the agent stops with 3 and 4 unsent */
	assert_int_equal(tl_count_batch_files(f->spool), 2);

	p = pf_start_push(f, &f->o);
	assert_int_equal(pf_log_count(&f->log, PUSH_LOG_INFO, "2 spooled batches"), 1);
	pf_expect_stats(p, NULL, "spool_count=2 c0.cursor=2");
	assert_int_equal(pf_submit_next(p), 5); /* numbers continue */
	pf_srv_start(f, 0, port, "--token", TOKEN, NULL);
	pf_flush_check(p, 5000, &f->srv[0], 1, 5); /* 1, 2 once; 3, 4, 5 after */
	pf_stop_push(f, p);

	/* A third run: nothing left, and the numbers still continue. */
	p = pf_start_push(f, &f->o);
	pf_expect_stats(p, NULL, "spool_count=0");
	assert_int_equal(pf_submit_next(p), 6);
	pf_flush_check(p, 5000, &f->srv[0], 1, 6);
	pf_stop_push(f, p);
}

static void test_tls(void **state)
{
	struct fixture *f = *state;
	char cmd[2048], srv_crt[256], srv_key[256], cli_crt[256], cli_key[256], spool2[256];
	struct push_stats st;
	struct push *p;

	if (pf_run("command -v openssl >/dev/null") != 0) {
		print_message("openssl not installed: cannot make test certificates\n");
		skip();
	}
	snprintf(srv_crt, sizeof(srv_crt), "%s/srv.crt", f->root);
	snprintf(srv_key, sizeof(srv_key), "%s/srv.key", f->root);
	snprintf(cli_crt, sizeof(cli_crt), "%s/cli.crt", f->root);
	snprintf(cli_key, sizeof(cli_key), "%s/cli.key", f->root);
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost "
		 "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout %s -out %s 2>/dev/null && "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=agent "
		 "-keyout %s -out %s 2>/dev/null",
		 srv_key, srv_crt, cli_key, cli_crt);
	assert_int_equal(pf_run(cmd), 0);
	pf_srv_start(f, 0, 0, "--token", TOKEN, "--tls-cert", srv_crt, "--tls-key", srv_key, "--client-ca", cli_crt,
		  NULL);
	pf_url_of(&f->srv[0], "https", f->srv[0].url, sizeof(f->srv[0].url));

	/* Our CA and our client certificate: accepted. */
	f->o.ca_file = srv_crt;
	f->o.cert_file = cli_crt;
	f->o.key_file = cli_key;
	p = pf_start_push(f, &f->o);
	pf_submit_next(p);
	pf_flush_check(p, 5000, &f->srv[0], 1, 1);
	pf_stop_push(f, p);

	/* The system CAs do not know this server: verification fails, and
	 * that is a retried failure (a fixed CA file brings it back). */
	snprintf(spool2, sizeof(spool2), "%s/spool2", f->root);
	f->o.spool_dir = spool2;
	f->o.ca_file = NULL;
	p = pf_start_push(f, &f->o);
	pf_submit_next(p);
	assert_true(pf_wait_stats(p, &st, pf_has_failed, 5000));
	assert_int_equal(push_flush(p, 300), -ETIMEDOUT);
	pf_expect_stats(p, &st, "acked=0 c0.failing=1");
	fprintf(stderr, "  unverified server: %s\n", st.collectors[0].last_error);
	assert_non_null(strstr(st.collectors[0].last_error, "certificate"));
	pf_stop_push(f, p);

	/* Verification off (not the default): accepted. */
	f->o.tls_no_verify = true;
	p = pf_start_push(f, &f->o);
	assert_int_equal(push_flush(p, 5000), 0);
	pf_expect_stats(p, NULL, "acked=1");
	pf_stop_push(f, p);
	{
		uint64_t got[MAX_REQ];

		/* Another spool, so seq 1 again. */
		assert_int_equal(pf_read_accepted(&f->srv[0], got, MAX_REQ), 2);
	}
}

TL_MAIN_ALL(pf_group_setup, NULL, pf_setup, pf_teardown, test_outage_spools_then_replays,
	test_outage_spool_cap, test_two_collectors_one_hangs, test_restart_resends, test_tls)
