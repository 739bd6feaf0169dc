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
#include "lib/grow.h"

#define SRCLINE_MAX_PATHS 4096 /* distinct joined paths kept */

struct srcline {
	Dwarf *dw; /* the symtab's */
	char **paths; /* "COMP_DIR/FILE" made for relative names, interned */
	size_t npaths, cappaths;
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
	if (!sl)
		return NULL;
	sl->dw = dw;
	return sl;
}

void srcline_free(struct srcline *sl)
{
	if (!sl)
		return;
	for (size_t i = 0; i < sl->npaths; i++)
		free(sl->paths[i]);
	free(sl->paths);
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
	const char *dir;
	char *p;

	if (f[0] == '/' || !(dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a))) ||
	    dir[0] != '/')
		return f;
	if (asprintf(&p, "%s/%s", dir, f) < 0)
		return NULL;
	for (size_t i = 0; i < sl->npaths; i++)
		if (!strcmp(sl->paths[i], p)) {
			free(p);
			return sl->paths[i];
		}
	if (sl->npaths >= SRCLINE_MAX_PATHS || GROW_ARRAY(sl->paths, sl->npaths, sl->cappaths, 8) < 0) {
		free(p);
		return NULL;
	}
	sl->paths[sl->npaths++] = p;
	return p;
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
