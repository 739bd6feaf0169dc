/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_UI_H
#define CGPERF_EXPORTER_UI_H

/*
 * The explorer page (docs/ui.md): GET / and GET /ui/NAME, the page's HTML
 * and its assets (ES modules, CSS, uPlot). Part of the HTTP service
 * (http.c routes to it); the assets are built into the binary
 * (ui_assets.h), or read from --ui-dir while developing.
 */

#include <microhttpd.h>
#include <stdbool.h>

struct req;

/* The Content-Security-Policy of the page and its assets: scripts, styles
 * and connections from the exporter itself only, no inline script. */
#define UI_CSP                                                                           \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "       \
	"frame-ancestors 'none'"

/* Is @url the page or one of its assets ("/", "/ui/...")? */
bool ui_path(const char *url);

/*
 * Answer a GET or HEAD of @url (ui_path() true) on the event loop: the
 * asset gzip'd when the client takes gzip (inflated otherwise), 304 for an
 * If-None-Match with its ETag, 404 for an unknown name. With @ui_dir
 * (NULL: none) a file of that directory wins over the built-in asset of
 * its name and is sent as read, uncached.
 */
enum MHD_Result ui_serve(struct MHD_Connection *c, struct req *r, const char *url,
			 const char *ui_dir);

#endif
