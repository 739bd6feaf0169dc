// SPDX-License-Identifier: MIT
/*
 * agent_swarm: many simulated agents on one cgperf-exporter, for tests and
 * benchmarks of the exporter under a fleet (test-only; not installed).
 *
 *   agent_swarm [OPTIONS] push URL   --agents N agents, each with its own
 *                                    kept-alive HTTP/1.1 connection, POST
 *                                    batches at --rate R batches/s in total
 *                                    for --duration S seconds
 *   agent_swarm [OPTIONS] idle URL   open --idle K connections, hold them for
 *                                    --duration S seconds, then count how
 *                                    many the exporter kept open
 *
 * URL is the exporter's base, http://HOST:PORT (IPv4 literal). Options:
 * --threads M (event loops over the agents, default 2), --timeout-ms T (an
 * ack not back after T ms is a timeout: the connection is closed and the
 * batch sent again on a new one, as the agent does; default 5000),
 * --healthz-ms P (GET /healthz on a new connection every P ms meanwhile,
 * default 100; 0 = none), --token TOKEN, --gzip, --stacks N, --cgroups N,
 * --close (each push on a new connection, opened when the push is due and
 * closed after its answer: the latency then includes the handshake),
 * --warmup S (latencies of pushes and /healthz requests started in the
 * first S seconds are left out of the percentiles and maxima: connections
 * being opened and the exporter's first commits; everything else counts
 * them; default 0).
 *
 * Each agent is "swarm-PID-I" on host "swarm-host-I"; each batch is built
 * with wire/wire.h's builder just before it goes, with the agent's next
 * sequence number, so every batch is unique and a batch sent twice is a
 * resend. Agents are spread evenly over the period N / R, each on a fixed
 * schedule. Counted: acks ("stored" or "duplicate" in the 200's body; a
 * duplicate means a batch was stored and then sent again), timeouts,
 * resends, 503/429 answers (retried after Retry-After), other errors,
 * connections the server closed, and the ack latency (from the first byte
 * written to the last byte of the answer).
 *
 * The last line of stdout is the summary, KEY=VALUE fields after a tag:
 *   swarm mode=keepalive|close agents= threads= rate= duration= sent= acked= stored= duplicates=
 *         resends= timeouts= busy= errors= closed= late= warmup= warmup_acks=
 *         p50_ms= p90_ms=
 *         p99_ms= max_ms= healthz_n= healthz_p50_ms= healthz_p99_ms=
 *         healthz_max_ms= healthz_fail= cpu_s=
 *   idle want= held= refused= healthz_n= ... healthz_fail=
 * Exit status 0 when the run completed (whatever it measured), 1 on a
 * setup error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "wire/wire.h"

#define RESP_MAX 4096
#define NS_MS 1000000ull
#define NS_S 1000000000ull

struct opts {
	unsigned agents, threads, idle, cgroups, stacks;
	double rate, duration, warmup;
	unsigned timeout_ms, healthz_ms;
	const char *token;
	bool gzip, close_each;
	struct sockaddr_in addr;
	char hostport[96];
};

/* One simulated agent: its connection and the batch in flight. */
struct agent {
	unsigned idx;
	int fd;
	bool connected, inflight, resend;
	uint64_t seq;	     /* of the batch in flight or the next one */
	uint64_t due_ns;     /* next scheduled send (monotonic) */
	uint64_t retry_ns;   /* after a 503/429: not before this */
	uint64_t started_ns; /* first byte of this request */
	uint64_t conn_ns;    /* --close: when its connection was opened */
	uint8_t *req;
	size_t req_len, req_off;
	char resp[RESP_MAX + 1];
	size_t resp_len;
	char agent_id[48], host[48];
};

struct counts {
	uint64_t sent, acked, stored, duplicates, resends, timeouts, busy, errors, closed, late;
	uint64_t warm; /* acks (or /healthz answers) left out of the latencies */
	uint64_t *lat_us;
	size_t n_lat, cap_lat;
};

struct loop {
	const struct opts *o;
	struct agent *a;
	unsigned n;
	int ep;
	pthread_t thread;
	uint64_t start_ns, period_ns, end_ns;
	struct counts c;
};

