// SPDX-License-Identifier: MIT
/*
 * Kernel symbols: /proc/kallsyms read, ranked and sorted, with the vmlinux
 * part cached per boot (contract in agent/symbols/ksyms.h).
 */
#include "agent/symbols/ksyms.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "lib/search.h"

#include "agent/symbols/symcache.h"
#include "agent/symbols/symrank.h"
#include "lib/fdio.h"
#include "lib/grow.h"
#include "lib/slurp.h"

/*
 * /proc/kallsyms is about 120k lines that the kernel formats anew on every
 * read: some 35 ms of kernel CPU on a small VM, the floor of any reader.
 * Our side is kept small: one read into one buffer, each kept name moved
 * down in place so the buffer becomes the name arena, no per-line stdio.
 * The vmlinux part comes out in address order, so only runs of aliases at
 * one address are ranked; a full sort happens only when module symbols
 * come unsorted.
 *
 * The vmlinux ("core") symbols cannot change before the next boot, so the
 * first reader of a boot writes them, sorted and deduplicated in the
 * in-memory layout, to the symbolization cache as kallsyms-<boot_id>; later
 * readers map that file and skip /proc/kallsyms. Module, BPF and ftrace
 * symbols can come and go at any time: an address outside the core range
 * sends the lookup to a live read of /proc/kallsyms (once per ksyms), so
 * the answers are those of a live read in every case.
 */

#define KSYMS_LINE_MAX 1024	/* KSYM_NAME_LEN is 512, plus address and module */
#define KSYMS_MAX (4u << 20)	/* far above any kernel (~200k text symbols) */
#define KSYMS_MAX_MODULES 65535 /* module index is 16 bits */
#define KSYMS_LAST_SPAN (1u << 20) /* the last symbol has no successor to end it */
#define KSYMS_MAX_FILE (512u << 20) /* /proc/kallsyms is ~6 MB */
#define KSYMS_LIVE "/proc/kallsyms"
#define KSYMS_BOOT_ID "/proc/sys/kernel/random/boot_id"
#define KSYMS_BOOT_ID_LEN 36

struct ksym {
	uint64_t addr;
	uint32_t name;	 /* offset into names */
	uint16_t module; /* 0: vmlinux, else modules[module - 1] */
	uint8_t rank;	 /* T, W, t, w: lower wins among aliases */
	uint8_t unders;
};

struct ksyms {
	struct ksym *syms;
	size_t n;
	char *names;
	size_t names_len;
	uint32_t *modules; /* offsets into names */
	size_t nmodules;
	bool hidden; /* kptr_restrict: every address read as 0 */
	/* from the cache: core symbols only, syms and names inside map */
	void *map;
	size_t map_len;
	char *live_path; /* set for a core-only table: where the rest is */
	struct ksyms *live;
	bool live_tried;
};

