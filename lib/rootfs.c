// SPDX-License-Identifier: MIT
/*
 * Reading a container's files from the host, safely.
 *
 * The agent runs as root on the host and reads files that other people
 * own: a JIT's /tmp/perf-PID.map, the binaries and libraries a process
 * maps, their separate debuginfo. It reaches them through /proc/PID/root,
 * the process's root directory. A plain open("/proc/PID/root/tmp/x") is
 * wrong in three ways, each a way for a container to hurt the host:
 *
 *  - Symbolic links are resolved in the AGENT's context: only the first
 *    step (the magic link /proc/PID/root) lands in the container; a link
 *    "/tmp/perf-1.map -> /etc/shadow" found there is followed from the
 *    host's "/", and the host's shadow file is read. So is "../../..".
 *  - A FIFO blocks the open (or the first read) until someone writes;
 *    a device is opened with whatever side effect its driver has (a
 *    watchdog starts counting, a tape rewinds).
 *  - Files of pseudo filesystems are regular files of size 0 whose
 *    content depends on who reads: /proc/self/environ, reached by a link
 *    in the container, is the agent's own environment.
 *
 * The rules here:
 *
 *  1. Resolve inside the root with the kernel's help: openat2(2) from an
 *     fd on the root with RESOLVE_IN_ROOT (absolute links and ".." stop at
 *     that fd, as chroot would) and RESOLVE_NO_MAGICLINKS (no /proc/PID/fd
 *     style jump out of it). Kernels before 5.6 have no openat2; there a
 *     walk in user space does the same one component at a time with
 *     O_NOFOLLOW, reading each symbolic link and splicing its text into
 *     what is left to walk, so ".." never goes above the root (it pops a
 *     stack of directory fds the walk itself opened) and a magic link is
 *     only text. Links are bounded (ROOTFS_MAX_HOPS).
 *  2. Look before opening: the resolution yields an O_PATH fd, which opens
 *     nothing; fstat and fstatfs on it decide (regular file, not on a
 *     pseudo filesystem, not over the caller's size cap). Only then is the
 *     same inode opened for reading, through /proc/self/fd/N, with
 *     O_NONBLOCK | O_NOCTTY for good measure. Nothing can be swapped in
 *     between: the O_PATH fd pins the inode.
 *  3. Read with a cap: whole-file reads and line reads stop at a byte cap
 *     given by the caller, lines have a maximum length, and memory is
 *     bounded by the caps, not by what the file claims.
 *
 *  4. Never wait for a FUSE daemon on the caller's thread. A FUSE file
 *     system can make a lookup, a getattr, a statfs or a read wait for as
 *     long as its daemon likes, and once the daemon has the request the
 *     kernel's wait cannot be interrupted (not even by SIGKILL); the
 *     kernel offers no non-blocking lookup. So before touching a path the
 *     process's mount table says whether it lies under a FUSE mount point
 *     (lib/fusemnt.h, cached per mount namespace: one read of mountinfo);
 *     if so, or if the namespace has FUSE mounts and the resolution would
 *     step onto another mount (RESOLVE_NO_XDEV fails it before the lookup
 *     reaches that file system), or if the file found is on FUSE after all,
 *     the open goes to the slow opener the agent installs: a helper
 *     process that opens and copies the file and may stay stuck alone.
 *     Without openat2 a link from elsewhere into a FUSE mount is only seen
 *     once resolved (rule 4's last test), i.e. after its lookup.
 *
 * What this does not do: a /proc/PID/root path names whichever process
 * has PID when it is opened, so a caller that must not confuse a process
 * with its successor checks what it opened (callers compare the (dev,
 * inode) the kernel reported for a mapping with the file's).
 */
#include "lib/rootfs.h"

#include "lib/fusemnt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

/* Directories one walk may hold open (components below the root). */
#define WALK_MAX_DEPTH 256
/* openat2's -EAGAIN (a rename raced with "..") is retried this often. */
#define OPENAT2_TRIES 8
#define LINES_MIN_BUF (64u << 10)

