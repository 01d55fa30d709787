// SPDX-License-Identifier: MIT
/*
 * The board's own side of the fabric, run in its own process because it
 * touches the board's host memory and engines: the DMA engine cutting a
 * descriptor into packets for the injection ring, fences that make remote
 * writes visible before a chain ends, and the ejection of packets
 * addressed to this board into channel receive rings and memory.
 *
 * A full injection ring stops the engine mid-descriptor; it resumes on the
 * next progress call. A full channel receive ring leaves the packet in the
 * ejection ring: the fabric holds it back, nothing is lost.
 */
#include <endian.h>
#include <string.h>

#include "emu_internal.h"
#include "fabric.h"

#define SPAN_MAX  (64u << 10) /* source bytes resolved at once */
#define EJECT_MIN 256	      /* packets per call, whatever the budget */
#define EJECT_RUN 64	      /* packets found at once */

static unsigned int self(const struct fcemu *emu)
{
	return emu->cfg.node_id;
}

bool fcemu__fabric_packets(const struct fcemu *emu, unsigned int space,
			   uint64_t addr)
{
	if (space != FC_SPACE_FABRIC || !emu->cluster ||
	    (addr & FC_FABRIC_RSVD_MASK))
		return false;
	return FC_FABRIC_REGION(addr) == FC_REGION_CHAN ||
	       FC_FABRIC_NODE(addr) != self(emu);
}

/* Can packets reach @node from here? */
static bool reachable(struct fcemu *emu, unsigned int node)
{
	struct fcemu_cluster *c = emu->cluster;

	if (fcemu_cluster_gone(c, node))
		return false;
	return fcemu_cluster_reg(c, self(emu), FC_ROUTE_TABLE(node)) &
	       FC_ROUTE_VALID;
}

int fcemu__fabric_check(struct fcemu *emu, uint64_t addr, uint64_t len)
{
	unsigned int node = FC_FABRIC_NODE(addr);
	uint64_t off = FC_FABRIC_OFFSET(addr);
	uint64_t mem;

	if (!reachable(emu, node))
		return FC_DMA_ERR_ROUTE;
	switch (FC_FABRIC_REGION(addr)) {
	case FC_REGION_CHAN:
		if (off & ((1ull << FC_FABRIC_CHAN_SHIFT) - 1) ||
		    off >> FC_FABRIC_CHAN_SHIFT >= FC_MAX_CHANNELS)
			return FC_DMA_ERR_ADDR;
		return FC_DMA_ERR_NONE;
	case FC_REGION_BOARD:
		/* The peer's memory size is in its register file, if it is up. */
		mem = fcemu_cluster_reg(emu->cluster, node,
					FC_REG_MEM_SIZE_LO) |
		      (uint64_t)fcemu_cluster_reg(emu->cluster, node,
						  FC_REG_MEM_SIZE_HI)
			      << 32;
		if (mem && (off > mem || len > mem - off))
			return FC_DMA_ERR_ADDR;
		/* fall through */
	case FC_REGION_HOST:
	case FC_REGION_PEER:
		/* The peer's host window and peer window are its own: the
		 * receiver checks them. */
		if (len > FC_FABRIC_OFFSET_MASK + 1 - off)
			return FC_DMA_ERR_ADDR;
		return FC_DMA_ERR_NONE;
	default:
		return FC_DMA_ERR_ROUTE;
	}
}

void fcemu__fabric_chain_start(struct fcemu *emu, struct fcemu_dma *dma)
{
	dma->part_len = 0;
	dma->fence_need = 0;
	dma->fence_sent = 0;
	dma->fence_wait = 0;
	dma->fence_token++;
	dma->fence_err = FC_DMA_ERR_NONE;
	dma->bursts_shared = false;
	dma->pkt_nodes = 0;
	fcemu__peer_unstage(dma);
}

/*
 * The current descriptor's source from cur_off on, @span bytes: CPU
 * memory, or a peer window (a GPU's) read once into a staging copy.
 */
static const uint8_t *src_bytes(struct fcemu *emu, struct fcemu_dma *dma,
				uint64_t span)
{
	const struct fc_hw_desc *d = &dma->chain[dma->cur];
	uint64_t src = le64toh(d->src), len = le32toh(d->len);
	struct fcemu_span at;
	const uint8_t *p;

	if (dma->stage_desc == dma->cur + 1)
		return dma->stage_ptr + dma->cur_off;
	p = fcemu__resolve(emu, d->src_space, src + dma->cur_off, span);
	if (p)
		return p;
	if (!fcemu__locate(emu, d->src_space, src, len, &at) || at.ptr)
		return NULL;
	p = fcemu__peer_stage(emu, dma, at.bus, len);
	if (!p)
		return NULL;
	dma->stage_desc = dma->cur + 1;
	dma->stage_ptr = p;
	return p + dma->cur_off;
}

