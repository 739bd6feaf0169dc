// SPDX-License-Identifier: MIT
/* alloc: exactly 1000 malloc(24), 300 malloc(1000), 50 malloc(70000), then
 * frees them; no stdio, so libc makes no allocations of its own. */
#include <stdlib.h>

static void *p[1350];

int main(void)
{
	int n = 0;

	for (int i = 0; i < 1000; i++)
		p[n++] = malloc(24);
	for (int i = 0; i < 300; i++)
		p[n++] = malloc(1000);
	for (int i = 0; i < 50; i++)
		p[n++] = malloc(70000);
	for (int i = 0; i < n; i++)
		free(p[i]);
	return 0;
}
