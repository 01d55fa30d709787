// SPDX-License-Identifier: MIT
/*
 * The library's control messages: one packet each (FC_XFER_F_CTRL), on
 * the channel they concern, so that they keep their place among its data.
 * This file makes and sends them; protocols (rendezvous, credits)
 * register a handler per kind with the transport, whose receive path
 * hands each to its handler (fabric/handlers.c) and knows no protocol.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto_internal.h"

static struct fc__ctrl_msg ctrl_msg(enum fc__ctrl_kind kind, uint32_t cookie,
				    uint64_t val)
{
	struct fc__ctrl_msg m = {
		.kind = (uint8_t)kind,
		.cookie = htole32(cookie),
		.val = htole64(val),
	};

	return m;
}

int fc__ctrl_xfer(struct fc_dev *dev, struct fc_req *r, uint32_t node,
		  uint32_t port, enum fc__ctrl_kind kind, uint32_t cookie,
		  uint64_t val, struct fc_xfer *x)
{
	struct fc__ctrl_msg m = ctrl_msg(kind, cookie, val);
	int ret = fc__stage_copy(dev, r, &m, sizeof(m), &x->src);

	if (ret)
		return ret;
	x->dst.space = FC_SPACE_FABRIC;
	x->dst.addr = FC_FABRIC_CHAN(node, port);
	x->len = sizeof(m);
	x->flags = FC_XFER_F_CTRL;
	return 0;
}

int fc__ctrl_chain(struct fc_dev *dev, struct fc_req *r, uint32_t node,
		   uint32_t port, enum fc__ctrl_kind kind, uint32_t cookie,
		   uint64_t val)
{
	int ret;

	r->xfers = calloc(1, sizeof(*r->xfers));
	if (!r->xfers)
		return -ENOMEM;
	r->n = 1;
	ret = fc__ctrl_xfer(dev, r, node, port, kind, cookie, val, r->xfers);
	if (ret)
		fc__req_release(dev, r);
	return ret;
}

int fc__ctrl_send(struct fc_dev *dev, uint32_t node, uint32_t port,
		  enum fc__ctrl_kind kind, uint32_t cookie, uint64_t val)
{
	struct fc_req *r = fc__req_new(dev, FC__REQ_CTRL, node);
	int ret;

	if (!r)
		return -ENOMEM;
	ret = fc__ctrl_chain(dev, r, node, port, kind, cookie, val);
	if (ret) {
		free(r);
		return ret;
	}
	fc__req_disown(r); /* nobody waits: freed when its chain ends */
	fc__req_queue(dev->fab, r);
	return 0;
}

/* Write the one packet of a control message into the PIO window.
 * RETURN VALUE: 0 (the window's tail after it at *@end) or -errno. */
static int ctrl_pio(struct fc_dev *dev, uint32_t node, uint32_t port,
		    enum fc__ctrl_kind kind, uint32_t cookie, uint64_t val,
		    uint32_t *end)
{
	struct fc__ctrl_msg m = ctrl_msg(kind, cookie, val);
	struct fc_hw_pkt *pkt;
	uint32_t tail;

	if (!dev->be->pio_room)
		return -EAGAIN;
	pkt = fc__pio_take(dev, &tail);
	if (!pkt)
		return -EAGAIN;
	fc__pio_put(dev, pkt, tail,
		    FC_PKT_HDR(node, 0, port, sizeof(m), FC_PKT_T_CTRL), &m,
		    sizeof(m), end);
	return 0;
}

int fc__ctrl_pio(struct fc_dev *dev, uint32_t node, uint32_t port,
		 enum fc__ctrl_kind kind, uint32_t cookie, uint64_t val,
		 uint32_t *end)
{
	int ret;

	/* in order: only where no chain with channel messages to @node is
	 * queued or running (remote writes and reads it may pass: a stream
	 * of large messages announces the next while the last is written) */
	if (dev->fab->node_msg_chains[node])
		return -EAGAIN;
	ret = ctrl_pio(dev, node, port, kind, cookie, val, end);
	if (ret)
		return ret;
	return (int32_t)(dev->be->pio_head(dev) - *end) >= 0 ? 2 : 1;
}

int fc__ctrl_pio_unordered(struct fc_dev *dev, uint32_t node, uint32_t port,
			   enum fc__ctrl_kind kind, uint32_t cookie,
			   uint64_t val)
{
	uint32_t end;

	return ctrl_pio(dev, node, port, kind, cookie, val, &end);
}

int fc__ctrl_answer(struct fc_dev *dev, uint32_t node, uint32_t port,
		    enum fc__ctrl_kind kind, uint32_t cookie, uint64_t val)
{
	/* One packet the board takes as it is: no staging, no chain, no
	 * request, and nothing queued behind a chain to that node. */
	if (!fc__ctrl_pio_unordered(dev, node, port, kind, cookie, val))
		return 0;
	return fc__ctrl_send(dev, node, port, kind, cookie, val);
}
