// SPDX-License-Identifier: MIT
/*
 * forkstorm [SECONDS] [FORKS_PER_S] [CHILD_MS]: a parent that sleeps and
 * forks short-lived children, as a worker pool, a shell loop or
 * PostgreSQL's postmaster does. The parent itself is almost never sampled;
 * each child names itself "storm-child" (a COMM record, no exec), burns
 * CHILD_MS (default 3) of CPU in storm_child -> storm_work -> storm_leaf
 * and exits. Defaults: 10 s, 200 forks a second.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static volatile unsigned long sink;

static double cpu_now(void)
{
	return wl_seconds(CLOCK_THREAD_CPUTIME_ID);
}

/* Called by storm_leaf so that it is no leaf: GCC omits the frame pointer
 * of leaves, and the frame-pointer walk would skip storm_work. */
NOINLINE void storm_touch(void)
{
	sink++;
}

NOINLINE void storm_leaf(void)
{
	storm_touch();
	for (unsigned long i = 0; i < 20000; i++)
		sink = sink * 6364136223846793005ul + 1442695040888963407ul;
}

NOINLINE void storm_work(double until)
{
	while (cpu_now() < until)
		storm_leaf();
	sink++;
}

NOINLINE void storm_child(double ms)
{
	prctl(PR_SET_NAME, "storm-child", 0, 0, 0);
	storm_work(cpu_now() + ms / 1000.0);
	sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? strtod(argv[1], NULL) : 10.0;
	double rate = argc > 2 ? strtod(argv[2], NULL) : 200.0;
	double ms = argc > 3 ? strtod(argv[3], NULL) : 3.0;
	double start = now(), next = start;
	unsigned long forks = 0;

	if (rate <= 0 || rate > 10000)
		rate = 200;
	while (now() - start < secs) {
		pid_t pid = fork();

		if (pid == 0) {
			storm_child(ms);
			_exit(0);
		}
		if (pid > 0)
			forks++;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		/* Sleep to the next slot: the parent itself barely runs. */
		next += 1.0 / rate;
		double d = next - now();

		if (d > 0) {
			struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};

			nanosleep(&ts, NULL);
		}
	}
	while (wait(NULL) > 0)
		;
	return forks ? 0 : 1;
}
