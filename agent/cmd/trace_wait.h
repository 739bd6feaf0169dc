/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_CMD_TRACE_WAIT_H
#define CGPERF_AGENT_CMD_TRACE_WAIT_H

/*
 * `trace -G CG` probes whose binary is not among CG's processes yet
 * (trace_wait.c): a u: or sdt: probe that does not resolve waits, and is
 * placed when a process that maps the binary appears in the cgroups
 * (`trace -G pg -e sdt:postgresql:query__start` started before
 * PostgreSQL). Until then its slot in struct trace holds only its spec
 * and label, and no sampler.
 *
 * The waiting set belongs to struct trace (t->wait) and is freed with
 * trace_wait_free(). The module prints to stderr, as the command does.
 */

#include <stdbool.h>
#include <stddef.h>

struct trace;
struct tprobe;
struct sampler_opts;
struct trace_wait;

/* Opens @tp's samplers from @base (cmd_trace.c's open_probe). 0 or -errno. */
typedef int trace_place_fn(struct trace *t, struct tprobe *tp, const struct sampler_opts *base,
			   const char *filter);

/* Whether probe @spec, which failed to resolve with @rc, may wait: a
 * binary not found (-ENOENT) for a u: or sdt: probe, with -G and no -p,
 * and not a --latency endpoint. */
bool trace_wait_may(int rc, const char *spec, bool groups, long pid, bool latency);

/* Make slot @idx of @t (not resolved) a probe waiting for @spec's binary,
 * and say so with @why (probe_resolve's message). 0 or -ENOMEM. */
int trace_wait_add(struct trace *t, size_t idx, const char *spec, const char *why);

/* Whether slot @idx is still waiting (@w may be NULL: no). */
bool trace_wait_pending(const struct trace_wait *w, size_t idx);

/* What placing needs: @base (copied; what it points to, the CPUs and the
 * -G cgroup directories, must outlive the trace) and the --filter. */
void trace_wait_arm(struct trace_wait *w, const struct sampler_opts *base, const char *filter);

/* Look again, at most every 200 ms, among the processes of the -G
 * cgroups; place, with @place, and enable the probes whose binary came.
 * How many were placed (the caller then polls their rings too), 0 if
 * none; a probe that resolves but cannot be opened is reported and given
 * up. */
int trace_wait_poll(struct trace *t, trace_place_fn *place);

/* On stderr, the probes still waiting (never placed). */
void trace_wait_report(const struct trace *t);

void trace_wait_free(struct trace_wait *w);

#endif
