/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_GZIP_H
#define CGPERF_LIB_GZIP_H

/*
 * One buffer in, one gzip member out (RFC 1952, zlib's deflate with the gzip
 * wrapper): the agent's batches, the exporter's gzip'd answers and pprof
 * files. Reading gzip stays with the wire decoder, which caps what it
 * inflates.
 */

#include <stddef.h>
#include <stdint.h>

/* zlib's levels: 1 fastest .. 9 smallest; -1 zlib's default (6). */
#define GZIP_FASTEST 1
#define GZIP_DEFAULT (-1)

/*
 * Compress @len bytes at @in at @level into a malloc'd *@out of *@outlen
 * bytes (the caller frees it). Any size (zlib's 32-bit counters are fed in
 * steps). 0, -ENOMEM or -EIO (zlib refused); *@out untouched on failure.
 */
int gzip_compress(const void *in, size_t len, int level, uint8_t **out, size_t *outlen);

#endif
