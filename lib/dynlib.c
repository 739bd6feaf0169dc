// SPDX-License-Identifier: MIT
/* Libraries loaded on first use (see dynlib.h). */
#include "lib/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>

static void clear(const struct dynlib_sym *syms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*syms[i].fn = NULL;
}

int dynlib_load(const char *soname, const struct dynlib_sym *syms, size_t n, char *why,
		size_t whylen)
{
	void *l = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	const char *e;

	clear(syms, n);
	if (!l) {
		e = dlerror();
		if (whylen)
			snprintf(why, whylen, "%s", e ? e : soname);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		*syms[i].fn = dlsym(l, syms[i].name);
		if (!*syms[i].fn) {
			if (whylen)
				snprintf(why, whylen, "%s: no symbol %s", soname, syms[i].name);
			clear(syms, n);
			dlclose(l);
			return -1;
		}
	}
	return 0;
}
