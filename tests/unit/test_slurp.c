// SPDX-License-Identifier: MIT
/*
 * lib/slurp: whole files under a cap: empty, shorter than, exactly at and
 * over the cap, with NULs inside, from an offset, a pipe, a sparse 2 GB
 * file read with bounded memory, and the errors of a path that is missing
 * or a directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/slurp.h"
#include "tests/unit/testlib.h"

static char *dir;

static int setup(void **state)
{
	dir = tl_tmpdir("test_slurp");
	tl_write_file(dir, "empty", "");
	tl_write_file(dir, "ten", "0123456789");
	tl_mkdirs(dir, "sub");
	return 0;
}

static int teardown(void **state)
{
	tl_rmtree(dir);
	return 0;
}

static void test_caps(void **state)
{
	static const struct {
		const char *name;
		size_t cap, len;
		bool trunc;
	} cases[] = {
		{ "empty", 10, 0, false }, { "empty", 0, 0, false }, { "ten", 100, 10, false },
		{ "ten", 11, 10, false },  { "ten", 10, 10, false }, { "ten", 9, 9, true },
		{ "ten", 1, 1, true },	   { "ten", 0, 0, true },
	};
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	assert_true(dfd >= 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t len = 99;
		bool trunc = !cases[i].trunc;

		assert_int_equal(slurp_at(dfd, cases[i].name, cases[i].cap, &buf, &len, &trunc), 0);
		if (len != cases[i].len || trunc != cases[i].trunc)
			fail_msg("case %zu: %zu bytes (trunc %d), want %zu (%d)", i, len, trunc,
				 cases[i].len, cases[i].trunc);
		assert_int_equal(buf[len], '\0');
		assert_memory_equal(buf, "0123456789", len);
		free(buf);
		/* NULL: cut silently */
		assert_int_equal(slurp_at(dfd, cases[i].name, cases[i].cap, &buf, &len, NULL), 0);
		assert_int_equal(len, cases[i].len);
		free(buf);
	}
	close(dfd);
}

static void test_errors(void **state)
{
	char *buf = (char *)"untouched", path[4096];
	size_t len = 7;

	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(slurp_at(AT_FDCWD, path, 10, &buf, &len, NULL), -ENOENT);
	assert_string_equal(buf, "untouched");
	assert_int_equal(len, 7);
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(slurp_at(AT_FDCWD, path, 10, &buf, &len, NULL), -EISDIR);
	assert_int_equal(slurp_fd(-1, 10, &buf, &len, NULL), -EBADF);
}

/* NULs inside, from the current offset, and a pipe (no size to trust). */
static void test_nuls_offset_pipe(void **state)
{
	static const char data[] = "a\0b\0c";
	char *buf, path[4096];
	size_t len;
	int fd, p[2];

	snprintf(path, sizeof(path), "%s/nuls", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, sizeof(data)), sizeof(data));
	assert_int_equal(lseek(fd, 2, SEEK_SET), 2);
	assert_int_equal(slurp_fd(fd, 100, &buf, &len, NULL), 0);
	assert_int_equal(len, sizeof(data) - 2);
	assert_memory_equal(buf, data + 2, len);
	free(buf);
	close(fd);

	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "piped", 5), 5);
	close(p[1]);
	assert_int_equal(slurp_fd(p[0], 100, &buf, &len, NULL), 0);
	assert_string_equal(buf, "piped");
	free(buf);
	close(p[0]);
}

/* 2 GB of holes, 1 MiB read: the buffer follows the cap, not the file. */
static void test_sparse(void **state)
{
	char *buf, path[4096];
	size_t len;
	bool trunc;
	int fd;

	snprintf(path, sizeof(path), "%s/sparse", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 2LL << 30), 0);
	assert_int_equal(slurp_fd(fd, 1u << 20, &buf, &len, &trunc), 0);
	assert_int_equal(len, 1u << 20);
	assert_true(trunc);
	free(buf);
	close(fd);
	unlink(path);
}

TL_MAIN_GROUP(setup, teardown, test_caps, test_errors, test_nuls_offset_pipe, test_sparse)
