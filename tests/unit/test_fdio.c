// SPDX-License-Identifier: MIT
/*
 * lib/fdio: whole writes and reads back at an offset, the end of a file
 * (0, -ENODATA), errors as -errno, and reads that a signal interrupts
 * (EINTR, no SA_RESTART) carried on to the data.
 */
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "lib/fdio.h"
#include "tests/unit/testlib.h"

static void test_file(void **state)
{
	char *dir = tl_tmpdir("cgperf-fdio"), path[4096], back[300];
	static char data[70000];
	int fd;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	tl_pathf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fdio_write_all(fd, data, sizeof(data)), 0);
	assert_int_equal(fdio_pread_all(fd, back, sizeof(back), 65536), 0);
	assert_memory_equal(back, data + 65536, sizeof(back));
	assert_int_equal(fdio_pread(fd, back, sizeof(back), sizeof(data) - 10), 10);
	assert_int_equal(fdio_pread(fd, back, sizeof(back), sizeof(data)), 0);
	assert_int_equal(fdio_pread_all(fd, back, sizeof(back), sizeof(data) - 10), -ENODATA);
	assert_int_equal(lseek(fd, -3, SEEK_END), (off_t)sizeof(data) - 3);
	assert_int_equal(fdio_read(fd, back, sizeof(back)), 3);
	assert_int_equal(fdio_read(fd, back, sizeof(back)), 0);
	close(fd);
	/* errors come back as -errno */
	assert_int_equal(fdio_read(fd, back, 1), -EBADF);
	assert_int_equal(fdio_pread_all(fd, back, 1, 0), -EBADF);
	assert_int_equal(fdio_write_all(fd, back, 1), -EBADF);
	tl_rmtree(dir);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void *late_writer(void *arg)
{
	int fd = *(int *)arg;

	usleep(150000);
	assert_int_equal(fdio_write_all(fd, "ok", 2), 0);
	return NULL;
}

static void test_interrupted(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old; /* no SA_RESTART */
	struct itimerval every = { { 0, 20000 }, { 0, 20000 } }, off = { 0 };
	sigset_t alrm;
	pthread_t t;
	char got[2];
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	/* the writer thread blocks SIGALRM: the reads here take them */
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &alrm, NULL), 0);
	assert_int_equal(pthread_create(&t, NULL, late_writer, &p[1]), 0);
	assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &alrm, NULL), 0);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	alarms = 0;
	assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
	assert_int_equal(fdio_read(p[0], got, 1), 1);
	assert_int_equal(fdio_read(p[0], got + 1, 1), 1);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	pthread_join(t, NULL);
	assert_memory_equal(got, "ok", 2);
	assert_true(alarms > 0);
	close(p[0]);
	close(p[1]);
}

TL_MAIN(test_file, test_interrupted)
