// SPDX-License-Identifier: MIT
#include "lib/strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int strv_set(char **dst, const char *s)
{
	char *v = NULL;

	if (s && !(v = strdup(s)))
		return -ENOMEM;
	free(*dst);
	*dst = v;
	return 0;
}

void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

int strv_replace(char ***v, size_t *n, char **a, size_t na)
{
	if (!a)
		return -ENOMEM;
	strv_free(*v, *n);
	*v = a;
	*n = na;
	return 0;
}

int strv_dup(char ***v, size_t *n, const char *const *src, size_t nsrc)
{
	char **a = calloc(nsrc ? nsrc : 1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < nsrc; i++) {
		a[i] = strdup(src[i]);
		if (!a[i]) {
			strv_free(a, i);
			return -ENOMEM;
		}
	}
	return strv_replace(v, n, a, nsrc);
}
