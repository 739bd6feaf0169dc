// SPDX-License-Identifier: MIT
/*
 * One object per binary (see agent/symbols/dso.h for the contract).
 *
 * Before this file each reader opened a binary for itself: the symbol
 * table, the unwinder's tables, the USDT notes and the probe resolver each
 * resolved the path again inside the container's root, mapped the ELF,
 * walked its program headers and read its build-id, and .eh_frame_hdr was
 * read by two parsers that did not agree on which encodings they took. A
 * sampled binary of a container cost three opens, and a container process
 * that exited between the first sample and the naming pass lost its names,
 * since the later opens went through a /proc/PID/root that was gone.
 *
 * Here a binary is opened once. The fd stays with the dso (so does the
 * file: a binary deleted or a root gone still reads), the header, segments,
 * build-id and the parsed .eh_frame_hdr are read once at the open, and the
 * expensive parts, the symbol table and the unwind regions, are members
 * built on first use by their own modules from the fd. Members are kept as
 * long as the dso: the one who bounds memory is whoever holds the dsos (the
 * stacks engine drops objects no process maps any more; the unwinder's LRU
 * drops its references).
 *
 * The table is a chained hash on (dev, ino), under one mutex that also
 * guards the reference counts; opening a file happens outside the lock (it
 * may take up to slowopen's 200 ms on FUSE), so two threads may open the
 * same new binary at once: the second to come back finds the first's dso
 * and closes its own.
 */
#include "agent/symbols/dso.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fdio.h"
#include "lib/hashmap.h"

/* .eh_frame_hdr read at the open: version, encodings, two 8-byte pointers */
#define DSO_HDR_HEAD 20
#define DSO_BUCKETS 1024 /* power of two; chains stay short for thousands of binaries */

struct dso_slot {
	const struct dso_member_ops *ops;
	void *p;
	int err;
};

struct dso {
	struct dso *hnext;
	uint64_t dev, ino; /* the key */
	unsigned refs;
	char *path;
	int fd;
	struct stat st;
	GElf_Ehdr eh;
	struct elfobj_load *loads;
	size_t nloads;
	bool loads_cut;
	uint8_t build_id[ELFOBJ_MAX_BUILD_ID];
	size_t build_id_len;
	char build_id_hex[2 * ELFOBJ_MAX_BUILD_ID + 1];
	struct dso_eh eh_frame;
	int eh_err;
	Elf *spare; /* the scan's libelf handle, for the first dso_elf_begin() */
	pthread_mutex_t lock; /* over slots */
	struct dso_slot slots[DSO_MEMBERS];
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dso *table[DSO_BUCKETS];
static uint64_t nopens;
static size_t nlive;

static size_t bucket_of(uint64_t dev, uint64_t ino)
{
	return (size_t)hash_mix64(ino ^ (dev * 0x9e3779b97f4a7c15ull)) & (DSO_BUCKETS - 1);
}

/* ---- reading at the open ---- */

int dso_pread(const struct dso *d, void *buf, size_t len, uint64_t off)
{
	/* -ENODATA: the file is shorter than its headers say */
	return fdio_pread_all(d->fd, buf, len, off);
}

const struct elfobj_load *dso_load_at(const struct dso *d, uint64_t vaddr)
{
	for (size_t i = 0; i < d->nloads; i++) {
		const struct elfobj_load *l = &d->loads[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz)
			return l;
	}
	return NULL;
}

int dso_vaddr_to_off(const struct dso *d, uint64_t vaddr, uint64_t *off)
{
	const struct elfobj_load *l = d ? dso_load_at(d, vaddr) : NULL;

	/* past p_filesz is .bss: memory with no file bytes behind it */
	if (!l)
		return -ENOENT;
	*off = vaddr - l->vaddr + l->offset;
	return 0;
}

int dso_off_to_vaddr(const struct dso *d, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; d && i < d->nloads; i++) {
		const struct elfobj_load *l = &d->loads[i];

		if (off >= l->offset && off - l->offset < l->filesz) {
			*vaddr = off - l->offset + l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* Where .eh_frame_hdr and .eh_frame are: PT_GNU_EH_FRAME, then the section
 * headers when present (they also give .eh_frame's size). */
static bool eh_locate(Elf *elf, const struct elfobj *o, struct dso_eh *e)
{
	size_t shstrndx, seen = 0;
	bool have_hdr = false;
	Elf_Scn *scn = NULL;

	if (o->eh_frame_hdr_size) {
		e->hdr_vaddr = o->eh_frame_hdr_vaddr;
		e->hdr_size = o->eh_frame_hdr_size;
		have_hdr = true;
	}
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return have_hdr;
	while ((scn = elf_nextscn(elf, scn)) && seen++ < DSO_MAX_SECTIONS) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".eh_frame_hdr")) {
			e->hdr_vaddr = sh.sh_addr;
			e->hdr_size = sh.sh_size;
			have_hdr = true;
		} else if (!strcmp(name, ".eh_frame")) {
			e->eh_vaddr = sh.sh_addr;
			e->eh_size = sh.sh_size;
		}
	}
	return have_hdr;
}

size_t dso_eh_pe_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case EH_PE_absptr:
	case EH_PE_udata8:
	case EH_PE_sdata8:
		return 8;
	case EH_PE_udata4:
	case EH_PE_sdata4:
		return 4;
	case EH_PE_udata2:
	case EH_PE_sdata2:
		return 2;
	default:
		return 0;
	}
}

