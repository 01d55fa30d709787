// SPDX-License-Identifier: MIT
/*
 * Peers' liveness: whether a node a request depends on has died or left
 * (the backend's node state, asked now and then: fc__peer_check() in
 * transport.h is the inline way), with a grace for what it sent to
 * drain. fabric.c asks here and is not called back: where a check must
 * drain the board first (fc__peer_check_open), its caller passes
 * progress in.
 */
#include <errno.h>

#include "transport_internal.h"

bool fc__peer_down_at(struct fc_dev *dev, uint32_t node, uint64_t now)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__peer *p = &fab->peers[node];
	int state;

	if (node == fab->world.rank || node >= FC_MAX_NODES)
		return false;
	if (!p->down_ns && now - p->checked_ns >= PEER_CHECK_NS) {
		p->checked_ns = now;
		fc__lock(&dev->lock);
		state = dev->be->node_state ? dev->be->node_state(dev, node) :
					      -EOPNOTSUPP;
		fc__unlock(&dev->lock);
		if (state == FC__NODE_EXITED || state == FC__NODE_DEAD) {
			p->down_ns = now;
			p->down_polls = 0;
			/* A peer that closed in order had its sends done:
			 * they are in the fabric, give them time. */
			p->grace_ns = state == FC__NODE_EXITED ?
					      PEER_EXIT_GRACE_NS :
					      PEER_GRACE_NS;
		}
	}
	if (!p->down_ns)
		return false;
	/*
	 * Seen down: packets it sent may still be on the way; drain first,
	 * for a while and for a number of our own looks (a process the
	 * scheduler leaves out for the whole grace has not looked).
	 */
	if (p->down_polls < PEER_GRACE_POLLS) {
		p->down_polls++;
		return false;
	}
	return now - p->down_ns >= p->grace_ns;
}

bool fc__peer_down(struct fc_dev *dev, uint32_t node)
{
	return fc__peer_down_at(dev, node, fc__now_ns());
}

/* A peer may come back (closed, then opened its board again). */
static void peer_recheck(struct fc__fabric *fab, uint32_t node)
{
	fab->peers[node].down_ns = 0;
	fab->peers[node].checked_ns = 0;
	fab->peers[node].checked_ticks = 0;
}

/* Before a new request to @node. RETURN VALUE: 0, or -EHOSTDOWN when it
 * has died or left (one that came back is usable again). @fresh: ask the
 * backend even if it said alive lately. */
static int peer_check(struct fc_dev *dev, uint32_t node, bool fresh)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__peer *p;
	uint64_t now;
	int state;

	if (node == fab->world.rank || !dev->be->node_state ||
	    node >= FC_MAX_NODES)
		return 0;
	/*
	 * Asking the backend may read /proc or enter the kernel: once per
	 * PEER_CHECK_NS is enough for a peer seen alive. A death in between
	 * is caught by the request's wait (fc__peer_down), in bounded time.
	 */
	p = &fab->peers[node];
	now = fc__now_ns();
	if (!fresh && !p->down_ns && p->checked_ns &&
	    now - p->checked_ns < PEER_CHECK_NS) {
		p->checked_ticks = fc__ticks(); /* the inline check's again */
		return 0;
	}
	fc__lock(&dev->lock);
	state = dev->be->node_state(dev, node);
	fc__unlock(&dev->lock);
	if (state == FC__NODE_EXITED || state == FC__NODE_DEAD)
		return -EHOSTDOWN;
	peer_recheck(fab, node);
	p->checked_ns = now;
	p->checked_ticks = fc__ticks();
	return 0;
}

int fc__peer_check_slow(struct fc_dev *dev, uint32_t node)
{
	return peer_check(dev, node, false);
}

int fc__peer_check_fresh(struct fc_dev *dev, uint32_t node)
{
	return peer_check(dev, node, true);
}

int fc__peer_check_open(struct fc_dev *dev, uint32_t node, uint32_t port,
			bool (*progress)(struct fc_dev *dev))
{
	unsigned int i, idle;
	struct fc__src *s;
	int state;

	if (!fc__peer_check(dev, node))
		return 0;
	fc__lock(&dev->lock);
	state = dev->be->node_state(dev, node);
	fc__unlock(&dev->lock);
	/* Closed in order: its sends were done, and may still be on their
	 * way; the channel's receives tell when nothing more comes. */
	if (state != FC__NODE_DEAD)
		return 0;
	/* Died: what the board holds of it is taken first (bounded: the
	 * fabric holds so much), then it counts if any is for @port. */
	for (i = 0, idle = 0; i < PEER_OPEN_ROUNDS && idle < 8; i++)
		idle = progress(dev) ? 0 : idle + 1;
	s = fc__src_find(dev->fab, port, node);
	return s && (s->q_head || s->active) ? 0 : -EHOSTDOWN;
}
