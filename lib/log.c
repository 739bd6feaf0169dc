// SPDX-License-Identifier: MIT
#include "lib/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/hashmap.h"
#include "lib/json.h"

#define GUARD_SLOTS 64

/*
 * Threads share this module (the exporter's main loop and its HTTP
 * threads): one mutex covers the settings, the flood guard and the writing
 * of a line, so a line is decided and written whole, never interleaved with
 * another thread's. Logging is rare next to the work it reports; a lock held
 * for one line costs nothing measurable.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool json_out;
static enum log_level threshold = LOG_INFO;
static unsigned long suppressed;
static FILE *out_stream; /* NULL: stderr */

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
	bool json = false;
	size_t lvl = 0;

	if (format && strcmp(format, "json") && strcmp(format, "logfmt"))
		return -EINVAL;
	json = format && !strcmp(format, "json");
	if (level) {
		for (lvl = 0; lvl < 4 && strcmp(level, names[lvl]); lvl++)
			;
		if (lvl == 4)
			return -EINVAL;
	}
	/* Both checked: a bad level leaves the format as it was, too. */
	pthread_mutex_lock(&lock);
	if (format)
		json_out = json;
	if (level)
		threshold = (enum log_level)lvl;
	pthread_mutex_unlock(&lock);
	return 0;
}

void log_set_stream(FILE *f)
{
	pthread_mutex_lock(&lock);
	out_stream = f;
	pthread_mutex_unlock(&lock);
}

unsigned long log_suppressed(void)
{
	unsigned long n;

	pthread_mutex_lock(&lock);
	n = suppressed;
	pthread_mutex_unlock(&lock);
	return n;
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

/* Called with the lock held. */
static bool flood_guard(FILE *f, const char *msg)
{
	time_t minute = time(NULL) / 60;
	uint64_t h = hash_fnv1a_str(HASH_FNV_OFFSET, msg);
	unsigned slot;

	slot = (unsigned)(h % GUARD_SLOTS);
	if (guard[slot].hash != h || guard[slot].minute != minute) {
		if (guard[slot].count > LOG_BURST)
			fprintf(f,
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
	FILE *f;

	pthread_mutex_lock(&lock);
	f = out_stream ? out_stream : stderr;
	if (lvl < threshold || (lvl > LOG_DEBUG && !flood_guard(f, msg))) {
		pthread_mutex_unlock(&lock);
		return;
	}
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
	pthread_mutex_unlock(&lock);
}

void log_kv(enum log_level lvl, const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	log_vkv(lvl, msg, ap);
	va_end(ap);
}
