// SPDX-License-Identifier: MIT
#include "agent/symbols/perfmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/rootfs.h"
#include "lib/search.h"
#include "lib/grow.h"


struct pm_entry {
	uint64_t start, end;
	uint32_t name; /* offset into names */
};

struct perfmap {
	struct pm_entry *v;
	size_t n, cap;
	char *names;
	size_t nlen, ncap;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int add(struct perfmap *m, uint64_t start, uint64_t size, const char *name)
{
	size_t len = strlen(name) + 1;

	if (m->n >= PERFMAP_MAX_ENTRIES || m->nlen + len > UINT32_MAX)
		return -E2BIG;
	if (GROW_ARRAY(m->v, m->n, m->cap, 256) < 0)
		return -ENOMEM;
	while (m->nlen + len > m->ncap)
		if (GROW_ARRAY(m->names, m->ncap, m->ncap, 4096) < 0)
			return -ENOMEM;
	memcpy(m->names + m->nlen, name, len);
	m->v[m->n].start = start;
	m->v[m->n].end = start + size;
	m->v[m->n].name = (uint32_t)m->nlen;
	m->nlen += len;
	m->n++;
	return 0;
}

struct perfmap *perfmap_load(const char *path)
{
	/* The container's file: resolved inside its root, a regular file of a
	 * real filesystem or nothing (see lib/rootfs.h). */
	int fd = rootfs_open_path(path, ROOTFS_NO_CAP, NULL);

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	return perfmap_load_fd(fd);
}

struct perfmap *perfmap_load_fd(int fd)
{
	struct perfmap *m = calloc(1, sizeof(*m));
	struct rootfs_lines *lr = NULL;
	const char *line;
	size_t len;
	int err = 0, r;

	if (!m || !(lr = rootfs_lines_new(fd, PERFMAP_MAX_LINE, PERFMAP_MAX_BYTES))) {
		err = -errno; /* calloc's ENOMEM or the reader's */
		close(fd);
		goto out;
	}
	while ((r = rootfs_lines_next(lr, &line, &len)) > 0) {
		const char *p = line;
		char *end;
		unsigned long long start, size;

		errno = 0;
		start = strtoull(p, &end, 16);
		if (errno || end == p || *end != ' ')
			continue;
		p = end + 1;
		size = strtoull(p, &end, 16);
		if (errno || end == p || *end != ' ' || !size || start + size < start)
			continue;
		err = add(m, start, size, end + 1);
		if (err == -E2BIG) {
			err = 0;
			break;
		}
		if (err)
			break;
	}
	/* a read error keeps what was read before it */
	rootfs_lines_free(lr);
	/* Names are offsets into one buffer, so sorting moves nothing else. */
	if (!err && m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), cmp_entry);
out:
	if (err) {
		perfmap_free(m);
		errno = -err;
		return NULL;
	}
	return m;
}

bool perfmap_present(const char *path)
{
	int fd = rootfs_open_path(path, ROOTFS_NO_CAP, NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

void perfmap_free(struct perfmap *m)
{
	if (!m)
		return;
	free(m->v);
	free(m->names);
	free(m);
}

const char *perfmap_lookup(const struct perfmap *m, uint64_t addr)
{
	size_t lo;

	if (!m)
		return NULL;
	/* Last entry starting at or below addr, then check it covers addr. */
	lo = search_upper_u64(m->v, m->n, sizeof(*m->v), offsetof(struct pm_entry, start), addr);
	for (size_t i = lo; i-- > 0 && lo - i <= 16;) {
		if (addr < m->v[i].end)
			return m->names + m->v[i].name;
	}
	return NULL;
}

size_t perfmap_count(const struct perfmap *m)
{
	return m ? m->n : 0;
}

int perfmap_path(const char *procfs, pid_t pid, char *buf, size_t len)
{
	char path[64], line[512];
	FILE *f;
	long nspid = -1;

	snprintf(path, sizeof(path), "%s/%d/status", procfs, (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NSpid:", 6)) {
			char *p = line + 6, *end;

			/* The last number is the pid in the innermost namespace. */
			for (;;) {
				long v = strtol(p, &end, 10);

				if (end == p)
					break;
				nspid = v;
				p = end;
			}
			break;
		}
	}
	fclose(f);
	if (nspid <= 0)
		nspid = pid; /* kernels before 4.1 have no NSpid line */
	if ((size_t)snprintf(buf, len, "%s/%d/root/tmp/perf-%ld.map", procfs, (int)pid, nspid) >= len)
		return -ENAMETOOLONG;
	return 0;
}
