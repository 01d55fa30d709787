// SPDX-License-Identifier: MIT
/*
 * The express hop (docs/fabric.md, "The express hop"): packets of a
 * board's own go straight into their destination's ejection ring when
 * the whole route there is idle, as cut-through routers forward a packet
 * whose outputs are free. What it saves is the copies into the injection
 * ring and onto every link, their CRCs and the router passes on the way;
 * each link's counters count the packets as if they had crossed.
 *
 * Only the board's own process takes it, for the board's own packets, on
 * a wire without faults (the links' retransmissions are then never
 * needed), and only with the destination's router lock taken at the
 * first try: holding it, this process is the destination's router, the
 * one producer of that ejection ring, and the last link's consumer stands
 * still while the route is walked (path_idle() says why an idle route
 * keeps order per (source, destination)).
 */
#include <endian.h>
#include <string.h>

#include "cluster_internal.h"
#include "fabric.h"

unsigned long fcemu__express_pkts;

/* The links a run crosses, so that each counts it. */
struct express_path {
	unsigned int hops;
	uint8_t node[FC_MAX_NODES]; /* the sending end of each link */
	uint8_t port[FC_MAX_NODES];
	uint32_t vcbit; /* the VC it arrives on */
	uint32_t tag;	/* ... and its port + 1 (the slot's tag) */
};

/* Nothing on link port @port of board @m, of either VC, waits to cross. */
static bool link_idle(struct fcemu_cluster *c, unsigned int m,
		      unsigned int port)
{
	unsigned int vc;

	for (vc = 0; vc < FC_NUM_VCS; vc++)
		if (!fcemu__ring_empty(fcemu__link_ring(c, m, port, vc)))
			return false;
	return true;
}

/*
 * Is the route from board @n to @dst idle all the way, every router on
 * it enabled? Walked from @n with @dst's router lock held, which stops
 * the last link's consumer: a packet of @n's sent before (nowhere but on
 * this route) only moves forward, is on some ring of it at every moment
 * (a router publishes a run before taking it off its input) and cannot
 * leave the last one, so the walk meets it. None met: nothing of @n's is
 * on its way to @dst. The path goes into @p.
 */
static bool path_idle(struct fcemu_cluster *c, unsigned int n, unsigned int dst,
		      struct express_path *p)
{
	unsigned int m = n, in = FC_PORT_LOCAL, vc = 0;
	uint32_t hdr = dst << FC_PKT_DST_SHIFT, entry = 0;
	int out;

