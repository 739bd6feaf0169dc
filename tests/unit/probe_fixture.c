// SPDX-License-Identifier: MIT
/* The helpers of probe_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "agent/perf/probe.h"
#include "tests/unit/probe_fixture.h"

static volatile unsigned long sink;

__attribute__((noinline, noclone)) unsigned long probe_target(unsigned long x)
{
	__asm__ volatile("" ::: "memory");
	sink += x;
	return x * 3;
}

/* Resolve, failing the test with probe_resolve's own message. */
void resolve_ok(const char *spec, const int *pids, size_t npids, struct probe *p)
{
	char err[1024] = "";
	int ret = probe_resolve(spec, pids, npids, p, err, sizeof(err));

	if (ret != 0)
		fail_msg("\"%s\": %d: %s", spec, ret, err);
}

/* Resolve expecting failure @want, with every one of @needles in the message. */
void resolve_fails(const char *spec, const int *pids, size_t npids, int want,
		   const char *const *needles)
{
	struct probe p;
	char err[2048] = "";
	int ret;

	memset(&p, 0xa5, sizeof(p));
	ret = probe_resolve(spec, pids, npids, &p, err, sizeof(err));
	if (ret != want)
		fail_msg("\"%s\": got %d, want %d (%s)", spec, ret, want, err);
	/* out-parameters are written only on success */
	for (size_t i = 0; i < sizeof(p); i++) {
		if (((unsigned char *)&p)[i] != 0xa5)
			fail_msg("\"%s\": output written on failure", spec);
	}
	if (!err[0])
		fail_msg("\"%s\": no message", spec);
	for (size_t i = 0; needles && needles[i]; i++) {
		if (!strstr(err, needles[i]))
			fail_msg("\"%s\": message lacks \"%s\": %s", spec, needles[i], err);
	}
}
