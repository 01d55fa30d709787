/* SPDX-License-Identifier: MIT */
/*
 * The protocols on the transport (lib/proto/): control messages, end-to-end
 * credits and rendezvous, for the channel API above them. Each registers
 * its upcalls and its control messages' handlers (by kind) with the
 * transport at open; the transport calls them only through those.
 */
#ifndef FC_PROTO_H
#define FC_PROTO_H

#include "transport.h"

/* The protocols' control messages (ctrl.c), by kind (below
 * FC__CTRL_KINDS): each kind's handler is registered with the transport
 * (fc__ctrl_register). */
enum fc__ctrl_kind {
	FC__CTRL_RTS = 1,    /* val: the message's length */
	FC__CTRL_CTS,	     /* val: fabric address to write to; 0: dropped */
	FC__CTRL_FIN,	     /* val: 0, or the write's -errno */
	FC__CTRL_CREDIT,     /* val: bytes consumed from the sender, total */
	FC__CTRL_CREDIT_ASK, /* val: bytes sent, total */
	FC__CTRL_RTS_GET,    /* val: source offset | (length - 1) << 40 */
	FC__CTRL_GOT,	     /* val: 0, or the read's -errno */
	FC__CTRL_REVOKE,  /* val: 0; read no more from the RTS_GET's source */
	FC__CTRL_REVOKED, /* val: 0; it will be cleared (CTS) instead */
	FC__CTRL_LAST = FC__CTRL_REVOKED
};
_Static_assert(FC__CTRL_LAST < FC__CTRL_KINDS, "the transport's table");

/* eager.c: channel messages below rendezvous's threshold. Messages up to
 * PIO_MAX_MSG go through the PIO window when they can:
 * fc__eager_send_now() writes them, then fc__pio_sent() ends or queues
 * the request that carries it. Else fc__eager_isend() (staged unless
 * @kept and registered; @r released on an error). */
#define PIO_MAX_PKTS 48
#define PIO_MAX_MSG  (PIO_MAX_PKTS * FC_PKT_PAYLOAD)

/* Send @r went through the window up to @end (@taken: the board has it).
 * Inline: it is on every small send's path. */
static inline void fc__pio_sent(struct fc__fabric *fab, struct fc_req *r,
				uint32_t end, bool taken)
{
	r->submitted = true;
	r->pio_end = end;
	if (taken)
		r->status = 0;
	else
		fc__pio_queue(fab, r);
}

int fc__eager_isend(struct fc_chan *ch, const void *buf, size_t len, bool kept,
		    struct fc_req *r);
/*
 * A small message's short way: when (port, source) @s has the credit to
 * spare and nothing held, and the PIO window takes it, written from @buf
 * into the window and its credit counted (fc__credit_cost(@len)). No
 * request is made: one that is not taken yet (1) needs one, for
 * fc__pio_sent(). RETURN VALUE: 2 written and taken, 1 written (the
 * window's head at *@end), -EAGAIN: nothing done, take the long way.
 */
int fc__eager_send_now(struct fc_chan *ch, struct fc__src *s, const void *buf,
		       size_t len, uint32_t *end);
/* The same for a blocking send of one packet (1 to FC_PKT_PAYLOAD bytes
 * from host memory), with the checks of the calls before it: the peer's
 * state, the channel's, rendezvous, a request at hand. RETURN VALUE: as
 * fc__eager_send_now()'s, or -EHOSTDOWN. */
int fc__eager_send_one(struct fc_chan *ch, const void *buf, size_t len,
		       uint32_t *end);

/* rndv.c: channel messages of RNDV_MIN bytes and more (see there). With
 * @now (the channel's turn) the announcement may go at once through the
 * PIO window: then @r is submitted already, else the caller queues it. */
bool fc__rndv_wanted(struct fc_dev *dev, size_t len);
int fc__rndv_isend(struct fc_chan *ch, const void *buf, size_t len, bool now,
		   struct fc_req *r);
