// SPDX-License-Identifier: MIT
/*
 * exporter/render: fold_set summing and refusals; folded text summed and in
 * byte order (checked against strcmp on random stacks whose names prefix
 * each other); the SVG checked by xmllint with hostile frame names and
 * title, its frames' totals checked against a brute-force count of every
 * stack prefix, its geometry (children inside their parent), narrow frames
 * left out; every allocation failed in turn (no crash, nothing left
 * allocated; not under ASan, which owns malloc); and 100k stacks of depth
 * 30 timed (printed, not asserted). pprof is in test_render_pprof.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "exporter/render/render.h"
#include "tests/unit/testalloc.h"
#include "tests/unit/testlib.h"

/* ---- helpers ------------------------------------------------------------ */

static char *render_to_string(int (*fn)(const struct fold_set *, FILE *), const struct fold_set *fs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(fs, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* ---- fold_set and folded text ------------------------------------------- */

static void test_folded_sum_sort(void **state)
{
	struct fold_set *fs = fold_set_new();
	char *out;

	assert_non_null(fs);
	assert_int_equal(fold_set_add(fs, "main;b;c", 3, 30), 0);
	assert_int_equal(fold_set_add(fs, "main;b", 2, 0), 0);
	assert_int_equal(fold_set_add(fs, "main;b;c", 4, 40), 0);
	assert_int_equal(fold_set_add(fs, "x;y_[k]", 1, 0), 0);
	assert_int_equal(fold_set_add(fs, "main!;z", 5, 0), 0);
	assert_int_equal(fold_set_add(fs, "main", 6, 0), 0);
	assert_int_equal(fold_set_add(fs, "main b;q", 1, 0), 0);
	assert_int_equal(fold_set_stacks(fs), 6);
	assert_int_equal(fold_set_samples(fs), 22);

	out = render_to_string(render_folded, fs);
	/* bytewise: ' ' < '!' < ';', and a stack before its extensions */
	assert_string_equal(out, "main 6\n"
				 "main b;q 1\n"
				 "main!;z 5\n"
				 "main;b 2\n"
				 "main;b;c 7\n"
				 "x;y_[k] 1\n");
	free(out);
	fold_set_free(fs);
	fold_set_free(NULL);
}

static void test_add_refused(void **state)
{
	struct fold_set *fs = fold_set_new();
	size_t n = 8193 * 2;
	char *deep = malloc(n + 1);
	char *out;

	assert_non_null(fs);
	assert_non_null(deep);
	assert_int_equal(fold_set_add(fs, "", 1, 0), -EINVAL);
	assert_int_equal(fold_set_add(fs, "a;;b", 1, 0), -EINVAL);
	assert_int_equal(fold_set_add(fs, ";a", 1, 0), -EINVAL);
	assert_int_equal(fold_set_add(fs, "a;", 1, 0), -EINVAL);
	for (size_t i = 0; i < n; i += 2) {
		deep[i] = 'f';
		deep[i + 1] = ';';
	}
	deep[n - 1] = '\0'; /* 8193 frames */
	assert_int_equal(fold_set_add(fs, deep, 1, 0), -E2BIG);
	deep[n - 3] = '\0'; /* 8192 frames: the cap itself is fine */
	assert_int_equal(fold_set_add(fs, deep, 1, 0), 0);
	assert_int_equal(fold_set_stacks(fs), 1);
	assert_int_equal(fold_set_samples(fs), 1);

	/* A refused stack leaves nothing behind in the outputs. */
	fold_set_free(fs);
	fs = fold_set_new();
	assert_int_equal(fold_set_add(fs, "a;;b", 1, 0), -EINVAL);
	assert_int_equal(fold_set_add(fs, "ok", 1, 0), 0);
	out = render_to_string(render_folded, fs);
	assert_string_equal(out, "ok 1\n");
	free(out);
	free(deep);
	fold_set_free(fs);
}

static void test_folded_control_bytes(void **state)
{
	struct fold_set *fs = fold_set_new();
	char *out;

	assert_int_equal(fold_set_add(fs, "/pg\n.slice;a\tb\x7f", 2, 0), 0);
	out = render_to_string(render_folded, fs);
	assert_string_equal(out, "/pg?.slice;a?b? 2\n");
	free(out);
	fold_set_free(fs);
}

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
	return (uint32_t)(tl_rand(&rng) % n);
}

/* Names that prefix each other and hold bytes on both sides of ';'. */
static const char *const tricky[] = { "a", "a!", "a b", "ab", "a~", "b", "B", "\xc3\xa9", "a_[k]", "zz" };
#define NTRICKY (sizeof(tricky) / sizeof(tricky[0]))

static void random_stack(char *buf, size_t cap)
{
	uint32_t depth = 1 + rnd(5);
	size_t off = 0;

	for (uint32_t d = 0; d < depth; d++)
		off += (size_t)snprintf(buf + off, cap - off, "%s%s", d ? ";" : "", tricky[rnd(NTRICKY)]);
}

static void test_folded_order_random(void **state)
{
	struct fold_set *fs = fold_set_new();
	char buf[256], *out, *line, *save = NULL, *prev = NULL;
	uint64_t total = 0;
	size_t lines = 0;

	for (int i = 0; i < 3000; i++) {
		random_stack(buf, sizeof(buf));
		assert_int_equal(fold_set_add(fs, buf, 1 + rnd(3), 0), 0);
	}
	out = render_to_string(render_folded, fs);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');

		assert_non_null(sp);
		total += strtoull(sp + 1, NULL, 10);
		*sp = '\0';
		if (prev && strcmp(prev, line) >= 0)
			fail_msg("not in byte order: \"%s\" then \"%s\"", prev, line);
		prev = line;
		lines++;
	}
	assert_int_equal(lines, fold_set_stacks(fs));
	assert_int_equal(total, fold_set_samples(fs));
	free(out);
	fold_set_free(fs);
}

