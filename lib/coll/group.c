// SPDX-License-Identifier: MIT
/*
 * Groups: the world, and groups split or duplicated from another.
 *
 * Every group's messages go on the links (coll_link.c), one channel per
 * world peer on one library port, each message naming its group by the
 * id its receiver gave it: when a group is made, each member reserves an
 * id and tells the others in the split's exchange. So a process may have
 * as many groups as memory allows. A group's context number, carried in
 * every message too, tells it apart from an earlier group that had the
 * same id.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"
#include "transport.h"

static bool poller_added;

static void group_release(struct fc_group *g);

/* fc_close: the device's groups go with it (their handles turn stale). */
static void coll_dev_close(struct fc_dev *dev)
{
	struct fc__coll_dev **pp, *cd;

	fc__coll_lock();
	for (pp = fc__coll_devs_head(); (cd = *pp) && cd->dev != dev;
	     pp = &cd->next)
		;
	if (cd) {
		while (cd->groups)
			group_release(cd->groups);
		fc__links_fini(cd);
		*pp = cd->next;
		free(cd);
	}
	fc__coll_unlock();
}

struct fc__coll_dev *fc__coll_dev_get(struct fc_dev *dev, bool create)
{
	struct fc__coll_dev *cd, **head = fc__coll_devs_head();

	for (cd = *head; cd && cd->dev != dev; cd = cd->next)
		;
	if (cd || !create)
		return cd;
	/* every wait of the process moves the collectives (progress.c) */
	if (!poller_added) {
		if (fc__poller_add(fc__coll_poll, FC__COLL_POLL_ARG))
			return NULL;
		poller_added = true;
	}
	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return NULL;
	cd->dev = dev;
	cd->size = dev->fab->world.size;
	cd->crowded = -1;
	if (fc__links_init(cd)) {
		free(cd);
		return NULL;
	}
	cd->next = *head;
	*head = cd;
	dev->on_close = coll_dev_close;
	return cd;
}

static struct fc_group *group_new(struct fc__coll_dev *cd, uint32_t size)
{
	struct fc_group *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->world = calloc(size, sizeof(*g->world));
	g->peer_id = calloc(size, sizeof(*g->peer_id));
	if (!g->world || !g->peer_id) {
		free(g->world);
		free(g->peer_id);
		free(g);
		return NULL;
	}
	g->dev = cd->dev;
	g->cd = cd;
	g->size = size;
	g->refs = 1;
	g->next = cd->groups;
	cd->groups = g;
	return g;
}

/*
 * Unlink and free @g. What its members still send it is dropped on
 * arrival: its id names no group, or a later one with another context.
 */
static void group_release(struct fc_group *g)
{
	struct fc__coll_dev *cd = g->cd;
	struct fc_group **pp;

	fc__group_drop(g);
	fc__group_msgs_drop(g);
	for (pp = &cd->groups; *pp != g; pp = &(*pp)->next)
		;
	*pp = g->next;
	if (cd->world == g)
		cd->world = NULL;
	fc__id_release(cd, g->id);
	free(g->world);
	free(g->peer_id);
	free(g);
}

FC__EXPORT int fc_group_world(struct fc_dev *dev, struct fc_group **groupp)
{
	struct fc__coll_dev *cd;
	struct fc_group *g;
	uint32_t r;
	int ret = 0;

	if (!dev || !groupp)
		return -EINVAL;
	if (!dev->fab)
		return -ENOTCONN;
	fc__coll_lock();
	cd = fc__coll_dev_get(dev, true);
	if (!cd) {
		ret = -ENOMEM;
		goto out;
	}
	if (cd->world) {
		cd->world->refs++;
		*groupp = cd->world;
		goto out;
	}
	g = group_new(cd, dev->fab->world.size);
	if (!g) {
		ret = -ENOMEM;
		goto out;
	}
	g->rank = dev->fab->world.rank;
	for (r = 0; r < g->size; r++)
		g->world[r] = r; /* and id 0 on every member */
	g->ctx = 1;
	fc__id_bind(cd, g);
	cd->world = g;
	*groupp = g;
out:
	fc__coll_unlock();
	return ret;
}

/* What each member of the parent tells the others when it splits. */
struct split_entry {
	int32_t color, key;
	uint32_t id; /* its name for the new group */
	uint32_t zero;
};

