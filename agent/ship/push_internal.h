/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_PUSH_INTERNAL_H
#define CGPERF_AGENT_PUSH_INTERNAL_H

/*
 * The push module's state, shared by push.c (set-up and the API) and
 * push_send.c (the sender threads). Not for other modules.
 *
 * A lane is what a sender thread works through: a cursor in the spool and
 * the collectors it may send to, in order of preference. Fan-out makes one
 * lane per collector; failover one lane over all of them.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/ship/push.h"
#include "lib/httpc.h"

#define MSGS_MAX 3

enum cstate { C_OK, C_FAILING, C_REJECTING };

struct logmsg {
	enum push_log_level level;
	char *text;
};

struct push;
struct lane;

struct collector {
	struct push *p;
	struct lane *lane;
	char *name; /* the URL without credentials, for logs and stats */
	struct httpc *http;

	/* Guarded by p->lock. */
	uint64_t next_ms; /* no request before this (monotonic ms) */
	uint64_t hold_ms; /* the collector's Retry-After ends here; 0 = none */
	unsigned attempts; /* consecutive failed requests */
	bool tried; /* tried_seq failed here and is being resent */
	uint64_t tried_seq;
	enum cstate state;
	char state_key[HTTPC_KEY_MAX];
	uint64_t state_count;
	uint64_t state_since_ms;
	/* Its counters and last_error, kept as push_stats() reports them (it
	 * fills url, cursor, pending and failing). */
	struct push_collector_stats st;

	/* Only the sender thread. */
	uint64_t rng;
};

struct lane {
	struct push *p;
	struct collector *c; /* c[0..n): the lane's collectors, first preferred */
	size_t n;
	char key[17]; /* cursor file key */
	char *name; /* for the cursor file and logs */
	pthread_t thread;
	bool started;
	uint64_t cursor; /* guarded by p->lock */
};

struct push {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* senders: new batch, flush or stop */
	pthread_cond_t progress; /* flush: a lane moved */
	pthread_mutex_t log_lock;
	atomic_bool stopping;

	enum push_mode mode;
	struct spool *spool;
	char *spool_dir;
	char *auth_header; /* "Authorization: Bearer ..." or NULL */
	uint64_t retry_initial_ms, retry_max_ms, idle_close_ms;
	push_log_fn log;
	void *log_arg;

	/* Guarded by lock. */
	uint64_t last_seq; /* highest sequence number known */
	uint64_t submit_errors;
	int submit_err_logged; /* -errno last logged, 0 when submits work */
	uint64_t dropped_seen; /* spool_dropped at the last submit */
	bool dropping; /* the spool was dropping batches at the last submit */
	bool cursor_err_logged;

	struct lane *lanes;
	size_t nlanes;
	size_t n;
	struct collector c[];
};

/* The smallest lane cursor: what every lane is past. */
uint64_t push_min_cursor(const struct push *p);

/* Queue a log line (at most MSGS_MAX per round), emitted by push_msg_flush
 * once p->lock is let go. */
void push_msg_add(struct logmsg *m, enum push_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void push_msg_flush(struct push *p, struct logmsg *m);

/* The sender thread of a lane (arg: struct lane *). */
void *push_sender_main(void *arg);

#endif
