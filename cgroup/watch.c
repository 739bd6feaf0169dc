// SPDX-License-Identifier: MIT
#include "cgroup/watch.h"
#include "lib/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR)

struct wd_entry {
	int wd;
	char *path; /* relative, "/" for the root; NULL for a free slot */
};

struct cg_watch {
	int fd;
	char *mount;
	struct wd_entry *v;
	size_t n, cap;
};

static struct wd_entry *find_wd(struct cg_watch *w, int wd)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].path && w->v[i].wd == wd)
			return &w->v[i];
	return NULL;
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);

	if (!s)
		return NULL;
	memcpy(s, a, la);
	if (la == 0 || a[la - 1] != '/')
		s[la++] = '/';
	memcpy(s + la, b, lb + 1);
	return s;
}

static int add_watch(struct cg_watch *w, const char *rel)
{
	char *abs = rel[1] ? join(w->mount, rel + 1) : strdup(w->mount);
	struct wd_entry *slot = NULL;
	int wd;

	if (!abs)
		return -ENOMEM;
	wd = inotify_add_watch(w->fd, abs, WATCH_MASK);
	free(abs);
	if (wd < 0)
		return -errno;
	slot = find_wd(w, wd);
	if (slot) {
		/* Already watched (inotify returns the same wd): a directory
		 * renamed keeps its watch, and now goes by @rel. */
		char *path;

		if (!strcmp(slot->path, rel))
			return 0;
		path = strdup(rel);
		if (!path)
			return -ENOMEM; /* the watch stays, under its old name */
		free(slot->path);
		slot->path = path;
		return 0;
	}
	for (size_t i = 0; i < w->n && !slot; i++)
		if (!w->v[i].path)
			slot = &w->v[i];
	if (!slot) {
		if (GROW_ARRAY(w->v, w->n, w->cap, 64) < 0)
			goto nomem;
		slot = &w->v[w->n++];
	}
	slot->path = strdup(rel);
	if (!slot->path)
		goto nomem;
	slot->wd = wd;
	return 0;
nomem:
	inotify_rm_watch(w->fd, wd);
	return -ENOMEM;
}

/* Add watches on @rel and everything below it; report each directory found
 * below @rel (not @rel itself) through @cb when it is non-NULL. */
static int add_tree(struct cg_watch *w, const char *rel, int depth, cg_watch_cb cb, void *ctx,
		    int *calls)
{
	char *abs;
	DIR *d;
	struct dirent *e;
	int err;

	err = add_watch(w, rel);
	if (err)
		return err == -ENOENT ? 0 : err;
	if (depth > 64)
		return 0;
	abs = rel[1] ? join(w->mount, rel + 1) : strdup(w->mount);
	if (!abs)
		return -ENOMEM;
	d = opendir(abs);
	free(abs);
	if (!d)
		return 0; /* removed meanwhile: its IN_DELETE will follow */
	while ((e = readdir(d))) {
		char *child;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		child = join(rel, e->d_name);
		if (!child) {
			err = -ENOMEM;
			break;
		}
		if (cb) {
			cb(ctx, CG_WATCH_ADDED, child);
			(*calls)++;
		}
		err = add_tree(w, child, depth + 1, cb, ctx, calls);
		free(child);
		if (err)
			break;
	}
	closedir(d);
	return err;
}

struct cg_watch *cg_watch_new(const char *mount)
{
	struct cg_watch *w = calloc(1, sizeof(*w));
	int err, calls = 0;

	if (!w)
		return NULL;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	w->mount = strdup(mount);
	if (w->fd < 0 || !w->mount) {
		err = w->fd < 0 ? errno : ENOMEM;
		goto fail;
	}
	/* The root must be there: add_tree() forgives a vanished directory,
	 * which is right below the root (removed meanwhile), not for it. */
	err = -add_watch(w, "/");
	if (!err)
		err = -add_tree(w, "/", 0, NULL, NULL, &calls);
	if (err)
		goto fail;
	return w;
fail:
	cg_watch_free(w);
	errno = err;
	return NULL;
}

void cg_watch_free(struct cg_watch *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i].path);
	free(w->v);
	free(w->mount);
	free(w);
}

int cg_watch_fd(const struct cg_watch *w)
{
	return w->fd;
}

int cg_watch_read(struct cg_watch *w, cg_watch_cb cb, void *ctx)
{
	char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	int calls = 0;

	for (;;) {
		ssize_t len = read(w->fd, buf, sizeof(buf));

		if (len < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? calls : -errno;
		}
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			struct wd_entry *ent;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				cb(ctx, CG_WATCH_OVERFLOW, "/");
				calls++;
				continue;
			}
			ent = find_wd(w, ev->wd);
			if (ev->mask & IN_IGNORED) {
				if (ent) {
					free(ent->path);
					ent->path = NULL;
				}
				continue;
			}
			if (!ent || !ev->len || !(ev->mask & IN_ISDIR))
				continue;
			char *child = join(ent->path, ev->name);

			if (!child)
				return -ENOMEM;
			if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
				cb(ctx, CG_WATCH_ADDED, child);
				calls++;
				int err = add_tree(w, child, 1, cb, ctx, &calls);

				if (err && err != -ENOSPC) {
					free(child);
					return err;
				}
			} else if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
				cb(ctx, CG_WATCH_REMOVED, child);
				calls++;
			}
			free(child);
		}
	}
}