/* The cache file: this header, nsyms struct ksym, then the name arena. */
#define KSYMS_CACHE_MAGIC "CGPKSYM1"
struct ksyms_cache_hdr {
	char magic[8];
	uint32_t sym_size; /* sizeof(struct ksym): the layout is this build's */
	uint32_t reserved;
	uint64_t nsyms, names_len;
	char boot_id[40];
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

struct ksyms_line {
	uint64_t addr;
	char type;
	const char *name, *module;
	size_t name_len, module_len;
};

/* "ffffffff810001c0 T name\t[module]" in [p, e); false for anything else */
static bool ksyms_parse(const char *p, const char *e, struct ksyms_line *l)
{
	int digits = 0, v;

	memset(l, 0, sizeof(*l));
	for (; p < e && (v = hexval(*p)) >= 0; p++) {
		if (++digits > 16)
			return false;
		l->addr = l->addr << 4 | (uint64_t)v;
	}
	if (digits == 0 || e - p < 3 || p[0] != ' ' || p[1] == '\0' || p[2] != ' ')
		return false;
	l->type = p[1];
	p += 3;
	l->name = p;
	while (p < e && *p && *p != '\t' && *p != ' ')
		p++;
	l->name_len = (size_t)(p - l->name);
	if (l->name_len == 0)
		return false;
	while (p < e && (*p == '\t' || *p == ' '))
		p++;
	if (p < e && *p == '[') {
		const char *end = memchr(p, ']', (size_t)(e - p));

		if (!end || end == p + 1)
			return false;
		l->module = p + 1;
		l->module_len = (size_t)(end - p - 1);
	}
	return true;
}

/*
 * Move @len bytes at @s (at or after the arena's end, inside the same
 * buffer) to the end of the arena and terminate them.
 */
static uint32_t ksyms_keep_name(struct ksyms *k, const char *s, size_t len)
{
	uint32_t off = (uint32_t)k->names_len;

	memmove(k->names + k->names_len, s, len);
	k->names[k->names_len + len] = '\0';
	k->names_len += len + 1;
	return off;
}

/* Index for module @s (1-based), reusing one already seen. */
static int ksyms_module(struct ksyms *k, const char *s, size_t len, uint16_t *idx)
{
	/* kallsyms lists a module's symbols together: check the newest first */
	for (size_t i = k->nmodules; i > 0; i--) {
		const char *m = k->names + k->modules[i - 1];

		if (strncmp(m, s, len) == 0 && m[len] == '\0') {
			*idx = (uint16_t)i;
			return 0;
		}
	}
	if (k->nmodules >= KSYMS_MAX_MODULES)
		return -E2BIG;
	if (k->nmodules % 64 == 0) {
		uint32_t *nm = realloc(k->modules, (k->nmodules + 64) * sizeof(*nm));

		if (!nm)
			return -ENOMEM;
		k->modules = nm;
	}
	k->modules[k->nmodules++] = ksyms_keep_name(k, s, len);
	*idx = (uint16_t)k->nmodules;
	return 0;
}

/* aliases at one address sort best first (symrank.h), ranked T, W, t, w */
static int ksym_cmp(const void *pa, const void *pb, void *arena)
{
	const struct ksym *a = pa, *b = pb;
	const char *names = arena, *na = names + a->name, *nb = names + b->name;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return symrank_cmp(&(struct symrank){ a->rank, a->unders, na, strlen(na) },
			   &(struct symrank){ b->rank, b->unders, nb, strlen(nb) });
}

/*
 * Whole file into a NUL-terminated buffer, through lib/slurp (procfs sizes
 * are unknown). O_NONBLOCK: a path naming a FIFO must not hang the agent.
 * Against the earlier hand-written reader that started at 1 MiB, slurp's
 * doubling from 4 KiB costs nothing measurable: read and parse of this VM's
 * 6 MB /proc/kallsyms took 41.6-43.9 ms (best of 15) before and 43.3-43.8 ms
 * after, within the noise of a shared 2-core VM; the kernel's formatting is
 * most of it.
 */
static int read_whole(const char *path, char **out, size_t *out_len)
{
	bool more = false;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	err = slurp_fd(fd, KSYMS_MAX_FILE, out, out_len, &more);
	close(fd);
	if (!err && more) {
		free(*out);
		*out = NULL;
		err = -EFBIG;
	}
	return err == -EAGAIN ? -EIO : err;
}

static int ksyms_push(struct ksyms *k, size_t *cap, const struct ksym *sym)
{
	if (GROW_ARRAY(k->syms, k->n, *cap, 4096) < 0)
		return -ENOMEM;
	k->syms[k->n++] = *sym;
	return 0;
}

/* Keep the best-ranked name of each address; @sorted: by address already. */
static void ksyms_settle(struct ksyms *k, bool sorted)
{
	size_t n = 0;

	if (!sorted) {
		qsort_r(k->syms, k->n, sizeof(*k->syms), ksym_cmp, k->names);
		for (size_t i = 0; i < k->n; i++)
			if (n == 0 || k->syms[n - 1].addr != k->syms[i].addr)
				k->syms[n++] = k->syms[i];
		k->n = n;
		return;
	}
	for (size_t i = 0; i < k->n; i++) {
		if (n > 0 && k->syms[n - 1].addr == k->syms[i].addr) {
			if (ksym_cmp(&k->syms[i], &k->syms[n - 1], k->names) < 0)
				k->syms[n - 1] = k->syms[i];
			continue;
		}
		k->syms[n++] = k->syms[i];
	}
	k->n = n;
}

/* Parse a kallsyms-format file (text symbols only). NULL + errno. */
static struct ksyms *ksyms_read(const char *path)
{
	bool any_nonzero = false, sorted = true;
	size_t len = 0, cap = 0;
	const char *p, *end;
	struct ksyms *k = calloc(1, sizeof(*k));
	int err;

