// SPDX-License-Identifier: MIT
/*
 * The routers of an emulated cluster: for every board with input waiting,
 * under that board's lock, move packets from its inputs (the injection
 * ring, and each link port's rings of both VCs, served round robin) to the
 * output its routing table names. An output without credit holds the
 * packet back at its input and the router serves the other inputs: a
 * blocked packet is never dropped. Only undeliverable packets (no route,
 * destination gone) are dropped, and counted in ROUTER_DROPS. Which
 * boards are routed, and when, is emu/progress.c's business.
 */
#include <endian.h>
#include <errno.h>
#include <unistd.h>

#include "cluster_internal.h"

#define BURST 64 /* packets from one input before the next */

/* Packets at the head of input @in/@vc that may go, up to @max: those
 * there, and on a link only those that came over the wire intact. */
static uint32_t input_ready(struct fcemu_cluster *c, unsigned int n,
			    unsigned int in, unsigned int vc, uint32_t max)
{
	struct cl_ring *r;
	uint32_t avail;

	if (in != FC_PORT_LOCAL)
		return fcemu__link_recv(c, n, in, vc, max);
	r = cl_ring(c, n, CL_RING_INJECT);
	avail = cl_ld(&r->tail) - __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	return avail < max ? avail : max;
}

static void input_done(struct fcemu_cluster *c, unsigned int n, unsigned int in,
		       unsigned int vc, uint32_t k)
{
	struct cl_ring *r;

	if (in != FC_PORT_LOCAL) {
		fcemu__link_done(c, n, in, vc, k);
		return;
	}
	r = cl_ring(c, n, CL_RING_INJECT);
	cl_st(&r->head, __atomic_load_n(&r->head, __ATOMIC_RELAXED) + k);
}

/*
 * Wake the hosts that must act on a run just moved at board @n, if they
 * sleep (the bell, cluster.c): the destination's, when the run reached it
 * or its last link (it routes its own input first, then ejects), and
 * @n's, when room was made in its injection ring (its engine may wait for
 * it). Boards on the way are not woken: whoever runs routes them. A
 * board of this process is awake already.
 */
static void wake_for(struct fcemu_cluster *c, unsigned int n, unsigned int in,
		     int out, unsigned int dnode)
{
	unsigned int to =
		out == FC_PORT_LOCAL ? n : cl_peer(c, n, (unsigned int)out);

	if (to == dnode && !(c->mine & (1ull << to)))
		fcemu__cluster_ring(c, to);
	if (in == FC_PORT_LOCAL && to != n && !(c->mine & (1ull << n)))
		fcemu__cluster_ring(c, n);
}

/* The ring of input @i: 0 injection, else link port (i + 1) / 2, VC (i + 1) % 2. */
static struct cl_ring *input_ring(struct fcemu_cluster *c, unsigned int n,
				  unsigned int i)
{
	return cl_ring(c, n,
		       i ? CL_RING_LINK((i + 1) / 2, (i + 1) % 2) :
			   CL_RING_INJECT);
}

static void move_begin(struct fcemu_cluster *c, unsigned int n, unsigned int i,
		       struct cl_ring *to, uint32_t tail, uint32_t k);

/*
 * Forward a run of packets from the head of input @i (0: injection; else a
 * link port's ring) that go the same way: one routing decision, one credit
 * check and one index update for the run, as a cut-through router streams
 * a message's packets behind its first. Each packet is still checked and
 * sent with its own CRC. RETURN VALUE: packets that left the input (sent
 * or dropped), 0 if it is empty or its head must wait.
 */
