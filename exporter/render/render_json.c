// SPDX-License-Identifier: MIT
/*
 * render_json: a fold_set as the compact JSON the explorer page reads
 * (GET /api/v1/stacks?format=json, /api/v1/diff?format=json): each
 * distinct frame name once, with its kind and module, and the stacks as
 * rows of integer references to those names. The set already holds the
 * names interned (fold_set.frames) and every stack as a run of their ids,
 * so the ids are written as they are: one pass over the stacks for the
 * names' modules and root-ness, one to write them. Output grows linearly
 * with the stacks (the caller's stream grows geometrically); nothing is
 * searched but one small map of module keys.
 *
 * Kinds are per name, not per occurrence: a name is one node of the page's
 * top table. The module of a name is the first one known in row order, so
 * "main" of two programs shows one of them (the flame graph still tells
 * them apart by their callers).
 */
#include "exporter/render/render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/render/render_internal.h"
#include "lib/hashmap.h"
#include "lib/json.h"

const char *render_frame_kind(const char *name, size_t len, const char *module, bool root)
{
	const char *base, *so;

	if ((len >= 10 && !memcmp(name, "[truncated", 10)) ||
	    (len == 20 && !memcmp(name, "[bad return address]", 20)))
		return "marker";
	if (root && !module)
		return "comm";
	if (render_is_kernel(name, len) || (module && !strcmp(module, "[kernel.kallsyms]")))
		return "kernel";
	if (render_is_unnamed(name, len))
		return "unnamed";
	if (!module || !*module)
		return "function";
	if (!strcmp(module, "[vdso]"))
		return "library";
	if (module[0] != '/')
		return "jit"; /* "[jit]", "[anon:...]", "//anon" */
	base = strrchr(module, '/') + 1;
	for (so = strstr(base, ".so"); so; so = strstr(so + 1, ".so"))
		if (so[3] == '\0' || so[3] == '.')
			return "library";
	return "binary";
}

/* What is known of the names and modules while writing. */
struct jnames {
	int32_t *module;     /* per name: index in the modules, -1 none */
	bool *root;          /* per name: a stack's first frame with no module */
	struct hashmap *keys; /* module key -> index + 1, or UINT32_MAX + 1 unknown */
	struct rtab modules; /* "path\0build_id" -> index */
};

static void jnames_release(struct jnames *j)
{
	free(j->module);
	free(j->root);
	hashmap_free(j->keys);
	rtab_release(&j->modules);
}

#define KEY_UNKNOWN ((uint64_t)UINT32_MAX + 1)

/* The module index of module key @key (first seen at frame @frame), or -1. */
static int64_t module_index(struct jnames *j, const struct fold_set *fs, uint32_t frame,
			    uint32_t key, render_module_fn fn, void *arg)
{
	uint64_t *v = hashmap_slot(j->keys, &key, sizeof(key));
	struct render_module m = { 0 };
	char *both;
	size_t lp, lb;
	uint32_t id;
	int ret;

	if (!v)
		return -ENOMEM;
	if (*v)
		return *v == KEY_UNKNOWN ? -1 : (int64_t)(*v - 1);
	*v = KEY_UNKNOWN;
	if (fn(arg, rtab_str(&fs->frames, frame), key, &m) || !m.path)
		return -1;
	lp = strlen(m.path);
	lb = m.build_id ? strlen(m.build_id) : 0;
	both = malloc(lp + lb + 2);
	if (!both)
		return -ENOMEM;
	memcpy(both, m.path, lp + 1);
	memcpy(both + lp + 1, m.build_id ? m.build_id : "", lb + 1);
	ret = rtab_intern(&j->modules, both, lp + lb + 2, &id);
	free(both);
	if (ret < 0)
		return ret;
	/* the map may have grown since @v was found */
	v = hashmap_slot(j->keys, &key, sizeof(key));
	if (!v)
		return -ENOMEM;
	*v = (uint64_t)id + 1;
	return id;
}

