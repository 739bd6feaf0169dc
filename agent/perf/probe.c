// SPDX-License-Identifier: MIT
/*
 * Probe specs: from what a user types to a perf_event_attr.
 *
 * A uprobe is a (file, offset) pair. The kernel's uprobe PMU takes the
 * file as a path it resolves to an inode when the event is created, and
 * the offset as a FILE offset, not a virtual address: every process that
 * maps that inode, now or later, hits the probe, and nothing needs to be
 * written to tracefs (so nothing is left behind when we die). A return
 * probe is the same with one config bit set, and a USDT semaphore is one
 * more file offset the kernel increments in every process mapping the file
 * while the event exists (ref_ctr_offset). The bit and the field are
 * described by the PMU's format/ directory; they are read, not assumed.
 *
 * So resolving a spec means finding three things:
 *
 *  - The file. Users write "libc" or "postgres", not paths. A process in a
 *    container maps its own libc, a different inode from the host's, and a
 *    probe on the host's file would never fire there; so when processes
 *    are given, the files they map (reached through /proc/PID/root) come
 *    first, then PATH, then the library directories. A file found through
 *    /proc/PID/root that is the very inode of the same path here is named
 *    by the plain path.
 *  - The offset. symtab knows functions by file offset already; +OFF is
 *    added and must stay inside the function (it must also be on an
 *    instruction boundary, which only a disassembler could check; the
 *    kernel refuses some bad offsets, not all). For USDT the note gives
 *    the offset, the semaphore and the argument specs (usdt.c).
 *  - The arguments: registers, to be sampled with sample_regs_user, so
 *    regs_mask collects every register an argument reads; tracepoint
 *    fields, to be decoded from PERF_SAMPLE_RAW with the offsets, sizes
 *    and signedness of the event's tracefs format file.
 *
 * Misspellings are the common failure, so every "not found" says what was
 * looked at and offers the nearest names: functions of the binary, SDT
 * probes of the binary, tracepoints, fields. Messages are written into the
 * caller's buffer; nothing here prints.
 */
#include "agent/perf/probe.h"

#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <sys/uio.h>
#include <traceevent/event-parse.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/perf/events.h"
#include "agent/perf/probe_spec.h"
#include "lib/rootfs.h"
#include "lib/suggest.h"
#include "agent/perf/sampler.h"
#include "agent/symbols/symtab.h"

#define PROBE_SUGGEST 5		  /* near matches offered */
#define PROBE_MAPS_LINES (1u << 20) /* lines of one /proc/PID/maps read */
#define PROBE_MAPS_FILES 4096	  /* distinct files searched for SDT notes */
#define PROBE_FORMAT_MAX (64u << 10) /* a tracefs format file (~2 KiB) */
#define PROBE_FIELDS_MAX 512	  /* fields of one tracepoint */
#define PROBE_PATH_ENV_MAX 8192	  /* $PATH considered */
#define PROBE_PMU_DIR "/sys/bus/event_source/devices/uprobe"
#define PROBE_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const char *const lib_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
	"/usr/lib",
};
#define NLIB_DIRS (sizeof(lib_dirs) / sizeof(lib_dirs[0]))

/* ---- the caller's message buffer ---- */

struct msg {
	char *buf;
	size_t cap, len;
};

static void msg_init(struct msg *m, char *buf, size_t cap)
{
	m->buf = cap ? buf : NULL;
	m->cap = m->buf ? cap : 0;
	m->len = 0;
	if (m->buf)
		m->buf[0] = '\0';
}

