// SPDX-License-Identifier: MIT
/*
 * The collectives' lock and the devices that have groups: what every
 * collective file looks up, kept apart so that none of them calls back
 * into the file that makes groups (group.c).
 */
#include <pthread.h>

#include "coll_internal.h"

static pthread_mutex_t coll_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fc__coll_dev *coll_devs;

void fc__coll_lock(void)
{
	pthread_mutex_lock(&coll_lock);
}

void fc__coll_unlock(void)
{
	pthread_mutex_unlock(&coll_lock);
}

bool fc__coll_trylock(void)
{
	return pthread_mutex_trylock(&coll_lock) == 0;
}

struct fc__coll_dev *fc__coll_devs(void)
{
	return coll_devs;
}

struct fc__coll_dev **fc__coll_devs_head(void)
{
	return &coll_devs;
}

bool fc__group_live(const struct fc_group *g)
{
	struct fc__coll_dev *cd;
	struct fc_group *x;

	if (!g)
		return false;
	for (cd = coll_devs; cd; cd = cd->next)
		for (x = cd->groups; x; x = x->next)
			if (x == g)
				return true;
	return false;
}
