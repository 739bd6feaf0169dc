// SPDX-License-Identifier: MIT
/*
 * cgperf-agent cgroups: the cgroup tree with container/pod/unit identity and
 * process counts; with --processes, the processes of each cgroup.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/cmd.h"
#include "agent/cmd/cmd_rt.h"
#include "lib/json.h"
#include "cgroup/identity.h"
#include "cgroup/proc.h"
#include "cgroup/tree.h"

struct cgroups_opts {
	bool processes, json, containers, labels, no_runtime;
	const char *under; /* only this subtree */
	struct cg_rtinfo *rt; /* per tree node, NULL with --no-runtime */
};

static const struct cmd_spec cgroups_spec = {
	.name = "cgroups",
	.synopsis = "[--processes] [--json] [--containers] [--labels] [--no-runtime] [SUBTREE]\n",
	.notes = "  SUBTREE           only this cgroup and its descendants\n",
	.col = 20,
	.opts = {
		{"processes", 'p', true, NULL, "list the processes of each cgroup (pid, comm, exe)"},
		{"json", 'j', true, NULL, "one JSON document on stdout"},
		{"containers", 'c', true, NULL, "only cgroups that are containers or pods"},
		{"labels", 'l', true, NULL, "print each container's labels under it"},
		{"no-runtime", 'n', true, NULL, "identity from the paths only: ask no runtime"},
	},
};

static bool in_subtree(const char *path, const char *under)
{
	size_t n;

	if (!under || !strcmp(under, "/"))
		return true;
	n = strlen(under);
	return !strncmp(path, under, n) && (path[n] == '\0' || path[n] == '/');
}

static bool show(const struct cgroups_opts *o, const struct cg_node *n)
{
	if (!o)
		return true;
	if (!in_subtree(n->path, o->under))
		return false;
	if (o->containers && !n->ident.container_id[0] && !n->ident.pod_uid[0] &&
	    !n->ident.container_name[0])
		return false;
	return true;
}

static bool show_cb(const void *ctx, const struct cg_node *n)
{
	return show(ctx, n);
}

static void json_field(FILE *f, const char *key, const char *val)
{
	if (!val || !val[0])
		return;
	fprintf(f, ",\"%s\":", key);
	json_write_string(f, val);
}

static void print_json(const struct cgroups_opts *o, const char *mount, const struct cg_tree *t,
		       const struct cg_proc_list *pl)
{
	bool first = true;

	fputs("{\"mount\":", stdout);
	json_write_string(stdout, mount);
	fputs(",\"cgroups\":[", stdout);
	for (size_t i = 0; i < cg_tree_count(t); i++) {
		const struct cg_node *n = cg_tree_get(t, i);
		const struct cg_identity *id = &n->ident;

		if (!show(o, n))
			continue;
		fputs(first ? "\n" : ",\n", stdout);
		first = false;
		fputs("{\"path\":", stdout);
		json_write_string(stdout, n->path);
		fprintf(stdout, ",\"id\":%" PRIu64 ",\"depth\":%d,\"nprocs\":%ld", n->id, n->depth,
			n->nprocs);
		json_field(stdout, "runtime", cg_runtime_name(id->runtime));
		json_field(stdout, "container_id", id->container_id);
		if (!o->rt || !o->rt[i].name)
			json_field(stdout, "container_name", id->container_name);
		json_field(stdout, "pod_uid", id->pod_uid);
		json_field(stdout, "qos", cg_qos_name(id->qos));
		json_field(stdout, "unit", id->unit);
		json_field(stdout, "slice", id->slice);
		if (o->rt)
			cmd_rt_json(stdout, &o->rt[i]);
		if (pl) {
			bool pfirst = true;

			fputs(",\"processes\":[", stdout);
			for (size_t k = 0; k < cg_proc_list_count(pl); k++) {
				const struct cg_proc *p = cg_proc_list_get(pl, k);

				if (!p->cgroup || strcmp(p->cgroup, n->path))
					continue;
				fprintf(stdout, "%s{\"pid\":%d,\"ppid\":%d,\"comm\":",
					pfirst ? "" : ",", (int)p->pid, (int)p->ppid);
				pfirst = false;
				json_write_string(stdout, p->comm);
				fputs(",\"exe\":", stdout);
				if (p->exe)
					json_write_string(stdout, p->exe);
				else
					fputs("null", stdout);
				fputs(",\"cmdline\":", stdout);
				json_write_string(stdout, p->cmdline);
				fputc('}', stdout);
			}
			fputc(']', stdout);
		}
		fputc('}', stdout);
	}
	fputs("\n]}\n", stdout);
}

/* Cgroup names are user data: print control characters visibly. */
static void print_name(const char *s, int width)
{
	int n = 0;

	for (; *s; s++, n++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f) {
			printf("\\x%02x", (unsigned char)*s);
			n += 3;
		} else {
			putchar(*s);
		}
	}
	for (; n < width; n++)
		putchar(' ');
}

