// SPDX-License-Identifier: MIT
/*
 * The explorer page and its assets. Everything here is static bytes, so it
 * is answered on the event loop, never queued for a reader thread:
 *   GET /          the page (index.html), whatever its query: the view's
 *                  state lives in the query and the page reads it itself
 *   GET /ui/NAME   an asset (app.js, style.css, uPlot.esm.js, ...)
 * Built-in assets are gzip'd at build time (web/build.mjs), so they go out
 * as stored to a client that takes gzip and are inflated for one that does
 * not; each has an ETag (its content's hash), answered 304 on a matching
 * If-None-Match, and Cache-Control: no-cache (revalidate every time: a new
 * binary has new assets under the same names).
 *
 * Every answer of the page and its assets carries UI_CSP (ui.h): the page's
 * code comes from /ui/ only, never inline, and talks to this exporter only,
 * so a hostile name that reached the DOM as markup still could not run.
 * The page renders names as text anyway (docs/ui.md).
 *
 * --ui-dir DIR (development): DIR/NAME, when it exists, is read at each
 * request and sent with Cache-Control: no-store, so an edit shows on the
 * next reload; names DIR lacks (uPlot, from node_modules) fall back to the
 * built-in ones. NAME is [A-Za-z0-9._-], never starting with a dot.
 */
#include "exporter/ui.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "exporter/http_internal.h"
#include "exporter/ui_assets.h"

#define UI_PREFIX "/ui/"
#define UI_NAME_MAX 128
/* A file of --ui-dir larger than this is refused (a page's asset is not). */
#define UI_FILE_MAX (16u << 20)

bool ui_path(const char *url)
{
	return !strcmp(url, "/") || !strncmp(url, UI_PREFIX, strlen(UI_PREFIX));
}

/* NAME of /ui/NAME, or "index.html" for /; NULL when not a safe name. */
static const char *asset_name(const char *url)
{
	const char *n;

	if (!strcmp(url, "/"))
		return "index.html";
	n = url + strlen(UI_PREFIX);
	if (!*n || *n == '.' || strlen(n) > UI_NAME_MAX)
		return NULL;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return NULL;
	return n;
}

static const struct ui_asset *builtin(const char *name)
{
	for (size_t i = 0; i < ui_assets_n; i++)
		if (!strcmp(ui_assets[i].name, name))
			return &ui_assets[i];
	return NULL;
}

/* Content-Type by the name's extension. */
static const char *type_of(const char *name)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".mjs", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".svg", "image/svg+xml" },
		{ ".png", "image/png" },
		{ ".json", "application/json" },
	};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(dot, types[i].ext))
			return types[i].type;
	return "application/octet-stream";
}

/* The gzip member @gz inflated into a malloc'd buffer of @len bytes. */
static void *inflate_all(const uint8_t *gz, size_t gz_len, size_t len)
{
	z_stream z = { 0 };
	uint8_t *out = malloc(len ? len : 1);
	int zret;

	if (!out)
		return NULL;
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)gz_len;
	z.next_out = out;
	z.avail_out = (uInt)len;
	zret = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	if (zret != Z_STREAM_END || z.total_out != len) {
		free(out);
		return NULL;
	}
	return out;
}

/* The headers every answer of the page carries. */
static void common_headers(struct MHD_Response *resp, const char *type)
{
	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Content-Security-Policy", UI_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
}

/* Does If-None-Match name @etag (or "*")? */
static bool not_modified(struct MHD_Connection *c, const char *etag)
{
	const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");

	return inm && (strstr(inm, etag) || !strcmp(inm, "*"));
}

static enum MHD_Result serve_builtin(struct MHD_Connection *c, struct req *r,
				     const struct ui_asset *a)
{
	struct MHD_Response *resp;
	unsigned status = MHD_HTTP_OK;
	bool gz = http_accepts_gzip(c);

	r->done = true;
	if (not_modified(c, a->etag)) {
		status = MHD_HTTP_NOT_MODIFIED;
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else if (gz) {
		resp = MHD_create_response_from_buffer(a->gz_len, (void *)a->gz,
						       MHD_RESPMEM_PERSISTENT);
	} else {
		void *body = inflate_all(a->gz, a->gz_len, a->len);

		if (!body)
			return http_answer(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
		resp = MHD_create_response_from_buffer(a->len, body, MHD_RESPMEM_MUST_FREE);
		if (!resp)
			free(body);
	}
	if (!resp)
		return MHD_NO;
	common_headers(resp, a->type);
	MHD_add_response_header(resp, "ETag", a->etag);
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	MHD_add_response_header(resp, "Vary", "Accept-Encoding");
	if (gz && status == MHD_HTTP_OK)
		MHD_add_response_header(resp, "Content-Encoding", "gzip");
	return http_deliver(c, r, status, resp);
}

/* DIR/@name read whole into *@out: 0, or -errno (-ENOENT: not there). */
static int read_dev_file(const char *dir, const char *name, char **out, size_t *len)
{
	char path[4096];
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, ret = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > UI_FILE_MAX) {
		ret = -ENOENT;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			goto out;
		}
		got += (size_t)n;
	}
	*out = buf;
	*len = got;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}

static enum MHD_Result serve_dev(struct MHD_Connection *c, struct req *r, const char *name,
				 char *body, size_t len)
{
	struct MHD_Response *resp;

	r->done = true;
	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	common_headers(resp, type_of(name));
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	return http_deliver(c, r, MHD_HTTP_OK, resp);
}

enum MHD_Result ui_serve(struct MHD_Connection *c, struct req *r, const char *url,
			 const char *ui_dir)
{
	const char *name = asset_name(url);
	const struct ui_asset *a;

	if (!name)
		return http_answer(c, r, MHD_HTTP_NOT_FOUND, "no such asset\n");
	if (ui_dir) {
		char *body;
		size_t len;
		int ret = read_dev_file(ui_dir, name, &body, &len);

		if (!ret)
			return serve_dev(c, r, name, body, len);
		if (ret != -ENOENT)
			return http_answerf(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR,
					    "--ui-dir: cannot read %s: %s\n", name, strerror(-ret));
	}
	a = builtin(name);
	if (!a)
		return http_answer(c, r, MHD_HTTP_NOT_FOUND, "no such asset\n");
	return serve_builtin(c, r, a);
}
