// SPDX-License-Identifier: MIT
/*
 * render_svg: a fold_set as an interactive SVG flame graph.
 *
 * Layout. The stacks, sorted frame by frame by name, are merged into a
 * trie in one pass: a stack shares its first frames with the previous one
 * in that order, so only the rest become new nodes, and the node array
 * comes out in preorder (parent before children, siblings by name). A
 * second pass gives each node its x: a per-depth cursor starts at the
 * parent's x and advances by each sibling's samples. Nothing is ever
 * searched, so 100k stacks of depth 30 take one sort and two linear passes.
 * Root at the bottom ("all"), leaves on top, as flamegraph.pl draws them.
 *
 * A frame narrower than MIN_WIDTH px is left out with everything above
 * it: that bounds the output to about width / MIN_WIDTH frames per level
 * whatever the number of stacks.
 *
 * Escaping. Frame names are arbitrary bytes: XML metacharacters become
 * entities, invalid UTF-8 becomes U+FFFD, and control characters (which
 * XML 1.0 cannot carry at all, even as character references) become '?'.
 * The script reads names back from the <title> text, so it never embeds
 * data and its CDATA section cannot be closed by a name.
 *
 * Interaction (inline script, no external resources): hover shows the
 * frame at the bottom, click zooms (the frame fills the width, its
 * ancestors are shown full width and dimmed), "Reset Zoom" or Escape
 * undoes it; "Search" or Ctrl-F asks for a regular expression, colours the
 * matching frames and shows their share of all samples (nested matches
 * counted once).
 */
#include "exporter/render/render.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/page.h"
#include "lib/utf8.h"
#include "exporter/render/render_internal.h"

#define XPAD 10       /* left and right margins */
#define FRAME_H 16    /* one level */
#define FONT_SIZE 12  /* px */
#define CHAR_W 7.08   /* average glyph width at FONT_SIZE (12 * 0.59) */
#define MIN_WIDTH 0.1 /* px: narrower frames are left out */
#define YBOT 34       /* below the root: the hover and match lines */
#define WIDTH_DEFAULT 1200
#define WIDTH_MIN 200
#define WIDTH_MAX 100000

struct fnode {
	uint32_t frame; /* UINT32_MAX: the "all" root */
	uint32_t depth; /* 0: the root frame of a stack */
	uint64_t total;
	uint64_t base; /* a diff's base samples through it */
};

struct flame {
	struct fnode *n;
	size_t nn, cap;
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static int flame_build(const struct fold_set *fs, struct flame *fl)
{
	uint32_t *order = NULL, *path = NULL;
	const struct fold_stack *prev = NULL;
	int ret;

	ret = fold_set_order(fs, false, &order);
	if (ret < 0)
		return ret;
	path = malloc(FOLD_SET_DEPTH_MAX * sizeof(*path));
	if (!path) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < fs->nst; k++) {
		const struct fold_stack *s = &fs->st[order[k]];
		const uint32_t *ids = fold_stack_ids(fs, s);
		uint32_t common = 0;

		if (prev) {
			const uint32_t *pids = fold_stack_ids(fs, prev);
			uint32_t m = s->depth < prev->depth ? s->depth : prev->depth;

			while (common < m && ids[common] == pids[common])
				common++;
		}
		for (uint32_t d = 0; d < common; d++) {
			fl->n[path[d]].total = sat_add(fl->n[path[d]].total, s->count);
			fl->n[path[d]].base = sat_add(fl->n[path[d]].base, s->base);
		}
		if (fl->nn + (s->depth - common) > fl->cap) {
			size_t cap = fl->cap ? fl->cap : 1024;
			struct fnode *q;

			while (cap < fl->nn + (s->depth - common))
				cap *= 2;
			q = realloc(fl->n, cap * sizeof(*q));
			if (!q) {
				ret = -ENOMEM;
				goto out;
			}
			fl->n = q;
			fl->cap = cap;
		}
		for (uint32_t d = common; d < s->depth; d++) {
			fl->n[fl->nn] = (struct fnode){
				.frame = ids[d], .depth = d, .total = s->count, .base = s->base
			};
			path[d] = (uint32_t)fl->nn++;
		}
		prev = s;
	}
out:
	free(path);
	free(order);
	return ret;
}

