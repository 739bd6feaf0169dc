/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_TESTS_TESTLIB_H
#define CGPERF_TESTS_TESTLIB_H

/*
 * Helpers shared by the cmocka unit tests (linked into every one): the
 * list of a file's cases (TL_MAIN), temp directories, fake trees and the
 * files in them, files of the source tree, whole-file reads, gzip, text
 * captured from a FILE *, a repeatable random sequence. They fail the
 * running test (cmocka's fail_msg) instead of returning errors, so a test
 * reads as its steps.
 *
 * The failing-allocation injector is apart, in testalloc.h: it replaces
 * malloc, so only the tests that ask for it link it (see the Makefile).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Running the cases of a test file: tl_run() makes a cmocka group of the
 * functions in @fns, named by the comma-separated @names (TL_TESTS() gives
 * both from one list), each case between @setup and @teardown, the group
 * between @group_setup and @group_teardown (each may be NULL). Returns
 * cmocka's count of failed cases.
 */
typedef void (*tl_test_fn)(void **state);
typedef int (*tl_fixture_fn)(void **state);
int tl_run(const tl_test_fn *fns, const char *names, tl_fixture_fn group_setup,
	   tl_fixture_fn group_teardown, tl_fixture_fn setup, tl_fixture_fn teardown);
#define TL_TESTS(...) (const tl_test_fn[]){ __VA_ARGS__ }, #__VA_ARGS__

/* main() of a test file whose cases share one set-up: none (TL_MAIN), one
 * per case (TL_MAIN_FIXTURE) or one for the group (TL_MAIN_GROUP). */
#define TL_MAIN(...) TL_MAIN_ALL(NULL, NULL, NULL, NULL, __VA_ARGS__)
#define TL_MAIN_FIXTURE(setup, teardown, ...) TL_MAIN_ALL(NULL, NULL, setup, teardown, __VA_ARGS__)
#define TL_MAIN_GROUP(setup, teardown, ...) TL_MAIN_ALL(setup, teardown, NULL, NULL, __VA_ARGS__)
#define TL_MAIN_ALL(gsetup, gteardown, setup, teardown, ...)                                   \
	int main(void)                                                                         \
	{                                                                                      \
		return tl_run(TL_TESTS(__VA_ARGS__), gsetup, gteardown, setup, teardown);      \
	}

/* A new directory /tmp/@name.XXXXXX; the malloc'd path, freed by tl_rmtree. */
char *tl_tmpdir(const char *name);

/* Remove @path and everything under it (not following symlinks), then free
 * @path. Returns 0 or -errno; NULL is a no-op. */
int tl_rmtree(char *path);

/* Make @dir/@rel and its parents (mkdir -p). */
void tl_mkdirs(const char *dir, const char *rel);

/* Write @text to @dir/@rel (truncating), creating the directories on the
 * way. @rel may be NULL: write @dir itself. */
void tl_write_file(const char *dir, const char *rel, const char *text);

/* The same for @len bytes of @data (NULs allowed). */
void tl_write_data(const char *dir, const char *rel, const void *data, size_t len);

/* A symbolic link @dir/@rel to @target. */
void tl_symlink(const char *dir, const char *rel, const char *target);

/* A fake file tree (a fake /proc, cgroupfs or tracefs) as a cmocka fixture:
 * tl_fake_new() allocates @size zeroed bytes (a struct whose first member
 * is a struct tl_fake) with root a new tl_tmpdir(@name); tl_fake_teardown()
 * removes the tree and frees the struct in *@state. */
struct tl_fake {
	char *root;
};
void *tl_fake_new(const char *name, size_t size);
int tl_fake_teardown(void **state);

/* Read at most @cap bytes of @path: a malloc'd NUL-terminated buffer (the
 * caller frees), its length in *@len if not NULL; NULL + errno on failure. */
char *tl_read_file(const char *path, size_t cap, size_t *len);

/* A stream whose text tl_capture_end() returns: tmpfile-backed, so it may
 * be written from several threads and by fd as well. */
FILE *tl_capture_begin(void);
/* Close @f; its whole text, malloc'd (the caller frees). */
char *tl_capture_end(FILE *f);

/* Text an append function fills (the sinks of lib/json.h and lib/prom.h):
 * start from { 0 }; s is NUL-terminated once anything was put; free(s). */