uint64_t dso_eh_pe_extend(uint8_t enc, uint64_t v)
{
	if ((enc & 0x0f) == EH_PE_sdata4)
		return (uint64_t)(int64_t)(int32_t)(uint32_t)v;
	if ((enc & 0x0f) == EH_PE_sdata2)
		return (uint64_t)(int64_t)(int16_t)(uint16_t)v;
	return v;
}

/* One encoded pointer of .eh_frame_hdr at *@pos (@hdr_vaddr: the address of buf[0]). */
static int hdr_read_ptr(const uint8_t *buf, size_t len, size_t *pos, uint8_t enc,
			uint64_t hdr_vaddr, uint64_t *out)
{
	size_t p = *pos, n;
	uint64_t base, v = 0;

	switch (enc & 0x70) {
	case 0:
		base = 0;
		break;
	case EH_PE_pcrel:
		base = hdr_vaddr + p;
		break;
	case EH_PE_datarel:
		base = hdr_vaddr;
		break;
	default:
		return -ENOTSUP;
	}
	n = dso_eh_pe_size(enc);
	if (!n || (enc & EH_PE_indirect))
		return -ENOTSUP;
	if (p > len || len - p < n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)buf[p + i] << (8 * i);
	*out = base + dso_eh_pe_extend(enc, v);
	*pos = p + n;
	return 0;
}

/*
 * Parse .eh_frame_hdr: version 1, the .eh_frame pointer, a plain count and
 * a table in the one form both readers use (datarel sdata4 pairs: what
 * libunwind's remote lookup reads and what every x86_64 linker writes).
 */
static int eh_parse(struct dso *d, struct dso_eh *e)
{
	const struct elfobj_load *l = dso_load_at(d, e->hdr_vaddr);
	uint64_t eh_frame, count, size = e->hdr_size;
	size_t pos = 4, head;
	uint8_t *buf;
	int ret;

	if (!l)
		return -ENOENT;
	if (size > l->vaddr + l->filesz - e->hdr_vaddr)
		size = l->vaddr + l->filesz - e->hdr_vaddr;
	if (size < 12 || size > DSO_HDR_MAX)
		return -EINVAL;
	/* the header and its two pointers: the table itself is its readers' */
	head = size < DSO_HDR_HEAD ? size : DSO_HDR_HEAD;
	buf = calloc(1, DSO_HDR_HEAD);
	if (!buf)
		return -ENOMEM;
	ret = dso_pread(d, buf, head, l->offset + (e->hdr_vaddr - l->vaddr));
	if (ret < 0)
		goto out;
	ret = -ENOTSUP;
	if (buf[0] != 1 || (buf[2] & 0x70) || buf[3] != (EH_PE_datarel | EH_PE_sdata4))
		goto out;
	ret = hdr_read_ptr(buf, head, &pos, buf[1], e->hdr_vaddr, &eh_frame);
	if (ret < 0)
		goto out;
	ret = hdr_read_ptr(buf, head, &pos, buf[2], 0, &count);
	if (ret < 0)
		goto out;
	ret = -EINVAL;
	if (!count || count > (size - pos) / 8)
		goto out;
	/* The header's pointer wins over a section of that name elsewhere. */
	if (e->eh_vaddr != eh_frame)
		e->eh_size = 0;
	e->eh_vaddr = eh_frame;
	e->hdr_size = size;
	e->table_vaddr = e->hdr_vaddr + pos;
	e->fde_count = count;
	ret = 0;
out:
	free(buf);
	return ret;
}