/* ---- escaping ----------------------------------------------------------- */

/*
 * The code point at @s (@len > 0 bytes left) and its length; a byte that
 * does not start a valid, shortest-form UTF-8 sequence of a code point XML
 * allows is one byte of U+FFFD.
 */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
	size_t n = utf8_decode((const char *)s, len, cp);

	/* XML allows neither U+FFFE nor U+FFFF. */
	if (!n || *cp == 0xfffe || *cp == 0xffff) {
		*cp = 0xfffd;
		return 1;
	}
	return n;
}

static size_t utf8_chars(const char *s, size_t len)
{
	size_t n = 0;
	uint32_t cp;

	for (size_t i = 0; i < len; n++)
		i += utf8_next((const unsigned char *)s + i, len - i, &cp);
	return n;
}

/* @s as XML character data or attribute text, at most @max code points
 * (the last two of them ".." when cut). */
static void xml_put(FILE *out, const char *s, size_t len, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, chars = 0;
	bool cut = max != SIZE_MAX && utf8_chars(s, len) > max;

	if (cut)
		max = max > 2 ? max - 2 : 0;
	while (i < len && chars < max) {
		uint32_t cp;
		size_t n = utf8_next(u + i, len - i, &cp);
		const char *esc;

		if (cp == 0xfffd && n == 1) {
			/* not UTF-8: the replacement character's encoding */
			fputs("\xef\xbf\xbd", out);
			i++;
			chars++;
			continue;
		}
		if ((esc = page_entity(cp, true)))
			fputs(esc, out);
		else if (cp < 0x20 || cp == 0x7f)
			putc('?', out);
		else
			fwrite(u + i, 1, n, out);
		i += n;
		chars++;
	}
	if (cut)
		fputs("..", out);
}

static void xml_puts(FILE *out, const char *s)
{
	xml_put(out, s, strlen(s), SIZE_MAX);
}

/* ---- colours ------------------------------------------------------------ */

static void frame_colour(const char *name, size_t len, unsigned rgb[3])
{
	uint32_t h = render_hash(name, len);
	double a = (h & 0xff) / 255.0, b = (h >> 8 & 0xff) / 255.0, c = (h >> 16 & 0xff) / 255.0;

	if (render_is_kernel(name, len)) {
		/* orange */
		rgb[0] = 215 + (unsigned)(40 * a);
		rgb[1] = 120 + (unsigned)(60 * b);
		rgb[2] = 20 + (unsigned)(40 * c);
	} else if (render_is_unnamed(name, len)) {
		/* grey: nothing is known of it */
		rgb[0] = 165 + (unsigned)(35 * a);
		rgb[1] = rgb[0];
		rgb[2] = rgb[0] + 10;
	} else {
		/* flamegraph.pl's "hot": red to yellow, stable per name */
		rgb[0] = 205 + (unsigned)(50 * a);
		rgb[1] = (unsigned)(230 * b);
		rgb[2] = (unsigned)(55 * c);
	}
}

/* ---- the document ------------------------------------------------------- */

struct layout {
	unsigned width, height, ytop;
	double scale; /* px per sample */
	uint64_t samples;
	/* a diff: the base's samples, how changes are measured, the largest */
	bool diff, normalize;
	uint64_t base_samples;
	double maxchange;
};

/* ---- a diff's colours --------------------------------------------------- */

/* How node @n changed from base to target: the difference of its shares of
 * each side's samples (normalize), else of its samples. */
static double change(const struct layout *l, const struct fnode *n)
{
	double t, b;

	if (!l->normalize)
		return (double)n->total - (double)n->base;
	t = l->samples ? (double)n->total / (double)l->samples : 0;
	b = l->base_samples ? (double)n->base / (double)l->base_samples : 0;
	return t - b;
}

