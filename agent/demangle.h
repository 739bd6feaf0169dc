/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_DEMANGLE_H
#define CGPERF_AGENT_DEMANGLE_H

/*
 * Symbol names as people read them: C++ (Itanium ABI, "_Z...") and Rust
 * ("_R...") mangled names turned back into source names by libiberty's
 * cplus_demangle, the demangler perf uses, with perf's two forms:
 *
 *   DEMANGLE_FULL   what `perf report -v` / `perf script -v` print:
 *                   parameters, qualifiers and clone suffixes,
 *                   "outer::inner::Klass<int>::method(int, int) [clone .constprop.0]"
 *   DEMANGLE_SHORT  what perf prints by default: no parameters, no clone
 *                   suffix, "outer::inner::Klass<int>::method"
 *   DEMANGLE_NONE   names as the symbol table has them
 *
 * A suffix from the first '@' on ("@plt" of PLT stubs, "@@GLIBCXX_3.4"
 * of versioned names) is kept as it is after the demangled name.
 *
 * Names that are not mangled (C functions, kernel symbols) come back as
 * they are, as do names longer than DEMANGLE_MAX_IN (cut by the symbol
 * table, they no longer parse) and demanglings longer than
 * DEMANGLE_MAX_OUT (pathological templates).
 */

#include <stddef.h>

#define DEMANGLE_MAX_IN 4096
#define DEMANGLE_MAX_OUT 8192

enum demangle_style {
	DEMANGLE_NONE,
	DEMANGLE_SHORT,
	DEMANGLE_FULL,
};

/*
 * "full", "short", "none" (also "true" = full, "false" = none, as YAML
 * booleans) into @style. 0 or -EINVAL.
 */
int demangle_style_parse(const char *s, enum demangle_style *style);
const char *demangle_style_name(enum demangle_style style);

/*
 * The demangled form of @name in @style: a malloc'd string the caller
 * frees, or NULL when @name is to be shown as it is (not mangled, style
 * NONE, over the length caps, or out of memory).
 */
char *demangle_name(const char *name, enum demangle_style style);

/*
 * A cache of demangled names, so each distinct symbol is demangled once
 * however many frames and intervals show it. Holds up to @max_names names
 * (0: a default of 65536); past that it starts over empty.
 * Not thread-safe. NULL + errno.
 */
struct demangle_cache;

struct demangle_cache *demangle_cache_new(enum demangle_style style, size_t max_names);
void demangle_cache_free(struct demangle_cache *c);
enum demangle_style demangle_cache_style(const struct demangle_cache *c);

/*
 * The name to show for @name: either @name itself or a string owned by
 * @c, valid until the next demangle_cache_get() on @c (which may empty
 * the cache) or demangle_cache_free(). Callers copy what they keep.
 */
const char *demangle_cache_get(struct demangle_cache *c, const char *name);

#endif
