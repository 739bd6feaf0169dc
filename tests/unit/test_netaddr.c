// SPDX-License-Identifier: MIT
/* lib/netaddr: listen addresses, one line per case
 * (tests/unit/data/netaddr_listen.tsv). */
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

/* The address family that a case's word names: inet, inet6, name (a host
 * name: either), refused (0). */
static int family_of(const char *word)
{
	if (!strcmp(word, "inet"))
		return AF_INET;
	if (!strcmp(word, "inet6"))
		return AF_INET6;
	if (!strcmp(word, "name"))
		return -1;
	if (strcmp(word, "refused"))
		fail_msg("unknown family '%s'", word);
	return 0;
}

/* One case of tests/unit/data/netaddr_listen.tsv. */
static void check_case(const struct tl_table *t, size_t i)
{
	const char *in = tl_table_row(t, i)[0], *want = tl_table_row(t, i)[2];
	const char *where = tl_table_where(t, i);
	int family = family_of(tl_table_row(t, i)[1]);
	struct sockaddr_storage ss;
	uint16_t port = 0, want_port;
	const char *why = NULL;
	char buf[64] = "";
	int rc = netaddr_parse_listen(in, &ss, &port, &why);

	if (!family) {
		if (rc != -EINVAL || !why || strcmp(why, want))
			fail_msg("%s: %s: %d (%s), want -EINVAL (%s)", where, in, rc,
				 why ? why : "no reason", want);
		return;
	}
	want_port = tl_table_u64(t, i, 3);
	if (rc || port != want_port)
		fail_msg("%s: %s: %d, port %u, want 0, port %u", where, in, rc, port, want_port);
	if (family < 0) {
		assert_true(ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
		return;
	}
	assert_int_equal(ss.ss_family, family);
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;

		assert_int_equal(ntohs(a->sin_port), want_port);
		inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;

		assert_int_equal(ntohs(a->sin6_port), want_port);
		inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
	}
	if (strcmp(buf, want))
		fail_msg("%s: %s: address %s, want %s", where, in, buf, want);
}

static void test_table(void **state)
{
	struct tl_table *t = tl_table_load("netaddr_listen.tsv", 4);

	for (size_t i = 0; i < tl_table_rows(t); i++)
		check_case(t, i);
	tl_table_free(t);
}

TL_MAIN(test_table)
