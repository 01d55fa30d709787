// SPDX-License-Identifier: MIT
/*
 * Eager messages, the protocol of small and middling channel messages
 * (below rendezvous): the bytes go at once, copied into the board's PIO
 * window when the message is small and nothing of ours to that node is
 * queued (fc__pio_write, fc__pio_sent), else staged and sent as one chain
 * (fc__eager_isend). The channel API (chan/chan.c) picks the protocol;
 * credits (credit.c) decide when the bytes may go.
 */
#include <endian.h>
#include <string.h>

#include "proto_internal.h"

/*
 * An eager send: the message is copied and sent as one chain. The copy
 * lets the caller reuse @buf at once, and a send given up on a timeout go
 * on without it. A caller that leaves @buf alone until the send ends
 * (@kept) and has it registered saves the copy: the chain reads @buf.
 */
int fc__eager_isend(struct fc_chan *ch, const void *buf, size_t len, bool kept,
		    struct fc_req *r)
{
	struct fc_dev *dev = ch->dev;
	struct fc_loc src;
	int ret = 0;

	if (kept)
		fc__req_umem_get(dev, r, buf, len, false);
	if (r->umem) {
		src = fc_host(r->umem, r->umem_off);
	} else {
		if (kept)
			fc__stat_inc(&dev->stats.kept_copies);
		ret = fc__stage_copy(dev, r, buf, len, &src);
	}
	if (!ret)
		ret = fc__build_chain(dev, r, src,
				      FC_FABRIC_CHAN(ch->peer, ch->port), len,
				      true, 0);
	if (ret) {
		fc__req_release(dev, r);
		fc__req_umem_put(dev, r);
	}
	return ret;
}

/*
 * Is @node known to be down by the board (FC_ROUTER_NODES_DOWN)? A chain
 * to it fails with the engine's route check; a PIO packet would only be
 * dropped by the router, so such a send takes the chain's way. Where the
 * registers are not mapped (the kernel driver) a register read would cost
 * a system call per message: the peer check before every send does.
 */
static bool board_says_down(struct fc_dev *dev, uint32_t node)
{
	uint32_t off = node < 32 ? FC_ROUTER_NODES_DOWN_LO :
				   FC_ROUTER_NODES_DOWN_HI;

	if (!dev->regs)
		return false;
	return __atomic_load_n(&dev->regs[off / 4], __ATOMIC_ACQUIRE) &
	       (1u << (node % 32));
}

/*
 * A small message through the PIO window: the packets written from @buf
 * straight into the board's window (no staging copy, no copy on the
 * stack, no descriptor, no chain), so @buf is free again on return. Only
 * while no chain of ours to that node is queued or running, so that it
 * cannot pass an earlier message (hw.h: the host keeps that order);
 * chains to it wait in turn until the board has taken the window's
 * messages for it (submit_queued()). The send ends once the board has
 * taken the packets (FC_PIO_HEAD at *end), at once most of the time.
 * RETURN VALUE: 2 written and taken already, 1 written, or -errno (send
 * it as a chain instead).
 */
