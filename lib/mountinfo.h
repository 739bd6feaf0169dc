/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_MOUNTINFO_H
#define CGPERF_LIB_MOUNTINFO_H

/*
 * The one parser of /proc/PID/mountinfo lines (proc(5)), for the cgroup
 * mounts (cgroup/mount.c) and the FUSE mounts (lib/fusemnt.c):
 *
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   id par dev root point  options   optional... - fstype source super-options
 *
 * Fields are separated by spaces; the kernel writes space, tab, newline and
 * backslash inside a field as \ooo, decoded here for the root and the mount
 * point (only well-formed escapes: \[0-3][0-7][0-7]). A line is a mount
 * when it has the six leading fields, then a lone "-" field, then at least
 * the file system type and the source; the super options may be missing
 * ("" then). Anything else is not a mount line and is skipped.
 *
 * Library module: does not print, holds no state. Parsing cuts the caller's
 * writable buffer in place (NULs between fields); the entry points into it.
 */

#include <stddef.h>

struct mountinfo_entry {
	const char *root;   /* root of the mount in its file system, decoded */
	const char *point;  /* mount point, decoded */
	const char *fstype; /* "cgroup2", "fuse.sshfs", ... */
	const char *source;
	const char *super; /* super options, "" when absent */
	size_t point_len;  /* strlen(point) */
};

/*
 * Parse one line (@line writable, NUL-terminated, no newline) in place.
 * 0 and *@e set, or -EINVAL when it is not a mount line (@e untouched;
 * @line may be cut all the same).
 */
int mountinfo_parse_line(char *line, struct mountinfo_entry *e);

/*
 * Each mount line of @text (writable, NUL-terminated, lines split on '\n'
 * and cut in place) to @cb, in order; other lines are skipped. Stops at the
 * first non-zero return of @cb and returns it; 0 when all were seen.
 */
int mountinfo_foreach(char *text, int (*cb)(void *ctx, const struct mountinfo_entry *e),
		      void *ctx);

/* Decode mountinfo's \ooo escapes in the first @len bytes of @s, in place,
 * NUL-terminating the result; its length. */
size_t mountinfo_unescape(char *s, size_t len);

#endif
