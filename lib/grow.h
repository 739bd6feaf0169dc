/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_GROW_H
#define CGPERF_LIB_GROW_H

/*
 * Arrays that grow by doubling, the one way (as git's ALLOC_GROW): the
 * array pointer and its capacity are the caller's fields, the count too.
 *
 *	if (GROW_ARRAY(r->objs, r->nobjs, r->capobjs, 64) < 0)
 *		return -ENOMEM;
 *	r->objs[r->nobjs++] = obj;
 *
 * GROW_ARRAY makes room for element @n: when @n reaches @cap the array is
 * reallocated to twice @cap elements (@first when empty). 0, or -ENOMEM
 * (also when the byte size would overflow), and then @v and @cap are
 * unchanged and still valid. @v and @cap are lvalues evaluated more than
 * once: pass plain fields, not expressions with side effects.
 */

#include <errno.h>
#include <stddef.h>

/* The array @v of *@cap elements of @size bytes, reallocated to twice as
 * many (@first when *@cap is 0), *@cap updated; NULL (nothing changed) on
 * failure. */
void *grow_array(void *v, size_t *cap, size_t size, size_t first);

#define GROW_ARRAY(v, n, cap, first)                                                          \
	__extension__({                                                                       \
		size_t grow_cap_ = (cap);                                                     \
		void *grow_v_ = (size_t)(n) < grow_cap_ ? (void *)(v)                         \
						       : grow_array((v), &grow_cap_,          \
								    sizeof(*(v)), (first));   \
		if (grow_v_) {                                                                \
			(v) = grow_v_;                                                        \
			(cap) = grow_cap_;                                                    \
		}                                                                             \
		grow_v_ ? 0 : -ENOMEM;                                                        \
	})

#endif