static double largest_change(const struct layout *l, const struct flame *fl)
{
	double m = 0;

	for (size_t i = 0; i < fl->nn; i++) {
		double d = fabs(change(l, &fl->n[i]));

		if (d > m)
			m = d;
	}
	return m;
}

/* Red for growth, blue for shrinkage, paler the smaller against the
 * largest change; light grey unchanged; yellow when the base lacks it. */
static void diff_colour(const struct layout *l, const struct fnode *n, unsigned rgb[3])
{
	double d = change(l, n), i = l->maxchange > 0 ? fabs(d) / l->maxchange : 0;
	unsigned v = (unsigned)(225.0 * (1.0 - (i > 1 ? 1 : i)));

	if (!n->base) {
		rgb[0] = 255, rgb[1] = 205, rgb[2] = 0;
	} else if (d > 0) {
		rgb[0] = 255, rgb[1] = v, rgb[2] = v;
	} else if (d < 0) {
		rgb[0] = v, rgb[1] = v, rgb[2] = 255;
	} else {
		rgb[0] = rgb[1] = rgb[2] = 230;
	}
}

static void put_title_counts(FILE *out, const struct layout *l, const struct fnode *n)
{
	uint64_t total = n->total;

	fprintf(out, " (%llu samples, %.2f%%", (unsigned long long)total,
		l->samples ? 100.0 * total / l->samples : 0.0);
	if (l->diff) {
		fprintf(out, "; base %llu, %.2f%%", (unsigned long long)n->base,
			l->base_samples ? 100.0 * n->base / l->base_samples : 0.0);
		if (!n->base)
			fputs("; only in the target", out);
		else if (l->normalize)
			fprintf(out, "; %+.2f points", 100.0 * change(l, n));
		else
			fprintf(out, "; %+.0f samples", change(l, n));
	}
	putc(')', out);
}

static void put_frame(FILE *out, const struct layout *l, const char *name, size_t len,
		      const struct fnode *n, uint64_t x, uint32_t level)
{
	uint64_t total = n->total;
	double px = XPAD + x * l->scale, w = total * l->scale;
	double y = (double)l->height - YBOT - (level + 1.0) * FRAME_H;
	unsigned rgb[3] = { 200, 200, 200 };
	long fit = (long)((w - 6) / CHAR_W);

	if (l->diff)
		diff_colour(l, n, rgb);
	else if (level)
		frame_colour(name, len, rgb);
	fputs("<g class=\"f\"><title>", out);
	xml_put(out, name, len, SIZE_MAX);
	put_title_counts(out, l, n);
	fprintf(out, "</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" "
		     "height=\"%u\" fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/>",
		px, y, w, FRAME_H - 1, rgb[0], rgb[1], rgb[2]);
	if (fit >= 3) {
		fprintf(out, "<text x=\"%.2f\" y=\"%.1f\">", px + 3, y + 10.5);
		xml_put(out, name, len, (size_t)fit);
		fputs("</text>", out);
	}
	fputs("</g>\n", out);
}

/*
 * Walk the preorder nodes with a cursor per depth; frames narrower than
 * MIN_WIDTH are skipped with their subtrees. With @out NULL only the
 * highest depth drawn is found (*maxdepth, -1 when none).
 */
static void walk(const struct fold_set *fs, const struct flame *fl, const struct layout *l,
		 uint64_t *cursor, FILE *out, long *maxdepth)
{
	uint32_t skip = UINT32_MAX;

	*maxdepth = -1;
	cursor[0] = 0;
	for (size_t i = 0; i < fl->nn; i++) {
		const struct fnode *n = &fl->n[i];
		uint64_t x;

		if (n->depth > skip)
			continue;
		skip = UINT32_MAX;
		x = cursor[n->depth];
		cursor[n->depth] = x + n->total;
		cursor[n->depth + 1] = x;
		if (n->total * l->scale < MIN_WIDTH) {
			skip = n->depth;
			continue;
		}
		if ((long)n->depth > *maxdepth)
			*maxdepth = n->depth;
		if (out)
			put_frame(out, l, rtab_str(&fs->frames, n->frame),
				  rtab_len(&fs->frames, n->frame), n, x, n->depth + 1);
	}
}

