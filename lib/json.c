// SPDX-License-Identifier: MIT
#include "lib/json.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lib/utf8.h"

void json_string_to(json_put_fn *put, void *ctx, const char *str)
{
	static const char hex[] = "0123456789abcdef";
	const char *s = str ? str : "", *end = s + strlen(s), *run = s;

	put(ctx, "\"", 1);
	while (s < end) {
		unsigned char c = (unsigned char)*s;
		char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
		const char *esc = NULL;
		size_t esclen = 2, n = 1;

		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default:
			if (c < 0x20 || c == 0x7f) {
				esc = u;
				esclen = 6;
			} else if (c >= 0x80 && !(n = utf8_decode(s, (size_t)(end - s), NULL))) {
				esc = "\\ufffd";
				esclen = 6;
				n = 1;
			}
			break;
		}
		if (esc) {
			put(ctx, run, (size_t)(s - run));
			put(ctx, esc, esclen);
			run = s + n;
		}
		s += n;
	}
	put(ctx, run, (size_t)(s - run));
	put(ctx, "\"", 1);
}

static void put_file(void *ctx, const char *s, size_t n)
{
	if (n)
		fwrite(s, 1, n, ctx);
}

void json_write_string(FILE *f, const char *s)
{
	json_string_to(put_file, f, s);
}

void json_write_double(FILE *f, double v, int prec)
{
	if (!isfinite(v))
		fputs("null", f);
	else
		fprintf(f, "%.*f", prec, v);
}
