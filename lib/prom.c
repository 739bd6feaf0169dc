// SPDX-License-Identifier: MIT
#include "lib/prom.h"

#include <string.h>

static void put_str(prom_put_fn *put, void *ctx, const char *s)
{
	put(ctx, s, strlen(s));
}

void prom_label_to(prom_put_fn *put, void *ctx, const char *v)
{
	const char *run = v ? v : "";

	for (v = run; *v; v++) {
		const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;

		if (!esc)
			continue;
		if (v > run)
			put(ctx, run, (size_t)(v - run));
		put(ctx, esc, 2);
		run = v + 1;
	}
	if (v > run)
		put(ctx, run, (size_t)(v - run));
}

static char name_char(char c)
{
	bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

	return ok ? c : '_';
}

/* Whether keys @a and @b are written as the same label name. */
static bool same_name(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (name_char(*a) != name_char(*b))
			return false;
	return !*a && !*b;
}

void prom_pairs_to(prom_put_fn *put, void *ctx, const char *prefix, const char *const *keys,
		   const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = same_name(keys[i], keys[j]);
		if (dup)
			continue;
		put_str(put, ctx, ",");
		put_str(put, ctx, prefix);
		for (const char *k = keys[i]; *k; k++) {
			char c = name_char(*k);

			put(ctx, &c, 1);
		}
		put_str(put, ctx, "=\"");
		prom_label_to(put, ctx, values[i]);
		put_str(put, ctx, "\"");
	}
}

void prom_family_to(prom_put_fn *put, void *ctx, bool om, const char *name, const char *type,
		    const char *help)
{
	size_t n = strlen(name);

	if (om && !strcmp(type, "counter") && n > 6 && !strcmp(name + n - 6, "_total"))
		n -= 6;
	put_str(put, ctx, "# HELP ");
	put(ctx, name, n);
	put_str(put, ctx, " ");
	put_str(put, ctx, help);
	put_str(put, ctx, "\n# TYPE ");
	put(ctx, name, n);
	put_str(put, ctx, " ");
	put_str(put, ctx, type);
	put_str(put, ctx, "\n");
}

static void put_file(void *ctx, const char *s, size_t n)
{
	fwrite(s, 1, n, ctx);
}

void prom_label(FILE *f, const char *v)
{
	prom_label_to(put_file, f, v);
}

void prom_pairs(FILE *f, const char *prefix, const char *const *keys, const char *const *values,
		size_t n)
{
	prom_pairs_to(put_file, f, prefix, keys, values, n);
}

void prom_family(FILE *f, bool om, const char *name, const char *type, const char *help)
{
	prom_family_to(put_file, f, om, name, type, help);
}
