// SPDX-License-Identifier: MIT
/*
 * agent/push against real HTTP servers: tests/lib/fake_collector.py, forked
 * per scenario (python3 is part of the test toolchain), which checks every
 * request (gzip, bearer token, headers), answers from a script of statuses
 * and records what it accepted. Scenarios: order and headers; 500 then 200;
 * 429/503 with Retry-After in seconds and as an HTTP date; 400 not retried;
 * an outage (batches spool, then arrive in order with no gap); the spool
 * cap during an outage; two collectors, one hanging; an agent restart;
 * the kept-alive connection closed once idle; a lost ack (stored, never
 * answered) counted as maybe delivered and its resend as a duplicate;
 * HTTPS with a private CA and a client certificate.
 *
 * Servers are stopped by PID in the teardown, whatever failed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/ship/push.h"

#define TOKEN "s3cret-t0ken"
#define MAX_SRV 3
#define MAX_LOG 256
#define MAX_REQ 256

struct srv {
	pid_t pid;
	int port;
	char dir[PATH_MAX];
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
};

static char script[PATH_MAX];

/* ---- helpers ---------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* tests/lib/fake_collector.py: from $CGPERF_ROOT, the current directory, or
 * two levels above this executable (BUILD/tests/test_push). */
static bool find_script(void)
{
	const char *root = getenv("CGPERF_ROOT");
	char exe[PATH_MAX];
	ssize_t n;

	if (root) {
		snprintf(script, sizeof(script), "%s/tests/lib/fake_collector.py", root);
		if (access(script, R_OK) == 0)
			return true;
	}
	snprintf(script, sizeof(script), "tests/lib/fake_collector.py");
	if (access(script, R_OK) == 0)
		return realpath("tests/lib/fake_collector.py", script) != NULL;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		for (int up = 0; up < 3 && (slash = strrchr(exe, '/')); up++)
			*slash = '\0';
		snprintf(script, sizeof(script), "%.*s/tests/lib/fake_collector.py", PATH_MAX - 40, exe);
		if (access(script, R_OK) == 0)
			return true;
	}
	return false;
}

static void log_cb(void *arg, enum push_log_level level, const char *msg)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	struct logcap *l = arg;

	fprintf(stderr, "  push log level=%s msg=\"%s\"\n", names[level], msg);
	pthread_mutex_lock(&l->lock);
	if (l->n < MAX_LOG) {
		l->level[l->n] = level;
		l->text[l->n] = strdup(msg);
		l->n++;
	}
	pthread_mutex_unlock(&l->lock);
}

/* Log lines at @level containing @substr (NULL: any). */
static int log_count(struct logcap *l, enum push_log_level level, const char *substr)
{
	int n = 0;

	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < l->n; i++) {
		if (l->level[i] == level && l->text[i] && (!substr || strstr(l->text[i], substr)))
			n++;
	}
	pthread_mutex_unlock(&l->lock);
	return n;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/tmp/cgperf-push-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	{
		char root[sizeof(f->root)];

		memcpy(root, f->root, sizeof(root));
		snprintf(f->spool, sizeof(f->spool), "%s/spool", root);
		for (int i = 0; i < MAX_SRV; i++)
			snprintf(f->srv[i].dir, sizeof(f->srv[i].dir), "%s/srv%d", root, i);
	}
	pthread_mutex_init(&f->log.lock, NULL);
	*state = f;
	return 0;
}

static void srv_stop(struct srv *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (int i = 0; i < 4; i++)
		push_free(f->live[i]);
	for (int i = 0; i < MAX_SRV; i++)
		srv_stop(&f->srv[i]);
	if (!getenv("KEEP"))
		nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	for (int i = 0; i < f->log.n; i++)
		free(f->log.text[i]);
	pthread_mutex_destroy(&f->log.lock);
	free(f);
	return 0;
}

/*
 * Start fake_collector for srv[@i] on @port (0: any; the port is kept in
 * srv->port for a restart), with extra arguments up to NULL. Waits until it
 * listens.
 */
