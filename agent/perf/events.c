// SPDX-License-Identifier: MIT
#include "agent/perf/events.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tracefs.h>

#include "lib/suggest.h"


struct builtin {
	const char *name;
	const char *canonical; /* NULL when @name is canonical */
	uint32_t type;
	uint64_t config;
};

static const struct builtin builtins[] = {
	{"task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
	{"cpu-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
	{"context-switches", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
	{"cs", "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
	{"cpu-migrations", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
	{"migrations", "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
	{"page-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
	{"faults", "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
	{"minor-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
	{"major-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
	{"alignment-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
	{"emulation-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
	{"cgroup-switches", NULL, PERF_TYPE_SOFTWARE, 11 /* PERF_COUNT_SW_CGROUP_SWITCHES */},
	{"cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
	{"cpu-cycles", "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
	{"instructions", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
	{"cache-references", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
	{"cache-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
	{"branches", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
	{"branch-instructions", "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
	{"branch-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
	{"bus-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
	{"stalled-cycles-frontend", NULL, PERF_TYPE_HARDWARE,
	 PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
	{"stalled-cycles-backend", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
	{"ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
};

#define NBUILTIN (sizeof(builtins) / sizeof(builtins[0]))

size_t ev_builtin_count(void)
{
	return NBUILTIN;
}

const char *ev_builtin_name(size_t i, const char **kind)
{
	if (i >= NBUILTIN)
		return NULL;
	if (kind)
		*kind = builtins[i].type == PERF_TYPE_SOFTWARE ? "Software event" : "Hardware event";
	return builtins[i].name;
}

/*
 * Finding tracefs is libtracefs's job: it knows the places (a tracefs mount,
 * debugfs's tracing/ directory) and, on a host where nothing mounted it yet
 * (no systemd, a fresh container host, a minimal VM), mounts tracefs at
 * /sys/kernel/tracing as systemd's sys-kernel-tracing.mount would. Such a
 * mount needs CAP_SYS_ADMIN in the mount namespace; without it the caller
 * reports tracefs as not mounted. The module does not print: the mount is
 * told to the hook the command installed.
 */
static void (*mount_hook)(const char *path);

void ev_tracefs_on_mount(void (*fn)(const char *path))
{
	mount_hook = fn;
}

const char *ev_tracefs(void)
{
	static char *cached;
	static bool done;
	const char *path = NULL;

	if (done)
		return cached;
	done = true;
	/* The path is libtracefs's allocation, handed over: kept for good. */
	if (tracefs_tracing_dir_is_mounted(false, &path) == 1 && path) {
		cached = (char *)path;
		return cached;
	}
	/* 0: not mounted before, mounted now at @path; -1: could not mount. */
	path = NULL;
	if (tracefs_tracing_dir_is_mounted(true, &path) != 0 || !path)
		return NULL;
	cached = (char *)path;
	if (mount_hook)
		mount_hook(cached);
	return cached;
}

static int parse_modifiers(const char *mod, struct ev_spec *out)
{
	bool u = false, k = false;

	for (const char *p = mod; *p; p++) {
		switch (*p) {
		case 'u': u = true; break;
		case 'k': k = true; break;
		case 'h': break; /* hypervisor: nothing to exclude on its own */
		default: return -EINVAL;
		}
	}
	if (u && !k)
		out->exclude_kernel = true;
	if (k && !u)
		out->exclude_user = true;
	return 0;
}

/* An event file (id, format) of tracefs at @tracefs, as libtracefs reads
 * it: a malloc'd NUL-terminated buffer and its length, or -errno. */
int ev_tracefs_read(const char *tracefs, const char *sys, const char *event, const char *file,
		    char **out, size_t *len)
{
	struct tracefs_instance *top;
	char *text;
	int size = 0, err;

	if (!tracefs)
		return -ENOENT;
	if (strchr(sys, '/') || strchr(event, '/') || !strcmp(sys, "..") || !strcmp(event, "..") ||
	    !strcmp(sys, ".") || !strcmp(event, "."))
		return -EINVAL;
	/* The top instance of that tracefs; NULL would mean the host's own. */
	top = tracefs_instance_alloc(tracefs, NULL);
	if (!top)
		return errno ? -errno : -ENOENT;
	errno = 0;
	text = tracefs_event_file_read(top, sys, event, file, &size);
	err = errno;
	tracefs_instance_free(top);
	if (!text)
		return err ? -err : -EIO;
	if (size < 0) {
		free(text);
		return -EIO;
	}
	*out = text;
	if (len)
		*len = (size_t)size;
	return 0;
}

static int read_tracepoint_id(const char *tracefs, const char *sys, const char *name,
			      uint64_t *id)
{
	char *text, *end;
	unsigned long long v;
	int err = ev_tracefs_read(tracefs, sys, name, "id", &text, NULL);

	if (err)
		return err;
	errno = 0;
	v = strtoull(text, &end, 10);
	err = errno || end == text || (*end && *end != '\n') ? -EIO : 0;
	free(text);
	if (!err)
		*id = v;
	return err;
}

/* Finish @ev as @kind/@type named @name (as written) into *@out. */
static int ev_named(struct ev_spec *ev, enum ev_kind kind, uint32_t type, const char *name,
		    struct ev_spec *out)
{
	ev->kind = kind;
	ev->type = type;
	ev->name = strdup(name);
	if (!ev->name)
		return -ENOMEM;
	*out = *ev;
	return 0;
}

int ev_parse(const char *name, const char *tracefs, struct ev_spec *out)
{
	struct ev_spec ev = {0};
	const char *colon;
	size_t base_len;
	int err;

	if (!name || !*name)
		return -EINVAL;
	colon = strrchr(name, ':');
	base_len = colon ? (size_t)(colon - name) : strlen(name);

	for (size_t i = 0; i < NBUILTIN; i++) {
		const struct builtin *b = &builtins[i];

		if (strlen(b->name) != base_len || strncmp(b->name, name, base_len))
			continue;
		if (colon && parse_modifiers(colon + 1, &ev) < 0)
			return -EINVAL;
		/* Canonical name, keeping the modifier: "cs:u" -> "context-switches:u". */
		const char *canon = b->canonical ? b->canonical : b->name;
		size_t clen = strlen(canon), mlen = colon ? strlen(colon) : 0;

		ev.name = malloc(clen + mlen + 1);
		if (!ev.name)
			return -ENOMEM;
		memcpy(ev.name, canon, clen);
		memcpy(ev.name + clen, colon ? colon : "", mlen + 1);
		ev.kind = b->type == PERF_TYPE_SOFTWARE ? EV_SOFTWARE : EV_HARDWARE;
		ev.type = b->type;
		ev.config = b->config;
		ev.is_clock = b->type == PERF_TYPE_SOFTWARE && (b->config == PERF_COUNT_SW_TASK_CLOCK ||
								b->config == PERF_COUNT_SW_CPU_CLOCK);
		*out = ev;
		return 0;
	}

	/* rNNNN: raw PMU event in hex, as perf takes it. */
	if (name[0] == 'r' && base_len > 1 &&
	    strspn(name + 1, "0123456789abcdefABCDEF") == base_len - 1) {
		char *end;

		errno = 0;
		ev.config = strtoull(name + 1, &end, 16);
		if (errno)
			return -EINVAL;
		if (colon && parse_modifiers(colon + 1, &ev) < 0)
			return -EINVAL;
		return ev_named(&ev, EV_RAW, PERF_TYPE_RAW, name, out);
	}

	/* SUBSYS:EVENT tracepoint (the first colon separates them). */
	colon = strchr(name, ':');
	if (colon && colon != name && colon[1] && !strchr(colon + 1, ':')) {
		char sys[256];
		size_t slen = (size_t)(colon - name);

		if (slen >= sizeof(sys))
			return -ENOENT;
		memcpy(sys, name, slen);
		sys[slen] = '\0';
		err = read_tracepoint_id(tracefs, sys, colon + 1, &ev.config);
		/* -EINVAL: a name that would walk out of events/ is malformed. */
		if (err)
			return err == -EACCES || err == -EPERM || err == -EINVAL ? err : -ENOENT;
		return ev_named(&ev, EV_TRACEPOINT, PERF_TYPE_TRACEPOINT, name, out);
	}
	return -ENOENT;
}

void ev_spec_release(struct ev_spec *ev)
{
	if (!ev)
		return;
	free(ev->name);
	ev->name = NULL;
}

/* Distance, with substring hits ranked as close. */
static size_t closeness(const char *want, const char *have)
{
	size_t d = suggest_distance(want, have);
	size_t lw = strlen(want);

	if (lw >= 3 && strstr(have, want))
		return d < 2 ? d : 2;
	return d;
}

static void consider(struct suggest *r, const char *want, const char *have)
{
	size_t d = closeness(want, have);
	size_t limit = strlen(want) / 3 + 1;

	if (limit < 2)
		limit = 2;
	if (d <= limit)
		suggest_add(r, have, d);
}

static void scan_tracepoints(struct suggest *r, const char *want, const char *tracefs)
{
	const char *colon = strchr(want, ':');
	size_t wsys = colon ? (size_t)(colon - want) : 0;
	char **systems = tracefs_event_systems(tracefs);

	for (size_t i = 0; systems && systems[i]; i++) {
		const char *sys = systems[i];
		char **events;

		/* With a subsystem given, only look at subsystems close to it. */
		if (colon) {
			char want_sys[256];

			if (wsys >= sizeof(want_sys))
				continue;
			memcpy(want_sys, want, wsys);
			want_sys[wsys] = '\0';
			if (suggest_distance(want_sys, sys) > 2)
				continue;
		}
		events = tracefs_system_events(tracefs, sys);
		for (size_t j = 0; events && events[j]; j++) {
			char full[600];

			if ((size_t)snprintf(full, sizeof(full), "%s:%s", sys, events[j]) >=
			    sizeof(full))
				continue;
			if (colon) {
				consider(r, want, full);
			} else {
				/* "sched_switch" alone: suggest "sched:sched_switch". */
				size_t d = closeness(want, events[j]);

				if (d <= 2)
					suggest_add(r, full, d + 1);
			}
		}
		tracefs_list_free(events);
	}
	tracefs_list_free(systems);
}

size_t ev_suggest(const char *name, const char *tracefs, char **out, size_t max)
{
	struct suggest r;

	if (!max || !name)
		return 0;
	suggest_init(&r, max);
	for (size_t i = 0; i < NBUILTIN; i++)
		consider(&r, name, builtins[i].name);
	if (tracefs)
		scan_tracepoints(&r, name, tracefs);
	return suggest_take(&r, out);
}
