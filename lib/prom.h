/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_PROM_H
#define CGPERF_LIB_PROM_H

/*
 * Pieces of the Prometheus text exposition (0.0.4) and of OpenMetrics
 * 1.0.0, for both programs' /metrics: label values escaped (backslash,
 * double quote and newline, the three the formats require; the rest of the
 * value, UTF-8 included, goes as is) and a family's HELP and TYPE lines.
 * Each writes through an append function, or to a stdio stream.
 * Metric and label names are the caller's constants and are not checked,
 * except those prom_pairs makes from outside keys (container labels).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Appends @n bytes at @s to what @ctx stands for. */
typedef void prom_put_fn(void *ctx, const char *s, size_t n);

/* @v (NULL: "") as a label value, without the quotes. */
void prom_label_to(prom_put_fn *put, void *ctx, const char *v);
void prom_label(FILE *f, const char *v);

/* @n pairs as ",PREFIXKEY=\"VALUE\"": every character of KEY outside
 * [a-zA-Z0-9_] written as '_' (as cAdvisor names container_label_*), a
 * pair whose written name repeats an earlier one's left out (the formats
 * forbid a label twice). @prefix is the caller's constant, not empty. */
void prom_pairs_to(prom_put_fn *put, void *ctx, const char *prefix, const char *const *keys,
		   const char *const *values, size_t n);
void prom_pairs(FILE *f, const char *prefix, const char *const *keys, const char *const *values,
		size_t n);

/* "# HELP @name @help\n# TYPE @name @type\n". With @om (OpenMetrics) a
 * counter family is named without its _total suffix, which its samples
 * keep. @help is written as given (the caller's constant text). */
void prom_family_to(prom_put_fn *put, void *ctx, bool om, const char *name, const char *type,
		    const char *help);
void prom_family(FILE *f, bool om, const char *name, const char *type, const char *help);

#endif
