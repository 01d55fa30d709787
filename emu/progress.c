// SPDX-License-Identifier: MIT
/*
 * The cluster's progress: which boards' routers run in a call, in what
 * order and how often (emu/router.c moves the packets of one board). The
 * hosts of the boards drive it: a board's progress, a tool, the daemon.
 */
#include "cluster_internal.h"

#define BOARD_BUDGET 512 /* packets per board per pass */
#define PASSES	     4	 /* passes per call: several hops in one call */
#define WAIT_CALLS   3	 /* calls that leave another's board to it */

/*
 * The boards to route in this call: those this mapping claimed, and
 * another only once it has been pending for WAIT_CALLS of our calls in a
 * row. Its own process is polling, most likely, and a router run in the
 * owner's process keeps the router's state and rings in that core's cache
 * instead of moving them between cores at every packet; a board whose
 * owner is busy, asleep or dead is routed by the others soon enough. A
 * mapping that claimed no board (a tool) routes them all.
 */
static uint64_t boards_to_route(struct fcemu_cluster *c, uint64_t pending)
{
	uint64_t others = pending & ~c->mine, route = c->mine, b;
	unsigned int n;

	if (!c->mine)
		return ~0ull;
	for (b = c->waiting & ~others; b; b &= b - 1)
		c->waited[__builtin_ctzll(b)] = 0; /* routed meanwhile */
	for (b = others; b; b &= b - 1) {
		n = (unsigned int)__builtin_ctzll(b);
		if (c->waited[n] < WAIT_CALLS)
			c->waited[n]++;
		else
			route |= 1ull << n;
	}
	c->waiting = others;
	return route;
}

/*
 * Board @n's router, its lock held: what its own host injected takes the
 * express hop first where its route is idle (express.c), the rest the
 * router's way. RETURN VALUE: packets moved.
 */
static unsigned int run_router(struct fcemu_cluster *c, unsigned int n,
			       unsigned int budget)
{
	unsigned int moved = fcemu__express_injected(c, n, budget);

	return moved + fcemu__router_run(c, n, budget - moved);
}

uint64_t fcemu_cluster_progress(struct fcemu_cluster *c, unsigned int budget)
{
	unsigned int nodes = c->nodes;
	unsigned int pass, k, n, moved;
	uint64_t total = 0, pending, route, kicked = c->kicked;
	bool again = true;

	c->kicked = 0;
	fcemu__cluster_scan(c);
	pending = __atomic_load_n(&c->hdr->pending, __ATOMIC_SEQ_CST);
	/* Nothing anywhere to route (the second half of most steps). */
	if (!(pending | kicked | c->waiting) && !c->pump)
		return 0;
	route = (boards_to_route(c, pending) | kicked) &
		~c->remote; /* other hosts' routers run there */
	for (pass = 0; pass < PASSES && again && total < budget; pass++) {
		again = false;
		pending = (__atomic_load_n(&c->hdr->pending, __ATOMIC_SEQ_CST) |
			   kicked) &
			  route;
		for (k = 0; k < nodes && pending && total < budget; k++) {
			n = cl_wrap(c->next_board + k, nodes);
			if (!(pending & (1ull << n)))
				continue;
			/* Someone else is routing it: no need to wait. */
			if (fcemu__cluster_lock(c, n, false))
				continue;
			kicked &= ~(1ull << n);
			moved = run_router(
				c, n,
				budget - total < BOARD_BUDGET ?
					(unsigned int)(budget - total) :
					BOARD_BUDGET);
			fcemu__cluster_unlock(c, n);
			total += moved;
			if (moved)
				again = true;
		}
		c->next_board = cl_wrap(c->next_board + 1, nodes);
	}
	/* Kicked boards not routed here are left to anyone, as usual. */
	for (; kicked; kicked &= kicked - 1)
		cl_set_pending(c, (unsigned int)__builtin_ctzll(kicked));
	/* The links to other hosts: what the routers put on them leaves. */
	if (c->pump)
		total += c->pump(c->pump_arg);
	return total;
}

void fcemu_cluster_route_now(struct fcemu_cluster *c, unsigned int node)
{
	fcemu_cluster_inject_route(c, node);
	if (!(c->kicked & (1ull << node)))
		return;
	/* Busy elsewhere: its router is running, flag what is left for it. */
	if (fcemu__cluster_lock(c, node, false)) {
		c->kicked &= ~(1ull << node);
		cl_set_pending(c, node);
		return;
	}
	c->kicked &= ~(1ull << node);
	fcemu__router_run_injected(
		c, node,
		BOARD_BUDGET - fcemu__express_injected(c, node, BOARD_BUDGET));
	fcemu__cluster_unlock(c, node);
}
