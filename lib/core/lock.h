/* SPDX-License-Identifier: MIT */
/*
 * The library's mutex for the device and fabric locks: one word, taken and
 * given back inline when nobody waits (a compare-and-swap, a decrement),
 * so that the channel calls' hot paths make no call for it; a thread that
 * finds it held spins briefly, then sleeps on a futex (lock.c).
 * The word: 0 free, 1 held, 2 held and a thread may sleep on it.
 */
#ifndef FC_LIB_LOCK_H
#define FC_LIB_LOCK_H

#include <stdbool.h>
#include <stdint.h>

struct fc__lock {
	uint32_t v;
};

/* lock.c: the ways for a lock found held, and for waking a sleeper */
void fc__lock_slow(struct fc__lock *l);
void fc__unlock_slow(struct fc__lock *l);

static inline void fc__lock_init(struct fc__lock *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELAXED);
}

static inline void fc__lock(struct fc__lock *l)
{
	uint32_t free = 0;

	if (!__atomic_compare_exchange_n(&l->v, &free, 1, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		fc__lock_slow(l);
}

static inline void fc__unlock(struct fc__lock *l)
{
	/* 1 -> 0: nobody sleeps on it; 2 -> 1: someone may, wake one */
	if (__atomic_sub_fetch(&l->v, 1, __ATOMIC_RELEASE))
		fc__unlock_slow(l);
}

#endif /* FC_LIB_LOCK_H */
