// SPDX-License-Identifier: MIT
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "lib/netaddr.h"

static int fail(const char **why, const char *what)
{
	if (why)
		*why = what;
	return -EINVAL;
}

int netaddr_parse_listen(const char *s, struct sockaddr_storage *ss, uint16_t *port,
			 const char **why)
{
	const char *colon = strrchr(s, ':');
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char host[256], *end;
	const char *node;
	long p;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return fail(why, "want HOST:PORT");
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || p <= 0 || p > 65535)
		return fail(why, "bad port");
	node = host;
	hints.ai_family = AF_UNSPEC;
	if (host[0] == '[') {
		size_t hl = strlen(host);

		if (hl < 3 || host[hl - 1] != ']')
			return fail(why, "bad IPv6 address");
		host[hl - 1] = '\0';
		node = host + 1;
		hints.ai_family = AF_INET6;
		hints.ai_flags |= AI_NUMERICHOST;
	} else if (!host[0]) {
		node = NULL; /* AI_PASSIVE: the wildcard address */
		hints.ai_family = AF_INET;
	}
	if (getaddrinfo(node, colon + 1, &hints, &res) != 0 || !res)
		return fail(why, hints.ai_family == AF_INET6 ? "bad IPv6 address" : "unknown host");
	if (res->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(res);
		return fail(why, "unknown host");
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	*port = (uint16_t)p;
	return 0;
}
