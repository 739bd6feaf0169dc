/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_NETADDR_H
#define CGPERF_LIB_NETADDR_H

/*
 * Listen addresses as both programs take them (the exporter's --listen, the
 * agent's metrics.listen): "HOST:PORT", "[IPV6]:PORT", or ":PORT" for every
 * IPv4 address. HOST is a numeric address or a name, resolved once through
 * getaddrinfo() (its first answer). PORT is a number, 1..65535.
 */

#include <stdint.h>
#include <sys/socket.h>

/*
 * Parse @s into @ss (a sockaddr_in or sockaddr_in6) and *@port. 0, or
 * -EINVAL with *@why set to a static phrase for the message ("want
 * HOST:PORT", "bad port", "bad IPv6 address", "unknown host").
 */
int netaddr_parse_listen(const char *s, struct sockaddr_storage *ss, uint16_t *port,
			 const char **why);

#endif
