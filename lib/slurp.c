// SPDX-License-Identifier: MIT
#include "lib/slurp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int slurp_fd(int fd, size_t cap, char **buf, size_t *len, bool *truncated)
{
	size_t have = 0, size = cap < 4096 ? cap : 4096;
	char *b = malloc(size + 1), *nb;
	int err = 0;

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (have == size) {
			if (size == cap)
				break;
			size = size > cap / 2 ? cap : size * 2;
			nb = realloc(b, size + 1);
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			b = nb;
		}
		r = read(fd, b + have, size - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		have += (size_t)r;
	}
	if (truncated) {
		char c;
		ssize_t r;

		*truncated = false;
		if (have == cap) {
			do
				r = read(fd, &c, 1);
			while (r < 0 && errno == EINTR);
			*truncated = r > 0;
		}
	}
	b[have] = '\0';
	*buf = b;
	*len = have;
	b = NULL;
out:
	free(b);
	return err;
}

int slurp_at(int dirfd, const char *path, size_t cap, char **buf, size_t *len, bool *truncated)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	int err;

	if (fd < 0)
		return -errno;
	err = slurp_fd(fd, cap, buf, len, truncated);
	close(fd);
	return err;
}
