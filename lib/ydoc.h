/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_YDOC_H
#define CGPERF_LIB_YDOC_H

/*
 * A YAML configuration file read as one document (libyaml), with typed reads
 * and errors that say where: "FILE:LINE:COL: key.path: what is wrong". The
 * agent's `run` configuration and the exporter's settings file are read with
 * it; each keeps its own schema and walks the nodes itself.
 *
 * ydoc_load() caps what a hostile file can cost before the document is built
 * (nesting depth, anchors and aliases: libyaml is quadratic in both) and
 * refuses a second document. Every reader below returns 0, or -EINVAL with
 * the message written into the error buffer given to ydoc_load() (cut to its
 * size), or -ENOMEM ("FILE: out of memory"). Nothing here prints.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

struct ydoc;

struct ydoc_limits {
	int depth;         /* nested lists and mappings */
	int anchors;       /* anchors, and aliases, each */
	size_t string;     /* bytes in one scalar, NUL excluded */
};

/*
 * Parse @buf (@len bytes; NULL is empty) of file @file (a name for messages,
 * kept by pointer: it must outlive the document). 0 with *@out (free with
 * ydoc_free()), whose root may be NULL for an empty file; or -EINVAL (syntax,
 * limits, a second document) or -ENOMEM with the message in @err. @err is
 * also where later readers write theirs.
 */
int ydoc_load(const char *file, const char *buf, size_t len, const struct ydoc_limits *lim,
	      char *err, size_t errlen, struct ydoc **out);
void ydoc_free(struct ydoc *d);

/* The root node, NULL for an empty document. */
const yaml_node_t *ydoc_root(const struct ydoc *d);
const char *ydoc_file(const struct ydoc *d);

/*
 * For an unknown key with no near spelling among its mapping's keys: a hook
 * that may add a hint (" (it belongs in push.tls)") to @buf. @where is the
 * mapping's path ("" at the top).
 */
typedef void (*ydoc_hint_fn)(void *ctx, const char *key, const char *where, char *buf,
			     size_t len);
void ydoc_set_hint(struct ydoc *d, ydoc_hint_fn fn, void *ctx);

/* "FILE:LINE:COL: message" at node @n (NULL: "FILE: message"); -EINVAL. */
__attribute__((format(printf, 3, 4))) int ydoc_fail(struct ydoc *d, const yaml_node_t *n,
						    const char *fmt, ...);
__attribute__((format(printf, 3, 4))) int ydoc_fail_at(struct ydoc *d, const yaml_mark_t *m,
						       const char *fmt, ...);
/* "FILE: out of memory"; -ENOMEM. */
int ydoc_oom(struct ydoc *d);

/* A value as a message shows it: quoted, control characters as '?', cut at
 * 60 bytes with "...". */
struct ydoc_shown {
	char s[80];
};
struct ydoc_shown ydoc_show(const char *v);
/* "a list", "a mapping", "nothing (null)" or the scalar, shown. */
struct ydoc_shown ydoc_what(const yaml_node_t *n);

/* A key's path for messages: "sampling" + "frequency" -> "sampling.frequency",
 * "" + "host" -> "host"; "probes" and 2 -> "probes[2]". */
struct ydoc_name {
	char s[96];
};
struct ydoc_name ydoc_key_in(const char *where, const char *key);
struct ydoc_name ydoc_item_in(const char *list, size_t i);

const yaml_node_t *ydoc_node(const struct ydoc *d, int id);
/* A plain scalar "", "~" or "null" (any of YAML's spellings). */
bool ydoc_is_null(const yaml_node_t *n);
/* The value of @key in mapping @map, or NULL. */
const yaml_node_t *ydoc_get(const struct ydoc *d, const yaml_node_t *map, const char *key);

/* Every key of mapping @map (at path @where) is one of @keys (NULL-ended),
 * once; an unknown one gets a "did you mean" or the hint hook's words. */
int ydoc_check_keys(struct ydoc *d, const yaml_node_t *map, const char *where,
		    const char *const *keys);

/* The mapping at @key of @map into *@out: NULL when absent or null, else a
 * mapping with only @keys. */
int ydoc_section(struct ydoc *d, const yaml_node_t *map, const char *where, const char *key,
		 const char *const *keys, const yaml_node_t **out);

/*
 * The text of scalar @n for key @name: not null, no NUL or control
 * character, at most the string limit. @expected names the wanted value in
 * a type error ("a duration").
 */
int ydoc_scalar(struct ydoc *d, const yaml_node_t *n, const char *name, const char *expected,
		const char **out);

int ydoc_bool(struct ydoc *d, const yaml_node_t *n, const char *name, bool *out);
int ydoc_uint(struct ydoc *d, const yaml_node_t *n, const char *name, unsigned min,
	      unsigned max, unsigned *out);
/* lib/units.h's durations (ms, s, m, h) in milliseconds, and sizes. */
int ydoc_duration_ms(struct ydoc *d, const yaml_node_t *n, const char *name, uint64_t min,
		     uint64_t max, uint64_t *out);
int ydoc_size(struct ydoc *d, const yaml_node_t *n, const char *name, uint64_t min,
	      uint64_t max, uint64_t *out);
/* One of @names (NULL-ended): its index. */
int ydoc_enum(struct ydoc *d, const yaml_node_t *n, const char *name,
	      const char *const *names, int *out);

enum ydoc_str_flags {
	YDOC_NULLABLE = 1, /* null gives NULL */
	YDOC_EMPTY_OK = 2, /* "" is accepted */
};
/* A string into *@out (malloc'd; the old value freed). */
int ydoc_string(struct ydoc *d, const yaml_node_t *n, const char *name, int flags,
		const char *expected, char **out);

/* A check of one list item @v (at node @n, named @name); 0 or ydoc_fail(). */
typedef int (*ydoc_item_check)(struct ydoc *d, const yaml_node_t *n, const char *name,
			       const char *v);
/*
 * A list of at most @max distinct strings, each passing @check (may be
 * NULL), into (*@v, *@nv), freeing the old list (an array of malloc'd
 * strings); null is the empty list. @example shows a list in a type error.
 */
int ydoc_list(struct ydoc *d, const yaml_node_t *n, const char *name, size_t max,
	      ydoc_item_check check, const char *example, char ***v, size_t *nv);

/*
 * Plain keys as a table: each names its reader and where in the caller's
 * struct the value goes, so a section of simple settings is one call.
 * The field at @off is a bool (YDOC_F_BOOL), an unsigned (YDOC_F_UINT, in
 * @min..@max), a uint64_t (YDOC_F_DURATION_MS, YDOC_F_SIZE, in @min..@max),
 * a malloc'd char * (YDOC_F_STRING, with @flags and @expected) or an enum
 * of int size (YDOC_F_ENUM, one of @names).
 */
enum ydoc_kind { YDOC_F_BOOL, YDOC_F_UINT, YDOC_F_DURATION_MS, YDOC_F_SIZE, YDOC_F_STRING,
		 YDOC_F_ENUM };
struct ydoc_field {
	const char *key;
	enum ydoc_kind kind;
	size_t off;
	uint64_t min, max;
	int flags;
	const char *expected;
	const char *const *names;
};
/* Each of the @n @fields present in mapping @map into @base + off, in table
 * order, named "@where.KEY"; 0 or the first failure (ydoc_fail()'s). */
int ydoc_fields(struct ydoc *d, const yaml_node_t *map, const char *where,
		const struct ydoc_field *fields, size_t n, void *base);

#endif