static bool force_walk;
static int openat2_missing; /* 1 once the kernel said ENOSYS */
static rootfs_refusal_fn refusal_fn;
static void *refusal_ctx;
static rootfs_slow_open_fn slow_fn;

void rootfs_set_slow_opener(rootfs_slow_open_fn fn)
{
	slow_fn = fn;
}

void rootfs_force_walk(bool on)
{
	force_walk = on;
}

void rootfs_set_refusal_hook(rootfs_refusal_fn fn, void *ctx)
{
	refusal_fn = fn;
	refusal_ctx = ctx;
}

void rootfs_refusal_keep(void *ctx, pid_t pid, const char *path, enum rootfs_reason why, int err)
{
	(void)pid;
	(void)path;
	(void)err;
	*(int32_t *)ctx = (int32_t)why;
}

void rootfs_report_refusal(pid_t pid, const char *path, enum rootfs_reason why, int err)
{
	if (refusal_fn)
		refusal_fn(refusal_ctx, pid, path, why, err);
}

const char *rootfs_reason_name(enum rootfs_reason why)
{
	static const char *const names[ROOTFS_R_N] = {
		[ROOTFS_R_SPECIAL] = "special", [ROOTFS_R_LINK] = "link",
		[ROOTFS_R_PSEUDO] = "pseudofs", [ROOTFS_R_BIG] = "too_big",
		[ROOTFS_R_GONE] = "vanished",   [ROOTFS_R_OTHER] = "other",
		[ROOTFS_R_STALLED] = "stalled",
	};

	return (unsigned)why < ROOTFS_R_N ? names[why] : "other";
}

/* ---- resolution ---- */

static int walk_dir(int rootfd, const int *stack, int depth)
{
	return depth ? stack[depth - 1] : rootfd;
}

/*
 * The user-space resolution (rule 1 above): an O_PATH fd on what @path
 * names inside @rootfd, the last link followed too, or -errno.
 */
static int walk(int rootfd, const char *path)
{
	char rest[PATH_MAX], tmp[PATH_MAX], link[PATH_MAX], name[NAME_MAX + 1];
	int stack[WALK_MAX_DEPTH];
	int depth = 0, hops = 0, ret;
	size_t pos = 0;

	if ((size_t)snprintf(rest, sizeof(rest), "%s", path) >= sizeof(rest))
		return -ENAMETOOLONG;
	for (;;) {
		size_t len, next;
		struct stat st;
		bool last;
		ssize_t n;
		int fd;

		pos += strspn(rest + pos, "/");
		if (!rest[pos]) {
			ret = openat(walk_dir(rootfd, stack, depth), ".", O_PATH | O_CLOEXEC);
			if (ret < 0)
				ret = -errno;
			goto out;
		}
		len = strcspn(rest + pos, "/");
		next = pos + len;
		last = !rest[next + strspn(rest + next, "/")];
		if (len > NAME_MAX) {
			ret = -ENAMETOOLONG;
			goto out;
		}
		memcpy(name, rest + pos, len);
		name[len] = '\0';
		pos = next;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			/* above the root is the root, as RESOLVE_IN_ROOT says */
			if (depth)
				close(stack[--depth]);
			continue;
		}
		fd = openat(walk_dir(rootfd, stack, depth), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			ret = -errno;
			if (fd >= 0)
				close(fd);
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			if (++hops > ROOTFS_MAX_HOPS) {
				close(fd);
				ret = -ELOOP;
				goto out;
			}
			n = readlinkat(fd, "", link, sizeof(link) - 1);
			ret = n < 0 ? -errno : 0;
			close(fd);
			if (ret < 0)
				goto out;
			if (n == 0 || n == (ssize_t)sizeof(link) - 1) {
				ret = n == 0 ? -ENOENT : -ENAMETOOLONG;
				goto out;
			}
			link[n] = '\0';
			/* the link's text, then what was left after it */
			if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", link, rest + pos) >= sizeof(tmp)) {
				ret = -ENAMETOOLONG;
				goto out;
			}
			memcpy(rest, tmp, strlen(tmp) + 1);
			pos = 0;
			if (link[0] == '/') {
				while (depth)
					close(stack[--depth]);
			}
			continue;
		}
		if (last) {
			ret = fd;
			goto out;
		}
		if (!S_ISDIR(st.st_mode) || depth == WALK_MAX_DEPTH) {
			close(fd);
			ret = S_ISDIR(st.st_mode) ? -ENAMETOOLONG : -ENOTDIR;
			goto out;
		}
		stack[depth++] = fd;
	}
