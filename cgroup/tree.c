// SPDX-License-Identifier: MIT
#include "cgroup/tree.h"
#include "lib/grow.h"
#include "lib/strv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cg_tree {
	struct cg_node *v;
	size_t n, cap;
};

static long count_procs(int dirfd)
{
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	char buf[8192];
	long lines = 0;
	ssize_t r;

	if (fd < 0)
		return -1;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			lines += buf[i] == '\n';
	close(fd);
	return r < 0 ? -1 : lines;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int tree_add(struct cg_tree *t, const char *path, int depth, uint64_t id, long nprocs)
{
	struct cg_node *n;

	if (GROW_ARRAY(t->v, t->n, t->cap, 64) < 0)
		return -ENOMEM;
	n = &t->v[t->n];
	memset(n, 0, sizeof(*n));
	n->path = strdup(path);
	if (!n->path)
		return -ENOMEM;
	n->depth = depth;
	n->id = id;
	n->nprocs = nprocs;
	cg_identity_parse(path, &n->ident);
	t->n++;
	return 0;
}

/* Collect the names of @dirfd's subdirectories, sorted. Takes ownership of
 * nothing; returns the count or -errno. */
static int list_subdirs(int dirfd, char ***out)
{
	int fd = dup(dirfd);
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (GROW_ARRAY(names, n, cap, 16) < 0)
			goto nomem;
		names[n] = strdup(e->d_name);
		if (!names[n])
			goto nomem;
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	*out = names;
	return (int)n;
nomem:
	closedir(d);
	strv_free(names, n);
	return -ENOMEM;
}

static int walk(struct cg_tree *t, int dirfd, const char *path, int depth)
{
	struct stat st;
	char **names = NULL;
	int n, err = 0;

	if (fstat(dirfd, &st) < 0)
		return -errno;
	err = tree_add(t, path, depth, (uint64_t)st.st_ino, count_procs(dirfd));
	if (err || depth >= CG_TREE_MAX_DEPTH)
		return err;

	n = list_subdirs(dirfd, &names);
	if (n < 0)
		return n == -ENOENT ? 0 : n;
	for (int i = 0; i < n; i++) {
		size_t plen = strlen(path), clen = strlen(names[i]);
		char *child = malloc(plen + clen + 2);
		int cfd;

		if (!child) {
			err = -ENOMEM;
			break;
		}
		/* The root is "/", every other path has no trailing slash. */
		memcpy(child, path, plen);
		if (plen > 1)
			child[plen++] = '/';
		memcpy(child + plen, names[i], clen + 1);

		cfd = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (cfd >= 0) {
			err = walk(t, cfd, child, depth + 1);
			close(cfd);
		}
		/* A cgroup removed mid-walk is simply not part of the snapshot. */
		free(child);
		if (err)
			break;
	}
	strv_free(names, (size_t)n);
	return err;
}

struct cg_tree *cg_tree_scan(const char *mount)
{
	struct cg_tree *t = calloc(1, sizeof(*t));
	int fd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err;

	if (!t)
		err = -ENOMEM;
	else if (fd < 0)
		err = -errno;
	else
		err = walk(t, fd, "/", 0);
	if (fd >= 0)
		close(fd);
	if (err) {
		cg_tree_free(t);
		errno = -err;
		return NULL;
	}
	return t;
}

void cg_tree_free(struct cg_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].path);
	free(t->v);
	free(t);
}

size_t cg_tree_count(const struct cg_tree *t)
{
	return t ? t->n : 0;
}

const struct cg_node *cg_tree_get(const struct cg_tree *t, size_t i)
{
	return t && i < t->n ? &t->v[i] : NULL;
}

const struct cg_node *cg_tree_find(const struct cg_tree *t, const char *path)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (!strcmp(t->v[i].path, path))
			return &t->v[i];
	return NULL;
}

char *cg_path_normalize(const char *mount, const char *user)
{
	size_t mlen = mount ? strlen(mount) : 0, ulen;
	char *out, *o;
	const char *p = user;

	if (!user) {
		errno = EINVAL;
		return NULL;
	}
	while (mlen > 1 && mount[mlen - 1] == '/')
		mlen--;
	/* An absolute filesystem path under the mount point: drop the mount. */
	if (mlen > 1 && !strncmp(user, mount, mlen) && (user[mlen] == '/' || !user[mlen]))
		p = user + mlen;
	ulen = strlen(p);
	out = malloc(ulen + 2);
	if (!out)
		return NULL;
	o = out;
	*o++ = '/';
	for (; *p; p++) {
		if (*p == '/' && o[-1] == '/')
			continue;
		*o++ = *p;
	}
	if (o > out + 1 && o[-1] == '/')
		o--;
	*o = '\0';
	/* ".." would name something outside the hierarchy. */
	for (const char *q = out; (q = strstr(q, "/..")); q += 3) {
		if (q[3] == '/' || q[3] == '\0') {
			free(out);
			errno = EINVAL;
			return NULL;
		}
	}
	return out;
}

int cg_path_id(const char *mount, const char *path, uint64_t *id)
{
	struct stat st;
	size_t len = strlen(mount) + strlen(path) + 2;
	char *full = malloc(len);
	int ret = 0;

	if (!full)
		return -ENOMEM;
	snprintf(full, len, "%s%s", mount, path);
	if (stat(full, &st) < 0)
		ret = -errno;
	else if (!S_ISDIR(st.st_mode))
		ret = -ENOTDIR;
	else
		*id = (uint64_t)st.st_ino;
	free(full);
	return ret;
}