/* Append; a message longer than the buffer is cut, never overrun. */
__attribute__((format(printf, 2, 3))) static void msg_add(struct msg *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!m->buf || m->len + 1 >= m->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(m->buf + m->len, m->cap - m->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	m->len = (size_t)n >= m->cap - m->len ? m->cap - 1 : m->len + (size_t)n;
}

/* ---- small helpers ---- */

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* A regular file with an ELF executable or shared-object header. */
static bool is_elf(const char *path)
{
	unsigned char h[EI_NIDENT + 2];
	struct stat st;
	bool ok;
	/* /proc/PID/root/... resolved inside that root; regular files only */
	int fd = rootfs_open_path(path, ROOTFS_ELF_MAX, &st);

	if (fd < 0)
		return false;
	ok = S_ISREG(st.st_mode) && read(fd, h, sizeof(h)) == sizeof(h) &&
	     memcmp(h, ELFMAG, SELFMAG) == 0 && h[EI_DATA] == ELFDATA2LSB &&
	     (h[EI_NIDENT] == ET_EXEC || h[EI_NIDENT] == ET_DYN) && h[EI_NIDENT + 1] == 0;
	close(fd);
	return ok;
}

/* @a (maybe a /proc/PID/root/... path, resolved inside that root) and the
 * host path @b are one inode. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	int fd = rootfs_open_path(a, ROOTFS_ELF_MAX, &sa);

	if (fd < 0)
		return false;
	close(fd);
	return stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* ---- near matches (lib/suggest) ---- */

static void near_print(const struct suggest *nr, struct msg *m)
{
	if (!nr->n)
		return;
	msg_add(m, "; did you mean ");
	for (size_t i = 0; i < nr->n; i++)
		msg_add(m, "%s%s", i ? ", " : "", nr->name[i]);
	msg_add(m, "?");
}

/* ---- finding the binary ---- */

/*
 * How well file name @base matches what the user called @name: 0 exact,
 * 1 NAME.so*, NAME-* ("libc" -> libc.so.6, "python3" -> python3.11),
 * 2 libNAME.so*, libNAME-* ("c" -> libc.so.6); -1 no match.
 */
static int name_rank(const char *base, const char *name)
{
	size_t n = strlen(name);

	if (strcmp(base, name) == 0)
		return 0;
	if (strncmp(base, name, n) == 0 && (base[n] == '.' || base[n] == '-'))
		return 1;
	if (starts_with(base, "lib") && strncmp(base + 3, name, n) == 0 &&
	    (base[3 + n] == '.' || base[3 + n] == '-'))
		return 2;
	return -1;
}

/* Is (rank, base) a better match than the best so far? Then the shorter, then by name. */
static bool better(int rank, const char *base, int best_rank, const char *best_base)
{
	size_t l = strlen(base), bl;

	if (best_rank < 0 || rank < best_rank)
		return true;
	if (rank > best_rank)
		return false;
	bl = strlen(best_base);
	return l < bl || (l == bl && strcmp(base, best_base) < 0);
}

struct bin {
	char *path;	   /* to open here: plain, or /proc/PID/root/... */
	char *debug_root;  /* "" or "/proc/PID/root" */
};

static void bin_release(struct bin *b)
{
	free(b->path);
	free(b->debug_root);
	b->path = b->debug_root = NULL;
}

/*
 * Name the file @path mapped by @pid as seen from here: the plain path when
 * it is the same inode here, else through /proc/PID/root.
 */
static int bin_from_pid(int pid, const char *path, struct bin *out)
{
	char root[32];
	size_t n;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	n = strlen(root) + strlen(path) + 1;
	out->path = malloc(n);
	if (!out->path)
		return -ENOMEM;
	snprintf(out->path, n, "%s%s", root, path);
	if (same_file(out->path, path)) {
		memcpy(out->path, path, strlen(path) + 1);
		out->debug_root = strdup("");
	} else {
		out->debug_root = strdup(root);
	}
	if (!out->debug_root) {
		bin_release(out);
		return -ENOMEM;
	}
	return 0;
}

/* Called per file-backed mapping: 0 continue, >0 stop, <0 error. */
typedef int (*maps_fn)(void *ctx, const char *path, bool exec);

static int maps_foreach(int pid, maps_fn fn, void *ctx)
{
	char mpath[32], *line = NULL;
	size_t cap = 0, lines = 0;
	ssize_t n;
	FILE *f;
	int ret = 0;

	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", pid);
	f = fopen(mpath, "re");
	if (!f)
		return -errno;
	while (ret == 0 && lines++ < PROBE_MAPS_LINES && (n = getline(&line, &cap, f)) > 0) {
		char perms[8];
		int at = 0;
		char *path;
		size_t len;

		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &at) != 1 || at <= 0 || at >= n)
			continue;
		path = line + at;
		len = strlen(path);
		/* a deleted file cannot be opened by name any more */
		if (path[0] != '/' || len > PATH_MAX ||
		    (len > 10 && strcmp(path + len - 10, " (deleted)") == 0))
			continue;
		ret = fn(ctx, path, strchr(perms, 'x') != NULL);
	}
	free(line);
	fclose(f);
	return ret < 0 ? ret : 0;
}

struct maps_match {
	const char *name;
	char *best; /* mapped path */
	int best_rank;
	int err;
};

static int maps_match_one(void *ctx, const char *path, bool exec)
{
	struct maps_match *mm = ctx;
	int rank = name_rank(base_name(path), mm->name);
	char *dup;

	if (rank < 0 || !better(rank, base_name(path), mm->best_rank, mm->best ? base_name(mm->best) : ""))
		return 0;
	dup = strdup(path);
	if (!dup)
		return -ENOMEM;
	free(mm->best);
	mm->best = dup;
	mm->best_rank = rank;
	return 0;
}

static int find_in_pids(const char *name, const int *pids, size_t npids, struct bin *out)
{
	for (size_t i = 0; i < npids; i++) {
		struct maps_match mm = { .name = name, .best_rank = -1 };
		struct bin b = { 0 };
		int err;

		if (pids[i] <= 0)
			continue;
		err = maps_foreach(pids[i], maps_match_one, &mm);
		if (err == -ENOMEM) {
			free(mm.best);
			return err;
		}
		if (!mm.best)
			continue;
		err = bin_from_pid(pids[i], mm.best, &b);
		free(mm.best);
		if (err < 0)
			return err;
		if (is_elf(b.path)) {
			*out = b;
			return 0;
		}
		bin_release(&b);
	}
	return -ENOENT;
}

/* An ELF executable named @name in $PATH. @skipped: the first non-ELF one. */
static int find_in_path(const char *name, char **out, char **skipped)
{
	const char *env = getenv("PATH");
	char *copy, *save = NULL, *cand = NULL;
	int err = -ENOENT;

	if (!env || !*env || strlen(env) > PROBE_PATH_ENV_MAX)
		env = PROBE_DEFAULT_PATH;
	copy = strdup(env);
	if (!copy)
		return -ENOMEM;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		size_t n = strlen(dir) + strlen(name) + 2;
		struct stat st;

		/* relative entries (".") would make the answer depend on the cwd */
		if (dir[0] != '/')
			continue;
		free(cand);
		cand = malloc(n);
		if (!cand) {
			err = -ENOMEM;
			break;
		}
		snprintf(cand, n, "%s/%s", dir, name);
		if (stat(cand, &st) < 0 || !S_ISREG(st.st_mode) || access(cand, X_OK) < 0)
			continue;
		if (is_elf(cand)) {
			*out = cand;
			cand = NULL;
			err = 0;
			break;
		}
		if (skipped && !*skipped) {
			*skipped = cand;
			cand = NULL;
		}
	}
	free(cand);
	free(copy);
	return err;
}