static unsigned int forward_run(struct fcemu_cluster *c, unsigned int n,
				unsigned int i, unsigned int max)
{
	unsigned int in = i ? (i + 1) / 2 : FC_PORT_LOCAL;
	unsigned int vc = i ? (i + 1) % 2 : 0;
	struct cl_ring *from = input_ring(c, n, i), *to;
	uint32_t hdr, dst, entry = 0, room, head, tail, k;
	const struct cl_slot *s;
	unsigned int ovc;
	uint32_t vcbit = 0;
	int out;

	if (!input_ready(c, n, in, vc, 1))
		return 0;
	head = __atomic_load_n(&from->head, __ATOMIC_RELAXED);
	s = &from->slot[head % CL_RING_SLOTS];
	hdr = le32toh(s->pkt.hdr);
	dst = hdr & FC_PKT_DST_BITS;
	out = fcemu__route(c, n, hdr, &entry);
	if (out < 0) {
		cl_inc(c, n, FC_ROUTER_DROPS);
		input_done(c, n, in, vc, 1);
		return 1;
	}
	if (out == FC_PORT_LOCAL) {
		to = cl_ring(c, n, CL_RING_EJECT);
	} else {
		ovc = fcemu__out_vc(entry, in, vc, (unsigned int)out);
		vcbit = ovc ? FC_PKT_VC : 0;
		to = fcemu__link_ring(c, n, (unsigned int)out, ovc);
	}
	room = fcemu__ring_free(to);
	if (max > room)
		max = room;
	/* the input's packets are checked for the whole run at once */
	max = input_ready(c, n, in, vc, max);
	tail = fcemu__ring_tail(to);
	/* The run: the packets from the head on that go to the same node. */
	if (out != FC_PORT_LOCAL) {
		k = fcemu__link_put_run(to, tail, from, head, max, dst, vcbit);
	} else {
		for (k = 0; k < max; k++) {
			s = &from->slot[(head + k) % CL_RING_SLOTS];
			if ((le32toh(s->pkt.hdr) & FC_PKT_DST_BITS) != dst)
				break;
			fcemu__ring_put(to, tail + k, &s->pkt, s->t);
		}
	}
	if (!k)
		return 0;
	move_begin(c, n, i, to, tail + k, k);
	fcemu__ring_publish(to, tail + k);
	if (__builtin_expect(c->test.die_in_move == 1, 0))
		_exit(0);
	if (out != FC_PORT_LOCAL)
		fcemu__link_sent(c, n, (unsigned int)out, k);
	input_done(c, n, in, vc, k);
	if (__builtin_expect(c->test.die_in_move == 2, 0))
		_exit(0);
	c->hdr->node[n].move_count = 0;
	wake_for(c, n, in, out, dst >> FC_PKT_DST_SHIFT);
	return k;
}

/*
 * A run's move, noted under the router lock before its output is
 * published: a process killed after the publication but before it took
 * the run off its input would otherwise leave it there to be sent again.
 */
static void move_begin(struct fcemu_cluster *c, unsigned int n, unsigned int i,
		       struct cl_ring *to, uint32_t tail, uint32_t k)
{
	struct cl_node *nd = &c->hdr->node[n];

	nd->move_in = i;
	nd->move_head =
		__atomic_load_n(&input_ring(c, n, i)->head, __ATOMIC_RELAXED);
	nd->move_tail = tail;
	nd->move_ring = (uint64_t)((uint8_t *)to - c->base);
	__atomic_store_n(&nd->move_count, k, __ATOMIC_RELEASE);
}

/*
 * The output ring a move noted in shared memory names, if it is one that
 * board @n's router can write: its ejection ring or a link input of a
 * peer. Anything else (a header another process wrote) is NULL.
 */
static struct cl_ring *move_output(struct fcemu_cluster *c, unsigned int n,
				   uint64_t off)
{
	struct cl_ring *r = cl_ring(c, n, CL_RING_EJECT);
	unsigned int p, vc;

	if (off == (uint64_t)((uint8_t *)r - c->base))
		return r;
	for (p = 1; p <= c->ports; p++) {
		if (cl_peer(c, n, p) == CL_NO_PEER)
			continue;
		for (vc = 0; vc < FC_NUM_VCS; vc++) {
			r = fcemu__link_ring(c, n, p, vc);
			if (off == (uint64_t)((uint8_t *)r - c->base))
				return r;
		}
	}
	return NULL;
}

