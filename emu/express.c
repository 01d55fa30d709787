// SPDX-License-Identifier: MIT
/*
 * The express hop (docs/fabric.md, "The express hop"): packets of a
 * board's own to a neighbour that is their destination go straight into
 * the neighbour's ejection ring when the link between them is idle, as a
 * cut-through router forwards a packet whose output is free. What it
 * saves is the copy onto the link, its CRC and the neighbour's router
 * pass; the link's counters count the packets as if they had crossed.
 *
 * Only the board's own process takes it, for the board's own packets, on
 * a wire without faults (the link's retransmissions are then never
 * needed), and only with the neighbour's router lock taken at the first
 * try: holding it, this process is the neighbour's router, the one
 * producer of that ejection ring, and the link rings' consumer stands
 * still while we find them empty. Empty links mean nothing the board
 * sent before is still on its way, so order per (source, destination)
 * holds whichever way each run went.
 */
#include <endian.h>
#include <string.h>

#include "cluster_internal.h"
#include "fabric.h"

unsigned long fcemu__express_pkts;

/*
 * Nothing from board @n is on its way to its neighbour @peer: every link
 * ring from @n to @peer, of both VCs, is empty.
 */
static bool links_idle(struct fcemu_cluster *c, unsigned int n,
		       unsigned int peer)
{
	unsigned int p, vc;

	for (p = 1; p <= c->ports; p++) {
		if (cl_peer(c, n, p) != peer)
			continue;
		for (vc = 0; vc < FC_NUM_VCS; vc++)
			if (!fcemu__ring_empty(fcemu__link_ring(c, n, p, vc)))
				return false;
	}
	return true;
}

/*
 * Take @peer's router for an express run from @n through @port. RETURN
 * VALUE: the room in @peer's ejection ring, the lock held; 0 when the hop
 * cannot be taken now, the lock not held.
 */
