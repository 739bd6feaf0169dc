/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_ELFOBJ_H
#define CGPERF_AGENT_ELFOBJ_H

/*
 * One ELF file opened for reading, the way every reader of binaries in the
 * agent opens them (symbols, unwind tables, USDT notes): through
 * lib/rootfs.h (a /proc/PID/root/... path resolved inside that root, a
 * regular file no larger than ROOTFS_ELF_MAX), libelf on the fd, the ELF
 * header checked, and what the program headers say read once: the PT_LOAD
 * segments with file bytes (they turn file offsets into link-time
 * addresses and back) and where PT_GNU_EH_FRAME puts .eh_frame_hdr.
 *
 * A value type, not a handle: the caller owns the struct (ELFOBJ_INIT),
 * the fields are read directly, elfobj_close() releases what the open
 * took and may be called twice. Binaries are opened through it once, by
 * agent/symbols/dso.h (one object per binary, shared by every reader);
 * separate debuginfo files are opened with it directly.
 */

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define ELFOBJ_MAX_LOADS 1024    /* PT_LOAD segments kept */
#define ELFOBJ_MAX_PHDRS 65536   /* program headers scanned */
#define ELFOBJ_MAX_BUILD_ID 64   /* bytes; linkers write 20 (SHA-1) */

struct elfobj_load {
	uint64_t offset, vaddr, filesz;
	bool exec; /* PF_X */
};

struct elfobj {
	int fd;
	Elf *elf;
	struct stat st;
	GElf_Ehdr eh;
	struct elfobj_load *loads; /* program header order */
	size_t nloads;
	bool loads_cut;     /* more PT_LOADs than ELFOBJ_MAX_LOADS */
	bool phdrs_bad;     /* the program headers could not all be read */
	uint64_t eh_frame_hdr_vaddr, eh_frame_hdr_size; /* size 0: no PT_GNU_EH_FRAME */
};

#define ELFOBJ_INIT { .fd = -1, .elf = NULL, .loads = NULL }

/*
 * Open @path with libelf command @cmd (ELF_C_READ_MMAP, or ELF_C_READ to
 * read on demand through the fd). 0; -ENOEXEC for a file that is not ELF
 * or not a regular file; -ENOMEM; the other refusals of lib/rootfs.h
 * (-ENOENT, -EFBIG, ...). On failure nothing stays open.
 */
int elfobj_open(struct elfobj *o, const char *path, Elf_Cmd cmd);
void elfobj_close(struct elfobj *o);

/* GNU build-id of @elf (SHT_NOTE sections, else PT_NOTE segments) into @out
 * (ELFOBJ_MAX_BUILD_ID bytes): its length, 0 when it has none. */
size_t elfobj_build_id(Elf *elf, uint8_t *out);

/* The same from @len bytes of ELF notes in this host's byte order (such as
 * /sys/kernel/notes). */
size_t elfobj_notes_build_id(const void *notes, size_t len, uint8_t *out);

/* Bytes @n of @bin as lowercase hex into @hex (2 * n + 1 bytes). */
void elfobj_hex(const uint8_t *bin, size_t n, char *hex);

#endif