/* One packet: by the express hop where the route is idle, else queued. */
static int inject(struct fcemu *emu, struct fc_hw_pkt *pkt, uint32_t hdr)
{
	const struct fc_hw_pkt *one = pkt;

	pkt->hdr = htole32(hdr);
	if (fcemu_cluster_express(emu->cluster, self(emu), &one, 1))
		return 1;
	return fcemu_cluster_inject(emu->cluster, self(emu), pkt);
}

void fcemu__fabric_abort(struct fcemu *emu, struct fcemu_dma *dma)
{
	if (!dma->msg_open)
		return;
	dma->msg_open = false;
	if (!dma->abort_owed)
		emu->aborts_owed++;
	dma->abort_owed = true;
}

/* An owed ABORT goes before anything else of the engine's. RETURN VALUE:
 * 1 none owed (any more), 0 no room for it yet. */
static int flush_abort(struct fcemu *emu, struct fcemu_dma *dma)
{
	struct fc_hw_pkt pkt;

	if (!dma->abort_owed)
		return 1;
	memset(&pkt, 0, sizeof(pkt));
	if (!inject(emu, &pkt,
		    FC_PKT_HDR(dma->msg_node, self(emu), dma->msg_chan, 0,
			       FC_PKT_T_ABORT) |
			    FC_PKT_EOM))
		return 0;
	dma->abort_owed = false;
	emu->aborts_owed--;
	return 1;
}

/*
 * Every engine's owed ABORT goes before anything else any engine (or the
 * PIO window) sends: the next message to the node that lost one may take
 * another way. RETURN VALUE: true none owed (any more), false no room yet.
 */
bool fcemu__fabric_flush_aborts(struct fcemu *emu)
{
	unsigned int e;

	for (e = 0; e < emu->cfg.dma_engines && emu->aborts_owed; e++)
		if (!flush_abort(emu, &emu->dma[e]))
			return false;
	return true;
}

/* The packet type of the current descriptor's bytes. */
static unsigned int data_type(const struct fcemu_dma *dma)
{
	return le16toh(dma->chain[dma->cur].flags) & FC_DESC_F_CTRL ?
		       FC_PKT_T_CTRL :
		       FC_PKT_T_DATA;
}

/* Send the DATA (or CTRL) packet being filled. RETURN VALUE: 1, 0 if no room. */
static int flush_data(struct fcemu *emu, struct fcemu_dma *dma,
		      unsigned int node, unsigned int chan, bool eom)
{
	uint32_t hdr = FC_PKT_HDR(node, self(emu), chan, dma->part_len,
				  data_type(dma)) |
		       (eom ? FC_PKT_EOM : 0);

	/* No stale bytes of an earlier message leave the board. */
	memset(dma->part.payload + dma->part_len, 0,
	       FC_PKT_PAYLOAD - dma->part_len);
	if (!inject(emu, &dma->part, hdr))
		return 0;
	dma->part_len = 0;
	dma->msg_open = !eom;
	dma->msg_node = (uint8_t)node;
	dma->msg_chan = (uint8_t)chan;
	return 1;
}

/*
 * Sends a span of @span source bytes at @src, the current descriptor's from
 * offset cur_off on, towards @dst. RETURN VALUE: the bytes sent; fewer than
 * @span with *@blocked set when the fabric has no room.
 */
typedef uint64_t (*send_span_fn)(struct fcemu *emu, struct fcemu_dma *dma,
				 uint64_t dst, const uint8_t *src,
				 uint64_t span, bool *blocked);

/* Up to @budget bytes of the current descriptor, a span at a time. */
static uint64_t send_spans(struct fcemu *emu, struct fcemu_dma *dma,
			   uint64_t budget, bool *blocked, int *err,
			   send_span_fn send_span, uint64_t span_max)
{
	const struct fc_hw_desc *d = &dma->chain[dma->cur];
	uint64_t dst = le64toh(d->dst), len = le32toh(d->len);
	uint64_t moved = 0, span, done;
	const uint8_t *src;

	while (!*blocked && dma->cur_off < len && moved < budget) {
		span = len - dma->cur_off;
		if (span > budget - moved)
			span = budget - moved;
		if (span > span_max)
			span = span_max;
		src = src_bytes(emu, dma, span);
		if (!src) {
			*err = FC_DMA_ERR_ADDR;
			return moved;
		}
		done = send_span(emu, dma, dst, src, span, blocked);
		dma->cur_off += done;
		moved += done;
	}
	return moved;
}

