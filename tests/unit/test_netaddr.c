// SPDX-License-Identifier: MIT
/* lib/netaddr: listen addresses, one line per case. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "lib/netaddr.h"
#include "tests/unit/testlib.h"

static const struct {
	const char *in;
	int family;        /* 0: refused */
	const char *addr;  /* as inet_ntop writes it, or the reason */
	uint16_t port;
} cases[] = {
	{"127.0.0.1:9464", AF_INET, "127.0.0.1", 9464},
	{":9464", AF_INET, "0.0.0.0", 9464},
	{"0.0.0.0:1", AF_INET, "0.0.0.0", 1},
	{"[::1]:8080", AF_INET6, "::1", 8080},
	{"[::]:65535", AF_INET6, "::", 65535},
	{"localhost:9000", -1, NULL, 9000}, /* a name: 127.0.0.1 or ::1 */
	{"127.0.0.1", 0, "want HOST:PORT", 0},
	{"127.0.0.1:0", 0, "bad port", 0},
	{"127.0.0.1:65536", 0, "bad port", 0},
	{"127.0.0.1:", 0, "bad port", 0},
	{"127.0.0.1:80x", 0, "bad port", 0},
	{"127.0.0.1:-1", 0, "bad port", 0},
	{"[::1:80", 0, "bad IPv6 address", 0},
	{"[]:80", 0, "bad IPv6 address", 0},
	{"[zz]:80", 0, "bad IPv6 address", 0},
	{"[127.0.0.1]:80", 0, "bad IPv6 address", 0},
	{"999.1.1.1:80", 0, "unknown host", 0},
	{"no-such-host.invalid:80", 0, "unknown host", 0},
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		uint16_t port = 0;
		const char *why = NULL;
		char buf[64];
		int rc = netaddr_parse_listen(cases[i].in, &ss, &port, &why);

		if (!cases[i].family) {
			assert_int_equal(rc, -EINVAL);
			assert_string_equal(why, cases[i].addr);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(port, cases[i].port);
		if (cases[i].family < 0) {
			assert_true(ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
			continue;
		}
		assert_int_equal(ss.ss_family, cases[i].family);
		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;

			assert_int_equal(ntohs(a->sin_port), cases[i].port);
			inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
		} else {
			const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;

			assert_int_equal(ntohs(a->sin6_port), cases[i].port);
			inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
		}
		assert_string_equal(buf, cases[i].addr);
	}
}

TL_MAIN(test_table)
