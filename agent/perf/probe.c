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
 *
 * The module's files by job: probe_spec.c the grammar (shared with the run
 * configuration), probe_bin.c finding the file, this file resolving a spec
 * (uprobe symbols, SDT notes, tracefs formats and fields), probe_kernel.c
 * and probe_btf.c kernel probes, probe_event.c the perf_event_attr and
 * argument values from samples.
 */
#include "agent/perf/probe.h"
#include "agent/perf/probe_int.h"

#include <errno.h>
#include <traceevent/event-parse.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/perf/events.h"
#include "agent/perf/probe_spec.h"
#include "lib/strv.h"
#include "lib/suggest.h"
#include "agent/symbols/symtab.h"

#define PROBE_SUGGEST 5		  /* near matches offered */
#define PROBE_MAPS_FILES 4096	  /* distinct files searched for SDT notes */
#define PROBE_FORMAT_MAX (64u << 10) /* a tracefs format file (~2 KiB) */
#define PROBE_FIELDS_MAX 512	  /* fields of one tracepoint */

/* ---- the caller's message buffer ---- */

void probe_msg_init(struct probe_msg *m, char *buf, size_t cap)
{
	m->buf = cap ? buf : NULL;
	m->cap = m->buf ? cap : 0;
	m->len = 0;
	if (m->buf)
		m->buf[0] = '\0';
}

/* Append; a message longer than the buffer is cut, never overrun. */
void probe_msg_add(struct probe_msg *m, const char *fmt, ...)
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

/* ---- near matches (lib/suggest) ---- */

