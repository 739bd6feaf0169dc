// SPDX-License-Identifier: MIT
/*
 * exporter/http: the handlers through a real server on a free loopback
 * port, over a plain socket (so a test can send what no client library
 * would: a lying Content-Length, a chunked body past the cap, garbage).
 * Each case is request -> status and body; the pushes that must be
 * refused are followed by a check that nothing accepted was lost.
 */
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
#include <zlib.h>

#include "lib/log.h"
#include "wire/wire.h"
#include "exporter/http.h"
#include "exporter/store/store.h"
#include "exporter/totals.h"
#include "tests/unit/testlib.h"

#define TOKEN "s3cret"
#define MAX_BODY (256u << 10)
#define NS 1000000000ull

static char *dir;
static struct store *store;
static struct totals *totals;
static struct http *srv;
static uint16_t port;
static uint64_t seq;

struct resp {
	int status;
	char *head; /* status line and headers */
	char *body;
	size_t body_len;
};

static void resp_free(struct resp *r)
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

static int setup(void **state)
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

static int teardown(void **state)
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
static struct resp exchange(const char *head, const void *body, size_t len)
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

static struct resp get(const char *path, const char *extra)
{
	char head[512];

	snprintf(head, sizeof(head), "GET %s HTTP/1.1\r\nHost: x\r\n%s", path, extra ? extra : "");
	return exchange(head, NULL, 0);
}

static struct resp post(const void *body, size_t len, const char *auth, const char *extra)
{
	char head[512];

	snprintf(head, sizeof(head),
		 "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
		 "Content-Length: %zu\r\n%s%s%s%s",
		 len, auth ? "Authorization: Bearer " : "", auth ? auth : "", auth ? "\r\n" : "",
		 extra ? extra : "");
	return exchange(head, body, len);
}

/* A batch of the next sequence number with @ncounters counters in one
 * cgroup named @cg; gzip'd when @gz. */
static uint8_t *batch(const char *cg, size_t ncounters, bool gz, size_t *len)
{
	uint64_t n = ++seq;
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
static long long metric(const char *series)
{
	struct resp r = get("/metrics", NULL);
	long long v = -1;

	assert_int_equal(r.status, 200);
	for (const char *l = r.body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, series, strlen(series)) && l[strlen(series)] == ' ')
			v = strtoll(l + strlen(series) + 1, NULL, 10);
	resp_free(&r);
	return v;
}

#define RECEIVED "cgperf_exporter_batches_received_total"

static void expect(struct resp r, int status, const char *body_has)
{
	if (r.status != status || (body_has && !strstr(r.body, body_has)))
		fail_msg("got %d \"%.200s\", want %d with \"%s\"", r.status, r.body, status,
			 body_has ? body_has : "");
	resp_free(&r);
}

static void test_routes(void **state)
{
	expect(get("/healthz", NULL), 200, "ok\n");
	expect(get("/nope", NULL), 404, "not found");
	expect(exchange("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n", NULL, 0), 405, "GET");
	expect(get("/api/v1/push", NULL), 405, "POST");
	expect(get("/", NULL), 200, NULL);
	expect(get("/api/v1/stacks?format=png", NULL), 400, "want folded, pprof or svg");
	expect(get("/api/v1/stacks?from=yesterday-ish", NULL), 400, NULL);
}

static void test_push_and_duplicate(void **state)
{
	long long before = metric(RECEIVED);
	size_t len;
	uint8_t *b = batch("/web", 3, false, &len);

	expect(post(b, len, TOKEN, NULL), 200, "stored\n");
	expect(post(b, len, TOKEN, NULL), 200, "duplicate\n");
	free(b);
	assert_int_equal(metric(RECEIVED), before + 1);
	assert_true(metric("cgperf_exporter_batches_duplicate_total") >= 1);
	assert_true(metric("cgperf_cgroup_perf_events_total{host=\"h1\",id=\"/web\",container=\"\","
			   "container_name=\"\",pod=\"\",pod_name=\"\",namespace=\"\",unit=\"\","
			   "runtime=\"\",event=\"ev-0\"}") >= 1000);
}

static void test_gzip_body(void **state)
{
	long long before = metric(RECEIVED);
	size_t len;
	uint8_t *b = batch("/gz", 5, true, &len);

	assert_true(len > 2 && b[0] == 0x1f && b[1] == 0x8b);
	expect(post(b, len, TOKEN, "Content-Encoding: gzip\r\n"), 200, "stored\n");
	free(b);
	assert_int_equal(metric(RECEIVED), before + 1);
}

/* Refusals cost nothing stored: the count of received batches moves only
 * with the good push that follows them, and the reject counters say why. */