static void __attribute__((sentinel)) srv_start(struct fixture *f, int i, int port, ...)
{
	struct srv *s = &f->srv[i];
	char portfile[PATH_MAX + 8], portarg[16];
	const char *argv[40];
	int argc = 0;
	uint64_t deadline;
	va_list ap;
	FILE *fp;

	assert_int_equal(s->pid, 0);
	mkdir(s->dir, 0700);
	snprintf(portfile, sizeof(portfile), "%s/port", s->dir);
	unlink(portfile);
	snprintf(portarg, sizeof(portarg), "%d", port);
	argv[argc++] = "python3";
	argv[argc++] = script;
	argv[argc++] = "--dir";
	argv[argc++] = s->dir;
	argv[argc++] = "--port";
	argv[argc++] = portarg;
	argv[argc++] = "--port-file";
	argv[argc++] = portfile;
	va_start(ap, port);
	for (const char *a; (a = va_arg(ap, const char *));) {
		assert_true(argc < 38);
		argv[argc++] = a;
	}
	va_end(ap);
	argv[argc] = NULL;

	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		execvp("python3", (char *const *)argv);
		_exit(127);
	}
	deadline = now_ms() + 10000;
	while (!(fp = fopen(portfile, "r"))) {
		int status;

		assert_int_equal(waitpid(s->pid, &status, WNOHANG), 0); /* it died */
		assert_true(now_ms() < deadline);
		sleep_ms(10);
	}
	assert_int_equal(fscanf(fp, "%d", &s->port), 1);
	fclose(fp);
	assert_true(port == 0 || s->port == port);
}

static void url_of(const struct srv *s, const char *scheme, char *buf, size_t size)
{
	snprintf(buf, size, "%s://127.0.0.1:%d/api/v1/push", scheme, s->port);
}

struct req {
	uint64_t seq;
	double t;
	char status[16];
	char verdict[32];
};

static int read_requests(const struct srv *s, struct req *out, int max)
{
	char path[PATH_MAX + 16], seq[32];
	FILE *fp;
	int n = 0, idx;

	snprintf(path, sizeof(path), "%s/requests.log", s->dir);
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	while (n < max && fscanf(fp, "%d %lf %31s %15s %31s", &idx, &out[n].t, seq, out[n].status,
				 out[n].verdict) == 5) {
		out[n].seq = strtoull(seq, NULL, 10);
		n++;
	}
	fclose(fp);
	return n;
}

static int read_accepted(const struct srv *s, uint64_t *out, int max)
{
	char path[PATH_MAX + 16];
	FILE *fp;
	int n = 0;

	snprintf(path, sizeof(path), "%s/accepted.log", s->dir);
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	while (n < max && fscanf(fp, "%" SCNu64, &out[n]) == 1)
		n++;
	fclose(fp);
	return n;
}

/* Wait until @s accepted @want batches; the elapsed ms, or -1 on timeout. */
static long wait_accepted(const struct srv *s, int want, unsigned timeout_ms)
{
	uint64_t t0 = now_ms();
	uint64_t got[MAX_REQ];

	while (read_accepted(s, got, MAX_REQ) < want) {
		if (now_ms() - t0 > timeout_ms)
			return -1;
		sleep_ms(5);
	}
	return (long)(now_ms() - t0);
}

/* The uncompressed payload of batch @seq: some text, ~2 KiB. */
static size_t payload(uint64_t seq, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "cgperf test batch %" PRIu64 "\n", seq);

	while (n + 40 < size && n < 2000)
		n += (size_t)snprintf(buf + n, size - n, "stack;frame_%" PRIu64 ";leaf %zu\n", seq, n);
	return n;
}

/* Batch @seq gzip'd (what the agent will send): malloc'd, *@len bytes. */
static void *make_batch(uint64_t seq, size_t *len)
{
	char raw[4096];
	size_t rlen = payload(seq, raw, sizeof(raw));
	z_stream z = { 0 };
	size_t cap = compressBound(rlen) + 64;
	unsigned char *out = malloc(cap);

	assert_non_null(out);
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (unsigned char *)raw;
	z.avail_in = (uInt)rlen;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*len = z.total_out;
	deflateEnd(&z);
	return out;
}

static uint64_t submit_next(struct push *p)
{
	uint64_t seq = 0;
	size_t len;
	void *b;

	assert_int_equal(push_next_seq(p, &seq), 0);
	b = make_batch(seq, &len);
	assert_int_equal(push_submit(p, seq, b, len), 0);
	free(b);
	return seq;
}

/* @s accepted exactly batches @first..@last, in order, once each, with the
 * right bodies; every request it saw was well formed. */