struct tl_text {
	char *s;
	size_t len;
};
void tl_text_put(void *ctx, const char *s, size_t n);

struct wire_batch;
struct Cgperf__V1__Batch;

/* Encode @b (freed), then decode it as the exporter would (default cap):
 * the decoded batch (wire_batch_decoded_free()). Fails the test when
 * either step fails. */
struct Cgperf__V1__Batch *tl_wire_roundtrip(struct wire_batch *b);

/* snprintf() into @buf that fails the test instead of cutting the text. */
__attribute__((format(printf, 3, 4))) void tl_pathf(char *buf, size_t size, const char *fmt,
						    ...);

/* The next number of a xorshift64 sequence kept in *@state (not 0): cheap,
 * repeatable pseudo-random input for table and noise tests. */
uint64_t tl_rand(uint64_t *state);

/* A file of the source tree, @rel below its top: from $CGPERF_ROOT
 * (tests/run.sh sets it), the current directory, or two levels above this
 * binary (BUILD/tests/). The malloc'd path, or NULL when none is readable. */
char *tl_tree_path(const char *rel);
/* The same, failing the test when the file is not found. */
char *tl_tree_file(const char *rel);

/* The whole text of @path (at most 64 MiB), malloc'd and NUL-terminated;
 * fails the test when it cannot be read. */
char *tl_read_text(const char *path);

/* @len bytes at @in as one gzip member (lib/gzip, level 9): malloc'd, its
 * size in *@outlen. Fails the test when it cannot. */
uint8_t *tl_gzip(const void *in, size_t len, size_t *outlen);

/* /dev/null opened for writing, its stdio buffer already allocated (so a
 * test counting allocations sees none of stdio's). fclose() it. */
FILE *tl_devnull(void);

/* Batch files (20-digit names) in the spool directory @dir; 0 when it
 * cannot be read. */
int tl_count_batch_files(const char *dir);

/* @got is the string @want, or NULL when @want is. */
void tl_assert_str_or_null(const char *got, const char *want);

/* Whether @s ends with @suffix. */
bool tl_ends_with(const char *s, const char *suffix);

/* Whether @a and @b name the same file (device and inode, through links). */
bool tl_same_file(const char *a, const char *b);

/* Lines of @text (a final line without '\n' counts too). */
size_t tl_count_lines(const char *text);

/*
 * Tables of cases kept as data: tests/unit/data/NAME.tsv, one case a line,
 * its fields separated by tabs. Empty lines and lines that start with '#'
 * (a column header, a remark) are skipped; a first field that starts with
 * '#' is written \x23. In a field, C's escapes are decoded: \\ \" \' \?
 * \a \b \f \n \r \t \v, \xH or \xHH (at most two hex digits, unlike C,
 * so "\xffb" is 0xff then 'b'), \o, \oo or \ooo in octal; a field that
 * is \N alone is NULL (as PostgreSQL's COPY writes it). A NUL cannot be in a
 * field. A table cannot hold an empty one-field case (its line is empty).
 *
 * tl_table_parse() reads a copy of @text, a table called @name in
 * messages, each case with @ncols fields: the table (tl_table_free()), or
 * NULL with the reason in @err ("NAME:LINE: ...") when a line has another
 * number of fields or a field does not decode, or there is no case at all.
 * tl_table_load() reads tests/unit/data/@name from the source tree (found
 * as tl_tree_file() finds files, so from any working directory), named so
 * in messages, and fails the test where tl_table_parse() would return NULL.
 */
struct tl_table;
struct tl_table *tl_table_parse(const char *text, const char *name, size_t ncols, char *err,
				size_t errlen);
struct tl_table *tl_table_load(const char *name, size_t ncols);
void tl_table_free(struct tl_table *t);

/* The number of cases in @t. */
size_t tl_table_rows(const struct tl_table *t);

/* The fields of case @row: an array of the table's ncols strings (NULL
 * where the file says \N), owned by @t. */
const char *const *tl_table_row(const struct tl_table *t, size_t row);

/* Field @col of case @row read as a number, decimal or hex after "0x";
 * fails the test when it is not one (digits only, below 2^64). */
uint64_t tl_table_u64(const struct tl_table *t, size_t row, size_t col);

/* Where case @row stands, "NAME:LINE", for a failing test's message: a
 * static buffer, overwritten by the next call. */
const char *tl_table_where(const struct tl_table *t, size_t row);

#endif
