/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_SAMPLER_H
#define CGPERF_AGENT_SAMPLER_H

/*
 * Sampling events and their ring buffers: one sampling event per online
 * CPU (system-wide, optionally one per CPU per cgroup with
 * PERF_FLAG_PID_CGROUP, or per task for -p PID), each with an mmap'd ring
 * buffer whose wake-up watermark batches records instead of waking per
 * sample. Records are parsed into plain structs and handed to callbacks;
 * nothing is printed here.
 *
 * Every field read from the ring is bounds-checked against the record's
 * size: a record that does not parse is counted as malformed and skipped.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/events.h"

struct sampler_opts {
	const struct ev_spec *event; /* driving event (cpu-clock by default) */
	uint64_t freq;               /* samples/s per CPU, or 0 to use period */
	uint64_t period;
	bool callchain;              /* PERF_SAMPLE_CALLCHAIN (kernel + FP user) */
	bool user_stack;             /* PERF_SAMPLE_STACK_USER + REGS_USER (DWARF mode) */
	uint32_t stack_bytes;        /* user stack bytes to copy (e.g. 8192), multiple of 8 */
	uint64_t regs_mask;          /* sample_regs_user */
	uint32_t max_stack;          /* callchain depth cap (sysctl perf_event_max_stack) */
	const int *cpus;             /* online CPUs */
	size_t ncpu;
	const char *const *cgroup_dirs; /* absolute cgroup dirs to filter by, or NULL = all */
	size_t ncgroups;
	pid_t pid;                   /* > 0: follow this process (and its children) only */
	size_t mmap_pages;           /* data pages per ring (power of two), e.g. 64 */
};

struct sample {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t period;
	uint64_t ip;
	uint64_t cgroup_id;          /* PERF_SAMPLE_CGROUP, 0 when not available */
	bool user_mode;              /* sample taken in user space */
	const uint64_t *callchain;   /* raw, with PERF_CONTEXT_* markers */
	uint64_t nr_callchain;
	const uint64_t *regs;        /* REGS_USER, NULL if abi == NONE */
	uint64_t regs_abi;
	const uint8_t *stack;        /* STACK_USER copy, valid bytes = stack_size */
	uint64_t stack_size;
};

struct sample_mmap {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint32_t maj, min;
	uint64_t ino;
	uint32_t prot, flags;
	const char *filename;
};

struct sampler_cb {
	void *ctx;
	void (*sample)(void *ctx, const struct sample *s);
	void (*mmap)(void *ctx, const struct sample_mmap *m);
	void (*comm)(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec);
	void (*fork)(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid);
	void (*exit)(void *ctx, uint32_t pid, uint32_t tid);
	void (*lost)(void *ctx, uint64_t lost); /* PERF_RECORD_LOST / LOST_SAMPLES */
};

struct sampler_stats {
	uint64_t samples, lost, malformed, throttled, wakeups;
};

struct sampler;

/* Open (disabled) and mmap every event. NULL + errno (EACCES/EPERM for
 * permissions, ENOENT/EOPNOTSUPP when the event cannot sample here). */
struct sampler *sampler_open(const struct sampler_opts *o);
int sampler_enable(struct sampler *s);
int sampler_disable(struct sampler *s);
/* Fds to poll() for POLLIN (one per ring). */
size_t sampler_fds(const struct sampler *s, int *fds, size_t max);
/* Consume everything available in every ring, calling @cb. Returns the
 * number of records or -errno. */
int sampler_drain(struct sampler *s, const struct sampler_cb *cb);
void sampler_stats(const struct sampler *s, struct sampler_stats *out);
void sampler_close(struct sampler *s);

#endif
