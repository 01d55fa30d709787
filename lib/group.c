// SPDX-License-Identifier: MIT
/*
 * Groups: the world, and groups split or duplicated from another.
 *
 * Each group has a channel endpoint (port) of its own on every member,
 * one of the FC__GROUP_PORTS library ports, so that its messages never
 * meet another group's. The world's is the first; a new group's is agreed
 * by its parent's members, from what every one of them has in use (two
 * groups with no member in common may share a port). A group's context
 * number, carried in every message, tells it apart from an earlier group
 * on the same port.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"
#include "fabric_internal.h"

#define WORLD_PORT_BIT 1u

static pthread_mutex_t coll_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fc__coll_dev *coll_devs;
static bool poller_added;

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

static void group_release(struct fc_group *g);

/* fc_close: the device's groups go with it (their handles turn stale). */
static void coll_dev_close(struct fc_dev *dev)
{
	struct fc__coll_dev **pp, *cd;

	fc__coll_lock();
	for (pp = &coll_devs; (cd = *pp) && cd->dev != dev; pp = &cd->next)
		;
	if (cd) {
		while (cd->groups)
			group_release(cd->groups);
		*pp = cd->next;
		free(cd);
	}
	fc__coll_unlock();
}

struct fc__coll_dev *fc__coll_dev_get(struct fc_dev *dev, bool create)
{
	struct fc__coll_dev *cd;

	for (cd = coll_devs; cd && cd->dev != dev; cd = cd->next)
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
	cd->ports_used = WORLD_PORT_BIT;
	cd->next = coll_devs;
	coll_devs = cd;
	dev->on_close = coll_dev_close;
	return cd;
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

/* The channel to member @member, opened on first use. */
int fc__group_chan(struct fc_group *g, uint32_t member, struct fc_chan **chp)
{
	struct fc__fabric *fab = g->dev->fab;
	int ret = 0;

	if (!g->chans[member]) {
		fc__fab_lock(fab);
		ret = fc__chan_open(g->dev, g->world[member], g->port,
				    &g->chans[member]);
		fc__fab_unlock(fab);
	}
	*chp = g->chans[member];
	return ret;
}

static struct fc_group *group_new(struct fc__coll_dev *cd, uint32_t size)
{
	struct fc_group *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->world = calloc(size, sizeof(*g->world));
	g->chans = calloc(size, sizeof(*g->chans));
	if (!g->world || !g->chans) {
		free(g->world);
		free(g->chans);
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
 * Unlink and free @g. What is left in its channels stays there: it may be
 * a message of another process's next job already, and the handshake
 * (coll_hello.c) of the next group on the port reads away what is stale.
 */
static void group_release(struct fc_group *g)
{
	struct fc__coll_dev *cd = g->cd;
	struct fc_group **pp;
	uint32_t m;

	fc__group_drop(g);
	for (m = 0; m < g->size; m++)
		if (g->chans[m])
			fc_chan_close(g->chans[m]);
	for (pp = &cd->groups; *pp != g; pp = &(*pp)->next)
		;
	*pp = g->next;
	if (cd->world == g)
		cd->world = NULL;
	else
		cd->ports_used &= ~(1u << (g->port - FC_CHAN_PORT_GROUP0));
	free(g->world);
	free(g->chans);
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
		g->world[r] = r;
	g->port = FC_CHAN_PORT_GROUP0;
	g->ctx = 1;
	cd->world = g;
	*groupp = g;
out:
	fc__coll_unlock();
	return ret;
}

/* What each member of the parent tells the others when it splits. */
struct split_entry {
	int32_t color, key;
	uint32_t ports_used, last_port;
};

static int by_key(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* The port for the new groups: free on every member, after the last one
 * any of them took. RETURN VALUE: its index, or -ENOSPC. */
static int pick_port(const struct split_entry *all, uint32_t n)
{
	uint32_t used = 0, last = 0, i, p;

	for (i = 0; i < n; i++) {
		used |= all[i].ports_used;
		if (all[i].last_port > last)
			last = all[i].last_port;
	}
	for (i = 1; i <= FC__GROUP_PORTS; i++) {
		p = (last + i) % FC__GROUP_PORTS;
		if (!(used & (1u << p)))
			return (int)p;
	}
	return -ENOSPC;
}

static int split_locked(struct fc_group *parent, int color, int key,
			int timeout_ms, struct fc_group **newp)
{
	struct fc__coll_dev *cd = parent->cd;
	struct split_entry mine = { color, key, cd->ports_used, cd->last_port },
			   *all;
	struct fc__coll_args a = {
		.kind = FC__SPLIT,
		.dtype = FC_UINT8,
		.count = sizeof(mine),
		.sendbuf = &mine,
	};
	uint64_t *order = NULL;
	struct fc_group *g;
	uint32_t i, n = 0, me = 0;
	int port, ret;

	all = calloc(parent->size, sizeof(*all));
	if (!all)
		return -ENOMEM;
	a.recvbuf = all;
	fc__coll_unlock();
	ret = fc__coll_run(parent, &a, timeout_ms, NULL);
	fc__coll_lock();
	if (ret)
		goto out;
	port = pick_port(all, parent->size);
	parent->children++;
	if (color == FC_GROUP_NONE) {
		*newp = NULL;
		goto out;
	}
	ret = port;
	if (port < 0)
		goto out;
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
		if (pr == parent->rank)
			me = i;
	}
	g->rank = me;
	g->port = FC_CHAN_PORT_GROUP0 + (uint32_t)port;
	g->ctx = (parent->ctx * 2654435761u) ^ (parent->children << 16) ^
		 (uint32_t)color ^ (g->port << 24);
	g->ctx = g->ctx ? g->ctx : 1; /* 0 marks the handshake's messages */
	cd->ports_used |= 1u << port;
	cd->last_port = (uint32_t)port;
	*newp = g;
	ret = 0;
out:
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
