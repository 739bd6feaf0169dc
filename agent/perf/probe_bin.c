// SPDX-License-Identifier: MIT
/*
 * Finding the file a probe spec names (probe_int.h, probe.h's BINARY).
 * Users write "libc" or "postgres", not paths; a process in a container maps
 * its own libc, another inode than the host's, and a probe on the host's
 * file would never fire there. So the files the given processes map come
 * first (reached through /proc/PID/root, named by their plain path when they
 * are the very inode of that path here), then PATH, then the library
 * directories; among several matches the closest name wins.
 */
#include "agent/perf/probe_int.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/perf/usdt.h"
#include "agent/symbols/dso.h"
#include "agent/symbols/symtab.h"
#include "lib/rootfs.h"

#define PROBE_MAPS_LINES (1u << 20) /* lines of one /proc/PID/maps read */
#define PROBE_PATH_ENV_MAX 8192	  /* $PATH considered */
#define PROBE_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const char *const lib_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
	"/usr/lib",
};
#define NLIB_DIRS (sizeof(lib_dirs) / sizeof(lib_dirs[0]))

/* ---- small helpers ---- */

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

const char *probe_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* A regular file with an ELF executable or shared-object header. */
static bool is_elf(const char *path)
{
	unsigned char h[EI_NIDENT + 2];
	struct stat st;
	bool ok;
	/* /proc/PID/root/... resolved inside that root; regular files only */
	int fd = rootfs_open_path(path, ROOTFS_ELF_MAX, &st);

	if (fd < 0)
		return false;
	ok = S_ISREG(st.st_mode) && read(fd, h, sizeof(h)) == sizeof(h) &&
	     memcmp(h, ELFMAG, SELFMAG) == 0 && h[EI_DATA] == ELFDATA2LSB &&
	     (h[EI_NIDENT] == ET_EXEC || h[EI_NIDENT] == ET_DYN) && h[EI_NIDENT + 1] == 0;
	close(fd);
	return ok;
}

/* @a (maybe a /proc/PID/root/... path, resolved inside that root) and the
 * host path @b are one inode. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	int fd = rootfs_open_path(a, ROOTFS_ELF_MAX, &sa);

	if (fd < 0)
		return false;
	close(fd);
	return stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* ---- finding the binary ---- */

/*
 * How well file name @base matches what the user called @name: 0 exact,
 * 1 NAME.so*, NAME-* ("libc" -> libc.so.6, "python3" -> python3.11),
 * 2 libNAME.so*, libNAME-* ("c" -> libc.so.6); -1 no match.
 */
static int name_rank(const char *base, const char *name)
{
	size_t n = strlen(name);

	if (strcmp(base, name) == 0)
		return 0;
	if (strncmp(base, name, n) == 0 && (base[n] == '.' || base[n] == '-'))
		return 1;
	if (starts_with(base, "lib") && strncmp(base + 3, name, n) == 0 &&
	    (base[3 + n] == '.' || base[3 + n] == '-'))
		return 2;
	return -1;
}

/* Is (rank, base) a better match than the best so far? Then the shorter, then by name. */
static bool better(int rank, const char *base, int best_rank, const char *best_base)
{
	size_t l = strlen(base), bl;

	if (best_rank < 0 || rank < best_rank)
		return true;
	if (rank > best_rank)
		return false;
	bl = strlen(best_base);
	return l < bl || (l == bl && strcmp(base, best_base) < 0);
}

void probe_bin_release(struct probe_bin *b)
{
	free(b->path);
	free(b->debug_root);
	dso_put(b->dso);
	b->path = b->debug_root = NULL;
	b->dso = NULL;
}

static struct dso *bin_dso(struct probe_bin *b)
{
	if (!b->dso)
		b->dso = dso_open(b->path, 0, 0);
	return b->dso;
}

struct symtab *probe_bin_symtab(struct probe_bin *b)
{
	return bin_dso(b) ? symtab_new(b->dso, b->debug_root) : NULL;
}

struct usdt_list *probe_bin_usdt(struct probe_bin *b)
{
	return bin_dso(b) ? usdt_read_dso(b->dso) : NULL;
}

/*
 * Name the file @path mapped by @pid as seen from here: the plain path when
 * it is the same inode here, else through /proc/PID/root.
 */