static unsigned int data_chan(uint64_t dst)
{
	return FC_FABRIC_OFFSET(dst) >> FC_FABRIC_CHAN_SHIFT;
}

/*
 * @n full packets of header @hdr from @src on: by the express hop where
 * the route is idle, the rest into the injection ring. RETURN VALUE:
 * packets taken, fewer when the ring fills.
 */
static unsigned int inject_full(struct fcemu *emu, uint32_t hdr,
				const uint8_t *src, unsigned int n)
{
	unsigned int k = fcemu_cluster_express_full(emu->cluster, self(emu),
						    hdr, src, n);

	if (k == n)
		return n;
	return k + fcemu_cluster_inject_full(emu->cluster, self(emu), hdr,
					     src + (size_t)k * FC_PKT_PAYLOAD,
					     n - k);
}

static uint64_t send_data_span(struct fcemu *emu, struct fcemu_dma *dma,
			       uint64_t dst, const uint8_t *src, uint64_t span,
			       bool *blocked)
{
	unsigned int node = FC_FABRIC_NODE(dst), chan = data_chan(dst);
	uint64_t done, n, full;
	uint32_t hdr;

	for (done = 0; done < span; done += n) {
		/* A full packet leaves once more bytes follow it. */
		if (dma->part_len == FC_PKT_PAYLOAD &&
		    !flush_data(emu, dma, node, chan, false)) {
			*blocked = true;
			break;
		}
		full = dma->part_len ? 0 : (span - done - 1) / FC_PKT_PAYLOAD;
		if (full) {
			/* Whole packets with more bytes behind them: straight
			 * from the source into the injection ring. */
			hdr = FC_PKT_HDR(node, self(emu), chan, FC_PKT_PAYLOAD,
					 data_type(dma));
			n = inject_full(emu, hdr, src + done,
					(unsigned int)full);
			if (n) {
				dma->msg_open = true;
				dma->msg_node = (uint8_t)node;
				dma->msg_chan = (uint8_t)chan;
			}
			if (n < full) {
				*blocked = true;
				return done + n * FC_PKT_PAYLOAD;
			}
			n *= FC_PKT_PAYLOAD;
			continue;
		}
		n = FC_PKT_PAYLOAD - dma->part_len;
		if (n > span - done)
			n = span - done;
		memcpy(dma->part.payload + dma->part_len, src + done, n);
		dma->part_len += n;
	}
	return done;
}

static uint64_t send_data(struct fcemu *emu, struct fcemu_dma *dma,
			  uint64_t budget, bool *blocked, int *err)
{
	const struct fc_hw_desc *d = &dma->chain[dma->cur];
	uint64_t dst = le64toh(d->dst), len = le32toh(d->len);
	uint64_t moved;

	moved = send_spans(emu, dma, budget, blocked, err, send_data_span,
			   SPAN_MAX);
	if (*err)
		return moved;
	/* The message's last packet; with F_MORE it goes on in the next one. */
	if (!*blocked && dma->cur_off == len &&
	    !(le16toh(d->flags) & FC_DESC_F_MORE) &&
	    !flush_data(emu, dma, FC_FABRIC_NODE(dst), data_chan(dst), true))
		*blocked = true;
	return moved;
}

static uint64_t send_put_span(struct fcemu *emu, struct fcemu_dma *dma,
			      uint64_t dst, const uint8_t *src, uint64_t span,
			      bool *blocked)
{
	unsigned int node = FC_FABRIC_NODE(dst);
	uint64_t at = (dst & FCEMU_PUT_ADDR_MASK) + dma->cur_off;
	struct fc_hw_pkt pkt;
	uint64_t done, n, a;

	if (span >= FCEMU_BURST_MIN && fcemu__burst_usable(emu, node)) {
		/* virtual time: the record leaves as its last packet would */
		fcemu__vt_skip(&emu->vt,
			       (span + FC_PKT_PUT_DATA - 1) / FC_PKT_PUT_DATA);
		if (!fcemu__burst_inject(emu, dma->index, node, at, src,
					 (uint32_t)span)) {
			fcemu__vt_skip(&emu->vt, 1);
			*blocked = true;
			return 0;
		}
		dma->bursts_shared |= fcemu__burst_shared(span);
		return span;
	}
	for (done = 0; done < span; done += n) {
		n = span - done < FC_PKT_PUT_DATA ? span - done :
						    FC_PKT_PUT_DATA;
		/* node bits zero: the receiver applies region + offset */
		a = htole64(at + done);
		memcpy(pkt.payload, &a, sizeof(a));
		memcpy(pkt.payload + FC_PKT_PUT_ADDR_BYTES, src + done, n);
		memset(pkt.payload + FC_PKT_PUT_ADDR_BYTES + n, 0,
		       FC_PKT_PUT_DATA - n);
		if (!inject(emu, &pkt,
			    FC_PKT_HDR(node, self(emu), dma->index, n,
				       FC_PKT_T_PUT))) {
			*blocked = true;
			break;
		}
	}
	return done;
}

