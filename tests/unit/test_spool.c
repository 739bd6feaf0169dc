// SPDX-License-Identifier: MIT
/*
 * agent/spool: order, the cap (oldest dropped first and counted), surviving
 * a restart (reopen sees the batches, stale temp files go), cursors and the
 * persistent sequence counter, and the faults the spool must absorb: a batch
 * file deleted under it, a second open of the same directory, garbage files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/ship/spool.h"
#include "tests/unit/testlib.h"

struct fixture {
	char dir[64];
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/cgperf-spool-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* A recognisable payload of @len bytes for batch @seq. */
static void fill(char *buf, size_t len, uint64_t seq)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)('a' + (seq + i) % 26);
}

static void put(struct spool *s, uint64_t seq, size_t len)
{
	char buf[256];

	assert_true(len <= sizeof(buf));
	fill(buf, len, seq);
	assert_int_equal(spool_put(s, seq, buf, len), 0);
}

/* The spool in @dir under @cap, with batches 1..@n put of @sizes[i] bytes. */
static struct spool *open_put(const char *dir, uint64_t cap, const size_t *sizes, size_t n)
{
	struct spool *s = spool_open(dir, cap);

	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		put(s, i + 1, sizes[i]);
	return s;
}

/* Peek the oldest and check it is @want_seq with the payload put() made. */
static void expect_oldest(struct spool *s, uint64_t want_seq, size_t want_len)
{
	char want[256];
	uint64_t seq = 0;
	void *buf = NULL;
	size_t len = 0;

	assert_int_equal(spool_peek_oldest(s, &seq, &buf, &len), 0);
	assert_int_equal(seq, want_seq);
	assert_int_equal(len, want_len);
	fill(want, want_len, want_seq);
	assert_memory_equal(buf, want, want_len);
	free(buf);
}

static void test_order(void **state)
{
	struct fixture *f = *state;
	struct spool *s = spool_open(f->dir, 1 << 20);
	uint64_t seq = 0;
	void *buf = NULL;
	size_t len;

	assert_non_null(s);
	assert_int_equal(spool_peek_oldest(s, &seq, &buf, &len), -ENOENT);
	assert_int_equal(spool_last(s, &seq), -ENOENT);
	/* Out of order on purpose: the order is the number's, not the put's. */
	put(s, 3, 30);
	put(s, 1, 10);
	put(s, 2, 20);
	put(s, 10, 100);
	assert_int_equal(spool_count(s), 4);
	assert_int_equal(spool_bytes(s), 160);
	assert_int_equal(tl_count_batch_files(f->dir), 4);
	assert_int_equal(spool_last(s, &seq), 0);
	assert_int_equal(seq, 10);

	expect_oldest(s, 1, 10);
	assert_int_equal(spool_next_after(s, 1, &seq), 0);
	assert_int_equal(seq, 2);
	assert_int_equal(spool_next_after(s, 3, &seq), 0);
	assert_int_equal(seq, 10);
	assert_int_equal(spool_next_after(s, 10, &seq), -ENOENT);
	assert_int_equal(spool_count_after(s, 2), 2);
	assert_int_equal(spool_peek_after(s, 2, &seq, &buf, &len), 0);
	assert_int_equal(seq, 3);
	assert_int_equal(len, 30);
	free(buf);

	assert_int_equal(spool_remove(s, 1), 0);
	assert_int_equal(spool_remove(s, 1), -ENOENT);
	expect_oldest(s, 2, 20);
	assert_int_equal(spool_remove(s, 3), 0); /* from the middle */
	expect_oldest(s, 2, 20);
	assert_int_equal(spool_remove(s, 2), 0);
	expect_oldest(s, 10, 100);
	assert_int_equal(spool_bytes(s), 100);

	/* Replacing a batch keeps one copy and the right size. */
	put(s, 10, 50);
	assert_int_equal(spool_count(s), 1);
	assert_int_equal(spool_bytes(s), 50);
	expect_oldest(s, 10, 50);

	put(s, 11, 0); /* an empty batch is still a batch */
	put(s, 12, 5);
	assert_int_equal(spool_remove_upto(s, 11), 2);
	expect_oldest(s, 12, 5);
	assert_int_equal(spool_count(s), 1);
	assert_int_equal(tl_count_batch_files(f->dir), 1);
	assert_int_equal(spool_dropped(s), 0);
	spool_close(s);
}

