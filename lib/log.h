/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_LOG_H
#define CGPERF_AGENT_LOG_H

/*
 * The continuous agent's log: one line per event on stderr, logfmt
 * (ts=... level=info msg="..." key=value) or JSON, with a level threshold
 * and a flood guard: the same message (by its format string) is written at
 * most LOG_BURST times per minute, then counted and summarized. Debug lines
 * are exempt: whoever asks for them asks for every one (tests and operators
 * read per-batch debug lines as a record of what was sent).
 *
 * Thread-safe: every call may come from any thread; a line is written whole.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

#define LOG_BURST 5

/* @format: "logfmt" or "json"; @level: "debug", "info", "warn", "error".
 * 0, or -EINVAL for an unknown name. */
int log_setup(const char *format, const char *level);

/*
 * Log @msg with key/value pairs given as "key", "value" strings ending with
 * NULL: log_kv(LOG_WARN, "push failed", "collector", url, "error", text, NULL).
 */
void log_kv(enum log_level lvl, const char *msg, ...) __attribute__((sentinel));
void log_vkv(enum log_level lvl, const char *msg, va_list ap);

/* Write to @f instead of stderr (NULL: stderr again). The caller keeps @f
 * open while the log may write to it. */
void log_set_stream(FILE *f);

/* Lines suppressed by the flood guard so far. */
unsigned long log_suppressed(void);

#endif
