/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_RUN_H
#define CGPERF_AGENT_RUN_H

/*
 * The state of `cgperf-agent run`, shared by its three files (internal to
 * agent/cmd/): cmd_run.c (set-up, the rings' callbacks, the main loop and
 * reloads), run_batch.c (one interval into one wire batch, handed to the
 * push module) and run_metrics.c (the agent's own /metrics page). The
 * agent owns everything it points to; agent_stop() in cmd_run.c frees it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/cmd/config.h"
#include "agent/perf/events.h"
#include "agent/perf/probe.h"
#include "agent/perf/usdt.h"
#include "agent/stacks/stacks.h"
#include "cgroup/identity.h"
#include "cgroup/runtime.h"
#include "lib/hist.h"
#include "lib/version.h"
#include "wire/wire.h"

struct rcg {
	char *path;
	uint64_t id;
	int slot; /* counters slot, -1 without counters */
	bool removed;
	struct cg_identity ident;
	struct cg_rtinfo rt; /* what the runtime said, as of the last batch */
	uint64_t truncated[STACKS_TRUNC_N]; /* CPU stacks cut short, since start */
};

#define RUN_MAX_SITES 16

struct rprobe {
	struct probe p;
	struct sampler *smp[RUN_MAX_SITES]; /* one per USDT site, else one */
	struct usdt_arg site_args[RUN_MAX_SITES][USDT_MAX_ARGS];
	size_t nsmp;
	uint64_t regs_mask; /* union over the sites, the same for every sampler */
	int hist_arg;
	int lat_end;  /* probe that ends this one's latency, -1 */
	size_t nkey;  /* latency_key: paired by these args, [0] this probe's, [1] its end's */
	int key_arg[2][CONFIG_MAX_LATENCY_KEY];
	bool is_end;  /* ends some probe's latency */
	bool hidden;  /* only there as a latency end: not reported */
	bool stacks;  /* fold the stack of every hit into a->pst */
	bool waiting; /* binary not found yet: looked for again every batch */
	size_t cfg_index; /* its entry in cfg->probes */
	char stack_prefix[16]; /* "probe#INDEX", the prefix frame of those stacks */
};

struct pcell {
	uint32_t probe;
	uint64_t cgroup;
	uint64_t hits;
	struct hist h;
	struct hist lat;
};

/*
 * Members of a struct that can also be reached as one whole, @name (as the
 * kernel's struct_group): run_agent_stop() frees what they point to, then
 * zeroes the group in one go.
 */
#define RUN_GROUP(name, ...)                                                                   \
	union {                                                                                \
		struct {                                                                       \
			__VA_ARGS__                                                            \
		};                                                                             \
		struct {                                                                       \
			__VA_ARGS__                                                            \
		} name;                                                                        \
	}

struct agent {
	struct config *cfg;
	char *mount;
	int *cpus;
	int ncpu;
	uint64_t root_id; /* cgroup id of "/", for host-level stacks */
	size_t cur, cur_site;
	/* What run_agent_start() builds from the config; zero before it. */
	RUN_GROUP(built,
		struct ev_spec *evs;
		size_t nev;
		struct counters *ctr;
		struct rcg *cg;
		size_t ncg, capcg;
		struct cg_watch *watch;
		struct ev_spec sev;
		bool have_sev;
		struct sampler *smp;
		struct stacks *st;  /* CPU samples */
		struct stacks *pst; /* hits of probes with stacks: true, or NULL */
		struct rprobe pr[CONFIG_MAX_PROBES];
		size_t npr;
		struct fold *cells;
		struct pcell *pc;
		size_t npc, cappc;
		struct push *push;
		struct latency *lat; /* latency endpoints, paired in time order */
		struct fold *ids; /* cgroup id -> 1 for the cgroups the config wants */
		struct selfmetrics *metrics;
		struct fold *probe_totals; /* (probe, cgroup) -> hits since start, for /metrics */
		struct run_offcpu *off; /* sampling.off_cpu (run_offcpu.c), or NULL */
	);
	char host[256], machine_id[64], agent_id[64];
	uint64_t samples, lost;
	uint64_t probe_lost, probe_lost_last; /* probe records the kernel dropped: ring full */
	struct wire_self last; /* cumulative figures at the previous batch */
	uint64_t batches;
	struct cg_rtcache *rt; /* runtime identity lookups, or NULL */
	struct run_idsel *idsel; /* cgroups.include/exclude identity items (run_identity.c) */
};

/*
 * Build the batch of the interval [@start_ns, @end_ns) (wall clock) with
 * sequence @seq: counter deltas, folded stacks, probe hits and histograms,
 * the agent's own figures; gzip it and submit it to the push module. The
 * interval's stacks and probe cells are reset. 0 or -errno.
 */