static void test_cap_drops_oldest(void **state)
{
	struct fixture *f = *state;
	struct spool *s = open_put(f->dir, 100, (const size_t[]){ 30, 30, 30 }, 3);
	char big[101];

	assert_int_equal(spool_dropped(s), 0);
	put(s, 4, 30); /* 120 > 100: batch 1 goes */
	assert_int_equal(spool_dropped(s), 1);
	assert_int_equal(spool_count(s), 3);
	assert_int_equal(spool_bytes(s), 90);
	expect_oldest(s, 2, 30);
	put(s, 5, 80); /* 170: 2, 3 and 4 go */
	assert_int_equal(spool_dropped(s), 4);
	assert_int_equal(spool_count(s), 1);
	expect_oldest(s, 5, 80);
	assert_int_equal(tl_count_batch_files(f->dir), 1);

	/* Bigger than the whole cap: refused and counted, nothing evicted. */
	fill(big, sizeof(big), 6);
	assert_int_equal(spool_put(s, 6, big, sizeof(big)), -EFBIG);
	assert_int_equal(spool_dropped(s), 5);
	expect_oldest(s, 5, 80);

	/* Exactly the cap fits. */
	put(s, 7, 20);
	assert_int_equal(spool_bytes(s), 100);
	assert_int_equal(spool_dropped(s), 5);
	spool_close(s);

	/* Reopening with a smaller cap drops the oldest at once. */
	s = spool_open(f->dir, 50);
	assert_non_null(s);
	assert_int_equal(spool_count(s), 1);
	assert_int_equal(spool_dropped(s), 1);
	expect_oldest(s, 7, 20);
	spool_close(s);
}

