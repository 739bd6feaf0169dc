/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_RW_ENCODE_H
#define CGPERF_EXPORTER_RW_ENCODE_H

/*
 * rw_encode: exposition text, as /metrics writes it, into one Prometheus
 * remote_write 1.0 request body (proto/remote_write.proto, snappy block
 * compressed). The series sent are exactly the samples of the text, so the
 * names and labels are /metrics's by construction: this file reads them
 * back with the text format's grammar and never names a metric itself.
 *
 * Every series gets the @extra labels (an instance label, say, so that
 * several exporters writing to one TSDB keep apart), overriding a label of
 * the same name; labels are sorted by name, __name__ among them, as the
 * protocol wants. Every sample gets the time @ts_ms. Comment lines (HELP,
 * TYPE, # EOF) are skipped; a sample's own timestamp, if any, is ignored.
 * Nothing here prints.
 */

#include <stddef.h>
#include <stdint.h>

struct rw_label {
	const char *name, *value;
};

/* Series per request at most; more is -E2BIG (the caller splits nothing:
 * the exporter's totals are capped far below). */
#define RW_ENCODE_SERIES_MAX (8u << 20)

/*
 * Encode the @len bytes of exposition text at @text. 0 and *@out
 * (malloc'd snappy data, the caller frees), *@outlen and *@nseries;
 * -EINVAL with the 1-based line number in *@nseries for a line that does
 * not parse, -E2BIG, or -ENOMEM.
 */
int rw_encode(const char *text, size_t len, const struct rw_label *extra, size_t nextra, int64_t ts_ms,
	      void **out, size_t *outlen, size_t *nseries);

/* The reverse, for tests: snappy data into the WriteRequest's protobuf
 * bytes (malloc'd). 0, -EINVAL or -ENOMEM. */
int rw_uncompress(const void *in, size_t len, void **out, size_t *outlen);

#endif