int probe_bin_from_pid(int pid, const char *path, struct probe_bin *out)
{
	char root[32];
	size_t n;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	n = strlen(root) + strlen(path) + 1;
	out->path = malloc(n);
	if (!out->path)
		return -ENOMEM;
	snprintf(out->path, n, "%s%s", root, path);
	if (same_file(out->path, path)) {
		memcpy(out->path, path, strlen(path) + 1);
		out->debug_root = strdup("");
	} else {
		out->debug_root = strdup(root);
	}
	if (!out->debug_root) {
		probe_bin_release(out);
		return -ENOMEM;
	}
	return 0;
}

/* Called per file-backed mapping: 0 continue, >0 stop, <0 error. */
int probe_maps_foreach(int pid, probe_maps_fn fn, void *ctx)
{
	char mpath[32], *line = NULL;
	size_t cap = 0, lines = 0;
	ssize_t n;
	FILE *f;
	int ret = 0;

	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", pid);
	f = fopen(mpath, "re");
	if (!f)
		return -errno;
	while (ret == 0 && lines++ < PROBE_MAPS_LINES && (n = getline(&line, &cap, f)) > 0) {
		char perms[8];
		int at = 0;
		char *path;
		size_t len;

		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &at) != 1 || at <= 0 || at >= n)
			continue;
		path = line + at;
		len = strlen(path);
		/* a deleted file cannot be opened by name any more */
		if (path[0] != '/' || len > PATH_MAX ||
		    (len > 10 && strcmp(path + len - 10, " (deleted)") == 0))
			continue;
		ret = fn(ctx, path, strchr(perms, 'x') != NULL);
	}
	free(line);
	fclose(f);
	return ret < 0 ? ret : 0;
}

struct maps_match {
	const char *name;
	char *best; /* mapped path */
	int best_rank;
	int err;
};

static int maps_match_one(void *ctx, const char *path, bool exec)
{
	struct maps_match *mm = ctx;
	int rank = name_rank(probe_base_name(path), mm->name);
	char *dup;

	if (rank < 0 || !better(rank, probe_base_name(path), mm->best_rank,
				mm->best ? probe_base_name(mm->best) : ""))
		return 0;
	dup = strdup(path);
	if (!dup)
		return -ENOMEM;
	free(mm->best);
	mm->best = dup;
	mm->best_rank = rank;
	return 0;
}

int probe_pids_foreach(const int *pids, size_t npids, probe_pid_fn fn, void *ctx)
{
	int ret = 0;

	for (size_t i = 0; i < npids && !ret; i++)
		if (pids[i] > 0)
			ret = fn(ctx, pids[i]);
	return ret;
}

struct pid_search {
	const char *name;
	struct probe_bin *out;
};

/* @pid's best-named mapped file, if an ELF: 1 with *out filled. */
static int find_in_pid(void *ctx, int pid)
{
	struct pid_search *ps = ctx;
	struct maps_match mm = { .name = ps->name, .best_rank = -1 };
	struct probe_bin b = { 0 };
	int err = probe_maps_foreach(pid, maps_match_one, &mm);

	if (err == -ENOMEM || !mm.best) {
		free(mm.best);
		return err == -ENOMEM ? err : 0;
	}
	err = probe_bin_from_pid(pid, mm.best, &b);
	free(mm.best);
	if (err < 0)
		return err;
	if (is_elf(b.path)) {
		*ps->out = b;
		return 1;
	}
	probe_bin_release(&b);
	return 0;
}

static int find_in_pids(const char *name, const int *pids, size_t npids, struct probe_bin *out)
{
	struct pid_search ps = { name, out };
	int ret = probe_pids_foreach(pids, npids, find_in_pid, &ps);

	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

/* An ELF executable named @name in $PATH. @skipped: the first non-ELF one. */
static int find_in_path(const char *name, char **out, char **skipped)
{
	const char *env = getenv("PATH");
	char *copy, *save = NULL, *cand = NULL;
	int err = -ENOENT;

	if (!env || !*env || strlen(env) > PROBE_PATH_ENV_MAX)
		env = PROBE_DEFAULT_PATH;
	copy = strdup(env);
	if (!copy)
		return -ENOMEM;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		size_t n = strlen(dir) + strlen(name) + 2;
		struct stat st;

		/* relative entries (".") would make the answer depend on the cwd */
		if (dir[0] != '/')
			continue;
		free(cand);
		cand = malloc(n);
		if (!cand) {
			err = -ENOMEM;
			break;
		}
		snprintf(cand, n, "%s/%s", dir, name);
		if (stat(cand, &st) < 0 || !S_ISREG(st.st_mode) || access(cand, X_OK) < 0)
			continue;
		if (is_elf(cand)) {
			*out = cand;
			cand = NULL;
			err = 0;
			break;
		}
		if (skipped && !*skipped) {
			*skipped = cand;
			cand = NULL;
		}
	}
	free(cand);
	free(copy);
	return err;
}

