// SPDX-License-Identifier: MIT
/*
 * Reading processes from procfs, and selectors over them.
 *
 * A process can exit, and its pid can be reused, between any two reads of
 * its /proc files. Every read of one process therefore goes through a single
 * descriptor of its /proc/PID directory: once the process is gone, reads
 * through that descriptor fail (ENOENT or ESRCH) instead of silently
 * returning the files of a newcomer that got the same pid. Those failures
 * are reported as -ENOENT, "the process has gone", which the list reader
 * skips.
 *
 * The contents of /proc/PID files are controlled in part by the process
 * itself (comm via prctl, cmdline via its own memory, exe via the file
 * name it was started from), so every read has a cap and nothing assumes
 * the text is printable or free of delimiters.
 */
#include "cgroup/proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/grow.h"
#include "lib/slurp.h"

/* comm is at most 64 bytes even for kernel threads on recent kernels. */
#define PROC_COMM_READ_MAX 256
/* "pid (comm) state ppid ..." — ppid sits within the first few hundred bytes. */
#define PROC_STAT_READ_MAX 4096
/*
 * The kernel fails the whole read of /proc/PID/cgroup with ENAMETOOLONG
 * rather than print a path of PATH_MAX or more, so the file is bounded by
 * (number of hierarchies) * PATH_MAX; this leaves plenty of room.
 */
#define PROC_CGROUP_READ_MAX (256 * 1024)
/* d_path() output is limited to PATH_MAX; allow for non-Linux-sized fakes. */
#define PROC_EXE_MAX (64 * 1024)
/* PID_MAX_LIMIT on 64-bit kernels: no host can have more processes. */
#define PROC_LIST_MAX (4 * 1024 * 1024)

/* readlinkat() into a buffer that grows until the target fits (or @cap). */
static int readlink_alloc_at(int dirfd, const char *name, size_t cap, char **ret)
{
	size_t size = 256;
	ssize_t n;
	char *buf;

	for (;;) {
		buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		n = readlinkat(dirfd, name, buf, size);
		if (n < 0) {
			free(buf);
			return -errno;
		}
		/* readlink() truncates silently: a full buffer may be a cut-off target. */
		if ((size_t)n < size) {
			buf[n] = '\0';
			*ret = buf;
			return 0;
		}
		free(buf);
		if (size >= cap)
			return -ENAMETOOLONG;
		size *= 2;
	}
}

/*
 * The comm inside stat is wrapped in parentheses but may itself contain
 * ')' and spaces (prctl(PR_SET_NAME) accepts anything), so the fields that
 * follow start after the last ')' of the line, which the numeric fields
 * can never contain.
 */
static int parse_stat_ppid(const char *buf, size_t len, pid_t *ret)
{
	const char *close_paren, *p;
	char *end;
	long v;

	close_paren = memrchr(buf, ')', len);
	if (!close_paren)
		return -EBADMSG;
	p = close_paren + 1;
	/* " S PPID": a one-letter state, then the parent's pid. */
	if (p[0] != ' ' || p[1] == '\0' || p[1] == ' ' || p[2] != ' ')
		return -EBADMSG;
	p += 3;
	if (!isdigit((unsigned char)*p))
		return -EBADMSG;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || v > INT_MAX || (*end != ' ' && *end != '\n' && *end != '\0'))
		return -EBADMSG;
	*ret = (pid_t)v;
	return 0;
}

/*
 * Value of the "0::PATH" line (the cgroup v2 hierarchy) of
 * /proc/PID/cgroup; *ret stays NULL when there is none.
 */
static int parse_cgroup_v2(const char *buf, size_t len, bool truncated, char **ret)
{
	const char *line = buf, *end = buf + len, *nl, *val;
	char *s;

	while (line < end) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl && truncated)
			break; /* a path cut by the read cap would be a wrong path */
		if (!nl)
			nl = end;
		if (nl - line >= 3 && memcmp(line, "0::", 3) == 0) {
			val = line + 3;
			s = strndup(val, (size_t)(nl - val));
			if (!s)
				return -ENOMEM;
			*ret = s;
			return 0;
		}
		line = nl + 1;
	}
	*ret = NULL;
	return 0;
}

/*
 * The files of /proc/PID a record is made of, each slurped under its cap and
 * handed to its taker, which fills its part of the record: 0, 1 when it
 * kept @buf (else the reader frees it), or -errno.
 */
static int take_ppid(char *buf, size_t len, struct cg_proc *p)
{
	return parse_stat_ppid(buf, len, &p->ppid);
}