static const char script[] =
	"\"use strict\";\n"
	"var svg, frames = [], details, matched, unzoombtn, searchbtn, searching = false;\n"
	"var W, XPAD = 10, CHAR_W = 7.08;\n"
	"function init(evt) {\n"
	"\tsvg = document.documentElement;\n"
	"\tW = parseFloat(svg.getAttribute(\"width\"));\n"
	"\tdetails = document.getElementById(\"details\");\n"
	"\tmatched = document.getElementById(\"matched\");\n"
	"\tunzoombtn = document.getElementById(\"unzoom\");\n"
	"\tsearchbtn = document.getElementById(\"search\");\n"
	"\tvar gs = document.getElementsByTagName(\"g\");\n"
	"\tfor (var i = 0; i < gs.length; i++) {\n"
	"\t\tvar g = gs[i];\n"
	"\t\tif (g.getAttribute(\"class\") != \"f\")\n"
	"\t\t\tcontinue;\n"
	"\t\tvar r = g.getElementsByTagName(\"rect\")[0];\n"
	"\t\tvar info = g.getElementsByTagName(\"title\")[0].textContent;\n"
	"\t\tvar k = info.lastIndexOf(\" (\");\n"
	"\t\tvar t = g.getElementsByTagName(\"text\")[0];\n"
	"\t\tvar y = parseFloat(r.getAttribute(\"y\"));\n"
	"\t\tif (!t) {\n"
	"\t\t\tt = document.createElementNS(\"http://www.w3.org/2000/svg\", \"text\");\n"
	"\t\t\tt.setAttribute(\"y\", (y + 10.5).toFixed(1));\n"
	"\t\t\tg.appendChild(t);\n"
	"\t\t}\n"
	"\t\tg.fgi = frames.length;\n"
	"\t\tframes.push({ g: g, r: r, t: t, info: info,\n"
	"\t\t\tname: k >= 0 ? info.substring(0, k) : info,\n"
	"\t\t\tx: parseFloat(r.getAttribute(\"x\")), w: parseFloat(r.getAttribute(\"width\")),\n"
	"\t\t\ty: y, fill: r.getAttribute(\"fill\") });\n"
	"\t}\n"
	"\tsvg.addEventListener(\"click\", function (e) {\n"
	"\t\tvar f = frame_of(e.target);\n"
	"\t\tif (f)\n"
	"\t\t\tzoom(f);\n"
	"\t}, false);\n"
	"\tsvg.addEventListener(\"mouseover\", function (e) {\n"
	"\t\tvar f = frame_of(e.target);\n"
	"\t\tdetails.textContent = f ? \"Function: \" + f.info : \" \";\n"
	"\t}, false);\n"
	"\tsvg.addEventListener(\"mouseout\", function (e) {\n"
	"\t\tdetails.textContent = \" \";\n"
	"\t}, false);\n"
	"\tunzoombtn.addEventListener(\"click\", function (e) {\n"
	"\t\tunzoom();\n"
	"\t}, false);\n"
	"\tsearchbtn.addEventListener(\"click\", function (e) {\n"
	"\t\tif (searching)\n"
	"\t\t\treset_search();\n"
	"\t\telse\n"
	"\t\t\tsearch_prompt();\n"
	"\t}, false);\n"
	"\twindow.addEventListener(\"keydown\", function (e) {\n"
	"\t\tif ((e.ctrlKey || e.metaKey) && (e.key == \"f\" || e.keyCode == 70)) {\n"
	"\t\t\te.preventDefault();\n"
	"\t\t\tsearch_prompt();\n"
	"\t\t} else if (e.key == \"Escape\") {\n"
	"\t\t\treset_search();\n"
	"\t\t\tunzoom();\n"
	"\t\t}\n"
	"\t}, false);\n"
	"}\n"
	"function frame_of(el) {\n"
	"\tfor (; el && el !== svg; el = el.parentNode)\n"
	"\t\tif (el.fgi !== undefined)\n"
	"\t\t\treturn frames[el.fgi];\n"
	"\treturn null;\n"
	"}\n"
	"function label(f, w) {\n"
	"\tvar n = Math.floor((w - 6) / CHAR_W);\n"
	"\tif (n < 3)\n"
	"\t\treturn \"\";\n"
	"\treturn f.name.length <= n ? f.name : f.name.substring(0, n - 2) + \"..\";\n"
	"}\n"
	"function place(f, x, w, hidden, parent) {\n"
	"\tf.g.style.display = hidden ? \"none\" : \"\";\n"
	"\tif (hidden)\n"
	"\t\treturn;\n"
	"\tf.r.setAttribute(\"x\", x.toFixed(2));\n"
	"\tf.r.setAttribute(\"width\", w.toFixed(2));\n"
	"\tf.t.setAttribute(\"x\", (x + 3).toFixed(2));\n"
	"\tf.t.textContent = label(f, w);\n"
	"\tf.g.setAttribute(\"class\", parent ? \"f parent\" : \"f\");\n"
	"}\n"
	"function zoom(z) {\n"
	"\tvar eps = 0.02, full = W - 2 * XPAD, ratio = full / z.w;\n"
	"\tfor (var i = 0; i < frames.length; i++) {\n"
	"\t\tvar f = frames[i];\n"
	"\t\tif (f.y > z.y)\n"
	"\t\t\tplace(f, XPAD, full, !(f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps), true);\n"
	"\t\telse\n"
	"\t\t\tplace(f, XPAD + (f.x - z.x) * ratio, f.w * ratio,\n"
	"\t\t\t      !(f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps), false);\n"
	"\t}\n"
	"\tunzoombtn.style.opacity = \"1\";\n"
	"}\n"
	"function unzoom() {\n"
	"\tfor (var i = 0; i < frames.length; i++)\n"
	"\t\tplace(frames[i], frames[i].x, frames[i].w, false, false);\n"
	"\tunzoombtn.style.opacity = \"0\";\n"
	"}\n"
	"function search_prompt() {\n"
	"\tvar term = prompt(\"Search for (regular expression):\", \"\");\n"
	"\tif (term)\n"
	"\t\tsearch(term);\n"
	"}\n"
	"function search(term) {\n"
	"\tvar re, spans = [], sum = 0, end = -1;\n"
	"\ttry {\n"
	"\t\tre = new RegExp(term);\n"
	"\t} catch (err) {\n"
	"\t\talert(\"Not a regular expression: \" + err.message);\n"
	"\t\treturn;\n"
	"\t}\n"
	"\treset_search();\n"
	"\tfor (var i = 0; i < frames.length; i++) {\n"
	"\t\tvar f = frames[i];\n"
	"\t\tif (re.test(f.name)) {\n"
	"\t\t\tf.r.setAttribute(\"fill\", \"rgb(230,0,230)\");\n"
	"\t\t\tspans.push([f.x, f.x + f.w]);\n"
	"\t\t}\n"
	"\t}\n"
	"\t/* Nested matches (a frame and its callers) count once. */\n"
	"\tspans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"\tfor (var j = 0; j < spans.length; j++) {\n"
	"\t\tvar s = spans[j];\n"
	"\t\tif (s[1] > end) {\n"
	"\t\t\tsum += s[1] - Math.max(s[0], end);\n"
	"\t\t\tend = s[1];\n"
	"\t\t}\n"
	"\t}\n"
	"\tmatched.textContent = \"Matched: \" + (100 * sum / (W - 2 * XPAD)).toFixed(2) + \"%\";\n"
	"\tsearching = true;\n"
	"\tsearchbtn.textContent = \"Reset Search\";\n"
	"}\n"
	"function reset_search() {\n"
	"\tfor (var i = 0; i < frames.length; i++)\n"
	"\t\tframes[i].r.setAttribute(\"fill\", frames[i].fill);\n"
	"\tmatched.textContent = \" \";\n"
	"\tsearching = false;\n"
	"\tsearchbtn.textContent = \"Search\";\n"
	"}\n";

static void put_head(FILE *out, const struct flame_opts *o, const struct layout *l)
{
	const char *title = o && o->title ? o->title : "Flame Graph";

	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style type=\"text/css\"><![CDATA[\n"
		"text { font-family: Verdana, sans-serif; font-size: %upx; fill: rgb(0,0,0); }\n"
		"#title { text-anchor: middle; font-size: 17px; }\n"
		"#subtitle { text-anchor: middle; fill: rgb(110,110,110); }\n"
		"#search, #matched { text-anchor: end; }\n"
		"#unzoom { opacity: 0; }\n"
		".btn { cursor: pointer; }\n"
		"g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; cursor: pointer; }\n"
		"g.f text { pointer-events: none; }\n"
		".parent { opacity: 0.5; }\n"
		"]]></style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"rgb(248,248,242)\"/>\n"
		"<text id=\"title\" x=\"%.1f\" y=\"24\">",
		l->width, l->height, l->width, l->height, FONT_SIZE, script, l->width, l->height,
		l->width / 2.0);
	xml_puts(out, title);
	fputs("</text>\n", out);
	if (o && o->subtitle) {
		fprintf(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"44\">", l->width / 2.0);
		xml_puts(out, o->subtitle);
		fputs("</text>\n", out);
	}
	fprintf(out,
		"<text id=\"unzoom\" class=\"btn\" x=\"%u\" y=\"24\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%u\" y=\"24\">Search</text>\n"
		"<text id=\"details\" x=\"%u\" y=\"%u\"> </text>\n"
		"<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n",
		XPAD, l->width - XPAD, XPAD, l->height - 12, l->width - XPAD, l->height - 12);
}