static int by_key(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

static int split_locked(struct fc_group *parent, int color, int key,
			int timeout_ms, struct fc_group **newp)
{
	struct fc__coll_dev *cd = parent->cd;
	struct split_entry mine = { color, key, 0, 0 }, *all;
	struct fc__coll_args a = {
		.kind = FC__SPLIT,
		.dtype = FC_UINT8,
		.count = sizeof(mine),
		.sendbuf = &mine,
	};
	uint64_t *order = NULL;
	struct fc_group *g;
	uint32_t i, n = 0, me = 0;
	int ret;

	all = calloc(parent->size, sizeof(*all));
	if (!all)
		return -ENOMEM;
	/* reserved before the others can know it: what they send for the
	 * new group before it is made here waits for it */
	ret = fc__id_reserve(cd, &mine.id);
	if (ret) {
		free(all);
		return ret;
	}
	a.recvbuf = all;
	fc__coll_unlock();
	ret = fc__coll_run(parent, &a, timeout_ms, NULL);
	fc__coll_lock();
	if (ret)
		goto out;
	parent->children++;
	if (color == FC_GROUP_NONE) {
		*newp = NULL;
		goto out;
	}
	/* members by (key, parent rank): the key as an order-keeping unsigned */
	order = calloc(parent->size, sizeof(*order));
	ret = -ENOMEM;
	if (!order)
		goto out;
	for (i = 0; i < parent->size; i++)
		if (all[i].color == color)
			order[n++] =
				(uint64_t)((uint32_t)all[i].key ^ 0x80000000u)
					<< 32 |
				i;
	qsort(order, n, sizeof(*order), by_key);
	g = group_new(cd, n);
	if (!g)
		goto out;
	for (i = 0; i < n; i++) {
		uint32_t pr = (uint32_t)order[i];

		g->world[i] = parent->world[pr];
		g->peer_id[i] = all[pr].id;
		if (pr == parent->rank)
			me = i;
	}
	g->rank = me;
	g->id = mine.id;
	g->ctx = (parent->ctx * 2654435761u) ^ (parent->children << 16) ^
		 (uint32_t)color;
	fc__id_bind(cd, g);
	*newp = g;
	free(order);
	free(all);
	return 0;
out:
	fc__id_release(cd, mine.id);
	free(order);
	free(all);
	return ret;
}

FC__EXPORT int fc_group_split(struct fc_group *group, int color, int key,
			      int timeout_ms, struct fc_group **newp)
{
	int ret;

	if (!newp || color < FC_GROUP_NONE)
		return -EINVAL;
	fc__coll_lock();
	ret = fc__group_live(group) ?
		      split_locked(group, color, key, timeout_ms, newp) :
		      -EINVAL;
	fc__coll_unlock();
	return ret;
}

FC__EXPORT int fc_group_dup(struct fc_group *group, int timeout_ms,
			    struct fc_group **newp)
{
	int ret;

	if (!newp)
		return -EINVAL;
	fc__coll_lock();
	ret = fc__group_live(group) ? split_locked(group, 0, (int)group->rank,
						   timeout_ms, newp) :
				      -EINVAL;
	fc__coll_unlock();
	return ret;
}

FC__EXPORT int fc_group_free(struct fc_group *group)
{
	int ret = 0;

	fc__coll_lock();
	if (!fc__group_live(group))
		ret = -EINVAL;
	else if (--group->refs == 0)
		group_release(group);
	fc__coll_unlock();
	return ret;
}

FC__EXPORT int fc_group_rank(const struct fc_group *group)
{
	int ret;

	fc__coll_lock();
	ret = fc__group_live(group) ? (int)group->rank : -EINVAL;
	fc__coll_unlock();
	return ret;
}

FC__EXPORT int fc_group_size(const struct fc_group *group)
{
	int ret;

	fc__coll_lock();
	ret = fc__group_live(group) ? (int)group->size : -EINVAL;
	fc__coll_unlock();
	return ret;
}

FC__EXPORT int fc_group_world_rank(const struct fc_group *group, uint32_t rank,
				   uint32_t *world)
{
	int ret = -EINVAL;

	fc__coll_lock();
	if (world && fc__group_live(group) && rank < group->size) {
		*world = group->world[rank];
		ret = 0;
	}
	fc__coll_unlock();
	return ret;
}
