/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_CONFIG_H
#define CGPERF_AGENT_CONFIG_H

/*
 * The configuration of the continuous agent (`cgperf-agent run`): a YAML
 * file, read with libyaml and checked completely before anything runs.
 * Every key has an embedded default, so no file at all is a valid
 * configuration. docs/config.md is the reference for users; this header
 * is the contract for code.
 *
 * Checks are lexical and local: names, types, ranges, URL and duration
 * syntax, built-in event names, probe spec shapes and histogram argument
 * names. What needs the host (a binary, an SDT note, a tracepoint id) is
 * resolved by the agent when it starts; config_probe.line/col point back
 * into the file for those messages. Nothing here prints.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/symbols/demangle.h"

#define CONFIG_MAX_FILE (1 << 20)  /* bytes of YAML read at most */
#define CONFIG_MAX_STRING 4096     /* bytes in one string value, NUL excluded */
#define CONFIG_MAX_LIST 256        /* items in cgroups.include / exclude */
#define CONFIG_MAX_EVENTS 32       /* counters.events */
#define CONFIG_MAX_PROBES 32       /* probes */
#define CONFIG_MAX_COLLECTORS 16   /* push.collectors */
#define CONFIG_MAX_LABELS 64       /* identity.labels */
#define CONFIG_MAX_LATENCY_KEY 3   /* probes[].latency_key (LATENCY_KEY_MAX) */

enum config_call_graph { CONFIG_CALL_GRAPH_FP, CONFIG_CALL_GRAPH_DWARF };
enum config_log_format { CONFIG_LOG_LOGFMT, CONFIG_LOG_JSON };
/* push.mode: every collector gets every batch, or the list is one service. */
enum config_push_mode { CONFIG_PUSH_FANOUT, CONFIG_PUSH_FAILOVER };
enum config_log_level { CONFIG_LOG_DEBUG, CONFIG_LOG_INFO, CONFIG_LOG_WARN, CONFIG_LOG_ERROR };

struct config_probe {
	char *spec;        /* probe spec as probe_resolve() takes it */
	char *hist;        /* argument of @spec to histogram, or NULL */
	char *latency_end; /* probe spec ending the latency started by @spec, or NULL */
	char **latency_key; /* tracepoint arguments of both @spec and @latency_end that
			     * pair them (instead of the thread); nlatency_key 0: none */
	size_t nlatency_key;
	bool stacks;       /* fold the stacks at every hit, unwound as sampling.call_graph
			    * says (sampling.enabled not needed), into a profile per
			    * cgroup whose event is the probe's label */
	int line, col;     /* 1-based position of @spec in the file; 0 for none */
};

/*
 * The whole configuration. Strings and arrays are malloc'd and owned by the
 * struct; an array of n items has n valid pointers. Optional values
 * ("null" in the file) are NULL. Durations are in milliseconds, sizes in
 * bytes.
 */
struct config {
	char *path; /* the file it came from; NULL for the defaults */

	struct {
		char *name;          /* "" = the host's gethostname() */
		char *agent_id_file; /* holds the agent id across restarts */
	} host;

	struct {
		char **include; /* globs over cgroup paths, see config_cgroup_wanted() */
		size_t ninclude;
		char **exclude;
		size_t nexclude;
		bool containers_only;
	} cgroups;

	struct {
		bool enabled;
		char **events; /* perf event names, as ev_parse() takes them */
		size_t nevents;
	} counters;

	struct {
		bool enabled;
		unsigned int frequency;   /* Hz, 1..10000 */
		enum config_call_graph call_graph;
		unsigned int stack_bytes; /* user stack copied for dwarf, 8..65528, multiple of 8 */
		char *event;              /* the sampling event */
		bool per_cgroup;          /* one folded-stack set per cgroup; false: one for
					   * the host, pushed as the root cgroup "/"'s */
		bool off_cpu;             /* off-CPU time by blocking stack ("off-cpu" profiles) */
		unsigned int off_cpu_min_us; /* waits shorter than this are not counted */
		unsigned int off_cpu_every;  /* stack 1 block in N, weighted N (1..1000) */
		unsigned int off_cpu_stack_bytes; /* user stack per block (dwarf); 0: stack_bytes */
	} sampling;

	struct {
		enum demangle_style demangle; /* how frames are named in every stack */
	} symbols;

