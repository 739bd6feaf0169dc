/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_KSYMS_H
#define CGPERF_AGENT_KSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Kernel symbols from /proc/kallsyms (text symbols only), sorted.
 *
 * ksyms_load("/proc/kallsyms") uses the symbolization cache (see
 * agent/symbols/symcache.h): the vmlinux symbols of this boot are written there by
 * the first reader and mapped by later ones instead of reading
 * /proc/kallsyms (~35 ms of kernel CPU); addresses outside vmlinux (modules,
 * BPF, ftrace trampolines) are then looked up in a live read made on first
 * need, so answers never differ from a live read's. Any other path is read
 * as it is, without the cache.
 */
struct ksyms;
/* NULL + errno when @path cannot be read; malformed and over-long lines
 * are skipped. */
struct ksyms *ksyms_load(const char *path);
/*
 * The same with an explicit cache: @cache_dir (NULL: no cache) and the
 * boot's id @boot_id (36 characters, as /proc/sys/kernel/random/boot_id).
 * For tests and for callers that know them already.
 */
struct ksyms *ksyms_load_cached(const char *path, const char *cache_dir, const char *boot_id);
/* Number of text symbols kept (0 when kptr_restrict hides them); from the
 * cache, vmlinux symbols only. */
size_t ksyms_count(const struct ksyms *k);
/* True when @k was mapped from the cache rather than read. */
bool ksyms_cached(const struct ksyms *k);
/* Name of the kernel function containing @addr; NULL if none (or the
 * addresses are hidden by kptr_restrict: all zero). Module symbols are
 * returned as "name" and their module in @module (NULL for vmlinux; set
 * only when a name is returned; @module may be NULL). Not const: may read
 * /proc/kallsyms on first need (see above). */
const char *ksyms_lookup(struct ksyms *k, uint64_t addr, const char **module);
void ksyms_free(struct ksyms *k);

/*
 * Call @fn on every text symbol of the kallsyms-format file @path, in file
 * order, aliases and modules included (@module NULL for vmlinux; both
 * strings valid during the call only). A live read, no cache: for callers
 * that look names up (kernel probes), not addresses. A non-zero return of
 * @fn stops the walk and is returned; else 0, or -errno reading @path.
 */
typedef int (*ksyms_each_fn)(void *ctx, uint64_t addr, const char *name, const char *module);
int ksyms_each(const char *path, ksyms_each_fn fn, void *ctx);

#endif
