// SPDX-License-Identifier: MIT
/*
 * gen_batch: push batches made with wire/wire.h's builder, for tests and
 * benchmarks of cgperf-exporter (test-only; not installed).
 *
 *   gen_batch [SHAPE] write FILE        one batch into FILE
 *   gen_batch seeds DIR                 a small seed corpus for fuzz_wire
 *   gen_batch [--seq N] hostile FILE    one batch whose cgroup paths, frames,
 *                                       host and agent id hold quotes,
 *                                       backslashes, a newline, tabs, UTF-8
 *   gen_batch [SHAPE] push URL          POST --batches batches to URL, print
 *                                       the rate
 *   gen_batch [SHAPE] stream URL        POST batches seq FIRST, FIRST+1, ...
 *                                       over --threads connections as fast
 *                                       as answers come, each built just
 *                                       before it goes; print a line per
 *                                       batch as it happens (below); a
 *                                       thread stops at its first failure
 *   gen_batch [SHAPE] resend URL        POST again the batches named on
 *                                       stdin ("AGENT SEQ" per line, more
 *                                       fields ignored), one at a time, and
 *                                       print how each was answered
 *
 * stream and resend give every counter of a batch one value, a function of
 * the batch's agent id and sequence number, so a test can add up what the
 * exporter must show: with enabled == running each perf_events_total series
 * of the host is the sum of the values of the batches stored. stream prints
 * (stdout, flushed line by line):
 *   sent AGENT SEQ VALUE        before the POST starts
 *   ack AGENT SEQ VALUE         as soon as its 200 arrived
 *   fail AGENT SEQ VALUE http=STATUS error=TEXT   and the thread stops
 * and exits 0 when every --batches batch was acknowledged, 3 when a thread
 * stopped on a failure. resend prints "AGENT SEQ VALUE ANSWER", ANSWER being
 * the 200's first word (stored, duplicate) or http=STATUS, and exits 0 when
 * every answer was a 200.
 *
 * SHAPE: --cgroups N --stacks N (per cgroup) --depth N --counters N (per
 * cgroup, at most 10) --host NAME --agent ID --seq FIRST --gzip --truncated N
 * (each profile's truncated stacks: N stack copy, 2N max stack, 3N bad
 * return address). For push and stream: --batches N --threads N --token
 * TOKEN (resend: --token).
 *
 * The batches look like an agent's: cgroups under /bench.slice, counters with
 * perf's event names, one cpu-clock profile per cgroup whose stacks share
 * their root-most frames (_start, __libc_start_main, main, then a tree of
 * C and C++ names) and end in distinct leaves. The same shape gives the same
 * stacks, so a second batch stores no new stack text, as with a real agent.
 * All batches are built and encoded before the first POST, so `push` times
 * the exporter, not the builder. Batches cover the 10 s before now (the
 * exporter's retention and series expiry go by time).
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "wire/wire.h"
#include "lib/clock.h"
#include "lib/hashmap.h"

#define POOL 512
#define NAME_MAX_LEN 128

struct shape {
	unsigned cgroups, stacks, depth, counters;
	const char *host, *agent;
	uint64_t seq;
	int gzip;
	uint64_t value; /* 0: counters get assorted values; else all this one */
	uint64_t truncated; /* each profile's stacks cut short: N, 2N, 3N by reason */
};

static const char *const events[] = { "task-clock",       "context-switches", "cpu-migrations",
				      "page-faults",      "cycles",           "instructions",
				      "branches",         "branch-misses",    "cache-references",
				      "cache-misses" };
#define N_EVENTS (sizeof(events) / sizeof(events[0]))

