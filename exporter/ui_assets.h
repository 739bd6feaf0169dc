/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_UI_ASSETS_H
#define CGPERF_EXPORTER_UI_ASSETS_H

/*
 * The page's files as built into cgperf-exporter: web/build.mjs writes
 * $(O)/gen/exporter/ui_assets.c from web/src/ and uPlot's dist files (npm),
 * each gzip'd (level 9) with an ETag made of its content's SHA-256.
 */

#include <stddef.h>
#include <stdint.h>

struct ui_asset {
	const char *name;	/* "index.html", "app.js", "uPlot.esm.js" */
	const char *type;	/* its Content-Type */
	const char *etag;	/* a quoted strong ETag */
	const uint8_t *gz;	/* gzip member of the content */
	size_t gz_len, len;	/* compressed and original sizes */
};

extern const struct ui_asset ui_assets[];
extern const size_t ui_assets_n;

#endif
