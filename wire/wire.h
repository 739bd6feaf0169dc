/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_WIRE_H
#define CGPERF_AGENT_WIRE_H

/*
 * The agent -> collector wire (proto/cgperf.proto): building a batch on the
 * agent side without protobuf-c types, and decoding + validating one on the
 * collector side.
 *
 * Building: wire_batch_new(), then wire_add_*() in any order, then
 * wire_encode() or wire_encode_gzip() (as often as wanted), then
 * wire_batch_free(). Strings are copied and interned; the builder never
 * produces a batch wire_decode() would refuse: text that is not valid UTF-8
 * has its bad bytes replaced by U+FFFD, strings longer than the limits are
 * cut on a character boundary, integers above WIRE_VALUE_MAX saturate.
 *
 * Decoding: wire_decode() takes an untrusted push body, gzip or not, and
 * returns a batch in which every string id, cgroup index and count has been
 * checked, or NULL and a reason. Nothing here prints.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/hist.h"
#include "proto/cgperf.pb-c.h"

/* Bumped only for changes old readers would misread (see the .proto). */
#define WIRE_SCHEMA_VERSION 1
/* Longest string-table entry, in bytes (demangled C++ names get long). */
#define WIRE_STRING_MAX 8192
/* Longest host name, machine id, agent id or agent version, in bytes. */
#define WIRE_HEADER_MAX 255
/* Labels of one cgroup. */
#define WIRE_LABELS_MAX 64
/* Deepest stack, in frames. */
#define WIRE_STACK_MAX 1024
/* Largest integer on the wire, so signed 64-bit stores never wrap. */
#define WIRE_VALUE_MAX ((uint64_t)INT64_MAX)
/* Body cap wire_decode() uses when given 0. */
#define WIRE_BODY_MAX_DEFAULT (32u << 20)
/* The frame put in place of the root-most frames of a too-deep stack. */
#define WIRE_TRUNCATED_FRAME "[truncated]"
/* Longest module build-id, in hex digits (32 bytes; GNU ld's sha1 gives 40). */
#define WIRE_BUILD_ID_MAX 64
/* Most modules (binaries) in one batch. */
#define WIRE_MODULES_MAX 65536

struct wire_batch;

/*
 * A new, empty batch. @machine_id and @version may be NULL (""); @host and
 * @agent_id must be given, @agent_id non-empty. @start_ns <= @end_ns, both
 * Unix nanoseconds. NULL + errno (EINVAL, ENOMEM).
 */
struct wire_batch *wire_batch_new(const char *host, const char *machine_id,
				  const char *agent_id, const char *version, uint64_t seq,
				  uint64_t start_ns, uint64_t end_ns);
void wire_batch_free(struct wire_batch *b);

/* The string id of @s (copied on first use; NULL and "" are 0), or -errno. */
int wire_intern(struct wire_batch *b, const char *s);

/* What is known of the workload in a cgroup; NULL or "" fields are unknown.
 * cgroup/identity.h's cg_runtime_name() and cg_qos_name() give runtime and
 * qos. */
struct wire_cgroup_info {
	const char *container_id;
	const char *runtime;
	const char *pod_uid;
	const char *qos;
	const char *k8s_namespace;
	const char *pod_name;
	const char *container_name;
	const char *unit;
	const char *slice;
	const char *image;
	const char *description;
	/* @nlabels pairs, keys non-empty; a key given twice is kept once */
	const char *const *label_keys;
	const char *const *label_values;
	size_t nlabels;
};

/*
 * Add the cgroup at @path (relative to the cgroup2 root, non-empty) with
 * cgroup id @id (0 = unknown) and @info (may be NULL). Returns its index,
 * the index every other call takes as @cg, or -errno. A path added before
 * returns its first index; fields still unknown there are filled from the
 * new call.
 */
int wire_add_cgroup(struct wire_batch *b, const char *path, uint64_t id,
		    const struct wire_cgroup_info *info);

/*
 * One counting event of cgroup @cg over the interval: raw @value (not
 * scaled), @enabled and @running nanoseconds (@running <= @enabled, else
 * -EINVAL). @supported false: the host cannot count @event. 0 or -errno.
 */
int wire_add_counter(struct wire_batch *b, int cg, const char *event, uint64_t value,
		     uint64_t enabled, uint64_t running, bool supported);

/*
 * The profile that holds the stacks of cgroup @cg sampled on @event
 * (perf's name, or a probe's label) with @period events per sample or at
 * @freq_hz (the other 0). Returns its index (the same index again for the
 * same four values) or -errno.
 */
int wire_add_profile(struct wire_batch *b, int cg, const char *event, uint64_t period,
		     uint64_t freq_hz);

/*
 * Stacks of profile @profile cut short over the interval, by reason
 * (enum stacks_trunc order: stack copy, max stack, bad return address);
 * added to what the profile has. 0 or -EINVAL.
 */