/* ---- SVG ---------------------------------------------------------------- */

static void xmllint_ok(const char *svg)
{
	char path[] = "/tmp/test_render-XXXXXX.svg", cmd[128];
	int fd = mkstemps(path, 4);
	size_t len = strlen(svg);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, svg, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	if (system(cmd) != 0)
		fail_msg("xmllint rejects %s", path); /* kept for a look */
	unlink(path);
}

/* render_svg() of @fs with @o, checked well-formed by xmllint; malloc'd. */
static char *svg_of(const struct fold_set *fs, const struct flame_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(render_svg(fs, o, f), 0);
	assert_int_equal(fclose(f), 0);
	xmllint_ok(buf);
	return buf;
}

static void test_svg_hostile(void **state)
{
	struct fold_set *fs = fold_set_new();
	struct flame_opts o = { .title = "cg <\"/a&b'\x01\xff\">", .subtitle = "sub \xe2\x82\xac ]]>" };
	char *buf;

	assert_int_equal(fold_set_add(fs, "/system.slice/we\"ird \\name\n.service;<script>alert(1)</script>;"
					  "a&b;caf\xc3\xa9;\xff\xfe\xc3;\x01\x02\x1f\x7f;]]>;\xef\xbf\xbe;"
					  "\xed\xa0\x80;\xf4\x90\x80\x80;\xc0\xaf;'q'",
				  5, 0),
			 0);
	assert_int_equal(fold_set_add(fs, "k_[k];lib.so+0x1f;\xe2\x82\xac\xf0\x9f\x94\xa5", 3, 0), 0);
	buf = svg_of(fs, &o);

	/* self-contained: no external reference besides the namespace */
	assert_null(strstr(buf, "<!DOCTYPE"));
	assert_null(strstr(buf, "href"));
	assert_non_null(strstr(buf, "<![CDATA["));
	/* names escaped, kept where valid, replaced where not */
	assert_non_null(strstr(buf, "<title>&lt;script&gt;alert(1)&lt;/script&gt; (5 samples, 62.50%)</title>"));
	assert_non_null(strstr(buf, "<title>/system.slice/we&quot;ird \\name?.service (5 samples"));
	assert_non_null(strstr(buf, "<title>a&amp;b (5 samples"));
	assert_non_null(strstr(buf, "<title>caf\xc3\xa9 (5 samples"));
	assert_non_null(strstr(buf, "<title>\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd (5 samples"));
	assert_non_null(strstr(buf, "<title>???? (5 samples"));
	assert_non_null(strstr(buf, "<title>]]&gt; (5 samples"));
	assert_non_null(strstr(buf, "<title>&apos;q&apos; (5 samples"));
	assert_non_null(strstr(buf, "<title>\xe2\x82\xac\xf0\x9f\x94\xa5 (3 samples, 37.50%)"));
	assert_non_null(strstr(buf, ">cg &lt;&quot;/a&amp;b&apos;?\xef\xbf\xbd&quot;&gt;</text>"));
	assert_non_null(strstr(buf, ">sub \xe2\x82\xac ]]&gt;</text>"));
	/* colours by kind: kernel orange, unnamed grey */
	{
		const char *k = strstr(buf, "<title>k_[k] ");
		const char *u = strstr(buf, "<title>lib.so+0x1f ");
		unsigned r, g, b;

		assert_non_null(k);
		assert_non_null(u);
		assert_int_equal(sscanf(strstr(k, "fill=\"") + 6, "rgb(%u,%u,%u)", &r, &g, &b), 3);
		assert_true(r >= 215 && g >= 120 && g <= 180 && b <= 60);
		assert_int_equal(sscanf(strstr(u, "fill=\"") + 6, "rgb(%u,%u,%u)", &r, &g, &b), 3);
		assert_true(r == g && b == r + 10);
	}
	free(buf);
	fold_set_free(fs);
}

