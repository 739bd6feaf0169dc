/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_PUSHTEXT_H
#define CGPERF_AGENT_PUSHTEXT_H

/*
 * The text the push module makes out of what it is given (collector URLs,
 * a token, a server's error body) before it goes into a header or a log
 * line: nothing here may let a value add a header line, spread a log entry
 * over several lines, or print a password.
 */

#include <stdbool.h>

/* Control bytes (and DEL) become '?', in place: one printable line. */
void pushtext_sanitize(char *s);
/* Does @url start with http:// or https:// (any case)? */
bool pushtext_is_http_url(const char *url);
/* @url with any user:password@ replaced by ***@ (malloc'd; NULL: ENOMEM). */
char *pushtext_redact_url(const char *url);
/*
 * "Authorization: Bearer TOKEN" into malloc'd *@out, without @token's
 * trailing whitespace (a token file's newline). 0, -EINVAL (empty, or a
 * control character that could add a header line) or -ENOMEM.
 */
int pushtext_auth_header(const char *token, char **out);

#endif
