// SPDX-License-Identifier: MIT
/*
 * libFuzzer over perfmap_load_fd(): a JIT's /tmp/perf-PID.map ("START SIZE
 * NAME" lines, hex numbers), which the agent reads from inside containers,
 * so its bytes are hostile: the line reader's caps (lines over
 * PERFMAP_MAX_LINE skipped, not cut), the hex fields, overflowing ranges,
 * empty and odd names, NUL bytes, CR, lines without an end. The input is
 * the file, through a memfd, as the agent reads a regular file. Properties:
 * no more entries than lines; a lookup at any address the input names (each
 * line's START, START + SIZE - 1 and the first bytes as an address) gives
 * NULL or a name that stands in the input; the largest START found is
 * always named; loading the same bytes twice gives the same answers.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/symbols/perfmap.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Addresses probed per input, at most. */
#define MAX_PROBES 256

static struct perfmap *load(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-perfmap", MFD_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fuzz_write_all(fd, data, size) || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return NULL;
	}
	return perfmap_load_fd(fd); /* closes fd */
}

/* A line's "START SIZE " as perfmap.c reads it (no range check). */
static int parse_head(const char *p, const char *end, uint64_t *start, uint64_t *len)
{
	char buf[80], *e;
	size_t n = (size_t)(end - p) < sizeof(buf) - 1 ? (size_t)(end - p) : sizeof(buf) - 1;

	memcpy(buf, p, n);
	buf[n] = '\0';
	errno = 0;
	*start = strtoull(buf, &e, 16);
	if (errno || e == buf || *e != ' ')
		return -1;
	p = e + 1;
	*len = strtoull(p, &e, 16);
	if (errno || e == p || *e != ' ' || !*len || *start + *len < *start)
		return -1;
	return 0;
}

/* NULL, or a name that stands somewhere in the input. */
static void check_name(const char *name, const uint8_t *data, size_t size)
{
	if (name && !memmem(data, size, name, strlen(name)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *m = load(data, size), *again;
	uint64_t probes[MAX_PROBES], top = 0;
	size_t nprobes = 0, lines = 1;
	bool have_top = false;

	if (!m)
		return 0;
	/* Addresses the input names, line by line. */
	for (const uint8_t *p = data, *end = data + size; p < end;) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		const uint8_t *le = nl ? nl : end;
		uint64_t start, len;

		if (le - p <= PERFMAP_MAX_LINE && !memchr(p, '\0', (size_t)(le - p)) &&
		    parse_head((const char *)p, (const char *)le, &start, &len) == 0) {
			if (nprobes + 2 <= MAX_PROBES) {
				probes[nprobes++] = start;
				probes[nprobes++] = start + len - 1;
			}
			if (!have_top || start > top)
				top = start;
			have_top = true;
		}
		if (!nl)
			break;
		lines++;
		p = nl + 1;
	}
	if (size >= 8 && nprobes < MAX_PROBES)
		memcpy(&probes[nprobes++], data, 8);
	if (perfmap_count(m) > lines)
		abort();
	for (size_t i = 0; i < nprobes; i++)
		check_name(perfmap_lookup(m, probes[i]), data, size);
	/* Every entry has size > 0, so one starting at the largest START
	 * covers it, and it is the last the lookup walks back from. Only
	 * when every line was read: the entry cap may have dropped it. */
	if (have_top && perfmap_count(m) < PERFMAP_MAX_ENTRIES && !perfmap_lookup(m, top))
		abort();

	again = load(data, size);
	if (!again || perfmap_count(again) != perfmap_count(m))
		abort();
	for (size_t i = 0; i < nprobes; i++) {
		const char *a = perfmap_lookup(m, probes[i]), *b = perfmap_lookup(again, probes[i]);

		if (!a != !b || (a && strcmp(a, b)))
			abort();
	}
	perfmap_free(again);
	perfmap_free(m);
	return 0;
}
