// SPDX-License-Identifier: MIT
/*
 * What `trace` prints: the (probe, cgroup[, pid]) cells as a table or JSON
 * Lines, with their histograms; the stacks at the hits; the closing
 * summary on stderr; and --list, the probes a binary offers.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/cmd.h"
#include "agent/perf/cpumap.h"
#include "agent/symbols/demangle.h"
#include "agent/stacks/fold.h"
#include "lib/hist.h"
#include "lib/json.h"
#include "agent/perf/latency.h"
#include "agent/perf/probe.h"
#include "agent/perf/sampler.h"
#include "agent/cmd/workload.h"
#include "lib/clock.h"
#include "agent/symbols/refusals.h"
#include "agent/stacks/stacks.h"
#include "agent/symbols/symtab.h"
#include "agent/perf/usdt.h"
#include "cgroup/identity.h"
#include "cgroup/proc.h"
#include "cgroup/tree.h"

#include "agent/cmd/cmd_rt.h"
#include "agent/cmd/trace.h"

/* ---- output ------------------------------------------------------------- */

struct cglabels {
	struct cg_tree *tree;
	struct cg_rtinfo *rt; /* per tree node: the runtime's names (after tracing) */
};

static bool is_container(const void *ctx, const struct cg_node *n)
{
	return n->ident.container_id[0] || n->ident.pod_uid[0];
}

static const char *cg_name(const struct trace *t, const struct cglabels *cl, uint64_t id,
			   char *buf, size_t len)
{
	if (!t->per_cgroup)
		return "(all)";
	for (size_t i = 0; cl->tree && i < cg_tree_count(cl->tree); i++) {
		const struct cg_node *n = cg_tree_get(cl->tree, i);
		char label[600];

		if (n->id != id)
			continue;
		cg_identity_label(&n->ident, label, sizeof(label));
		if (label[0] && (n->ident.container_id[0] || n->ident.pod_uid[0])) {
			size_t l = strlen(label);

			/* the runtime's name after the label, when it fits */
			if (cl->rt && l + 1 < sizeof(label) &&
			    cg_rtinfo_display(&cl->rt[i], label + l + 1, sizeof(label) - l - 1) > 0)
				label[l] = ' ';
			snprintf(buf, len, "%s [%s]", n->path, label);
		}
		else
			snprintf(buf, len, "%s", n->path);
		return buf;
	}
	snprintf(buf, len, "[cgroup id %" PRIu64 ", removed]", id);
	return buf;
}

static int cmp_cell(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;

	if (x->probe != y->probe)
		return x->probe < y->probe ? -1 : 1;
	if (x->hits != y->hits)
		return x->hits > y->hits ? -1 : 1;
	if (x->cgroup != y->cgroup)
		return x->cgroup < y->cgroup ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static const char *cg_path_of(const struct cglabels *cl, uint64_t id)
{
	for (size_t i = 0; cl->tree && i < cg_tree_count(cl->tree); i++)
		if (cg_tree_get(cl->tree, i)->id == id)
			return cg_tree_get(cl->tree, i)->path;
	return NULL;
}

static void print_json(struct trace *t, const struct cglabels *cl, double secs)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct cell *c = &t->v[i];
		const struct tprobe *tp = &t->pr[c->probe];
		const char *path = t->per_cgroup ? cg_path_of(cl, c->cgroup) : NULL;

		fputs("{\"probe\":", stdout);
		json_write_string(stdout, tp->p.label);
		if (t->per_cgroup) {
			fputs(",\"cgroup\":", stdout);
			if (path)
				json_write_string(stdout, path);
			else
				fputs("null", stdout);
			printf(",\"cgroup_id\":%" PRIu64, c->cgroup);
		}
		if (t->per_pid)
			printf(",\"pid\":%" PRIu32, c->pid);
		printf(",\"hits\":%" PRIu64 ",\"rate\":%.3f", c->hits, secs > 0 ? c->hits / secs : 0);
		if (tp->hist_arg >= 0) {
			fputs(",\"hist\":{\"arg\":", stdout);
			json_write_string(stdout, tp->p.args[tp->hist_arg].name);
			fputs(",\"values\":", stdout);
			hist_json(&c->h, stdout);
			fputc('}', stdout);
		}
		if ((int)c->probe == t->lat_start) {
			fputs(",\"latency_ns\":", stdout);
			hist_json(&c->lat, stdout);
			fputs(",\"latency_end\":", stdout);
			json_write_string(stdout, t->pr[t->lat_end].p.label);
		}
		fputs("}\n", stdout);
	}
}