out:
	while (depth)
		close(stack[--depth]);
	return ret;
}

/*
 * An O_PATH fd on @path inside @rootfd, or -errno. @no_xdev: fail with
 * -EXDEV rather than step onto another mount (openat2 only: the walk has
 * no such test and resolves as usual).
 */
static int resolve_in_root(int rootfd, const char *path, bool no_xdev)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | (no_xdev ? RESOLVE_NO_XDEV : 0),
	};

	if (!force_walk && !__atomic_load_n(&openat2_missing, __ATOMIC_RELAXED)) {
		for (int i = 0; i < OPENAT2_TRIES; i++) {
			long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));

			if (fd >= 0)
				return (int)fd;
			if (errno == EAGAIN || errno == EINTR)
				continue;
			if (errno == ENOSYS) {
				__atomic_store_n(&openat2_missing, 1, __ATOMIC_RELAXED);
				break;
			}
			/* container runtimes' seccomp filters may say EPERM */
			if (errno == EPERM)
				break;
			return -errno;
		}
	}
	return walk(rootfd, path);
}

/* ---- what may be read ---- */

static bool pseudo_fs(long type)
{
	switch ((unsigned long)type) {
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
	case BPF_FS_MAGIC:
	case DEVPTS_SUPER_MAGIC:
	case EFIVARFS_MAGIC:
	case PSTOREFS_MAGIC:
	case SELINUX_MAGIC:
	case SMACK_MAGIC:
	case NSFS_MAGIC:
	case BINFMTFS_MAGIC:
	case 0x62656570: /* configfs */
		return true;
	default:
		return false;
	}
}

/* Rule 2: decide on the O_PATH fd @pfd, then open the same inode. */
static int check_and_open(int pfd, uint64_t max_size, struct stat *out)
{
	char self[32];
	struct stat st, st2;
	struct statfs fs;
	int fd;

	if (fstat(pfd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (fstatfs(pfd, &fs) < 0)
		return -errno;
	if (pseudo_fs((long)fs.f_type))
		return -EPERM;
	/* on FUSE after all (a link led there): the helper opens it */
	if ((unsigned long)fs.f_type == FUSE_SUPER_MAGIC && slow_fn)
		return -EXDEV;
	if (st.st_size < 0 || (uint64_t)st.st_size > max_size)
		return -EFBIG;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st2) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		close(fd);
		return -ESTALE;
	}
	if (out)
		*out = st2;
	return fd;
}

/* ---- public ---- */

static int openat_xdev(int rootfd, const char *path, uint64_t max_size, struct stat *st,
		       bool no_xdev)
{
	int pfd, fd;

	if (rootfd < 0 || !path)
		return -EINVAL;
	pfd = resolve_in_root(rootfd, path, no_xdev);
	if (pfd < 0)
		return pfd;
	fd = check_and_open(pfd, max_size, st);
	close(pfd);
	return fd;
}

int rootfs_openat(int rootfd, const char *path, uint64_t max_size, struct stat *st)
{
	return openat_xdev(rootfd, path, max_size, st, false);
}

/*
 * After -ENOENT inside @rootfd: is @path's last component a symbolic link
 * (which then leads nowhere inside the root)? Its directory is resolved
 * as the open would have, the link itself is only looked at.
 */
static bool dangling_link(int rootfd, const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char *dir;
	int dfd;
	struct stat st;
	bool ret = false;

	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return false;
	dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
	if (!dir)
		return false;
	dfd = resolve_in_root(rootfd, dir, false);
	free(dir);
	if (dfd < 0)
		return false;
	ret = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
	close(dfd);
	return ret;
}

