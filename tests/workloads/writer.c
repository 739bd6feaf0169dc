// SPDX-License-Identifier: MIT
/* writer N [FILE]: exactly N write(2) calls of one byte to FILE (/dev/null),
 * for exact tracepoint counts. No stdio, so no hidden writes. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
	int fd = open(argc > 2 ? argv[2] : "/dev/null", O_WRONLY);

	if (fd < 0)
		return 1;
	for (long i = 0; i < n; i++)
		if (write(fd, "x", 1) != 1)
			return 1;
	close(fd);
	return 0;
}