void fcemu__router_repair(struct fcemu_cluster *c, unsigned int n)
{
	struct cl_node *nd = &c->hdr->node[n];
	unsigned int i = nd->move_in;
	struct cl_ring *to;

	if (!nd->move_count)
		return;
	to = move_output(c, n, nd->move_ring);
	if (!to || i > 2 * c->ports || nd->move_count > CL_RING_SLOTS) {
		/* Not a move this router could have made: nothing to finish. */
		nd->move_count = 0;
		return;
	}
	/*
	 * Only this router advances that tail and that head: the tail at
	 * its mark means published, the head still at its own means not
	 * taken off yet.
	 */
	if (cl_ld(&to->tail) == nd->move_tail &&
	    cl_ld(&input_ring(c, n, i)->head) == nd->move_head)
		input_done(c, n, i ? (i + 1) / 2 : FC_PORT_LOCAL,
			   i ? (i + 1) % 2 : 0, nd->move_count);
	nd->move_count = 0;
}

static bool has_input(struct fcemu_cluster *c, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < CL_RINGS(c->ports); i++)
		if (i != CL_RING_EJECT && !fcemu__ring_empty(cl_ring(c, n, i)))
			return true;
	return false;
}

/* What the senders see of their peers' free slots. */
static void update_credits(struct fcemu_cluster *c, unsigned int n)
{
	unsigned int p, peer, pp;
	uint32_t free;

	for (p = 1; p <= c->ports; p++) {
		peer = cl_peer(c, n, p);
		if (peer == CL_NO_PEER)
			continue;
		pp = cl_peer_port(c, n, p);
		free = fcemu__ring_free(cl_ring(c, peer, CL_RING_LINK(pp, 0))) +
		       fcemu__ring_free(cl_ring(c, peer, CL_RING_LINK(pp, 1)));
		cl_st(cl_reg(c, n, FC_PORT_REG(p, FC_PORT_CREDITS)), free);
	}
}

unsigned int fcemu__router_run(struct fcemu_cluster *c, unsigned int n,
			       unsigned int budget)
{
	struct cl_node *nd = &c->hdr->node[n];
	unsigned int inputs = 1 + 2 * c->ports;
	unsigned int moved = 0, k, i, got;
	struct cl_ring *r;
	bool again = true;

	/* Cleared before looking: a packet pushed after this sets it again.
	 * Clear already (a kicked board): nothing to write. */
	if (__atomic_load_n(&c->hdr->pending, __ATOMIC_SEQ_CST) & (1ull << n))
		__atomic_fetch_and(&c->hdr->pending, ~(1ull << n),
				   __ATOMIC_SEQ_CST);
	if (!(cl_rd(c, n, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE))
		goto out;
	while (again && moved < budget) {
		again = false;
		for (k = 0; k < inputs && moved < budget; k++) {
			i = cl_wrap(nd->rr + k, inputs);
			r = input_ring(c, n, i);
			if (fcemu__ring_empty(r))
				continue;
			got = forward_run(c, n, i,
					  budget - moved < BURST ?
						  budget - moved :
						  BURST);
			moved += got;
			/* Another sweep only for an input with more behind. */
			if (got && !fcemu__ring_empty(r))
				again = true;
		}
		nd->rr = cl_wrap(nd->rr + 1, inputs);
	}
	if (moved)
		update_credits(c, n);
out:
	if (has_input(c, n))
		cl_set_pending(c, n);
	return moved;
}

/*
 * What the host just gave board @n, lock held: its injection ring only, a
 * run at a time, as a packet written into the window leaves at once on a
 * board. The other inputs keep their pending flag for the next pass.
 */
void fcemu__router_run_injected(struct fcemu_cluster *c, unsigned int n,
				unsigned int budget)
{
	unsigned int moved = 0, got;

	if (!(cl_rd(c, n, FC_ROUTER_CTRL) & FC_ROUTER_CTRL_ENABLE)) {
		cl_set_pending(c, n);
		return;
	}
	while (moved < budget && !fcemu__ring_empty(input_ring(c, n, 0)) &&
	       (got = forward_run(c, n, 0,
				  budget - moved < BURST ? budget - moved :
							   BURST)))
		moved += got;
	if (moved)
		update_credits(c, n);
	if (!fcemu__ring_empty(input_ring(c, n, 0)))
		cl_set_pending(c, n);
}
