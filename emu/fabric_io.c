// SPDX-License-Identifier: MIT
/*
 * The board's own side of the fabric, run in its own process because it
 * touches the board's host memory and engines: the DMA engine cutting a
 * descriptor into packets for the injection ring, and fences that make
 * remote writes visible before a chain ends (the ejection of packets
 * addressed to this board is emu/fabric_eject.c's).
 *
 * A full injection ring stops the engine mid-descriptor; it resumes on the
 * next progress call.
 */
#include <endian.h>
#include <string.h>

#include "emu_internal.h"
#include "fabric.h"

#define SPAN_MAX (64u << 10) /* source bytes resolved at once */

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
int fcemu__fabric_inject_fence(struct fcemu *emu, unsigned int type,
			       unsigned int node, unsigned int engine,
			       uint32_t token, uint8_t status)
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
		if (!fcemu__fabric_inject_fence(emu, FC_PKT_T_FENCE, node,
						dma->index, dma->fence_token,
						0))
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