static void check_accepted(const struct srv *s, uint64_t first, uint64_t last)
{
	uint64_t got[MAX_REQ];
	struct req r[MAX_REQ];
	int n = read_accepted(s, got, MAX_REQ), nr = read_requests(s, r, MAX_REQ);

	for (int i = 0; i < n; i++)
		fprintf(stderr, "  %s accepted %" PRIu64 "\n", s->dir, got[i]);
	assert_int_equal(n, last - first + 1);
	for (int i = 0; i < n; i++) {
		char want[4096], path[PATH_MAX + 32], *body;
		size_t wlen = payload(first + (uint64_t)i, want, sizeof(want));
		FILE *fp;

		assert_int_equal(got[i], first + (uint64_t)i);
		snprintf(path, sizeof(path), "%s/body-%" PRIu64, s->dir, got[i]);
		fp = fopen(path, "r");
		assert_non_null(fp);
		body = calloc(1, sizeof(want) + 1);
		assert_non_null(body);
		assert_int_equal(fread(body, 1, sizeof(want), fp), wlen);
		fclose(fp);
		assert_memory_equal(body, want, wlen);
		free(body);
	}
	for (int i = 0; i < nr; i++)
		assert_string_equal(r[i].verdict, "ok");
}

static int count_spool_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) == 20 && strspn(de->d_name, "0123456789") == 20)
			n++;
	}
	closedir(d);
	return n;
}

static struct push_opts base_opts(struct fixture *f, const char *const *urls, size_t n)
{
	return (struct push_opts){
		.urls = urls,
		.n_urls = n,
		.token = TOKEN "\n", /* as read from a token file */
		.timeout_ms = 3000,
		.retry_initial_ms = 50,
		.retry_max_ms = 300,
		.spool_dir = f->spool,
		.log = log_cb,
		.log_arg = &f->log,
	};
}

static struct push *start_push(struct fixture *f, const struct push_opts *o)
{
	struct push *p = push_new(o);

	if (!p)
		fprintf(stderr, "push_new: %s\n", strerror(errno));
	assert_non_null(p);
	for (int i = 0; i < 4; i++) {
		if (!f->live[i]) {
			f->live[i] = p;
			return p;
		}
	}
	fail_msg("too many live push objects");
	return NULL;
}

/* Poll push_stats until @ok holds (true) or @timeout_ms passes (false);
 * the last stats are left in *@st. */
static bool wait_stats(struct push *p, struct push_stats *st, bool (*ok)(const struct push_stats *),
		       unsigned timeout_ms)
{
	uint64_t t0 = now_ms();

	for (;;) {
		push_stats(p, st);
		if (ok(st))
			return true;
		if (now_ms() - t0 > timeout_ms)
			return false;
		sleep_ms(5);
	}
}

static bool first_done(const struct push_stats *st)
{
	return st->collectors[0].pending == 0;
}

static bool has_failed(const struct push_stats *st)
{
	return st->failures >= 1;
}

static void stop_push(struct fixture *f, struct push *p)
{
	for (int i = 0; i < 4; i++) {
		if (f->live[i] == p)
			f->live[i] = NULL;
	}
	push_free(p);
}

/* ---- scenarios -------------------------------------------------------- */

static void test_in_order_with_headers(void **state)
{
	struct fixture *f = *state;
	char url[128];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct push_stats st;
	char path[PATH_MAX + 32];
	struct push *p;
	FILE *fp;
	char line[8192];

	srv_start(f, 0, 0, "--token", TOKEN, NULL);
	url_of(&f->srv[0], "http", url, sizeof(url));
	p = start_push(f, &o);
	for (int i = 0; i < 5; i++)
		assert_int_equal(submit_next(p), (uint64_t)i + 1);
	assert_int_equal(push_flush(p, 5000), 0);
	check_accepted(&f->srv[0], 1, 5);

	/* The headers as sent (the server checked them; here, what it saw). */
	snprintf(path, sizeof(path), "%s/requests.jsonl", f->srv[0].dir);
	fp = fopen(path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(line, sizeof(line), fp));
	fclose(fp);
	assert_non_null(strstr(line, "\"Content-Type\": \"application/x-protobuf\""));
	assert_non_null(strstr(line, "\"Content-Encoding\": \"gzip\""));
	assert_non_null(strstr(line, "\"Authorization\": \"Bearer " TOKEN "\""));
	assert_non_null(strstr(line, "\"X-Cgperf-Sequence\": \"1\""));
	assert_null(strstr(line, "Expect"));

	push_stats(p, &st);
	assert_int_equal(st.sent, 5);
	assert_int_equal(st.acked, 5);
	assert_int_equal(st.retried + st.rejected + st.failures, 0);
	assert_int_equal(st.spool_count, 0);
	assert_int_equal(st.spool_bytes, 0);
	assert_int_equal(st.n_collectors, 1);
	assert_int_equal(st.collectors[0].cursor, 5);
	assert_int_equal(st.collectors[0].pending, 0);
	assert_false(st.collectors[0].failing);
	assert_string_equal(st.collectors[0].last_error, "");
	assert_string_equal(st.collectors[0].url, url);
	assert_int_equal(count_spool_files(f->spool), 0);
	assert_int_equal(log_count(&f->log, PUSH_LOG_WARN, NULL) + log_count(&f->log, PUSH_LOG_ERROR, NULL), 0);
	/* Sequence numbers must grow. */
	assert_int_equal(push_submit(p, 5, "x", 1), -EINVAL);
	assert_int_equal(push_submit(p, 3, "x", 1), -EINVAL);
	stop_push(f, p);
}

