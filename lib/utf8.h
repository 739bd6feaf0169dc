/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_UTF8_H
#define CGPERF_LIB_UTF8_H

/*
 * UTF-8 as RFC 3629 has it: shortest forms only, no surrogates
 * (U+D800..U+DFFF), nothing past U+10FFFF. Every caller that checks or
 * cleans text from outside (the wire's strings, JSON strings, SVG text)
 * uses these, so they agree on what is valid. No allocation, no state.
 */

#include <stddef.h>
#include <stdint.h>

/* The bytes of the well-formed sequence at @s (@n > 0 bytes left), 1 to 4,
 * with its code point in *@cp when @cp is not NULL; 0 when @s does not
 * start one (then *@cp is left alone). */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

/* How many of the @n bytes at @s are valid UTF-8 before the first byte
 * that starts no well-formed sequence: @n when all are. */
size_t utf8_valid(const char *s, size_t n);

#endif