struct sframe {
	char name[64];
	uint64_t samples;
	double x, y, w;
};

/* The frames of an SVG: name from the title, samples, geometry. */
static size_t parse_svg(const char *svg, struct sframe *out, size_t max)
{
	size_t n = 0;

	for (const char *p = strstr(svg, "<g class=\"f\"><title>"); p;
	     p = strstr(p + 1, "<g class=\"f\"><title>")) {
		const char *t = p + strlen("<g class=\"f\"><title>"), *end = strstr(t, "</title>");
		const char *paren = end;

		assert_true(n < max);
		while (paren > t && strncmp(paren, " (", 2))
			paren--;
		assert_true((size_t)(paren - t) < sizeof(out[n].name));
		memcpy(out[n].name, t, (size_t)(paren - t));
		out[n].name[paren - t] = '\0';
		assert_int_equal(sscanf(paren, " (%" SCNu64 " samples", &out[n].samples), 1);
		assert_int_equal(sscanf(strstr(end, "x=\""), "x=\"%lf\" y=\"%lf\" width=\"%lf\"", &out[n].x,
					&out[n].y, &out[n].w),
				 3);
		n++;
	}
	return n;
}

static int cmp_frame(const void *a, const void *b)
{
	const struct sframe *x = a, *y = b;
	int r = (x->y > y->y) - (x->y < y->y);

	if (!r)
		r = strcmp(x->name, y->name);
	if (!r)
		r = (x->samples > y->samples) - (x->samples < y->samples);
	return r;
}

/*
 * Random stacks over a small alphabet: each frame's samples must equal the
 * brute-force sum over stacks having its path as a prefix, and each frame
 * must lie within one frame of the level below.
 */
