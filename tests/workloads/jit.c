// SPDX-License-Identifier: MIT
/*
 * jit [SECONDS]: puts a spin loop in anonymous executable memory, as a JIT
 * would, announces it in /tmp/perf-PID.map as "jit_spin_loop", and runs it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

/* mov ecx, 10000000; l: dec ecx; jnz l; ret */
static const unsigned char code[] = {0xb9, 0x80, 0x96, 0x98, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3};

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? strtod(argv[1], NULL) : 2.0);
	char path[64];
	void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FILE *f;

	if (mem == MAP_FAILED)
		return 1;
	memcpy(mem, code, sizeof(code));
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC) != 0)
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_spin_loop\n", (unsigned long)(uintptr_t)mem, sizeof(code));
	fclose(f);
	void (*fn)(void) = (void (*)(void))mem;

	while (now() < end)
		fn();
	unlink(path);
	return 0;
}
