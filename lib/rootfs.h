/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_ROOTFS_H
#define CGPERF_AGENT_ROOTFS_H

/*
 * Opening files that belong to someone else: paths inside another
 * process's root (a container's /tmp/perf-PID.map, its binaries, its
 * /usr/lib/debug), resolved as that process would see them and never
 * outside, with no way for the file's owner to make the agent block,
 * follow a link into the host, or read without bound. See the essay at
 * the head of rootfs.c and docs/security.md for the rules.
 *
 * Every open returns a read-only fd (O_CLOEXEC) on a REGULAR file of a
 * disk-like filesystem, or a negative errno:
 *   -ENOENT, -ENOTDIR, -EACCES  as open(2) says
 *   -ELOOP     a magic link (/proc/PID/fd/N, .../exe, .../root) on the way,
 *              or more than ROOTFS_MAX_HOPS symbolic links
 *   -EISDIR    a directory
 *   -EINVAL    not a regular file: FIFO, socket, character or block device
 *   -EPERM     a file of a pseudo filesystem (procfs, sysfs, debugfs, ...):
 *              /proc/self/environ would be the agent's own
 *   -EFBIG     larger than the caller's size cap
 *   -ESRCH     the process behind a /proc/PID/root path is gone
 * Devices and FIFOs are never opened for reading, only looked at (O_PATH),
 * so no open has a side effect or waits for a writer.
 *
 * Library module: does not print. Global state: the test switch
 * rootfs_force_walk() and the refusal hook below, both set before any
 * thread opens a file.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Symbolic links followed in one resolution, as the kernel's own limit. */
#define ROOTFS_MAX_HOPS 40
/* No cap on the file size. */
#define ROOTFS_NO_CAP UINT64_MAX
/*
 * The largest ELF file (binary, library, separate debuginfo) the agent
 * opens: real ones stay well below (a libxul.so debuginfo is ~3 GB); a
 * larger one is a sparse decoy. Build with -DROOTFS_ELF_MAX=... to change.
 */
#ifndef ROOTFS_ELF_MAX
#define ROOTFS_ELF_MAX (4ull << 30)
#endif

/*
 * Open @path inside the directory @rootfd (any fd on a directory, O_PATH is
 * enough) as if @rootfd were "/": absolute symbolic links and ".." stop at
 * it. @max_size: refuse larger files (-EFBIG), ROOTFS_NO_CAP for none.
 * @st (may be NULL) receives the file's stat. The fd, or -errno.
 */
int rootfs_openat(int rootfd, const char *path, uint64_t max_size, struct stat *st);

/*
 * The same with the root given by name: "" or "/" is the host's root (host
 * paths are resolved the ordinary way, the host being trusted, but the file
 * rules above still hold); anything else is opened as a directory first
 * ("/proc/PID/root": the root of that process).
 */
int rootfs_open(const char *root, const char *path, uint64_t max_size, struct stat *st);

/*
 * For callers that carry joined paths: "/proc/PID/root/REST" is REST
 * resolved inside PID's root (the process must still exist: -ESRCH when it
 * does not), any other path is a host path as rootfs_open("", path).
 */
int rootfs_open_path(const char *path, uint64_t max_size, struct stat *st);

/*
 * Split a "/proc/PID/root[/REST]" path: 1 with @pid set and @rest pointing
 * into @path ("/" when there is no REST), 0 for any other path.
 */
int rootfs_split(const char *path, pid_t *pid, const char **rest);

/*
 * Lines of a file, each at most @max_line bytes (longer ones are skipped
 * whole and counted), at most @max_bytes read in all; the memory used is
 * one buffer of 2 x @max_line, whatever the file holds. Takes ownership of
 * @fd (closed by rootfs_lines_free). NULL + errno.
 */
struct rootfs_lines;
struct rootfs_lines *rootfs_lines_new(int fd, size_t max_line, uint64_t max_bytes);
/*
 * Next line, without its newline and NUL-terminated (owned by @lr, valid
 * until the next call). 1 for a line, 0 at the end of the file or of the
 * byte cap, -errno on a read error. A last line without a newline counts.
 */
