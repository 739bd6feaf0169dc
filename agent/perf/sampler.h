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
#include <linux/perf_event.h>
#include <sys/types.h>

#include "agent/perf/events.h"

/* Newer than some kernel headers this builds against. */
#ifndef PERF_SAMPLE_CGROUP
#define PERF_SAMPLE_CGROUP (1U << 21)
#endif
#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

struct perf_event_attr;

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
	/* Probes: when set, type/config/config1/config2 come from here and
	 * @event is not used (uprobe PMU: config1 = path, config2 = offset). */
	const struct perf_event_attr *base_attr;
	bool raw;                    /* PERF_SAMPLE_RAW: tracepoint fields */
	bool clock_monotonic;        /* sample times from CLOCK_MONOTONIC (use_clockid) */
	bool context_switch;         /* PERF_RECORD_SWITCH records (attr.context_switch) */
	bool cgroups_later;          /* cgroup mode, cgroups given by sampler_add_cgroup() */
	bool kernel_callchain_only;  /* no user part in the callchain (exclude_callchain_user:
				      * DWARF unwinds the user stack copy instead) */
	/* Without @user_stack, a nonzero @regs_mask still asks for
	 * PERF_SAMPLE_REGS_USER alone (probe arguments in registers). */
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
	const void *raw;             /* PERF_SAMPLE_RAW payload (tracepoint record) */
	uint32_t raw_size;
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

/* A context switch (PERF_RECORD_SWITCH[_CPU_WIDE]): @tid of @pid went off
 * (@out) or on the CPU at @time. @preempt: switched out while runnable. */
struct sample_switch {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	bool out, preempt;
};

struct sampler_cb {
	void *ctx;
	void (*sample)(void *ctx, const struct sample *s);
	void (*mmap)(void *ctx, const struct sample_mmap *m);
	/* @time: the record's (the sample clock), 0 unknown; see procmaps_comm() */
	void (*comm)(void *ctx, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		     uint64_t time);
	void (*fork)(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid);
	void (*exit)(void *ctx, uint32_t pid, uint32_t tid);
	void (*lost)(void *ctx, uint64_t lost); /* PERF_RECORD_LOST / LOST_SAMPLES */
	void (*cswitch)(void *ctx, const struct sample_switch *sw); /* with context_switch */
};

struct sampler_stats {
	uint64_t samples, lost, malformed, throttled, wakeups;
	/* Additions: */
	uint64_t wrapped;            /* records reassembled across the ring's end */
	uint64_t records;            /* records walked, of every type */
};

struct sampler;

/* Open (disabled) and mmap every event. NULL + errno (EACCES/EPERM for
 * permissions, ENOENT/EOPNOTSUPP when the event cannot sample here). */
struct sampler *sampler_open(const struct sampler_opts *o);
int sampler_enable(struct sampler *s);
/* Kernel filter for tracepoint events ("nr_sector > 200"), on every event.
 * 0 or -errno (-EINVAL when the kernel rejects the expression). */
int sampler_set_filter(struct sampler *s, const char *filter);
int sampler_disable(struct sampler *s);
/* Fds to poll() for POLLIN (one per ring): writes at most @max into @fds
 * and returns how many there are in all (call with @max 0 to size @fds). */
size_t sampler_fds(const struct sampler *s, int *fds, size_t max);
/* Consume everything available in every ring, calling @cb. Returns the
 * number of records or -errno. */
int sampler_drain(struct sampler *s, const struct sampler_cb *cb);
void sampler_stats(const struct sampler *s, struct sampler_stats *out);
void sampler_close(struct sampler *s);

/*
 * Cgroups that come and go (@cgroups_later, with ncgroups 0): sampler_open()
 * opens on each CPU only a ring owner, a software dummy event that writes
 * nothing; sampler_add_cgroup() opens the event of the cgroup directory
 * @dir (absolute) on every CPU, redirected into that CPU's ring, filtered as
 * the last sampler_set_filter() said and enabled when the sampler is.
 * Returns a handle > 0 for sampler_remove_cgroup(), which closes them
 * (their records already in the rings stay), or -errno (-ENOENT: no such
 * cgroup, -EINVAL: not opened with @cgroups_later).
 */
