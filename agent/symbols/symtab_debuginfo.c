// SPDX-License-Identifier: MIT
/*
 * What an ELF file offers symbols (symbol tables, DWARF, debuglink), and
 * finding the separate debuginfo of a file (see the essay at the head of symtab.c):
 * by build-id under DEBUG_ROOT/usr/lib/debug/.build-id, else by the
 * .gnu_debuglink name next to the file, in its .debug/ directory or under
 * DEBUG_ROOT/usr/lib/debug/DIR. A candidate found by name must match by
 * build-id, or failing that by the CRC-32 the debuglink records.
 *
 * Why not libdwfl's find_debuginfo: dwfl_standard_find_debuginfo() and
 * dwfl_build_id_find_debuginfo() open their candidates with open(2) as host
 * paths. Under a container's /proc/PID/root prefix that follows the
 * container's absolute symbolic links into the host and opens FIFOs and
 * devices for reading; elfutils 0.188 has no sysroot setting for this
 * search. A custom Dwfl_Callbacks.find_debuginfo that opens through
 * lib/rootfs would have to carry this whole search anyway (build-id path,
 * the three debuglink places, build-id or CRC check), so libdwfl would add
 * only a Dwfl session per binary: the lookup stays here, with in-root
 * resolution for every candidate (docs/architecture.md).
 */
#include "agent/symbols/symtab_priv.h"

#include <fcntl.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/fdio.h"
#include "lib/rootfs.h"

/* ---- what a file offers ---- */

static void parse_debuglink(Elf *elf, Elf_Scn *scn, struct elf_info *info)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const unsigned char *p;
	size_t len, crc_off;
	GElf_Ehdr eh;

	if (!d || !d->d_buf || !gelf_getehdr(elf, &eh))
		return;
	p = d->d_buf;
	len = strnlen((const char *)p, d->d_size);
	/* a file name in the same directory, then the CRC 4-aligned after it */
	crc_off = (len + 4) & ~(size_t)3;
	if (len == 0 || len > NAME_MAX || crc_off + 4 > d->d_size)
		return;
	if (memchr(p, '/', len) || (len == 1 && p[0] == '.') ||
	    (len == 2 && p[0] == '.' && p[1] == '.'))
		return;
	memcpy(info->link, p, len);
	info->link[len] = '\0';
	p += crc_off;
	if (eh.e_ident[EI_DATA] == ELFDATA2MSB)
		info->link_crc = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	else
		info->link_crc = (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
	info->has_link = true;
}

void symtab_elf_scan(Elf *elf, struct elf_info *info)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool named = elf_getshdrstrndx(elf, &shstrndx) == 0;

	memset(info, 0, sizeof(*info));
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !info->symtab)
			info->symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !info->dynsym)
			info->dynsym = scn;
		if (!named || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		/* a debuginfo-stripped file keeps .debug_* headers as NOBITS */
		if (strcmp(name, ".debug_info") == 0 && sh.sh_type != SHT_NOBITS && sh.sh_size > 0)
			info->has_dwarf = true;
		else if (strcmp(name, ".gnu_debuglink") == 0 && !info->has_link)
			parse_debuglink(elf, scn, info);
	}
}

/* ---- separate debuginfo ---- */

__attribute__((format(printf, 3, 4))) static int path_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int file_crc32(int fd, uint32_t *out)
{
	const size_t chunk = 1 << 16;
	unsigned char *buf = malloc(chunk);
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t pos = 0;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r = fdio_pread(fd, buf, chunk, (uint64_t)pos);

		if (r <= 0) {
			err = (int)r;
			break;
		}
		crc = crc32(crc, buf, (uInt)r);
		pos += r;
	}
	free(buf);
	if (err == 0)
		*out = (uint32_t)crc;
	return err;
}

/*
 * Open @path as the debuginfo of @w's file if it is one. @by_link: found by
 * the debuglink name, which anyone can reuse, so it must match by build-id
 * or by CRC.
 */
static int debug_try(struct elfobj *out, const char *path, const struct debug_want *w,
		     bool by_link, struct elf_info *info)
{
	struct elfobj f = ELFOBJ_INIT;
	uint8_t bid[SYMTAB_MAX_BUILD_ID];
	GElf_Ehdr deh;
	size_t blen;
	int err;

	err = elfobj_open(&f, path, ELF_C_READ_MMAP);
	if (err < 0)
		return err;
	err = -ENOENT;
	if (f.st.st_dev == w->main_st->st_dev && f.st.st_ino == w->main_st->st_ino)
		goto out_close; /* a debuglink naming the file itself */
	if (!gelf_getehdr(f.elf, &deh) || w->main_eh->e_ident[EI_CLASS] != deh.e_ident[EI_CLASS] ||
	    w->main_eh->e_machine != deh.e_machine)
		goto out_close;
	blen = elfobj_build_id(f.elf, bid);
	if (w->build_id_len > 0 && blen > 0) {
		if (blen != w->build_id_len || memcmp(bid, w->build_id, blen) != 0)
			goto out_close;
	} else if (by_link) {
		uint32_t crc = 0;

		if (file_crc32(f.fd, &crc) < 0 || crc != w->info->link_crc)
			goto out_close;
	}
	symtab_elf_scan(f.elf, info);
	if (!info->symtab && !info->has_dwarf)
		goto out_close;
	*out = f;
	return 0;

out_close:
	elfobj_close(&f);
	return err;
}

/*
 * Find separate debuginfo for @path: by build-id, then by debuglink. On
 * success @out is open, @info describes it and @found holds its path.
 */
int symtab_debug_find(struct elfobj *out, struct elf_info *info, char *found, size_t size,
		      const char *path, const char *debug_root, const struct debug_want *w)
{
	const char *slash = strrchr(path, '/'), *indir;
	size_t rootlen = strlen(debug_root);
	char dir[PATH_MAX];
	int err;

	if (w->build_id_len >= 2) {
		char hex[2 * SYMTAB_MAX_BUILD_ID + 1];

		elfobj_hex(w->build_id, w->build_id_len, hex);
		if (path_fmt(found, size, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", debug_root, hex,
			     hex + 2) == 0 &&
		    debug_try(out, found, w, false, info) == 0)
			return 0;
	}
	if (!w->info->has_link)
		return -ENOENT;

	if (!slash)
		err = path_fmt(dir, sizeof(dir), ".");
	else
		err = path_fmt(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (err < 0)
		return err;
	if (path_fmt(found, size, "%s/%s", dir, w->info->link) == 0 &&
	    debug_try(out, found, w, true, info) == 0)
		return 0;
	if (path_fmt(found, size, "%s/.debug/%s", dir, w->info->link) == 0 &&
	    debug_try(out, found, w, true, info) == 0)
		return 0;
	/* /usr/lib/debug mirrors the directory as seen inside the root */
	if (path[0] != '/')
		return -ENOENT;
	while (rootlen > 0 && debug_root[rootlen - 1] == '/')
		rootlen--;
	indir = dir;
	if (rootlen > 0 && strncmp(dir, debug_root, rootlen) == 0 &&
	    (dir[rootlen] == '/' || dir[rootlen] == '\0'))
		indir = dir + rootlen;
	if (path_fmt(found, size, "%.*s/usr/lib/debug%s/%s", (int)rootlen, debug_root, indir,
		     w->info->link) == 0 &&
	    debug_try(out, found, w, true, info) == 0)
		return 0;
	return -ENOENT;
}