/* Its state (the threshold: FC_CHAN_RNDV_MIN, FPGACOMM_RNDV_MIN, 0 where
 * the backend cannot), upcalls and control messages' handlers, into @fab.
 * RETURN VALUE: 0 or -ENOMEM. */
int fc__rndv_register(struct fc__fabric *fab);
/* Send @r, which a blocking send gave up on, may be read from the caller's
 * buffer until it ends (a board writes it, or the receiver may read it:
 * asked to stop, whose answer ends it): wait for it. false: orphan it. */
bool fc__rndv_send_busy(struct fc_dev *dev, struct fc_req *r);

/* proto/ctrl.c: control messages, one packet each */
/* Fill @x: a control message to (@node, @port), staged for @r's chain. */
int fc__ctrl_xfer(struct fc_dev *dev, struct fc_req *r, uint32_t node,
		  uint32_t port, enum fc__ctrl_kind kind, uint32_t cookie,
		  uint64_t val, struct fc_xfer *x);
/* Make @r's chain the one control message (the caller queues it). */
int fc__ctrl_chain(struct fc_dev *dev, struct fc_req *r, uint32_t node,
		   uint32_t port, enum fc__ctrl_kind kind, uint32_t cookie,
		   uint64_t val);
/* A control message on a request of its own, queued. */
int fc__ctrl_send(struct fc_dev *dev, uint32_t node, uint32_t port,
		  enum fc__ctrl_kind kind, uint32_t cookie, uint64_t val);

/* A control message that keeps its place (an announcement) through the
 * PIO window, where no chain to @node carrying channel messages is queued
 * or running (remote writes and reads may be): as
 * fc__pio_write(), 2 taken by the board already, 1 written (taken once
 * FC_PIO_HEAD is at *@end), or -errno: send it as a chain instead. */
int fc__ctrl_pio(struct fc_dev *dev, uint32_t node, uint32_t port,
		 enum fc__ctrl_kind kind, uint32_t cookie, uint64_t val,
		 uint32_t *end);
/* A control message whose order against what else goes to (@node, @port)
 * does not matter, through the PIO window. RETURN VALUE: 0 written, or
 * -errno (no window, no room). */
int fc__ctrl_pio_unordered(struct fc_dev *dev, uint32_t node, uint32_t port,
			   enum fc__ctrl_kind kind, uint32_t cookie,
			   uint64_t val);
/* An answer, whose order against what else goes to (@node, @port) does not
 * matter (CTS, GOT, REVOKED): through the PIO window where the board has
 * room, else as fc__ctrl_send(). */
int fc__ctrl_answer(struct fc_dev *dev, uint32_t node, uint32_t port,
		    enum fc__ctrl_kind kind, uint32_t cookie, uint64_t val);

/* credit.c: end-to-end credits per (peer, port) */
#define FC__CREDIT_MSG 64 /* what a message costs beyond its bytes */
/* Its state, upcalls and control messages' handlers, into @dev's fabric.
 * RETURN VALUE: 0 or -ENOMEM. */
int fc__credit_register(struct fc_dev *dev);
static inline uint64_t fc__credit_cost(size_t len)
{
	return len + FC__CREDIT_MSG;
}
/* May a message costing @cost go to @s now? true: counted, send it. */
bool fc__credit_take(struct fc_dev *dev, uint32_t port, struct fc__src *s,
		     uint64_t cost);
/* A send counted by fc__credit_take() that did not go after all. */
void fc__credit_untake(struct fc__src *s, uint64_t cost);
/* Send @r costs @cost (counted by fc__credit_take() or the PIO way). */
static inline void fc__credit_set(struct fc_req *r, uint64_t cost)
{
	r->flow = cost; /* not held (proto_internal.h) */
}
/* Keep send @r until credit comes (fc__req_queue then). */
void fc__credit_hold(struct fc__src *s, struct fc_req *r, uint64_t cost);

#endif /* FC_PROTO_H */