static volatile int stop_healthz;
/* Monotonic time before which latencies are not recorded (--warmup). */
static uint64_t steady_ns;

static int lat_add(struct counts *c, uint64_t us)
{
	if (c->n_lat == c->cap_lat) {
		size_t cap = c->cap_lat ? c->cap_lat * 2 : 4096;
		uint64_t *p = realloc(c->lat_us, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->lat_us = p;
		c->cap_lat = cap;
	}
	c->lat_us[c->n_lat++] = us;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The @q-th quantile of sorted @v, in ms. */
static double pct_ms(const uint64_t *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(q * (double)(n - 1) + 0.5);
	return (double)v[i < n ? i : n - 1] / 1000.0;
}

/* ---- batches ---- */

/* A small agent-like batch: cgroups with counters, a cpu-clock profile. */
static int build_request(const struct opts *o, struct agent *ag)
{
	static const char *const events[] = { "task-clock", "context-switches", "cpu-migrations",
					      "page-faults" };
	static const char *const names[] = { "_start", "__libc_start_main", "main", "serve",
					     "handle_request", "parse_query", "hash_tuple",
					     "read_page", "memcpy", "lock_acquire" };
	uint64_t end = clock_real_ns();
	struct wire_batch *b = wire_batch_new(ag->host, NULL, ag->agent_id, "swarm", ag->seq,
					      end - 10 * NS_S, end);
	uint8_t *body = NULL;
	size_t blen = 0, hlen;
	char head[512], auth[300] = "";
	int ret = -ENOMEM;

	if (!b)
		goto out;
	for (unsigned c = 0; c < o->cgroups; c++) {
		char path[64];
		int cg, p;

		snprintf(path, sizeof(path), "/swarm.slice/app-%u.scope", c);
		cg = wire_add_cgroup(b, path, 100 + c, NULL);
		if (cg < 0)
			goto out;
		for (size_t e = 0; e < sizeof(events) / sizeof(events[0]); e++)
			if (wire_add_counter(b, cg, events[e], 1000 + ag->seq + e, 10 * NS_S,
					     10 * NS_S, true) < 0)
				goto out;
		if (!o->stacks)
			continue;
		p = wire_add_profile(b, cg, "cpu-clock", 0, 99);
		if (p < 0)
			goto out;
		for (unsigned s = 0; s < o->stacks; s++) {
			const char *f[6] = { names[0], names[1], names[2], names[3 + s % 3],
					     names[6 + s % 2], names[8 + (s / 2) % 2] };

			if (wire_add_stack(b, p, f, 6, 1 + s) < 0)
				goto out;
		}
	}
	ret = o->gzip ? wire_encode_gzip(b, &body, &blen) : wire_encode(b, &body, &blen);
	if (ret < 0)
		goto out;
	if (o->token)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %.256s\r\n", o->token);
	hlen = (size_t)snprintf(head, sizeof(head),
				"POST /api/v1/push HTTP/1.1\r\nHost: %s\r\n"
				"Content-Type: application/x-protobuf\r\n%s"
				"X-Cgperf-Sequence: %" PRIu64 "\r\nContent-Length: %zu\r\n%s\r\n",
				o->hostport, o->gzip ? "Content-Encoding: gzip\r\n" : "", ag->seq,
				blen, auth);
	free(ag->req);
	ag->req = malloc(hlen + blen);
	if (!ag->req) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(ag->req, head, hlen);
	memcpy(ag->req + hlen, body, blen);
	ag->req_len = hlen + blen;
	ag->req_off = 0;
	ret = 0;
out:
	free(body);
	wire_batch_free(b);
	return ret;
}

/* ---- connections ---- */

static int open_conn(const struct opts *o)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)&o->addr, sizeof(o->addr)) &&
	    errno != EINPROGRESS) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static void agent_close(struct loop *l, struct agent *ag)
{
	if (ag->fd >= 0) {
		epoll_ctl(l->ep, EPOLL_CTL_DEL, ag->fd, NULL);
		close(ag->fd);
	}
	ag->fd = -1;
	ag->connected = false;
}

