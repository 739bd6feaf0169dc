/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_SLOWOPEN_H
#define CGPERF_AGENT_SLOWOPEN_H

/*
 * Files on FUSE opened by a helper process, with a bounded wait: the
 * agent's rootfs_slow_open_fn (lib/rootfs.h). Binaries, libraries and
 * debuginfo are opened on the thread that drains the sample rings when a
 * mapping is first sampled; one on a FUSE file system (a container's
 * daemon, a rootless user's fuse-overlayfs) could make that thread wait
 * for as long as the daemon likes, and uninterruptibly.
 *
 * So such a file is opened and read by a helper, the agent's own binary
 * run as "EXE __read-file --max BYTES PID PATH", which applies the rootfs
 * rules, copies at most BYTES of the file into a sealed memfd and passes
 * it back over a unix socket (SCM_RIGHTS) with the original file's stat.
 * The caller waits at most SLOWOPEN_WAIT_MS; then the file is given up
 * (-ETIMEDOUT, counted as the refusal reason "stalled"), not asked for
 * again for SLOWOPEN_RETRY_S seconds, and the helper is left to finish or
 * stay stuck alone (it holds nothing of the agent's; it dies with the
 * agent unless stuck in the kernel; it is reaped by later calls; its
 * stdin and stderr are /dev/null). While a helper that timed out on a file
 * of process P is still there, every other FUSE file of P is given up at
 * once: its daemon (often single-threaded) is still holding the first, and
 * the caller must not pay SLOWOPEN_WAIT_MS per file. At most
 * SLOWOPEN_MAX_HELPERS helpers may be outstanding: beyond, files are given
 * up at once. The memfd is a regular file: callers use it as the file.
 *
 * Thread-safe (one mutex over the retry table and the helper list).
 */

#include <sys/types.h>

#define SLOWOPEN_HELPER_CMD "__read-file"
#define SLOWOPEN_WAIT_MS 200
#define SLOWOPEN_RETRY_S 30
#define SLOWOPEN_MAX_HELPERS 16
#define SLOWOPEN_RETRY_SLOTS 256

/* Route FUSE files through the helper @exe (kept, not copied; the agent:
 * "/proc/self/exe"). NULL: open them directly again. Before threads open. */
void slowopen_install(const char *exe);
/* The helper's main (argv[0] is SLOWOPEN_HELPER_CMD). Its exit status. */
int slowopen_helper_main(int argc, char **argv);

#endif
