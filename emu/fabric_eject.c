// SPDX-License-Identifier: MIT
/*
 * The board's ejection: packets addressed to this board taken from its
 * ejection ring into channel receive rings, the event queue and memory
 * (PUTs, bursts, GETs answered), fences acknowledged, run in the board's
 * own process because it touches the board's host memory.
 *
 * A full channel receive ring leaves the packet in the ejection ring: the
 * fabric holds it back, nothing is lost.
 */
#include <endian.h>
#include <string.h>

#include "emu_internal.h"
#include "fabric.h"

#define EJECT_MIN 256 /* packets per call, whatever the budget */
#define EJECT_RUN 64  /* packets found at once */

static void eject_drop(struct fcemu *emu)
{
	emu_inc(emu, FC_ROUTER_EJECT_DROPS);
}

/*
 * A channel's receive ring as the ejection loop sees it: its registers are
 * read when the loop first meets the channel, TAIL written once when it
 * leaves it, so a run of a message's packets costs a copy per packet.
 */
struct rx_ring {
	int chan; /* -1: none */
	bool eq;  /* the endpoint delivers to the event queue */
	struct fcemu_eq_batch batch;
	uint32_t slots, head, tail, start;
	uint8_t *base; /* the whole ring, translated */
};

static void ring_leave(struct fcemu *emu, struct rx_ring *rr)
{
	/* TAIL after the slots, its group's count after TAIL; then the
	 * vector's event, one per batch. */
	if (rr->chan >= 0 && !rr->eq && rr->tail != rr->start) {
		emu_wr(emu, FC_CHAN_REG(rr->chan, FC_CHAN_TAIL), rr->tail);
		emu_inc(emu, FC_REG_CHAN_EVENTS(rr->chan / FC_CHAN_GROUP_SIZE));
	}
	rr->chan = -1;
}

/* RETURN VALUE: 0 usable, -1 endpoint off or ring unusable. */
static int ring_enter(struct fcemu *emu, struct rx_ring *rr, unsigned int chan)
{
	uint64_t ring;

	uint32_t ctrl = emu_rd(emu, FC_CHAN_REG(chan, FC_CHAN_CTRL));

	ring_leave(emu, rr);
	if (!(ctrl & FC_CHAN_CTRL_ENABLE))
		return -1;
	rr->eq = ctrl & FC_CHAN_CTRL_EQ;
	if (rr->eq) {
		rr->chan = (int)chan;
		return 0;
	}
	rr->slots = emu_rd(emu, FC_CHAN_REG(chan, FC_CHAN_RING_SLOTS));
	if (!rr->slots || (rr->slots & (rr->slots - 1)))
		return -1;
	ring = emu_rd(emu, FC_CHAN_REG(chan, FC_CHAN_RING_LO)) |
	       (uint64_t)emu_rd(emu, FC_CHAN_REG(chan, FC_CHAN_RING_HI)) << 32;
	rr->base = emu->ops->translate(emu->ctx, ring,
				       (uint64_t)rr->slots * FC_CHAN_SLOT_SIZE);
	if (!rr->base)
		return -1;
	rr->chan = (int)chan;
	rr->tail = rr->start = emu_rd(emu, FC_CHAN_REG(chan, FC_CHAN_TAIL));
	rr->head = emu_rd(emu, FC_CHAN_REG(chan, FC_CHAN_HEAD));
	if (rr->tail - rr->head > rr->slots) {
		/*
		 * TAIL more than a ring ahead: not ours (the register file
		 * is shared memory another process wrote). The host ignores
		 * such a TAIL; go on from its HEAD, or the ring would look
		 * full for ever.
		 */
		rr->tail = rr->start = rr->head;
		emu_wr(emu, FC_CHAN_REG(chan, FC_CHAN_TAIL), rr->tail);
	}
	return 0;
}