static void test_500_then_200(void **state)
{
	struct fixture *f = *state;
	char url[128];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct req r[MAX_REQ];
	struct push_stats st;
	struct push *p;

	/* A dropped connection, then a 500, then it works. */
	srv_start(f, 0, 0, "--token", TOKEN, "--statuses", "close,500,200", NULL);
	url_of(&f->srv[0], "http", url, sizeof(url));
	p = start_push(f, &o);
	submit_next(p);
	assert_int_equal(push_flush(p, 5000), 0);
	check_accepted(&f->srv[0], 1, 1);
	assert_int_equal(read_requests(&f->srv[0], r, MAX_REQ), 3);
	assert_string_equal(r[0].status, "close");
	assert_string_equal(r[1].status, "500");
	assert_string_equal(r[2].status, "200");
	for (int i = 0; i < 3; i++)
		assert_int_equal(r[i].seq, 1);
	push_stats(p, &st);
	assert_int_equal(st.sent, 3);
	assert_int_equal(st.failures, 2);
	assert_int_equal(st.retried, 2);
	assert_int_equal(st.acked, 1);
	assert_int_equal(st.rejected, 0);
	assert_int_equal(st.spool_count, 0);
	assert_non_null(strstr(st.collectors[0].last_error, "HTTP 500"));
	/* Logged per change, not per retry: failing, failing differently, recovered. */
	assert_int_equal(log_count(&f->log, PUSH_LOG_WARN, "failing"), 2);
	assert_int_equal(log_count(&f->log, PUSH_LOG_INFO, "recovered"), 1);
	stop_push(f, p);
}

/* Batch 1 is answered @status with Retry-After @ra, then 200: the gap
 * between the two requests, in seconds, as the server saw it. */
static double retry_after_gap(struct fixture *f, const char *statuses, const char *ra)
{
	char url[128];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct req r[MAX_REQ];
	struct push_stats st;
	struct push *p;

	o.retry_initial_ms = 20; /* the backoff alone would retry at once */
	srv_start(f, 0, 0, "--token", TOKEN, "--statuses", statuses, "--retry-after", ra, NULL);
	url_of(&f->srv[0], "http", url, sizeof(url));
	p = start_push(f, &o);
	submit_next(p);
	assert_int_equal(push_flush(p, 8000), 0);
	check_accepted(&f->srv[0], 1, 1);
	assert_int_equal(read_requests(&f->srv[0], r, MAX_REQ), 2);
	push_stats(p, &st);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.acked, 1);
	stop_push(f, p);
	fprintf(stderr, "  retry-after %s: %.3f s between requests\n", ra, r[1].t - r[0].t);
	return r[1].t - r[0].t;
}

static void test_429_retry_after_seconds(void **state)
{
	double gap = retry_after_gap(*state, "429,200", "1");

	assert_true(gap >= 0.95);
	assert_true(gap < 1.8);
}

static void test_503_retry_after_date(void **state)
{
	/* An HTTP date 2 s ahead, at 1 s resolution: between 1 and 2 s. */
	double gap = retry_after_gap(*state, "503,200", "date+2");

	assert_true(gap >= 0.9);
	assert_true(gap < 2.8);
}