static char pool[POOL][NAME_MAX_LEN];

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* Function names as symbolizers print them: C, C++ and module+offset. */
static void pool_init(void)
{
	static const char *const verbs[] = { "read", "scan", "hash", "sort", "exec", "parse",
					     "alloc", "lock", "send", "copy" };
	static const char *const nouns[] = { "tuple", "page", "buffer", "index", "query",
					     "plan", "socket", "chunk", "node", "heap" };

	for (unsigned i = 0; i < POOL; i++) {
		const char *v = verbs[i % 10], *n = nouns[(i / 10) % 10];

		switch (i % 4) {
		case 0: snprintf(pool[i], NAME_MAX_LEN, "%s_%s_%u", v, n, i); break;
		case 1:
			snprintf(pool[i], NAME_MAX_LEN, "app::%s::%s%u(std::string const&, int)", n,
				 v, i);
			break;
		case 2: snprintf(pool[i], NAME_MAX_LEN, "%s%sInternal%u", n, v, i); break;
		default: snprintf(pool[i], NAME_MAX_LEN, "libapp.so+0x%x", 0x1000 + i * 0x40); break;
		}
	}
}

/* Stack @s of depth @d, root first, into @f (pointers into pool). */
static void stack_frames(unsigned s, unsigned d, const char **f)
{
	static const char *const roots[] = { "_start", "__libc_start_main", "main" };

	for (unsigned k = 0; k < d; k++) {
		if (k < 3 && k + 2 < d)
			f[k] = roots[k];
		else if (k + 2 < d) { /* a tree: each level down splits the stacks more */
			unsigned shift = 2 * (d - k) / 3 < 20 ? 2 * (d - k) / 3 : 20;

			f[k] = pool[mix(((uint64_t)(s >> shift) << 16) + k) % POOL];
		}
		else if (k + 2 == d) /* the last two make the stack distinct */
			f[k] = pool[s % POOL];
		else
			f[k] = pool[(s / POOL) % POOL];
	}
}

static struct wire_batch *build(const struct shape *sh, uint64_t seq)
{
	uint64_t end = clock_real_ns();
	struct wire_self self = { .samples = (uint64_t)sh->cgroups * sh->stacks };
	struct wire_batch *b = wire_batch_new(sh->host, "0123456789abcdef0123456789abcdef",
					      sh->agent, "bench", seq, end - 10000000000ULL, end);
	const char **frames = calloc(sh->depth ? sh->depth : 1, sizeof(*frames));
	char path[64];

	if (!b || !frames)
		goto fail;
	for (unsigned c = 0; c < sh->cgroups; c++) {
		int cg, p;

		snprintf(path, sizeof(path), "/bench.slice/bench-%05u.scope", c);
		cg = wire_add_cgroup(b, path, 1000 + c, NULL);
		if (cg < 0)
			goto fail;
		for (unsigned e = 0; e < sh->counters; e++)
			if (wire_add_counter(b, cg, events[e],
					     sh->value ? sh->value
						       : mix(seq * 7919 + c * 31 + e) % 1000000000,
					     10000000000ULL, 10000000000ULL, true) < 0)
				goto fail;
		if (!sh->stacks)
			continue;
		p = wire_add_profile(b, cg, "cpu-clock", 0, 99);
		if (p < 0)
			goto fail;
		if (sh->truncated) {
			const uint64_t cut[WIRE_TRUNC_REASONS] = { sh->truncated, 2 * sh->truncated,
								   3 * sh->truncated };

			if (wire_add_truncated(b, p, cut) < 0)
				goto fail;
		}
		for (unsigned s = 0; s < sh->stacks; s++) {
			stack_frames(s, sh->depth, frames);
			if (wire_add_stack(b, p, frames, sh->depth, 1 + mix(seq + s) % 50) < 0)
				goto fail;
		}
	}
	wire_set_self(b, &self);
	free(frames);
	return b;
fail:
	free(frames);
	wire_batch_free(b);
	return NULL;
}

