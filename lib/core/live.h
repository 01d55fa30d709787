/* SPDX-License-Identifier: MIT */
/*
 * Sets of live objects (lib/core/live.c): what a caller hands back (a channel)
 * is looked for here before it is followed, so that a closed one is
 * refused rather than read. Looking takes no lock; adding and removing
 * take the set's.
 */
#ifndef FC_LIB_LIVE_H
#define FC_LIB_LIVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct fc__live_table;

struct fc__live {
	pthread_mutex_t lock;
	uint32_t seq; /* odd while the table changes */
	struct fc__live_table *table;
};

#define FC__LIVE_INIT                              \
	{                                          \
		PTHREAD_MUTEX_INITIALIZER, 0, NULL \
	}

/* RETURN VALUE: 0, or -ENOMEM. */
int fc__live_add(struct fc__live *set, const void *p);
/* RETURN VALUE: true if @p was there. */
bool fc__live_del(struct fc__live *set, const void *p);
bool fc__live_has_slow(struct fc__live *set, const void *p);

/*
 * What this thread found last, and under which count: a channel used
 * over and over is found again with two loads of the count and no probe.
 * Per thread, so that no two finds tear an entry; a few pairs of entries,
 * by the pointer, the newer first, so that a thread driving a few channels
 * in turn (both ends of a ping-pong, a neighbour exchange) keeps them all.
 * Any change to a set moves its count on, and its entries are then looked
 * for anew.
 */
#define FC__LIVE_PAIRS 4
struct fc__live_hit {
	const struct fc__live *set;
	const void *p;
	uint32_t seq;
};
extern __thread struct fc__live_hit fc__live_hits[FC__LIVE_PAIRS][2];

static inline struct fc__live_hit *fc__live_pair_of(const void *p)
{
	/* channels are 32-byte blocks of malloc's: neighbours differ here */
	return fc__live_hits[((uintptr_t)p >> 5) % FC__LIVE_PAIRS];
}

static inline bool fc__live_hit_is(const struct fc__live_hit *h,
				   const struct fc__live *set, const void *p,
				   uint32_t seq)
{
	return h->p == p && h->set == set && h->seq == seq;
}

static inline bool fc__live_has(struct fc__live *set, const void *p)
{
	uint32_t seq = __atomic_load_n(&set->seq, __ATOMIC_ACQUIRE);
	const struct fc__live_hit *h = fc__live_pair_of(p);

	/* an entry's count is even (taken while no change was under way):
	 * an odd count matches none */
	if (p && (fc__live_hit_is(&h[0], set, p, seq) ||
		  fc__live_hit_is(&h[1], set, p, seq)))
		return true;
	return fc__live_has_slow(set, p);
}

/* Free @set's tables: nobody may look at it any more (a set that lives
 * as long as the process, as the library's do, never needs it). */
void fc__live_fini(struct fc__live *set);
/* Remove every entry for which @drop says true (called with the lock
 * held, on live objects only). */
void fc__live_del_if(struct fc__live *set,
		     bool (*drop)(const void *p, const void *arg),
		     const void *arg);

#endif /* FC_LIB_LIVE_H */
