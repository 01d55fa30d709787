// SPDX-License-Identifier: MIT
/*
 * Read requests (docs/hardware.md sections 9 and 13): a descriptor whose
 * source is on another node sends one GET; that node answers with PUTs to
 * the reply address, and answers the FENCE that follows only once the
 * replies have left, so the requester's chain ends after its data landed.
 *
 * Answers wait in a queue that grows as needed, and the board sends no
 * FENCE_ACK while any is left: ejection never waits for room to inject,
 * so two boards reading each other cannot hold each other's packets back
 * for ever. Replies from our own memory go as
 * bursts where the requester takes them; replies from peer memory (a
 * GPU's) are read once into a copy and go as packets, so that the copy can
 * be freed as soon as they have left.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "fabric.h"

static unsigned int self(const struct fcemu *emu)
{
	return emu->cfg.node_id;
}

bool fcemu__get_desc(const struct fcemu *emu, unsigned int space, uint64_t addr)
{
	return space == FC_SPACE_FABRIC && emu->cluster &&
	       !(addr & FC_FABRIC_RSVD_MASK) &&
	       FC_FABRIC_NODE(addr) != self(emu);
}

int fcemu__get_check(struct fcemu *emu, uint64_t src, uint64_t len)
{
	struct fcemu_cluster *c = emu->cluster;
	unsigned int node = FC_FABRIC_NODE(src);
	uint64_t off = FC_FABRIC_OFFSET(src), mem;
	uint32_t caps;

	if (fcemu_cluster_gone(c, node) ||
	    !(fcemu_cluster_reg(c, self(emu), FC_ROUTE_TABLE(node)) &
	      FC_ROUTE_VALID))
		return FC_DMA_ERR_ROUTE;
	caps = fcemu_cluster_reg(c, node, FC_REG_CAPS);
	if (caps && !(caps & FC_CAP_FABRIC_GET))
		return FC_DMA_ERR_ROUTE;
	if (FC_FABRIC_REGION(src) == FC_REGION_CHAN)
		return FC_DMA_ERR_ADDR; /* a channel is not memory */
	if (len > FC_FABRIC_OFFSET_MASK + 1 - off)
		return FC_DMA_ERR_ADDR;
	if (FC_FABRIC_REGION(src) != FC_REGION_BOARD)
		return FC_DMA_ERR_NONE; /* the remote board checks */
	mem = fcemu_cluster_reg(c, node, FC_REG_MEM_SIZE_LO) |
	      (uint64_t)fcemu_cluster_reg(c, node, FC_REG_MEM_SIZE_HI) << 32;
	if (mem && (off > mem || len > mem - off))
		return FC_DMA_ERR_ADDR;
	return FC_DMA_ERR_NONE;
}

static int inject(struct fcemu *emu, struct fc_hw_pkt *pkt, uint32_t hdr)
{
	const struct fc_hw_pkt *one = pkt;

	pkt->hdr = htole32(hdr);
	if (fcemu_cluster_express(emu->cluster, self(emu), &one, 1))
		return 1;
	return fcemu_cluster_inject(emu->cluster, self(emu), pkt);
}

int fcemu__get_send(struct fcemu *emu, struct fcemu_dma *dma)
{
	const struct fc_hw_desc *d = &dma->chain[dma->cur];
	uint64_t src = le64toh(d->src), dst = le64toh(d->dst), reply;
	uint32_t len = le32toh(d->len);
	unsigned int node = FC_FABRIC_NODE(src);
	struct fc_hw_pkt pkt;
	uint64_t v;

	switch (d->dst_space) {
	case FC_SPACE_HOST:
		reply = FC_FABRIC_ADDR(self(emu), FC_REGION_HOST, dst);
		break;
	case FC_SPACE_BOARD:
		reply = FC_FABRIC_ADDR(self(emu), FC_REGION_BOARD, dst);
		break;
	default:
		reply = dst; /* our own node's fabric address */
		break;
	}
	memset(&pkt, 0, sizeof(pkt));
	v = htole64(src & FCEMU_PUT_ADDR_MASK);
	memcpy(pkt.payload + FC_PKT_GET_SRC, &v, sizeof(v));
	v = htole64(reply);
	memcpy(pkt.payload + FC_PKT_GET_REPLY, &v, sizeof(v));
	len = htole32(len);
	memcpy(pkt.payload + FC_PKT_GET_BYTES, &len, sizeof(len));
	if (!inject(emu, &pkt,
		    FC_PKT_HDR(node, self(emu), dma->index, FC_PKT_GET_LEN,
			       FC_PKT_T_GET)))
		return 0;
	dma->fence_need |= 1ull << node;
	return 1;
}

/* Read a request's source, checked: ours, or a copy of peer memory. */
static int get_source(struct fcemu *emu, struct fcemu_get *g, uint64_t src,
		      unsigned int node)
{
	struct fcemu_span at;
	int err;

	err = fcemu__put_locate(emu, src, g->len, FCEMU_PW_READ, node, &at);
	if (err)
		return err;
	if (at.ptr) {
		g->src = at.ptr;
		return FC_DMA_ERR_NONE;
	}
	g->copy = malloc(g->len);
	if (!g->copy)
		return FC_DMA_ERR_ADDR;
	if (emu->ops->peer_move(emu->ctx, at.bus, g->copy, g->len, false)) {
		free(g->copy);
		g->copy = NULL;
		return FC_DMA_ERR_ADDR;
	}
	g->src = g->copy;
	return FC_DMA_ERR_NONE;
}