static void test_bad_input(void **state)
{
	static const char garbage[] = "\x08\x96\x01 this is not a batch \xff\xff\xff\xff";
	long long before = metric(RECEIVED);
	long long bad = metric("cgperf_exporter_rejects_total{reason=\"bad_request\"}");
	long long auth = metric("cgperf_exporter_rejects_total{reason=\"auth\"}");
	uint8_t gz_junk[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3 };
	size_t len;
	uint8_t *b = batch("/ok", 2, false, &len);

	expect(post(garbage, sizeof(garbage) - 1, TOKEN, NULL), 400, NULL);
	expect(post(gz_junk, sizeof(gz_junk), TOKEN, NULL), 400, "gzip");
	expect(post("", 0, TOKEN, NULL), 400, "empty body");
	expect(post(b, len, NULL, NULL), 401, "bearer token");
	expect(post(b, len, "wrong", NULL), 401, "bearer token");
	expect(post(b, len - 3, TOKEN, NULL), 400, NULL); /* cut short */
	assert_int_equal(metric(RECEIVED), before);
	assert_int_equal(metric("cgperf_exporter_rejects_total{reason=\"bad_request\"}"), bad + 4);
	assert_int_equal(metric("cgperf_exporter_rejects_total{reason=\"auth\"}"), auth + 2);
	expect(post(b, len, TOKEN, NULL), 200, "stored\n");
	free(b);
	assert_int_equal(metric(RECEIVED), before + 1);
}

static void test_big_bodies(void **state)
{
	long long before = metric(RECEIVED);
	long long large = metric("cgperf_exporter_rejects_total{reason=\"too_large\"}");
	size_t len, big = MAX_BODY + 4096;
	uint8_t *b = batch("/big", 4000, false, &len), *huge = calloc(1, big);
	char head[256], chunk[32];
	struct resp r;

	/* just under the cap, plain */
	assert_true(len > MAX_BODY / 4 && len < MAX_BODY);
	expect(post(b, len, TOKEN, NULL), 200, "stored\n");
	free(b);
	/* Content-Length over the cap: refused from the headers */
	assert_non_null(huge);
	expect(post(huge, big, TOKEN, NULL), 413, "too large");
	/* no Content-Length (chunked): refused once the body passes the cap */
	snprintf(head, sizeof(head),
		 "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TOKEN "\r\n"
		 "Transfer-Encoding: chunked\r\n");
	snprintf(chunk, sizeof(chunk), "%zx\r\n", big);
	{
		size_t n = strlen(chunk) + big + 7;
		char *body = malloc(n);

		assert_non_null(body);
		memcpy(body, chunk, strlen(chunk));
		memset(body + strlen(chunk), 'x', big);
		memcpy(body + strlen(chunk) + big, "\r\n0\r\n\r\n", 7);
		r = exchange(head, body, n);
		free(body);
	}
	expect(r, 413, "too large");
	/* a gzip bomb: small on the wire, over the cap inflated */
	{
		uLongf zl = compressBound(big);
		uint8_t *z = malloc(zl + 18);
		z_stream s = { 0 };

		assert_non_null(z);
		assert_int_equal(deflateInit2(&s, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
		s.next_in = huge;
		s.avail_in = (uInt)big;
		s.next_out = z;
		s.avail_out = (uInt)(zl + 18);
		assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
		expect(post(z, s.total_out, TOKEN, NULL), 413, "exceeds");
		deflateEnd(&s);
		free(z);
	}
	free(huge);
	assert_int_equal(metric(RECEIVED), before + 1);
	assert_int_equal(metric("cgperf_exporter_rejects_total{reason=\"too_large\"}"), large + 3);
}

/* Read routes answer gzip'd when asked, plain otherwise. */
static void test_gzip_answers(void **state)
{
	struct resp r = get("/metrics", "Accept-Encoding: gzip\r\n");
	char out[1 << 16];
	z_stream s = { 0 };

	assert_int_equal(r.status, 200);
	assert_non_null(strcasestr(r.head, "Content-Encoding: gzip"));
	assert_non_null(strcasestr(r.head, "Vary: Accept-Encoding"));
	assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
	s.next_in = (Bytef *)r.body;
	s.avail_in = (uInt)r.body_len;
	s.next_out = (Bytef *)out;
	s.avail_out = sizeof(out) - 1;
	assert_true(inflate(&s, Z_FINISH) == Z_STREAM_END || s.avail_out == 0);
	out[sizeof(out) - 1 - s.avail_out] = '\0';
	inflateEnd(&s);
	assert_non_null(strstr(out, "# TYPE cgperf_exporter_series gauge"));
	resp_free(&r);
	r = get("/metrics", "Accept-Encoding: gzip;q=0, identity\r\n");
	assert_null(strcasestr(r.head, "Content-Encoding: gzip"));
	assert_non_null(strstr(r.body, "# TYPE cgperf_exporter_series gauge"));
	resp_free(&r);
	r = get("/metrics", "Accept: application/openmetrics-text; version=1.0.0\r\n");
	assert_non_null(strstr(r.body, "# TYPE cgperf_exporter_batches_received counter\n"));
	assert_non_null(strstr(r.body, "# EOF\n"));
	resp_free(&r);
}

/* A cgroup name with a quote, a newline and a backslash: escaped as a
 * label in /metrics and as a JSON string in /api/v1/targets. */
static void test_hostile_names(void **state)
{
	size_t len;
	uint8_t *b = batch("/we\"ird\nname\\", 1, false, &len);
	struct resp r;

	expect(post(b, len, TOKEN, NULL), 200, "stored\n");
	free(b);
	r = get("/metrics", NULL);
	assert_non_null(strstr(r.body, "id=\"/we\\\"ird\\nname\\\\\""));
	resp_free(&r);
	r = get("/api/v1/targets", NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"/we\\\"ird\\nname\\\\\""));
	resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_push_and_duplicate),
		cmocka_unit_test(test_gzip_body),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_big_bodies),
		cmocka_unit_test(test_gzip_answers),
		cmocka_unit_test(test_hostile_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
