// SPDX-License-Identifier: MIT
/*
 * The slow ways of the library's mutex (lock.h): a lock found held is
 * tried again for a short while (its holder is most likely on the other
 * core, about to give it back), then its word is set to 2 and the thread
 * sleeps on it until woken; the holder that gives back a word of 2 clears
 * it and wakes one sleeper, which sets it to 2 again as it takes it (others
 * may still sleep). Nothing spins for long: two cores are shared.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lock.h"

#define LOCK_SPINS 100

static void futex(uint32_t *word, int op, uint32_t val)
{
	syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

void fc__lock_slow(struct fc__lock *l)
{
	uint32_t free;
	unsigned int i;

	for (i = 0; i < LOCK_SPINS; i++) {
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
		futex(&l->v, FUTEX_WAIT_PRIVATE, 2);
}

void fc__unlock_slow(struct fc__lock *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
	futex(&l->v, FUTEX_WAKE_PRIVATE, 1);
}
