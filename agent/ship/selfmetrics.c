// SPDX-License-Identifier: MIT
#include "agent/ship/selfmetrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "lib/netaddr.h"

#include "lib/prom.h"

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
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		static const char nf[] = "not found: the agent serves /metrics\n";

		r = MHD_create_response_from_buffer(sizeof(nf) - 1, (void *)nf,
						    MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_NOT_FOUND;
	} else {
		pthread_mutex_lock(&m->lock);
		r = MHD_create_response_from_buffer(m->len, m->page ? m->page : (char *)"",
						    MHD_RESPMEM_MUST_COPY);
		pthread_mutex_unlock(&m->lock);
		if (r)
			MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	}
	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
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
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	/* poll(), not select(): an agent counting many cgroups holds thousands
	 * of perf fds, and select() cannot see a socket numbered past 1023 */
	m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
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
		MHD_stop_daemon(m->d);
	pthread_mutex_destroy(&m->lock);
	free(m->page);
	free(m);
}

void selfmetrics_label(FILE *f, const char *v)
{
	prom_label(f, v);
}