static int encode(const struct wire_batch *b, int gzip, uint8_t **buf, size_t *len)
{
	return gzip ? wire_encode_gzip(b, buf, len) : wire_encode(b, buf, len);
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(buf, 1, len, f) != len) {
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

static int cmd_write(const struct shape *sh, const char *file)
{
	struct wire_batch *b = build(sh, sh->seq);
	uint8_t *buf;
	size_t len;
	int ret = 1;

	if (!b || encode(b, sh->gzip, &buf, &len) < 0) {
		fprintf(stderr, "gen_batch: cannot build the batch\n");
		wire_batch_free(b);
		return 1;
	}
	if (write_file(file, buf, len) == 0)
		ret = 0;
	else
		fprintf(stderr, "gen_batch: %s: %s\n", file, strerror(errno));
	free(buf);
	wire_batch_free(b);
	return ret;
}

/*
 * Hostile text everywhere a label or frame comes from: cgroup paths (a
 * newline too, which no real cgroup can have but a push body can), frame
 * names, host and agent id; a probe with histograms; a stack of
 * WIRE_STACK_MAX frames. Every cgroup has a task-clock counter of 1000 * (its
 * index + 1) ns and one cpu-clock stack of 3 samples.
 */
static const char *const hostile_paths[] = { "/q\"uote", "/back\\slash", "/new\nline",
					     "/utf8-\xc3\xa9t\xc3\xa9-\xe2\x9c\x93",
					     "/sp ace/{brace}=x,y" };

static int cmd_hostile(uint64_t seq, const char *file)
{
	uint64_t end = clock_real_ns();
	struct wire_batch *b = wire_batch_new("h\"o\\st", NULL, "agent-\xe2\x9c\x93", NULL, seq,
					      end - 1000000000ULL, end);
	const char **deep = calloc(WIRE_STACK_MAX, sizeof(*deep));
	struct hist h = { 0 };
	uint8_t *buf = NULL;
	size_t len;
	int ok = b && deep;

	for (int i = -3; ok && i < 2000; i += 37)
		hist_add(&h, (int64_t)i * i);
	for (size_t i = 0; ok && i < sizeof(hostile_paths) / sizeof(hostile_paths[0]); i++) {
		const char *fr[] = { "main", hostile_paths[i], "leaf\tname", "x;y z" };
		int cg = wire_add_cgroup(b, hostile_paths[i], 100 + i, NULL), p;

		ok = cg >= 0 &&
		     wire_add_counter(b, cg, "task-clock", 1000 * (i + 1), 10, 10, true) >= 0;
		p = ok ? wire_add_profile(b, cg, "cpu-clock", 0, 99) : -1;
		ok = ok && p >= 0 && wire_add_stack(b, p, fr, 4, 3) >= 0;
		ok = ok && wire_add_probe(b, cg, "sdt:prov:name", 17, &h, &h) >= 0;
	}
	for (size_t i = 0; ok && i < WIRE_STACK_MAX; i++)
		deep[i] = pool[i % POOL];
	if (ok) {
		int p = wire_add_profile(b, 0, "cycles", 100000, 0);

		ok = p >= 0 && wire_add_stack(b, p, deep, WIRE_STACK_MAX, 1) >= 0;
	}
	ok = ok && wire_encode(b, &buf, &len) >= 0 && write_file(file, buf, len) == 0;
	free(buf);
	free(deep);
	wire_batch_free(b);
	if (!ok)
		fprintf(stderr, "gen_batch: cannot write the hostile batch to %s\n", file);
	return ok ? 0 : 1;
}

/* Seeds: batches of each kind of item, hostile names included, all small
 * enough for the fuzzer's -max_len. */
static int cmd_seeds(const char *dir)
{
	const struct shape shapes[] = {
		{ 1, 1, 1, 1, "h", "a", 1, 0, 0, 0 },	{ 2, 5, 4, 2, "h", "a", 2, 0, 0, 3 },
		{ 3, 20, 20, 10, "h", "a", 3, 1, 0, 0 }, { 1, 0, 0, 10, "h", "a", 4, 0, 0, 0 },
		{ 4, 8, 64, 3, "h", "a", 5, 1, 0, 0 },
	};
	char path[4096];
	int n = 0;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "gen_batch: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++, n++) {
		snprintf(path, sizeof(path), "%s/gen-shape-%zu", dir, i);
		if (cmd_write(&shapes[i], path))
			return 1;
	}

	snprintf(path, sizeof(path), "%s/gen-hostile", dir);
	if (cmd_hostile(9, path))
		return 1;
	printf("%d seeds in %s\n", n + 1, dir);
	return 0;
}

struct pusher {
	const char *url;
	struct curl_slist *headers;
	uint8_t **bufs;
	size_t *lens;
	unsigned n;
	unsigned next; /* atomic */
	unsigned ok, failed; /* atomic */
	long last_bad_status;
};

static size_t discard(char *p, size_t sz, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return sz * n;
}