static void near_print(const struct suggest *nr, struct probe_msg *m)
{
	if (!nr->n)
		return;
	probe_msg_add(m, "; did you mean ");
	for (size_t i = 0; i < nr->n; i++)
		probe_msg_add(m, "%s%s", i ? ", " : "", nr->name[i]);
	probe_msg_add(m, "?");
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
		       const struct probe_spec_arg *sa, const char *head, struct probe_msg *m)
{
	int n = sa->argn, err;

	if (n >= up->nargs) {
		if (up->nargs)
			probe_msg_add(m, "%s: %s: the probe has %d argument%s (arg0..arg%d)", head,
				sa->value, up->nargs, up->nargs == 1 ? "" : "s", up->nargs - 1);
		else
			probe_msg_add(m, "%s: %s: the probe has no arguments", head, sa->value);
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
			   struct probe_msg *m)
{
	struct suggest nr = { 0 };
	size_t count = symtab_count(s);

	suggest_init(&nr, PROBE_SUGGEST);
	probe_msg_add(m, "no function \"%s\" in %s (%zu functions from %s%s)", want, path, count,
		symtab_source(s),
		strcmp(symtab_source(s), "dynsym") == 0 ? ": exported only, no debuginfo" : "");
	for (size_t i = 0; i < count; i++)
		suggest_consider(&nr, want, symtab_name_at(s, i, NULL));
	near_print(&nr, m);
	suggest_release(&nr);
}

/* "u:BINARY:SYMBOL[+OFF][%return]" */
static int resolve_uprobe(struct probe *p, const struct probe_spec *ps, const int *pids,
			  size_t npids, struct probe_msg *m)
{
	const char *head = ps->head, *body = ps->binary, *sym = ps->name;
	uint64_t off = ps->offset, sym_off, in_off;
	struct probe_bin b = { 0 };
	struct symtab *s = NULL;
	const char *found;
	size_t n;
	int err;

	p->retprobe = ps->retprobe;
	err = -ENOMEM;
	p->symbol = strdup(sym);
	if (!p->symbol)
		goto out;
	probe_msg_add(m, "%s: ", head);
	err = probe_bin_resolve(body, pids, npids, &b, m);
	if (err < 0)
		goto out;
	s = probe_bin_symtab(&b);
	if (!s) {
		err = errno ? -errno : -EIO;
		probe_msg_add(m, "cannot read symbols of %s: %s", b.path,
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
		if (sym_off + off < sym_off ||
		    symtab_lookup(s, sym_off + off, &found, &in_off) < 0 ||
		    strcmp(found, sym) != 0 || in_off != off) {
			probe_msg_add(m, "%s+%#" PRIx64 " is outside %s", sym, off, sym);
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
	snprintf(p->label, n, "u:%s:%s", strchr(body, '/') ? probe_base_name(body) : body, sym);
	if (off)
		snprintf(p->label + strlen(p->label), n - strlen(p->label), "+%#" PRIx64, off);
	if (p->retprobe)
		snprintf(p->label + strlen(p->label), n - strlen(p->label), "%%return");
	err = 0;
out:
	symtab_free(s);
	probe_bin_release(&b);
	return err;
}

/* ---- USDT ---- */

/* A file's probes, and whether it has any of @provider (for suggestions). */
struct sdt_file {
	struct probe_bin bin;
	struct usdt_list *list;
};

static void sdt_file_release(struct sdt_file *f)
{
	probe_bin_release(&f->bin);
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
			const char *path, struct probe_msg *m)
{
	struct suggest nr = { 0 };
	size_t wl = strlen(provider) + strlen(name) + 2;
	char *want = malloc(wl);

	suggest_init(&nr, PROBE_SUGGEST);
	probe_msg_add(m, "no SDT probe %s:%s in %s (%zu probes)", provider, name, path,
		      usdt_count(l));
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
		probe_msg_add(m, "; did you mean ");
		for (size_t i = 0; i < nr.n; i++) {
			bool bare = !strchr(nr.name[i], ':');

			probe_msg_add(m, "%s%s%s%s", i ? ", " : "", bare ? provider : "",
				      bare ? ":" : "", nr.name[i]);
		}
		probe_msg_add(m, "?");
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
	strv_free(ef->v, ef->n);
	ef->v = NULL;
	ef->n = 0;
}

struct sdt_search {
	const char *provider, *name;
	struct sdt_file *out, *hint;
};

/* @pid's executable files, searched for provider:name: 1 with *out filled. */
static int sdt_search_pid(void *ctx, int pid)
{
	struct sdt_search *q = ctx;
	struct exec_files ef = { 0 };
	int ret = probe_maps_foreach(pid, collect_exec, &ef);

	if (ret != -ENOMEM)
		ret = 0;
	for (size_t j = 0; j < ef.n && !ret; j++) {
		struct sdt_file f = { 0 };

		ret = probe_bin_from_pid(pid, ef.v[j], &f.bin);
		if (ret < 0)
			break;
		f.list = probe_bin_usdt(&f.bin);
		if (f.list && usdt_find(f.list, q->provider, q->name)) {
			*q->out = f;
			ret = 1;
		} else if (f.list && !q->hint->list && has_provider(f.list, q->provider)) {
			*q->hint = f;
		} else {
			sdt_file_release(&f);
		}
	}
	exec_files_release(&ef);
	return ret;
}

/*
 * Without @BINARY: the first file mapped executable by @pids whose notes
 * have provider:name. 0 with @out filled; -ENOENT with @hint holding the
 * first file that has the provider at all (for suggestions), if any.
 */
static int sdt_search_pids(const char *provider, const char *name, const int *pids,
			   size_t npids, struct sdt_file *out, struct sdt_file *hint)
{
	struct sdt_search q = { provider, name, out, hint };
	int ret = probe_pids_foreach(pids, npids, sdt_search_pid, &q);

	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

/* "sdt:PROVIDER:NAME[@BINARY]" */
static int resolve_usdt(struct probe *p, const struct probe_spec *ps, const int *pids,
			size_t npids, struct probe_msg *m)
{
	const char *head = ps->head, *provider = ps->group, *name = ps->name;
	const char *binary = ps->binary;
	struct sdt_file f = { 0 }, hint = { 0 };
	const struct usdt_probe *up = NULL;
	int err;

	probe_msg_add(m, "%s: ", head);
	if (binary) {
		err = probe_bin_resolve(binary, pids, npids, &f.bin, m);
		if (err < 0)
			goto out;
	} else {
		err = sdt_search_pids(provider, name, pids, npids, &f, &hint);
		if (err == -ENOENT && !hint.list) {
			/* a binary named like its provider ("libc" has provider libc) */
			struct probe_msg quiet = { 0 };

			err = probe_bin_resolve(provider, NULL, 0, &f.bin, &quiet);
			if (err == -ENOENT) {
				if (npids)
					probe_msg_add(m, "not found in the files mapped by the "
							 "given processes; ");
				probe_msg_add(m,
					      "no binary named \"%s\" in PATH or the library "
					      "directories; "
					      "name the binary: sdt:%s:%s@BINARY",
					      provider, provider, name);
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
		f.list = probe_bin_usdt(&f.bin);
		if (!f.list) {
			err = errno ? -errno : -EIO;
			probe_msg_add(m, "cannot read SDT notes of %s: %s", f.bin.path,
				err == -ENOEXEC ? "not an ELF file" : strerror(-err));
			goto out;
		}
	}
	if (usdt_count(f.list) == 0) {
		probe_msg_add(m, "%s has no SDT notes", f.bin.path);
		err = -ENOENT;
		goto out;
	}
	up = usdt_find(f.list, provider, name);
	if (!up) {
		sdt_suggest(f.list, provider, name, f.bin.path, m);
		err = -ENOENT;
		goto out;
	}

	probe_msg_init(m, m->buf, m->cap); /* the prefix written above is not needed any more */
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

/* The argument @sa, the field of that name among @fields (named, with
 * offset and size >= 0). */
static int tp_argdef(struct probe *p, struct tep_format_field *const *fields, size_t nfields,
		     const struct probe_spec_arg *sa, const char *head, struct probe_msg *m)
{
	const char *value = sa->value;
	const struct tep_format_field *f = NULL;
	struct probe_argdef *d;
	size_t listed = 0;
	bool dynamic;
	int err;

	for (size_t i = 0; i < nfields; i++) {
		if (!strcmp(fields[i]->name, value)) {
			f = fields[i];
			break;
		}
	}
	if (!f) {
		probe_msg_add(m, "%s: no field \"%s\"; fields:", head, value);
		for (size_t i = 0; i < nfields; i++) {
			if (!strncmp(fields[i]->name, "common_", 7))
				continue;
			probe_msg_add(m, "%s%s", listed++ ? ", " : " ", fields[i]->name);
		}
		if (!listed)
			probe_msg_add(m, " none but common_*");
		return -ENOENT;
	}
	if (f->flags & TEP_FIELD_IS_RELATIVE) {
		probe_msg_add(m, "%s: field \"%s\" is __rel_loc, not supported", head, value);
		return -EOPNOTSUPP;
	}
	dynamic = f->flags & TEP_FIELD_IS_DYNAMIC;
	if (!dynamic && (f->size <= 0 || f->size > 8)) {
		/* char comm[16] and the like: not a number to count or histogram */
		probe_msg_add(m, "%s: field \"%s\" is %d bytes, not a number (at most 8 bytes)",
			      head, value, f->size);
		return -EINVAL;
	}
	err = add_argdef(p, sa, NULL);
	if (err < 0)
		return err;
	d = &p->args[p->nargs - 1];
	d->field = strdup(f->name);
	if (!d->field)
		return -ENOMEM;
	d->field_offset = f->offset;
	d->field_size = f->size;
	d->field_signed = f->flags & TEP_FIELD_IS_SIGNED;
	d->field_dynamic = dynamic;
	return 0;
}

/* "SUBSYS:EVENT" */
int probe_resolve_tp(struct probe *p, const struct probe_spec *ps, const char *tracefs,
		     struct probe_msg *m)
{
	const char *head = ps->head;
	const char *sys = ps->group, *event = ps->name;
	struct tep_format_field **fields = NULL;
	struct ev_spec ev = { 0 };
	char *text = NULL;
	struct tep_handle *tep = NULL;
	struct tep_event *tev;
	struct tep_format_field **tfields = NULL, **cfields = NULL;
	size_t nfields = 0;
	int err;

	if (!tracefs)
		tracefs = ev_tracefs();
	if (!tracefs) {
		probe_msg_add(
			m,
			"%s: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)",
			head);
		return -ENOENT;
	}
	err = ev_parse(head, tracefs, &ev);
	if (err == 0 && ev.kind != EV_TRACEPOINT) {
		probe_msg_add(m, "%s: a perf event, not a tracepoint", head);
		err = -EINVAL;
		goto out;
	}
	if (err == -ENOENT) {
		char *sugg[PROBE_SUGGEST];
		size_t ns = ev_suggest(head, tracefs, sugg, PROBE_SUGGEST), shown = 0;

		probe_msg_add(m, "%s: no such tracepoint under %s/events", head, tracefs);
		for (size_t i = 0; i < ns; i++) {
			/* only tracepoints make sense here, not "cycles" */
			if (strchr(sugg[i], ':'))
				probe_msg_add(m, "%s%s", shown++ ? ", " : "; did you mean ",
					      sugg[i]);
			free(sugg[i]);
		}
		if (shown)
			probe_msg_add(m, "?");
		goto out;
	}
	if (err == -EINVAL) {
		probe_msg_add(m, "%s: malformed tracepoint name", head);
		goto out;
	}
	if (err < 0) {
		probe_msg_add(m, "%s: cannot read its id under %s/events: %s%s", head, tracefs,
			strerror(-err), err == -EACCES || err == -EPERM ?
			" (tracefs is readable by root only: run as root or grant CAP_DAC_READ_SEARCH)" : "");
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
		probe_msg_add(m, "%s: cannot read %s/events/%s/%s/format: %s", head, tracefs, sys,
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
	    !(tev = tep_find_event_by_name(tep, sys, event)) ||
	    !(tfields = tep_event_fields(tev))) {
		probe_msg_add(m, "%s: cannot parse %s/events/%s/%s/format", head, tracefs, sys,
			      event);
		err = -EINVAL;
		goto out;
	}
	fields = calloc(PROBE_FIELDS_MAX, sizeof(*fields));
	if (!fields)
		goto out;
	/* The event's own fields, then the common ones (common_pid, ...). */
	cfields = tep_event_common_fields(tev);
	for (size_t i = 0, j = 0; nfields < PROBE_FIELDS_MAX; ) {
		struct tep_format_field *tf = tfields[i] ? tfields[i++]
					     : cfields && cfields[j] ? cfields[j++] : NULL;

		if (!tf)
			break;
		if (tf->name && tf->offset >= 0 && tf->size >= 0)
			fields[nfields++] = tf;
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
	probe_kernel_remove(p);
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
	return probe_resolve_at(spec, pids, npids, NULL, out, err, errlen);
}

int probe_resolve_at(const char *spec, const int *pids, size_t npids, const struct probe_host *host,
		     struct probe *out, char *err, size_t errlen)
{
	static const struct probe_host this_host;
	struct probe_spec ps = { 0 };
	struct probe p = { 0 };
	struct probe_msg m;
	int ret;

	if (!out) {
		probe_msg_init(&m, err, errlen);
		probe_msg_add(&m, "no probe given");
		return -EINVAL;
	}
	ret = probe_spec_parse(spec, &ps, err, errlen);
	if (ret)
		return ret;
	probe_msg_init(&m, err, errlen);
	if (!pids)
		npids = 0;
	p.spec = strdup(spec);
	ret = -ENOMEM;
	if (!p.spec)
		goto fail;
	if (ps.kind == PROBE_UPROBE) {
		ret = resolve_uprobe(&p, &ps, pids, npids, &m);
		if (ret == 0) {
			probe_msg_init(&m, err, errlen);
			for (int i = 0; i < ps.nargs && ret == 0; i++)
				ret = add_argdef(&p, &ps.args[i], &ps.args[i].a);
		}
	} else if (ps.kind == PROBE_USDT) {
		ret = resolve_usdt(&p, &ps, pids, npids, &m);
	} else if (ps.kind == PROBE_KPROBE) {
		ret = probe_kernel_resolve(&p, &ps, host ? host : &this_host, &m);
	} else {
		ret = probe_resolve_tp(&p, &ps, NULL, &m);
	}
	if (ret < 0)
		goto fail;
	probe_spec_release(&ps);
	*out = p;
	return 0;

fail:
	if (ret == -ENOMEM) {
		probe_msg_init(&m, err, errlen);
		probe_msg_add(&m, "%s: out of memory", spec);
	}
	probe_spec_release(&ps);
	probe_release(&p);
	return ret;
}