/* RETURN VALUE: 1 landed, 0 ring full (try later), -1 dropped. */
static int deliver_data(struct fcemu *emu, struct rx_ring *rr,
			const struct fc_hw_pkt *pkt, uint32_t hdr)
{
	unsigned int chan = (hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK;

	int r;

	if ((int)chan != rr->chan && ring_enter(emu, rr, chan))
		goto drop;
	if (rr->eq) {
		r = fcemu__eq_put(emu, &rr->batch, pkt);
		if (r < 0)
			goto drop;
		return r;
	}
	if (rr->tail - rr->head >= rr->slots) {
		/* Full as last seen: the host may have read some since. */
		rr->head = emu_rd(emu, FC_CHAN_REG(chan, FC_CHAN_HEAD));
		if (rr->tail - rr->head >= rr->slots)
			return 0;
	}
	memcpy(rr->base +
		       (size_t)(rr->tail & (rr->slots - 1)) * FC_CHAN_SLOT_SIZE,
	       pkt, FC_CHAN_SLOT_SIZE);
	rr->tail++;
	return 1;

drop:
	emu_inc(emu, FC_CHAN_REG(chan, FC_CHAN_DROPS));
	eject_drop(emu);
	return -1;
}

/*
 * After a packet (@pkts[-1]) went to the event queue for @rr's endpoint:
 * the packets of the run @pkts[0..@n) (ring index @idx on) that follow it
 * to the same endpoint with the same type, while the queue has room as
 * last seen, as deliver_data() would write them, each slot checked as it
 * is read.
 * RETURN VALUE: packets written.
 */
static unsigned int deliver_eq_run(struct fcemu *emu, struct rx_ring *rr,
				   const struct fc_hw_pkt *const *pkts,
				   unsigned int n, uint32_t idx)
{
	/* the same type and endpoint as the packet before (@rr's, a data
	 * packet's type): one comparison a packet; any other ends the run */
	const uint32_t same = (FC_PKT_TYPE_MASK << FC_PKT_TYPE_SHIFT) |
			      (FC_PKT_CHAN_MASK << FC_PKT_CHAN_SHIFT);
	struct fcemu_eq_batch *b = &rr->batch;
	uint32_t room = fcemu__eq_room(emu, b), slots = emu->eq.slots;
	uint32_t tail = b->tail, hdr, key;
	uint8_t *q = b->q;
	unsigned int m;

	if (n > room)
		n = room;
	key = le32toh(pkts[-1]->hdr) & same;
	for (m = 0; m < n; m++) {
		if (!fcemu_cluster_eject_ok(pkts[m], idx + m))
			break;
		hdr = le32toh(pkts[m]->hdr);
		if ((hdr & same) != key)
			break;
		fcemu__eq_write(q, tail + m, slots, pkts[m]);
	}
	b->tail = tail + m;
	return m;
}

/*
 * A write or read from @hdr's source not applied (@err): counted (window
 * refusals by the window), and the next FENCE_ACK to that engine says so.
 */
static void not_applied(struct fcemu *emu, uint32_t hdr, int err)
{
	unsigned int src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	unsigned int engine = (hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK;

	if (err != FC_DMA_ERR_WINDOW)
		eject_drop(emu);
	if (engine < FC_DMA_MAX_ENGINES && !emu->acks[src][engine].failed)
		emu->acks[src][engine].failed = (uint8_t)err;
}

static void deliver_put(struct fcemu *emu, const struct fc_hw_pkt *pkt,
			uint32_t hdr)
{
	uint32_t len = (hdr >> FC_PKT_LEN_SHIFT) & FC_PKT_LEN_MASK;
	unsigned int src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	struct fcemu_span to;
	uint64_t a;
	int err = FC_DMA_ERR_ADDR;

	memcpy(&a, pkt->payload, sizeof(a));
	if (len <= FC_PKT_PUT_DATA)
		err = fcemu__put_locate(emu, le64toh(a), len, FCEMU_PW_WRITE,
					src, &to);
	if (!err && to.ptr)
		memcpy(to.ptr, pkt->payload + FC_PKT_PUT_ADDR_BYTES, len);
	else if (!err)
		err = emu->ops->peer_move(
			      emu->ctx, to.bus,
			      (void *)(pkt->payload + FC_PKT_PUT_ADDR_BYTES),
			      len, true) ?
			      FC_DMA_ERR_ADDR :
			      FC_DMA_ERR_NONE;
	if (err)
		not_applied(emu, hdr, err);
}

/* A burst not applied fails its chain: the next FENCE_ACK says so. */
static void deliver_burst(struct fcemu *emu, const struct fc_hw_pkt *pkt,
			  uint32_t hdr)
{
	int err = fcemu__burst_apply(emu, pkt, hdr);

	if (err)
		not_applied(emu, hdr, err);
}

static void owe_ack(struct fcemu *emu, const struct fc_hw_pkt *pkt,
		    uint32_t hdr)
{
	unsigned int src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	unsigned int engine = (hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK;
	struct fcemu_ack *a;
	uint32_t token;

	if (engine >= FC_DMA_MAX_ENGINES) {
		eject_drop(emu);
		return;
	}
	memcpy(&token, pkt->payload, sizeof(token));
	a = &emu->acks[src][engine];
	/*
	 * Owed, not sent now: answering must never wait for room in the
	 * injection ring, or two boards fencing each other could deadlock.
	 * A newer fence of the same engine replaces an older one.
	 */
	if (!a->owed)
		emu->acks_owed++;
	a->owed = true;
	a->token = le32toh(token);
}

static void take_ack(struct fcemu *emu, const struct fc_hw_pkt *pkt,
		     uint32_t hdr)
{
	unsigned int src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	unsigned int engine = (hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK;
	struct fcemu_dma *dma;
	uint32_t token;

	if (engine >= emu->cfg.dma_engines)
		return;
	dma = &emu->dma[engine];
	memcpy(&token, pkt->payload, sizeof(token));
	/* An ack for a chain since reset is stale: its token is older. */
	if (!dma->busy || le32toh(token) != dma->fence_token)
		return;
	dma->fence_wait &= ~(1ull << src);
	if (pkt->payload[sizeof(token)] && !dma->fence_err)
		dma->fence_err = pkt->payload[sizeof(token)];
}

static void send_acks(struct fcemu *emu)
{
	unsigned int n, e;

	/* Answers to GETs leave before any FENCE_ACK that follows them. */
	if (emu->get_head != emu->get_tail && !fcemu__get_answer(emu))
		return;
	for (n = 0; n < FC_MAX_NODES && emu->acks_owed; n++) {
		for (e = 0; e < FC_DMA_MAX_ENGINES; e++) {
			struct fcemu_ack *a = &emu->acks[n][e];

			if (!a->owed)
				continue;
			if (!fcemu__fabric_inject_fence(emu, FC_PKT_T_FENCE_ACK,
							n, e, a->token,
							a->failed))
				return;
			a->owed = false;
			a->failed = 0;
			emu->acks_owed--;
		}
	}
}

/* A read request: queued and answered as far as there is room. */
static void take_get(struct fcemu *emu, const struct fc_hw_pkt *pkt,
		     uint32_t hdr)
{
	unsigned int src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	unsigned int engine = (hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK;
	uint32_t len = (hdr >> FC_PKT_LEN_SHIFT) & FC_PKT_LEN_MASK;

	if (engine >= FC_DMA_MAX_ENGINES || len != FC_PKT_GET_LEN) {
		eject_drop(emu);
		return;
	}
	fcemu__get_take(emu, pkt, hdr, &emu->acks[src][engine].failed);
	fcemu__get_answer(emu);
}

/* With a model: the board sends nothing until it takes a packet (an
 * engine at most waits for its fences' acks). */
/*
 * Asked while the host waits (emu/vtorder.c): UINT64_MAX if the board has
 * nothing of its own to send, else the earliest its next packet leaves:
 * what a running chain still sends (its descriptors' packets, GET
 * requests, fences) goes out its route's port no sooner than that port is
 * free; an ack, abort or answer owed, or a PIO store, at its clock.
 */
static uint64_t vt_idle_lb(void *arg)
{
	struct fcemu *emu = arg;
	struct fcemu_cluster *c = emu->cluster;
	const struct fcemu_dma *dma;
	const struct fc_hw_desc *d;
	uint64_t lb = UINT64_MAX, todo, t;
	unsigned int i, k, node;

	if (emu->acks_owed || emu->aborts_owed ||
	    emu->get_head != emu->get_tail ||
	    emu_rd(emu, FC_PIO_TAIL) != emu_rd(emu, FC_PIO_HEAD))
		return emu->vt.now;
	for (i = 0; emu->engines_busy && i < emu->cfg.dma_engines; i++) {
		dma = &emu->dma[i];
		if (!dma->busy)
			continue;
		/* a chain that ends without a fence's ack (local copies
		 * only) wakes the host at its end, no sooner than that */
		if (!dma->fence_need) {
			t = dma->vt > emu->vt.now ? dma->vt : emu->vt.now;
			if (t < lb)
				lb = t;
		}
		todo = dma->fence_need & ~dma->fence_sent;
		for (k = dma->cur; k < dma->count; k++) {
			d = &dma->chain[k];
			if (fcemu__get_desc(emu, d->src_space, le64toh(d->src)))
				node = FC_FABRIC_NODE(le64toh(d->src));
			else if (fcemu__fabric_packets(emu, d->dst_space,
						       le64toh(d->dst)))
				node = FC_FABRIC_NODE(le64toh(d->dst));
			else
				continue;
			todo |= 1ull << node;
		}
		for (node = 0; todo; node++, todo >>= 1) {
			if (!(todo & 1))
				continue;
			t = fcemu_cluster_vt_departs(c, emu->cfg.node_id, node);
			if (t < lb)
				lb = t;
		}
	}
	return lb;
}

/* After a call's packets: the rings and the queue told, the slots taken,
 * what is owed sent, one event for the rings that @landed packets. */
static void eject_end(struct fcemu *emu, struct rx_ring *rr, unsigned int taken,
		      unsigned int landed)
{
	struct fcemu_cluster *c = emu->cluster;

	ring_leave(emu, rr);
	fcemu__eq_batch_end(emu, &rr->batch);
	if (taken) {
		fcemu_cluster_eject_done(c, emu->cfg.node_id, taken);
		emu->ejected += taken;
	}
	if (emu->acks_owed || emu->aborts_owed) {
		send_acks(emu);
		fcemu__fabric_flush_aborts(emu);
		fcemu_cluster_inject_commit(c, emu->cfg.node_id);
	}
	/* One event per batch: the host scans every ring on the vector. */
	if (landed)
		fcemu__raise_irq(emu, FC_IRQ_VEC_CHAN);
}

static __attribute__((noinline)) unsigned int eject(struct fcemu *emu,
						    unsigned int budget)
{
	struct fcemu_cluster *c = emu->cluster;
	struct rx_ring rr = { .chan = -1 };
	unsigned int taken = 0, landed = 0, n = 0, j = 0;
	const struct fc_hw_pkt *run[EJECT_RUN], *pkt;
	uint32_t hdr, first = 0, waiting = 1;
	int r;

	if (budget < EJECT_MIN)
		budget = EJECT_MIN;
	if (emu->get_head != emu->get_tail)
		fcemu__get_answer(emu);
	if (emu->vt.order) {
		/* in simulated-time order: no sooner than it arrives */
		unsigned int lim =
			fcemu__vt_order(c, emu->cfg.node_id, vt_idle_lb, emu);

		if (budget > lim)
			budget = lim;
	}
	/* Slots are read in place, found a run at a time, each checked as
	 * it is read (a slot not written for its index ends the call: the
	 * next drops it), and taken together at the end. */
	while (taken < budget) {
		if (j == n) {
			/* all that waited at the last look taken: what
			 * came since is the next step's */
			if (waiting <= taken)
				break;
			n = fcemu_cluster_eject_peek_lazy(
				c, emu->cfg.node_id, taken, run,
				budget - taken < EJECT_RUN ? budget - taken :
							     EJECT_RUN,
				&first, &waiting);
			j = 0;
			if (!n)
				break;
		}
		if (!fcemu_cluster_eject_ok(run[j], first + j))
			break;
		pkt = run[j++];
		hdr = le32toh(pkt->hdr);
		switch ((hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK) {
		case FC_PKT_T_DATA:
		case FC_PKT_T_CTRL:
		case FC_PKT_T_ABORT:
			r = deliver_data(emu, &rr, pkt, hdr);
			if (r == 0)
				goto out; /* ring full: the fabric holds it */
			if (r > 0 && !rr.eq)
				landed++;
			if (r > 0 && rr.eq && j < n) {
				/* the rest of a message, entry after entry */
				r = (int)deliver_eq_run(emu, &rr, run + j,
							n - j, first + j);
				j += (unsigned int)r;
				taken += (unsigned int)r;
			}
			break;
		case FC_PKT_T_PUT:
			deliver_put(emu, pkt, hdr);
			break;
		case FCEMU_PKT_T_BURST:
			deliver_burst(emu, pkt, hdr);
			break;
		case FC_PKT_T_GET:
			take_get(emu, pkt, hdr);
			break;
		case FC_PKT_T_FENCE:
			/* Everything before it has landed, TAIL included;
			 * its ack waits for the answers to GETs (send_acks). */
			ring_leave(emu, &rr);
			fcemu__eq_batch_end(emu, &rr.batch);
			rr.batch.start = rr.batch.tail;
			owe_ack(emu, pkt, hdr);
			break;
		case FC_PKT_T_FENCE_ACK:
			take_ack(emu, pkt, hdr);
			break;
		default:
			eject_drop(emu);
			break;
		}
		taken++;
	}
out:
	eject_end(emu, &rr, taken, landed);
	return taken;
}

unsigned int fcemu__fabric_eject(struct fcemu *emu, unsigned int budget)
{
	/* Nothing arrived, nothing owed (the second look of most steps):
	 * no frame for the loop above. */
	if (!emu->vt.order && emu->get_head == emu->get_tail &&
	    !emu->acks_owed && !emu->aborts_owed &&
	    !fcemu_cluster_eject_waiting(emu->cluster, emu->cfg.node_id))
		return 0;
	return eject(emu, budget);
}
