/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_TESTS_TESTFIX_H
#define CGPERF_TESTS_TESTFIX_H

/*
 * Fixtures that live outside a test: the programs `make build-tests` built
 * beside it (the workloads) and the host's cgroup hierarchies. Linked into
 * every unit test with testlib. Like testlib, these fail (or skip) the
 * running test instead of returning errors.
 */

#include <stdbool.h>
#include <stddef.h>

/* The build directory: $BUILD, or "build" when it is unset or empty. */
const char *tf_build_dir(void);

/* The path of workload @name, tf_build_dir()/workloads/@name, in @buf;
 * fails the test when it is not there (make build-tests builds it). */
void tf_workload(char *buf, size_t size, const char *name);

/* The path of the host's cgroup2 mount or, with @perf, of the hierarchy
 * perf_event cgroups are opened in (cg_mounts_perf()): malloc'd, the caller
 * frees it. Skips the test, saying why, when the host has none. */
char *tf_cgroup_mount(bool perf);

#endif
