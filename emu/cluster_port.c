// SPDX-License-Identifier: MIT
/*
 * The local port of an emulated cluster's boards (cluster_internal.h): a
 * board's injection ring, written by its host's packets, and its ejection
 * ring, read by its host with each slot's index and the ring's bounds
 * checked (a damaged slot is counted and stepped over, never trusted);
 * with a timing model, what a board takes advances its simulated clock.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "cluster_internal.h"

int fcemu_cluster_inject(struct fcemu_cluster *c, unsigned int node,
			 const struct fc_hw_pkt *pkt)
{
	struct cl_ring *r = cl_ring(c, node, CL_RING_INJECT);
	uint64_t bit = 1ull << node;

	if (!(c->inject_dirty & bit)) {
		c->inject_tail[node] = fcemu__ring_tail(r);
		c->inject_dirty |= bit;
	}
	if (c->inject_tail[node] - cl_ld(&r->head) >= CL_RING_SLOTS)
		return 0;
	fcemu__ring_put(r, c->inject_tail[node]++, pkt,
			cl_vt_next(c, node, le32toh(pkt->hdr)));
	return 1;
}

unsigned int fcemu_cluster_inject_full(struct fcemu_cluster *c,
				       unsigned int node, uint32_t hdr,
				       const uint8_t *src, unsigned int n)
{
	struct cl_ring *r = cl_ring(c, node, CL_RING_INJECT);
	uint64_t bit = 1ull << node;
	uint32_t tail, room, k;
	struct cl_slot *s;

	if (!(c->inject_dirty & bit)) {
		c->inject_tail[node] = fcemu__ring_tail(r);
		c->inject_dirty |= bit;
	}
	tail = c->inject_tail[node];
	room = CL_RING_SLOTS - (tail - cl_ld(&r->head));
	if (room > CL_RING_SLOTS)
		room = 0; /* a head past our tail: no honest consumer */
	if (n > room)
		n = room;
	/* Written in place: no packet built beside the ring and copied in. */
	for (k = 0; k < n; k++, src += FC_PKT_PAYLOAD) {
		s = &r->slot[(tail + k) % CL_RING_SLOTS];
		s->pkt.hdr = htole32(hdr);
		memcpy(s->pkt.payload, src, FC_PKT_PAYLOAD);
		s->seq = tail + k;
		s->t = cl_vt_next(c, node, hdr);
	}
	c->inject_tail[node] = tail + n;
	return n;
}

unsigned int fcemu_cluster_inject_room(struct fcemu_cluster *c,
				       unsigned int node)
{
	struct cl_ring *r = cl_ring(c, node, CL_RING_INJECT);
	uint32_t tail = c->inject_dirty & (1ull << node) ?
				c->inject_tail[node] :
				fcemu__ring_tail(r);

	return CL_RING_SLOTS - (tail - cl_ld(&r->head));
}

/* Publish what was injected. RETURN VALUE: true if there was any. */
static bool inject_publish(struct fcemu_cluster *c, unsigned int node)
{
	uint64_t bit = 1ull << node;

	if (!(c->inject_dirty & bit))
		return false;
	c->inject_dirty &= ~bit;
	if (c->inject_tail[node] ==
	    fcemu__ring_tail(cl_ring(c, node, CL_RING_INJECT)))
		return false;
	fcemu__ring_publish(cl_ring(c, node, CL_RING_INJECT),
			    c->inject_tail[node]);
	return true;
}

void fcemu_cluster_inject_commit(struct fcemu_cluster *c, unsigned int node)
{
	if (inject_publish(c, node))
		cl_set_pending(c, node);
}

void fcemu_cluster_inject_route(struct fcemu_cluster *c, unsigned int node)
{
	if (inject_publish(c, node))
		c->kicked |= 1ull << node;
}

/*
 * The ejection ring's tail moved more than a ring from our head: no
 * router wrote that (it never gets a ring ahead of what it read of the
 * head), and while it stands no router finds room. Under the router lock,
 * so that none is writing, the tail goes back to the last slot published
 * for its index from the head on (nothing written for the board is lost),
 * the damage counted once. RETURN VALUE: the slots waiting now.
 */
