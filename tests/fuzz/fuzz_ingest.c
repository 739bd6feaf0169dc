// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for what cgperf-exporter does with a push body after
 * wire_decode() accepted it, short of SQLite: the /metrics totals
 * (totals_add_batch(), then totals_render() in the text format and in
 * OpenMetrics) and the stack outputs (each stack folded root first with ';'
 * as the store folds it, into a fold_set, then render_folded(),
 * render_svg() and render_pprof()). Properties checked on every input:
 *   - /metrics: every line is a comment or "name[{labels}] value", each
 *     label value closed with only \\, \" and \n escapes inside; the
 *     OpenMetrics page ends in "# EOF";
 *   - folded: every line is "frame;...;frame COUNT", the counts sum to the
 *     samples added;
 *   - svg: the document is opened and closed (xmllint's checks are in
 *     tests/integration/exporter_pprof.sh);
 *   - pprof: a gzip stream comes out.
 * Seeds: the same corpus as fuzz_wire (tests/integration/fuzz_wire.sh).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"
#include "exporter/page.h"
#include "exporter/render/render.h"
#include "exporter/totals.h"

#define FUZZ_CAP (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *label_value_end(const char *p, const char *end)
{
	/* p is just past the opening quote */
	for (; p < end; p++) {
		if (*p == '"')
			return p;
		if (*p == '\\') {
			if (p + 1 >= end || (p[1] != '\\' && p[1] != '"' && p[1] != 'n'))
				abort();
			p++;
		}
	}
	abort(); /* unterminated */
}

/* One sample line of the text format (or OpenMetrics). */
static void check_sample(const char *s, const char *end)
{
	const char *p = s;

	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':'))
		abort();
	while (p < end && *p != '{' && *p != ' ')
		p++;
	if (p < end && *p == '{') {
		p++;
		while (p < end && *p != '}') {
			while (p < end && *p != '=')
				p++;
			if (p + 1 >= end || p[1] != '"')
				abort();
			p = label_value_end(p + 2, end) + 1;
			if (p < end && *p == ',')
				p++;
		}
		if (p >= end)
			abort();
		p++;
	}
	if (p >= end || *p != ' ' || p + 1 >= end)
		abort();
}

static void check_metrics(const char *buf, size_t len, bool om)
{
	const char *p = buf, *end = buf + len, *last = NULL;

	if (len && buf[len - 1] != '\n')
		abort();
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			abort();
		if (*p != '#')
			check_sample(p, nl);
		last = p;
		p = nl + 1;
	}
	if (om && (!last || strncmp(last, "# EOF\n", 6)))
		abort();
}

static void check_folded(char *buf, size_t len, uint64_t want)
{
	uint64_t total = 0;
	char *p = buf, *end = buf + len;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *sp, *q;

		if (!nl)
			abort();
		*nl = '\0';
		sp = strrchr(p, ' ');
		if (!sp || sp == p || sp[1] == '\0' || p[0] == ';' || sp[-1] == ';' || strstr(p, ";;"))
			abort();
		for (q = sp + 1; *q; q++)
			if (*q < '0' || *q > '9')
				abort();
		total += strtoull(sp + 1, NULL, 10);
		p = nl + 1;
	}
	if (total != want)
		abort();
}

static void render_stacks(const Cgperf__V1__Batch *m)
{
	struct fold_set *fs = fold_set_new();
	char *folded = NULL, *joined = NULL;
	size_t cap = 0, flen = 0;
	uint8_t *pb = NULL;
	size_t pblen = 0;
	FILE *f;

	if (!fs)
		abort();
	for (size_t i = 0; i < m->n_profiles; i++) {
		const Cgperf__V1__Profile *pr = m->profiles[i];

		for (size_t k = 0; k < pr->n_stacks; k++) {
			const Cgperf__V1__Stack *st = pr->stacks[k];
			size_t need = 1, off = 0;

			for (size_t j = 0; j < st->n_frames; j++)
				need += strlen(wire_string(m, st->frames[j])) + 1;
			if (need > cap) {
				char *n = realloc(joined, need);

				if (!n)
					abort();
				joined = n;
				cap = need;
			}
			for (size_t j = 0; j < st->n_frames; j++) {
				const char *fr = wire_string(m, st->frames[j]);
				size_t l = strlen(fr);

				if (j)
					joined[off++] = ';';
				memcpy(joined + off, fr, l);
				off += l;
			}
			joined[off] = '\0';
			/* -EINVAL (an empty stack) and -ENOMEM are answers, not bugs */
			fold_set_add(fs, joined, st->count, st->count * 10101010u);
		}
	}
	f = open_memstream(&folded, &flen);
	if (!f || render_folded(fs, f))
		abort();
	fclose(f);
	check_folded(folded, flen, fold_set_samples(fs));
	free(folded);

	f = open_memstream(&folded, &flen);
	if (!f || render_svg(fs, &(struct flame_opts){ .title = "t<&>\"", .width = 800 }, f))
		abort();
	fclose(f);
	if (fold_set_stacks(fs) && (!strstr(folded, "<svg") || !strstr(folded, "</svg>")))
		abort();
	free(folded);

	if (render_pprof(fs, &(struct pprof_opts){ .time_ns = 1, .duration_ns = 1, .period_ns = 1 },
			 NULL, NULL, &pb, &pblen) == 0) {
		if (pblen < 2 || pb[0] != 0x1f || pb[1] != 0x8b)
			abort();
		free(pb);
	}
	free(joined);
	fold_set_free(fs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256] = "";
	Cgperf__V1__Batch *m = wire_decode(data, size, FUZZ_CAP, err, sizeof(err));
	struct totals *t;
	struct page p;

	if (!m)
		return 0;
	t = totals_new();
	if (!t)
		abort();
	/* twice: a second batch of the same cgroups adds to their totals */
	if (totals_add_batch(t, m, 1000) || totals_add_batch(t, m, 2000))
		abort();
	for (int om = 0; om < 2; om++) {
		page_init(&p, 0);
		totals_render(t, &p, om, 0);
		if (om)
			page_put(&p, "# EOF\n"); /* http.c closes the page */
		if (page_failed(&p))
			abort();
		check_metrics(p.buf ? p.buf : "", p.len, om);
		page_release(&p);
	}
	totals_expire(t, 3000);
	if (totals_series(t))
		abort(); /* everything was last seen at 2000 */
	totals_free(t);
	render_stacks(m);
	wire_batch_decoded_free(m);
	return 0;
}