static void test_400_not_retried(void **state)
{
	struct fixture *f = *state;
	char url[128];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct req r[MAX_REQ];
	uint64_t acc[MAX_REQ];
	struct push_stats st;
	struct push *p;

	srv_start(f, 0, 0, "--token", TOKEN, "--statuses", "400,400,200", NULL);
	url_of(&f->srv[0], "http", url, sizeof(url));
	p = start_push(f, &o);
	submit_next(p);
	submit_next(p);
	submit_next(p);
	assert_int_equal(push_flush(p, 5000), 0);
	sleep_ms(300); /* would a retry come? */
	assert_int_equal(read_requests(&f->srv[0], r, MAX_REQ), 3);
	assert_int_equal(r[0].seq, 1);
	assert_string_equal(r[0].status, "400");
	assert_int_equal(r[1].seq, 2);
	assert_string_equal(r[1].status, "400");
	assert_int_equal(r[2].seq, 3);
	assert_string_equal(r[2].status, "200");
	assert_int_equal(read_accepted(&f->srv[0], acc, MAX_REQ), 1);
	push_stats(p, &st);
	assert_int_equal(st.sent, 3);
	assert_int_equal(st.rejected, 2);
	assert_int_equal(st.acked, 1);
	assert_int_equal(st.retried + st.failures, 0);
	assert_int_equal(st.spool_count, 0); /* rejected: done with, not kept */
	assert_non_null(strstr(st.collectors[0].last_error, "HTTP 400"));
	/* Two identical rejections, one line; then one when it accepts again. */
	assert_int_equal(log_count(&f->log, PUSH_LOG_ERROR, "rejected batch 1"), 1);
	assert_int_equal(log_count(&f->log, PUSH_LOG_ERROR, NULL), 1);
	assert_int_equal(log_count(&f->log, PUSH_LOG_INFO, "accepts batches again"), 1);
	stop_push(f, p);

	/* A wrong token is a 401: rejected as well. */
	srv_stop(&f->srv[0]);
	srv_start(f, 0, f->srv[0].port, "--token", "other", NULL);
	p = start_push(f, &o);
	submit_next(p);
	assert_int_equal(push_flush(p, 5000), 0);
	push_stats(p, &st);
	assert_int_equal(st.rejected, 1);
	assert_non_null(strstr(st.collectors[0].last_error, "HTTP 401"));
	stop_push(f, p);
}

/* The URL of collector 0 on a port that was free a moment ago, with nothing
 * listening on it now: the port, for srv_start() when the outage ends. */
static int dead_collector(struct fixture *f, char *url, size_t size)
{
	int port;

	srv_start(f, 0, 0, "--token", TOKEN, NULL);
	port = f->srv[0].port;
	url_of(&f->srv[0], "http", url, size);
	srv_stop(&f->srv[0]);
	return port;
}

static void test_outage_spools_then_replays(void **state)
{
	struct fixture *f = *state;
	char url[128];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct push_stats st;
	struct push *p;
	int port;
	long ms;

	port = dead_collector(f, url, sizeof(url));

	p = start_push(f, &o);
	for (int i = 0; i < 6; i++) {
		submit_next(p);
		sleep_ms(60);
	}
	sleep_ms(300);
	push_stats(p, &st);
	fprintf(stderr, "  outage: sent %" PRIu64 " failures %" PRIu64 " spooled %" PRIu64 " (%" PRIu64 " bytes)\n",
		st.sent, st.failures, st.spool_count, st.spool_bytes);
	assert_int_equal(st.acked, 0);
	assert_int_equal(st.spool_count, 6);
	assert_int_equal(count_spool_files(f->spool), 6);
	assert_true(st.failures >= 3);
	assert_int_equal(st.failures, st.sent);
	assert_true(st.collectors[0].failing);
	assert_int_equal(st.collectors[0].pending, 6);
	assert_non_null(strstr(st.collectors[0].last_error, "connect"));
	/* Many failed retries, one log line. */
	assert_int_equal(log_count(&f->log, PUSH_LOG_WARN, NULL), 1);

	srv_start(f, 0, port, "--token", TOKEN, NULL);
	ms = wait_accepted(&f->srv[0], 6, 5000); /* the backoff is capped at 300 ms */
	fprintf(stderr, "  outage: all 6 arrived %ld ms after the collector came back\n", ms);
	assert_true(ms >= 0);
	assert_int_equal(push_flush(p, 5000), 0);
	check_accepted(&f->srv[0], 1, 6);
	push_stats(p, &st);
	assert_int_equal(st.acked, 6);
	assert_int_equal(st.spool_count, 0);
	assert_false(st.collectors[0].failing);
	assert_int_equal(log_count(&f->log, PUSH_LOG_INFO, "recovered"), 1);
	stop_push(f, p);
}