/*
 * A PUT into another process's GPU memory, copied there directly
 * (emu/ipc.c), of any size: one driver call beats a staging copy, packets
 * and the receiver's own copy even at 8 bytes (2 H200s: 15.8 -> 8.7 us).
 * Only while nothing of this chain went to @node the usual way: a copy
 * must not overtake packets still in the rings.
 * RETURN VALUE: bytes copied, 0: not taken.
 */
static uint64_t send_put_direct(struct fcemu *emu, struct fcemu_dma *dma,
				uint64_t budget)
{
	const struct fc_hw_desc *d = &dma->chain[dma->cur];
	uint64_t dst = le64toh(d->dst), len = le32toh(d->len), n;
	unsigned int node = FC_FABRIC_NODE(dst);
	struct fcemu_span at;

	/* A timing model counts packets: those of the burst, then. */
	if (FC_FABRIC_REGION(dst) != FC_REGION_PEER || emu->vt.on ||
	    (dma->pkt_nodes & (1ull << node)) ||
	    dma->stage_desc == dma->cur + 1)
		return 0;
	n = len - dma->cur_off;
	/* One driver call and one wait per step: steps of the host's budget
	 * (8 MiB a poll) spent a third of NVLink's rate on the waits, and
	 * even 64 MiB steps a quarter at 256 MiB; a whole descriptor (1 GiB
	 * at most) holds the board a few milliseconds on NVLink. */
	if (budget < FCEMU_IPC_STEP)
		budget = FCEMU_IPC_STEP;
	if (n > budget && n - budget >= FCEMU_BURST_MIN)
		n = budget;
	if (!fcemu__locate(emu, d->src_space, le64toh(d->src) + dma->cur_off, n,
			   &at))
		return 0;
	n = fcemu__ipc_put(emu, node, FC_FABRIC_OFFSET(dst) + dma->cur_off, &at,
			   n);
	dma->cur_off += n;
	return n;
}

static uint64_t send_put(struct fcemu *emu, struct fcemu_dma *dma,
			 uint64_t budget, bool *blocked, int *err)
{
	uint64_t dst = le64toh(dma->chain[dma->cur].dst);
	unsigned int node = FC_FABRIC_NODE(dst);
	uint64_t n;

	dma->fence_need |= 1ull << node;
	n = send_put_direct(emu, dma, budget);
	if (n)
		return n;
	dma->pkt_nodes |= 1ull << node;
	return send_spans(emu, dma, budget, blocked, err, send_put_span,
			  fcemu__burst_usable(emu, node) ? FCEMU_BURST_MAX :
							   SPAN_MAX);
}

uint64_t fcemu__fabric_send(struct fcemu *emu, struct fcemu_dma *dma,
			    uint64_t budget, bool *blocked, int *err)
{
	uint64_t dst = le64toh(dma->chain[dma->cur].dst);

	*blocked = false;
	*err = FC_DMA_ERR_NONE;
	if (emu->aborts_owed && !fcemu__fabric_flush_aborts(emu)) {
		*blocked = true;
		return 0;
	}
	if (FC_FABRIC_REGION(dst) == FC_REGION_CHAN)
		return send_data(emu, dma, budget, blocked, err);
	return send_put(emu, dma, budget, blocked, err);
}

/* FENCE and FENCE_ACK: chan = the fencing engine, payload = its token
 * (and an ack's status). */
static int inject_fence(struct fcemu *emu, unsigned int type, unsigned int node,
			unsigned int engine, uint32_t token, uint8_t status)
{
	struct fc_hw_pkt pkt;
	uint32_t t = htole32(token);
	unsigned int len = sizeof(t);

	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.payload, &t, sizeof(t));
	if (type == FC_PKT_T_FENCE_ACK)
		pkt.payload[len++] = status;
	return inject(emu, &pkt,
		      FC_PKT_HDR(node, self(emu), engine, len, type));
}

