// SPDX-License-Identifier: MIT
/* Source lines of addresses from DWARF line tables (see srcline.h). */
#include "agent/symbols/srcline.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/symbols/symtab.h"

struct srcline {
	int fd;
	Dwarf *dw;
};

struct srcline *srcline_open(const struct symtab *s)
{
	struct srcline *sl;
	int fd = symtab_dwarf_fd(s);

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	sl = calloc(1, sizeof(*sl));
	if (!sl) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	sl->fd = fd;
	sl->dw = dwarf_begin(fd, DWARF_C_READ);
	if (!sl->dw) {
		srcline_free(sl);
		errno = ENOENT;
		return NULL;
	}
	return sl;
}

void srcline_free(struct srcline *sl)
{
	if (!sl)
		return;
	if (sl->dw)
		dwarf_end(sl->dw);
	close(sl->fd);
	free(sl);
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
	*file = f;
	*line = n;
	return 0;
}
