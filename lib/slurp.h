/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_SLURP_H
#define CGPERF_LIB_SLURP_H

/*
 * Reading a whole file into memory, with a cap: the one way every module
 * reads a file of unknown size (procfs files, kallsyms, configuration,
 * batch files). The buffer grows by doubling from a small start, so a
 * short file costs little and a long one is read in few calls; nothing past
 * @cap is kept, and at most one byte past it is read (to tell "exactly
 * @cap" from "more").
 */

#include <stdbool.h>
#include <stddef.h>

/*
 * Read at most @cap bytes of @fd from its current offset into a new
 * NUL-terminated buffer (*@buf, the caller frees; *@len without the NUL;
 * the data may hold NULs itself). @truncated (may be NULL): set when the
 * file held more; with NULL the rest is left unread, silently. Both
 * out-parameters are set only on success. 0 or -errno (-ENOMEM).
 */
int slurp_fd(int fd, size_t cap, char **buf, size_t *len, bool *truncated);

/*
 * The same for @path, opened read-only relative to @dirfd (AT_FDCWD: the
 * working directory; ignored for an absolute path) and closed again.
 * 0 or -errno (of open() as well).
 */
int slurp_at(int dirfd, const char *path, size_t cap, char **buf, size_t *len, bool *truncated);

#endif
