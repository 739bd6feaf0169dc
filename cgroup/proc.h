/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_CGROUP_PROC_H
#define CGPERF_CGROUP_PROC_H

/*
 * Processes of the host, as /proc shows them, and selectors that pick
 * processes by comm, executable, command line or cgroup ("all PostgreSQL
 * backends"). Nothing here prints.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* At most this many bytes of /proc/PID/cmdline are read; the rest is dropped. */
#define CG_PROC_CMDLINE_MAX (64 * 1024)

struct cg_proc {
	pid_t pid;
	pid_t ppid;
	char comm[17];  /* /proc/PID/comm without the newline (cut to 16 bytes) */
	char *exe;      /* readlink(/proc/PID/exe), or NULL (kernel thread, no permission);
			 * a " (deleted)" suffix is kept as the kernel wrote it */
	char *cmdline;  /* NUL-separated args joined by single spaces, trailing NULs dropped,
			 * capped at CG_PROC_CMDLINE_MAX bytes; "" for kernel threads */
	char *cgroup;   /* cgroup v2 path from the "0::" line of /proc/PID/cgroup (relative
			 * to the reader's cgroup namespace), or NULL when there is no such
			 * line or the kernel refused a path of PATH_MAX or more */
};

/*
 * Fill @out from @procfs (normally "/proc") for @pid. All files are read
 * through one descriptor of PROCFS/PID, so a record never mixes two
 * processes that shared a pid. Returns 0 or -errno: -ENOENT when the process
 * has gone (or never existed), -EINVAL for pid <= 0, -EBADMSG for a stat
 * file that cannot be parsed. @out is only touched on success; the caller
 * then owns its strings (cg_proc_release()).
 */
int cg_proc_read(const char *procfs, pid_t pid, struct cg_proc *out);
/* Free the strings of @p (not @p itself) and NULL them. Accepts NULL. */
void cg_proc_release(struct cg_proc *p);

struct cg_proc_list;

/*
 * Every process (thread group) under @procfs, sorted by pid. Processes that
 * vanish while being read are skipped, and so are those procfs hides from
 * us (EACCES/EPERM under hidepid=) and numeric entries that are not
 * directories. Returns NULL with errno set on failure.
 */
struct cg_proc_list *cg_proc_list_read(const char *procfs);
/* Number of records; 0 for NULL. */
size_t cg_proc_list_count(const struct cg_proc_list *l);
/* Record @i (0-based, in pid order), owned by @l; NULL when out of range. */
const struct cg_proc *cg_proc_list_get(const struct cg_proc_list *l, size_t i);
/* Free @l and every record in it. Accepts NULL. */
void cg_proc_list_free(struct cg_proc_list *l);

/*
 * Selector syntax: terms joined by ',' and all must match:
 *   comm=GLOB       process name (fnmatch)
 *   exe=GLOB        executable path (fnmatch, '*' crosses '/')
 *   cgroup=GLOB     cgroup v2 path (fnmatch, '*' crosses '/')
 *   pid=N           one process
 *   cmdline~REGEX   POSIX extended regex on the joined command line; this
 *                   term takes the rest of the string, so it comes last.
 * A bare word without '=' or '~' means comm=WORD.
 * Globs use fnmatch() without flags, so they cannot contain ','. Blanks are
 * not trimmed: "comm=a, exe=b" has the key " exe". Empty terms and empty
 * values are errors. Example: "postgres,cgroup=*postgresql*,cmdline~: (idle|active)$"
 */
struct cg_selector;

/*
 * Returns NULL and writes a reason into @err (if non-NULL; at most @errlen
 * bytes, NUL-terminated) on a bad spec, with errno EINVAL, or ENOMEM.
 */
struct cg_selector *cg_selector_parse(const char *spec, char *err, size_t errlen);
/*
 * True when @p satisfies every term of @s. A NULL exe or cgroup matches no
 * exe= or cgroup= term. False when either argument is NULL.
 */
bool cg_selector_match(const struct cg_selector *s, const struct cg_proc *p);
/* Accepts NULL. */
void cg_selector_free(struct cg_selector *s);

#endif
