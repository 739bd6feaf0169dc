// SPDX-License-Identifier: MIT
/* Opening an ELF file once for every reader: see agent/symbols/elfobj.h. */
#include "agent/symbols/elfobj.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/rootfs.h"

void elfobj_close(struct elfobj *o)
{
	if (o->elf)
		elf_end(o->elf);
	if (o->fd >= 0)
		close(o->fd);
	free(o->loads);
	o->elf = NULL;
	o->fd = -1;
	o->loads = NULL;
	o->nloads = 0;
}

static int read_phdrs(struct elfobj *o)
{
	size_t phnum;

	if (elf_getphdrnum(o->elf, &phnum) < 0) {
		o->phdrs_bad = true;
		return 0;
	}
	if (phnum == 0)
		return 0; /* no segments: nothing maps, lookups fail */
	if (phnum > ELFOBJ_MAX_PHDRS)
		phnum = ELFOBJ_MAX_PHDRS;
	o->loads = calloc(phnum < ELFOBJ_MAX_LOADS ? phnum : ELFOBJ_MAX_LOADS, sizeof(*o->loads));
	if (!o->loads)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, (int)i, &ph)) {
			o->phdrs_bad = true;
			continue;
		}
		if (ph.p_type == PT_GNU_EH_FRAME && ph.p_filesz && !o->eh_frame_hdr_size) {
			o->eh_frame_hdr_vaddr = ph.p_vaddr;
			o->eh_frame_hdr_size = ph.p_filesz;
		}
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (o->nloads == ELFOBJ_MAX_LOADS) {
			o->loads_cut = true;
			continue;
		}
		o->loads[o->nloads++] = (struct elfobj_load){
			.offset = ph.p_offset,
			.vaddr = ph.p_vaddr,
			.filesz = ph.p_filesz,
			.exec = ph.p_flags & PF_X,
		};
	}
	return 0;
}

int elfobj_open(struct elfobj *o, const char *path, Elf_Cmd cmd)
{
	int err;

	*o = (struct elfobj)ELFOBJ_INIT;
	(void)elf_version(EV_CURRENT);
	/* A /proc/PID/root/... path is resolved inside that root, and only a
	 * regular file of sane size is opened (lib/rootfs.h): a FIFO or a
	 * link to a host file planted in a container is refused. */
	o->fd = rootfs_open_path(path, ROOTFS_ELF_MAX, &o->st);
	if (o->fd < 0) {
		err = o->fd;
		o->fd = -1;
		return err == -EINVAL || err == -EISDIR ? -ENOEXEC : err;
	}
	o->elf = elf_begin(o->fd, cmd, NULL);
	if (!o->elf || elf_kind(o->elf) != ELF_K_ELF || !gelf_getehdr(o->elf, &o->eh)) {
		elfobj_close(o);
		return -ENOEXEC;
	}
	err = read_phdrs(o);
	if (err < 0)
		elfobj_close(o);
	return err;
}

static size_t notes_build_id(Elf_Data *d, uint8_t *out)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	/* gelf_getnote() checks each note against d_size and always advances */
	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
		    nh.n_descsz <= ELFOBJ_MAX_BUILD_ID) {
			memcpy(out, (const char *)d->d_buf + desc_off, nh.n_descsz);
			return nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

size_t elfobj_notes_build_id(const void *notes, size_t len, uint8_t *out)
{
	Elf_Data d = {
		.d_buf = (void *)notes,
		.d_type = ELF_T_NHDR,
		.d_size = len,
		.d_version = EV_CURRENT,
	};

	(void)elf_version(EV_CURRENT);
	return notes ? notes_build_id(&d, out) : 0;
}

size_t elfobj_build_id(Elf *elf, uint8_t *out)
{
	Elf_Scn *scn = NULL;
	size_t n, len;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && (len = notes_build_id(d, out)) > 0)
			return len;
	}
	/* files whose section headers were stripped still have PT_NOTE */
	if (elf_getphdrnum(elf, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && i < ELFOBJ_MAX_LOADS; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d && (len = notes_build_id(d, out)) > 0)
			return len;
	}
	return 0;
}

void elfobj_hex(const uint8_t *bin, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[bin[i] >> 4];
		hex[2 * i + 1] = digits[bin[i] & 15];
	}
	hex[2 * n] = '\0';
}
