// SPDX-License-Identifier: MIT
/*
 * The routers of an emulated cluster: for every board with input waiting,
 * under that board's lock, move packets from its inputs (the injection
 * ring, and each link port's rings of both VCs, served round robin) to the
 * output its routing table names. An output without credit holds the
 * packet back at its input and the router serves the other inputs: a
 * blocked packet is never dropped. Only undeliverable packets (no route,
 * destination gone) are dropped, and counted in ROUTER_DROPS.
 */
#include <endian.h>
#include <errno.h>

#include "cluster_internal.h"

#define BURST		16	/* packets from one input before the next */
#define BOARD_BUDGET	512	/* packets per board per pass */
#define PASSES		4	/* passes per call: several hops in one call */

/* The VC a packet leaves on (hw.h): 1 across a dateline, its own VC in
 * the same dimension, and 0 when it enters or turns. */
static unsigned int out_vc(uint32_t entry, unsigned int in, unsigned int vc,
			   unsigned int out)
{
	if (entry & FC_ROUTE_DATELINE)
		return 1;
	if (in != FC_PORT_LOCAL && FC_PORT_DIM(in) == FC_PORT_DIM(out))
		return vc;
	return 0;
}

/* Where the packet goes: an output port, or -1 to drop it. */
static int route(struct fcemu_cluster *c, unsigned int n, uint32_t hdr,
		 uint32_t *entry)
{
	unsigned int dst = (hdr >> FC_PKT_DST_SHIFT) & FC_PKT_NODE_MASK;
	unsigned int port;

	if (dst >= c->hdr->topo.nodes || cl_gone(c, dst))
		return -1;
	*entry = cl_rd(c, n, FC_ROUTE_TABLE(dst));
	if (!(*entry & FC_ROUTE_VALID))
		return -1;
	port = *entry & FC_ROUTE_PORT_MASK;
	if (port == FC_PORT_LOCAL)
		return dst == n ? 0 : -1;
	if (port > c->hdr->ports || c->hdr->node[n].peer[port] == CL_NO_PEER)
		return -1;
	return (int)port;
}

/*
 * Forward the packet at the head of input @i (0: injection; else a link
 * port's ring). RETURN VALUE: 1 if it left the input (sent or dropped), 0
 * if the input is empty or its head must wait.
 */
static int forward_one(struct fcemu_cluster *c, unsigned int n, unsigned int i)
{
	unsigned int in = i ? (i + 1) / 2 : FC_PORT_LOCAL;
	unsigned int vc = i ? (i + 1) % 2 : 0;
	struct fc_hw_pkt pkt;
	struct cl_slot *s;
	uint32_t hdr, entry = 0;
	int out, ok;

	if (in == FC_PORT_LOCAL)
		s = fcemu__ring_peek(cl_ring(c, n, CL_RING_INJECT));
	else
		s = fcemu__link_recv(c, n, in, vc);
	if (!s)
		return 0;
	pkt = s->pkt;
	hdr = le32toh(pkt.hdr);
	out = route(c, n, hdr, &entry);
	if (out < 0) {
		cl_inc(c, n, FC_ROUTER_DROPS);
		ok = 1;
	} else if (out == FC_PORT_LOCAL) {
		ok = fcemu__ring_push(cl_ring(c, n, CL_RING_EJECT), &pkt, false);
	} else {
		unsigned int ovc = out_vc(entry, in, vc, (unsigned int)out);

		hdr = (hdr & ~FC_PKT_VC) | (ovc ? FC_PKT_VC : 0);
		pkt.hdr = htole32(hdr);
		ok = fcemu__link_send(c, n, (unsigned int)out, ovc, &pkt);
	}
	if (!ok)
		return 0;
	if (in == FC_PORT_LOCAL)
		fcemu__ring_pop(cl_ring(c, n, CL_RING_INJECT));
	else
		fcemu__link_done(c, n, in, vc);
	return 1;
}

static bool has_input(struct fcemu_cluster *c, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < CL_RINGS(c->hdr->ports); i++)
		if (i != CL_RING_EJECT && !fcemu__ring_empty(cl_ring(c, n, i)))
			return true;
	return false;
}

/* What the senders see of their peers' free slots. */
static void update_credits(struct fcemu_cluster *c, unsigned int n)
{
	const struct cl_node *nd = &c->hdr->node[n];
	unsigned int p, peer;
	uint32_t free;

	for (p = 1; p <= c->hdr->ports; p++) {
		peer = nd->peer[p];
		if (peer == CL_NO_PEER)
			continue;
		free = fcemu__ring_free(cl_ring(c, peer, CL_RING_LINK(nd->peer_port[p], 0))) +
		       fcemu__ring_free(cl_ring(c, peer, CL_RING_LINK(nd->peer_port[p], 1)));
		cl_st(cl_reg(c, n, FC_PORT_REG(p, FC_PORT_CREDITS)), free);
	}
}

/* One board's router, lock held. RETURN VALUE: packets moved. */
static unsigned int route_board(struct fcemu_cluster *c, unsigned int n,
				unsigned int budget)
{
	struct cl_node *nd = &c->hdr->node[n];
	unsigned int inputs = 1 + 2 * c->hdr->ports;
	unsigned int moved = 0, k, b, i;
	bool again = true;

	/* Cleared before looking: a packet pushed after this sets it again. */
	__atomic_fetch_and(&c->hdr->pending, ~(1ull << n), __ATOMIC_SEQ_CST);
	if (!(cl_rd(c, n, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE))
		goto out;
	while (again && moved < budget) {
		again = false;
		for (k = 0; k < inputs && moved < budget; k++) {
			i = (nd->rr + k) % inputs;
			for (b = 0; b < BURST && moved < budget; b++) {
				if (!forward_one(c, n, i))
					break;
				moved++;
				again = true;
			}
		}
		nd->rr = (nd->rr + 1) % inputs;
	}
	if (moved)
		update_credits(c, n);
out:
	if (has_input(c, n))
		cl_set_pending(c, n);
	return moved;
}

uint64_t fcemu_cluster_progress(struct fcemu_cluster *c, unsigned int budget)
{
	unsigned int nodes = c->hdr->topo.nodes;
	unsigned int pass, k, n, moved;
	uint64_t total = 0, pending;
	bool again = true;

	fcemu__cluster_scan(c);
	for (pass = 0; pass < PASSES && again && total < budget; pass++) {
		again = false;
		pending = __atomic_load_n(&c->hdr->pending, __ATOMIC_SEQ_CST);
		for (k = 0; k < nodes && pending && total < budget; k++) {
			n = (c->next_board + k) % nodes;
			if (!(pending & (1ull << n)))
				continue;
			/* Someone else is routing it: no need to wait. */
			if (fcemu__cluster_lock(c, n, false))
				continue;
			moved = route_board(c, n, budget - total < BOARD_BUDGET ?
					    (unsigned int)(budget - total) : BOARD_BUDGET);
			fcemu__cluster_unlock(c, n);
			total += moved;
			if (moved)
				again = true;
		}
		c->next_board = (c->next_board + 1) % nodes;
	}
	return total;
}
