/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_STRV_H
#define CGPERF_LIB_STRV_H

/*
 * Owned strings and arrays of them, as configuration structs hold them: a
 * field is NULL or a malloc'd string, a list a malloc'd array of @n malloc'd
 * strings. Setters replace the old value only on success.
 */

#include <stddef.h>

/* *@dst becomes a copy of @s (NULL: NULL), the old one freed. 0 or -ENOMEM
 * (then *@dst is unchanged). */
int strv_set(char **dst, const char *s);

/* Free @n strings of @v and @v; NULL is fine. */
void strv_free(char **v, size_t n);

/* (*@v, *@n) become a copy of the @nsrc strings of @src (never a NULL array,
 * even when empty), the old list freed. 0 or -ENOMEM (then unchanged). */
int strv_dup(char ***v, size_t *n, const char *const *src, size_t nsrc);

/* (*@v, *@n) become (@a, @na), the old list freed; -ENOMEM (and nothing
 * changes) when @a is NULL, as when its allocation failed. */
int strv_replace(char ***v, size_t *n, char **a, size_t na);

#endif
