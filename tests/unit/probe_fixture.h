/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_TESTS_PROBE_FIXTURE_H
#define CGPERF_TESTS_PROBE_FIXTURE_H

/*
 * What test_probe.c and test_probe_attach.c share: the function they probe
 * in their own binary, and resolving a spec with the test failed on an
 * unexpected answer.
 */

#include <stddef.h>

struct probe;

/* The function the tests probe in their own binary: returns 3 * @x. */
unsigned long probe_target(unsigned long x);

/* Resolve @spec, failing the test with probe_resolve's own message. */
void resolve_ok(const char *spec, const int *pids, size_t npids, struct probe *p);

/* Resolve @spec expecting failure @want, with every one of the
 * NULL-terminated @needles in the message, and the output left unwritten. */
void resolve_fails(const char *spec, const int *pids, size_t npids, int want,
		   const char *const *needles);

#endif