static __attribute__((noinline, cold)) uint32_t
eject_repair(struct fcemu_cluster *c, unsigned int node, struct cl_ring *r,
	     uint32_t head)
{
	uint32_t tail, k;

	if (fcemu__cluster_lock(c, node, false))
		return 0; /* a router at work: next time */
	tail = cl_ld(&r->tail);
	if (tail - head > CL_RING_SLOTS) {
		for (k = 0; k < CL_RING_SLOTS &&
			    r->slot[(head + k) % CL_RING_SLOTS].seq == head + k;
		     k++)
			;
		tail = head + k;
		cl_st(&r->tail, tail);
		cl_inc(c, node, FC_ROUTER_EJECT_DROPS);
	}
	fcemu__cluster_unlock(c, node);
	return tail - head;
}

/*
 * Slots at the head not written for their index (their own memory
 * damaged, or behind a tail moved by something else): dropped, counted,
 * as a damaged link slot is (link.c), or the board would stop here for
 * ever. RETURN VALUE: the head now; *@used less the slots dropped.
 */
static __attribute__((noinline, cold)) uint32_t
eject_drop_head(struct fcemu_cluster *c, unsigned int node, struct cl_ring *r,
		uint32_t head, uint32_t *used)
{
	while (*used && r->slot[head % CL_RING_SLOTS].seq != head) {
		cl_inc(c, node, FC_ROUTER_EJECT_DROPS);
		cl_st(&r->head, ++head);
		--*used;
	}
	return head;
}

/*
 * Up to @max of the @used slots from index @at on, into @pkts, as far as
 * the ring's end (the caller asks again for the rest): only those written
 * for their index, the run ending before any other.
 */
static inline __attribute__((always_inline)) unsigned int
peek_slots(struct cl_ring *r, uint32_t at, uint32_t used,
	   const struct fc_hw_pkt **pkts, unsigned int max, bool check)
{
	const struct cl_slot *s = &r->slot[at % CL_RING_SLOTS];
	unsigned int i, n = CL_RING_SLOTS - at % CL_RING_SLOTS;

	if (n > used)
		n = used;
	if (n > max)
		n = max;
	for (i = 0; i < n; i++, s++) {
		if (check && __builtin_expect(s->seq != at + i, 0))
			break;
		pkts[i] = &s->pkt;
	}
	return i;
}

/* fcemu_cluster_eject_peek_run() on a ring found damaged. */
static __attribute__((noinline)) unsigned int
eject_damaged(struct fcemu_cluster *c, unsigned int node, unsigned int k,
	      const struct fc_hw_pkt **pkts, unsigned int max)
{
	struct cl_ring *r = cl_ring(c, node, CL_RING_EJECT);
	uint32_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	uint32_t used = cl_ld(&r->tail) - head;

	if (used > CL_RING_SLOTS)
		used = eject_repair(c, node, r, head);
	if (!k && used)
		head = eject_drop_head(c, node, r, head, &used);
	if (used <= k)
		return 0;
	return peek_slots(r, head + k, used - k, pkts, max, true);
}

/* The @k-th on of the packets board @node spilled (emu/vtorder.c),
 * waiting before its ejection ring's head. */
static __attribute__((noinline)) unsigned int
spill_peek(struct fcemu_cluster *c, unsigned int node, unsigned int k,
	   const struct fc_hw_pkt **pkts, unsigned int max, uint32_t *first)
{
	const struct cl_vt_spill *sp = &c->vt_spill[node];
	struct cl_ring *r = cl_ring(c, node, CL_RING_EJECT);
	unsigned int i, n = sp->n - k;

	if (n > max)
		n = max;
	for (i = 0; i < n; i++)
		pkts[i] = &sp->slot[sp->off + k + i].pkt;
	*first = __atomic_load_n(&r->head, __ATOMIC_RELAXED) - sp->n + k;
	return n;
}