	struct config_probe *probes;
	size_t nprobes;

	struct {
		uint64_t interval_ms;
		char **collectors; /* http:// or https:// URLs; none = nothing pushed */
		size_t ncollectors;
		enum config_push_mode mode;
		char *token_file;  /* bearer token, or NULL */
		uint64_t timeout_ms;
		uint64_t idle_close_ms; /* a kept-alive connection idle this long is closed */
		struct {
			char *ca_file, *cert_file, *key_file; /* or NULL */
			bool verify;
		} tls;
		struct {
			char *dir;
			uint64_t max_bytes;
		} spool;
		struct {
			uint64_t initial_ms, max_ms;
		} retry;
	} push;

	struct {
		enum config_log_format format;
		enum config_log_level level;
	} log;

	struct {
		char *listen; /* "HOST:PORT" for the agent's own /metrics, or NULL */
	} metrics;

	struct {
		bool runtimes;       /* ask docker/podman/containerd/CRI-O/systemd */
		char *root;          /* the host's root as the agent sees it; NULL: "/" */
		char *docker_socket; /* NULL: the default; "": not asked */
		char *podman_socket;
		uint64_t timeout_ms; /* per engine request */
		uint64_t refresh_ms; /* a known answer is asked again after this */
		char **labels;       /* allow-list of container label keys (globs) */
		char *kubelet_url;   /* "https://NODE:10250" for pod labels, or NULL */
		char *kubelet_token_file, *kubelet_ca_file;
		size_t nlabels;
	} identity;
};

/* The embedded defaults, or NULL when out of memory. Free with config_free(). */
struct config *config_defaults(void);

/*
 * Read and check the YAML file @path over the defaults; @path NULL gives
 * the defaults. On success, 0 and *@out (free with config_free()). On
 * failure *@out is untouched and @err (cut to @errlen; may be NULL) holds
 * one user-facing line, "FILE:LINE:COL: what is wrong" when the place is
 * known:
 *   -EINVAL  not YAML, or not a valid configuration
 *   -EFBIG   the file is over CONFIG_MAX_FILE bytes
 *   -ENOMEM, or the -errno of opening or reading the file
 */
int config_load(const char *path, struct config **out, char *err, size_t errlen);

/* config_load() on @len bytes of YAML in @buf; @name stands for the file in
 * messages and config->path. */
int config_parse(const char *name, const char *buf, size_t len, struct config **out, char *err,
		 size_t errlen);

/* NULL is fine. */
void config_free(struct config *cfg);

/*
 * Write @cfg as YAML that config_load() reads back to the same values,
 * every key included (the effective configuration). 0 or -EIO.
 */
int config_dump(const struct config *cfg, FILE *f);

/* The spellings of the enums above, indexed by value, NULL-ended (for
 * config_dump(), config_dump.c). */
extern const char *const config_call_graph_names[];
extern const char *const config_log_format_names[];
extern const char *const config_push_mode_names[];
extern const char *const config_log_level_names[];

/*
 * Whether the agent profiles the cgroup at @path ("/" is the root,
 * "/system.slice/x.service" below it; as `cgperf-agent stat` prints it):
 * it matches a cgroups.include glob, no cgroups.exclude glob, and, with
 * containers_only, cg_identity_parse() finds a container runtime in it.
 */
bool config_cgroup_wanted(const struct config *cfg, const char *path);

/* Why @glob is not a cgroups.include/exclude glob ("must start with '/'
 * ..."), or NULL when it is one. */
const char *config_glob_check(const char *glob);

/*
 * Glob match of a cgroup @path against @glob, component by component:
 * '*', '?' and [...] within one component (fnmatch(3)), '**' as a whole
 * component for zero or more components. Exposed for tests.
 */
bool config_glob_match(const char *glob, const char *path);

/* Why @v is not a list of identity terms for cgroups.include/exclude
 * ("container=GLOB,namespace=GLOB": container, image, pod, namespace,
 * unit), or NULL when it is one (config_identity.c). */
const char *config_identity_check(const char *v);

/* Whether container label @key is in identity.labels (config_identity.c). */
bool config_label_wanted(const struct config *cfg, const char *key);

/* Durations and sizes: lib/units.h (units_duration_ms(), units_size()). */

#endif