/* Read what every reader wants from @o into @d; @o keeps its fd and elf. */
static int dso_scan(struct dso *d, struct elfobj *o)
{
	struct dso_eh e = { 0 };

	d->st = o->st;
	d->eh = o->eh;
	d->loads = o->loads;
	d->nloads = o->nloads;
	d->loads_cut = o->loads_cut || o->phdrs_bad;
	o->loads = NULL;
	o->nloads = 0;
	d->build_id_len = elfobj_build_id(o->elf, d->build_id);
	elfobj_hex(d->build_id, d->build_id_len, d->build_id_hex);
	if (!eh_locate(o->elf, o, &e)) {
		d->eh_err = -ENOENT;
		return 0;
	}
	d->eh_err = eh_parse(d, &e);
	if (d->eh_err == 0)
		d->eh_frame = e;
	return d->eh_err == -ENOMEM ? -ENOMEM : 0;
}

/* ---- the table ---- */

static struct dso *table_find(uint64_t dev, uint64_t ino)
{
	for (struct dso *d = table[bucket_of(dev, ino)]; d; d = d->hnext)
		if (d->dev == dev && d->ino == ino)
			return d;
	return NULL;
}

static void dso_free(struct dso *d)
{
	for (size_t i = 0; i < DSO_MEMBERS; i++)
		if (d->slots[i].ops && d->slots[i].p)
			d->slots[i].ops->free(d->slots[i].p);
	pthread_mutex_destroy(&d->lock);
	if (d->spare)
		elf_end(d->spare);
	if (d->fd >= 0)
		close(d->fd);
	free(d->loads);
	free(d->path);
	free(d);
}

/* Open and scan @path into a new, unlisted dso. */
static struct dso *dso_load(const char *path, int *err)
{
	struct elfobj o;
	struct dso *d = calloc(1, sizeof(*d));

	if (!d || !(d->path = strdup(path))) {
		free(d);
		*err = -ENOMEM;
		return NULL;
	}
	d->fd = -1;
	pthread_mutex_init(&d->lock, NULL);
	*err = elfobj_open(&o, path, ELF_C_READ_MMAP);
	if (*err < 0) {
		dso_free(d);
		return NULL;
	}
	/* keep the fd, drop libelf's handle and mapping after the scan */
	d->fd = o.fd;
	o.fd = -1;
	*err = dso_scan(d, &o);
	/* the first reader of sections (the symbol table, as a rule) takes
	 * the handle the scan has parsed already */
	d->spare = o.elf;
	o.elf = NULL;
	elfobj_close(&o);
	if (*err < 0) {
		dso_free(d);
		return NULL;
	}
	return d;
}

static struct dso *dso_open_key(const char *path, uint64_t dev, uint64_t ino, bool exact)
{
	struct dso *d, *other;
	int err;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	if (dev || ino) {
		pthread_mutex_lock(&table_lock);
		d = table_find(dev, ino);
		if (d)
			d->refs++;
		pthread_mutex_unlock(&table_lock);
		if (d)
			return d;
	}
	d = dso_load(path, &err);
	if (!d) {
		errno = -err;
		return NULL;
	}
	if (exact && ((uint64_t)d->st.st_dev != dev || (uint64_t)d->st.st_ino != ino)) {
		dso_free(d);
		errno = ESTALE;
		return NULL;
	}
	if (!dev && !ino) {
		dev = (uint64_t)d->st.st_dev;
		ino = (uint64_t)d->st.st_ino;
	}
	d->dev = dev;
	d->ino = ino;
	d->refs = 1;
	pthread_mutex_lock(&table_lock);
	nopens++;
	other = table_find(dev, ino);
	if (other) {
		other->refs++;
	} else {
		size_t b = bucket_of(dev, ino);

		d->hnext = table[b];
		table[b] = d;
		nlive++;
	}
	pthread_mutex_unlock(&table_lock);
	if (other) {
		dso_free(d); /* another thread opened it meanwhile */
		return other;
	}
	return d;
}

