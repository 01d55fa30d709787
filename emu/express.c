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
 * still while the route is walked (path_walk() says why an idle route
 * keeps order per (source, destination)).
 */
#include <endian.h>
#include <string.h>

#include "cluster_internal.h"
#include "fabric.h"

unsigned long fcemu__express_pkts;

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
 * on its way to @dst. The path, each hop's routing entry and its link's
 * input rings go into @x (kept for route_again() where it is short).
 */
static bool path_walk(struct fcemu_cluster *c, unsigned int n, unsigned int dst,
		      struct cl_express_route *x)
{
	struct express_path *p = &x->path;
	unsigned int m = n, in = FC_PORT_LOCAL, vc = 0, h;
	uint32_t hdr = dst << FC_PKT_DST_SHIFT, entry = 0;
	int out;

	x->src = n;
	for (h = 0; m != dst; h++) {
		/* links to another host are the bridge's: no express there */
		if (h == FC_MAX_NODES || (c->remote & (1ull << m)) ||
		    !(cl_rd(c, m, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE))
			goto none;
		out = fcemu__route(c, m, hdr, &entry);
		if (out <= 0 || !link_idle(c, m, (unsigned int)out))
			goto none;
		vc = fcemu__out_vc(entry, in, vc, (unsigned int)out);
		p->node[h] = (uint8_t)m;
		p->port[h] = (uint8_t)out;
		if (h < CL_EXPRESS_HOPS) {
			x->entry[h] = entry;
			for (unsigned int v = 0; v < FC_NUM_VCS; v++)
				x->in[h][v] = fcemu__link_ring(
					c, m, (unsigned int)out, v);
		}
		in = cl_peer_port(c, m, (unsigned int)out);
		m = cl_peer(c, m, (unsigned int)out);
	}
	p->vcbit = vc ? FC_PKT_VC : 0;
	p->tag = in + 1;
	p->hops = h;
	if (h && (cl_rd(c, dst, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE))
		return true;
none:
	p->hops = 0;
	return false;
}

/*
 * The route @x (from x->src, to @dst) as walked last: 1 still the route
 * and idle, 0 still the route but busy, -1 changed (walk it again). Its
 * hops' links are fixed, so the same routing entry at every hop, the
 * routers on it enabled and @dst not gone make it the same route.
 */
static int route_again(struct fcemu_cluster *c, unsigned int dst,
		       const struct cl_express_route *x)
{
	unsigned int h, v, m;

	if (x->path.hops > CL_EXPRESS_HOPS || cl_gone(c, dst) ||
	    !(cl_rd(c, dst, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE))
		return -1;
	for (h = 0; h < x->path.hops; h++) {
		m = x->path.node[h];
		if (!(cl_rd(c, m, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE) ||
		    cl_rd(c, m, FC_ROUTE_TABLE(dst)) != x->entry[h])
			return -1;
		for (v = 0; v < FC_NUM_VCS; v++)
			if (!fcemu__ring_empty(x->in[h][v]))
				return 0;
	}
	return 1;
}

/* The idle route from @n to @dst (path_walk()), the last one found
 * there when it still is; NULL if there is none now. */
static const struct express_path *path_idle(struct fcemu_cluster *c,
					    unsigned int n, unsigned int dst)
{
	struct cl_express_route *x = &c->xroute[dst];
	int r = -1;

	if (x->path.hops && x->src == n)
		r = route_again(c, dst, x);
	if (r > 0)
		return &x->path;
	if (!r || !path_walk(c, n, dst, x))
		return NULL;
	return &x->path;
}

/*
 * Take @dst's router for an express run from @n. RETURN VALUE: the room
 * in @dst's ejection ring, the lock held and the route in *@p (valid
 * while it is held); 0 when the hop cannot be taken now, the lock not
 * held.
 */
static uint32_t express_open(struct fcemu_cluster *c, unsigned int n,
			     unsigned int dst, const struct express_path **p)
{
	uint32_t room;

	if (!c->express || !(c->mine & (1ull << n)) || dst == n ||
	    dst >= c->nodes || (c->remote & (1ull << dst)) ||
	    fcemu__cluster_lock(c, dst, false))
		return 0;
	room = fcemu__ring_free(cl_ring(c, dst, CL_RING_EJECT));
	if (room && (*p = path_idle(c, n, dst)))
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
	const struct express_path *p;
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
		express_put(to, tail + k, &s->pkt, ~FC_PKT_VC, p->vcbit, p->tag,
			    s->t);
	}
	/*
	 * Taken off the input before the output is published: were this
	 * process to die in between, its own board's packets would be lost
	 * with it, never sent twice (no move is noted for repair()).
	 */
	cl_st(&from->head, head + k);
	express_close(c, dst, p, tail, k);
	return k;
}

/* Where a run of board @node's own packets is going by the express hop. */
struct express_to {
	unsigned int dst;
	const struct express_path *path;
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
			    (node << FC_PKT_SRC_SHIFT) | x.path->vcbit,
			    x.path->tag,
			    cl_vt_next(c, node, le32toh(pkts[k]->hdr)));
	express_close(c, x.dst, x.path, x.tail, n);
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
	hdr = (hdr & ~FC_PKT_VC) | x.path->vcbit;
	/* Written in place, as the injection ring would have been; what
	 * every slot takes held in registers (the stores into the ring are
	 * shared memory: they would make it be loaded again per packet). */
	slots = x.ring->slot;
	idx = x.tail;
	tag = x.path->tag;
	for (k = 0; k < n; k++, idx++, src += FC_PKT_PAYLOAD) {
		s = &slots[idx % CL_RING_SLOTS];
		s->pkt.hdr = htole32(hdr);
		memcpy(s->pkt.payload, src, FC_PKT_PAYLOAD);
		s->seq = idx;
		s->tag = tag;
		s->t = vt ? fcemu__cluster_vt_next(c, node, hdr) : 0;
	}
	express_close(c, x.dst, x.path, x.tail, n);
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