static int agent_connect(struct loop *l, struct agent *ag)
{
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN, .data.ptr = ag };
	int fd = open_conn(l->o);

	if (fd < 0)
		return fd;
	ag->fd = fd;
	ag->connected = false;
	ag->conn_ns = clock_mono_ns();
	if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev)) {
		int e = errno;

		agent_close(l, ag);
		return -e;
	}
	return 0;
}

static void want(struct loop *l, struct agent *ag, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = ag };

	epoll_ctl(l->ep, EPOLL_CTL_MOD, ag->fd, &ev);
}

/* Write what is left of the request. */
static void agent_write(struct loop *l, struct agent *ag)
{
	while (ag->req_off < ag->req_len) {
		ssize_t n = send(ag->fd, ag->req + ag->req_off, ag->req_len - ag->req_off,
				 MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			want(l, ag, EPOLLOUT | EPOLLIN);
			return;
		}
		if (n <= 0) { /* the server closed: resend on a new connection */
			l->c.closed++;
			agent_close(l, ag);
			ag->resend = true;
			ag->req_off = 0;
			agent_connect(l, ag);
			return;
		}
		ag->req_off += (size_t)n;
	}
	want(l, ag, EPOLLIN);
}

/* Start the next request of @ag (connected, idle). */
static void agent_send(struct loop *l, struct agent *ag, uint64_t now)
{
	if (!ag->resend && build_request(l->o, ag)) {
		l->c.errors++;
		return;
	}
	if (ag->resend)
		l->c.resends++;
	if (now > ag->due_ns + l->period_ns)
		l->c.late++;
	l->c.sent++;
	ag->inflight = true;
	/* --close: the handshake is part of what the push costs. */
	ag->started_ns = l->o->close_each && ag->conn_ns ? ag->conn_ns : now;
	ag->req_off = 0;
	ag->resp_len = 0;
	agent_write(l, ag);
}

/* The answer in ag->resp, if complete: 1 done (fields set), 0 more to come,
 * -1 malformed. */
static int parse_answer(struct agent *ag, int *status, const char **body, size_t *blen,
			unsigned *retry_s)
{
	char *end = strstr(ag->resp, "\r\n\r\n"), *p;
	size_t clen = 0, have;

	if (!end)
		return ag->resp_len >= RESP_MAX ? -1 : 0;
	if (sscanf(ag->resp, "HTTP/1.%*c %d", status) != 1)
		return -1;
	*retry_s = 1;
	for (p = strstr(ag->resp, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n")) {
		if (!strncasecmp(p + 2, "Content-Length:", 15))
			clen = strtoul(p + 17, NULL, 10);
		else if (!strncasecmp(p + 2, "Retry-After:", 12))
			*retry_s = (unsigned)strtoul(p + 14, NULL, 10);
	}
	have = ag->resp_len - (size_t)(end + 4 - ag->resp);
	if (have < clen)
		return ag->resp_len >= RESP_MAX ? -1 : 0;
	*body = end + 4;
	*blen = clen;
	return 1;
}

static void agent_read(struct loop *l, struct agent *ag, uint64_t now)
{
	for (;;) {
		ssize_t n = recv(ag->fd, ag->resp + ag->resp_len, RESP_MAX - ag->resp_len, 0);
		const char *body;
		size_t blen;
		unsigned retry_s;
		int status = 0, r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) { /* closed by the server (idle timeout, or mid-request) */
			l->c.closed++;
			agent_close(l, ag);
			if (ag->inflight) {
				ag->inflight = false;
				ag->resend = true;
				ag->due_ns = now;
			}
			agent_connect(l, ag);
			return;
		}
		ag->resp_len += (size_t)n;
		ag->resp[ag->resp_len] = '\0';
		if (!ag->inflight) { /* unasked-for bytes */
			ag->resp_len = 0;
			continue;
		}
		r = parse_answer(ag, &status, &body, &blen, &retry_s);
		if (r == 0)
			continue;
		ag->inflight = false;
		ag->resp_len = 0;
		if (r < 0) {
			l->c.errors++;
			agent_close(l, ag);
			agent_connect(l, ag);
			ag->resend = false;
			ag->seq++;
			return;
		}
		if (status == 200) {
			l->c.acked++;
			if (blen >= 9 && !strncmp(body, "duplicate", 9))
				l->c.duplicates++;
			else
				l->c.stored++;
			if (ag->started_ns >= steady_ns)
				lat_add(&l->c, (now - ag->started_ns) / 1000);
			else
				l->c.warm++;
			ag->resend = false;
			ag->seq++;
		} else if (status == 503 || status == 429) {
			l->c.busy++;
			ag->resend = true;
			ag->retry_ns = now + (uint64_t)(retry_s ? retry_s : 1) * NS_S;
		} else {
			l->c.errors++;
			ag->resend = false;
			ag->seq++;
		}
		if (l->o->close_each) {
			agent_close(l, ag); /* the next push connects when due */
		} else if (strstr(ag->resp, "Connection: close")) {
			agent_close(l, ag);
			agent_connect(l, ag);
		}
		return;
	}
}