int fcemu__fabric_fence(struct fcemu *emu, struct fcemu_dma *dma)
{
	uint64_t todo = dma->fence_need & ~dma->fence_sent;
	unsigned int node;

	for (node = 0; todo; node++, todo >>= 1) {
		if (!(todo & 1))
			continue;
		if (!inject_fence(emu, FC_PKT_T_FENCE, node, dma->index,
				  dma->fence_token, 0))
			return 0;
		dma->fence_sent |= 1ull << node;
		dma->fence_wait |= 1ull << node;
	}
	/* Waiting: lend the receivers a hand with our bursts. */
	if (dma->fence_wait && dma->bursts_shared)
		fcemu__burst_help(emu, dma->fence_wait);
	if (!dma->fence_wait)
		return dma->fence_err ? -(int)dma->fence_err : 1;
	/* A node that died will never answer: end the chain, do not hang. */
	for (node = 0; node < FC_MAX_NODES; node++)
		if ((dma->fence_wait & (1ull << node)) &&
		    fcemu_cluster_gone(emu->cluster, node))
			return -FC_DMA_ERR_ROUTE;
	return 0;
}

/* ---- Ejection ---- */

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

static bool is_data(uint32_t hdr)
{
	unsigned int type = (hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK;

	return type == FC_PKT_T_DATA || type == FC_PKT_T_CTRL ||
	       type == FC_PKT_T_ABORT;
}

/*
 * After a packet went to the event queue for @rr's endpoint: the packets
 * of the run @pkts[0..@n) (ring index @idx on) that follow it to the same
 * endpoint, while the queue has room as last seen, as deliver_data()
 * would write them, each slot checked as it is read.
 * RETURN VALUE: packets written.
 */
static unsigned int deliver_eq_run(struct fcemu *emu, struct rx_ring *rr,
				   const struct fc_hw_pkt *const *pkts,
				   unsigned int n, uint32_t idx)
{
	struct fcemu_eq_batch *b = &rr->batch;
	uint32_t room = fcemu__eq_room(emu, b), slots = emu->eq.slots;
	uint32_t tail = b->tail, hdr;
	unsigned int m;

	if (n > room)
		n = room;
	for (m = 0; m < n; m++) {
		if (!fcemu_cluster_eject_ok(pkts[m], idx + m))
			break;
		hdr = le32toh(pkts[m]->hdr);
		if (!is_data(hdr) || (int)((hdr >> FC_PKT_CHAN_SHIFT) &
					   FC_PKT_CHAN_MASK) != rr->chan)
			break;
		fcemu__eq_write(b->q, tail + m, slots, pkts[m]);
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
			if (!inject_fence(emu, FC_PKT_T_FENCE_ACK, n, e,
					  a->token, a->failed))
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
			t = fcemu_cluster_vt_departs(c, self(emu), node);
			if (t < lb)
				lb = t;
		}
	}
	return lb;
}

unsigned int fcemu__fabric_eject(struct fcemu *emu, unsigned int budget)
{
	struct fcemu_cluster *c = emu->cluster;
	struct rx_ring rr = { .chan = -1 };
	unsigned int taken = 0, landed = 0, n = 0, j = 0;
	const struct fc_hw_pkt *run[EJECT_RUN], *pkt;
	uint32_t hdr, first = 0;
	int r;

	if (budget < EJECT_MIN)
		budget = EJECT_MIN;
	if (emu->get_head != emu->get_tail)
		fcemu__get_answer(emu);
	if (emu->vt.order) {
		/* in simulated-time order: no sooner than it arrives */
		unsigned int lim =
			fcemu__vt_order(c, self(emu), vt_idle_lb, emu);

		if (budget > lim)
			budget = lim;
	}
	/* Slots are read in place, found a run at a time, each checked as
	 * it is read (a slot not written for its index ends the call: the
	 * next drops it), and taken together at the end. */
	while (taken < budget) {
		if (j == n) {
			n = fcemu_cluster_eject_peek_lazy(
				c, self(emu), taken, run,
				budget - taken < EJECT_RUN ? budget - taken :
							     EJECT_RUN,
				&first);
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
	ring_leave(emu, &rr);
	fcemu__eq_batch_end(emu, &rr.batch);
	if (taken) {
		fcemu_cluster_eject_done(c, self(emu), taken);
		emu->ejected += taken;
	}
	if (emu->acks_owed || emu->aborts_owed) {
		send_acks(emu);
		fcemu__fabric_flush_aborts(emu);
		fcemu_cluster_inject_commit(c, self(emu));
	}
	/* One event per batch: the host scans every ring on the vector. */
	if (landed)
		fcemu__raise_irq(emu, FC_IRQ_VEC_CHAN);
	return taken;
}
