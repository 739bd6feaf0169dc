// SPDX-License-Identifier: MIT
/* The fake collectors and helpers of push_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/ship/push.h"
#include "tests/unit/push_fixture.h"
#include "tests/unit/testlib.h"

static char script[PATH_MAX];


uint64_t pf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void pf_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* tests/lib/fake_collector.py, found as every file of the tree is. */
static bool find_script(void)
{
	char *path = tl_tree_path("tests/lib/fake_collector.py");
	int n = path ? snprintf(script, sizeof(script), "%s", path) : -1;

	free(path);
	return n > 0 && (size_t)n < sizeof(script);
}

void pf_log_cb(void *arg, enum push_log_level level, const char *msg)
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
int pf_log_count(struct logcap *l, enum push_log_level level, const char *substr)
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

int pf_setup(void **state)
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
	for (int i = 0; i < MAX_SRV; i++)
		f->urls[i] = f->srv[i].url;
	f->o = pf_base_opts(f, f->urls, 1);
	*state = f;
	return 0;
}

void pf_srv_stop(struct srv *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

int pf_teardown(void **state)
{
	struct fixture *f = *state;

	for (int i = 0; i < 4; i++)
		push_free(f->live[i]);
	for (int i = 0; i < MAX_SRV; i++)
		pf_srv_stop(&f->srv[i]);
	if (!getenv("KEEP"))
		tl_rmtree(strdup(f->root));
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
void pf_srv_start(struct fixture *f, int i, int port, ...)
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
	deadline = pf_now_ms() + 10000;
	while (!(fp = fopen(portfile, "r"))) {
		int status;

		assert_int_equal(waitpid(s->pid, &status, WNOHANG), 0); /* it died */
		assert_true(pf_now_ms() < deadline);
		pf_sleep_ms(10);
	}
	assert_int_equal(fscanf(fp, "%d", &s->port), 1);
	fclose(fp);
	assert_true(port == 0 || s->port == port);
}

void pf_url_of(const struct srv *s, const char *scheme, char *buf, size_t size)
{
	snprintf(buf, size, "%s://127.0.0.1:%d/api/v1/push", scheme, s->port);
}


int pf_read_requests(const struct srv *s, struct req *out, int max)
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

int pf_read_accepted(const struct srv *s, uint64_t *out, int max)
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
long pf_wait_accepted(const struct srv *s, int want, unsigned timeout_ms)
{
	uint64_t t0 = pf_now_ms();
	uint64_t got[MAX_REQ];

	while (pf_read_accepted(s, got, MAX_REQ) < want) {
		if (pf_now_ms() - t0 > timeout_ms)
			return -1;
		pf_sleep_ms(5);
	}
	return (long)(pf_now_ms() - t0);
}

/* The uncompressed payload of batch @seq: some text, ~2 KiB. */
size_t pf_payload(uint64_t seq, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "cgperf test batch %" PRIu64 "\n", seq);

	while (n + 40 < size && n < 2000)
		n += (size_t)snprintf(buf + n, size - n, "stack;frame_%" PRIu64 ";leaf %zu\n", seq, n);
	return n;
}

/* Batch @seq gzip'd (what the agent will send): malloc'd, *@len bytes. */
void *pf_make_batch(uint64_t seq, size_t *len)
{
	char raw[4096];

	return tl_gzip(raw, pf_payload(seq, raw, sizeof(raw)), len);
}

uint64_t pf_submit_next(struct push *p)
{
	uint64_t seq = 0;
	size_t len;
	void *b;

	assert_int_equal(push_next_seq(p, &seq), 0);
	b = pf_make_batch(seq, &len);
	assert_int_equal(push_submit(p, seq, b, len), 0);
	free(b);
	return seq;
}

/* @s accepted exactly batches @first..@last, in order, once each, with the
 * right bodies; every request it saw was well formed. */