static void test_outage_spool_cap(void **state)
{
	struct fixture *f = *state;
	char url[128];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct push_stats st;
	struct push *p;
	size_t len;
	void *b = make_batch(1, &len);
	int port;

	free(b);
	/* Room for 3 batches (they are all about the same size). */
	o.spool_max_bytes = len * 3 + len / 2;
	port = dead_collector(f, url, sizeof(url));

	p = start_push(f, &o);
	for (int i = 0; i < 10; i++)
		submit_next(p);
	push_stats(p, &st);
	assert_int_equal(st.spool_count, 3);
	assert_int_equal(st.spool_dropped, 7);
	assert_true(st.spool_bytes <= o.spool_max_bytes);
	assert_int_equal(count_spool_files(f->spool), 3);
	assert_int_equal(log_count(&f->log, PUSH_LOG_WARN, "full"), 1);

	srv_start(f, 0, port, "--token", TOKEN, NULL);
	assert_int_equal(push_flush(p, 5000), 0);
	check_accepted(&f->srv[0], 8, 10); /* the newest survive, in order */
	stop_push(f, p);
}

static void test_two_collectors_one_hangs(void **state)
{
	struct fixture *f = *state;
	char url_a[128], url_b[128];
	const char *urls[] = { url_a, url_b };
	struct push_opts o = base_opts(f, urls, 2);
	uint64_t got[MAX_REQ], t0;
	struct push_stats st;
	struct push *p;
	long ms;
	int port_b;

	srv_start(f, 0, 0, "--token", TOKEN, NULL);
	/* B reads each request and never answers. */
	srv_start(f, 1, 0, "--token", TOKEN, "--statuses", "hang,hang,hang,hang", NULL);
	port_b = f->srv[1].port;
	url_of(&f->srv[0], "http", url_a, sizeof(url_a));
	url_of(&f->srv[1], "http", url_b, sizeof(url_b));
	p = start_push(f, &o);
	t0 = now_ms();
	for (int i = 0; i < 5; i++)
		submit_next(p);
	ms = wait_accepted(&f->srv[0], 5, 3000);
	fprintf(stderr, "  A had all 5 batches %ld ms after the first submit (B hangs)\n", ms);
	assert_true(ms >= 0);
	assert_true(now_ms() - t0 < 1500);
	check_accepted(&f->srv[0], 1, 5);
	/* The server logs a batch just before its answer reaches us. */
	assert_true(wait_stats(p, &st, first_done, 2000));
	assert_int_equal(st.collectors[1].pending, 5);
	assert_int_equal(st.spool_count, 5); /* kept for B */
	assert_int_equal(push_flush(p, 200), -ETIMEDOUT);

	/* push_free does not wait for B's request to time out. */
	t0 = now_ms();
	stop_push(f, p);
	fprintf(stderr, "  push_free with a request in flight: %" PRIu64 " ms\n", now_ms() - t0);
	assert_true(now_ms() - t0 < 1000);

	/* B comes back working; a restarted agent sends B what it missed,
	 * and A nothing twice. */
	srv_stop(&f->srv[1]);
	srv_start(f, 1, port_b, "--token", TOKEN, NULL);
	p = start_push(f, &o);
	assert_int_equal(push_flush(p, 5000), 0);
	check_accepted(&f->srv[1], 1, 5);
	assert_int_equal(read_accepted(&f->srv[0], got, MAX_REQ), 5);
	push_stats(p, &st);
	assert_int_equal(st.spool_count, 0);
	assert_int_equal(st.collectors[0].acked, 0);
	assert_int_equal(st.collectors[1].acked, 5);
	stop_push(f, p);
}

static void test_restart_resends(void **state)
{
	struct fixture *f = *state;
	char url[128];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct push_stats st;
	struct push *p;
	int port;

	srv_start(f, 0, 0, "--token", TOKEN, NULL);
	port = f->srv[0].port;
	url_of(&f->srv[0], "http", url, sizeof(url));
	p = start_push(f, &o);
	assert_int_equal(submit_next(p), 1);
	assert_int_equal(submit_next(p), 2);
	assert_int_equal(push_flush(p, 5000), 0);
	srv_stop(&f->srv[0]);
	assert_int_equal(submit_next(p), 3);
	assert_int_equal(submit_next(p), 4);
	stop_push(f, p); /* the agent stops with 3 and 4 unsent */
	assert_int_equal(count_spool_files(f->spool), 2);

	p = start_push(f, &o);
	assert_int_equal(log_count(&f->log, PUSH_LOG_INFO, "2 spooled batches"), 1);
	push_stats(p, &st);
	assert_int_equal(st.spool_count, 2);
	assert_int_equal(st.collectors[0].cursor, 2);
	assert_int_equal(submit_next(p), 5); /* numbers continue */
	srv_start(f, 0, port, "--token", TOKEN, NULL);
	assert_int_equal(push_flush(p, 5000), 0);
	check_accepted(&f->srv[0], 1, 5); /* 1, 2 once; 3, 4, 5 after */
	stop_push(f, p);

	/* A third run: nothing left, and the numbers still continue. */
	p = start_push(f, &o);
	push_stats(p, &st);
	assert_int_equal(st.spool_count, 0);
	assert_int_equal(submit_next(p), 6);
	assert_int_equal(push_flush(p, 5000), 0);
	check_accepted(&f->srv[0], 1, 6);
	stop_push(f, p);
}

