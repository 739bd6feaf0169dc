// SPDX-License-Identifier: MIT
/*
 * libFuzzer over usdt_read(): the .note.stapsdt notes of an ELF file (the
 * note headers, the three addresses, the provider/name/argument strings,
 * the .stapsdt.base adjustment, the file offsets of pc and semaphore) and
 * the argument specs parsed from them: `trace` reads them from binaries in
 * containers, so their bytes are hostile. The input is the file; a second
 * pass feeds the input's text to usdt_parse_arg() as one spec. Properties:
 * every probe has a provider, a name and at most USDT_MAX_ARGS arguments
 * of 1, 2, 4 or 8 bytes; each probe is found by its own name; the sites of
 * a name are walked without looping; listing stops at the count.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/usdt.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_arg(const struct usdt_arg *a)
{
	if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
		abort();
	if (a->kind != USDT_ARG_CONST && a->kind != USDT_ARG_REG && a->kind != USDT_ARG_MEM)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	struct usdt_list *l;
	struct usdt_arg arg;
	char spec[128];
	size_t n;

	/* The spec grammar on its own, from the first bytes as text. */
	n = size < sizeof(spec) - 1 ? size : sizeof(spec) - 1;
	memcpy(spec, data, n);
	spec[n] = '\0';
	if (usdt_parse_arg(spec, &arg) == 0)
		check_arg(&arg);

	if (!path)
		return 0;
	l = usdt_read(path);
	if (!l)
		return 0;
	n = usdt_count(l);
	for (size_t i = 0; i < n; i++) {
		const struct usdt_probe *p = usdt_get(l, i), *q;
		size_t sites = 0;

		if (!p || !p->provider || !p->name || !p->arg_spec)
			abort();
		if (p->nargs < 0 || p->nargs > USDT_MAX_ARGS)
			abort();
		for (int a = 0; a < p->nargs; a++)
			check_arg(&p->args[a]);
		if (!usdt_find(l, p->provider, p->name) || !usdt_find(l, NULL, p->name))
			abort();
		for (q = usdt_find(l, p->provider, p->name); q;
		     q = usdt_find_next(l, q, p->provider, p->name))
			if (++sites > n)
				abort();
		if (!sites)
			abort();
	}
	if (usdt_get(l, n))
		abort();
	usdt_free(l);
	return 0;
}
