/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_EVENTS_H
#define CGPERF_AGENT_EVENTS_H

/*
 * Event names as perf spells them, resolved to perf_event_attr type/config:
 * software and hardware events from a built-in table (with perf's aliases and
 * :u/:k modifiers), tracepoints "SUBSYS:EVENT" by id from tracefs, raw PMU
 * events "rHEX". Nothing here opens events or prints.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ev_kind {
	EV_SOFTWARE,
	EV_HARDWARE,
	EV_TRACEPOINT,
	EV_RAW,
};

struct ev_spec {
	char *name;    /* as the user wrote it, canonicalised ("cs" -> "context-switches") */
	enum ev_kind kind;
	uint32_t type; /* PERF_TYPE_* */
	uint64_t config;
	bool exclude_user, exclude_kernel;
	bool is_clock; /* task-clock/cpu-clock: nanoseconds, shown as msec */
};

/* The tracefs mount ("/sys/kernel/tracing" or ".../debug/tracing"), found by
 * libtracefs. When neither is mounted, tracefs is mounted at
 * /sys/kernel/tracing if the caller may (CAP_SYS_ADMIN) and the hook set by
 * ev_tracefs_on_mount() is told; NULL when it is still not there. Cached:
 * the first call decides. Not thread-safe: call it once before threads. */
const char *ev_tracefs(void);

/* @fn(path) is called when ev_tracefs() mounted tracefs itself, so that
 * the command can say so (this module does not print). */
void ev_tracefs_on_mount(void (*fn)(const char *path));

/*
 * Read events/@sys/@event/@file of the tracefs at @tracefs (through
 * libtracefs): 0 with a malloc'd NUL-terminated *@out (the caller frees) and
 * its length in *@len (if not NULL); -ENOENT when @tracefs is NULL or the
 * file is missing, -EINVAL for a name that would leave events/ ("/", ".."),
 * -EACCES and other -errno from the read.
 */
int ev_tracefs_read(const char *tracefs, const char *sys, const char *event, const char *file,
		    char **out, size_t *len);

/*
 * Resolve @name into @out. @tracefs may be NULL (tracepoints then fail).
 * Returns 0, -ENOENT for an unknown name, -EINVAL for a malformed one,
 * -ENOMEM. On success the caller frees with ev_spec_release().
 */
int ev_parse(const char *name, const char *tracefs, struct ev_spec *out);
void ev_spec_release(struct ev_spec *ev);

/*
 * Up to @max known names close to @name (edit distance, substrings), best
 * first, written as malloc'd strings into @out (at most SUGGEST_MAX of
 * lib/suggest.h). Returns how many.
 */
size_t ev_suggest(const char *name, const char *tracefs, char **out, size_t max);

/* The built-in names (canonical and aliases), for listing. */
size_t ev_builtin_count(void);
const char *ev_builtin_name(size_t i, const char **kind);

#endif
