/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_DYNLIB_H
#define CGPERF_LIB_DYNLIB_H

/*
 * Libraries loaded on first use (dlopen) instead of linked. A shared
 * library costs every start of the binary its loading, relocation and
 * constructors, whether or not the command run uses it: libcurl brings
 * ~30 libraries (TLS, Kerberos, LDAP, ...) and ~3.5 ms of CPU to every
 * `stat` and `record` that never speaks HTTP. A library only some commands
 * use is loaded by its first user through a table of the functions it
 * calls; the package still depends on it (packaging/debian/control).
 */

#include <stddef.h>

struct dynlib_sym {
	const char *name;
	void **fn; /* where its address goes: (void **)&table.member */
};

/*
 * dlopen @soname (RTLD_NOW | RTLD_LOCAL) and resolve each of @syms into
 * its slot. 0, or -1 with the reason (the loader's, or the symbol that is
 * missing) in @why (@whylen bytes, may be 0); the slots are then all
 * NULL. A library that loaded stays loaded for the life of the process.
 */
int dynlib_load(const char *soname, const struct dynlib_sym *syms, size_t n, char *why,
		size_t whylen);

#endif