static void test_svg_trie_random(void **state)
{
	enum { N = 400, MAXF = 4000 };
	static char stacks[N][64];
	static uint64_t counts[N];
	static struct sframe got[MAXF], want[MAXF];
	static const char *const names[] = { "a", "b", "c", "a!", "ab" };
	struct fold_set *fs = fold_set_new();
	size_t ngot, nwant = 0;
	char *svg;

	for (int i = 0; i < N; i++) {
		uint32_t depth = 1 + rnd(4);
		size_t off = 0;

		for (uint32_t d = 0; d < depth; d++)
			off += (size_t)snprintf(stacks[i] + off, sizeof(stacks[i]) - off, "%s%s", d ? ";" : "",
						names[rnd(5)]);
		counts[i] = 1 + rnd(9);
		assert_int_equal(fold_set_add(fs, stacks[i], counts[i], 0), 0);
	}
	svg = svg_of(fs, &(struct flame_opts){ .title = "test" });
	ngot = parse_svg(svg, got, MAXF);

	/* Every distinct prefix of every stack once, with its samples. */
	for (int i = 0; i < N; i++) {
		for (size_t end = 0; end <= strlen(stacks[i]); end++) {
			if (stacks[i][end] != ';' && stacks[i][end] != '\0')
				continue;
			bool seen = false;
			for (int j = 0; j < i && !seen; j++)
				seen = !strncmp(stacks[j], stacks[i], end) &&
				       (stacks[j][end] == ';' || stacks[j][end] == '\0');
			if (seen)
				continue;
			uint64_t sum = 0;
			for (int j = 0; j < N; j++)
				if (!strncmp(stacks[j], stacks[i], end) &&
				    (stacks[j][end] == ';' || stacks[j][end] == '\0'))
					sum += counts[j];
			const char *leaf = stacks[i] + end;
			size_t depth = 0;
			while (leaf > stacks[i] && leaf[-1] != ';')
				leaf--;
			for (size_t k = 0; k < end; k++)
				depth += stacks[i][k] == ';';
			assert_true(nwant < MAXF);
			snprintf(want[nwant].name, sizeof(want[nwant].name), "%.*s", (int)(stacks[i] + end - leaf),
				 leaf);
			want[nwant].samples = sum;
			want[nwant].y = -(double)depth; /* sorted like the SVG: deeper first */
			nwant++;
		}
	}
	/* The SVG's "all" root, then frames; y decreases with depth. */
	assert_string_equal(got[0].name, "all");
	assert_int_equal(got[0].samples, fold_set_samples(fs));
	assert_int_equal(ngot - 1, nwant);
	for (size_t i = 1; i < ngot; i++) {
		double below = got[i].y + 16;
		bool inside = false;

		for (size_t j = 0; j < ngot && !inside; j++)
			inside = got[j].y == below && got[j].x <= got[i].x + 0.02 &&
				 got[j].x + got[j].w >= got[i].x + got[i].w - 0.02;
		if (!inside)
			fail_msg("frame %s at x=%.2f y=%.0f is over no frame", got[i].name, got[i].x, got[i].y);
	}
	for (size_t i = 1; i < ngot; i++)
		got[i].x = got[i].w = 0;
	qsort(got + 1, ngot - 1, sizeof(got[0]), cmp_frame);
	qsort(want, nwant, sizeof(want[0]), cmp_frame);
	for (size_t i = 0; i < nwant; i++) {
		if (strcmp(got[i + 1].name, want[i].name) || got[i + 1].samples != want[i].samples)
			fail_msg("frame %zu: %s %" PRIu64 ", want %s %" PRIu64, i, got[i + 1].name,
				 got[i + 1].samples, want[i].name, want[i].samples);
	}
	free(svg);
	fold_set_free(fs);
}

static void test_svg_layout(void **state)
{
	struct fold_set *fs = fold_set_new();
	struct sframe fr[16];
	char *svg;
	size_t n;

	assert_int_equal(fold_set_add(fs, "m;a;x", 300000, 0), 0);
	assert_int_equal(fold_set_add(fs, "m;b", 100000, 0), 0);
	/* 1 of 1e6 samples on a 1180 px axis: 0.00118 px, left out with its child */
	assert_int_equal(fold_set_add(fs, "tiny;tinier", 1, 0), 0);
	assert_int_equal(fold_set_add(fs, "big", 599999, 0), 0);
	svg = svg_of(fs, &(struct flame_opts){ .title = "test" });
	n = parse_svg(svg, fr, 16);
	assert_int_equal(n, 6); /* all, m, a, x, b, big */
	assert_null(strstr(svg, "tiny"));
	assert_string_equal(fr[0].name, "all");
	assert_true(fr[0].x == 10 && fr[0].w == 1180);
	/* preorder, siblings by name: big, then m with a (with x) and b */
	assert_string_equal(fr[1].name, "big");
	assert_string_equal(fr[2].name, "m");
	assert_string_equal(fr[3].name, "a");
	assert_string_equal(fr[4].name, "x");
	assert_string_equal(fr[5].name, "b");
	assert_true(fr[2].x == fr[3].x && fr[3].x == fr[4].x);
	assert_true(fr[5].x > fr[3].x + fr[3].w - 0.02 && fr[5].x < fr[3].x + fr[3].w + 0.02);
	assert_true(fr[3].y == fr[5].y && fr[4].y == fr[3].y - 16 && fr[2].y == fr[0].y - 16);
	free(svg);

	/* the width option; nothing to draw is still a document */
	fold_set_free(fs);
	fs = fold_set_new();
	{
		struct flame_opts o = { .title = "empty", .width = 500 };
		char *buf = svg_of(fs, &o);

		assert_non_null(strstr(buf, "width=\"500\""));
		assert_non_null(strstr(buf, "No samples"));
		assert_null(strstr(buf, "<g class=\"f\">"));
		free(buf);
	}
	fold_set_free(fs);
}