static int run(const char *cmd)
{
	int rc = system(cmd);

	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_tls(void **state)
{
	struct fixture *f = *state;
	char url[128], cmd[2048], srv_crt[256], srv_key[256], cli_crt[256], cli_key[256], spool2[256];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct push_stats st;
	struct push *p;

	if (run("command -v openssl >/dev/null") != 0) {
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
	assert_int_equal(run(cmd), 0);
	srv_start(f, 0, 0, "--token", TOKEN, "--tls-cert", srv_crt, "--tls-key", srv_key, "--client-ca", cli_crt,
		  NULL);
	url_of(&f->srv[0], "https", url, sizeof(url));

	/* Our CA and our client certificate: accepted. */
	o.ca_file = srv_crt;
	o.cert_file = cli_crt;
	o.key_file = cli_key;
	p = start_push(f, &o);
	submit_next(p);
	assert_int_equal(push_flush(p, 5000), 0);
	check_accepted(&f->srv[0], 1, 1);
	stop_push(f, p);

	/* The system CAs do not know this server: verification fails, and
	 * that is a retried failure (a fixed CA file brings it back). */
	snprintf(spool2, sizeof(spool2), "%s/spool2", f->root);
	o.spool_dir = spool2;
	o.ca_file = NULL;
	p = start_push(f, &o);
	submit_next(p);
	assert_true(wait_stats(p, &st, has_failed, 5000));
	assert_int_equal(push_flush(p, 300), -ETIMEDOUT);
	push_stats(p, &st);
	assert_int_equal(st.acked, 0);
	assert_true(st.collectors[0].failing);
	fprintf(stderr, "  unverified server: %s\n", st.collectors[0].last_error);
	assert_non_null(strstr(st.collectors[0].last_error, "certificate"));
	stop_push(f, p);

	/* Verification off (not the default): accepted. */
	o.tls_no_verify = true;
	p = start_push(f, &o);
	assert_int_equal(push_flush(p, 5000), 0);
	push_stats(p, &st);
	assert_int_equal(st.acked, 1);
	stop_push(f, p);
	{
		uint64_t got[MAX_REQ];

		/* Another spool, so seq 1 again. */
		assert_int_equal(read_accepted(&f->srv[0], got, MAX_REQ), 2);
	}
}

/* Established connections from this process's side to 127.0.0.1:@port
 * (/proc/net/tcp: rem_address is the server, state 01). */
static int established_to(int port)
{
	FILE *fp = fopen("/proc/net/tcp", "r");
	char line[512];
	int n = 0;

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		unsigned lport, rport, st;

		if (sscanf(line, " %*d: %*x:%x %*x:%x %x", &lport, &rport, &st) == 3 &&
		    (int)rport == port && st == 1)
			n++;
	}
	fclose(fp);
	return n;
}

/* One kept-alive connection for every push, closed once idle for
 * idle_close_ms, opened again by the next push. */
static void test_idle_close(void **state)
{
	struct fixture *f = *state;
	char url[128];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct push_stats st;
	struct push *p;
	uint64_t t0;
	int n;

	o.idle_close_ms = 500;
	srv_start(f, 0, 0, "--token", TOKEN, NULL);
	url_of(&f->srv[0], "http", url, sizeof(url));
	p = start_push(f, &o);
	for (int i = 0; i < 4; i++) {
		submit_next(p);
		assert_int_equal(push_flush(p, 5000), 0);
		sleep_ms(50);
	}
	check_accepted(&f->srv[0], 1, 4);
	/* Four pushes, one connection. */
	assert_int_equal(established_to(f->srv[0].port), 1);
	t0 = now_ms();
	while ((n = established_to(f->srv[0].port)) > 0 && now_ms() - t0 < 3000)
		sleep_ms(20);
	fprintf(stderr, "  idle connection closed %" PRIu64 " ms after the last push\n",
		now_ms() - t0);
	assert_int_equal(n, 0);
	assert_true(now_ms() - t0 >= 300);
	submit_next(p);
	assert_int_equal(push_flush(p, 5000), 0);
	check_accepted(&f->srv[0], 1, 5);
	assert_int_equal(established_to(f->srv[0].port), 1);
	push_stats(p, &st);
	assert_int_equal(st.acked, 5);
	assert_int_equal(st.failures + st.duplicates + st.maybe_delivered, 0);
	stop_push(f, p);
}

/*
 * An ack lost (the collector stored the batch, its answer never came): the
 * timeout counts as maybe delivered, and the resend's "duplicate" answer is
 * counted as such. A collector that refuses the connection: failures that
 * cannot have delivered anything.
 */
static void test_ack_lost(void **state)
{
	struct fixture *f = *state;
	char url[128];
	const char *urls[] = { url };
	struct push_opts o = base_opts(f, urls, 1);
	struct push_stats st;
	struct push *p;
	int port;

	o.timeout_ms = 500;
	srv_start(f, 0, 0, "--token", TOKEN, "--statuses", "store-hang", NULL);
	url_of(&f->srv[0], "http", url, sizeof(url));
	port = f->srv[0].port;
	p = start_push(f, &o);
	submit_next(p);
	submit_next(p);
	assert_int_equal(push_flush(p, 5000), 0);
	push_stats(p, &st);
	assert_int_equal(st.acked, 2);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.maybe_delivered, 1);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(st.retried, 1);

	/* Nobody listening: nothing can have been delivered. */
	srv_stop(&f->srv[0]);
	submit_next(p);
	assert_int_equal(push_flush(p, 400), -ETIMEDOUT);
	push_stats(p, &st);
	assert_true(st.failures >= 2);
	assert_int_equal(st.maybe_delivered, 1);
	srv_start(f, 0, port, "--token", TOKEN, NULL);
	assert_int_equal(push_flush(p, 5000), 0);
	push_stats(p, &st);
	assert_int_equal(st.acked, 3);
	assert_int_equal(st.duplicates, 1);
	stop_push(f, p);
}

