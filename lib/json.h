/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_JSON_H
#define CGPERF_LIB_JSON_H

/*
 * JSON string literals for hostile text (cgroup, process and file names):
 * quotes and backslashes escaped, \n \r \t as such, other control
 * characters and DEL as \u00XX, and each byte that starts no well-formed
 * UTF-8 sequence (lib/utf8.h) as \ufffd, so the output is valid JSON
 * whatever the input. One writer, two sinks: a stdio stream, or any
 * append function (the exporter's pages).
 */

#include <stddef.h>
#include <stdio.h>

/* Appends @n bytes at @s to what @ctx stands for. */
typedef void json_put_fn(void *ctx, const char *s, size_t n);

/* Write @s (NULL: "") as a JSON string literal, quotes included, through
 * @put. */
void json_string_to(json_put_fn *put, void *ctx, const char *s);

/* The same, to @f. */
void json_write_string(FILE *f, const char *s);

/* Write a finite double with up to @prec decimals, or null when not finite. */
void json_write_double(FILE *f, double v, int prec);

#endif