	for (p->hops = 0; m != dst; p->hops++) {
		/* links to another host are the bridge's: no express there */
		if (p->hops == FC_MAX_NODES || (c->remote & (1ull << m)) ||
		    !(cl_rd(c, m, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE))
			return false;
		out = fcemu__route(c, m, hdr, &entry);
		if (out <= 0 || !link_idle(c, m, (unsigned int)out))
			return false;
		vc = fcemu__out_vc(entry, in, vc, (unsigned int)out);
		p->node[p->hops] = (uint8_t)m;
		p->port[p->hops] = (uint8_t)out;
		in = cl_peer_port(c, m, (unsigned int)out);
		m = cl_peer(c, m, (unsigned int)out);
	}
	p->vcbit = vc ? FC_PKT_VC : 0;
	p->tag = in + 1;
	return p->hops &&
	       (cl_rd(c, dst, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE);
}

/*
 * Take @dst's router for an express run from @n. RETURN VALUE: the room
 * in @dst's ejection ring, the lock held and the route in @p; 0 when the
 * hop cannot be taken now, the lock not held.
 */
static uint32_t express_open(struct fcemu_cluster *c, unsigned int n,
			     unsigned int dst, struct express_path *p)
{
	uint32_t room;

	if (!c->express || !(c->mine & (1ull << n)) || dst == n ||
	    dst >= c->nodes || (c->remote & (1ull << dst)) ||
	    fcemu__cluster_lock(c, dst, false))
		return 0;
	room = fcemu__ring_free(cl_ring(c, dst, CL_RING_EJECT));
	if (room && path_idle(c, n, dst, p))
		return room;
	fcemu__cluster_unlock(c, dst);
	return 0;
}

/* A packet into slot @idx of @to, its header (hdr & @keep) | @set,
 * tagged with the port it arrives by. */
static void express_put(struct cl_ring *to, uint32_t idx,
			const struct fc_hw_pkt *pkt, uint32_t keep,
			uint32_t set, uint32_t tag, uint64_t t)
{
	struct cl_slot *s = &to->slot[idx % CL_RING_SLOTS];

	s->t = t;
	s->pkt = *pkt;
	s->pkt.hdr = htole32((le32toh(pkt->hdr) & keep) | set);
	s->seq = idx;
	s->tag = tag;
}

/* Publish @k packets put from @tail on, count them on every link of
 * @p, let @dst go. */
static void express_close(struct fcemu_cluster *c, unsigned int dst,
			  const struct express_path *p, uint32_t tail,
			  uint32_t k)
{
	unsigned int h;

	fcemu__ring_publish(cl_ring(c, dst, CL_RING_EJECT), tail + k);
	/*
	 * The last link's RX_PKTS is the destination's to count as it takes
	 * the packets (the slots' tag): a counter line of its own, not one
	 * that would cross between the cores at every message.
	 */
	for (h = 0; h < p->hops; h++)
		fcemu__link_counted(c, p->node[h], p->port[h], k,
				    h + 1 < p->hops);
	fcemu__express_pkts += k;
	fcemu__cluster_unlock(c, dst);
	/* the unlock was the locked operation after the publication */
	if (!(c->mine & (1ull << dst)))
		fcemu__cluster_ring_fenced(c, dst);
}

/* The run at @head of @n's injection ring, up to @max packets. */
static uint32_t express_run(struct fcemu_cluster *c, unsigned int n,
			    uint32_t head, uint32_t max)
{
	struct cl_ring *from = cl_ring(c, n, CL_RING_INJECT), *to;
	uint32_t hdr = le32toh(from->slot[head % CL_RING_SLOTS].pkt.hdr);
	unsigned int dst = (hdr >> FC_PKT_DST_SHIFT) & FC_PKT_NODE_MASK;
	struct express_path p;
	const struct cl_slot *s;
	uint32_t tail, room, k;

	room = express_open(c, n, dst, &p);
	if (!room)
		return 0;
	if (max > room)
		max = room;
	to = cl_ring(c, dst, CL_RING_EJECT);
	tail = fcemu__ring_tail(to);
	for (k = 0; k < max; k++) {
		s = &from->slot[(head + k) % CL_RING_SLOTS];
		if ((le32toh(s->pkt.hdr) ^ hdr) & FC_PKT_DST_BITS)
			break;
		express_put(to, tail + k, &s->pkt, ~FC_PKT_VC, p.vcbit, p.tag,
			    s->t);
	}
	/*
	 * Taken off the input before the output is published: were this
	 * process to die in between, its own board's packets would be lost
	 * with it, never sent twice (no move is noted for repair()).
	 */
	cl_st(&from->head, head + k);
	express_close(c, dst, &p, tail, k);
	return k;
}

/* Where a run of board @node's own packets is going by the express hop. */
struct express_to {
	unsigned int dst;
	struct express_path path;
	struct cl_ring *ring; /* @dst's ejection ring */
	uint32_t tail;	      /* ... its first free slot */
};

/*
 * Can packets of board @node with header @hdr, injected by its own
 * process, take the express hop now? Anything of ours still in the
 * injection ring (published or not) goes first. RETURN VALUE: the room
 * for them, the destination's router lock held; 0 when they go the usual
 * way.
 */
static uint32_t express_begin(struct fcemu_cluster *c, unsigned int node,
			      uint32_t hdr, struct express_to *x)
{
	uint32_t room;

	if (!c->express || (c->inject_dirty & (1ull << node)) ||
	    !fcemu__ring_empty(cl_ring(c, node, CL_RING_INJECT)))
		return 0;
	x->dst = (hdr >> FC_PKT_DST_SHIFT) & FC_PKT_NODE_MASK;
	room = express_open(c, node, x->dst, &x->path);
	if (!room)
		return 0;
	x->ring = cl_ring(c, x->dst, CL_RING_EJECT);
	x->tail = fcemu__ring_tail(x->ring);
	return room;
}

bool fcemu_cluster_express(struct fcemu_cluster *c, unsigned int node,
			   const struct fc_hw_pkt *const *pkts, unsigned int n)
{
	const uint32_t keep =
		~((FC_PKT_NODE_MASK << FC_PKT_SRC_SHIFT) | FC_PKT_VC);
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
		fcemu__cluster_unlock(c, x.dst); /* the message goes whole */
	if (k < n)
		return false;
	for (k = 0; k < n; k++)
		express_put(x.ring, x.tail + k, pkts[k], keep,
			    (node << FC_PKT_SRC_SHIFT) | x.path.vcbit,
			    x.path.tag,
			    cl_vt_next(c, node, le32toh(pkts[k]->hdr)));
	express_close(c, x.dst, &x.path, x.tail, n);
	return true;
}

unsigned int fcemu_cluster_express_full(struct fcemu_cluster *c,
					unsigned int node, uint32_t hdr,
					const uint8_t *src, unsigned int n)
{
	struct express_to x;
	struct cl_slot *s, *slots;
	uint32_t room, k, idx, tag;
	bool vt = c->vt[node];

	room = express_begin(c, node, hdr, &x);
	if (!room)
		return 0;
	if (n > room)
		n = room;
	hdr = (hdr & ~FC_PKT_VC) | x.path.vcbit;
	/* Written in place, as the injection ring would have been; what
	 * every slot takes held in registers (the stores into the ring are
	 * shared memory: they would make it be loaded again per packet). */
	slots = x.ring->slot;
	idx = x.tail;
	tag = x.path.tag;
	for (k = 0; k < n; k++, idx++, src += FC_PKT_PAYLOAD) {
		s = &slots[idx % CL_RING_SLOTS];
		s->pkt.hdr = htole32(hdr);
		memcpy(s->pkt.payload, src, FC_PKT_PAYLOAD);
		s->seq = idx;
		s->tag = tag;
		s->t = vt ? fcemu__cluster_vt_next(c, node, hdr) : 0;
	}
	express_close(c, x.dst, &x.path, x.tail, n);
	return n;
}

unsigned int fcemu__express_injected(struct fcemu_cluster *c, unsigned int n,
				     unsigned int budget)
{
	struct cl_ring *r = cl_ring(c, n, CL_RING_INJECT);
	unsigned int moved = 0;
	uint32_t head, avail, k;

	if (!c->express || !(c->mine & (1ull << n)))
		return 0;
	while (moved < budget) {
		head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
		avail = cl_ld(&r->tail) - head;
		if (!avail || avail > CL_RING_SLOTS)
			break;
		if (avail > budget - moved)
			avail = budget - moved;
		k = express_run(c, n, head, avail);
		if (!k)
			break;
		moved += k;
	}
	return moved;
}