static int pio_write(struct fc_chan *ch, const void *buf, size_t len,
		     uint32_t *end)
{
	struct fc_dev *dev = ch->dev;
	const uint8_t *p = buf;
	struct fc_hw_pkt *win, *pkt;
	unsigned int n = 1, i;
	uint32_t tail, head;
	size_t last = len;

	if (!dev->be->pio_room || len > PIO_MAX_MSG ||
	    dev->fab->node_chains[ch->peer] || board_says_down(dev, ch->peer))
		return -EAGAIN;
	if (len > FC_PKT_PAYLOAD) {
		n = (unsigned int)((len + FC_PKT_PAYLOAD - 1) / FC_PKT_PAYLOAD);
		last = len - (size_t)(n - 1) * FC_PKT_PAYLOAD;
	}
	fc__dev_lock(dev);
	win = dev->be->pio_room(dev, n, &tail);
	if (!win) {
		fc__dev_unlock(dev);
		return -EAGAIN;
	}
	for (i = 0; i + 1 < n; i++, p += FC_PKT_PAYLOAD) {
		pkt = &win[(tail + i) % FC_PIO_SLOTS];
		pkt->hdr = htole32(FC_PKT_HDR(ch->peer, 0, ch->port,
					      FC_PKT_PAYLOAD, FC_PKT_T_DATA));
		memcpy(pkt->payload, p, FC_PKT_PAYLOAD);
	}
	/* no stale bytes of an earlier packet go out with the last one (the
	 * whole payload: a constant size is a few wide stores) */
	pkt = &win[(tail + i) % FC_PIO_SLOTS];
	pkt->hdr =
		htole32(FC_PKT_HDR(ch->peer, 0, ch->port, last, FC_PKT_T_DATA) |
			FC_PKT_EOM);
	memset(pkt->payload, 0, FC_PKT_PAYLOAD);
	fc__copy_small(pkt->payload, p, last);
	*end = tail + n;
	head = dev->be->pio_post(dev, *end);
	fc__dev_unlock(dev);
	return (int32_t)(head - *end) >= 0 ? 2 : 1;
}

int fc__eager_send_now(struct fc_chan *ch, struct fc__src *s, const void *buf,
		       size_t len, uint32_t *end)
{
	struct credit_src *c = fc__credit_src(s);
	uint64_t cost = fc__credit_cost(len);
	int ret;

	if (!fc__credit_free(fc__credit_of(ch->dev->fab), c, cost))
		return -EAGAIN;
	ret = pio_write(ch, buf, len, end);
	if (ret < 0)
		return -EAGAIN;
	c->tx_used += cost;
	return ret;
}

/*
 * A blocking send's shortest way: a message of one packet, from host
 * memory, to a channel whose state is made (an earlier send or receive),
 * below rendezvous, with its credit to spare and nothing of ours queued to
 * the node. Everything fc__eager_send_now() and the calls before it check,
 * in one function and no call but the window's two.
 * RETURN VALUE: as fc__eager_send_now(), or -EHOSTDOWN.
 */
int fc__eager_send_one(struct fc_chan *ch, const void *buf, size_t len,
		       uint32_t *end)
{
	struct fc_dev *dev = ch->dev;
	struct fc__fabric *fab = dev->fab;
	struct fc__port *pt = fab->ports[ch->port];
	const uint64_t cost = fc__credit_cost(len);
	struct fc__src *s;
	struct credit_src *c;
	struct fc_hw_pkt *pkt;
	uint32_t tail, head;
	int ret;

	ret = fc__peer_check(dev, ch->peer);
	if (ret)
		return ret;
	s = pt ? pt->src[ch->peer] : NULL;
	/* a request at hand (cached) in case the board is slow to take it */
	if (!s || !fab->req_cached || fc__rndv_takes(fab, len))
		return -EAGAIN;
	c = fc__credit_src(s);
	if (!fc__credit_free(fc__credit_of(fab), c, cost) ||
	    !dev->be->pio_room || fab->node_chains[ch->peer] ||
	    board_says_down(dev, ch->peer))
		return -EAGAIN;
	pkt = fc__pio_take(dev, &tail);
	if (!pkt)
		return -EAGAIN;
	head = fc__pio_put(dev, pkt, tail,
			   FC_PKT_HDR(ch->peer, 0, ch->port, len,
				      FC_PKT_T_DATA),
			   buf, len, end);
	c->tx_used += cost;
	/* counted under the fabric's lock: a plain add, no locked one */
	__atomic_store_n(
		&dev->stats.one_packet,
		__atomic_load_n(&dev->stats.one_packet, __ATOMIC_RELAXED) + 1,
		__ATOMIC_RELAXED);
	return (int32_t)(head - *end) >= 0 ? 2 : 1;
}
