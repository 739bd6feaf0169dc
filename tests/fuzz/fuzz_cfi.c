// SPDX-License-Identifier: MIT
/*
 * libFuzzer over unwind_cfi_indirect(): the .eh_frame scan that runs on
 * every binary the DWARF unwinder loads, a container's binaries included,
 * so its bytes are hostile. The input is .eh_frame bytes; its first byte
 * picks the link-time address (alignment matters to DW_EH_PE_aligned) and
 * how many slots may be kept. Properties: no read outside the input (ASan,
 * the input being a heap block of exactly its size), the count within the
 * bound, the slots sorted without duplicates, and the same answer twice.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t slots[16], again[16], vaddr;
	size_t max, n, m;
	uint8_t *eh;

	if (!size)
		return 0;
	vaddr = 0x400000ull + (data[0] & 7u);
	max = 1 + (data[0] >> 4);
	eh = malloc(size - 1 ? size - 1 : 1);
	if (!eh)
		return 0;
	memcpy(eh, data + 1, size - 1);
	n = unwind_cfi_indirect(eh, size - 1, vaddr, slots, max);
	if (n > max)
		abort();
	for (size_t i = 1; i < n; i++)
		if (slots[i] <= slots[i - 1])
			abort();
	m = unwind_cfi_indirect(eh, size - 1, vaddr, again, max);
	if (m != n || memcmp(slots, again, n * sizeof(slots[0])))
		abort();
	free(eh);
	return 0;
}
