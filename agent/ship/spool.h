/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_SPOOL_H
#define CGPERF_AGENT_SPOOL_H

/*
 * The spool: a bounded on-disk queue of opaque batches (gzip'd protobuf
 * bytes, to the spool just bytes), so that what the agent produced survives a
 * collector outage and an agent restart or crash.
 *
 * Layout of the directory (mode 0700):
 *   00000000000000000042   one batch, named by its sequence number, 20 digits
 *                          zero-padded so name order is sequence order
 *   seq                    the last sequence number handed out (decimal)
 *   cursor-KEY             "SEQ LABEL\n": a reader's last consumed sequence
 *   lock                   flock()ed while a spool is open
 *   .tmp-*                 files being written; removed by spool_open
 *
 * Every file is written to a .tmp- name, fsync'd, renamed over its final
 * name, and the directory fsync'd: a crash loses nothing already put and
 * never leaves a partial batch under a batch name.
 *
 * The cap counts batch bytes only. When a put would exceed it, the oldest
 * batches are dropped first and counted (spool_dropped).
 *
 * A struct spool is not thread-safe: its user serialises calls.
 * Functions return 0 or a negative errno unless said otherwise.
 */

#include <stddef.h>
#include <stdint.h>

struct spool;

/* Open (creating it, and missing parents, mode 0700) the spool in @dir, with
 * a cap of @max_bytes (> 0) of batch data. Removes stale .tmp- files, indexes
 * the batches already there, and drops the oldest if they exceed the cap.
 * Holds an exclusive flock on DIR/lock: a second open of the same directory,
 * from this process or another, fails with EBUSY. NULL + errno on failure. */
struct spool *spool_open(const char *dir, uint64_t max_bytes);
void spool_close(struct spool *s);

/* Store a copy of @buf durably as batch @seq (replacing a batch of the same
 * number). Drops the oldest batches while the total exceeds the cap; a batch
 * larger than the whole cap is itself dropped (counted) with -EFBIG. */
int spool_put(struct spool *s, uint64_t seq, const void *buf, size_t len);

/* The oldest batch, or the oldest with a number > @after: its number in
 * *@seq and its bytes in a malloc'd *@buf (caller frees) of *@len bytes.
 * -ENOENT when there is none. A batch file that vanished or cannot be read is
 * forgotten, counted as dropped, and the next one is returned. */
int spool_peek_oldest(struct spool *s, uint64_t *seq, void **buf, size_t *len);
int spool_peek_after(struct spool *s, uint64_t after, uint64_t *seq, void **buf, size_t *len);

/* The number of the oldest batch > @after without reading it; -ENOENT. */
int spool_next_after(const struct spool *s, uint64_t after, uint64_t *seq);
/* The highest batch number held; -ENOENT when empty. */
int spool_last(const struct spool *s, uint64_t *seq);

/* Remove batch @seq (-ENOENT if not held), or every batch <= @seq (returns
 * how many were removed). Removal is not counted as a drop. */
int spool_remove(struct spool *s, uint64_t seq);
int spool_remove_upto(struct spool *s, uint64_t seq);

uint64_t spool_bytes(const struct spool *s);
size_t spool_count(const struct spool *s);
/* Batches held with a number > @after. */
size_t spool_count_after(const struct spool *s, uint64_t after);
/* Batches dropped by the cap (or unreadable) since spool_open. */
uint64_t spool_dropped(const struct spool *s);

/* A reader's cursor in DIR/cursor-@key (@key: [A-Za-z0-9_-], 1..64 chars),
 * with an optional human @label (e.g. the collector URL) after the number.
 * Load: -ENOENT when absent, -EBADMSG when unparsable. Store: written
 * atomically and fdatasync'd (a cursor that rolls back only causes resends). */
int spool_cursor_load(struct spool *s, const char *key, uint64_t *seq);
int spool_cursor_store(struct spool *s, const char *key, uint64_t seq, const char *label);

/* The next sequence number for batches spooled in @dir: one more than the
 * largest of DIR/seq, any batch and any cursor there (so a lost or
 * rolled-back DIR/seq cannot make numbers repeat), persisted durably in
 * DIR/seq before it is returned. The first is 1. Creates @dir if needed.
 * Works with or without the spool open; not to be called concurrently for
 * one directory. */
int spool_next_seq(const char *dir, uint64_t *seq);

#endif
