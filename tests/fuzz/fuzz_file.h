/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_TESTS_FUZZ_FILE_H
#define CGPERF_TESTS_FUZZ_FILE_H

/*
 * For fuzz targets whose parser reads a file: fuzz_write_all() for an fd
 * they open (perfmap's memfd); for a parser that opens a file by path
 * (symtab, usdt, the unwinder), fuzz_file(): the input written to "in.elf"
 * in a private temp directory (tmpfs when /dev/shm is there), rewritten
 * for every input. A real
 * directory rather than /proc/self/fd/N: the debuginfo lookup searches next
 * to the file by the name .gnu_debuglink gives, which must not land on the
 * fuzzer's own fds.
 */

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_file_dir[64], fuzz_file_path[96];

static void fuzz_file_cleanup(void)
{
	unlink(fuzz_file_path);
	rmdir(fuzz_file_dir);
}

/* Write all @size bytes of @data to @fd: 0, or -1 when a write fails. */
static inline int fuzz_write_all(int fd, const uint8_t *data, size_t size)
{
	for (size_t off = 0; off < size;) {
		ssize_t w = write(fd, data + off, size - off);

		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* The path of the input file, or NULL when it cannot be written. The file
 * and its directory go at exit. */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
	char *dir = fuzz_file_dir, *path = fuzz_file_path;
	int fd;

	if (!dir[0]) {
		snprintf(dir, sizeof(fuzz_file_dir), "%s/cgperf-fuzz.XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (!mkdtemp(dir)) {
			dir[0] = '\0';
			return NULL;
		}
		snprintf(path, sizeof(fuzz_file_path), "%s/in.elf", dir);
		atexit(fuzz_file_cleanup);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (fuzz_write_all(fd, data, size)) {
		close(fd);
		return NULL;
	}
	close(fd);
	return path;
}

#endif
