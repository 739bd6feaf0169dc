// SPDX-License-Identifier: MIT
/* mountinfo lines: see lib/mountinfo.h. */
#include "lib/mountinfo.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static bool octal(char c, char max)
{
	return c >= '0' && c <= max;
}

size_t mountinfo_unescape(char *s, size_t len)
{
	size_t i = 0, o = 0;

	while (i < len) {
		if (s[i] == '\\' && i + 3 < len && octal(s[i + 1], '3') && octal(s[i + 2], '7') &&
		    octal(s[i + 3], '7')) {
			s[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 4;
		} else {
			s[o++] = s[i++];
		}
	}
	s[o] = '\0';
	return o;
}

/* The next space-separated field of *@p, NUL-terminated; NULL at the end. */
static char *next_field(char **p)
{
	char *f = *p + strspn(*p, " ");

	if (!*f) {
		*p = f;
		return NULL;
	}
	*p = f + strcspn(f, " ");
	if (**p)
		*(*p)++ = '\0';
	return f;
}

int mountinfo_parse_line(char *line, struct mountinfo_entry *e)
{
	char *field[6], *p = line, *f, *fstype, *source, *super;

	/* id parent maj:min root mountpoint options */
	for (size_t i = 0; i < 6; i++)
		if (!(field[i] = next_field(&p)))
			return -EINVAL;
	/* optional fields up to the lone "-" */
	while ((f = next_field(&p)) && strcmp(f, "-"))
		;
	if (!f || !(fstype = next_field(&p)) || !(source = next_field(&p)))
		return -EINVAL;
	super = next_field(&p);
	e->fstype = fstype;
	e->source = source;
	e->super = super ? super : "";
	e->root = field[3];
	mountinfo_unescape(field[3], strlen(field[3]));
	e->point = field[4];
	e->point_len = mountinfo_unescape(field[4], strlen(field[4]));
	return 0;
}

int mountinfo_foreach(char *text, int (*cb)(void *ctx, const struct mountinfo_entry *e),
		      void *ctx)
{
	char *line = text;

	while (line && *line) {
		char *nl = strchr(line, '\n');
		struct mountinfo_entry e;
		int r;

		if (nl)
			*nl = '\0';
		if (!mountinfo_parse_line(line, &e) && (r = cb(ctx, &e)) != 0)
			return r;
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}
