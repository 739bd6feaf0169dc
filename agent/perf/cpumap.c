// SPDX-License-Identifier: MIT
#include "agent/perf/cpumap.h"
#include "lib/grow.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CPUMAP_MAX 65536 /* far above any machine; bounds bad input */

static int parse_num(const char **p, long *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v < 0 || v >= CPUMAP_MAX)
		return -EINVAL;
	*p = end;
	*out = v;
	return 0;
}

int cpumap_parse(const char *text, int **out)
{
	const char *p = text;
	int *v = NULL, n = 0;
	size_t cap = 0;

	while (*p && *p != '\n') {
		long lo, hi;

		if (parse_num(&p, &lo) < 0)
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_num(&p, &hi) < 0 || hi < lo)
				goto bad;
		}
		for (long c = lo; c <= hi; c++) {
			if (GROW_ARRAY(v, n, cap, 16) < 0) {
				free(v);
				return -ENOMEM;
			}
			if (n >= CPUMAP_MAX)
				goto bad;
			v[n++] = (int)c;
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			goto bad;
	}
	if (!n)
		goto bad;
	*out = v;
	return n;
bad:
	free(v);
	return -EINVAL;
}

int cpumap_online(int **out)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	return cpumap_parse(buf, out);
}