#define WIRE_TRUNC_REASONS 3
int wire_add_truncated(struct wire_batch *b, int profile, const uint64_t counts[WIRE_TRUNC_REASONS]);

/*
 * Add @count samples of the stack @frames[0..@n) (root first, @n >= 1,
 * names interned) to profile @profile. A stack deeper than WIRE_STACK_MAX
 * keeps its leaf-most WIRE_STACK_MAX - 1 frames under a WIRE_TRUNCATED_FRAME
 * root. Identical stacks are not merged here (readers sum them). 0 or
 * -errno.
 */
int wire_add_stack(struct wire_batch *b, int profile, const char *const *frames, size_t n,
		   uint64_t count);

/*
 * The module (binary) frames were found in: @path as the sampled process
 * saw it, or perf's "[kernel.kallsyms]", "[vdso]", "[jit]" (non-empty), and
 * its GNU build-id @build_id in hex (NULL or "": none). Returns its index
 * (the same index again for the same path and build-id), for
 * wire_add_stack_mod(), or -errno (-EINVAL, -E2BIG past WIRE_MODULES_MAX,
 * -ENOMEM). A build-id that is not whole bytes of hex, 2 to
 * WIRE_BUILD_ID_MAX digits, is sent as "" (unknown); upper case is lowered.
 */
int wire_add_module(struct wire_batch *b, const char *path, const char *build_id);

/*
 * wire_add_stack() with module data: @modules[i] is the index of the module
 * of @frames[i] (from wire_add_module()), or -1 when the frame has none
 * (the comm frame, a prefix, "[unknown]"). @modules NULL: no module data
 * for this stack. A too-deep stack keeps frames and modules aligned; its
 * WIRE_TRUNCATED_FRAME root has no module. 0 or -errno (-EINVAL for an
 * index no wire_add_module() returned).
 */
int wire_add_stack_mod(struct wire_batch *b, int profile, const char *const *frames,
		       const int *modules, size_t n, uint64_t count);

/*
 * What probe @label saw in cgroup @cg: @hits, and optionally a histogram of
 * its argument (@values) and of latencies in ns (@latency_ns); each is
 * copied, may be NULL, and must be consistent (count = negative + buckets,
 * min <= max), else -EINVAL. 0 or -errno.
 */
int wire_add_probe(struct wire_batch *b, int cg, const char *label, uint64_t hits,
		   const struct hist *values, const struct hist *latency_ns);

/* The agent's own figures (see AgentStats in the .proto). */
struct wire_self {
	uint64_t samples, lost_samples, unwind_failures;
	uint64_t push_failures, push_rejected;
	uint64_t spool_bytes, spool_batches, spool_dropped_batches;
	uint64_t stacks_refused;
};
void wire_set_self(struct wire_batch *b, const struct wire_self *s);

/*
 * Serialize @b: protobuf bytes, or the same gzip-compressed (RFC 1952, for
 * Content-Encoding: gzip). On success *@buf (malloc'd, the caller frees it)
 * and *@len are set and 0 is returned; else -errno and nothing is set.
 */
int wire_encode(const struct wire_batch *b, uint8_t **buf, size_t *len);
int wire_encode_gzip(const struct wire_batch *b, uint8_t **buf, size_t *len);

/*
 * Decode and validate an untrusted push body of @len bytes. A body that
 * starts with the gzip magic is gunzipped first. @max_len caps both @len
 * and the decompressed size (0: WIRE_BODY_MAX_DEFAULT); the decoded
 * structures may take at most 32 times the protobuf size plus 1 MiB of
 * memory. Checks, beyond what protobuf-c checks: schema version, agent id,
 * interval, strings UTF-8 and bounded, string ids and cgroup indexes in
 * range, names (events, labels, frames, paths) not empty, stacks of
 * 1..WIRE_STACK_MAX frames, integers <= WIRE_VALUE_MAX (stack counts of a
 * profile summed too), time_running <= time_enabled, histograms consistent,
 * at most WIRE_MODULES_MAX modules, each with a path and a build-id of ""
 * or 2..WIRE_BUILD_ID_MAX lowercase hex digits (whole bytes), and a stack's
 * modules either absent or one per frame, each 0 or 1 + a module index.
 *
 * Returns the batch, to be released with wire_batch_decoded_free() only, or
 * NULL with errno EMSGSIZE (over a cap: HTTP 413), EBADMSG (malformed or
 * invalid: HTTP 400) or ENOMEM, and a one-line reason in @err (@errlen
 * bytes, may be 0).
 */
Cgperf__V1__Batch *wire_decode(const uint8_t *buf, size_t len, size_t max_len, char *err,
			       size_t errlen);
void wire_batch_decoded_free(Cgperf__V1__Batch *m);

/* The string @id of a decoded batch ("" when out of range). */
const char *wire_string(const Cgperf__V1__Batch *m, uint32_t id);

/* A decoded histogram as lib/hist.h keeps it; @m NULL gives an empty one. */
void wire_hist(const Cgperf__V1__Histogram *m, struct hist *h);

#endif