void pf_check_accepted(const struct srv *s, uint64_t first, uint64_t last)
{
	uint64_t got[MAX_REQ];
	struct req r[MAX_REQ];
	int n = pf_read_accepted(s, got, MAX_REQ), nr = pf_read_requests(s, r, MAX_REQ);

	for (int i = 0; i < n; i++)
		fprintf(stderr, "  %s accepted %" PRIu64 "\n", s->dir, got[i]);
	assert_int_equal(n, last - first + 1);
	for (int i = 0; i < n; i++) {
		char want[4096], path[PATH_MAX + 32], *body;
		size_t wlen = pf_payload(first + (uint64_t)i, want, sizeof(want));
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

struct push_opts pf_base_opts(struct fixture *f, const char *const *urls, size_t n)
{
	return (struct push_opts){
		.urls = urls,
		.n_urls = n,
		.token = TOKEN "\n", /* as read from a token file */
		.timeout_ms = 3000,
		.retry_initial_ms = 50,
		.retry_max_ms = 300,
		.spool_dir = f->spool,
		.log = pf_log_cb,
		.log_arg = &f->log,
	};
}

struct push *pf_start_push(struct fixture *f, const struct push_opts *o)
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
bool pf_wait_stats(struct push *p, struct push_stats *st, bool (*ok)(const struct push_stats *),
		       unsigned timeout_ms)
{
	uint64_t t0 = pf_now_ms();

	for (;;) {
		push_stats(p, st);
		if (ok(st))
			return true;
		if (pf_now_ms() - t0 > timeout_ms)
			return false;
		pf_sleep_ms(5);
	}
}

bool pf_first_done(const struct push_stats *st)
{
	return st->collectors[0].pending == 0;
}

bool pf_has_failed(const struct push_stats *st)
{
	return st->failures >= 1;
}

void pf_stop_push(struct fixture *f, struct push *p)
{
	for (int i = 0; i < 4; i++) {
		if (f->live[i] == p)
			f->live[i] = NULL;
	}
	push_free(p);
}


/* The URL of collector 0 on a port that was free a moment ago, with nothing
 * listening on it now: the port, for pf_srv_start() when the outage ends. */
int pf_dead_collector(struct fixture *f)
{
	int port;

	pf_serve(f, 0, NULL);
	port = f->srv[0].port;
	pf_srv_stop(&f->srv[0]);
	return port;
}

void pf_serve(struct fixture *f, int i, const char *statuses)
{
	struct srv *s = &f->srv[i];

	if (statuses)
		pf_srv_start(f, i, 0, "--token", TOKEN, "--statuses", statuses, NULL);
	else
		pf_srv_start(f, i, 0, "--token", TOKEN, NULL);
	pf_url_of(s, "http", s->url, sizeof(s->url));
}

struct push *pf_open(struct fixture *f, const char *statuses)
{
	pf_serve(f, 0, statuses);
	return pf_start_push(f, &f->o);
}

/* The fields pf_expect_stats() knows, in struct push_stats and in struct
 * push_collector_stats. */
#define TOP(name) { #name, offsetof(struct push_stats, name), sizeof(((struct push_stats *)0)->name) }
#define COL(name)                                                                          \
	{ #name, offsetof(struct push_collector_stats, name),                              \
	  sizeof(((struct push_collector_stats *)0)->name) }
static const struct stat_field {
	const char *name;
	size_t off, size;
} top_fields[] = { TOP(sent), TOP(acked), TOP(retried), TOP(rejected), TOP(failures),
		   TOP(maybe_delivered), TOP(duplicates), TOP(spool_bytes), TOP(spool_count),
		   TOP(spool_dropped), TOP(submit_errors), TOP(n_collectors) },
  col_fields[] = { COL(sent), COL(acked), COL(retried), COL(rejected), COL(failures),
		   COL(maybe_delivered), COL(duplicates), COL(cursor), COL(pending),
		   COL(failing) };

static uint64_t field_value(const void *base, const struct stat_field *v, size_t n,
			    const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(v[i].name) != len || memcmp(v[i].name, name, len))
			continue;
		if (v[i].size == sizeof(bool))
			return *(const bool *)((const char *)base + v[i].off);
		if (v[i].size == sizeof(uint64_t))
			return *(const uint64_t *)((const char *)base + v[i].off);
	}
	fail_msg("pf_expect_stats: no field \"%.*s\"", (int)len, name);
	return 0;
}

void pf_expect_stats(struct push *p, struct push_stats *st, const char *want)
{
	struct push_stats mine;
	const char *w = want;

	if (!st)
		st = &mine;
	push_stats(p, st);
	while (*w) {
		const char *name = w, *eq = strchr(w, '=');
		unsigned long long v;
		uint64_t got;
		char *end;

		assert_non_null(eq);
		v = strtoull(eq + 1, &end, 10);
		if (name[0] == 'c' && name[1] >= '0' && name[1] <= '9' && name[2] == '.')
			got = field_value(&st->collectors[name[1] - '0'], col_fields,
					  sizeof(col_fields) / sizeof(col_fields[0]), name + 3,
					  (size_t)(eq - name - 3));
		else
			got = field_value(st, top_fields, sizeof(top_fields) / sizeof(top_fields[0]),
					  name, (size_t)(eq - name));
		if (got != v)
			fail_msg("push stats: %.*s is %" PRIu64 ", want %llu (of \"%s\")",
				 (int)(eq - name), name, got, v, want);
		w = end;
		while (*w == ' ')
			w++;
	}
}

int pf_run(const char *cmd)
{
	int rc = system(cmd);

	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int pf_group_setup(void **state)
{
	if (!find_script()) {
		fprintf(stderr, "tests/lib/fake_collector.py not found (set CGPERF_ROOT)\n");
		return -1;
	}
	if (system("python3 -c 'import gzip, http.server' 2>/dev/null") != 0) {
		fprintf(stderr, "python3 is needed for the fake collector\n");
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

void pf_flush_check(struct push *p, unsigned timeout_ms, const struct srv *s, uint64_t first,
		    uint64_t last)
{
	assert_int_equal(push_flush(p, timeout_ms), 0);
	pf_check_accepted(s, first, last);
}
