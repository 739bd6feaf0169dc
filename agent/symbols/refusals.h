/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_REFUSALS_H
#define CGPERF_AGENT_REFUSALS_H

/*
 * What the agent refused to read from the processes it profiles: the
 * counting side of lib/rootfs.c's refusal hook, for the commands'
 * figures and metrics (docs/security.md, docs/metrics.md).
 *
 * Process-wide, as the hook is: refusals_start() installs it, before the
 * threads that open files start. A refusal is counted once per distinct
 * (pid, path, reason) (the set of those seen is bounded: REFUSALS_MAX_SEEN,
 * then it starts afresh, so a flood may count a file again), and a notice
 * goes to the caller's function at most once per (pid, path, reason) and
 * at most REFUSALS_BURST per second; notices over that are only counted.
 * Thread-safe (one mutex); the notice function is called under it, on the
 * thread that was refused, and must not open container files.
 *
 * Does not print: the notice function decides. Paths are untrusted bytes:
 * print them through refusals_escape().
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/rootfs.h"

#define REFUSALS_MAX_SEEN 16384
#define REFUSALS_BURST 5

struct refusals_figures {
	uint64_t by_reason[ROOTFS_R_N]; /* distinct refused files per reason */
	uint64_t total;
	uint64_t notices_dropped; /* over the rate limit */
	uint64_t denied; /* of those, refused for want of permission (EACCES,
			  * EPERM): a capability is missing */
};

/* @path: raw, as asked inside the process's root; @reason as
 * rootfs_reason_name(). */
typedef void (*refusals_notice_fn)(void *ctx, pid_t pid, const char *path, const char *reason);

/* Count from now on; @fn (may be NULL: count only) gets the notices.
 * 0 or -ENOMEM. */
int refusals_start(refusals_notice_fn fn, void *ctx);
/* Uninstall the hook and free the set (figures are kept until the next
 * start). Call after the threads that open files are done. */
void refusals_stop(void);
void refusals_figures(struct refusals_figures *out);

/*
 * @in made printable into @out (@cap bytes, NUL-terminated): backslash as
 * "\\", control bytes and bytes >= 0x7f as "\xNN", so no terminal or log
 * reader sees an escape sequence or a line break; cut with "..." when over.
 */
void refusals_escape(const char *in, char *out, size_t cap);

#endif
