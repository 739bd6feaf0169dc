// SPDX-License-Identifier: MIT
/* spin [SECONDS]: burn one CPU for SECONDS (default: forever). */
#include <stdlib.h>
#include <time.h>

#include "workload.h"

int main(int argc, char **argv)
{
	double secs = argc > 1 ? strtod(argv[1], NULL) : 0, end = now() + secs;
	volatile unsigned long x = 0;

	for (;;) {
		for (int i = 0; i < 1000000; i++)
			x += (unsigned long)i;
		if (secs > 0 && now() >= end)
			return 0;
	}
}
