/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_FDIO_H
#define CGPERF_LIB_FDIO_H

/*
 * Reads and writes on a descriptor past EINTR and short transfers: the
 * loops the symbol cache, the spool, the JIT-map and slow-open helpers and
 * the debuginfo and ELF readers each had a copy of. Nothing here allocates
 * or logs; every call returns what read(2), pread(2) or write(2) said, as
 * a count or a negative errno.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* read(2) of at most @len bytes, retried on EINTR: the count (0 at the
 * end of the file), or -errno. */
ssize_t fdio_read(int fd, void *buf, size_t len);

/* pread(2) of at most @len bytes at @off, retried on EINTR: the count (0
 * past the end), or -errno. */
ssize_t fdio_pread(int fd, void *buf, size_t len, uint64_t off);

/* Exactly @len bytes at @off into @buf: 0, -ENODATA when the file ends
 * first, or -errno. */
int fdio_pread_all(int fd, void *buf, size_t len, uint64_t off);

/* All @len bytes of @buf to @fd: 0, or -errno (-EIO when write(2) wrote
 * nothing). */
int fdio_write_all(int fd, const void *buf, size_t len);

#endif