int rootfs_lines_next(struct rootfs_lines *lr, const char **line, size_t *len);
/* Lines skipped for length, and whether the byte cap stopped the read. */
uint64_t rootfs_lines_skipped(const struct rootfs_lines *lr);
bool rootfs_lines_capped(const struct rootfs_lines *lr);
void rootfs_lines_free(struct rootfs_lines *lr);

/*
 * Refusals. A file asked for inside a process's root (rootfs_open with a
 * "/proc/PID/root" root, rootfs_open_path with such a path) that is there
 * but not opened is reported to the hook, on the caller's thread, with the
 * pid (0 when the root is not a /proc/PID/root path), the path as asked
 * inside the root (untrusted bytes), the reason and the errno. A missing
 * file (-ENOENT, -ENOTDIR) is not a refusal, except when the path's last
 * component is a symbolic link that leads nowhere inside the root: a link
 * out of the container (or a broken one), reported as ROOTFS_R_LINK. Host
 * paths (root "" or "/") are not reported.
 */
enum rootfs_reason {
	ROOTFS_R_SPECIAL, /* FIFO, socket or device (-EINVAL) */
	ROOTFS_R_LINK,    /* magic link or too many links (-ELOOP), link leading out */
	ROOTFS_R_PSEUDO,  /* file of a pseudo filesystem (-EPERM) */
	ROOTFS_R_BIG,     /* over the size cap (-EFBIG) */
	ROOTFS_R_GONE,    /* the process ended (-ESRCH) */
	ROOTFS_R_OTHER,   /* a directory, permission, any other error */
	ROOTFS_R_STALLED, /* on FUSE, its helper did not answer in time (-ETIMEDOUT) */
	ROOTFS_R_N
};
typedef void (*rootfs_refusal_fn)(void *ctx, pid_t pid, const char *path,
				  enum rootfs_reason why, int err);
/* Install @fn (NULL: none). Not synchronised: set before threads open. */
void rootfs_set_refusal_hook(rootfs_refusal_fn fn, void *ctx);
/* A hook that keeps the reason of the last refusal in the int32_t at @ctx
 * (a helper process sends it to the agent, which reports it). */
void rootfs_refusal_keep(void *ctx, pid_t pid, const char *path, enum rootfs_reason why, int err);
/* Report a refusal found elsewhere (a helper process): calls the hook. */
void rootfs_report_refusal(pid_t pid, const char *path, enum rootfs_reason why, int err);
/* "special", "link", "pseudofs", "too_big", "vanished", "other", "stalled". */
const char *rootfs_reason_name(enum rootfs_reason why);

/*
 * Files on FUSE. A file whose path lies under a FUSE mount point of the
 * process's mount namespace (lib/fusemnt.h), or whose resolution leaves
 * the root's mount for another one in a namespace that has FUSE mounts
 * (openat2's RESOLVE_NO_XDEV says so before any lookup reaches the other
 * file system), or that turns out to be on FUSE once looked at, is handed
 * to @fn instead of being opened on the caller's thread: @fn(pid, path,
 * max_size, st) opens PATH inside PID's root (pid 0: a host path) under
 * the rules above, somewhere that may wait, and returns an fd on a regular
 * file with the same content (capped at max_size) and *@st set to the
 * ORIGINAL file's stat, or -errno (-ETIMEDOUT when it gave up waiting;
 * it reports its own refusals with rootfs_report_refusal). NULL (the
 * default, and inside the helper itself): open directly, as for any file.
 * Not synchronised: set before threads open.
 */
typedef int (*rootfs_slow_open_fn)(pid_t pid, const char *path, uint64_t max_size,
				   struct stat *st);
void rootfs_set_slow_opener(rootfs_slow_open_fn fn);

/* Tests: resolve with the user-space walk instead of openat2(2). */
void rootfs_force_walk(bool on);

#endif