	if (!k)
		return NULL;
	err = read_whole(path, &k->names, &len);
	if (err < 0)
		goto err_free;
	/* the arena grows from the buffer's start, never past the line read */
	for (p = k->names, end = k->names + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *t;
		struct ksym sym = { 0 };
		struct ksyms_line l;

		bool ok = (size_t)(le - p) < KSYMS_LINE_MAX - 1 && ksyms_parse(p, le, &l);

		p = nl ? nl + 1 : end;
		if (!ok)
			continue;
		if (l.addr != 0)
			any_nonzero = true;
		if (!(t = memchr("TWtw", l.type, 4)))
			continue;
		if (k->n >= KSYMS_MAX)
			break;
		sym.addr = l.addr;
		sym.rank = (uint8_t)(t - "TWtw");
		sym.unders = symrank_unders(l.name, l.name_len);
		/* the name first: the module follows it in the line */
		sym.name = ksyms_keep_name(k, l.name, l.name_len);
		if (l.module && (err = ksyms_module(k, l.module, l.module_len, &sym.module)) < 0) {
			if (err == -E2BIG)
				break;
			goto err_free;
		}
		if (k->n > 0 && sym.addr < k->syms[k->n - 1].addr)
			sorted = false;
		err = ksyms_push(k, &cap, &sym);
		if (err < 0)
			goto err_free;
	}
	k->hidden = k->n > 0 && !any_nonzero;
	if (k->n > 0 && !k->hidden)
		ksyms_settle(k, sorted);
	/* give back the slack; failure keeps the old block */
	if (k->n) {
		struct ksym *syms = realloc(k->syms, k->n * sizeof(*k->syms));

		if (syms)
			k->syms = syms;
	}
	if (k->names_len) {
		char *names = realloc(k->names, k->names_len);

		if (names)
			k->names = names;
	}
	return k;

err_free:
	ksyms_free(k);
	errno = -err;
	return NULL;
}

static void ksyms_cache_name(char *buf, size_t size, const char *boot_id)
{
	snprintf(buf, size, "kallsyms-%s", boot_id);
}

/* Write the core symbols of @k for boot @boot_id; best effort. */
static void ksyms_cache_store(const struct ksyms *k, const char *dir, const char *boot_id)
{
	struct ksyms_cache_hdr h = { .magic = KSYMS_CACHE_MAGIC, .sym_size = sizeof(struct ksym) };
	char name[64], tmp[PATH_MAX];
	struct ksym *core;
	size_t m = 0;
	int fd, err;

	if (k->hidden || k->n == 0 || k->names_len == 0)
		return;
	core = malloc(k->n * sizeof(*core));
	if (!core)
		return;
	for (size_t i = 0; i < k->n; i++)
		if (k->syms[i].module == 0)
			core[m++] = k->syms[i];
	ksyms_cache_name(name, sizeof(name), boot_id);
	if (m == 0 || (fd = symcache_create(dir, name, tmp, sizeof(tmp))) < 0) {
		free(core);
		return;
	}
	h.nsyms = m;
	h.names_len = k->names_len;
	memcpy(h.boot_id, boot_id, KSYMS_BOOT_ID_LEN);
	err = fdio_write_all(fd, &h, sizeof(h));
	if (!err)
		err = fdio_write_all(fd, core, m * sizeof(*core));
	if (!err)
		err = fdio_write_all(fd, k->names, k->names_len);
	free(core);
	if (err) {
		symcache_abort(fd, tmp);
		return;
	}
	if (symcache_commit(fd, tmp, dir, name) == 0)
		symcache_trim(dir, "kallsyms-", name, 0); /* earlier boots */
}

/* Map the cache entry for @boot_id; NULL when missing or not valid. */
static struct ksyms *ksyms_cache_load(const char *dir, const char *boot_id)
{
	const struct ksyms_cache_hdr *h;
	struct ksyms *k = NULL;
	char name[64];
	struct stat st;
	void *map;
	uint64_t body;
	int fd;