/* Every name's module and root-ness, from the stacks in @order. */
static int jnames_fill(struct jnames *j, const struct fold_set *fs, const uint32_t *order,
		       render_module_fn fn, void *arg)
{
	uint32_t n = fs->frames.n;

	j->module = malloc((n ? n : 1) * sizeof(*j->module));
	j->root = calloc(n ? n : 1, sizeof(*j->root));
	j->keys = hashmap_new();
	if (!j->module || !j->root || !j->keys)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		j->module[i] = -1;
	for (uint32_t k = 0; k < fs->nst; k++) {
		const struct fold_stack *s = &fs->st[order[k]];
		const uint32_t *ids = fold_stack_ids(fs, s);
		const uint32_t *mods = fs->mods ? fs->mods + s->off : NULL;

		if (!s->depth)
			continue;
		if (!mods || !mods[0])
			j->root[ids[0]] = true;
		for (uint32_t d = 0; mods && fn && d < s->depth; d++) {
			int64_t m;

			if (!mods[d] || j->module[ids[d]] >= 0)
				continue;
			m = module_index(j, fs, ids[d], mods[d], fn, arg);
			if (m < -1)
				return (int)m;
			j->module[ids[d]] = (int32_t)m;
		}
	}
	return 0;
}

static void put_u64(FILE *out, uint64_t v)
{
	char buf[24];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(buf + i, 1, sizeof(buf) - i, out);
}

static void put_names(FILE *out, const struct fold_set *fs, const struct jnames *j)
{
	const struct rtab *t = &fs->frames;

	fputs("\"names\":[", out);
	for (uint32_t i = 0; i < t->n; i++) {
		if (i)
			putc(',', out);
		json_write_string(out, rtab_str(t, i));
	}
	fputs("],\n\"kinds\":[", out);
	for (uint32_t i = 0; i < t->n; i++) {
		const char *mod = j->module[i] >= 0 ? rtab_str(&j->modules, (uint32_t)j->module[i])
						    : NULL;

		fprintf(out, "%s\"%s\"", i ? "," : "",
			render_frame_kind(rtab_str(t, i), rtab_len(t, i), mod, j->root[i]));
	}
	fputs("],\n\"name_modules\":[", out);
	for (uint32_t i = 0; i < t->n; i++)
		fprintf(out, "%s%d", i ? "," : "", j->module[i]);
	fputs("],\n\"modules\":[", out);
	for (uint32_t i = 0; i < j->modules.n; i++) {
		const char *path = rtab_str(&j->modules, i);

		fputs(i ? ",{\"path\":" : "{\"path\":", out);
		json_write_string(out, path);
		fputs(",\"build_id\":", out);
		json_write_string(out, path + strlen(path) + 1);
		putc('}', out);
	}
	fputs("],\n", out);
}

int render_json(const struct fold_set *fs, bool diff, render_module_fn fn, void *arg, FILE *out)
{
	struct jnames j = { 0 };
	uint32_t *order = NULL;
	bool first = true;
	int ret = fold_set_order(fs, true, &order);

	rtab_init(&j.modules);
	if (ret < 0)
		return ret;
	ret = jnames_fill(&j, fs, order, fn, arg);
	if (ret < 0)
		goto out;
	put_names(out, fs, &j);
	fputs("\"stacks\":[", out);
	for (uint32_t k = 0; k < fs->nst; k++) {
		const struct fold_stack *s = &fs->st[order[k]];
		const uint32_t *ids = fold_stack_ids(fs, s);

		if (!diff && !s->count)
			continue; /* a base's stack */
		fputs(first ? "\n[" : ",\n[", out);
		first = false;
		if (diff) {
			put_u64(out, s->base);
			putc(',', out);
		}
		put_u64(out, s->count);
		fputs(",[", out);
		for (uint32_t d = 0; d < s->depth; d++) {
			if (d)
				putc(',', out);
			put_u64(out, ids[d]);
		}
		fputs("]]", out);
	}
	fputs("]", out);
	ret = fflush(out) == EOF || ferror(out) ? -EIO : 0;
out:
	jnames_release(&j);
	free(order);
	return ret;
}
