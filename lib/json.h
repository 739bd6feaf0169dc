/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_JSON_H
#define CGPERF_AGENT_JSON_H

#include <stdio.h>

/* Write @s as a JSON string literal (quotes included): control characters,
 * quotes and backslashes escaped, invalid UTF-8 bytes replaced by U+FFFD. */
void json_write_string(FILE *f, const char *s);

/* Write a finite double with up to @prec decimals, or null when not finite. */
void json_write_double(FILE *f, double v, int prec);

#endif