/* The best-matching ELF file in the first library directory holding one. */
static int find_in_libdirs(const char *name, char **out)
{
	for (size_t i = 0; i < NLIB_DIRS; i++) {
		char *best = NULL;
		int best_rank = -1;
		struct dirent *e;
		DIR *d = opendir(lib_dirs[i]);

		if (!d)
			continue;
		while ((e = readdir(d))) {
			int rank = name_rank(e->d_name, name);
			size_t n;
			char *cand;

			if (rank < 0 ||
			    !better(rank, e->d_name, best_rank, best ? probe_base_name(best) : ""))
				continue;
			n = strlen(lib_dirs[i]) + strlen(e->d_name) + 2;
			cand = malloc(n);
			if (!cand) {
				free(best);
				closedir(d);
				return -ENOMEM;
			}
			snprintf(cand, n, "%s/%s", lib_dirs[i], e->d_name);
			/* libc.so is a linker script; libc.so.6 is the library */
			if (!is_elf(cand)) {
				free(cand);
				continue;
			}
			free(best);
			best = cand;
			best_rank = rank;
		}
		closedir(d);
		if (best) {
			*out = best;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Resolve BINARY @name (see probe.h for the order). On failure, appends to
 * @m what was tried (the caller has written the spec's prefix).
 */
int probe_bin_resolve(const char *name, const int *pids, size_t npids, struct probe_bin *out,
		       struct probe_msg *m)
{
	struct probe_bin b = { 0 };
	char *skipped = NULL;
	size_t searched = 0;
	int err;

	if (!name[0]) {
		probe_msg_add(m, "empty binary name");
		return -EINVAL;
	}
	if (strchr(name, '/')) {
		struct stat st;

		if (stat(name, &st) < 0) {
			err = -errno;
			probe_msg_add(m, "%s: %s", name, strerror(-err));
			return err;
		}
		if (!S_ISREG(st.st_mode)) {
			probe_msg_add(m, "%s is not a regular file", name);
			return -EINVAL;
		}
		b.path = strdup(name);
		b.debug_root = strdup("");
		if (!b.path || !b.debug_root) {
			probe_bin_release(&b);
			return -ENOMEM;
		}
		*out = b;
		return 0;
	}
	err = find_in_pids(name, pids, npids, &b);
	if (err != -ENOENT)
		goto done;
	err = find_in_path(name, &b.path, &skipped);
	if (err == -ENOENT)
		err = find_in_libdirs(name, &b.path);
	if (err == 0 && !(b.debug_root = strdup("")))
		err = -ENOMEM;
	if (err != -ENOENT)
		goto done;

	probe_msg_add(m, "cannot find binary \"%s\": ", name);
	for (size_t i = 0; i < npids; i++) {
		if (pids[i] <= 0)
			continue;
		probe_msg_add(m, "%s%d", searched++ ? ", " : "not mapped by pid ", pids[i]);
	}
	if (searched)
		probe_msg_add(m, "; ");
	probe_msg_add(m, "no ELF executable \"%s\" in PATH", name);
	if (skipped)
		probe_msg_add(m, " (%s is not ELF)", skipped);
	probe_msg_add(m, "; no %s, %s.so*, lib%s.so* in", name, name, name);
	for (size_t i = 0; i < NLIB_DIRS; i++)
		probe_msg_add(m, "%s%s", i ? ", " : " ", lib_dirs[i]);
	probe_msg_add(m, "; give its path%s", npids ? "" : " or the processes that map it");
done:
	free(skipped);
	if (err == 0)
		*out = b;
	else
		probe_bin_release(&b);
	return err;
}

int probe_find_binary(const char *name, const int *pids, size_t npids, char **path, char *err,
		      size_t errlen)
{
	struct probe_msg m;
	struct probe_bin b = { 0 };
	int ret;

	probe_msg_init(&m, err, errlen);
	ret = probe_bin_resolve(name, pids, npids, &b, &m);
	if (ret)
		return ret;
	*path = b.path;
	b.path = NULL;
	probe_bin_release(&b);
	return 0;
}
