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
bool fc__live_has(struct fc__live *set, const void *p);
/* Free @set's tables: nobody may look at it any more (a set that lives
 * as long as the process, as the library's do, never needs it). */
void fc__live_fini(struct fc__live *set);
/* Remove every entry for which @drop says true (called with the lock
 * held, on live objects only). */
void fc__live_del_if(struct fc__live *set,
		     bool (*drop)(const void *p, const void *arg),
		     const void *arg);

#endif /* FC_LIB_LIVE_H */