static void *push_thread(void *arg)
{
	struct pusher *ps = arg;
	CURL *c = curl_easy_init();

	if (!c) {
		__atomic_fetch_add(&ps->failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	curl_easy_setopt(c, CURLOPT_URL, ps->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, ps->headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	for (;;) {
		unsigned i = __atomic_fetch_add(&ps->next, 1, __ATOMIC_RELAXED);
		long status = 0;

		if (i >= ps->n)
			break;
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, ps->bufs[i]);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)ps->lens[i]);
		if (curl_easy_perform(c) == CURLE_OK &&
		    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status == 200) {
			__atomic_fetch_add(&ps->ok, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_fetch_add(&ps->failed, 1, __ATOMIC_RELAXED);
			ps->last_bad_status = status;
		}
	}
	curl_easy_cleanup(c);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmd_push(const struct shape *sh, const char *url, unsigned batches, unsigned threads,
		    const char *token)
{
	struct pusher ps = { .url = url, .n = batches };
	pthread_t *tids = calloc(threads, sizeof(*tids));
	char auth[512];
	size_t bytes = 0;
	unsigned started = 0;
	double t0, dt;
	int ret = 1;

	ps.bufs = calloc(batches, sizeof(*ps.bufs));
	ps.lens = calloc(batches, sizeof(*ps.lens));
	if (!tids || !ps.bufs || !ps.lens)
		goto out;
	for (unsigned i = 0; i < batches; i++) {
		struct wire_batch *b = build(sh, sh->seq + i);
		int err = b ? encode(b, sh->gzip, &ps.bufs[i], &ps.lens[i]) : -ENOMEM;

		wire_batch_free(b);
		if (err < 0) {
			fprintf(stderr, "gen_batch: cannot build batch %u\n", i);
			goto out;
		}
		bytes += ps.lens[i];
	}
	ps.headers = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
	ps.headers = curl_slist_append(ps.headers, "Expect:"); /* no 100-continue round trip */
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		ps.headers = curl_slist_append(ps.headers, auth);
	}
	t0 = now_s();
	for (; started < threads; started++)
		if (pthread_create(&tids[started], NULL, push_thread, &ps))
			break;
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	dt = now_s() - t0;
	if (!started)
		goto out;
	printf("batches=%u ok=%u failed=%u seconds=%.3f bytes_per_batch=%zu batches_per_s=%.1f "
	       "stack_rows_per_s=%.0f counters_per_s=%.0f\n",
	       batches, ps.ok, ps.failed, dt, bytes / batches, ps.ok / dt,
	       (double)ps.ok * sh->cgroups * sh->stacks / dt,
	       (double)ps.ok * sh->cgroups * sh->counters / dt);
	if (ps.failed)
		fprintf(stderr, "gen_batch: %u pushes failed (last HTTP status %ld)\n", ps.failed,
			ps.last_bad_status);
	ret = ps.failed ? 1 : 0;
out:
	for (unsigned i = 0; ps.bufs && i < batches; i++)
		free(ps.bufs[i]);
	free(ps.bufs);
	free(ps.lens);
	free(tids);
	curl_slist_free_all(ps.headers);
	return ret;
}

/* ---- stream and resend ---- */

static int num(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || end == s || *end || *out > max ? -1 : 0;
}

/* The value of every counter of batch (@agent, @seq): 1..1000000. */
static uint64_t stream_value(const char *agent, uint64_t seq)
{
	return 1 + mix(hash_fnv1a_str(HASH_FNV_OFFSET, agent) ^ seq) % 1000000;
}

/* The first word of an answer body. */
struct answer {
	char text[32];
	size_t len;
};

static size_t keep_answer(char *p, size_t sz, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t room = sizeof(a->text) - 1 - a->len, take = sz * n < room ? sz * n : room;

	memcpy(a->text + a->len, p, take);
	a->len += take;
	a->text[a->len] = '\0';
	return sz * n;
}

static CURL *post_handle(const char *url, struct curl_slist *headers, struct answer *a)
{
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_answer);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	return c;
}

static struct curl_slist *post_headers(const char *token)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
	char auth[512];

	h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	return h;
}

