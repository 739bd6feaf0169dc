// SPDX-License-Identifier: MIT
#include "tests/unit/testalloc.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#if defined(__SANITIZE_ADDRESS__)
#define TESTALLOC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESTALLOC_ASAN 1
#endif
#endif

#ifdef TESTALLOC_ASAN
bool tl_alloc_available(void)
{
	return false;
}

void tl_alloc_fail_at(long n)
{
}

bool tl_alloc_failed(void)
{
	return false;
}

long tl_alloc_live(void)
{
	return 0;
}

void tl_alloc_reset(void)
{
}
#else
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);

static long countdown = -1; /* fail when it reaches 0 */
static bool failed, counting;
static long live;

bool tl_alloc_available(void)
{
	return true;
}

void tl_alloc_fail_at(long n)
{
	countdown = n;
	failed = false;
	counting = n >= 0;
	live = 0;
}

bool tl_alloc_failed(void)
{
	return failed;
}

long tl_alloc_live(void)
{
	return live;
}

void tl_alloc_reset(void)
{
	countdown = -1;
	counting = false;
}

static bool fail_now(void)
{
	if (countdown < 0)
		return false;
	if (countdown-- == 0) {
		failed = true;
		errno = ENOMEM; /* as glibc's allocators do */
		return true;
	}
	return false;
}

void *malloc(size_t n)
{
	void *p = fail_now() ? NULL : __libc_malloc(n);

	live += counting && p;
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p = fail_now() ? NULL : __libc_calloc(n, size);

	live += counting && p;
	return p;
}

void *realloc(void *old, size_t n)
{
	void *p = fail_now() ? NULL : __libc_realloc(old, n);

	live += counting && p && !old;
	return p;
}

void free(void *p)
{
	live -= counting && p;
	__libc_free(p);
}
#endif

void tl_alloc_require(void)
{
	if (!tl_alloc_available())
		skip();
}

long tl_alloc_torture(void (*step)(void *ctx), void *ctx, long max)
{
	for (long i = 0; i < max; i++) {
		bool hit;

		tl_alloc_fail_at(i);
		step(ctx);
		hit = tl_alloc_failed();
		tl_alloc_reset();
		if (tl_alloc_live() > 0)
			fail_msg("allocation %ld failed: %ld blocks leaked", i, tl_alloc_live());
		if (!hit)
			return i;
	}
	fail_msg("allocations still failing after %ld runs", max);
	return max;
}
