// SPDX-License-Identifier: MIT
#include "lib/units.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MS_S UINT64_C(1000)
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define NS_MS UINT64_C(1000000)
#define NS_S UINT64_C(1000000000)

struct unit {
	const char *name;
	uint64_t mul;
};

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

int units_digits(const char **s, uint64_t *n)
{
	const char *p = *s;
	uint64_t v = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*s = p;
	*n = v;
	return 0;
}

/* The unit spelt by the letters at @s (all of them), 0 if none. */
static uint64_t unit_at(const char *s, size_t *len, const struct unit *u, size_t nu, bool nocase)
{
	size_t l = 0;

	while (isalpha((unsigned char)s[l]))
		l++;
	*len = l;
	for (size_t i = 0; i < nu; i++) {
		if (strlen(u[i].name) != l)
			continue;
		if (nocase ? !strncasecmp(s, u[i].name, l) : !strncmp(s, u[i].name, l))
			return u[i].mul;
	}
	return 0;
}

/* Sum of NUMBER UNIT parts, in the table's base unit. */
static int parse_sum(const char *s, const struct unit *u, size_t nu, uint64_t *out)
{
	uint64_t total = 0;
	bool any = false;

	if (!s)
		return -EINVAL;
	for (;;) {
		uint64_t n, mul;
		size_t ulen;
		int rc;

		s = skip_blanks(s);
		if (!*s)
			break;
		rc = units_digits(&s, &n);
		if (rc < 0)
			return rc;
		s = skip_blanks(s);
		mul = unit_at(s, &ulen, u, nu, false);
		if (!mul)
			return -EINVAL;
		s += ulen;
		if (n > UINT64_MAX / mul || total > UINT64_MAX - n * mul)
			return -ERANGE;
		total += n * mul;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*out = total;
	return 0;
}

int units_duration_ms(const char *s, uint64_t *out)
{
	static const struct unit u[] = {{"ms", 1}, {"s", MS_S}, {"m", MS_M}, {"h", MS_H}};

	return parse_sum(s, u, NELEMS(u), out);
}

int units_duration_ns(const char *s, uint64_t *out)
{
	static const struct unit u[] = {{"ms", NS_MS}, {"s", NS_S}, {"m", 60 * NS_S},
					{"h", 3600 * NS_S}, {"d", 86400 * NS_S}};

	return parse_sum(s, u, NELEMS(u), out);
}

int units_size(const char *s, uint64_t *out)
{
	static const struct unit u[] = {
		{"b", 1},
		{"kib", UNITS_KIB}, {"mib", UNITS_MIB}, {"gib", UNITS_GIB}, {"tib", UNITS_TIB},
		{"kb", UINT64_C(1000)}, {"mb", UINT64_C(1000000)}, {"gb", UINT64_C(1000000000)},
		{"tb", UINT64_C(1000000000000)},
	};
	uint64_t n, mul = 1;
	int rc;

	if (!s)
		return -EINVAL;
	s = skip_blanks(s);
	rc = units_digits(&s, &n);
	if (rc < 0)
		return rc;
	s = skip_blanks(s);
	if (*s) {
		size_t l;

		mul = unit_at(s, &l, u, NELEMS(u), true);
		if (!mul)
			return -EINVAL;
		s = skip_blanks(s + l);
		if (*s)
			return -EINVAL;
	}
	if (n > (uint64_t)INT64_MAX / mul)
		return -ERANGE;
	*out = n * mul;
	return 0;
}

void units_format_duration_ms(uint64_t ms, char *buf, size_t len)
{
	if (ms && ms % MS_H == 0)
		snprintf(buf, len, "%" PRIu64 "h", ms / MS_H);
	else if (ms && ms % MS_M == 0)
		snprintf(buf, len, "%" PRIu64 "m", ms / MS_M);
	else if (ms % MS_S == 0)
		snprintf(buf, len, "%" PRIu64 "s", ms / MS_S);
	else
		snprintf(buf, len, "%" PRIu64 "ms", ms);
}

void units_format_size(uint64_t b, char *buf, size_t len)
{
	static const struct unit u[] = {{"TiB", UNITS_TIB}, {"GiB", UNITS_GIB},
					{"MiB", UNITS_MIB}, {"KiB", UNITS_KIB}};

	for (size_t i = 0; i < NELEMS(u); i++) {
		if (b && b % u[i].mul == 0) {
			snprintf(buf, len, "%" PRIu64 "%s", b / u[i].mul, u[i].name);
			return;
		}
	}
	snprintf(buf, len, "%" PRIu64, b);
}