/*
 * Build batch (@agent, @seq) of shape @sh with its stream value and POST it
 * on @c. The HTTP status (0: no answer), the answer's text in @a, curl's
 * result in @cc. -1 when the batch cannot be built.
 */
static long post_one(CURL *c, const struct shape *sh, const char *agent, uint64_t seq,
		     struct answer *a, CURLcode *cc)
{
	struct shape one = *sh;
	struct wire_batch *b;
	uint8_t *buf = NULL;
	size_t len;
	long status = 0;

	one.agent = agent;
	one.value = stream_value(agent, seq);
	b = build(&one, seq);
	if (!b || encode(b, one.gzip, &buf, &len) < 0) {
		wire_batch_free(b);
		return -1;
	}
	wire_batch_free(b);
	a->len = 0;
	a->text[0] = '\0';
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, buf);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	*cc = curl_easy_perform(c);
	if (*cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	free(buf);
	return status;
}

struct streamer {
	const struct shape *sh;
	const char *url;
	struct curl_slist *headers;
	unsigned n;
	unsigned next;	     /* atomic */
	unsigned failed;     /* atomic: threads stopped on a failure */
	pthread_mutex_t out; /* whole lines on stdout */
};

__attribute__((format(printf, 2, 3))) static void say(struct streamer *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pthread_mutex_lock(&st->out);
	vprintf(fmt, ap);
	fflush(stdout);
	pthread_mutex_unlock(&st->out);
	va_end(ap);
}

