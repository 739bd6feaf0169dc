/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_JITLOAD_H
#define CGPERF_AGENT_JITLOAD_H

/*
 * JIT perf maps loaded off the sampling thread. A perf map is the
 * container's file: a FUSE file system there can make its lookup, open or
 * read wait for as long as its daemon likes, and even a good map costs up
 * to PERFMAP_MAX_BYTES of reading (~14 ms here). So the thread that drains
 * the rings only queues a load (jitload_submit) and keeps the sample's
 * absolute address; one loader thread reads the maps in order; names are
 * made later (record at the end, run per interval), after a bounded wait
 * for loads still under way (jitload_wait).
 *
 * The file itself is read by a helper PROCESS (jitload_set_helper: the
 * agent's own binary, exec'd afresh, which sends the capped bytes back on
 * a pipe), not by the loader thread: the kernel's wait for a FUSE request
 * its daemon has taken cannot be interrupted, not even by SIGKILL, and a
 * thread stuck there would keep the whole agent from exiting. A helper
 * stuck there keeps only itself (it dies with the daemon's answer, or at
 * once if it was not stuck: PR_SET_PDEATHSIG). The loader thread waits on
 * the pipe, which any exit interrupts. Without a helper (unit tests) the
 * thread reads the file itself.
 *
 * A load that never ends (a hung FUSE daemon) keeps the loader thread, and
 * the maps queued after it, waiting: their frames stay unnamed
 * (perf-NSPID.map+0xADDR) but nothing else waits. At the end the loader is
 * not joined if busy: it is detached and frees itself if its load ever
 * returns; the process's exit ends it otherwise.
 *
 * Ownership: a job belongs to its submitter until jitload_job_free(),
 * whatever its state; the loader frees a job abandoned before it is done.
 * One submitter thread per loader (not synchronised against itself). The
 * loader thread blocks every signal, so commands that read signals from a
 * signalfd still get them.
 */

#include <stdint.h>

#include "agent/perfmap.h"

/*
 * The helper: @exe (kept, not copied; "/proc/self/exe" for the agent) is
 * run as "EXE JITLOAD_HELPER_CMD PATH" (main() dispatches it to
 * jitload_helper_main). NULL: read in the loader thread. Set before the
 * first submit.
 */
#define JITLOAD_HELPER_CMD "__read-perf-map"
void jitload_set_helper(const char *exe);
/* The helper process's main: open PATH as perfmap_load would, write a
 * header (errno, refusal reason) and at most PERFMAP_MAX_BYTES of the file
 * to stdout. Its exit status. */
int jitload_helper_main(int argc, char **argv);

/* Loads queued and not started, at most: beyond, submit says -EAGAIN. */
#define JITLOAD_MAX_QUEUED 1024

struct jitload;
struct jitload_job;

/* A loader; its thread starts at the first submit. NULL + errno. */
struct jitload *jitload_new(void);
/* Free @l (NULL ok) once every job has been freed. Never waits for a load
 * under way. */
void jitload_free(struct jitload *l);

/* Queue perfmap_load(@path). The job, or NULL + errno (EAGAIN: queue full;
 * ENOMEM; or the thread could not start). */
struct jitload_job *jitload_submit(struct jitload *l, const char *path);
/*
 * Wait until @job is done or CLOCK_MONOTONIC reaches @deadline_ns (0: do
 * not wait). 1 when done: *@map gets the map (the caller owns it; NULL on
 * failure, with the load's errno in *@err), and a later call gives NULL
 * again. 0 when still queued or loading.
 */
int jitload_wait(struct jitload_job *job, uint64_t deadline_ns, struct perfmap **map, int *err);
/* Drop @job (NULL ok), done or not; a map not taken is freed. */
void jitload_job_free(struct jitload_job *job);

/* Loads done (maps and failures), for figures. */
uint64_t jitload_done(const struct jitload *l);

#endif
