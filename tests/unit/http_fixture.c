// SPDX-License-Identifier: MIT
/* The server and the plain-socket client of http_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "exporter/http.h"
#include "exporter/store/store.h"
#include "exporter/totals.h"
#include "lib/log.h"
#include "tests/unit/http_fixture.h"
#include "tests/unit/testlib.h"
#include "wire/wire.h"

static char *dir;
static struct store *store;
static struct totals *totals;
static struct http *srv;
static uint16_t port;
static uint64_t seq;


void hf_resp_free(struct resp *r)
{
	free(r->head);
	free(r->body);
}

/* A port the kernel just gave out and took back: free unless raced. */
static uint16_t free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	close(fd);
	return ntohs(a.sin_port);
}

int hf_setup(void **state)
{
	char err[256], listen[64];

	log_setup("logfmt", "error");
	dir = tl_tmpdir("test_http");
	store = store_open(store_backend("sqlite"), dir, err, sizeof(err));
	if (!store)
		fail_msg("store_open: %s", err);
	totals = totals_new();
	assert_non_null(totals);
	for (int tries = 0; !srv && tries < 5; tries++) {
		struct http_config cfg = {
			.listen = listen,
			.token = TOKEN,
			.max_body = MAX_BODY,
			.series_expiry_ns = 3600 * NS,
			.store = store,
			.totals = totals,
		};

		port = free_port();
		snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
		srv = http_start(&cfg, err, sizeof(err));
	}
	if (!srv)
		fail_msg("http_start: %s", err);
	return 0;
}

int hf_teardown(void **state)
{
	http_stop(srv);
	totals_free(totals);
	store_close(store);
	tl_rmtree(dir);
	return 0;
}

static void send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) /* the server may answer and close before the rest */
			return;
		c += w;
		n -= (size_t)w;
	}
}

/* Send @head (request line and headers, without the blank line) and @body,
 * read the answer until the server closes (Connection: close). */
struct resp hf_exchange(const char *head, const void *body, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 20 };
	struct resp r = { 0 };
	size_t have = 0, cap = 1 << 16;
	char *buf = malloc(cap), *sep;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t n;

	assert_non_null(buf);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	send_all(fd, head, strlen(head));
	send_all(fd, "Connection: close\r\n\r\n", 21);
	if (len)
		send_all(fd, body, len);
	while ((n = recv(fd, buf + have, cap - have - 1, 0)) > 0) {
		have += (size_t)n;
		if (have + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	close(fd);
	buf[have] = '\0';
	sep = strstr(buf, "\r\n\r\n");
	if (!sep)
		fail_msg("no answer to %s: %zu bytes", head, have);
	*sep = '\0';
	r.head = strdup(buf);
	r.body_len = have - (size_t)(sep + 4 - buf);
	r.body = malloc(r.body_len + 1);
	assert_non_null(r.head);
	assert_non_null(r.body);
	memcpy(r.body, sep + 4, r.body_len);
	r.body[r.body_len] = '\0';
	assert_int_equal(sscanf(r.head, "HTTP/1.%*d %d", &r.status), 1);
	free(buf);
	return r;
}

struct resp hf_get(const char *path, const char *extra)
{
	char head[512];

	snprintf(head, sizeof(head), "GET %s HTTP/1.1\r\nHost: x\r\n%s", path, extra ? extra : "");
	return hf_exchange(head, NULL, 0);
}

struct resp hf_post(const void *body, size_t len, const char *auth, const char *extra)
{
	char head[512];

	snprintf(head, sizeof(head),
		 "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
		 "Content-Length: %zu\r\n%s%s%s%s",
		 len, auth ? "Authorization: Bearer " : "", auth ? auth : "", auth ? "\r\n" : "",
		 extra ? extra : "");
	return hf_exchange(head, body, len);
}

/* A batch of the next sequence number with @ncounters counters in one
 * cgroup named @cg; gzip'd when @gz. */
uint8_t *hf_batch(const char *cg, size_t ncounters, bool gz, size_t *len)
{
	uint64_t n = hf_next_seq();
	struct wire_batch *b = wire_batch_new("h1", NULL, "agent-1", "9.9", n, n * NS, n * NS + NS);
	uint8_t *buf;
	int c;

	assert_non_null(b);
	c = wire_add_cgroup(b, cg, 7, NULL);
	assert_true(c >= 0);
	for (size_t i = 0; i < ncounters; i++) {
		char ev[32];

		snprintf(ev, sizeof(ev), "ev-%zu", i);
		assert_int_equal(wire_add_counter(b, c, ev, 1000 + i, 10, 10, true), 0);
	}
	assert_int_equal((gz ? wire_encode_gzip : wire_encode)(b, &buf, len), 0);
	wire_batch_free(b);
	return buf;
}

/* The value of the sample line starting with @series in /metrics, or -1. */
long long hf_metric(const char *series)
{
	struct resp r = hf_get("/metrics", NULL);
	long long v = -1;

	assert_int_equal(r.status, 200);
	for (const char *l = r.body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, series, strlen(series)) && l[strlen(series)] == ' ')
			v = strtoll(l + strlen(series) + 1, NULL, 10);
	hf_resp_free(&r);
	return v;
}


void hf_expect(struct resp r, int status, const char *body_has)
{
	if (r.status != status || (body_has && !strstr(r.body, body_has)))
		fail_msg("got %d \"%.200s\", want %d with \"%s\"", r.status, r.body, status,
			 body_has ? body_has : "");
	hf_resp_free(&r);
}

uint64_t hf_next_seq(void)
{
	return ++seq;
}