static void print_text(const struct cgroups_opts *o, const char *mount, const struct cg_tree *t,
		       const struct cg_proc_list *pl)
{
	printf("# cgroup hierarchy at %s\n", mount);
	printf("%-56s %12s %6s  %-20s %-28s %s\n", "CGROUP", "ID", "PROCS", "NAME", "IMAGE",
	       "IDENTITY");
	for (size_t i = 0; i < cg_tree_count(t); i++) {
		const struct cg_node *n = cg_tree_get(t, i);
		const char *base = strrchr(n->path, '/');
		char label[600], name[1200], indent[2 * CG_TREE_MAX_DEPTH + 1];
		static const struct cg_rtinfo none;
		const struct cg_rtinfo *ri = o->rt ? &o->rt[i] : &none;
		int depth = n->depth < CG_TREE_MAX_DEPTH ? n->depth : CG_TREE_MAX_DEPTH;

		if (!show(o, n))
			continue;
		memset(indent, ' ', (size_t)depth * 2);
		indent[depth * 2] = '\0';
		base = n->depth == 0 ? "/" : base + 1;
		cg_identity_label(&n->ident, label, sizeof(label));
		if (!label[0] && n->ident.slice[0] && n->depth > 0 &&
		    strstr(base, ".slice"))
			snprintf(label, sizeof(label), "slice");
		fputs(indent, stdout);
		print_name(base, 56 - depth * 2);
		cmd_rt_name(&n->ident, ri, name, sizeof(name));
		printf(" %12" PRIu64 " %6ld  ", n->id, n->nprocs);
		print_name(name, 20);
		putchar(' ');
		print_name(ri->image ? ri->image : "-", 28);
		printf(" %s\n", label);
		for (size_t k = 0; o->labels && k < ri->nlabels; k++) {
			printf("%s    label ", indent);
			print_name(ri->labels[k].key, 0);
			putchar('=');
			print_name(ri->labels[k].value, 0);
			putchar('\n');
		}
		if (!pl)
			continue;
		for (size_t k = 0; k < cg_proc_list_count(pl); k++) {
			const struct cg_proc *p = cg_proc_list_get(pl, k);

			if (!p->cgroup || strcmp(p->cgroup, n->path))
				continue;
			printf("%s  %7d %-16s ", indent, (int)p->pid, p->comm);
			print_name(p->exe ? p->exe : (p->cmdline[0] ? p->cmdline : "[kernel]"), 0);
			putchar('\n');
		}
	}
}

int cmd_cgroups(int argc, char **argv)
{
	const char *prog = "cgperf-agent cgroups";
	struct cgroups_opts o = {0};
	struct cg_tree *t = NULL;
	struct cg_proc_list *pl = NULL;
	char *mount, *under = NULL;
	struct cmd_getopt g;
	int opt, ret = 0;

	cmd_getopt_init(&g, &cgroups_spec);
	while ((opt = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
		switch (opt) {
		case 'p': o.processes = true; break;
		case 'j': o.json = true; break;
		case 'c': o.containers = true; break;
		case 'l': o.labels = true; break;
		case 'n': o.no_runtime = true; break;
		case 'h': cmd_usage(stdout, &cgroups_spec); return 0;
		default: cmd_usage(stderr, &cgroups_spec); return 2;
		}
	}
	if (argc - optind > 1) {
		cmd_usage(stderr, &cgroups_spec);
		return 2;
	}
	mount = cmd_perf_cgroup_mount(prog);
	if (!mount)
		return 1;
	if (optind < argc) {
		uint64_t id;
		int err;

		under = cg_path_normalize(mount, argv[optind]);
		if (!under) {
			err = errno;
			fprintf(stderr, "%s: bad cgroup path '%s': %s\n", prog, argv[optind],
				err == EINVAL ? "'..' is not allowed" : strerror(err));
			ret = err == EINVAL ? 2 : 1;
			goto out;
		}
		err = cg_path_id(mount, strcmp(under, "/") ? under : "", &id);
		if (err) {
			fprintf(stderr, "%s: cgroup '%s' not found (no directory %s%s)\n", prog,
				under, mount, strcmp(under, "/") ? under : "");
			ret = 2;
			goto out;
		}
		o.under = under;
	}
	t = cg_tree_scan(mount);
	if (!t) {
		fprintf(stderr, "%s: cannot scan %s: %s\n", prog, mount, strerror(errno));
		ret = 1;
		goto out;
	}
	if (!o.no_runtime && cmd_rt_lookup_tree(t, show_cb, &o, &o.rt) < 0) {
		fprintf(stderr, "%s: out of memory\n", prog);
		ret = 1;
		goto out;
	}
	if (o.processes) {
		pl = cg_proc_list_read("/proc");
		if (!pl) {
			fprintf(stderr, "%s: cannot list processes: %s\n", prog, strerror(errno));
			ret = 1;
			goto out;
		}
	}
	if (o.json)
		print_json(&o, mount, t, pl);
	else
		print_text(&o, mount, t, pl);
out:
	cg_proc_list_free(pl);
	cmd_rt_free(o.rt, t ? cg_tree_count(t) : 0);
	cg_tree_free(t);
	free(under);
	free(mount);
	return ret;
}
