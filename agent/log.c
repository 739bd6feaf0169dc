// SPDX-License-Identifier: MIT
#include "agent/log.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/json.h"

#define GUARD_SLOTS 64

static bool json_out;
static enum log_level threshold = LOG_INFO;
static unsigned long suppressed;

/* Flood guard: per message text (by a hash of it: messages may be built in
 * reused buffers), the minute it was last seen and how often. */
static struct {
	uint64_t hash;
	time_t minute;
	unsigned count;
} guard[GUARD_SLOTS];

static const char *const names[] = {"debug", "info", "warn", "error"};

int log_setup(const char *format, const char *level)
{
	if (format) {
		if (!strcmp(format, "json"))
			json_out = true;
		else if (!strcmp(format, "logfmt"))
			json_out = false;
		else
			return -EINVAL;
	}
	if (level) {
		size_t i;

		for (i = 0; i < 4 && strcmp(level, names[i]); i++)
			;
		if (i == 4)
			return -EINVAL;
		threshold = (enum log_level)i;
	}
	return 0;
}

unsigned long log_suppressed(void)
{
	return suppressed;
}

/* logfmt values: bare when safe, else quoted with \" \\ and \n escaped. */
static void logfmt_value(FILE *f, const char *v)
{
	bool bare = *v != '\0';

	for (const char *p = v; *p && bare; p++)
		bare = *p > ' ' && *p != '"' && *p != '=' && *p != '\\' && *p != 0x7f;
	if (bare) {
		fputs(v, f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static bool flood_guard(const char *msg)
{
	time_t minute = time(NULL) / 60;
	uint64_t h = 0xcbf29ce484222325ull;
	unsigned slot;

	for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	slot = (unsigned)(h % GUARD_SLOTS);
	if (guard[slot].hash != h || guard[slot].minute != minute) {
		if (guard[slot].count > LOG_BURST)
			fprintf(stderr,
				json_out ? "{\"level\":\"info\",\"msg\":\"earlier message repeated\","
					   "\"suppressed\":%u}\n"
					 : "level=info msg=\"earlier message repeated\" suppressed=%u\n",
				guard[slot].count - LOG_BURST);
		guard[slot].hash = h;
		guard[slot].minute = minute;
		guard[slot].count = 0;
	}
	if (++guard[slot].count > LOG_BURST) {
		suppressed++;
		return false;
	}
	return true;
}

void log_vkv(enum log_level lvl, const char *msg, va_list ap)
{
	char ts[96];
	struct timespec now;
	struct tm tm;
	FILE *f = stderr;

	if (lvl < threshold || !flood_guard(msg))
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (long)(now.tv_nsec / 1000000) % 1000);
	if (json_out) {
		fprintf(f, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":", ts, names[lvl]);
		json_write_string(f, msg);
	} else {
		fprintf(f, "ts=%s level=%s msg=", ts, names[lvl]);
		logfmt_value(f, msg);
	}
	for (;;) {
		const char *k = va_arg(ap, const char *), *v;

		if (!k)
			break;
		v = va_arg(ap, const char *);
		if (json_out) {
			fputc(',', f);
			json_write_string(f, k);
			fputc(':', f);
			json_write_string(f, v ? v : "");
		} else {
			fprintf(f, " %s=", k);
			logfmt_value(f, v ? v : "");
		}
	}
	fputs(json_out ? "}\n" : "\n", f);
	fflush(f);
}

void log_kv(enum log_level lvl, const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	log_vkv(lvl, msg, ap);
	va_end(ap);
}