int run_batch(struct agent *a, uint64_t seq, uint64_t start_ns, uint64_t end_ns);

/*
 * sampling.off_cpu (run_offcpu.c): start (0, 1 or 2 as run_agent_start),
 * stop (NULL-safe), the rings to poll, a drain (then pairing), and at a
 * batch the stacks engine holding the interval's off-CPU microseconds, the
 * waits still open counted up to now (NULL when off). Its figures: waits
 * and time counted, blocks seen.
 */
struct offcpu_stats;
int run_offcpu_start(struct agent *a, enum stacks_mode mode, uint32_t max_stack);
/* A cgroup followed from now on / gone (run_cg_add(), the watch): with a
 * selection narrower than the whole host, the off-CPU events follow it. */
void run_offcpu_cg_add(struct agent *a, const char *path);
void run_offcpu_cg_gone(struct agent *a, const char *path);
void run_offcpu_stop(struct agent *a);
size_t run_offcpu_fds(const struct agent *a, int *fds, size_t max);
void run_offcpu_drain(struct agent *a);
struct stacks *run_offcpu_stacks(struct agent *a);
void run_offcpu_stats(const struct agent *a, struct offcpu_stats *out, uint64_t *blocks);

/* The sampler options of stacks as sampling.call_graph says (callchain,
 * user stack and registers, depth) over the agent's CPUs, the rest zero
 * (run_setup.c). */
struct sampler_opts;
void run_stack_opts(const struct agent *a, enum stacks_mode mode, uint32_t max_stack,
		    struct sampler_opts *so);

/* Refresh the page behind the agent's /metrics (when metrics.listen is set):
 * totals since the agent (or its last reload) started. */
void run_publish_metrics(struct agent *a);

/*
 * Build everything from a->cfg (run_setup.c). 0, 1 (a runtime failure) or 2
 * (the config asks for what cannot be); what is half built, run_agent_stop()
 * frees. run_agent_stop() leaves the config, mount and identity in place.
 */
int run_agent_start(struct agent *a);
void run_agent_stop(struct agent *a);
/* The log in @cfg's format and level (lib/log.h): 0 or -EINVAL. */
int run_log_setup(const struct config *cfg);
/* Follow the cgroup at @path when the config wants it (cmd_run.c). */
void run_cg_add(struct agent *a, const char *path);
/* Runtime identity (run_identity.c): the cache's life, its copy into each
 * rcg at every batch, the wire fields (@keys/@values: room for @max
 * allow-listed labels) and the /metrics labels of a cgroup. */
int run_identity_start(struct agent *a);
void run_identity_stop(struct agent *a);
void run_identity_refresh(struct agent *a);
void run_identity_fill(const struct agent *a, const struct rcg *c, struct wire_cgroup_info *info,
		       const char **keys, const char **values, size_t max);
void run_identity_metric_labels(FILE *f, const struct agent *a, const struct rcg *c);
/*
 * Whether the config wants the cgroup at @path (paths, containers_only,
 * identity items of cgroups.include/exclude): 1 yes, 0 no. A cgroup whose
 * answer depends on a runtime that has not answered yet is 0 for now and
 * kept pending: run_identity_refresh() adds it (run_cg_add()) once known.
 */
int run_identity_wanted(struct agent *a, const char *path, const struct cg_identity *id);
/* The pids in the followed cgroups (each cgroup's own cgroup.procs), at
 * most a few thousand, for finding probe binaries; a malloc'd array, or
 * nothing when memory runs out. Cgroups pending on their runtime's answer
 * are first given up to 2 timeouts + 1 s (at most 5 s) to be decided. */
void run_identity_pids(struct agent *a, int **pids, size_t *n);
/* Whether cgroups.include selects by identity (container=, image=...). */
bool run_identity_selective(const struct agent *a);
/* Probes whose binary was not found at the start (cgroups chosen by
 * identity, their processes not there yet): looked for again among the
 * followed processes, and placed once found (run_setup.c). */
void run_probes_retry(struct agent *a);
/* @path went away: not pending any more. */
void run_identity_gone(struct agent *a, const char *path);

/* The first line of @path into @buf ("" when unreadable). */
void run_read_line(const char *path, char *buf, size_t len);

/* Free what @c owns (its path, what its runtime said). */
void run_cg_release(struct rcg *c);
/* The agent's cgroup at @path (relative to the mount), or NULL. */
struct rcg *run_cg_find(struct agent *a, const char *path);
/* The agent's cgroup with id @id, or NULL. */
struct rcg *run_cg_by_id(struct agent *a, uint64_t id);

#endif