static void *loop_main(void *arg)
{
	struct loop *l = arg;
	struct epoll_event evs[256];
	bool draining = false;

	for (;;) {
		uint64_t now = clock_mono_ns(), next = now + 100 * NS_MS;
		bool busy = false;
		int n, wait_ms;

		if (!draining && now >= l->end_ns)
			draining = true;
		for (unsigned i = 0; i < l->n; i++) {
			struct agent *ag = &l->a[i];

			if (ag->inflight) {
				busy = true;
				if (now - ag->started_ns > (uint64_t)l->o->timeout_ms * NS_MS) {
					l->c.timeouts++;
					agent_close(l, ag);
					ag->inflight = false;
					ag->resend = true;
					agent_connect(l, ag);
				}
				continue;
			}
			/* After the end only resends go, for a grace period. */
			if (draining && (!ag->resend ||
					 now > l->end_ns + 2 * (uint64_t)l->o->timeout_ms * NS_MS))
				continue;
			if (draining)
				busy = true;
			uint64_t at = ag->resend ? (ag->retry_ns > now ? ag->retry_ns : now) : ag->due_ns;

			if (!ag->connected || ag->fd < 0) {
				/* --close: connect only when the push is due */
				if (ag->fd < 0 && (!l->o->close_each || at <= now))
					agent_connect(l, ag);
				else if (ag->fd < 0 && at < next)
					next = at;
				continue;
			}

			if (at <= now) {
				bool was_resend = ag->resend;

				agent_send(l, ag, now);
				if (!was_resend)
					ag->due_ns += l->period_ns;
				ag->retry_ns = 0;
			} else if (at < next) {
				next = at;
			}
		}
		if (draining && !busy)
			break;
		wait_ms = next > now ? (int)((next - now + NS_MS - 1) / NS_MS) : 0;
		n = epoll_wait(l->ep, evs, sizeof(evs) / sizeof(evs[0]), wait_ms > 100 ? 100 : wait_ms);
		now = clock_mono_ns();
		for (int i = 0; i < n; i++) {
			struct agent *ag = evs[i].data.ptr;

			if (ag->fd < 0)
				continue;
			if (!ag->connected) {
				int err = 0;
				socklen_t len = sizeof(err);

				if (getsockopt(ag->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
					l->c.errors++;
					agent_close(l, ag);
					continue;
				}
				ag->connected = true;
				if (ag->inflight)
					agent_write(l, ag);
				else
					want(l, ag, EPOLLIN);
				continue;
			}
			if (evs[i].events & EPOLLOUT && ag->inflight && ag->req_off < ag->req_len)
				agent_write(l, ag);
			if (ag->fd >= 0 && evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				agent_read(l, ag, now);
		}
	}
	return NULL;
}

/* ---- /healthz sampler ---- */

struct healthz {
	const struct opts *o;
	pthread_t thread;
	struct counts c; /* lat_us: latencies; errors: failures */
};

/* One GET /healthz on a new connection: latency in us, or -1. */
static int64_t healthz_once(const struct opts *o)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct timeval tv = { .tv_sec = 2 };
	uint64_t t0 = clock_mono_ns();
	char buf[512];
	size_t len = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int64_t ret = -1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)&o->addr, sizeof(o->addr)) ||
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1)
		goto out;
	for (;;) {
		ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);

		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\r\n\r\nok\n") || len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	if (!strncmp(buf, "HTTP/1.1 200", 12) && strstr(buf, "\r\n\r\nok"))
		ret = (int64_t)((clock_mono_ns() - t0) / 1000);
