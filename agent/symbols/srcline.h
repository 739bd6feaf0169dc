/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_SRCLINE_H
#define CGPERF_AGENT_SRCLINE_H

/*
 * Source lines of addresses, from DWARF line tables (libdw's
 * dwarf_addrdie() and dwarf_getsrc_die()), for `annotate`. The DWARF file
 * is the one the symbol table found (the binary itself, or its separate
 * debuginfo inside the container's root), read through the symtab's own
 * libdw handle (symtab_dwarf_lines()): nothing is opened again, never by a
 * path of our own. libdw bounds every read by the sections' sizes.
 * Library module: does not print.
 */

#include <stdint.h>

struct symtab;
struct srcline;

/*
 * Line tables of @s's DWARF, borrowed from @s: free the srcline before
 * @s, and use neither concurrently with symtab_inlines() on @s. NULL +
 * errno: ENOENT when there is none (or it cannot be read), ENOMEM.
 */
struct srcline *srcline_open(struct symtab *s);
void srcline_free(struct srcline *sl);

/*
 * The source position of link-time address @vaddr: 0 with *@file (owned by
 * @sl, valid until srcline_free; a relative name joined to its compile
 * unit's directory) and *@line, or -ENOENT.
 */
int srcline_find(struct srcline *sl, uint64_t vaddr, const char **file, int *line);

#endif