static void print_text(struct trace *t, const struct cglabels *cl, double secs)
{
	size_t prev = SIZE_MAX;

	printf("\nProbe hits over %.2f s%s:\n", secs, t->per_cgroup ? ", per cgroup" : "");
	for (size_t i = 0; i < t->n; i++) {
		const struct cell *c = &t->v[i];
		const struct tprobe *tp = &t->pr[c->probe];
		char name[1024];

		if (c->probe != prev) {
			printf("\n  %s\n", tp->p.label);
			prev = c->probe;
		}
		printf("    %-60s %12" PRIu64 " hits %12.1f/s", cg_name(t, cl, c->cgroup, name, sizeof(name)),
		       c->hits, secs > 0 ? c->hits / secs : 0);
		if (t->per_pid)
			printf("  pid %" PRIu32, c->pid);
		putchar('\n');
		if (tp->hist_arg >= 0 && c->h.count) {
			printf("      %s: count %" PRIu64 ", mean %.1f, max %" PRIu64 "\n",
			       tp->p.args[tp->hist_arg].name, c->h.count, hist_mean(&c->h), c->h.max);
			hist_print(&c->h, stdout, "      ", tp->p.args[tp->hist_arg].name);
		}
		if ((int)c->probe == t->lat_start && c->lat.count) {
			printf("      latency to %s: %" PRIu64 " pairs, mean %.1f us, max %.1f us\n",
			       t->pr[t->lat_end].p.label, c->lat.count, hist_mean(&c->lat) / 1e3,
			       (double)c->lat.max / 1e3);
			hist_print(&c->lat, stdout, "      ", "ns");
		}
	}
	if (!t->n)
		printf("\n  (no hits)\n");
	putchar('\n');
}

/* ---- --list ------------------------------------------------------------- */

int trace_list_binary(const char *prog, const char *bin)
{
	char err[1024];
	struct symtab *st;
	struct usdt_list *ul;
	int rc;

	const char *path;
	char *resolved = NULL;

	rc = probe_find_binary(bin, NULL, 0, &resolved, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 2;
	}
	path = resolved;
	st = symtab_open(path, "");
	if (!st) {
		fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
		free(resolved);
		return 2;
	}
	printf("# %s: %zu functions (%s), build-id %s\n", path, symtab_count(st), symtab_source(st),
	       symtab_build_id(st)[0] ? symtab_build_id(st) : "none");
	for (size_t i = 0; i < symtab_count(st); i++) {
		uint64_t off;
		const char *name = symtab_name_at(st, i, &off);
		char *dm;

		if (!name)
			continue;
		/* The spec takes the name as stored, so each u: line stays one;
		 * a comment line above says what a C++ name is. */
		dm = demangle_name(name, DEMANGLE_FULL);
		if (dm)
			printf("# %s\n", dm);
		printf("u:%s:%s\n", path, name);
		free(dm);
	}
	symtab_free(st);
	ul = usdt_read(path);
	if (!ul || !usdt_count(ul)) {
		printf("# %s has no SDT notes\n", path);
	} else {
		printf("# %zu SDT probe sites\n", usdt_count(ul));
		for (size_t i = 0; i < usdt_count(ul); i++) {
			const struct usdt_probe *u = usdt_get(ul, i);

			printf("sdt:%s:%s@%s  args: %s%s\n", u->provider, u->name, path,
			       u->arg_spec && u->arg_spec[0] ? u->arg_spec : "(none)",
			       u->sema_off ? "  [semaphore]" : "");
		}
	}
	usdt_free(ul);
	free(resolved);
	return 0;
}

