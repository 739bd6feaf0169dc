// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/ship/pushtext.h"

/* Printable single-line text: control bytes become '?'. */
void pushtext_sanitize(char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}

bool pushtext_is_http_url(const char *url)
{
	return !strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8);
}

/* @url with any user:password@ replaced by ***@ (malloc'd; NULL: ENOMEM). */
char *pushtext_redact_url(const char *url)
{
	const char *auth = strstr(url, "://"), *at = NULL;
	char *out;

	if (auth) {
		auth += 3;
		for (const char *q = auth; *q && !strchr("/?#", *q); q++) {
			if (*q == '@')
				at = q;
		}
	}
	if (!at)
		return strdup(url);
	if (asprintf(&out, "%.*s***%s", (int)(auth - url), url, at) < 0)
		return NULL;
	return out;
}

/* Copy @token into "Authorization: Bearer TOKEN", without trailing
 * whitespace (a token file's newline); control characters are refused so
 * the token cannot add header lines. */
int pushtext_auth_header(const char *token, char **out)
{
	size_t len = strlen(token);

	while (len && isspace((unsigned char)token[len - 1]))
		len--;
	if (!len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)token[i] < 0x20 || token[i] == 0x7f)
			return -EINVAL;
	}
	if (asprintf(out, "Authorization: Bearer %.*s", (int)len, token) < 0)
		return -ENOMEM;
	return 0;
}
