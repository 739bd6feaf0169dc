// SPDX-License-Identifier: MIT
/* Arrays that grow by doubling: see lib/grow.h. */
#include "lib/grow.h"

#include <stdint.h>
#include <stdlib.h>

void *grow_array(void *v, size_t *cap, size_t size, size_t first)
{
	size_t nc = *cap ? *cap * 2 : first;
	void *nv;

	if (nc < *cap || !size || nc > SIZE_MAX / size)
		return NULL;
	nv = realloc(v, nc * size);
	if (nv)
		*cap = nc;
	return nv;
}
