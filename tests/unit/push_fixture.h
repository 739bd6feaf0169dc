/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_TESTS_PUSH_FIXTURE_H
#define CGPERF_TESTS_PUSH_FIXTURE_H

/*
 * What test_push.c and test_push_outage.c share: agent/push against real
 * HTTP servers, tests/lib/fake_collector.py forked per scenario (python3 is
 * part of the test toolchain). The collector checks every request (gzip,
 * bearer token, headers), answers from a script of statuses and records
 * what it accepted in its directory (requests.log, accepted.log, body-SEQ),
 * which the helpers below read back. Servers are stopped by PID in the
 * teardown, whatever failed. Every helper fails the running test instead of
 * returning an error.
 */

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/ship/push.h"


#define TOKEN "s3cret-t0ken"
#define MAX_SRV 3
#define MAX_LOG 256
#define MAX_REQ 256

struct srv {
	pid_t pid;
	int port;
	char dir[PATH_MAX];
	char url[128]; /* http://127.0.0.1:PORT/api/v1/push once served */
};

struct logcap {
	pthread_mutex_t lock;
	int n;
	enum push_log_level level[MAX_LOG];
	char *text[MAX_LOG];
};

struct fixture {
	char root[64];
	char spool[128];
	struct srv srv[MAX_SRV];
	struct logcap log;
	struct push *live[4]; /* freed by the teardown if a test fails */
	const char *urls[MAX_SRV]; /* srv[i].url */
	struct push_opts o; /* pf_base_opts() for srv[0]: what pf_open() starts */
};
/* One request as the collector logged it. */
struct req {
	uint64_t seq;
	double t;
	char status[16];
	char verdict[32];
};

/* cmocka group setup: find the collector script, check python3, ignore
 * SIGPIPE; -1 (with the reason printed, every case failed) when the tests
 * cannot run. */
int pf_group_setup(void **state);

/* cmocka setup and teardown: a struct fixture in *@state, with its temp
 * directories; the teardown frees the pushes in live[] and stops servers. */
int pf_setup(void **state);
int pf_teardown(void **state);

uint64_t pf_now_ms(void);
void pf_sleep_ms(unsigned ms);
/* system(@cmd)'s exit status, -1 when it did not exit. */
int pf_run(const char *cmd);

/* The push log callback: lines kept in a struct logcap (and printed). */
void pf_log_cb(void *arg, enum push_log_level level, const char *msg);
/* Log lines at @level containing @substr (NULL: any). */
int pf_log_count(struct logcap *l, enum push_log_level level, const char *substr);

/* Start fake_collector for srv[@i] on @port (0: any; the port is kept in
 * srv->port for a restart), with extra arguments up to NULL. Waits until
 * it listens. */
void __attribute__((sentinel)) pf_srv_start(struct fixture *f, int i, int port, ...);
/* Stop @s (SIGTERM, reaped); nothing when it is not running. */
void pf_srv_stop(struct srv *s);
/* @s's push URL with @scheme (http, https). */
void pf_url_of(const struct srv *s, const char *scheme, char *buf, size_t size);
/* The URL of collector 0 (srv[0].url) on a port that was free a moment
 * ago, with nothing listening on it now: the port, for pf_srv_start() when
 * the outage ends. */
int pf_dead_collector(struct fixture *f);
/* Start collector @i with the token, answering @statuses (its
 * "--statuses" script; NULL: 200 to all); its URL in srv[i].url. */
void pf_serve(struct fixture *f, int i, const char *statuses);
/* pf_serve(f, 0, @statuses), then a push of f->o to it. */
struct push *pf_open(struct fixture *f, const char *statuses);

/* What @s logged: at most @max requests, or accepted sequence numbers. */
int pf_read_requests(const struct srv *s, struct req *out, int max);
int pf_read_accepted(const struct srv *s, uint64_t *out, int max);
/* Wait until @s accepted @want batches; the elapsed ms, or -1 on timeout. */
long pf_wait_accepted(const struct srv *s, int want, unsigned timeout_ms);
/* @s accepted exactly batches @first..@last, in order, once each, with the
 * right bodies; every request it saw was well formed. */
void pf_check_accepted(const struct srv *s, uint64_t first, uint64_t last);

/* push_flush(@p, @timeout_ms) succeeds, then pf_check_accepted(). */
void pf_flush_check(struct push *p, unsigned timeout_ms, const struct srv *s, uint64_t first,
		    uint64_t last);

/* The uncompressed payload of batch @seq (~2 KiB of text) in @buf. */
size_t pf_payload(uint64_t seq, char *buf, size_t size);
/* Batch @seq gzip'd (what the agent will send): malloc'd, *@len bytes. */
void *pf_make_batch(uint64_t seq, size_t *len);
/* Submit the next batch @p asks for; its sequence number. */
uint64_t pf_submit_next(struct push *p);

/* Options for @n collectors at @urls, short retries, the fixture's spool
 * and log. */
struct push_opts pf_base_opts(struct fixture *f, const char *const *urls, size_t n);
/* push_new(), the result kept in f->live[] for the teardown. */
struct push *pf_start_push(struct fixture *f, const struct push_opts *o);
/* push_free() and out of f->live[]. */
void pf_stop_push(struct fixture *f, struct push *p);
/* Poll push_stats until @ok holds (true) or @timeout_ms passes (false);
 * the last stats are left in *@st. */
bool pf_wait_stats(struct push *p, struct push_stats *st, bool (*ok)(const struct push_stats *),
		   unsigned timeout_ms);
/* push_stats() of @p into *@st (NULL: kept here), checked against @want:
 * "NAME=N ..." with NAME a counter of struct push_stats (sent, acked,
 * retried, rejected, failures, maybe_delivered, duplicates, spool_bytes,
 * spool_count, spool_dropped, submit_errors, n_collectors) or cI.NAME of
 * collector I (the same, cursor, pending, failing). */
void pf_expect_stats(struct push *p, struct push_stats *st, const char *want);
/* Conditions for pf_wait_stats: collector 0 has nothing pending; a
 * failure was counted. */
bool pf_first_done(const struct push_stats *st);
bool pf_has_failed(const struct push_stats *st);

#endif