/* Room for one more answer. RETURN VALUE: false, no memory. */
static bool room(struct fcemu *emu)
{
	unsigned int n = emu->get_tail - emu->get_head, cap, i;
	struct fcemu_get *q;

	if (n < emu->get_cap)
		return true;
	cap = emu->get_cap ? 2 * emu->get_cap : 16;
	q = calloc(cap, sizeof(*q));
	if (!q)
		return false;
	for (i = 0; i < n; i++)
		q[i] = emu->gets[(emu->get_head + i) % emu->get_cap];
	free(emu->gets);
	emu->gets = q;
	emu->get_cap = cap;
	emu->get_head = 0;
	emu->get_tail = n;
	return true;
}

void fcemu__get_free(struct fcemu *emu)
{
	for (; emu->get_head != emu->get_tail; emu->get_head++)
		free(emu->gets[emu->get_head % emu->get_cap].copy);
	free(emu->gets);
	emu->gets = NULL;
	emu->get_cap = 0;
}

/*
 * With a model: the answers leave once the request arrived, and from host
 * memory once the first packet's bytes came back over PCIe (a read's
 * round trip); the rest stream behind them.
 */
static void vt_get(struct fcemu *emu, const struct fc_hw_pkt *pkt, uint64_t src,
		   uint32_t len)
{
	const struct fcm_profile *p = &emu->vt.prof;
	uint64_t at = fcemu_cluster_vt_arrival(emu->cluster, self(emu), pkt);

	if (FC_FABRIC_REGION(src) == FC_REGION_HOST && p->pcie_lanes > 0)
		at += fcemu__vt_ps(fcm_pcie_read_ns(
			p, len < FC_PKT_PUT_DATA ? len : FC_PKT_PUT_DATA));
	fcemu__vt_begin(&emu->vt, at);
}

void fcemu__get_take(struct fcemu *emu, const struct fc_hw_pkt *pkt,
		     uint32_t hdr, uint8_t *failed)
{
	unsigned int node = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	struct fcemu_get *g;
	uint64_t src, reply;
	uint32_t len;
	int err;

	if (!room(emu)) {
		if (!*failed)
			*failed = FC_DMA_ERR_ADDR; /* seen as a fault */
		return;
	}
	g = &emu->gets[emu->get_tail % emu->get_cap];
	memset(g, 0, sizeof(*g));
	memcpy(&src, pkt->payload + FC_PKT_GET_SRC, sizeof(src));
	memcpy(&reply, pkt->payload + FC_PKT_GET_REPLY, sizeof(reply));
	memcpy(&len, pkt->payload + FC_PKT_GET_BYTES, sizeof(len));
	len = le32toh(len);
	reply = le64toh(reply);
	g->node = (uint8_t)node;
	g->engine = (uint8_t)((hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK);
	g->reply = reply & FCEMU_PUT_ADDR_MASK;
	g->len = len;
	err = FC_DMA_ERR_ADDR;
	if (len && len <= FC_DESC_MAX_LEN && FC_FABRIC_NODE(reply) == node &&
	    fc_hw_fabric_span_ok(reply, len))
		err = get_source(emu, g, le64toh(src), node);
	if (err) {
		if (!*failed)
			*failed = (uint8_t)err;
		return;
	}
	if (emu->vt.on)
		vt_get(emu, pkt, le64toh(src), len);
	emu->get_tail++;
}

/* Some of @g's bytes as PUT packets or a burst. RETURN VALUE: bytes. */
static uint64_t answer_some(struct fcemu *emu, struct fcemu_get *g)
{
	uint64_t left = g->len - g->done, n, a;
	struct fc_hw_pkt pkt;

	if (!g->copy && left >= FCEMU_BURST_MIN &&
	    fcemu__burst_usable(emu, g->node)) {
		n = left < FCEMU_BURST_MAX ? left : FCEMU_BURST_MAX;
		return fcemu__burst_inject(emu, g->engine, g->node,
					   g->reply + g->done, g->src + g->done,
					   (uint32_t)n) ?
			       n :
			       0;
	}
	n = left < FC_PKT_PUT_DATA ? left : FC_PKT_PUT_DATA;
	a = htole64(g->reply + g->done);
	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.payload, &a, sizeof(a));
	memcpy(pkt.payload + FC_PKT_PUT_ADDR_BYTES, g->src + g->done, n);
	return inject(emu, &pkt,
		      FC_PKT_HDR(g->node, self(emu), g->engine, n,
				 FC_PKT_T_PUT)) ?
		       n :
		       0;
}

bool fcemu__get_answer(struct fcemu *emu)
{
	struct fcemu_get *g;
	uint64_t n;

	while (emu->get_head != emu->get_tail) {
		g = &emu->gets[emu->get_head % emu->get_cap];
		while (g->done < g->len) {
			n = answer_some(emu, g);
			if (!n) {
				fcemu_cluster_inject_commit(emu->cluster,
							    self(emu));
				return false;
			}
			g->done += n;
		}
		free(g->copy);
		g->copy = NULL;
		emu->get_head++;
	}
	fcemu_cluster_inject_commit(emu->cluster, self(emu));
	return true;
}