static inline __attribute__((always_inline)) unsigned int
eject_peek(struct fcemu_cluster *c, unsigned int node, unsigned int k,
	   const struct fc_hw_pkt **pkts, unsigned int max, uint32_t *first,
	   uint32_t *waiting, bool check)
{
	struct cl_ring *r = cl_ring(c, node, CL_RING_EJECT);
	uint32_t head, used, spilled = c->vt_spill[node].n;

	head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	used = cl_ld(&r->tail) - head;
	*waiting = spilled + used;
	if (__builtin_expect(spilled != 0, 0)) {
		if (k < spilled)
			return spill_peek(c, node, k, pkts, max, first);
		k -= spilled;
	}
	if (used <= k)
		return 0;
	if (__builtin_expect(used > CL_RING_SLOTS ||
				     (!k && r->slot[head % CL_RING_SLOTS].seq !=
						    head),
			     0)) {
		/* every slot checked there; the head may have moved */
		used = eject_damaged(c, node, k, pkts, max);
		*first = __atomic_load_n(&r->head, __ATOMIC_RELAXED) + k;
		*waiting = UINT32_MAX; /* not known: ask again */
		return used;
	}
	*first = head + k;
	return peek_slots(r, head + k, used - k, pkts, max, check);
}

unsigned int fcemu_cluster_eject_peek_run(struct fcemu_cluster *c,
					  unsigned int node, unsigned int k,
					  const struct fc_hw_pkt **pkts,
					  unsigned int max)
{
	uint32_t first, waiting;

	return eject_peek(c, node, k, pkts, max, &first, &waiting, true);
}

bool fcemu_cluster_eject_waiting(struct fcemu_cluster *c, unsigned int node)
{
	return c->vt_spill[node].n ||
	       !fcemu__ring_empty(cl_ring(c, node, CL_RING_EJECT));
}

unsigned int fcemu_cluster_eject_peek_lazy(struct fcemu_cluster *c,
					   unsigned int node, unsigned int k,
					   const struct fc_hw_pkt **pkts,
					   unsigned int max, uint32_t *first,
					   uint32_t *waiting)
{
	return eject_peek(c, node, k, pkts, max, first, waiting, false);
}

const struct fc_hw_pkt *fcemu_cluster_eject_peek(struct fcemu_cluster *c,
						 unsigned int node,
						 unsigned int k)
{
	const struct fc_hw_pkt *pkt;

	return fcemu_cluster_eject_peek_run(c, node, k, &pkt, 1) ? pkt : NULL;
}

/* The input port of board @node by which packets from @src come: the
 * last link of their route (0: none). */
static uint8_t vt_in_port(struct fcemu_cluster *c, unsigned int src,
			  unsigned int node)
{
	uint8_t nd[FC_MAX_NODES], port[FC_MAX_NODES];
	unsigned int h = fcemu__route_links(c, src, node, nd, port);

	return h ? port[h - 1] : 0;
}

/* Virtual time: board @node takes the @n packets at @s. */
static __attribute__((noinline)) void vt_take(struct fcemu_cluster *c,
					      unsigned int node,
					      const struct cl_slot *s,
					      unsigned int n)
{
	struct fcemu_vtime *vt = c->vt[node];
	unsigned int i, src;

	for (i = 0; i < n; i++, s++) {
		src = (le32toh(s->pkt.hdr) >> FC_PKT_SRC_SHIFT) &
		      FC_PKT_NODE_MASK;
		if (src >= c->nodes)
			continue;
		if (vt->hops[src] == 0xff)
			vt->hops[src] =
				(uint8_t)fc_topo_hops(&c->topo, src, node);
		if (vt->in[src] == 0xff)
			vt->in[src] = vt_in_port(c, src, node);
		fcemu__vt_arrive(vt, src, vt->hops[src], vt->in[src], s->t);
	}
}

uint64_t fcemu_cluster_vt_arrival(struct fcemu_cluster *c, unsigned int node,
				  const struct fc_hw_pkt *pkt)
{
	const struct cl_slot *s = (const void *)pkt; /* its slot's start */
	struct fcemu_vtime *vt = c->vt[node];
	unsigned int src = (le32toh(pkt->hdr) >> FC_PKT_SRC_SHIFT) &
			   FC_PKT_NODE_MASK;

	if (!vt || src >= c->nodes)
		return vt ? vt->now : 0;
	if (vt->hops[src] == 0xff)
		vt->hops[src] = (uint8_t)fc_topo_hops(&c->topo, src, node);
	return fcemu__vt_at(vt, vt->hops[src], s->t, vt->rx_last[src]);
}