/*
 * rootfs_openat for a process's root (@pid 0: not a process's), with
 * refusals reported and files on FUSE handed to the slow opener: by the
 * namespace's mount table first (no syscall on the path at all), then by
 * RESOLVE_NO_XDEV where FUSE mounts exist elsewhere, then by the file
 * system the open found.
 */
static int open_reported(pid_t pid, int rootfd, const char *path, uint64_t max_size,
			 struct stat *st)
{
	int cls = slow_fn && pid > 0 ? fusemnt_classify(pid, path) : FUSEMNT_NONE;
	enum rootfs_reason why;
	int fd;

	if (cls == FUSEMNT_AT_RISK || cls < 0)
		return slow_fn(pid, path, max_size, st);
	fd = openat_xdev(rootfd, path, max_size, st, cls == FUSEMNT_ELSEWHERE);
	if (fd == -EXDEV && slow_fn && pid > 0)
		return slow_fn(pid, path, max_size, st);
	if (fd >= 0 || !refusal_fn)
		return fd;
	switch (fd) {
	case -ENOENT:
		if (!dangling_link(rootfd, path))
			return fd;
		why = ROOTFS_R_LINK;
		break;
	case -ENOTDIR: return fd;
	case -EINVAL: why = ROOTFS_R_SPECIAL; break;
	case -ELOOP: why = ROOTFS_R_LINK; break;
	case -EPERM: why = ROOTFS_R_PSEUDO; break;
	case -EFBIG: why = ROOTFS_R_BIG; break;
	case -ESRCH: why = ROOTFS_R_GONE; break;
	default: why = ROOTFS_R_OTHER; break;
	}
	refusal_fn(refusal_ctx, pid, path, why, -fd);
	return fd;
}

int rootfs_open(const char *root, const char *path, uint64_t max_size, struct stat *st)
{
	int rootfd, fd;
	pid_t pid = 0;
	const char *rest;

	if (!root || !path)
		return -EINVAL;
	if (!root[0] || !strcmp(root, "/")) {
		/* the host's own tree: trusted, resolved as usual (a host FUSE
		 * mount, a user's sshfs, can wait all the same) */
		int pfd;

		if (slow_fn && fusemnt_classify(0, path) == FUSEMNT_AT_RISK)
			return slow_fn(0, path, max_size, st);
		pfd = open(path, O_PATH | O_CLOEXEC);
		if (pfd < 0)
			return -errno;
		fd = check_and_open(pfd, max_size, st);
		close(pfd);
		if (fd == -EXDEV && slow_fn)
			return slow_fn(0, path, max_size, st);
		return fd;
	}
	if (!rootfs_split(root, &pid, &rest) || strcmp(rest, "/") != 0)
		pid = 0;
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		fd = -errno;
		if (pid && fd == -ENOENT && refusal_fn)
			refusal_fn(refusal_ctx, pid, path, ROOTFS_R_GONE, ESRCH);
		return fd;
	}
	fd = open_reported(pid, rootfd, path, max_size, st);
	close(rootfd);
	return fd;
}

int rootfs_split(const char *path, pid_t *pid, const char **rest)
{
	const char *p;
	long v = 0;

	if (!path || strncmp(path, "/proc/", 6) != 0)
		return 0;
	p = path + 6;
	if (*p < '1' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > INT_MAX)
			return 0;
	}
	if (strncmp(p, "/root", 5) != 0 || (p[5] != '\0' && p[5] != '/'))
		return 0;
	*pid = (pid_t)v;
	*rest = p[5] ? p + 5 : "/";
	return 1;
}