static uint32_t express_open(struct fcemu_cluster *c, unsigned int n,
			     unsigned int port, unsigned int peer)
{
	uint32_t room;

	if (!c->express || !(c->mine & (1ull << n)) || peer == n ||
	    cl_peer(c, n, port) != peer ||
	    fcemu__cluster_lock(c, peer, false))
		return 0;
	room = fcemu__ring_free(cl_ring(c, peer, CL_RING_EJECT));
	/* Both routers on: a stopped one holds its packets, as usual. */
	if (room && links_idle(c, n, peer) &&
	    (cl_rd(c, n, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE) &&
	    (cl_rd(c, peer, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE))
		return room;
	fcemu__cluster_unlock(c, peer);
	return 0;
}

/* A packet into slot @idx of @to, its header (hdr & @keep) | @set. */
static void express_put(struct cl_ring *to, uint32_t idx,
			const struct fc_hw_pkt *pkt, uint32_t keep,
			uint32_t set)
{
	fcemu__ring_put(to, idx, pkt);
	to->slot[idx % CL_RING_SLOTS].pkt.hdr =
		htole32((le32toh(pkt->hdr) & keep) | set);
}

/* Publish @k packets put from @tail on, count them, let @peer go. */
static void express_close(struct fcemu_cluster *c, unsigned int n,
			  unsigned int port, unsigned int peer,
			  uint32_t tail, uint32_t k)
{
	fcemu__ring_publish(cl_ring(c, peer, CL_RING_EJECT), tail + k);
	fcemu__link_counted(c, n, port, k);
	fcemu__express_pkts += k;
	fcemu__cluster_unlock(c, peer);
	/* the unlock was the locked operation after the publication */
	if (!(c->mine & (1ull << peer)))
		fcemu__cluster_ring_fenced(c, peer);
}

uint32_t fcemu__express_run(struct fcemu_cluster *c, unsigned int n,
			    unsigned int port, uint32_t vcbit, uint32_t head,
			    uint32_t max)
{
	struct cl_ring *from = cl_ring(c, n, CL_RING_INJECT), *to;
	uint32_t hdr = le32toh(from->slot[head % CL_RING_SLOTS].pkt.hdr);
	unsigned int peer = (hdr >> FC_PKT_DST_SHIFT) & FC_PKT_NODE_MASK;
	const struct cl_slot *s;
	uint32_t tail, room, k;

	room = express_open(c, n, port, peer);
	if (!room)
		return 0;
	if (max > room)
		max = room;
	to = cl_ring(c, peer, CL_RING_EJECT);
	tail = fcemu__ring_tail(to);
	for (k = 0; k < max; k++) {
		s = &from->slot[(head + k) % CL_RING_SLOTS];
		if ((le32toh(s->pkt.hdr) ^ hdr) & FC_PKT_DST_BITS)
			break;
		express_put(to, tail + k, &s->pkt, ~FC_PKT_VC, vcbit);
	}
	/*
	 * Taken off the input before the output is published: were this
	 * process to die in between, its own board's packets would be lost
	 * with it, never sent twice (no move is noted for repair()).
	 */
	cl_st(&from->head, head + k);
	express_close(c, n, port, peer, tail, k);
	return k;
}

/* Where a run of board @node's own packets is going by the express hop. */
struct express_to {
	unsigned int peer, port;
	uint32_t vcbit;
	struct cl_ring *ring;	/* @peer's ejection ring */
	uint32_t tail;		/* ... its first free slot */
};

/*
 * Can packets of board @node with header @hdr, injected by its own
 * process, take the express hop now? Anything of ours still in the
 * injection ring (published or not) goes first. RETURN VALUE: the room
 * for them, @peer's router lock held; 0 when they go the usual way.
 */
static uint32_t express_begin(struct fcemu_cluster *c, unsigned int node,
			      uint32_t hdr, struct express_to *x)
{
	uint32_t entry = 0, room;
	int port;

	if (!c->express || (c->inject_dirty & (1ull << node)) ||
	    !fcemu__ring_empty(cl_ring(c, node, CL_RING_INJECT)))
		return 0;
	port = fcemu__route(c, node, hdr, &entry);
	if (port <= 0)
		return 0;
	x->port = (unsigned int)port;
	x->peer = (hdr >> FC_PKT_DST_SHIFT) & FC_PKT_NODE_MASK;
	room = express_open(c, node, x->port, x->peer);
	if (!room)
		return 0;
	x->vcbit = fcemu__out_vc(entry, FC_PORT_LOCAL, 0, x->port) ?
			   FC_PKT_VC : 0;
	x->ring = cl_ring(c, x->peer, CL_RING_EJECT);
	x->tail = fcemu__ring_tail(x->ring);
	return room;
}

bool fcemu_cluster_express(struct fcemu_cluster *c, unsigned int node,
			   const struct fc_hw_pkt *const *pkts, unsigned int n)
{
	const uint32_t keep = ~((FC_PKT_NODE_MASK << FC_PKT_SRC_SHIFT) |
				FC_PKT_VC);
	struct express_to x;
	uint32_t hdr, k;

	if (!n)
		return false;
	hdr = le32toh(pkts[0]->hdr);
	for (k = 1; k < n; k++)
		if ((le32toh(pkts[k]->hdr) ^ hdr) & FC_PKT_DST_BITS)
			return false;
	k = express_begin(c, node, hdr, &x);
	if (k && k < n)
		fcemu__cluster_unlock(c, x.peer);	/* the message goes whole */
	if (k < n)
		return false;
	for (k = 0; k < n; k++)
		express_put(x.ring, x.tail + k, pkts[k], keep,
			    (node << FC_PKT_SRC_SHIFT) | x.vcbit);
	express_close(c, node, x.port, x.peer, x.tail, n);
	return true;
}

unsigned int fcemu__express_full(struct fcemu_cluster *c, unsigned int node,
				 uint32_t hdr, const uint8_t *src,
				 unsigned int n)
{
	struct express_to x;
	struct cl_slot *s;
	uint32_t room, k;

	room = express_begin(c, node, hdr, &x);
	if (!room)
		return 0;
	if (n > room)
		n = room;
	hdr = (hdr & ~FC_PKT_VC) | x.vcbit;
	/* Written in place, as the injection ring would have been. */
	for (k = 0; k < n; k++, src += FC_PKT_PAYLOAD) {
		s = &x.ring->slot[(x.tail + k) % CL_RING_SLOTS];
		s->pkt.hdr = htole32(hdr);
		memcpy(s->pkt.payload, src, FC_PKT_PAYLOAD);
		s->seq = x.tail + k;
	}
	express_close(c, node, x.port, x.peer, x.tail, n);
	return n;
}

bool fcemu__express_pkt(struct fcemu_cluster *c, unsigned int node,
			const struct fc_hw_pkt *pkt)
{
	struct express_to x;

	if (!express_begin(c, node, le32toh(pkt->hdr), &x))
		return false;
	express_put(x.ring, x.tail, pkt, ~FC_PKT_VC, x.vcbit);
	express_close(c, node, x.port, x.peer, x.tail, 1);
	return true;
}