static bool exists(const char *dir, const char *name)
{
	char path[256];

	tl_pathf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static void test_restart(void **state)
{
	struct fixture *f = *state;
	char sub[128];
	struct spool *s;
	struct stat st;

	/* spool_open creates missing parents, mode 0700. */
	snprintf(sub, sizeof(sub), "%s/a/b/spool", f->dir);
	s = spool_open(sub, 1000);
	assert_non_null(s);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	put(s, 5, 50);
	put(s, 6, 60);
	put(s, 7, 70);
	assert_int_equal(spool_remove(s, 5), 0);
	spool_close(s);

	/* What a crash mid-put leaves, and files that are not ours. */
	tl_write_file(sub, ".tmp-00000000000000000008", "half a batch");
	tl_write_file(sub, ".tmp-seq", "9");
	tl_write_file(sub, "notes.txt", "not a batch");
	tl_write_file(sub, "123", "short name");
	tl_write_file(sub, "9999999999999999999999", "too long");
	tl_write_file(sub, "99999999999999999999", "20 digits but > UINT64_MAX");

	s = spool_open(sub, 1000);
	assert_non_null(s);
	assert_int_equal(spool_count(s), 2);
	assert_int_equal(spool_bytes(s), 130);
	expect_oldest(s, 6, 60);
	assert_false(exists(sub, ".tmp-00000000000000000008"));
	assert_false(exists(sub, ".tmp-seq"));
	assert_true(exists(sub, "notes.txt"));
	assert_true(exists(sub, "99999999999999999999"));
	assert_int_equal(spool_dropped(s), 0);

	/* Only one user at a time, even within one process. */
	errno = 0;
	assert_null(spool_open(sub, 1000));
	assert_int_equal(errno, EBUSY);
	spool_close(s);
	s = spool_open(sub, 1000);
	assert_non_null(s);
	spool_close(s);
}

static void test_vanished_batch(void **state)
{
	struct fixture *f = *state;
	struct spool *s = open_put(f->dir, 1000, (const size_t[]){ 10, 20, 30 }, 3);
	char path[256];

	/* Someone deletes a batch behind our back: skipped, counted. */
	tl_pathf(path, sizeof(path), "%s/%s", f->dir, "00000000000000000001");
	assert_int_equal(unlink(path), 0);
	expect_oldest(s, 2, 20);
	assert_int_equal(spool_dropped(s), 1);
	assert_int_equal(spool_count(s), 2);
	assert_int_equal(spool_bytes(s), 50);
	/* A batch that grew on disk: the index follows the file. */
	tl_pathf(path, sizeof(path), "%s/%s", f->dir, "00000000000000000002");
	assert_int_equal(truncate(path, 25), 0);
	{
		uint64_t seq;
		void *buf;
		size_t len;

		assert_int_equal(spool_peek_oldest(s, &seq, &buf, &len), 0);
		assert_int_equal(len, 25);
		free(buf);
	}
	assert_int_equal(spool_bytes(s), 55);
	spool_close(s);
}

static void test_cursor(void **state)
{
	struct fixture *f = *state;
	struct spool *s = spool_open(f->dir, 1000);
	uint64_t v = 0;

	assert_non_null(s);
	assert_int_equal(spool_cursor_load(s, "abc", &v), -ENOENT);
	assert_int_equal(spool_cursor_store(s, "abc", 42, "http://x/\nevil"), 0);
	assert_int_equal(spool_cursor_load(s, "abc", &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(spool_cursor_store(s, "abc", 43, NULL), 0);
	assert_int_equal(spool_cursor_load(s, "abc", &v), 0);
	assert_int_equal(v, 43);
	assert_int_equal(spool_cursor_store(s, "../x", 1, NULL), -EINVAL);
	assert_int_equal(spool_cursor_store(s, "", 1, NULL), -EINVAL);
	assert_int_equal(spool_cursor_load(s, "a/b", &v), -EINVAL);
	tl_write_file(f->dir, "cursor-bad", "12x\n");
	assert_int_equal(spool_cursor_load(s, "bad", &v), -EBADMSG);
	tl_write_file(f->dir, "cursor-empty", "");
	assert_int_equal(spool_cursor_load(s, "empty", &v), -EBADMSG);
	tl_write_file(f->dir, "cursor-huge", "99999999999999999999999\n");
	assert_int_equal(spool_cursor_load(s, "huge", &v), -EBADMSG);
	spool_close(s);
}

static uint64_t next_seq(const char *dir)
{
	uint64_t v = 0;

	assert_int_equal(spool_next_seq(dir, &v), 0);
	return v;
}

static void test_seq_persistence(void **state)
{
	struct fixture *f = *state;
	char sub[128], path[256];
	struct spool *s;

	snprintf(sub, sizeof(sub), "%s/new", f->dir);
	assert_int_equal(next_seq(sub), 1); /* creates the directory */
	assert_int_equal(next_seq(sub), 2);
	assert_int_equal(next_seq(sub), 3);
	/* A "restart" is nothing but calling again: the file holds the state. */
	assert_int_equal(next_seq(sub), 4);
	assert_false(exists(sub, ".tmp-seq"));

	/* Lost or rolled back DIR/seq: never repeat a number still visible
	 * in the directory, as a batch or as a reader's cursor. */
	s = spool_open(sub, 1000);
	assert_non_null(s);
	put(s, 10, 5);
	assert_int_equal(spool_cursor_store(s, "c1", 20, "http://c1/"), 0);
	tl_pathf(path, sizeof(path), "%s/%s", sub, "seq");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(next_seq(sub), 21); /* works with the spool open */
	tl_write_file(sub, "seq", "garbage");
	assert_int_equal(next_seq(sub), 21);
	tl_write_file(sub, "seq", "7\n");
	assert_int_equal(next_seq(sub), 21);
	tl_write_file(sub, "seq", "100\n");
	assert_int_equal(next_seq(sub), 101);
	assert_int_equal(next_seq(sub), 102);
	spool_close(s);
}

static void test_bad_args(void **state)
{
	struct fixture *f = *state;
	char path[256];

	errno = 0;
	assert_null(spool_open(f->dir, 0));
	assert_int_equal(errno, EINVAL);
	/* A file where the directory should be. */
	tl_write_file(f->dir, "plain", "x");
	tl_pathf(path, sizeof(path), "%s/%s", f->dir, "plain");
	errno = 0;
	assert_null(spool_open(path, 100));
	assert_int_equal(errno, ENOTDIR);
	spool_close(NULL);
}

TL_MAIN_FIXTURE(setup, teardown, test_order, test_cap_drops_oldest, test_restart,
	test_vanished_batch, test_cursor, test_seq_persistence, test_bad_args)
