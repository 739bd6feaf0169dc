/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_CURLAPI_H
#define CGPERF_LIB_CURLAPI_H

/*
 * libcurl, loaded by its first user (lib/dynlib.h says why): the functions
 * the agent's code calls, as a table. lib/httpc (pushes, remote_write) and
 * the container runtimes' API client (cgroup/) call libcurl through it, so
 * the agent does not link -lcurl. The exporter links it (its ClickHouse
 * store calls libcurl directly, and a server pays its start once); there
 * the dlopen() finds the library already loaded.
 */

#include <curl/curl.h>

#define CURLAPI_SONAME "libcurl.so.4"

struct curlapi {
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	CURLcode (*easy_perform)(CURL *h);
	void (*easy_cleanup)(CURL *h);
	const char *(*easy_strerror)(CURLcode rc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_perform)(CURLM *m, int *running);
	CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd extra[], unsigned int n, int timeout_ms,
				int *numfds);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	CURLMcode (*multi_wakeup)(CURLM *m);
	CURLMcode (*multi_cleanup)(CURLM *m);
	const char *(*multi_strerror)(CURLMcode mc);
};

/*
 * The table, libcurl loaded and curl_global_init() done by the first call
 * (thread-safe). NULL when libcurl cannot be loaded or initialised; then
 * curlapi_error() says why.
 */
const struct curlapi *curlapi(void);
const char *curlapi_error(void);

#endif
