// SPDX-License-Identifier: MIT
/* libcurl loaded on first use (see curlapi.h). */
#include "lib/curlapi.h"

#include <pthread.h>
#include <stdio.h>

#include "lib/dynlib.h"

static struct curlapi api;
static const struct curlapi *loaded;
static char why[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	CURLcode (*global_init)(long flags);
#define SYM(m) { "curl_" #m, (void **)&api.m }
	const struct dynlib_sym syms[] = {
		{ "curl_global_init", (void **)&global_init },
		SYM(easy_init), SYM(easy_setopt), SYM(easy_getinfo), SYM(easy_perform),
		SYM(easy_cleanup), SYM(easy_strerror), SYM(slist_append), SYM(slist_free_all),
		SYM(multi_init), SYM(multi_add_handle), SYM(multi_remove_handle),
		SYM(multi_perform), SYM(multi_poll), SYM(multi_info_read), SYM(multi_wakeup),
		SYM(multi_cleanup), SYM(multi_strerror),
	};
#undef SYM
	CURLcode rc;

	if (dynlib_load(CURLAPI_SONAME, syms, sizeof(syms) / sizeof(syms[0]), why, sizeof(why)) < 0)
		return;
	rc = global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK) {
		snprintf(why, sizeof(why), "curl_global_init: %s", api.easy_strerror(rc));
		return;
	}
	loaded = &api;
}

const struct curlapi *curlapi(void)
{
	pthread_once(&once, load);
	return loaded;
}

const char *curlapi_error(void)
{
	return why;
}