static int take_comm(char *buf, size_t len, struct cg_proc *p)
{
	size_t n;

	if (len > 0 && buf[len - 1] == '\n')
		len--;
	n = len < sizeof(p->comm) - 1 ? len : sizeof(p->comm) - 1;
	memcpy(p->comm, buf, n);
	p->comm[n] = '\0';
	return 0;
}

static int take_cmdline(char *buf, size_t len, struct cg_proc *p)
{
	/* Programs that rewrite their title often pad it with NULs. */
	while (len > 0 && buf[len - 1] == '\0')
		len--;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\0')
			buf[i] = ' ';
	}
	buf[len] = '\0';
	p->cmdline = buf;
	return 1;
}

static int take_cgroup(char *buf, size_t len, struct cg_proc *p)
{
	return parse_cgroup_v2(buf, len, len == PROC_CGROUP_READ_MAX, &p->cgroup);
}

static const struct proc_file {
	const char *name;
	size_t cap;
	int (*take)(char *buf, size_t len, struct cg_proc *p);
	/* The kernel refuses cgroup paths of PATH_MAX or more: the cgroup is
	 * unknown (NULL), the process not gone. */
	bool unknown_if_too_long;
} proc_files[] = {
	{"stat", PROC_STAT_READ_MAX, take_ppid, false},
	{"comm", PROC_COMM_READ_MAX, take_comm, false},
	{"cmdline", CG_PROC_CMDLINE_MAX, take_cmdline, false},
	{"cgroup", PROC_CGROUP_READ_MAX, take_cgroup, true},
};

