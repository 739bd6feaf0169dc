// SPDX-License-Identifier: MIT
/* Source lines of addresses from DWARF line tables (see srcline.h). */
#include "agent/symbols/srcline.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/symtab.h"
#include "lib/hashmap.h"

#define SRCLINE_MAX_PATHS 4096 /* distinct joined paths kept */

struct srcline {
	Dwarf *dw;	       /* the symtab's */
	struct hashmap *paths; /* "COMP_DIR/FILE" made for relative names, interned */
};

struct srcline *srcline_open(struct symtab *s)
{
	Dwarf *dw = symtab_dwarf_lines(s);
	struct srcline *sl;

	if (!dw) {
		errno = ENOENT;
		return NULL;
	}
	sl = calloc(1, sizeof(*sl));
	if (!sl || !(sl->paths = hashmap_new())) {
		free(sl);
		return NULL;
	}
	hashmap_set_limit(sl->paths, SRCLINE_MAX_PATHS);
	sl->dw = dw;
	return sl;
}

void srcline_free(struct srcline *sl)
{
	if (!sl)
		return;
	hashmap_free(sl->paths);
	free(sl);
}

/*
 * A relative file name is relative to its compile unit's DW_AT_comp_dir
 * (DWARF 5 line tables give "tests/x.c" and leave the join to the reader),
 * never to our own working directory. The joined path, interned in @sl,
 * or @f itself when absolute or when the unit has no directory.
 */
static const char *join_comp_dir(struct srcline *sl, Dwarf_Die *cu, const char *f)
{
	Dwarf_Attribute a;
	const char *dir, *interned;
	char *p;
	int n;

	if (f[0] == '/' || !(dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a))) ||
	    dir[0] != '/')
		return f;
	n = asprintf(&p, "%s/%s", dir, f);
	if (n < 0)
		return NULL;
	interned = hashmap_intern(sl->paths, p, (size_t)n, NULL);
	free(p);
	return interned;
}

int srcline_find(struct srcline *sl, uint64_t vaddr, const char **file, int *line)
{
	Dwarf_Die cu;
	Dwarf_Line *l;
	const char *f;
	int n;

	if (!sl || !dwarf_addrdie(sl->dw, vaddr, &cu))
		return -ENOENT;
	l = dwarf_getsrc_die(&cu, vaddr);
	if (!l || !(f = dwarf_linesrc(l, NULL, NULL)) || dwarf_lineno(l, &n) != 0 || n <= 0)
		return -ENOENT;
	if (!(f = join_comp_dir(sl, &cu, f)))
		return -ENOENT;
	*file = f;
	*line = n;
	return 0;
}