/* ---- allocation failures ------------------------------------------------ */

static int run_all(FILE *sink)
{
	struct fold_set *fs = fold_set_new();
	struct flame_opts fo = { .title = "t" };
	uint8_t *pb = NULL;
	size_t len;
	char name[32];
	int ret = -ENOMEM;

	if (!fs)
		return -ENOMEM;
	/* enough frames and stacks to make every table grow at least once */
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "r;m%d;f%d_[k];x.so+0x%x", i % 7, i, i);
		ret = fold_set_add(fs, name, 1, 1);
		if (ret < 0)
			goto out;
	}
	ret = render_folded(fs, sink);
	if (!ret)
		ret = render_pprof(fs, NULL, NULL, NULL, &pb, &len);
	if (!ret)
		ret = render_svg(fs, &fo, sink);
out:
	free(pb);
	fold_set_free(fs);
	return ret;
}

/* One run of the torture loop: every output of one fold set. */
static void render_run(void *ctx)
{
	int ret = run_all(ctx);

	if (!tl_alloc_failed())
		assert_int_equal(ret, 0);
	/* 0: an allocation with a fallback (qsort's scratch) */
	else if (ret != -ENOMEM && ret != 0)
		fail_msg("an allocation failed: %d, want -ENOMEM", ret);
}

static void test_alloc_failures(void **state)
{
	FILE *sink;
	long i;

	tl_alloc_require();
	sink = tl_devnull();
	assert_int_equal(run_all(sink), 0); /* sink's buffer allocated once */
	i = tl_alloc_torture(render_run, sink, 100000);
	print_message("     %ld allocations failed in turn\n", i);
	assert_true(i > 20);
	fclose(sink);
}

/* ---- scale -------------------------------------------------------------- */

/* CPU time of this process: what the code costs, whatever else runs on
 * the machine (wall time on a loaded 2-vCPU VM says little). */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_100k_stacks(void **state)
{
	struct fold_set *fs = fold_set_new();
	struct pprof_opts po = { .period_ns = 10000000 };
	struct flame_opts fo = { .title = "100k" };
	FILE *sink = fopen("/dev/null", "w");
	char buf[30 * 24];
	uint8_t *pb = NULL;
	size_t pblen;
	double t0, t1, t2, t3, t4;

	assert_non_null(sink);
	t0 = now();
	for (unsigned s = 0; s < 100000; s++) {
		size_t off = 0;

		for (unsigned d = 0; d < 30; d++) {
			unsigned v = d < 3 ? s % 4 : d < 29 ? rnd(3 + d * 2) : s;

			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%sfn_%u_%u", d ? ";" : "", d, v);
		}
		assert_int_equal(fold_set_add(fs, buf, 1 + s % 5, 0), 0);
	}
	t1 = now();
	assert_int_equal(fold_set_stacks(fs), 100000);
	assert_int_equal(render_folded(fs, sink), 0);
	t2 = now();
	assert_int_equal(render_pprof(fs, &po, NULL, NULL, &pb, &pblen), 0);
	t3 = now();
	assert_int_equal(render_svg(fs, &fo, sink), 0);
	t4 = now();
	print_message("     100k stacks x 30, CPU time: add %.3f s, folded %.3f s, pprof %.3f s (%zu bytes), "
		      "svg %.3f s\n",
		      t1 - t0, t2 - t1, t3 - t2, pblen, t4 - t3);
	free(pb);
	fclose(sink);
	fold_set_free(fs);
}

TL_MAIN(test_folded_sum_sort, test_add_refused, test_folded_control_bytes,
	test_folded_order_random, test_svg_hostile, test_svg_trie_random, test_svg_layout,
	test_alloc_failures, test_100k_stacks)