/* The best-matching ELF file in the first library directory holding one. */
static int find_in_libdirs(const char *name, char **out)
{
	for (size_t i = 0; i < NLIB_DIRS; i++) {
		char *best = NULL;
		int best_rank = -1;
		struct dirent *e;
		DIR *d = opendir(lib_dirs[i]);

		if (!d)
			continue;
		while ((e = readdir(d))) {
			int rank = name_rank(e->d_name, name);
			size_t n;
			char *cand;

			if (rank < 0 || !better(rank, e->d_name, best_rank, best ? base_name(best) : ""))
				continue;
			n = strlen(lib_dirs[i]) + strlen(e->d_name) + 2;
			cand = malloc(n);
			if (!cand) {
				free(best);
				closedir(d);
				return -ENOMEM;
			}
			snprintf(cand, n, "%s/%s", lib_dirs[i], e->d_name);
			/* libc.so is a linker script; libc.so.6 is the library */
			if (!is_elf(cand)) {
				free(cand);
				continue;
			}
			free(best);
			best = cand;
			best_rank = rank;
		}
		closedir(d);
		if (best) {
			*out = best;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Resolve BINARY @name (see probe.h for the order). On failure, appends to
 * @m what was tried (the caller has written the spec's prefix).
 */
static int bin_resolve(const char *name, const int *pids, size_t npids, struct bin *out,
		       struct msg *m)
{
	struct bin b = { 0 };
	char *skipped = NULL;
	size_t searched = 0;
	int err;

	if (!name[0]) {
		msg_add(m, "empty binary name");
		return -EINVAL;
	}
	if (strchr(name, '/')) {
		struct stat st;

		if (stat(name, &st) < 0) {
			err = -errno;
			msg_add(m, "%s: %s", name, strerror(-err));
			return err;
		}
		if (!S_ISREG(st.st_mode)) {
			msg_add(m, "%s is not a regular file", name);
			return -EINVAL;
		}
		b.path = strdup(name);
		b.debug_root = strdup("");
		if (!b.path || !b.debug_root) {
			bin_release(&b);
			return -ENOMEM;
		}
		*out = b;
		return 0;
	}
	err = find_in_pids(name, pids, npids, &b);
	if (err != -ENOENT)
		goto done;
	err = find_in_path(name, &b.path, &skipped);
	if (err == -ENOENT)
		err = find_in_libdirs(name, &b.path);
	if (err == 0 && !(b.debug_root = strdup("")))
		err = -ENOMEM;
	if (err != -ENOENT)
		goto done;

	msg_add(m, "cannot find binary \"%s\": ", name);
	for (size_t i = 0; i < npids; i++) {
		if (pids[i] <= 0)
			continue;
		msg_add(m, "%s%d", searched++ ? ", " : "not mapped by pid ", pids[i]);
	}
	if (searched)
		msg_add(m, "; ");
	msg_add(m, "no ELF executable \"%s\" in PATH", name);
	if (skipped)
		msg_add(m, " (%s is not ELF)", skipped);
	msg_add(m, "; no %s, %s.so*, lib%s.so* in", name, name, name);
	for (size_t i = 0; i < NLIB_DIRS; i++)
		msg_add(m, "%s%s", i ? ", " : " ", lib_dirs[i]);
	msg_add(m, "; give its path%s", npids ? "" : " or the processes that map it");
done:
	free(skipped);
	if (err == 0)
		*out = b;
	else
		bin_release(&b);
	return err;
}

int probe_find_binary(const char *name, const int *pids, size_t npids, char **path, char *err,
		      size_t errlen)
{
	struct msg m;
	struct bin b = { 0 };
	int ret;

	msg_init(&m, err, errlen);
	ret = bin_resolve(name, pids, npids, &b, &m);
	if (ret)
		return ret;
	*path = b.path;
	b.path = NULL;
	bin_release(&b);
	return 0;
}

/* ---- arguments ---- */

/* Append an argument the grammar accepted (probe_spec.c checked its name). */
static int add_argdef(struct probe *p, const struct probe_spec_arg *sa, const struct usdt_arg *a)
{
	struct probe_argdef *d = &p->args[p->nargs];

	memset(d, 0, sizeof(*d));
	d->usdt_index = -1;
	d->name = strdup(sa->name);
	if (!d->name)
		return -ENOMEM;
	if (a) {
		d->a = *a;
		if ((a->kind == USDT_ARG_REG || a->kind == USDT_ARG_MEM) && a->reg >= 0 &&
		    a->reg < 64)
			p->regs_mask |= UINT64_C(1) << a->reg;
	}
	p->nargs++;
	return 0;
}

static int usdt_argdef(struct probe *p, const struct usdt_probe *up,
		       const struct probe_spec_arg *sa, const char *head, struct msg *m)
{
	int n = sa->argn, err;

	if (n >= up->nargs) {
		if (up->nargs)
			msg_add(m, "%s: %s: the probe has %d argument%s (arg0..arg%d)", head,
				sa->value, up->nargs, up->nargs == 1 ? "" : "s", up->nargs - 1);
		else
			msg_add(m, "%s: %s: the probe has no arguments", head, sa->value);
		return -EINVAL;
	}
	err = add_argdef(p, sa, &up->args[n]);
	if (err)
		return err;
	p->args[p->nargs - 1].usdt_index = n;
	return 0;
}

/* ---- uprobes ---- */

static void symbol_suggest(const struct symtab *s, const char *want, const char *path,
			   struct msg *m)
{
	struct suggest nr = { 0 };
	size_t count = symtab_count(s);

	suggest_init(&nr, PROBE_SUGGEST);
	msg_add(m, "no function \"%s\" in %s (%zu functions from %s%s)", want, path, count,
		symtab_source(s),
		strcmp(symtab_source(s), "dynsym") == 0 ? ": exported only, no debuginfo" : "");
	for (size_t i = 0; i < count; i++)
		suggest_consider(&nr, want, symtab_name_at(s, i, NULL));
	near_print(&nr, m);
	suggest_release(&nr);
}

/* "u:BINARY:SYMBOL[+OFF][%return]" */
static int resolve_uprobe(struct probe *p, const struct probe_spec *ps, const int *pids,
			  size_t npids, struct msg *m)
{
	const char *head = ps->head, *body = ps->binary, *sym = ps->name;
	uint64_t off = ps->offset, sym_off, in_off;
	struct bin b = { 0 };
	struct symtab *s = NULL;
	const char *found;
	size_t n;
	int err;

	p->retprobe = ps->retprobe;
	err = -ENOMEM;
	p->symbol = strdup(sym);
	if (!p->symbol)
		goto out;
	msg_add(m, "%s: ", head);
	err = bin_resolve(body, pids, npids, &b, m);
	if (err < 0)
		goto out;
	s = symtab_open(b.path, b.debug_root);
	if (!s) {
		err = errno ? -errno : -EIO;
		msg_add(m, "cannot read symbols of %s: %s", b.path,
			err == -ENOEXEC ? "not an ELF file" : strerror(-err));
		goto out;
	}
	err = symtab_find(s, sym, &sym_off);
	if (err < 0) {
		symbol_suggest(s, sym, b.path, m);
		err = -ENOENT;
		goto out;
	}
	if (off) {
		if (sym_off + off < sym_off || symtab_lookup(s, sym_off + off, &found, &in_off) < 0 ||
		    strcmp(found, sym) != 0 || in_off != off) {
			msg_add(m, "%s+%#" PRIx64 " is outside %s", sym, off, sym);
			err = -EINVAL;
			goto out;
		}
	}
	p->kind = PROBE_UPROBE;
	p->offset = sym_off + off;
	p->nsites = 1;
	p->path = b.path;
	b.path = NULL;

	/* label: u:NAME:SYMBOL[+0xOFF][%return], NAME as typed or the file's name */
	n = strlen(body) + strlen(sym) + 48;
	p->label = malloc(n);
	err = -ENOMEM;
	if (!p->label)
		goto out;
	snprintf(p->label, n, "u:%s:%s", strchr(body, '/') ? base_name(body) : body, sym);
	if (off)
		snprintf(p->label + strlen(p->label), n - strlen(p->label), "+%#" PRIx64, off);
	if (p->retprobe)
		snprintf(p->label + strlen(p->label), n - strlen(p->label), "%%return");
	err = 0;
out:
	symtab_free(s);
	bin_release(&b);
	return err;
}

/* ---- USDT ---- */

/* A file's probes, and whether it has any of @provider (for suggestions). */
struct sdt_file {
	struct bin bin;
	struct usdt_list *list;
};

static void sdt_file_release(struct sdt_file *f)
{
	bin_release(&f->bin);
	usdt_free(f->list);
	f->list = NULL;
}

static bool has_provider(const struct usdt_list *l, const char *provider)
{
	for (size_t i = 0; i < usdt_count(l); i++) {
		if (strcmp(usdt_get(l, i)->provider, provider) == 0)
			return true;
	}
	return false;
}

static void sdt_suggest(const struct usdt_list *l, const char *provider, const char *name,
			const char *path, struct msg *m)
{
	struct suggest nr = { 0 };
	size_t wl = strlen(provider) + strlen(name) + 2;
	char *want = malloc(wl);

	suggest_init(&nr, PROBE_SUGGEST);
	msg_add(m, "no SDT probe %s:%s in %s (%zu probes)", provider, name, path, usdt_count(l));
	if (!want)
		return;
	snprintf(want, wl, "%s:%s", provider, name);
	for (size_t i = 0; i < usdt_count(l); i++) {
		const struct usdt_probe *up = usdt_get(l, i);
		size_t hl = strlen(up->provider) + strlen(up->name) + 2;
		char *have = malloc(hl);

		if (!have)
			break;
		snprintf(have, hl, "%s:%s", up->provider, up->name);
		/* a matching provider is compared by name alone */
		if (strcmp(up->provider, provider) == 0)
			suggest_consider(&nr, name, up->name);
		else
			suggest_consider(&nr, want, have);
		free(have);
	}
	free(want);
	/* names of the same provider print bare; qualify them for clarity */
	if (nr.n) {
		msg_add(m, "; did you mean ");
		for (size_t i = 0; i < nr.n; i++) {
			bool bare = !strchr(nr.name[i], ':');

			msg_add(m, "%s%s%s%s", i ? ", " : "", bare ? provider : "", bare ? ":" : "",
				nr.name[i]);
		}
		msg_add(m, "?");
	}
	suggest_release(&nr);
}

struct exec_files {
	char **v;
	size_t n;
};

static int collect_exec(void *ctx, const char *path, bool exec)
{
	struct exec_files *ef = ctx;
	char **nv;

	if (!exec)
		return 0;
	for (size_t i = 0; i < ef->n; i++) {
		if (strcmp(ef->v[i], path) == 0)
			return 0;
	}
	if (ef->n >= PROBE_MAPS_FILES)
		return 1;
	nv = realloc(ef->v, (ef->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	ef->v = nv;
	ef->v[ef->n] = strdup(path);
	if (!ef->v[ef->n])
		return -ENOMEM;
	ef->n++;
	return 0;
}

static void exec_files_release(struct exec_files *ef)
{
	for (size_t i = 0; i < ef->n; i++)
		free(ef->v[i]);
	free(ef->v);
	ef->v = NULL;
	ef->n = 0;
}

/*
 * Without @BINARY: the first file mapped executable by @pids whose notes
 * have provider:name. 0 with @out filled; -ENOENT with @hint holding the
 * first file that has the provider at all (for suggestions), if any.
 */
static int sdt_search_pids(const char *provider, const char *name, const int *pids,
			   size_t npids, struct sdt_file *out, struct sdt_file *hint)
{
	for (size_t i = 0; i < npids; i++) {
		struct exec_files ef = { 0 };
		int err;

		if (pids[i] <= 0)
			continue;
		err = maps_foreach(pids[i], collect_exec, &ef);
		if (err == -ENOMEM) {
			exec_files_release(&ef);
			return err;
		}
		for (size_t j = 0; j < ef.n; j++) {
			struct sdt_file f = { 0 };

			err = bin_from_pid(pids[i], ef.v[j], &f.bin);
			if (err < 0) {
				exec_files_release(&ef);
				return err;
			}
			f.list = usdt_read(f.bin.path);
			if (f.list && usdt_find(f.list, provider, name)) {
				*out = f;
				exec_files_release(&ef);
				return 0;
			}
			if (f.list && !hint->list && has_provider(f.list, provider)) {
				*hint = f;
				continue;
			}
			sdt_file_release(&f);
		}
		exec_files_release(&ef);
	}
	return -ENOENT;
}

/* "sdt:PROVIDER:NAME[@BINARY]" */
static int resolve_usdt(struct probe *p, const struct probe_spec *ps, const int *pids,
			size_t npids, struct msg *m)
{
	const char *head = ps->head, *provider = ps->group, *name = ps->name;
	const char *binary = ps->binary;
	struct sdt_file f = { 0 }, hint = { 0 };
	const struct usdt_probe *up = NULL;
	int err;

	msg_add(m, "%s: ", head);
	if (binary) {
		err = bin_resolve(binary, pids, npids, &f.bin, m);
		if (err < 0)
			goto out;
	} else {
		err = sdt_search_pids(provider, name, pids, npids, &f, &hint);
		if (err == -ENOENT && !hint.list) {
			/* a binary named like its provider ("libc" has provider libc) */
			struct msg quiet = { 0 };

			err = bin_resolve(provider, NULL, 0, &f.bin, &quiet);
			if (err == -ENOENT) {
				if (npids)
					msg_add(m, "not found in the files mapped by the given processes; ");
				msg_add(m, "no binary named \"%s\" in PATH or the library directories; "
					   "name the binary: sdt:%s:%s@BINARY", provider, provider, name);
				goto out;
			}
		} else if (err == -ENOENT) {
			sdt_suggest(hint.list, provider, name, hint.bin.path, m);
			goto out;
		}
		if (err < 0)
			goto out;
	}
	if (!f.list) {
		f.list = usdt_read(f.bin.path);
		if (!f.list) {
			err = errno ? -errno : -EIO;
			msg_add(m, "cannot read SDT notes of %s: %s", f.bin.path,
				err == -ENOEXEC ? "not an ELF file" : strerror(-err));
			goto out;
		}
	}
	if (usdt_count(f.list) == 0) {
		msg_add(m, "%s has no SDT notes", f.bin.path);
		err = -ENOENT;
		goto out;
	}
	up = usdt_find(f.list, provider, name);
	if (!up) {
		sdt_suggest(f.list, provider, name, f.bin.path, m);
		err = -ENOENT;
		goto out;
	}

	msg_init(m, m->buf, m->cap); /* the prefix written above is not needed any more */
	p->kind = PROBE_USDT;
	p->offset = up->pc_off;
	p->ref_ctr = up->sema_off;
	for (size_t i = 0; i < usdt_count(f.list); i++) {
		const struct usdt_probe *o = usdt_get(f.list, i);

		if (strcmp(o->provider, provider) == 0 && strcmp(o->name, name) == 0)
			p->nsites++;
	}
	for (int i = 0; i < ps->nargs; i++) {
		err = usdt_argdef(p, up, &ps->args[i], head, m);
		if (err < 0)
			goto out;
	}
	err = -ENOMEM;
	p->symbol = malloc(strlen(provider) + strlen(name) + 2);
	p->label = malloc(strlen(provider) + strlen(name) + 6);
	if (!p->symbol || !p->label)
		goto out;
	snprintf(p->symbol, strlen(provider) + strlen(name) + 2, "%s:%s", provider, name);
	snprintf(p->label, strlen(provider) + strlen(name) + 6, "sdt:%s:%s", provider, name);
	p->path = f.bin.path;
	f.bin.path = NULL;
	err = 0;
out:
	sdt_file_release(&f);
	sdt_file_release(&hint);
	return err;
}

/* ---- tracepoints ---- */

struct tp_field {
	const char *name; /* into the format text */
	size_t len;
	int offset, size;
	bool is_signed, dynamic, relative;
};

/* Read tracefs events/SYS/EVENT/format (libtracefs) into a NUL-terminated
 * buffer, cut at PROBE_FORMAT_MAX bytes. */
static int format_read(const char *tracefs, const char *sys, const char *event, char **out)
{
	size_t len;
	int err = ev_tracefs_read(tracefs, sys, event, "format", out, &len);

	if (!err && len > PROBE_FORMAT_MAX)
		(*out)[PROBE_FORMAT_MAX] = '\0';
	return err;
}

static int tp_argdef(struct probe *p, const struct tp_field *fields, size_t nfields,
		     const struct probe_spec_arg *sa, const char *head, struct msg *m)
{
	const char *value = sa->value;
	const struct tp_field *f = NULL;
	struct probe_argdef *d;
	size_t listed = 0;
	int err;

	for (size_t i = 0; i < nfields; i++) {
		if (strlen(value) == fields[i].len && !strncmp(fields[i].name, value, fields[i].len)) {
			f = &fields[i];
			break;
		}
	}
	if (!f) {
		msg_add(m, "%s: no field \"%s\"; fields:", head, value);
		for (size_t i = 0; i < nfields; i++) {
			if (fields[i].len >= 7 && !strncmp(fields[i].name, "common_", 7))
				continue;
			msg_add(m, "%s%.*s", listed++ ? ", " : " ", (int)fields[i].len,
				fields[i].name);
		}
		if (!listed)
			msg_add(m, " none but common_*");
		return -ENOENT;
	}
	if (f->relative) {
		msg_add(m, "%s: field \"%s\" is __rel_loc, not supported", head, value);
		return -EOPNOTSUPP;
	}
	if (!f->dynamic && (f->size <= 0 || f->size > 8)) {
		/* char comm[16] and the like: not a number to count or histogram */
		msg_add(m, "%s: field \"%s\" is %d bytes, not a number (at most 8 bytes)", head,
			value, f->size);
		return -EINVAL;
	}
	err = add_argdef(p, sa, NULL);
	if (err < 0)
		return err;
	d = &p->args[p->nargs - 1];
	d->field = strndup(f->name, f->len);
	if (!d->field)
		return -ENOMEM;
	d->field_offset = f->offset;
	d->field_size = f->size;
	d->field_signed = f->is_signed;
	d->field_dynamic = f->dynamic;
	return 0;
}

/* "SUBSYS:EVENT" */
static int resolve_tracepoint(struct probe *p, const struct probe_spec *ps, struct msg *m)
{
	const char *tracefs = ev_tracefs(), *head = ps->head;
	const char *sys = ps->group, *event = ps->name;
	struct tp_field *fields = NULL;
	struct ev_spec ev = { 0 };
	char *text = NULL;
	struct tep_handle *tep = NULL;
	struct tep_event *tev;
	struct tep_format_field **tfields = NULL, **cfields = NULL;
	size_t nfields = 0;
	int err;

	if (!tracefs) {
		msg_add(m, "%s: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)",
			head);
		return -ENOENT;
	}
	err = ev_parse(head, tracefs, &ev);
	if (err == 0 && ev.kind != EV_TRACEPOINT) {
		msg_add(m, "%s: a perf event, not a tracepoint", head);
		err = -EINVAL;
		goto out;
	}
	if (err == -ENOENT) {
		char *sugg[PROBE_SUGGEST];
		size_t ns = ev_suggest(head, tracefs, sugg, PROBE_SUGGEST), shown = 0;

		msg_add(m, "%s: no such tracepoint under %s/events", head, tracefs);
		for (size_t i = 0; i < ns; i++) {
			/* only tracepoints make sense here, not "cycles" */
			if (strchr(sugg[i], ':'))
				msg_add(m, "%s%s", shown++ ? ", " : "; did you mean ", sugg[i]);
			free(sugg[i]);
		}
		if (shown)
			msg_add(m, "?");
		goto out;
	}
	if (err == -EINVAL) {
		msg_add(m, "%s: malformed tracepoint name", head);
		goto out;
	}
	if (err < 0) {
		msg_add(m, "%s: cannot read its id under %s/events: %s", head, tracefs,
			strerror(-err));
		goto out;
	}
	p->kind = PROBE_TRACEPOINT;
	p->tp_id = ev.config;
	p->nsites = 1;
	err = -ENOMEM;
	p->label = strdup(head);
	p->symbol = strdup(head);
	if (!p->label || !p->symbol)
		goto out;
	if (!ps->nargs) {
		err = 0;
		goto out;
	}

	err = format_read(tracefs, sys, event, &text);
	if (err < 0) {
		msg_add(m, "%s: cannot read %s/events/%s/%s/format: %s", head, tracefs, sys,
			event, strerror(-err));
		goto out;
	}
	/* The format file is parsed by libtraceevent, which knows every
	 * kernel's dialect of it (arrays, __data_loc, __rel_loc, signedness). */
	tep = tep_alloc();
	err = -ENOMEM;
	if (!tep)
		goto out;
	if (tep_parse_event(tep, text, strlen(text), sys) != 0 ||
	    !(tev = tep_find_event_by_name(tep, sys, event)) || !(tfields = tep_event_fields(tev))) {
		msg_add(m, "%s: cannot parse %s/events/%s/%s/format", head, tracefs, sys, event);
		err = -EINVAL;
		goto out;
	}
	fields = calloc(PROBE_FIELDS_MAX, sizeof(*fields));
	if (!fields)
		goto out;
	/* The event's own fields, then the common ones (common_pid, ...). */
	cfields = tep_event_common_fields(tev);
	for (size_t i = 0, j = 0; nfields < PROBE_FIELDS_MAX; ) {
		const struct tep_format_field *tf = tfields[i] ? tfields[i++]
					     : cfields && cfields[j] ? cfields[j++] : NULL;
		struct tp_field *f = &fields[nfields];

		if (!tf)
			break;
		if (!tf->name || tf->offset < 0 || tf->size < 0)
			continue;
		f->name = tf->name;
		f->len = strlen(tf->name);
		f->offset = tf->offset;
		f->size = tf->size;
		f->is_signed = tf->flags & TEP_FIELD_IS_SIGNED;
		f->dynamic = (tf->flags & TEP_FIELD_IS_DYNAMIC) && !(tf->flags & TEP_FIELD_IS_RELATIVE);
		f->relative = tf->flags & TEP_FIELD_IS_RELATIVE;
		nfields++;
	}
	err = 0;
	for (int i = 0; i < ps->nargs && err == 0; i++)
		err = tp_argdef(p, fields, nfields, &ps->args[i], head, m);
out:
	free(fields);
	free(tfields);
	free(cfields);
	tep_free(tep);
	free(text);
	ev_spec_release(&ev);
	return err;
}

/* ---- public ---- */

void probe_release(struct probe *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nargs && i < USDT_MAX_ARGS; i++) {
		free(p->args[i].name);
		free(p->args[i].field);
	}
	free(p->spec);
	free(p->label);
	free(p->path);
	free(p->symbol);
	memset(p, 0, sizeof(*p));
}

int probe_resolve(const char *spec, const int *pids, size_t npids, struct probe *out, char *err,
		  size_t errlen)
{
	struct probe_spec ps = { 0 };
	struct probe p = { 0 };
	struct msg m;
	int ret;

	if (!out) {
		msg_init(&m, err, errlen);
		msg_add(&m, "no probe given");
		return -EINVAL;
	}
	ret = probe_spec_parse(spec, &ps, err, errlen);
	if (ret)
		return ret;
	msg_init(&m, err, errlen);
	if (!pids)
		npids = 0;
	p.spec = strdup(spec);
	ret = -ENOMEM;
	if (!p.spec)
		goto fail;
	if (ps.kind == PROBE_UPROBE) {
		ret = resolve_uprobe(&p, &ps, pids, npids, &m);
		if (ret == 0) {
			msg_init(&m, err, errlen);
			for (int i = 0; i < ps.nargs && ret == 0; i++)
				ret = add_argdef(&p, &ps.args[i], &ps.args[i].a);
		}
	} else if (ps.kind == PROBE_USDT) {
		ret = resolve_usdt(&p, &ps, pids, npids, &m);
	} else {
		ret = resolve_tracepoint(&p, &ps, &m);
	}
	if (ret < 0)
		goto fail;
	probe_spec_release(&ps);
	*out = p;
	return 0;

fail:
	if (ret == -ENOMEM) {
		msg_init(&m, err, errlen);
		msg_add(&m, "%s: out of memory", spec);
	}
	probe_spec_release(&ps);
	probe_release(&p);
	return ret;
}

/* ---- perf_event_attr ---- */

/* A small sysfs file, without its newline. */
static int read_small(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A format/ entry "config:LO" or "config:LO-HI": the bits of attr.config. */
static int format_bits(const char *text, unsigned *lo, unsigned *hi)
{
	unsigned long a, b;
	char *end;

	if (!starts_with(text, "config:") || !isdigit((unsigned char)text[7]))
		return -EINVAL;
	errno = 0;
	a = strtoul(text + 7, &end, 10);
	b = a;
	if (!errno && *end == '-' && isdigit((unsigned char)end[1]))
		b = strtoul(end + 1, &end, 10);
	if (errno || *end || a > b || b > 63)
		return -EINVAL;
	*lo = (unsigned)a;
	*hi = (unsigned)b;
	return 0;
}

int probe_attr_at(const struct probe *p, const char *pmu_dir, struct perf_event_attr *attr,
		  char *err, size_t errlen)
{
	char buf[64];
	unsigned lo, hi;
	uint64_t type, config = 0;
	struct msg m;
	int ret;

	msg_init(&m, err, errlen);
	if (!p || !attr) {
		msg_add(&m, "no probe");
		return -EINVAL;
	}
	if (attr->size == 0)
		attr->size = sizeof(*attr);
	if (p->kind == PROBE_TRACEPOINT) {
		attr->type = PERF_TYPE_TRACEPOINT;
		attr->config = p->tp_id;
		return 0;
	}
	if (!p->path) {
		msg_add(&m, "%s: not resolved", p->label ? p->label : "probe");
		return -EINVAL;
	}
	if (!pmu_dir)
		pmu_dir = PROBE_PMU_DIR;

	ret = read_small(pmu_dir, "type", buf, sizeof(buf));
	if (ret == -ENOENT) {
		msg_add(&m, "this kernel has no uprobe PMU (%s missing): uprobes need Linux 4.17+ "
			    "built with CONFIG_UPROBE_EVENTS", pmu_dir);
		return -ENOENT;
	}
	if (ret < 0) {
		msg_add(&m, "%s/type: %s", pmu_dir, strerror(-ret));
		return ret;
	}
	if (probe_spec_u64(buf, &type) < 0 || type > UINT32_MAX) {
		msg_add(&m, "%s/type: unexpected \"%s\"", pmu_dir, buf);
		return -EIO;
	}
	if (p->retprobe) {
		ret = read_small(pmu_dir, "format/retprobe", buf, sizeof(buf));
		if (ret == -ENOENT) {
			msg_add(&m, "the uprobe PMU has no retprobe bit (%s/format/retprobe)", pmu_dir);
			return -EOPNOTSUPP;
		}
		if (ret < 0 || format_bits(buf, &lo, &hi) < 0 || lo != hi) {
			msg_add(&m, "%s/format/retprobe: unexpected \"%s\"", pmu_dir, ret < 0 ? "" : buf);
			return -EIO;
		}
		config |= UINT64_C(1) << lo;
	}
	if (p->ref_ctr) {
		unsigned width;

		ret = read_small(pmu_dir, "format/ref_ctr_offset", buf, sizeof(buf));
		if (ret == -ENOENT) {
			msg_add(&m, "%s has a semaphore but this kernel's uprobe PMU takes no "
				    "ref_ctr_offset (Linux 4.20+)", p->label ? p->label : "probe");
			return -EOPNOTSUPP;
		}
		if (ret < 0 || format_bits(buf, &lo, &hi) < 0) {
			msg_add(&m, "%s/format/ref_ctr_offset: unexpected \"%s\"", pmu_dir,
				ret < 0 ? "" : buf);
			return -EIO;
		}
		width = hi - lo + 1;
		if (width < 64 && p->ref_ctr >> width) {
			msg_add(&m, "semaphore offset %#" PRIx64 " does not fit %u bits", p->ref_ctr,
				width);
			return -ERANGE;
		}
		if ((config >> lo) & (width < 64 ? (UINT64_C(1) << width) - 1 : UINT64_MAX)) {
			msg_add(&m, "%s/format: retprobe and ref_ctr_offset overlap", pmu_dir);
			return -EIO;
		}
		config |= p->ref_ctr << lo;
	}
	attr->type = (uint32_t)type;
	attr->config = config;
	attr->config1 = (uint64_t)(uintptr_t)p->path;
	attr->config2 = p->offset;
	return 0;
}

int probe_attr(const struct probe *p, struct perf_event_attr *attr)
{
	return probe_attr_at(p, NULL, attr, NULL, 0);
}

struct mem_ctx {
	pid_t pid;
};

static int read_live(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct mem_ctx *m = ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (process_vm_readv(m->pid, &local, 1, &remote, 1, 0) == (ssize_t)len)
		return 0;
	return -errno;
}

int probe_arg_value(const struct probe *p, int a, const struct usdt_arg *site_arg,
		    const struct sample *s, uint64_t regs_mask, int64_t *out)
{
	const struct probe_argdef *d;
	uint64_t regs[64] = { 0 }, valid = 0;
	struct mem_ctx mc;
	size_t k = 0;

	if (!p || a < 0 || a >= p->nargs || !s || !out)
		return -EINVAL;
	d = &p->args[a];
	if (d->field) {
		const uint8_t *raw = s->raw;
		uint64_t v = 0;
		int off = d->field_offset, size = d->field_size;

		if (!raw || off < 0 || size <= 0 || size > 8 ||
		    (uint64_t)off + (uint64_t)size > s->raw_size)
			return -ENOENT;
		if (d->field_dynamic) {
			uint32_t loc;

			memcpy(&loc, raw + off, 4);
			*out = loc >> 16; /* a dynamic field: its length */
			return 0;
		}
		memcpy(&v, raw + off, (size_t)size); /* little-endian host */
		if (d->field_signed && size < 8 && (v >> (size * 8 - 1)) & 1)
			v |= ~0ull << (size * 8);
		*out = (int64_t)v;
		return 0;
	}
	/* Registers arrive packed in mask order; unpack by perf register number. */
	for (int r = 0; s->regs && r < 64; r++) {
		if (!(regs_mask & (1ull << r)))
			continue;
		regs[r] = s->regs[k++];
		valid |= 1ull << r;
	}
	mc.pid = (pid_t)s->pid;
	return usdt_arg_value(site_arg ? site_arg : &d->a, regs, valid, read_live, &mc, out);
}
