// SPDX-License-Identifier: MIT
/*
 * spin [SECONDS [PERCENT]]: burn one CPU for SECONDS (0 or none: forever);
 * with PERCENT, busy that share of every 10 ms and asleep the rest (a
 * cgroup with some CPU in it, without taking a whole core from the tests
 * running beside).
 */
#include <stdlib.h>
#include <time.h>

#include "workload.h"

int main(int argc, char **argv)
{
	double secs = argc > 1 ? strtod(argv[1], NULL) : 0, end = now() + secs;
	double pct = argc > 2 ? strtod(argv[2], NULL) : 100;
	double busy = 0.01 * pct / 100;
	volatile unsigned long x = 0;

	if (pct <= 0 || pct > 100)
		pct = 100, busy = 0.01;
	for (;;) {
		double t0 = now();

		do {
			for (int i = 0; i < 100000; i++)
				x += (unsigned long)i;
		} while (now() - t0 < busy);
		if (secs > 0 && now() >= end)
			return 0;
		if (pct < 100) {
			double rest = 0.01 - (now() - t0);
			struct timespec ts = { 0, (long)(rest * 1e9) };

			if (rest > 0)
				nanosleep(&ts, NULL);
		}
	}
}