int render_svg(const struct fold_set *fs, const struct flame_opts *o, FILE *out)
{
	struct flame fl = { 0 };
	struct layout l = { 0 };
	uint64_t *cursor = NULL;
	long maxdepth = -1;
	int ret;

	l.width = o && o->width ? o->width : WIDTH_DEFAULT;
	if (l.width < WIDTH_MIN)
		l.width = WIDTH_MIN;
	if (l.width > WIDTH_MAX)
		l.width = WIDTH_MAX;
	l.ytop = o && o->subtitle ? 56 : 36;
	l.samples = fs->samples;
	l.diff = o && o->diff;
	l.normalize = o && o->normalize;
	l.base_samples = fs->base_samples;
	l.scale = l.samples ? (double)(l.width - 2 * XPAD) / (double)l.samples : 0;

	ret = flame_build(fs, &fl);
	if (ret < 0)
		goto out;
	cursor = calloc(FOLD_SET_DEPTH_MAX + 2, sizeof(*cursor));
	if (!cursor) {
		ret = -ENOMEM;
		goto out;
	}
	if (l.samples)
		walk(fs, &fl, &l, cursor, NULL, &maxdepth);
	if (l.diff)
		l.maxchange = largest_change(&l, &fl);
	/* levels: the root "all", then depths 0..maxdepth */
	l.height = l.ytop + (unsigned)(maxdepth + 2) * FRAME_H + YBOT;

	put_head(out, o, &l);
	if (l.samples) {
		struct fnode all = { .total = l.samples, .base = l.base_samples };

		put_frame(out, &l, "all", 3, &all, 0, 0);
		walk(fs, &fl, &l, cursor, out, &maxdepth);
	} else {
		fprintf(out,
			"<text x=\"%.1f\" y=\"%u\" style=\"text-anchor: middle\">No samples</text>\n",
			l.width / 2.0, l.ytop + FRAME_H);
	}
	fputs("</svg>\n", out);
	ret = fflush(out) == EOF || ferror(out) ? -EIO : 0;
out:
	free(cursor);
	free(fl.n);
	return ret;
}