struct dso *dso_open(const char *path, uint64_t dev, uint64_t ino)
{
	return dso_open_key(path, dev, ino, false);
}

struct dso *dso_open_exact(const char *path, uint64_t dev, uint64_t ino)
{
	return dso_open_key(path, dev, ino, true);
}

struct dso *dso_get(struct dso *d)
{
	if (d) {
		pthread_mutex_lock(&table_lock);
		d->refs++;
		pthread_mutex_unlock(&table_lock);
	}
	return d;
}

void dso_put(struct dso *d)
{
	struct dso **pp;

	if (!d)
		return;
	pthread_mutex_lock(&table_lock);
	if (--d->refs) {
		pthread_mutex_unlock(&table_lock);
		return;
	}
	for (pp = &table[bucket_of(d->dev, d->ino)]; *pp && *pp != d; pp = &(*pp)->hnext)
		;
	if (*pp)
		*pp = d->hnext;
	nlive--;
	pthread_mutex_unlock(&table_lock);
	dso_free(d);
}

/* ---- members ---- */

int dso_member(struct dso *d, const struct dso_member_ops *ops, void *arg, void **out)
{
	struct dso_slot *s = NULL;
	int err;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < DSO_MEMBERS && !s; i++)
		if (d->slots[i].ops == ops || !d->slots[i].ops)
			s = &d->slots[i];
	if (!s) {
		err = -ENOSPC;
		goto out;
	}
	if (!s->ops) {
		s->ops = ops;
		s->err = ops->build(d, arg, &s->p);
		if (s->err < 0)
			s->p = NULL;
	}
	err = s->err;
	if (err == 0)
		*out = s->p;
out:
	pthread_mutex_unlock(&d->lock);
	return err;
}

/* ---- getters ---- */

const char *dso_path(const struct dso *d)
{
	return d->path;
}

int dso_fd(const struct dso *d)
{
	return d->fd;
}

const struct stat *dso_stat(const struct dso *d)
{
	return &d->st;
}

const GElf_Ehdr *dso_ehdr(const struct dso *d)
{
	return &d->eh;
}

const struct elfobj_load *dso_loads(const struct dso *d, size_t *n, bool *cut)
{
	*n = d->nloads;
	if (cut)
		*cut = d->loads_cut;
	return d->loads;
}

size_t dso_build_id(const struct dso *d, const uint8_t **id)
{
	*id = d->build_id;
	return d->build_id_len;
}

const char *dso_build_id_hex(const struct dso *d)
{
	return d->build_id_hex;
}

int dso_eh_frame(const struct dso *d, const struct dso_eh **out)
{
	if (d->eh_err)
		return d->eh_err;
	*out = &d->eh_frame;
	return 0;
}

Elf *dso_elf_begin(struct dso *d)
{
	Elf *elf = __atomic_exchange_n(&d->spare, NULL, __ATOMIC_ACQ_REL);

	if (elf)
		return elf;
	(void)elf_version(EV_CURRENT);
	elf = elf_begin(d->fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		elf = NULL;
	}
	return elf;
}

static void counts(uint64_t *opens, size_t *live)
{
	pthread_mutex_lock(&table_lock);
	*opens = nopens;
	*live = nlive;
	pthread_mutex_unlock(&table_lock);
}

uint64_t dso_opens(void)
{
	uint64_t opens;
	size_t live;

	counts(&opens, &live);
	return opens;
}

size_t dso_live(void)
{
	uint64_t opens;
	size_t live;

	counts(&opens, &live);
	return live;
}
