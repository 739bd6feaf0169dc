// SPDX-License-Identifier: MIT
/*
 * libFuzzer over the DWARF unwinder's loading of a binary: its program and
 * section headers, .eh_frame_hdr (version, encodings, the pointer to
 * .eh_frame, the table's count and bounds), the .eh_frame scan for indirect
 * words, and then libunwind's lookup in that table for one IP, all from a
 * file a container may have put there. The input is 8 control bytes (where
 * the sampled IP falls in the file) then the file, mapped at 0x400000 as
 * one executable range. The registers and the stack copy are zero but for
 * IP and SP. Properties: unwind_dwarf() returns 1..max frames (the IP is
 * there) and the first one is the IP.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <asm/perf_regs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/unwind.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAP_START 0x400000ull
#define STACK_AT 0x7ffd00000000ull

static const struct unwind_map *find_map(void *ctx, uint64_t ip)
{
	const struct unwind_map *m = ctx;

	return ip >= m->start && ip < m->end ? m : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t stack[512];
	uint64_t regs[64] = { 0 }, ips[32], mask = unwind_dwarf_regs_mask(), ip, pick;
	struct unwind_map map = { 0 };
	struct unwind_sample s = { 0 };
	struct unwind_cache *c;
	const char *path;
	size_t nregs = 0;
	int ret;

	if (size <= 8)
		return 0;
	memcpy(&pick, data, 8);
	path = fuzz_file(data + 8, size - 8);
	if (!path)
		return 0;
	map = (struct unwind_map){ .start = MAP_START, .end = MAP_START + (size - 8),
				   .pgoff = 0, .path = path };
	ip = MAP_START + pick % (size - 8);
	for (int r = 0; r < 64; r++) {
		if (!(mask & (1ull << r)))
			continue;
		if (nregs == 64)
			abort();
		regs[nregs++] = r == PERF_REG_X86_IP ? ip : r == PERF_REG_X86_SP ? STACK_AT : 0;
	}
	s = (struct unwind_sample){ .regs = regs, .regs_mask = mask, .stack = stack,
				    .stack_size = sizeof(stack), .find_map = find_map, .ctx = &map };
	c = unwind_cache_new(4);
	if (!c)
		return 0;
	ret = unwind_dwarf(c, &s, ips, 32);
	if (ret < 1 || ret > 32 || ips[0] != ip)
		abort();
	unwind_cache_free(c);
	return 0;
}
