// SPDX-License-Identifier: MIT
/* FUSE files opened by a helper: see agent/symbols/slowopen.h. */
#include "agent/symbols/slowopen.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/fdio.h"
#include "lib/hashmap.h"
#include "lib/rootfs.h"

extern char **environ;

/* The helper's one message; the memfd rides with it when err is 0. */
struct slowopen_msg {
	int32_t err; /* 0, or the open's errno */
	int32_t why; /* a refusal's enum rootfs_reason, or -1 */
	struct stat st; /* the original file's */
};

static const char *helper_exe;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pid_t pid;    /* spawned, not reaped; 0: free */
	pid_t target; /* the process whose file it opens */
	bool stalled; /* it timed out */
} helpers[SLOWOPEN_MAX_HELPERS];
static struct {
	uint64_t key;
	time_t until;
} retry[SLOWOPEN_RETRY_SLOTS];
static unsigned retry_next;

/* ---- the helper ---- */

static int send_msg(const struct slowopen_msg *m, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(1, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* Copy at most @max bytes of @fd into a new sealed memfd; fd or -errno. */
static int copy_to_memfd(int fd, uint64_t max)
{
	static char buf[1 << 20];
	uint64_t done = 0;
	int mfd = memfd_create("cgperf-file", MFD_CLOEXEC | MFD_ALLOW_SEALING), err = 0;

	if (mfd < 0)
		return -errno;
	while (done < max) {
		size_t want = max - done < sizeof(buf) ? (size_t)(max - done) : sizeof(buf);
		ssize_t n = fdio_read(fd, buf, want);

		if (n <= 0) {
			err = (int)n;
			break;
		}
		err = fdio_write_all(mfd, buf, (size_t)n);
		if (err)
			break;
		done += (uint64_t)n;
	}
	if (err) {
		close(mfd);
		return err;
	}
	fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
	lseek(mfd, 0, SEEK_SET);
	return mfd;
}

int slowopen_helper_main(int argc, char **argv)
{
	struct slowopen_msg m = {.why = -1};
	char root[PATH_MAX];
	unsigned long long max;
	char *end;
	long pid;
	int fd, mfd = -1;

	/* A helper not stuck in the kernel goes when the agent does. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (argc != 5 || strcmp(argv[1], "--max") != 0)
		return 2;
	errno = 0;
	max = strtoull(argv[2], &end, 10);
	if (errno || *end)
		return 2;
	pid = strtol(argv[3], &end, 10);
	if (*end || pid < 0 || pid > INT_MAX || argv[4][0] != '/')
		return 2;
	rootfs_set_refusal_hook(rootfs_refusal_keep, &m.why);
	if (pid > 0) {
		if ((size_t)snprintf(root, sizeof(root), "/proc/%ld/root%s", pid, argv[4]) >= sizeof(root))
			fd = -ENAMETOOLONG;
		else
			fd = rootfs_open_path(root, (uint64_t)max, &m.st);
	} else {
		fd = rootfs_open("", argv[4], (uint64_t)max, &m.st);
	}
	if (fd >= 0) {
		mfd = copy_to_memfd(fd, (uint64_t)max);
		if (mfd < 0)
			m.err = -mfd;
	} else {
		m.err = -fd;
	}
	send_msg(&m, mfd);
	/* the file's close may wait for the daemon (FLUSH): the agent has
	 * what it needs already */
	return 0;
}

/* ---- the agent's side ---- */

static uint64_t key_of(pid_t pid, const char *path)
{
	uint64_t h = hash_fnv1a_str(HASH_FNV_OFFSET ^ (uint64_t)(uint32_t)pid, path);

	return h | 1; /* never 0: an empty slot */
}

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

/*
 * Under lock: reap finished helpers; the number still outstanding, and in
 * *@stuck whether one that timed out on a file of @target is still there
 * (its daemon is still holding it: the other files of @target wait too).
 */
static unsigned reap(pid_t target, bool *stuck)
{
	unsigned n = 0;

	*stuck = false;
	for (unsigned i = 0; i < SLOWOPEN_MAX_HELPERS; i++) {
		if (!helpers[i].pid)
			continue;
		if (waitpid(helpers[i].pid, NULL, WNOHANG) != 0) {
			helpers[i].pid = 0; /* reaped, or not ours any more */
			continue;
		}
		n++;
		if (helpers[i].stalled && helpers[i].target == target)
			*stuck = true;
	}
	return n;
}

/* Under lock: keep @pid to reap later (when full, it stays a zombie). */
static void keep_helper(pid_t pid, pid_t target, bool stalled)
{
	for (unsigned i = 0; i < SLOWOPEN_MAX_HELPERS; i++) {
		if (!helpers[i].pid) {
			helpers[i].pid = pid;
			helpers[i].target = target;
			helpers[i].stalled = stalled;
			return;
		}
	}
}

static bool retry_later(uint64_t key, time_t now)
{
	for (unsigned i = 0; i < SLOWOPEN_RETRY_SLOTS; i++)
		if (retry[i].key == key && now < retry[i].until)
			return true;
	return false;
}

static void stalled(pid_t pid, const char *path, uint64_t key, bool remember)
{
	if (remember) {
		pthread_mutex_lock(&lock);
		retry[retry_next % SLOWOPEN_RETRY_SLOTS].key = key;
		retry[retry_next % SLOWOPEN_RETRY_SLOTS].until = now_s() + SLOWOPEN_RETRY_S;
		retry_next++;
		pthread_mutex_unlock(&lock);
	}
	rootfs_report_refusal(pid, path, ROOTFS_R_STALLED, ETIMEDOUT);
}

/* The answer on @sock within @deadline (ms): fd and *st, or -errno. */
static int receive(int sock, uint64_t deadline, pid_t pid, const char *path, struct stat *st)
{
	struct slowopen_msg m;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	struct pollfd p = {.fd = sock, .events = POLLIN};
	struct cmsghdr *c;
	int fd = -1;
	ssize_t n;

	for (;;) {
		uint64_t now = clock_mono_ms();
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)(deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		break;
	}
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	for (c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	if (n != (ssize_t)sizeof(m) || (m.err == 0) != (fd >= 0)) {
		if (fd >= 0)
			close(fd);
		return -EIO; /* the helper died or spoke nonsense */
	}
	if (m.why >= 0 && m.why < ROOTFS_R_N && pid > 0)
		rootfs_report_refusal(pid, path, (enum rootfs_reason)m.why, m.err);
	if (m.err)
		return -m.err;
	if (st)
		*st = m.st;
	return fd;
}

static int slow_open(pid_t pid, const char *path, uint64_t max_size, struct stat *st)
{
	char maxs[24], pids[16];
	char *argv[] = {(char *)helper_exe, (char *)SLOWOPEN_HELPER_CMD, (char *)"--max", maxs, pids,
			(char *)path, NULL};
	posix_spawn_file_actions_t fa;
	uint64_t key = key_of(pid, path), deadline;
	bool busy, later, stuck;
	int sv[2], err, fd;
	pid_t child;

	if (!path || path[0] != '/')
		return -EINVAL;
	pthread_mutex_lock(&lock);
	busy = reap(pid, &stuck) >= SLOWOPEN_MAX_HELPERS;
	later = retry_later(key, now_s());
	pthread_mutex_unlock(&lock);
	if (busy || later || stuck) {
		stalled(pid, path, key, false);
		return -ETIMEDOUT;
	}
	snprintf(maxs, sizeof(maxs), "%" PRIu64, max_size);
	snprintf(pids, sizeof(pids), "%d", (int)pid);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
	/* nothing of the agent's: a stuck helper must not hold its stderr
	 * (a caller reading the agent's output to its end would wait) */
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	deadline = clock_mono_ms() + SLOWOPEN_WAIT_MS;
	err = posix_spawn(&child, helper_exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	if (err) {
		close(sv[0]);
		return -err;
	}
	fd = receive(sv[0], deadline, pid, path, st);
	close(sv[0]);
	if (fd == -ETIMEDOUT) {
		/* stuck in the kernel it dies when its wait ends; if not, now */
		kill(child, SIGKILL);
		stalled(pid, path, key, true);
	}
	pthread_mutex_lock(&lock);
	if (waitpid(child, NULL, WNOHANG) == 0)
		keep_helper(child, pid, fd == -ETIMEDOUT); /* still closing, or stuck */
	pthread_mutex_unlock(&lock);
	return fd;
}

void slowopen_install(const char *exe)
{
	helper_exe = exe;
	rootfs_set_slow_opener(exe ? slow_open : NULL);
}