/* The stacks at the hits: folded text, or one JSON object per stack. */
static void print_stacks(struct trace *t, bool json)
{
	char *buf = NULL;
	size_t blen = 0;
	FILE *mf;

	if (!json) {
		printf("Stacks at the probe hits (folded, probe first):\n");
		stacks_write(t->stacks, stdout, NULL);
		return;
	}
	/* JSON Lines stay JSON: one object per folded stack. */
	mf = open_memstream(&buf, &blen);
	if (!mf)
		return;
	stacks_write(t->stacks, mf, NULL);
	fclose(mf);
	for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		char *space;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		space = strrchr(line, ' ');
		if (!space)
			continue;
		*space = '\0';
		fputs("{\"stack\":", stdout);
		json_write_string(stdout, line);
		printf(",\"count\":%s}\n", space + 1);
	}
	free(buf);
}

/* The closing line on stderr: hits, losses, and what was cut. */
void trace_report_summary(struct trace *t, bool verbose, double secs, uint64_t lost)
{
	char refused[256];

	if (t->cells_refused)
		fprintf(stderr, "%s: %" PRIu64 " hits not tabulated: more than %d (probe, cgroup, pid)"
				" cells\n", t->prog, t->cells_refused, MAX_CELLS);
	if (t->stacks) {
		struct stacks_stats ss;

		stacks_stats(t->stacks, &ss);
		if (ss.refused || ss.unwind_errors)
			fprintf(stderr, "%s: stacks: %" PRIu64 " dropped (distinct-stack cap), %" PRIu64
					" unwind errors\n", t->prog, ss.refused, ss.unwind_errors);
	}
	fprintf(stderr, "%s: %" PRIu64 " hits in %.2f s, %" PRIu64 " lost%s", t->prog, t->samples,
		secs, lost, lost ? " (the rings overflowed: hit counts are short by that many;"
				   " narrow the probe or the cgroups)" : "");
	if (t->lat_start >= 0 && !t->nkey)
		fprintf(stderr, ", %" PRIu64 " ends without a start", t->unpaired_end);
	if (t->lat_start >= 0 && t->nkey) {
		struct latency_stats ls;

		latency_stats(t->lat, &ls);
		fprintf(stderr, ", latency by key: %" PRIu64 " pairs, %" PRIu64 " ends without a start, %"
			PRIu64 " starts pending at the end, %" PRIu64 " timed out, %" PRIu64
			" dropped (table full), %" PRIu64 " replaced", ls.paired, ls.unpaired_end,
			ls.pending, ls.timed_out, ls.dropped, ls.replaced);
		if (ls.late)
			fprintf(stderr, ", %" PRIu64 " hits late (paired out of order)", ls.late);
	}
	if (t->value_errors)
		fprintf(stderr, ", %" PRIu64 " argument values unreadable", t->value_errors);
	if (t->throttled)
		fprintf(stderr, ", throttled %" PRIu64 " times by the kernel (perf_event_max_sample_rate:"
			" hits were not recorded)", t->throttled);
	cmd_refusals_text(refused, sizeof(refused));
	if (refused[0] != '0')
		fprintf(stderr, ", container files refused: %s%s", refused,
			verbose ? "" : " (-v names them)");
	fputc('\n', stderr);
	cmd_refusals_hint(t->prog);
	fflush(stdout);
}

/* Sort the cells, name the cgroups, and print the tables and stacks. */
void trace_print_results(struct trace *t, bool json, double secs)
{
	struct cglabels cl = {0};

	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), cmp_cell);
	/* The cell index lives in the table: rebuild it after sorting. */
	fold_free(t->cells);
	t->cells = NULL;
	if (t->mount)
		cl.tree = cg_tree_scan(t->mount);
	if (cl.tree && cmd_rt_lookup_tree(cl.tree, is_container, NULL, &cl.rt) < 0)
		cl.rt = NULL;
	if (json)
		print_json(t, &cl, secs);
	else
		print_text(t, &cl, secs);
	if (t->stacks)
		print_stacks(t, json);
	cmd_rt_free(cl.rt, cl.tree ? cg_tree_count(cl.tree) : 0);
	cg_tree_free(cl.tree);
}

