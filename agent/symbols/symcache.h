/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_SYMCACHE_H
#define CGPERF_AGENT_SYMCACHE_H

/*
 * A private on-disk cache for symbolization inputs that are expensive to
 * produce and never change under their key: the kernel's own symbols for
 * one boot (keyed by boot_id) and decompressed DWARF of one ELF file
 * (keyed by build-id). perf keeps the same kind of cache in ~/.debug.
 *
 * The directory is $CGPERF_CACHE_DIR when set ("" or "off" disables the
 * cache), else /var/cache/cgperf for root and $XDG_CACHE_HOME/cgperf or
 * ~/.cache/cgperf for others. It is created 0700 and used only while it is
 * a real directory owned by the caller and writable by nobody else, below
 * directories owned by root or the caller that nobody else can write to
 * (or sticky ones, as /tmp): no one else can swap it for a symlink. Files
 * are written under a temporary name and renamed into place, so readers
 * (other agents running at the same time) see whole files or none.
 * Entries are read only when owned by the caller and not group/other
 * writable, and every reader still validates what it maps.
 */

#include <stddef.h>

/* The cache directory, created on first use; NULL when disabled or unusable. */
const char *symcache_dir(void);

/*
 * Open entry @name of @dir for reading: O_RDONLY, no symlinks, a regular
 * file owned by the caller and writable only by it. fd or -errno.
 */
int symcache_open(const char *dir, const char *name);

/*
 * Start writing entry @name: an fd on a new temporary file in @dir, whose
 * path goes to @tmp (@size bytes). Finish with symcache_commit() or
 * symcache_abort(). fd or -errno.
 */
int symcache_create(const char *dir, const char *name, char *tmp, size_t size);
/* Close @fd and rename @tmp to @name: 0 or -errno (the temporary is removed). */
int symcache_commit(int fd, const char *tmp, const char *dir, const char *name);
/* Close @fd and remove @tmp. */
void symcache_abort(int fd, const char *tmp);

/*
 * Remove entries of @dir whose names start with @prefix, except @keep (may
 * be NULL), oldest first, until at most @max_bytes of them remain (0: all).
 * Temporaries of such entries that writers which died left behind (an hour
 * old) go too.
 */
void symcache_trim(const char *dir, const char *prefix, const char *keep, size_t max_bytes);

#endif
