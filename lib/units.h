/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_UNITS_H
#define CGPERF_LIB_UNITS_H

/*
 * Durations and sizes as people write them in a configuration or on a
 * command line, one grammar for the agent and the exporter.
 *
 * A duration is one or more NUMBER UNIT parts, summed: "90s", "1h30m",
 * "1h 30m", "250ms". Blanks may separate the parts and a number from its
 * unit. Numbers are whole and unsigned. A size is one whole number of bytes
 * with an optional unit, case-insensitive: B, KiB, MiB, GiB, TiB (powers of
 * 1024) or kB, MB, GB, TB (powers of 1000).
 *
 * Every call returns 0 or -EINVAL (not that shape), -ERANGE (too large for
 * the result); @out is written only on success. Nothing here prints.
 */

#include <stddef.h>
#include <stdint.h>

#define UNITS_KIB UINT64_C(1024)
#define UNITS_MIB (1024 * UNITS_KIB)
#define UNITS_GIB (1024 * UNITS_MIB)
#define UNITS_TIB (1024 * UNITS_GIB)

/* Decimal digits at *@s into *@out, *@s moved past them: -EINVAL without a
 * digit, -ERANGE over 64 bits. */
int units_digits(const char **s, uint64_t *out);

/* Units ms, s, m, h; the result in milliseconds (the agent's settings). */
int units_duration_ms(const char *s, uint64_t *out);

/* Units ms, s, m, h, d; the result in nanoseconds (the exporter's
 * retention and expiry). */
int units_duration_ns(const char *s, uint64_t *out);

/* A size in bytes, at most INT64_MAX. */
int units_size(const char *s, uint64_t *out);

/* The shortest exact spelling of @ms: "1h", "90s", "1500ms". */
void units_format_duration_ms(uint64_t ms, char *buf, size_t len);

/* The largest binary unit that divides @bytes: "256MiB", "1000" (no unit). */
void units_format_size(uint64_t bytes, char *buf, size_t len);

#endif
