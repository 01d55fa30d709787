/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/proto/: the credits' state (credit.c) and rendezvous's
 * threshold (rndv_reg.c), which the eager send's short way (eager.c)
 * reads and counts without a call, and the one-packet write into the PIO
 * window that eager messages and control messages share.
 */
#ifndef FC_PROTO_INTERNAL_H
#define FC_PROTO_INTERNAL_H

#include <endian.h>
#include <string.h>

#include "proto.h"

/* Credits' state, the fabric's (FC__PROTO_CREDIT) ... */
struct credit {
	uint64_t window; /* 0: no credits */
	/*
	 * Greeting: a channel's first send waits until the peer's library
	 * has answered, where a board drops what comes before its program
	 * opened it (the driver); @greeting counts channels waiting (while
	 * any does, the credits' tick() retries: fc__proto_ticking()).
	 */
	bool greet;
	unsigned int greeting;
	uint64_t greet_sent_ns;
};

/* ... and per (port, source): sending there ... */
struct credit_src {
	uint64_t tx_used, tx_granted;	      /* bytes, totals since open */
	bool tx_asked;			      /* a CREDIT_ASK is out */
	bool tx_heard;			      /* the peer answered (greeting) */
	struct fc_req *held_head, *held_tail; /* sends waiting for credit */
	/* ... and receiving from there */
	uint64_t rx_consumed, rx_returned;
	uint64_t rx_quarter; /* the window / 4: returned this much at a time */
	bool rx_asked;	     /* the sender waits for our count */
};

/* A send's r->flow: its cost, and whether it is held (waits for credit). */
#define CREDIT_HELD (1ull << 63)

static inline uint64_t credit_cost_of(const struct fc_req *r)
{
	return r->flow & ~CREDIT_HELD;
}

static inline bool credit_held(const struct fc_req *r)
{
	return r->flow & CREDIT_HELD;
}

static inline struct credit *fc__credit_of(const struct fc__fabric *fab)
{
	return fc__proto_state(fab, FC__PROTO_CREDIT);
}

static inline struct credit_src *fc__credit_src(const struct fc__src *s)
{
	return s->proto[FC__PROTO_CREDIT];
}

/* Does a message costing @cost fit the window now? */
static inline bool fc__credit_fits(const struct credit *cr,
				   const struct credit_src *c, uint64_t cost)
{
	uint64_t out = c->tx_used - c->tx_granted;

	return out + cost <= cr->window || !out;
}

/* May a message costing @cost go at once, nothing held before it (as
 * fc__credit_take() says true, without asking for more)? Not counted. */
static inline bool fc__credit_free(const struct credit *cr,
				   const struct credit_src *c, uint64_t cost)
{
	return !cr->window || ((!cr->greet || c->tx_heard) && !c->held_head &&
			       fc__credit_fits(cr, c, cost));
}

/* What rendezvous (rndv*.c) shows the other protocols of its state
 * (fab->proto[FC__PROTO_RNDV]): the head of its struct rndv. */
struct rndv_pub {
	size_t min; /* messages this long and longer take it; 0: none */
};

/* Does a message of @len bytes take the rendezvous way? Every send asks:
 * inline. */
static inline bool fc__rndv_takes(const struct fc__fabric *fab, size_t len)
{
	const struct rndv_pub *rp = fc__proto_state(fab, FC__PROTO_RNDV);

	return rp->min && len >= rp->min;
}

/*
 * A message of one packet through the PIO window, in two steps, inline as
 * they are the 8 B message's path. fc__pio_take: the window's next slot,
 * where the backend has one (the caller checks dev->be->pio_room), with
 * the device locked (its index at *@tail), or NULL: no room, unlocked.
 * fc__pio_put: then write it, header @hdr (FC_PKT_HDR: destination,
 * length and type; EOM is added here) and @len bytes (1 to
 * FC_PKT_PAYLOAD) at @data, post it and unlock. The whole payload is
 * written, so that no stale bytes of an earlier packet go out (a constant
 * size: a few wide stores). RETURN VALUE: the window's head as the post
 * left it; its tail after the packet at *@end.
 */
static inline __attribute__((always_inline)) struct fc_hw_pkt *
fc__pio_take(struct fc_dev *dev, uint32_t *tail)
{
	struct fc_hw_pkt *win;

	fc__dev_lock(dev);
	win = dev->be->pio_room(dev, 1, tail);
	if (!win) {
		fc__dev_unlock(dev);
		return NULL;
	}
	return &win[*tail % FC_PIO_SLOTS];
}

static inline __attribute__((always_inline)) uint32_t
fc__pio_put(struct fc_dev *dev, struct fc_hw_pkt *pkt, uint32_t tail,
	    uint32_t hdr, const void *data, size_t len, uint32_t *end)
{
	uint32_t head;

	pkt->hdr = htole32(hdr | FC_PKT_EOM);
	memset(pkt->payload, 0, FC_PKT_PAYLOAD);
	fc__copy_small(pkt->payload, data, len);
	*end = tail + 1;
	head = dev->be->pio_post(dev, *end);
	fc__dev_unlock(dev);
	return head;
}

#endif /* FC_PROTO_INTERNAL_H */
