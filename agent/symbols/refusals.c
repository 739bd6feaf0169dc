// SPDX-License-Identifier: MIT
/* Counting rootfs refusals: see agent/symbols/refusals.h. */
#include "agent/symbols/refusals.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/stacks/fold.h"

#define KEY_PATH_MAX 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fold *seen; /* (pid, reason, path) -> 1 */
static struct refusals_figures fig;
static refusals_notice_fn notice_fn;
static void *notice_ctx;
static time_t window; /* the second the notices below were given in */
static unsigned window_notices;

static void on_refusal(void *ctx, pid_t pid, const char *path, enum rootfs_reason why, int err)
{
	unsigned char key[8 + KEY_PATH_MAX];
	size_t plen = strnlen(path, KEY_PATH_MAX);
	uint32_t p = (uint32_t)pid, w = (uint32_t)why;
	uint64_t *slot;
	time_t now;

	(void)ctx;
	memcpy(key, &p, 4);
	memcpy(key + 4, &w, 4);
	memcpy(key + 8, path, plen);
	pthread_mutex_lock(&lock);
	if (!seen)
		goto out;
	if (fold_count(seen) >= REFUSALS_MAX_SEEN) {
		struct fold *f = fold_new();

		if (f) {
			fold_free(seen);
			seen = f;
		}
	}
	slot = fold_slot(seen, key, 8 + plen);
	if (slot && *slot)
		goto out;
	if (slot)
		*slot = 1;
	fig.by_reason[(unsigned)why < ROOTFS_R_N ? why : ROOTFS_R_OTHER]++;
	fig.total++;
	if (why == ROOTFS_R_OTHER && (err == EACCES || err == EPERM))
		fig.denied++;
	if (!notice_fn)
		goto out;
	now = time(NULL);
	if (now != window) {
		window = now;
		window_notices = 0;
	}
	if (window_notices >= REFUSALS_BURST) {
		fig.notices_dropped++;
		goto out;
	}
	window_notices++;
	notice_fn(notice_ctx, pid, path, rootfs_reason_name(why));
out:
	pthread_mutex_unlock(&lock);
}

int refusals_start(refusals_notice_fn fn, void *ctx)
{
	struct fold *f = fold_new();

	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&lock);
	fold_free(seen);
	seen = f;
	memset(&fig, 0, sizeof(fig));
	notice_fn = fn;
	notice_ctx = ctx;
	window = 0;
	window_notices = 0;
	pthread_mutex_unlock(&lock);
	rootfs_set_refusal_hook(on_refusal, NULL);
	return 0;
}

void refusals_stop(void)
{
	rootfs_set_refusal_hook(NULL, NULL);
	pthread_mutex_lock(&lock);
	fold_free(seen);
	seen = NULL;
	notice_fn = NULL;
	pthread_mutex_unlock(&lock);
}

void refusals_figures(struct refusals_figures *out)
{
	pthread_mutex_lock(&lock);
	*out = fig;
	pthread_mutex_unlock(&lock);
}

void refusals_escape(const char *in, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (!cap)
		return;
	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		char e[4];
		size_t el = 1;

		if (*p == '\\') {
			e[0] = '\\';
			e[1] = '\\';
			el = 2;
		} else if (*p < 0x20 || *p >= 0x7f) {
			e[0] = '\\';
			e[1] = 'x';
			e[2] = hex[*p >> 4];
			e[3] = hex[*p & 15];
			el = 4;
		} else {
			e[0] = (char)*p;
		}
		if (n + el + 4 > cap) { /* room for "..." and the NUL */
			if (cap >= 4) {
				memcpy(out + (n < cap - 4 ? n : cap - 4), "...", 4);
				return;
			}
			break;
		}
		memcpy(out + n, e, el);
		n += el;
	}
	out[n < cap ? n : cap - 1] = '\0';
}