static int proc_read_files(int dfd, struct cg_proc *p)
{
	for (size_t i = 0; i < sizeof(proc_files) / sizeof(proc_files[0]); i++) {
		const struct proc_file *f = &proc_files[i];
		size_t len;
		char *buf;
		int r = slurp_at(dfd, f->name, f->cap, &buf, &len, NULL);

		if (r == -ENAMETOOLONG && f->unknown_if_too_long)
			continue;
		if (r < 0)
			return r;
		r = f->take(buf, len, p);
		if (r != 1)
			free(buf);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Read process @pid through @procfd, a descriptor of the procfs root. */
static int proc_read_at(int procfd, pid_t pid, struct cg_proc *out)
{
	struct cg_proc p = { .pid = pid };
	char name[32];
	int dfd, r;

	if (pid <= 0)
		return -EINVAL;
	snprintf(name, sizeof(name), "%d", (int)pid);
	dfd = openat(procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ESRCH ? -ENOENT : -errno;

	r = proc_read_files(dfd, &p);
	if (r < 0)
		goto err;
	/*
	 * Kernel threads and zombies have no exe, and reading another user's
	 * needs ptrace access; none of that makes the rest of the record wrong.
	 */
	r = readlink_alloc_at(dfd, "exe", PROC_EXE_MAX, &p.exe);
	if (r == -ENOMEM)
		goto err;
	if (r < 0)
		p.exe = NULL;

	close(dfd);
	*out = p;
	return 0;

err:
	cg_proc_release(&p);
	close(dfd);
	return r == -ESRCH ? -ENOENT : r;
}

int cg_proc_read(const char *procfs, pid_t pid, struct cg_proc *out)
{
	int procfd, r;

	if (!procfs || !out)
		return -EINVAL;
	procfd = open(procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return -errno;
	r = proc_read_at(procfd, pid, out);
	close(procfd);
	return r;
}

void cg_proc_release(struct cg_proc *p)
{
	if (!p)
		return;
	free(p->exe);
	free(p->cmdline);
	free(p->cgroup);
	p->exe = NULL;
	p->cmdline = NULL;
	p->cgroup = NULL;
}

struct cg_proc_list {
	struct cg_proc *procs;
	size_t count;
	size_t alloc;
};

/* A pid directory name: decimal digits only, no sign, no leading junk. */
static bool parse_pid_name(const char *s, pid_t *ret)
{
	const char *c;
	char *end;
	long v;

	if (!*s)
		return false;
	for (c = s; *c; c++) {
		if (!isdigit((unsigned char)*c))
			return false;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return false;
	*ret = (pid_t)v;
	return true;
}

static int proc_list_grow(struct cg_proc_list *l)
{
	struct cg_proc *n;
	size_t alloc;

	if (l->count < l->alloc)
		return 0;
	if (l->alloc >= PROC_LIST_MAX)
		return -E2BIG;
	alloc = l->alloc ? l->alloc * 2 : 256;
	if (alloc > PROC_LIST_MAX)
		alloc = PROC_LIST_MAX;
	n = reallocarray(l->procs, alloc, sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->procs = n;
	l->alloc = alloc;
	return 0;
}

static int proc_cmp_pid(const void *a, const void *b)
{
	const struct cg_proc *pa = a, *pb = b;

	return (pa->pid > pb->pid) - (pa->pid < pb->pid);
}

struct cg_proc_list *cg_proc_list_read(const char *procfs)
{
	struct cg_proc_list *l;
	struct dirent *de;
	DIR *dir;
	pid_t pid;
	int r;

	if (!procfs) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	dir = opendir(procfs);
	if (!dir) {
		r = -errno;
		goto err_free;
	}
	for (;;) {
		errno = 0;
		de = readdir(dir);
		if (!de) {
			if (errno) {
				r = -errno;
				goto err_close;
			}
			break;
		}
		if (!parse_pid_name(de->d_name, &pid))
			continue;
		r = proc_list_grow(l);
		if (r < 0)
			goto err_close;
		r = proc_read_at(dirfd(dir), pid, &l->procs[l->count]);
		/*
		 * Gone since readdir(), hidden from us (hidepid=), or not a
		 * process directory at all: none of these is a listing error.
		 */
		if (r == -ENOENT || r == -EACCES || r == -EPERM || r == -ENOTDIR)
			continue;
		if (r < 0)
			goto err_close;
		l->count++;
	}
	closedir(dir);
	if (l->count > 1)
		qsort(l->procs, l->count, sizeof(*l->procs), proc_cmp_pid);
	return l;

err_close:
	closedir(dir);
err_free:
	cg_proc_list_free(l);
	errno = -r;
	return NULL;
}

size_t cg_proc_list_count(const struct cg_proc_list *l)
{
	return l ? l->count : 0;
}

const struct cg_proc *cg_proc_list_get(const struct cg_proc_list *l, size_t i)
{
	if (!l || i >= l->count)
		return NULL;
	return &l->procs[i];
}

void cg_proc_list_free(struct cg_proc_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->count; i++)
		cg_proc_release(&l->procs[i]);
	free(l->procs);
	free(l);
}

enum sel_kind {
	SEL_COMM,
	SEL_EXE,
	SEL_CGROUP,
	SEL_PID,
	SEL_CMDLINE,
};

struct sel_term {
	enum sel_kind kind;
	char *glob;   /* SEL_COMM, SEL_EXE, SEL_CGROUP */
	pid_t pid;    /* SEL_PID */
	regex_t re;   /* SEL_CMDLINE */
	bool has_re;
};

struct cg_selector {
	struct sel_term *terms;
	size_t count;
};

/* How much of the user's spec to echo back in an error message. */
#define SEL_ECHO_MAX 128

static void __attribute__((format(printf, 3, 4)))
sel_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int echo_len(size_t len)
{
	return len > SEL_ECHO_MAX ? SEL_ECHO_MAX : (int)len;
}

static const struct {
	const char *name;
	enum sel_kind kind;
} sel_keys[] = {
	{ "comm", SEL_COMM },
	{ "exe", SEL_EXE },
	{ "cmdline", SEL_CMDLINE },
	{ "cgroup", SEL_CGROUP },
	{ "pid", SEL_PID },
};

static bool sel_key_lookup(const char *key, size_t len, enum sel_kind *ret)
{
	size_t i;

	for (i = 0; i < sizeof(sel_keys) / sizeof(sel_keys[0]); i++) {
		if (strlen(sel_keys[i].name) == len && memcmp(sel_keys[i].name, key, len) == 0) {
			*ret = sel_keys[i].kind;
			return true;
		}
	}
	return false;
}

static bool parse_pid_value(const char *s, size_t len, pid_t *ret)
{
	char buf[32];
	char *end;
	long v;

	/* strtol() alone would accept leading blanks, a sign, and trailing junk. */
	if (len == 0 || len >= sizeof(buf) || !isdigit((unsigned char)s[0]))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return false;
	*ret = (pid_t)v;
	return true;
}

static void sel_term_release(struct sel_term *t)
{
	free(t->glob);
	if (t->has_re)
		regfree(&t->re);
}

void cg_selector_free(struct cg_selector *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->count; i++)
		sel_term_release(&s->terms[i]);
	free(s->terms);
	free(s);
}

/*
 * Parse one term starting at @term; it ends at the next ',' (or, for
 * cmdline~, at the end of the spec). Fills @t and sets *@next past the
 * term. Returns 0, -EINVAL (message in @err) or -ENOMEM.
 */
static int sel_parse_term(const char *term, const char **next, struct sel_term *t, char *err,
			  size_t errlen)
{
	size_t term_len = strcspn(term, ",");
	size_t key_len = strcspn(term, "=~,");
	const char *val;
	size_t val_len;
	enum sel_kind kind;
	char op;
	int rc;

	memset(t, 0, sizeof(*t));
	if (key_len == term_len) {
		/* A bare word names a comm. */
		kind = SEL_COMM;
		op = '=';
		val = term;
		val_len = term_len;
	} else {
		op = term[key_len];
		if (key_len == 0) {
			sel_err(err, errlen, "missing key before '%c' in selector term '%.*s'", op,
				echo_len(term_len), term);
			return -EINVAL;
		}
		if (!sel_key_lookup(term, key_len, &kind)) {
			sel_err(err, errlen,
				"unknown selector key '%.*s' (expected comm, exe, cmdline, cgroup, pid)",
				echo_len(key_len), term);
			return -EINVAL;
		}
		val = term + key_len + 1;
		/* A regex may contain ',' itself, so it takes the rest of the spec. */
		val_len = op == '~' ? strlen(val) : term_len - key_len - 1;
	}
	*next = val + val_len;

	if (kind == SEL_CMDLINE && op != '~') {
		sel_err(err, errlen, "'cmdline' takes a regex: use cmdline~REGEX");
		return -EINVAL;
	}
	if (kind != SEL_CMDLINE && op == '~') {
		sel_err(err, errlen, "'~' (regex) only works with cmdline; use %.*s=GLOB",
			echo_len(key_len), term);
		return -EINVAL;
	}
	if (val_len == 0) {
		sel_err(err, errlen, "empty value for selector key '%.*s'", echo_len(key_len),
			term);
		return -EINVAL;
	}

	t->kind = kind;
	switch (kind) {
	case SEL_PID:
		if (!parse_pid_value(val, val_len, &t->pid)) {
			sel_err(err, errlen, "invalid pid '%.*s' (expected a positive integer)",
				echo_len(val_len), val);
			return -EINVAL;
		}
		return 0;
	case SEL_CMDLINE:
		rc = regcomp(&t->re, val, REG_EXTENDED | REG_NOSUB);
		if (rc != 0) {
			char why[128];

			regerror(rc, &t->re, why, sizeof(why));
			sel_err(err, errlen, "invalid regex '%.*s': %s", echo_len(val_len), val,
				why);
			return -EINVAL;
		}
		t->has_re = true;
		return 0;
	case SEL_COMM:
	case SEL_EXE:
	case SEL_CGROUP:
		t->glob = strndup(val, val_len);
		if (!t->glob) {
			sel_err(err, errlen, "out of memory");
			return -ENOMEM;
		}
		return 0;
	}
	return -EINVAL;
}

struct cg_selector *cg_selector_parse(const char *spec, char *err, size_t errlen)
{
	struct cg_selector *s;
	const char *p;
	size_t alloc = 0;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (!spec || !*spec) {
		sel_err(err, errlen, "empty selector");
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		sel_err(err, errlen, "out of memory");
		return NULL;
	}
	p = spec;
	for (;;) {
		if (*p == ',' || *p == '\0') {
			sel_err(err, errlen, "empty term at offset %zu of selector '%.*s'",
				(size_t)(p - spec), echo_len(strlen(spec)), spec);
			r = -EINVAL;
			goto err;
		}
		if (GROW_ARRAY(s->terms, s->count, alloc, 4) < 0) {
			sel_err(err, errlen, "out of memory");
			r = -ENOMEM;
			goto err;
		}
		r = sel_parse_term(p, &p, &s->terms[s->count], err, errlen);
		if (r < 0) {
			sel_term_release(&s->terms[s->count]);
			goto err;
		}
		s->count++;
		if (*p == '\0')
			break;
		p++; /* the ',' */
	}
	return s;

err:
	cg_selector_free(s);
	errno = -r;
	return NULL;
}

static bool sel_term_match(const struct sel_term *t, const struct cg_proc *p)
{
	switch (t->kind) {
	case SEL_COMM:
		return fnmatch(t->glob, p->comm, 0) == 0;
	case SEL_EXE:
		return p->exe && fnmatch(t->glob, p->exe, 0) == 0;
	case SEL_CGROUP:
		return p->cgroup && fnmatch(t->glob, p->cgroup, 0) == 0;
	case SEL_PID:
		return p->pid == t->pid;
	case SEL_CMDLINE:
		return p->cmdline && regexec(&t->re, p->cmdline, 0, NULL, 0) == 0;
	}
	return false;
}

bool cg_selector_match(const struct cg_selector *s, const struct cg_proc *p)
{
	size_t i;

	if (!s || !p)
		return false;
	for (i = 0; i < s->count; i++) {
		if (!sel_term_match(&s->terms[i], p))
			return false;
	}
	return true;
}
