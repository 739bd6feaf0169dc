// SPDX-License-Identifier: MIT
/*
 * lib/httpc against a one-request loopback server: the options' strings
 * (URL, User-Agent, basic credentials) reach the request although the
 * caller scribbled over and freed its copies as soon as httpc_new()
 * returned, and a user without a password sends "user:".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/httpc.h"
#include "tests/unit/testlib.h"

struct server {
	int fd;
	int port;
	char req[4096]; /* the request as received, NUL-terminated */
	pthread_t thread;
};

/* Take one request (headers and its body "hello"), answer 204. */
static void *serve_one(void *arg)
{
	static const char answer[] = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
	struct server *s = arg;
	int c = accept(s->fd, NULL, NULL);
	size_t n = 0;

	if (c < 0)
		return NULL;
	while (n + 1 < sizeof(s->req)) {
		ssize_t r = read(c, s->req + n, sizeof(s->req) - 1 - n);
		const char *end;

		if (r <= 0)
			break;
		n += (size_t)r;
		s->req[n] = '\0';
		end = strstr(s->req, "\r\n\r\n");
		if (end && strcmp(end + 4, "hello") == 0)
			break;
	}
	if (write(c, answer, sizeof(answer) - 1) < 0)
		s->req[0] = '\0';
	close(c);
	return NULL;
}

static void server_start(struct server *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	memset(s, 0, sizeof(*s));
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->fd >= 0);
	assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->fd, 1), 0);
	assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->thread, NULL, serve_one, s), 0);
}

/* Overwrite, then free, a string the caller handed over. */
static void scrub_free(char *p)
{
	if (p)
		memset(p, 'X', strlen(p));
	free(p);
}

/* POST "hello" with the given credentials from strings freed right after
 * httpc_new(); the request the server saw is in @s->req. */
static void post_with(struct server *s, const char *user, const char *password)
{
	char url[64];
	char *u, *ua, *bu, *bp;
	struct httpc_result r;
	struct httpc *h;

	server_start(s);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/push", s->port);
	u = strdup(url);
	ua = strdup("cgperf-test/1");
	bu = strdup(user);
	bp = password ? strdup(password) : NULL;
	h = httpc_new(&(struct httpc_opts){ .url = u, .user_agent = ua, .timeout_ms = 5000,
					    .basic_user = bu, .basic_password = bp });
	assert_non_null(h);
	scrub_free(u);
	scrub_free(ua);
	scrub_free(bu);
	scrub_free(bp);
	httpc_post(h, NULL, 0, "hello", 5, &r);
	assert_int_equal(r.kind, HTTPC_ACK);
	assert_int_equal(r.status, 204);
	httpc_free(h);
	pthread_join(s->thread, NULL);
	close(s->fd);
	assert_non_null(strstr(s->req, "POST /push HTTP/1.1\r\n"));
	assert_non_null(strstr(s->req, "\r\nUser-Agent: cgperf-test/1\r\n"));
}

static void test_options_outlive_caller(void **state)
{
	struct server s;

	(void)state;
	post_with(&s, "alice", "s3cret");
	assert_non_null(strstr(s.req, "\r\nAuthorization: Basic YWxpY2U6czNjcmV0\r\n"));
}

static void test_user_without_password(void **state)
{
	struct server s;

	(void)state;
	post_with(&s, "alice", NULL);
	assert_non_null(strstr(s.req, "\r\nAuthorization: Basic YWxpY2U6\r\n"));
}

TL_MAIN(test_options_outlive_caller, test_user_without_password)