int rootfs_open_path(const char *path, uint64_t max_size, struct stat *st)
{
	const char *rest;
	char dir[32];
	pid_t pid;
	int piddir, rootfd = -1, fd;

	if (!path)
		return -EINVAL;
	if (!rootfs_split(path, &pid, &rest))
		return rootfs_open("", path, max_size, st);
	snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	piddir = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (piddir < 0) {
		fd = errno == ENOENT ? -ESRCH : -errno;
		goto gone;
	}
	/* "root" under the process's own directory: if PID ended in between,
	 * this fails rather than reaching a successor's root */
	rootfd = openat(piddir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	fd = rootfd < 0 ? -errno : open_reported(pid, rootfd, rest, max_size, st);
	if (rootfd >= 0)
		close(rootfd);
	close(piddir);
	if (rootfd >= 0)
		return fd;
	if (fd == -ENOENT)
		fd = -ESRCH;
gone:
	if (refusal_fn)
		refusal_fn(refusal_ctx, pid, rest, fd == -ESRCH ? ROOTFS_R_GONE : ROOTFS_R_OTHER, -fd);
	return fd;
}

struct rootfs_lines {
	int fd;
	char *buf;
	size_t size, start, end, max_line;
	uint64_t max_bytes, nread, skipped;
	bool eof, capped, skipping;
};

struct rootfs_lines *rootfs_lines_new(int fd, size_t max_line, uint64_t max_bytes)
{
	struct rootfs_lines *lr;

	if (fd < 0 || !max_line || max_line > (1u << 30)) {
		errno = EINVAL;
		return NULL;
	}
	lr = calloc(1, sizeof(*lr));
	if (!lr)
		return NULL;
	lr->size = 2 * max_line > LINES_MIN_BUF ? 2 * max_line : LINES_MIN_BUF;
	lr->buf = malloc(lr->size + 1);
	if (!lr->buf) {
		free(lr);
		return NULL;
	}
	lr->fd = fd;
	lr->max_line = max_line;
	lr->max_bytes = max_bytes;
	return lr;
}

int rootfs_lines_next(struct rootfs_lines *lr, const char **line, size_t *len)
{
	for (;;) {
		char *s = lr->buf + lr->start;
		char *nl = memchr(s, '\n', lr->end - lr->start);
		size_t want;
		ssize_t r;

		if (nl) {
			size_t n = (size_t)(nl - s);

			lr->start += n + 1;
			if (lr->skipping) {
				lr->skipping = false; /* the tail of an over-long line */
				continue;
			}
			if (n > lr->max_line) {
				lr->skipped++;
				continue;
			}
			*nl = '\0';
			*line = s;
			*len = n;
			return 1;
		}
		if (lr->end - lr->start > lr->max_line || lr->skipping) {
			/* an over-long line with no end in sight: drop what we have */
			if (!lr->skipping)
				lr->skipped++;
			lr->skipping = true;
			lr->start = lr->end = 0;
		}
		if (lr->eof) {
			/* a last line without its newline, unless the cap cut it */
			if (lr->end > lr->start && !lr->skipping && !lr->capped) {
				*line = s;
				*len = lr->end - lr->start;
				s[*len] = '\0';
				lr->start = lr->end;
				return 1;
			}
			return 0;
		}
		memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
		lr->end -= lr->start;
		lr->start = 0;
		want = lr->size - lr->end;
		if (lr->max_bytes - lr->nread < want)
			want = (size_t)(lr->max_bytes - lr->nread);
		if (!want) {
			char c;

			do
				r = read(lr->fd, &c, 1);
			while (r < 0 && errno == EINTR);
			lr->capped = r > 0;
			lr->eof = true;
			continue;
		}
		r = read(lr->fd, lr->buf + lr->end, want);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			lr->eof = true;
		lr->nread += (uint64_t)r;
		lr->end += (size_t)r;
	}
}

uint64_t rootfs_lines_skipped(const struct rootfs_lines *lr)
{
	return lr ? lr->skipped : 0;
}

bool rootfs_lines_capped(const struct rootfs_lines *lr)
{
	return lr && lr->capped;
}

void rootfs_lines_free(struct rootfs_lines *lr)
{
	if (!lr)
		return;
	if (lr->fd >= 0)
		close(lr->fd);
	free(lr->buf);
	free(lr);
}
