// SPDX-License-Identifier: MIT
#include "lib/utf8.h"

size_t utf8_decode(const char *str, size_t n, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0];
	size_t len;
	uint32_t v, min;

	if (c < 0x80) {
		len = 1, v = c, min = 0;
	} else if (c >= 0xc2 && c <= 0xdf) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	if (cp)
		*cp = v;
	return len;
}

size_t utf8_valid(const char *s, size_t n)
{
	size_t i = 0, k;

	while (i < n) {
		if ((unsigned char)s[i] < 0x80) {
			i++;
			continue;
		}
		k = utf8_decode(s + i, n - i, NULL);
		if (!k)
			break;
		i += k;
	}
	return i;
}