uint64_t fcemu__cluster_vt_next(struct fcemu_cluster *c, unsigned int node,
				uint32_t hdr)
{
	uint32_t entry;
	int port = fcemu__route(c, node, hdr, &entry);

	/* a host said to wait sends after all: it is at its clock again */
	if (__builtin_expect(c->hdr->node[node].vt_lb == CL_VT_WAITING, 0))
		fcemu__vt_resume(c, node);
	return fcemu__vt_next(c->vt[node], port > 0 ? (unsigned int)port : 0);
}

uint64_t fcemu_cluster_vt_departs(struct fcemu_cluster *c, unsigned int node,
				  unsigned int dst)
{
	const struct fcemu_vtime *vt = c->vt[node];
	uint32_t entry;
	int port = fcemu__route(c, node, (uint32_t)dst << FC_PKT_DST_SHIFT,
				&entry);
	uint64_t t = vt->start > vt->now ? vt->start : vt->now;
	uint64_t free = vt->port_free[port > 0 ? port : 0];

	return free > t ? free : t;
}

void fcemu__cluster_set_vt(struct fcemu_cluster *c, unsigned int node,
			   struct fcemu_vtime *vt)
{
	if (node >= c->nodes)
		return;
	c->vt[node] = vt && vt->on ? vt : NULL;
	fcemu__vt_spill_free(c, node);
	/* a board going away sends nothing more (emu/vtorder.c) */
	__atomic_store_n(&c->hdr->node[node].vt_eject, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->hdr->node[node].vt_lb,
			 c->vt[node] ? 0 : CL_VT_WAITING, __ATOMIC_SEQ_CST);
	if (c->vt[node] && vt->order)
		__atomic_store_n(&c->hdr->node[node].vt_on, 1,
				 __ATOMIC_RELEASE);
}

/* Express arrivals count on the link they came by (express.c). */
static void count_express(struct fcemu_cluster *c, unsigned int node,
			  uint32_t tag, uint32_t n)
{
	if (tag > 1 && tag - 1 <= c->ports)
		fcemu__link_received(c, node, tag - 1, n);
}

/* Board @node takes the @n packets at @s: their virtual time, and the
 * express arrivals counted in runs of one tag (a message's packets
 * share theirs). */
static void take_slots(struct fcemu_cluster *c, unsigned int node,
		       const struct cl_slot *s, unsigned int n)
{
	const struct cl_slot *t, *stop = s + n;
	uint32_t tag, run = 0, run_tag = 0;

	if (c->vt[node])
		vt_take(c, node, s, n);
	while (s < stop) {
		tag = s->tag;
		if (tag != run_tag) {
			count_express(c, node, run_tag, run);
			run_tag = tag;
			run = 0;
		}
		t = s;
		do
			t++;
		while (t < stop && t->tag == tag);
		run += (uint32_t)(t - s);
		s = t;
	}
	count_express(c, node, run_tag, run);
}

void fcemu_cluster_eject_done(struct fcemu_cluster *c, unsigned int node,
			      unsigned int n)
{
	struct cl_ring *r = cl_ring(c, node, CL_RING_EJECT);
	uint32_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED), at, m;
	struct cl_vt_spill *sp = &c->vt_spill[node];

	/* the packets spilled first: they came before the ring's */
	if (__builtin_expect(sp->n != 0, 0)) {
		m = n < sp->n ? n : sp->n;
		take_slots(c, node, &sp->slot[sp->off], m);
		sp->off = sp->n == m ? 0 : sp->off + m;
		sp->n -= m;
		n -= m;
	}
	at = head % CL_RING_SLOTS;
	if (n == 1) { /* a small message: no runs to find */
		if (c->vt[node])
			vt_take(c, node, &r->slot[at], 1);
		count_express(c, node, r->slot[at].tag, 1);
	} else {
		/* at most two stretches: to the ring's end, then from its
		 * start */
		m = n < CL_RING_SLOTS - at ? n : CL_RING_SLOTS - at;
		take_slots(c, node, &r->slot[at], m);
		if (n > m)
			take_slots(c, node, &r->slot[0], n - m);
	}
	cl_st(&r->head, head + n);
}
