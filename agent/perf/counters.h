/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_COUNTERS_H
#define CGPERF_AGENT_COUNTERS_H

/*
 * Counting events per cgroup: what `perf stat -a -G CG` opens. For every
 * (cgroup, event, online CPU) one perf event with PERF_FLAG_PID_CGROUP,
 * read as value + time_enabled + time_running and summed over CPUs, then
 * scaled by enabled/running the way perf does (sum first, scale the sum).
 *
 * A cgroup is a slot; slots are added and removed while counting runs, so
 * the caller can follow containers that come and go. An event the host
 * cannot count (no PMU in a VM, say) is recorded per slot as an error and
 * the other events keep counting.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/perf/events.h"

struct counter_value {
	uint64_t val;     /* raw count (ns for clocks), summed over CPUs */
	uint64_t enabled; /* ns, summed over CPUs */
	uint64_t running; /* ns, summed over CPUs */
	double scaled;    /* val * enabled / running; 0 when never running */
	int err;          /* 0, or -errno why the event could not be opened */
};

struct counters;

/* @evs and @cpus are copied. NULL + errno. */
struct counters *counters_new(const struct ev_spec *evs, size_t nev, const int *cpus,
			      size_t ncpu);
void counters_free(struct counters *c);

/*
 * Open the events for the cgroup directory @dir (an absolute path in the
 * perf_event hierarchy). Returns the slot (>= 0) or -errno: -ENOENT or
 * -ENOTDIR for a missing cgroup, -EACCES/-EPERM when perf_event_open is not
 * allowed, -EMFILE when out of file descriptors. Events the host does not
 * support are not an error here (see counter_value.err). If counting has
 * been started, the new events start at once.
 */
int counters_add(struct counters *c, const char *dir);
/* Close the slot's events; the slot number may be reused. */
void counters_remove(struct counters *c, int slot);

/* Enable every opened event (counting starts). 0 or -errno. */
int counters_start(struct counters *c);

/* Read every open event; the previous reading is kept for deltas. 0 or
 * -errno (a single failed read marks that value, it does not fail all). */
int counters_read(struct counters *c);

/* Value of @ev in @slot: since the previous counters_read() when @delta,
 * else since the start. */
void counters_get(const struct counters *c, int slot, size_t ev, bool delta,
		  struct counter_value *out);

size_t counters_nevents(const struct counters *c);
size_t counters_nfds(const struct counters *c);

#endif