int sampler_add_cgroup(struct sampler *s, const char *dir);
int sampler_remove_cgroup(struct sampler *s, int handle);

/*
 * Additions.
 *
 * Callback lifetime: every pointer handed to a callback (callchain, regs,
 * stack, filename, comm) points into the ring or a scratch buffer and is
 * valid only during that call; copy what must outlive it. Samples of one
 * ring arrive in the order the kernel wrote them (time order for samples of
 * one CPU); rings are drained one after the other, so callers that need a
 * global order sort by time. sampler_stats.wakeups counts ring reads that
 * found new data; samples/lost/throttled/malformed are running totals.
 * sampler_drain accepts a NULL @cb (records are then only counted).
 *
 * Event layout (see the design note in sampler.c): one ring per CPU. In
 * cgroup mode the events of the other cgroups on a CPU are redirected into
 * that CPU's ring with PERF_EVENT_IOC_SET_OUTPUT, and every event asks for
 * the side-band records (mmap, comm, fork/exit): the kernel filters those
 * by the event's cgroup, so each event reports exactly the tasks it
 * samples. Nested directories in cgroup_dirs sample (and report) a task
 * once per matching directory. In pid mode every thread of the process at
 * open time gets one event per CPU (inherit=1 follows threads and children
 * created later), all redirected into the CPU's ring.
 *
 * opts: mmap_pages 0 means 64; otherwise a power of two. stack_bytes must
 * be a non-zero multiple of 8 up to 65528 when user_stack is set.
 * cgroup_dirs and pid > 0 are exclusive (EINVAL). max_stack above the
 * sysctl fails with EOVERFLOW from the kernel.
 */

/* What a parser must know about the records of a ring. */
struct sampler_layout {
	uint64_t sample_type; /* PERF_SAMPLE_* the events were opened with */
	uint64_t regs_mask;   /* sample_regs_user */
	bool sample_id_all;   /* non-sample records end with the sample_id fields */
};

/* The layout @s opened its events with. PERF_SAMPLE_CGROUP is absent when
 * the kernel rejected it (samples then carry cgroup_id 0). */
void sampler_layout(const struct sampler *s, struct sampler_layout *out);

/*
 * Parse one record at @rec (8-byte aligned), of which @len bytes are
 * readable; the record's own header.size must fit in @len. Calls the
 * matching callback of @cb (may be NULL) and updates @st. Returns 0 when
 * the record was parsed or is of a type not handled here (ignored),
 * -EBADMSG when it is malformed (counted in st->malformed, no callback),
 * -EINVAL for a layout this parser cannot read (sample types other than
 * IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD, CALLCHAIN,
 * REGS_USER, STACK_USER, CGROUP) or a misaligned @rec.
 */
int sampler_parse_record(const struct sampler_layout *l, const void *rec, size_t len,
			 const struct sampler_cb *cb, struct sampler_stats *st);

struct perf_event_mmap_page;

/*
 * Walk one ring: @pg is its control page, @data its @data_size bytes (a
 * power of two) of records. Reads data_head with acquire semantics, parses
 * every record from data_tail up to it (records that wrap around the end
 * are copied into @scratch, @scratch_size bytes, 65536 holds any record)
 * and stores data_tail with release semantics. A record whose size is
 * under 8, not a multiple of 8, or beyond data_head, or a head more than
 * @data_size ahead of the tail, means the ring is corrupt: one malformed
 * is counted and everything up to data_head is dropped. Returns the
 * number of records walked or -EINVAL. Exposed for tests and fuzzing;
 * sampler_drain calls it for every ring.
 */
int sampler_ring_read(const struct sampler_layout *l, struct perf_event_mmap_page *pg,
		      const uint8_t *data, uint64_t data_size, uint8_t *scratch,
		      size_t scratch_size, const struct sampler_cb *cb, struct sampler_stats *st);

/* /proc/sys/kernel/perf_event_max_stack, the default and the cap for
 * opts.max_stack: the value (> 0) or -errno. */
int sampler_max_stack_default(void);

#endif