static void test_bad_options(void **state)
{
	struct fixture *f = *state;
	const char *good[] = { "http://127.0.0.1:1/x" };
	const char *ftp[] = { "ftp://127.0.0.1/x" };
	const char *dup[] = { "http://a/x", "http://a/x" };
	struct push_opts o = base_opts(f, good, 1);
	struct push *p, *q;

	o.n_urls = 0;
	errno = 0;
	assert_null(push_new(&o));
	assert_int_equal(errno, EINVAL);
	o = base_opts(f, ftp, 1);
	assert_null(push_new(&o));
	assert_int_equal(errno, EINVAL);
	o = base_opts(f, dup, 2);
	assert_null(push_new(&o));
	assert_int_equal(errno, EINVAL);
	o = base_opts(f, good, 1);
	o.token = "abc\r\nX-Evil: 1";
	assert_null(push_new(&o));
	assert_int_equal(errno, EINVAL);
	o = base_opts(f, good, 1);
	o.spool_dir = NULL;
	assert_null(push_new(&o));
	assert_int_equal(errno, EINVAL);
	assert_null(push_new(NULL));
	/* One agent per spool directory. */
	o = base_opts(f, good, 1);
	p = start_push(f, &o);
	errno = 0;
	q = push_new(&o);
	assert_null(q);
	assert_int_equal(errno, EBUSY);
	stop_push(f, p);
	push_free(NULL);

	/* Credentials in a URL stay out of logs and stats. */
	{
		const char *cred[] = { "http://user:pw@127.0.0.1:1/x" };
		struct push_stats st;

		o = base_opts(f, cred, 1);
		p = start_push(f, &o);
		submit_next(p);
		assert_true(wait_stats(p, &st, has_failed, 5000));
		assert_string_equal(st.collectors[0].url, "http://***@127.0.0.1:1/x");
		stop_push(f, p);
		assert_int_equal(log_count(&f->log, PUSH_LOG_WARN, "http://***@127.0.0.1:1/x"), 1);
		assert_int_equal(log_count(&f->log, PUSH_LOG_WARN, "pw"), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_in_order_with_headers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_500_then_200, setup, teardown),
		cmocka_unit_test_setup_teardown(test_429_retry_after_seconds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_503_retry_after_date, setup, teardown),
		cmocka_unit_test_setup_teardown(test_400_not_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outage_spools_then_replays, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outage_spool_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_collectors_one_hangs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_resends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
	};

	if (!find_script()) {
		fprintf(stderr, "tests/lib/fake_collector.py not found (set CGPERF_ROOT)\n");
		return 1;
	}
	if (system("python3 -c 'import gzip, http.server' 2>/dev/null") != 0) {
		fprintf(stderr, "python3 is needed for the fake collector\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
