// SPDX-License-Identifier: MIT
/*
 * The run command's /metrics (see selfmetrics.h), on libmicrohttpd. The
 * library is loaded by the first selfmetrics_start(), not linked: with its
 * TLS libraries it cost every agent command ~1.5 ms at start, and only run
 * serves HTTP (lib/dynlib.h).
 */
#include "agent/ship/selfmetrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dynlib.h"
#include "lib/netaddr.h"
#include "lib/prom.h"

#define MHD_SONAME "libmicrohttpd.so.12"

static struct {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc, void *apc_cls,
					   MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	void (*stop_daemon)(struct MHD_Daemon *d);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
							    enum MHD_ResponseMemoryMode mode);
	enum MHD_Result (*add_response_header)(struct MHD_Response *r, const char *header,
					       const char *content);
	enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status,
					  struct MHD_Response *r);
	void (*destroy_response)(struct MHD_Response *r);
} mhd;
static char mhd_why[256];
static int mhd_loaded = -1;
static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;

static void mhd_load(void)
{
	const struct dynlib_sym syms[] = {
		{ "MHD_start_daemon", (void **)&mhd.start_daemon },
		{ "MHD_stop_daemon", (void **)&mhd.stop_daemon },
		{ "MHD_create_response_from_buffer", (void **)&mhd.create_response_from_buffer },
		{ "MHD_add_response_header", (void **)&mhd.add_response_header },
		{ "MHD_queue_response", (void **)&mhd.queue_response },
		{ "MHD_destroy_response", (void **)&mhd.destroy_response },
	};

	mhd_loaded = dynlib_load(MHD_SONAME, syms, sizeof(syms) / sizeof(syms[0]), mhd_why,
				 sizeof(mhd_why));
}

struct selfmetrics {
	struct MHD_Daemon *d;
	pthread_mutex_t lock;
	char *page;
	size_t len;
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	struct selfmetrics *m = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	unsigned status = MHD_HTTP_OK;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		r = mhd.create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		static const char nf[] = "not found: the agent serves /metrics\n";

		r = mhd.create_response_from_buffer(sizeof(nf) - 1, (void *)nf,
						    MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_NOT_FOUND;
	} else {
		pthread_mutex_lock(&m->lock);
		r = mhd.create_response_from_buffer(m->len, m->page ? m->page : (char *)"",
						    MHD_RESPMEM_MUST_COPY);
		pthread_mutex_unlock(&m->lock);
		if (r)
			mhd.add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	}
	if (!r)
		return MHD_NO;
	ret = mhd.queue_response(c, status, r);
	mhd.destroy_response(r);
	return ret;
}

struct selfmetrics *selfmetrics_start(const char *listen, char *err, size_t errlen)
{
	struct selfmetrics *m;
	struct sockaddr_storage ss = {0};
	uint16_t port;
	const char *why;

	if (netaddr_parse_listen(listen, &ss, &port, &why) < 0) {
		snprintf(err, errlen, "metrics.listen '%s': %s", listen, why);
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&mhd_once, mhd_load);
	if (mhd_loaded < 0) {
		snprintf(err, errlen, "cannot load %s: %s", MHD_SONAME, mhd_why);
		errno = ELIBACC;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	/* poll(), not select(): an agent counting many cgroups holds thousands
	 * of perf fds, and select() cannot see a socket numbered past 1023 */
	m->d = mhd.start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
					(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				port, NULL, NULL, handle, m, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				MHD_OPTION_END);
	if (!m->d) {
		snprintf(err, errlen, "cannot listen on %s (in use?)", listen);
		selfmetrics_stop(m);
		errno = EADDRINUSE;
		return NULL;
	}
	return m;
}

void selfmetrics_publish(struct selfmetrics *m, const char *text, size_t len)
{
	char *copy;

	if (!m)
		return;
	copy = malloc(len + 1);
	if (!copy)
		return;
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&m->lock);
	free(m->page);
	m->page = copy;
	m->len = len;
	pthread_mutex_unlock(&m->lock);
}

void selfmetrics_stop(struct selfmetrics *m)
{
	if (!m)
		return;
	if (m->d) /* NULL: selfmetrics_start() failed to listen */
		mhd.stop_daemon(m->d);
	pthread_mutex_destroy(&m->lock);
	free(m->page);
	free(m);
}

void selfmetrics_label(FILE *f, const char *v)
{
	prom_label(f, v);
}
