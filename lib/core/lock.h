/* SPDX-License-Identifier: MIT */
/*
 * The library's mutex for the device and fabric locks: one word, taken and
 * given back inline when nobody waits (a compare-and-swap, a decrement),
 * so that the channel calls' hot paths make no call for it. A thread that
 * finds it held tries again for a short while (its holder is most likely
 * on the other core, about to give it back), then sets the word to 2 and
 * sleeps on it; a holder that gives back a word of 2 clears it and wakes
 * one sleeper, which sets it to 2 again as it takes it (others may still
 * sleep). Nothing spins for long: two cores are shared. All of it here,
 * so that every folder of lib/ may use it and call no other folder.
 * The word: 0 free, 1 held, 2 held and a thread may sleep on it.
 */
#ifndef FC_LIB_LOCK_H
#define FC_LIB_LOCK_H

#include <linux/futex.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FC__LOCK_SPINS 100

struct fc__lock {
	uint32_t v;
};

static inline void fc__futex(uint32_t *word, int op, uint32_t val)
{
	syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

/* The ways for a lock found held, and for waking a sleeper: out of line,
 * so that the inline ways stay short. */
static __attribute__((noinline, unused)) void fc__lock_slow(struct fc__lock *l)
{
	uint32_t free;
	unsigned int i;

	for (i = 0; i < FC__LOCK_SPINS; i++) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		free = 0;
		if (__atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&l->v, &free, 1, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
	}
	while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE))
		fc__futex(&l->v, FUTEX_WAIT_PRIVATE, 2);
}

static __attribute__((noinline, unused)) void
fc__unlock_slow(struct fc__lock *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
	fc__futex(&l->v, FUTEX_WAKE_PRIVATE, 1);
}

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