	ksyms_cache_name(name, sizeof(name), boot_id);
	fd = symcache_open(dir, name);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(*h) || st.st_size > KSYMS_MAX_FILE) {
		close(fd);
		return NULL;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	h = map;
	body = (uint64_t)st.st_size - sizeof(*h);
	if (memcmp(h->magic, KSYMS_CACHE_MAGIC, sizeof(h->magic)) != 0 ||
	    h->sym_size != sizeof(struct ksym) || memcmp(h->boot_id, boot_id, KSYMS_BOOT_ID_LEN) ||
	    h->nsyms == 0 || h->nsyms > KSYMS_MAX || h->names_len == 0 ||
	    h->names_len > UINT32_MAX || h->nsyms * sizeof(struct ksym) > body ||
	    body - h->nsyms * sizeof(struct ksym) != h->names_len)
		goto out_unmap;
	k = calloc(1, sizeof(*k));
	if (!k)
		goto out_unmap;
	k->map = map;
	k->map_len = (size_t)st.st_size;
	k->syms = (struct ksym *)((char *)map + sizeof(*h));
	k->n = h->nsyms;
	k->names = (char *)(k->syms + k->n);
	k->names_len = h->names_len;
	/* what a live read guarantees, checked before any lookup trusts it */
	if (k->names[k->names_len - 1] != '\0')
		goto out_free;
	for (size_t i = 0; i < k->n; i++) {
		const struct ksym *s = &k->syms[i];

		if (s->name >= k->names_len || s->module != 0 || s->rank > 3 ||
		    (i > 0 && s->addr <= k->syms[i - 1].addr) || s->addr == 0)
			goto out_free;
	}
	return k;

out_free:
	free(k);
out_unmap:
	munmap(map, (size_t)st.st_size);
	return NULL;
}

static int read_boot_id(char *out)
{
	char buf[64];
	ssize_t r;
	int fd = open(KSYMS_BOOT_ID, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r < KSYMS_BOOT_ID_LEN)
		return -EINVAL;
	for (int i = 0; i < KSYMS_BOOT_ID_LEN; i++)
		if (!isxdigit((unsigned char)buf[i]) && buf[i] != '-')
			return -EINVAL;
	memcpy(out, buf, KSYMS_BOOT_ID_LEN);
	out[KSYMS_BOOT_ID_LEN] = '\0';
	return 0;
}

struct ksyms *ksyms_load_cached(const char *path, const char *cache_dir, const char *boot_id)
{
	struct ksyms *k;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	if (!cache_dir || !boot_id || strlen(boot_id) != KSYMS_BOOT_ID_LEN || strchr(boot_id, '/'))
		return ksyms_read(path);
	k = ksyms_cache_load(cache_dir, boot_id);
	if (k) {
		k->live_path = strdup(path);
		if (k->live_path)
			return k;
		ksyms_free(k);
	}
	k = ksyms_read(path);
	if (k)
		ksyms_cache_store(k, cache_dir, boot_id);
	return k;
}

struct ksyms *ksyms_load(const char *path)
{
	char boot_id[KSYMS_BOOT_ID_LEN + 1];

	if (path && !strcmp(path, KSYMS_LIVE) && read_boot_id(boot_id) == 0)
		return ksyms_load_cached(path, symcache_dir(), boot_id);
	return ksyms_load_cached(path, NULL, NULL);
}

size_t ksyms_count(const struct ksyms *k)
{
	return k && !k->hidden ? k->n : 0;
}

bool ksyms_cached(const struct ksyms *k)
{
	return k && k->map;
}

static const char *ksyms_find(const struct ksyms *k, uint64_t addr, const char **module)
{
	size_t lo;
	const struct ksym *sym;

	if (k->hidden || k->n == 0)
		return NULL;
	lo = search_upper_u64(k->syms, k->n, sizeof(*k->syms), offsetof(struct ksym, addr), addr);
	if (lo == 0)
		return NULL;
	sym = &k->syms[lo - 1];
	if (lo == k->n && addr - sym->addr >= KSYMS_LAST_SPAN)
		return NULL;
	if (module)
		*module = sym->module ? k->names + k->modules[sym->module - 1] : NULL;
	return k->names + sym->name;
}

const char *ksyms_lookup(struct ksyms *k, uint64_t addr, const char **module)
{
	if (!k)
		return NULL;
	/* past the last core symbol or before the first: modules, BPF, ftrace */
	if (k->live_path && (addr < k->syms[0].addr || addr >= k->syms[k->n - 1].addr)) {
		if (!k->live_tried) {
			k->live_tried = true;
			k->live = ksyms_read(k->live_path);
		}
		if (k->live)
			return ksyms_find(k->live, addr, module);
	}
	return ksyms_find(k, addr, module);
}

void ksyms_free(struct ksyms *k)
{
	if (!k)
		return;
	if (k->map) {
		munmap(k->map, k->map_len);
	} else {
		free(k->syms);
		free(k->names);
	}
	free(k->modules);
	free(k->live_path);
	ksyms_free(k->live);
	free(k);
}

int ksyms_each(const char *path, ksyms_each_fn fn, void *ctx)
{
	char *buf = NULL, name[KSYMS_LINE_MAX], module[KSYMS_LINE_MAX];
	size_t len = 0;
	int err = read_whole(path, &buf, &len);

	if (err < 0)
		return err;
	for (const char *p = buf, *end = buf + len; p < end && !err;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct ksyms_line l;
		bool ok = (size_t)(le - p) < KSYMS_LINE_MAX - 1 && ksyms_parse(p, le, &l);

		p = nl ? nl + 1 : end;
		if (!ok || !memchr("TWtw", l.type, 4))
			continue;
		memcpy(name, l.name, l.name_len);
		name[l.name_len] = '\0';
		if (l.module) {
			memcpy(module, l.module, l.module_len);
			module[l.module_len] = '\0';
		}
		err = fn(ctx, l.addr, name, l.module ? module : NULL);
	}
	free(buf);
	return err;
}
