// SPDX-License-Identifier: MIT
#include "agent/stacks/fold.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	uint64_t hash;
	uint64_t value;
	size_t len;
	unsigned char *key; /* NULL = empty */
};

struct fold {
	struct entry *v;
	size_t cap, n, max;
	uint64_t refused;
};

/* FNV-1a, 64-bit, finished with a multiply-xorshift to spread low bits. */
static uint64_t hash_bytes(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

struct fold *fold_new(void)
{
	struct fold *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->cap = 1024;
	f->v = calloc(f->cap, sizeof(*f->v));
	if (!f->v) {
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	return f;
}

void fold_free(struct fold *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->cap; i++)
		free(f->v[i].key);
	free(f->v);
	free(f);
}

void fold_set_limit(struct fold *f, size_t max_keys)
{
	f->max = max_keys;
}

uint64_t fold_refused(const struct fold *f)
{
	return f->refused;
}

static int grow(struct fold *f)
{
	size_t ncap = f->cap * 2;
	struct entry *nv = calloc(ncap, sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < f->cap; i++) {
		struct entry *e = &f->v[i];

		if (!e->key)
			continue;
		for (size_t j = e->hash & (ncap - 1);; j = (j + 1) & (ncap - 1)) {
			if (!nv[j].key) {
				nv[j] = *e;
				break;
			}
		}
	}
	free(f->v);
	f->v = nv;
	f->cap = ncap;
	return 0;
}

uint64_t *fold_slot(struct fold *f, const void *key, size_t len)
{
	uint64_t h = hash_bytes(key, len);
	size_t mask = f->cap - 1, i;

	for (i = h & mask;; i = (i + 1) & mask) {
		struct entry *e = &f->v[i];

		if (!e->key)
			break;
		if (e->hash == h && e->len == len && !memcmp(e->key, key, len))
			return &e->value;
	}
	if (f->max && f->n >= f->max) {
		f->refused++;
		return NULL;
	}
	if ((f->n + 1) * 4 > f->cap * 3) {
		if (grow(f) < 0)
			return NULL;
		mask = f->cap - 1;
		for (i = h & mask; f->v[i].key; i = (i + 1) & mask)
			;
	}
	/* One extra NUL so string keys can be used as C strings. */
	f->v[i].key = malloc(len + 1);
	if (!f->v[i].key)
		return NULL;
	memcpy(f->v[i].key, key, len);
	f->v[i].key[len] = '\0';
	f->v[i].len = len;
	f->v[i].hash = h;
	f->v[i].value = 0;
	f->n++;
	return &f->v[i].value;
}

size_t fold_count(const struct fold *f)
{
	return f->n;
}

void fold_foreach(const struct fold *f,
		  void (*cb)(void *ctx, const void *key, size_t len, uint64_t value), void *ctx)
{
	for (size_t i = 0; i < f->cap; i++)
		if (f->v[i].key)
			cb(ctx, f->v[i].key, f->v[i].len, f->v[i].value);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a;
	const struct entry *y = *(const struct entry *const *)b;

	return strcmp((const char *)x->key, (const char *)y->key);
}

int fold_write(const struct fold *f, FILE *out)
{
	const struct entry **v = malloc((f->n + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < f->cap; i++)
		if (f->v[i].key)
			v[n++] = &f->v[i];
	qsort(v, n, sizeof(*v), cmp_entry);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %llu\n", (const char *)v[i]->key,
			(unsigned long long)v[i]->value);
	free(v);
	return ferror(out) ? -EIO : 0;
}

void fold_sanitize(char *name)
{
	for (unsigned char *p = (unsigned char *)name; *p; p++) {
		if (*p == ';')
			*p = ':';
		else if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
}