out:
	close(fd);
	return ret;
}

static void *healthz_main(void *arg)
{
	struct healthz *hz = arg;

	while (!stop_healthz) {
		uint64_t t0 = clock_mono_ns(), spent;
		int64_t us = healthz_once(hz->o);
		struct timespec ts;

		if (us < 0)
			hz->c.errors++;
		else if (t0 >= steady_ns)
			lat_add(&hz->c, (uint64_t)us);
		else
			hz->c.warm++;
		spent = clock_mono_ns() - t0;
		if (spent < hz->o->healthz_ms * NS_MS) {
			uint64_t left = hz->o->healthz_ms * NS_MS - spent;

			ts.tv_sec = (time_t)(left / NS_S);
			ts.tv_nsec = (long)(left % NS_S);
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void healthz_summary(struct healthz *hz, char *out, size_t len)
{
	qsort(hz->c.lat_us, hz->c.n_lat, sizeof(uint64_t), cmp_u64);
	snprintf(out, len,
		 "healthz_n=%zu healthz_p50_ms=%.2f healthz_p99_ms=%.2f healthz_max_ms=%.2f "
		 "healthz_fail=%" PRIu64,
		 hz->c.n_lat, pct_ms(hz->c.lat_us, hz->c.n_lat, 0.5),
		 pct_ms(hz->c.lat_us, hz->c.n_lat, 0.99),
		 hz->c.n_lat ? (double)hz->c.lat_us[hz->c.n_lat - 1] / 1000.0 : 0.0, hz->c.errors);
	free(hz->c.lat_us);
	hz->c.lat_us = NULL;
	hz->c.n_lat = hz->c.cap_lat = 0;
}

/* ---- modes ---- */

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int run_push(const struct opts *o, struct healthz *hz)
{
	struct loop *loops = calloc(o->threads, sizeof(*loops));
	struct agent *agents = calloc(o->agents, sizeof(*agents));
	struct counts t = { 0 };
	uint64_t start, period;
	char hs[256];
	double cpu0 = cpu_s();

	if (!loops || !agents)
		return 1;
	period = (uint64_t)((double)o->agents / o->rate * 1e9);
	start = clock_mono_ns() + 500 * NS_MS; /* connections first */
	for (unsigned i = 0; i < o->agents; i++) {
		struct agent *ag = &agents[i];

		ag->idx = i;
		ag->fd = -1;
		ag->seq = 1;
		ag->due_ns = start + period * i / o->agents;
		snprintf(ag->agent_id, sizeof(ag->agent_id), "swarm-%d-%u", (int)getpid(), i);
		snprintf(ag->host, sizeof(ag->host), "swarm-host-%u", i);
	}
	for (unsigned k = 0; k < o->threads; k++) {
		struct loop *l = &loops[k];
		unsigned lo = o->agents * k / o->threads, hi = o->agents * (k + 1) / o->threads;

		l->o = o;
		l->a = agents + lo;
		l->n = hi - lo;
		l->period_ns = period;
		l->start_ns = start;
		l->end_ns = start + (uint64_t)(o->duration * 1e9);
		l->ep = epoll_create1(EPOLL_CLOEXEC);
		if (l->ep < 0)
			return 1;
		for (unsigned i = 0; i < l->n && !o->close_each; i++)
			if (agent_connect(l, &l->a[i]))
				l->c.errors++;
	}
	for (unsigned k = 0; k < o->threads; k++)
		if (pthread_create(&loops[k].thread, NULL, loop_main, &loops[k]))
			return 1;
	for (unsigned k = 0; k < o->threads; k++) {
		struct counts *c = &loops[k].c;

		pthread_join(loops[k].thread, NULL);
		t.sent += c->sent;
		t.acked += c->acked;
		t.stored += c->stored;
		t.duplicates += c->duplicates;
		t.resends += c->resends;
		t.timeouts += c->timeouts;
		t.busy += c->busy;
		t.errors += c->errors;
		t.closed += c->closed;
		t.late += c->late;
		t.warm += c->warm;
		for (size_t i = 0; i < c->n_lat; i++)
			lat_add(&t, c->lat_us[i]);
		free(c->lat_us);
		for (unsigned i = 0; i < loops[k].n; i++) {
			if (loops[k].a[i].fd >= 0)
				close(loops[k].a[i].fd);
			free(loops[k].a[i].req);
		}
		close(loops[k].ep);
	}
	stop_healthz = 1;
	if (hz)
		pthread_join(hz->thread, NULL);
	qsort(t.lat_us, t.n_lat, sizeof(uint64_t), cmp_u64);
	hs[0] = '\0';
	if (hz)
		healthz_summary(hz, hs, sizeof(hs));
	printf("swarm mode=%s agents=%u threads=%u rate=%g duration=%g sent=%" PRIu64 " acked=%" PRIu64
	       " stored=%" PRIu64 " duplicates=%" PRIu64 " resends=%" PRIu64 " timeouts=%" PRIu64
	       " busy=%" PRIu64 " errors=%" PRIu64 " closed=%" PRIu64 " late=%" PRIu64
	       " warmup=%g warmup_acks=%" PRIu64 " p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f %s cpu_s=%.2f\n",
	       o->close_each ? "close" : "keepalive", o->agents, o->threads, o->rate, o->duration, t.sent, t.acked, t.stored,
	       t.duplicates, t.resends, t.timeouts, t.busy, t.errors, t.closed, t.late,
	       o->warmup, t.warm,
	       pct_ms(t.lat_us, t.n_lat, 0.5), pct_ms(t.lat_us, t.n_lat, 0.9),
	       pct_ms(t.lat_us, t.n_lat, 0.99),
	       t.n_lat ? (double)t.lat_us[t.n_lat - 1] / 1000.0 : 0.0, hs, cpu_s() - cpu0);
	free(t.lat_us);
	free(loops);
	free(agents);
	return 0;
}

/* Is @fd still open at the other end (nothing to read, no EOF)? */
static bool still_open(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static int run_idle(const struct opts *o, struct healthz *hz)
{
	int *fds = malloc(o->idle * sizeof(*fds));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	unsigned opened = 0, connected = 0, held = 0, refused = 0;
	uint64_t deadline;
	char hs[256] = "";

	if (!fds || ep < 0)
		return 1;
	for (unsigned i = 0; i < o->idle; i++) {
		struct epoll_event ev = { .events = EPOLLOUT };

		fds[i] = open_conn(o);
		if (fds[i] < 0) {
			fprintf(stderr, "agent_swarm: connection %u: %s\n", i, strerror(-fds[i]));
			break;
		}
		ev.data.u32 = i;
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
		opened++;
		/* Do not outrun the listen backlog by far. */
		if (opened % 512 == 0) {
			struct epoll_event evs[512];
			int n;

			while ((n = epoll_wait(ep, evs, 512, 2000)) > 0) {
				for (int k = 0; k < n; k++)
					epoll_ctl(ep, EPOLL_CTL_DEL, fds[evs[k].data.u32], NULL);
				connected += (unsigned)n;
				if (connected >= opened)
					break;
			}
		}
	}
	deadline = clock_mono_ns() + 10 * NS_S;
	while (connected < opened && clock_mono_ns() < deadline) {
		struct epoll_event evs[512];
		int n = epoll_wait(ep, evs, 512, 500);

		for (int k = 0; k < n; k++)
			epoll_ctl(ep, EPOLL_CTL_DEL, fds[evs[k].data.u32], NULL);
		if (n > 0)
			connected += (unsigned)n;
	}
	fprintf(stderr, "agent_swarm: %u connections opened, %u connected; holding %g s\n", opened,
		connected, o->duration);
	sleep_s(o->duration);
	for (unsigned i = 0; i < opened; i++) {
		if (still_open(fds[i]))
			held++;
		else
			refused++;
		close(fds[i]);
	}
	stop_healthz = 1;
	if (hz) {
		pthread_join(hz->thread, NULL);
		healthz_summary(hz, hs, sizeof(hs));
	}
	printf("idle want=%u held=%u refused=%u %s\n", o->idle, held, refused + (o->idle - opened),
	       hs);
	close(ep);
	free(fds);
	return 0;
}

static void usage(void)
{
	fputs("usage: agent_swarm [--agents N] [--threads M] [--rate R] [--duration S]\n"
	      "                   [--timeout-ms T] [--healthz-ms P] [--token TOKEN] [--gzip]\n"
	      "                   [--cgroups N] [--stacks N] [--close] [--warmup S] push URL\n"
	      "       agent_swarm [--idle K] [--duration S] [--healthz-ms P] [--warmup S] idle URL\n",
	      stderr);
}

static int parse_url(const char *url, struct opts *o)
{
	char host[64];
	const char *p = url, *colon;
	unsigned long port;
	char *end;

	if (strncmp(p, "http://", 7))
		return -EINVAL;
	p += 7;
	colon = strchr(p, ':');
	if (!colon || (size_t)(colon - p) >= sizeof(host))
		return -EINVAL;
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (!port || port > 65535 || (*end && *end != '/'))
		return -EINVAL;
	o->addr.sin_family = AF_INET;
	o->addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &o->addr.sin_addr) != 1)
		return -EINVAL;
	snprintf(o->hostport, sizeof(o->hostport), "%s:%lu", host, port);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "agents", required_argument, NULL, 'a' },  { "threads", required_argument, NULL, 't' },
		{ "rate", required_argument, NULL, 'r' },    { "duration", required_argument, NULL, 'd' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "healthz-ms", required_argument, NULL, 'H' },
		{ "token", required_argument, NULL, 'k' },   { "gzip", no_argument, NULL, 'z' },
		{ "idle", required_argument, NULL, 'i' },    { "cgroups", required_argument, NULL, 'c' },
		{ "stacks", required_argument, NULL, 's' },  { "close", no_argument, NULL, 'C' },
		{ "warmup", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .agents = 100, .threads = 2, .rate = 100, .duration = 10,
			  .timeout_ms = 5000, .healthz_ms = 100, .idle = 1000, .cgroups = 2,
			  .stacks = 8 };
	struct healthz hz = { .o = &o };
	struct rlimit rl;
	int opt;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'a': o.agents = (unsigned)strtoul(optarg, NULL, 10); break;
		case 't': o.threads = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'r': o.rate = strtod(optarg, NULL); break;
		case 'd': o.duration = strtod(optarg, NULL); break;
		case 'T': o.timeout_ms = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'H': o.healthz_ms = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'k': o.token = optarg; break;
		case 'z': o.gzip = true; break;
		case 'C': o.close_each = true; break;
		case 'i': o.idle = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'c': o.cgroups = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': o.stacks = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'w': o.warmup = strtod(optarg, NULL); break;
		default: usage(); return 1;
		}
	}
	if (argc - optind != 2 || parse_url(argv[optind + 1], &o) || !o.agents || !o.threads ||
	    o.threads > o.agents || o.rate <= 0 || o.duration < 0 || !o.timeout_ms ||
	    !(o.warmup >= 0 && o.warmup < 3600)) {
		usage();
		return 1;
	}
	/* A descriptor per agent or idle connection. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	steady_ns = clock_mono_ns() + (uint64_t)(o.warmup * 1e9);
	if (o.healthz_ms && pthread_create(&hz.thread, NULL, healthz_main, &hz))
		return 1;
	if (!strcmp(argv[optind], "push"))
		return run_push(&o, o.healthz_ms ? &hz : NULL);
	if (!strcmp(argv[optind], "idle"))
		return run_idle(&o, o.healthz_ms ? &hz : NULL);
	usage();
	return 1;
}