static void *stream_thread(void *arg)
{
	struct streamer *st = arg;
	const char *agent = st->sh->agent;
	struct answer a;
	CURL *c = post_handle(st->url, st->headers, &a);

	if (!c) {
		__atomic_fetch_add(&st->failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	for (;;) {
		unsigned i = __atomic_fetch_add(&st->next, 1, __ATOMIC_RELAXED);
		uint64_t seq = st->sh->seq + i, v = stream_value(agent, seq);
		CURLcode cc = CURLE_OK;
		long status;

		if (i >= st->n)
			break;
		say(st, "sent %s %" PRIu64 " %" PRIu64 "\n", agent, seq, v);
		status = post_one(c, st->sh, agent, seq, &a, &cc);
		if (status == 200) {
			say(st, "ack %s %" PRIu64 " %" PRIu64 "\n", agent, seq, v);
			continue;
		}
		say(st, "fail %s %" PRIu64 " %" PRIu64 " http=%ld error=%s\n", agent, seq, v, status,
		    status < 0 ? "cannot-build" : cc != CURLE_OK ? curl_easy_strerror(cc) : a.text);
		__atomic_fetch_add(&st->failed, 1, __ATOMIC_RELAXED);
		break;
	}
	curl_easy_cleanup(c);
	return NULL;
}

static int cmd_stream(const struct shape *sh, const char *url, unsigned batches, unsigned threads,
		      const char *token)
{
	struct streamer st = { .sh = sh, .url = url, .n = batches };
	pthread_t *tids = calloc(threads, sizeof(*tids));
	unsigned started = 0;

	if (!tids)
		return 1;
	pthread_mutex_init(&st.out, NULL);
	st.headers = post_headers(token);
	for (; started < threads; started++)
		if (pthread_create(&tids[started], NULL, stream_thread, &st))
			break;
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	curl_slist_free_all(st.headers);
	pthread_mutex_destroy(&st.out);
	free(tids);
	if (!started)
		return 1;
	return st.failed ? 3 : 0;
}

static int cmd_resend(const struct shape *sh, const char *url, const char *token)
{
	struct curl_slist *headers = post_headers(token);
	struct answer a;
	CURL *c = post_handle(url, headers, &a);
	char *line = NULL;
	size_t cap = 0;
	int ret = c ? 0 : 1;

	while (c && getline(&line, &cap, stdin) > 0) {
		char *save = NULL, *agent = strtok_r(line, " \t\n", &save);
		char *seq_text = agent ? strtok_r(NULL, " \t\n", &save) : NULL;
		unsigned long v;
		CURLcode cc = CURLE_OK;
		long status;

		if (!agent)
			continue;
		if (!seq_text || num(seq_text, ~0ul, &v)) {
			fprintf(stderr, "gen_batch: resend: want AGENT SEQ, got '%s'\n", agent);
			ret = 1;
			break;
		}
		status = post_one(c, sh, agent, v, &a, &cc);
		a.text[strcspn(a.text, " \r\n")] = '\0';
		if (status == 200) {
			printf("%s %lu %" PRIu64 " %s\n", agent, v, stream_value(agent, v), a.text);
		} else {
			printf("%s %lu %" PRIu64 " http=%ld\n", agent, v, stream_value(agent, v), status);
			ret = 1;
		}
		fflush(stdout);
	}
	free(line);
	curl_easy_cleanup(c);
	curl_slist_free_all(headers);
	return ret;
}

static void usage(FILE *f)
{
	fputs("usage: gen_batch [--cgroups N] [--stacks N] [--depth N] [--counters N] [--host H]\n"
	      "                 [--agent ID] [--seq N] [--gzip] [--truncated N] write FILE\n"
	      "       gen_batch seeds DIR\n"
	      "       gen_batch [--seq N] hostile FILE\n"
	      "       gen_batch [SHAPE] [--batches N] [--threads N] [--token T] push URL\n"
	      "       gen_batch [SHAPE] [--batches N] [--threads N] [--token T] stream URL\n"
	      "       gen_batch [SHAPE] [--token T] resend URL <ACKS\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroups", required_argument, NULL, 'c' }, { "stacks", required_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 'd' },   { "counters", required_argument, NULL, 'n' },
		{ "host", required_argument, NULL, 'H' },    { "agent", required_argument, NULL, 'a' },
		{ "seq", required_argument, NULL, 'q' },     { "gzip", no_argument, NULL, 'z' },
		{ "batches", required_argument, NULL, 'b' }, { "threads", required_argument, NULL, 't' },
		{ "token", required_argument, NULL, 'T' },   { "help", no_argument, NULL, 'h' },
		{ "truncated", required_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	struct shape sh = { 50, 200, 20, 10, "bench-host", "bench-agent", 1, 0, 0, 0 };
	unsigned long v, batches = 20, threads = 2;
	const char *token = NULL;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int bad = 0;

		switch (opt) {
		case 'c': bad = num(optarg, 1000000, &v); sh.cgroups = (unsigned)v; break;
		case 's': bad = num(optarg, 1000000, &v); sh.stacks = (unsigned)v; break;
		case 'd': bad = num(optarg, WIRE_STACK_MAX, &v) || !v; sh.depth = (unsigned)v; break;
		case 'n': bad = num(optarg, N_EVENTS, &v); sh.counters = (unsigned)v; break;
		case 'q': bad = num(optarg, ~0ul, &v); sh.seq = v; break;
		case 'x': bad = num(optarg, 1000000, &v); sh.truncated = v; break;
		case 'b': bad = num(optarg, 100000, &batches) || !batches; break;
		case 't': bad = num(optarg, 64, &threads) || !threads; break;
		case 'H': sh.host = optarg; break;
		case 'a': sh.agent = optarg; break;
		case 'z': sh.gzip = 1; break;
		case 'T': token = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (bad) {
			fprintf(stderr, "gen_batch: bad value '%s'\n", optarg);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	pool_init();
	if (!strcmp(argv[optind], "write"))
		return cmd_write(&sh, argv[optind + 1]);
	if (!strcmp(argv[optind], "hostile"))
		return cmd_hostile(sh.seq, argv[optind + 1]);
	if (!strcmp(argv[optind], "seeds"))
		return cmd_seeds(argv[optind + 1]);
	if (strcmp(argv[optind], "push") && strcmp(argv[optind], "stream") &&
	    strcmp(argv[optind], "resend")) {
		usage(stderr);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!strcmp(argv[optind], "stream"))
		ret = cmd_stream(&sh, argv[optind + 1], (unsigned)batches, (unsigned)threads, token);
	else if (!strcmp(argv[optind], "resend"))
		ret = cmd_resend(&sh, argv[optind + 1], token);
	else
		ret = cmd_push(&sh, argv[optind + 1], (unsigned)batches, (unsigned)threads, token);
	curl_global_cleanup();
	return ret;
}
