// SPDX-License-Identifier: MIT
/*
 * End-to-end credits per (peer, port): a sender has at most a window of
 * eager bytes outstanding on each of its channels, counted until the
 * receiving library has handed them to a receive. So a receiver always
 * takes everything the board gives it (its event queue never waits on a
 * port nobody reads), its buffers per (source, port) stay bounded, and a
 * channel nobody reads stops only its own sender, only on that channel.
 *
 * Counts are totals since open, so a CREDIT message carries the bytes
 * consumed so far and a late or repeated one changes nothing. The
 * receiver returns credit a quarter window at a time, so a ping-pong
 * costs no extra message; a sender that runs out asks (CREDIT_ASK) and is
 * answered as soon as anything of its has been consumed. A message larger
 * than the window goes when nothing else is outstanding. Rendezvous
 * announcements cost nothing (their data waits for a clear, rndv.c) but
 * wait behind held messages, so order per (peer, port) is kept.
 *
 * Greeting: where a board drops what comes before its program has opened
 * it (through the driver its endpoints are off until then), a message
 * sent to a peer that is still starting would be lost. There a channel's
 * first send waits, held, for the peer library's answer to a CREDIT_ASK
 * of 0 bytes (answered at once: the initial grant), asked again every
 * GREET_RETRY_MS until it comes; then the held sends go, in order. A peer
 * that never opens leaves them held, to the caller's timeout.
 */
#include <errno.h>
#include <stdlib.h>

#include "proto_internal.h"

#define CREDIT_ENV     "FPGACOMM_CHAN_CREDIT" /* bytes per (peer, port) */
#define CREDIT_MIN     (4u << 10)
#define GREET_ENV      "FPGACOMM_CHAN_GREET" /* 0 or 1: the backend's */
#define GREET_RETRY_MS 20

/* Ask once for what the receiver has consumed; answered when it has. */
static void ask(struct fc_dev *dev, uint32_t port, struct fc__src *s)
{
	struct credit_src *c = fc__credit_src(s);

	if (!c->tx_asked && !fc__ctrl_send(dev, s->node, port,
					   FC__CTRL_CREDIT_ASK, 0, c->tx_used))
		c->tx_asked = true;
}

/* The first ask of a channel: 0 bytes used, answered at once. */
static void greet(struct fc_dev *dev, uint32_t port, struct fc__src *s)
{
	struct fc__fabric *fab = dev->fab;
	struct credit *cr = fc__credit_of(fab);
	struct credit_src *c = fc__credit_src(s);

	if (c->tx_asked)
		return;
	if (!fc__ctrl_send(dev, s->node, port, FC__CTRL_CREDIT_ASK, 0, 0)) {
		c->tx_asked = true;
		if (!cr->greeting++) {
			cr->greet_sent_ns = fc__now_ns();
			fc__proto_ticking(fab, FC__PROTO_CREDIT, true);
		}
	}
}

/* Ask again, every GREET_RETRY_MS, where no answer came and sends wait:
 * the peer's program may have opened its board since. */
static void credit_tick(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	struct credit *cr = fc__credit_of(fab);
	uint64_t now;
	unsigned int port, node;
	struct credit_src *c;
	struct fc__src *s;

	if (!cr->greeting)
		return;
	now = fc__now_ns();
	if (now - cr->greet_sent_ns < GREET_RETRY_MS * 1000000ull)
		return;
	cr->greet_sent_ns = now;
	for (port = 0; port < FC_MAX_CHANNELS; port++) {
		for (node = 0; fab->ports[port] && node < FC_MAX_NODES;
		     node++) {
			s = fab->ports[port]->src[node];
			c = s ? fc__credit_src(s) : NULL;
			if (c && c->tx_asked && !c->tx_heard && c->held_head)
				fc__ctrl_send(dev, node, port,
					      FC__CTRL_CREDIT_ASK, 0, 0);
		}
	}
}

bool fc__credit_take(struct fc_dev *dev, uint32_t port, struct fc__src *s,
		     uint64_t cost)
{
	struct credit *cr = fc__credit_of(dev->fab);
	struct credit_src *c = fc__credit_src(s);

	if (!cr->window) {
		c->tx_used += cost; /* untake() stays right */
		return true;
	}
	if (cr->greet && !c->tx_heard) {
		greet(dev, port, s);
		return false;
	}
	if (!c->held_head && fc__credit_fits(cr, c, cost)) {
		c->tx_used += cost;
		return true;
	}
	if (!fc__credit_fits(cr, c, cost) || c->held_head)
		ask(dev, port, s);
	return false;
}

void fc__credit_untake(struct fc__src *s, uint64_t cost)
{
	fc__credit_src(s)->tx_used -= cost;
}

static void credit_refund(struct fc__fabric *fab, struct fc_req *r)
{
	struct fc__src *s = fc__src_find(fab, r->port, r->node);

	if (s && r->flow && !credit_held(r))
		fc__credit_src(s)->tx_used -= r->flow;
	r->flow = 0;
}

void fc__credit_hold(struct fc__src *s, struct fc_req *r, uint64_t cost)
{
	struct credit_src *c = fc__credit_src(s);

	r->flow = cost | CREDIT_HELD;
	r->next = NULL;
	if (c->held_tail)
		c->held_tail->next = r;
	else
		c->held_head = r;
	c->held_tail = r;
}

static bool credit_unhold(struct fc__fabric *fab, struct fc_req *r)
{
	struct fc__src *s;
	struct credit_src *c;
	struct fc_req **pp, *prev = NULL;

	if (!credit_held(r))
		return false;
	s = fc__src_find(fab, r->port, r->node);
	c = s ? fc__credit_src(s) : NULL;
	for (pp = c ? &c->held_head : NULL; pp && *pp;
	     prev = *pp, pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			if (c->held_tail == r)
				c->held_tail = prev;
			break;
		}
	}
	r->next = NULL;
	r->flow = 0; /* never counted */
	return true;
}

/* Queue held sends, in order, while the window has room. */
static void release(struct fc_dev *dev, uint32_t port, struct fc__src *s)
{
	struct credit *cr = fc__credit_of(dev->fab);
	struct credit_src *c = fc__credit_src(s);
	struct fc_req *r;

	if (cr->greet && !c->tx_heard)
		return;
	while ((r = c->held_head)) {
		if (!fc__credit_fits(cr, c, credit_cost_of(r))) {
			ask(dev, port, s);
			return;
		}
		/* its cost stays in r->flow: counted now */
		r->flow = credit_cost_of(r);
		c->tx_used += r->flow;
		c->held_head = r->next;
		if (!c->held_head)
			c->held_tail = NULL;
		fc__req_queue(dev->fab, r);
	}
}

static void give(struct fc_dev *dev, uint32_t port, struct fc__src *s)
{
	struct credit_src *c = fc__credit_src(s);

	if (!fc__ctrl_send(dev, s->node, port, FC__CTRL_CREDIT, 0,
			   c->rx_consumed)) {
		c->rx_returned = c->rx_consumed;
		c->rx_asked = false;
	}
}

static void credit_consumed(struct fc_dev *dev, uint32_t port,
			    struct fc__src *s, uint64_t len)
{
	struct credit_src *c = fc__credit_src(s);

	c->rx_consumed += fc__credit_cost(len);
	if (c->rx_asked || c->rx_consumed - c->rx_returned >= c->rx_quarter)
		give(dev, port, s);
}

static void on_credit(struct fc_dev *dev, uint32_t port, uint32_t node,
		      uint32_t cookie, uint64_t consumed)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__src *s = fc__src_find(fab, port, node);
	struct credit *cr = fc__credit_of(fab);
	struct credit_src *c;

	(void)cookie;
	if (!s)
		return;
	c = fc__credit_src(s);
	if (!c->tx_heard && c->tx_asked && cr->greeting && !--cr->greeting)
		fc__proto_ticking(fab, FC__PROTO_CREDIT, false);
	c->tx_heard = true;
	/* Never more than was sent: a bad count frees nothing. */
	if (consumed > c->tx_granted && consumed <= c->tx_used)
		c->tx_granted = consumed;
	c->tx_asked = false;
	release(dev, port, s);
}

static void on_ask(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, uint64_t used)
{
	struct fc__src *s = fc__src_get(dev->fab, port, node);
	struct credit_src *c;

	(void)cookie;
	if (!s)
		return;
	c = fc__credit_src(s);
	/* 0: a greeting, answered at once; else when anything was consumed */
	if (!used || c->rx_consumed != c->rx_returned)
		give(dev, port, s);
	else
		c->rx_asked = true;
}

static int credit_src_init(struct fc__fabric *fab, struct fc__src *s)
{
	struct credit_src *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->rx_quarter = fc__credit_of(fab)->window / 4;
	s->proto[FC__PROTO_CREDIT] = c;
	return 0;
}

/* At close: the sends still held go with their source. */
static void credit_src_fini(struct fc__fabric *fab, struct fc__src *s)
{
	struct credit_src *c = fc__credit_src(s);
	struct fc_req *r;

	if (!c)
		return;
	while ((r = c->held_head)) {
		c->held_head = r->next;
		fc__xfers_free(r);
		free(r);
	}
	free(c);
	s->proto[FC__PROTO_CREDIT] = NULL;
}

static void credit_fini(struct fc__fabric *fab, void *state)
{
	free(state);
}

int fc__credit_register(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__proto_slot slot = {
		.src_init = credit_src_init,
		.src_fini = credit_src_fini,
		.tick = credit_tick,
		.fini = credit_fini,
	};
	struct credit *cr = calloc(1, sizeof(*cr));
	uint64_t w;

	if (!cr)
		return -ENOMEM;
	slot.state = cr;
	fc__proto_register(fab, FC__PROTO_CREDIT, &slot);
	fab->up.unhold = credit_unhold;
	fab->up.refund = credit_refund;
	/* Credits come back in control messages: a board (or driver) that
	 * cannot send them keeps the rings' own bound (FC_CHAN_BUFFERED);
	 * sends are still counted (none is held). */
	if (!dev->ctrl_msgs)
		return 0;
	w = fc__env_size(CREDIT_ENV, FC_CHAN_CREDIT);
	cr->window = w && w < CREDIT_MIN ? CREDIT_MIN : w;
	cr->greet = cr->window &&
		    fc__env_size(GREET_ENV, dev->be->endpoints_off_unopened);
	fab->flow_bounded = cr->window != 0;
	if (cr->window)
		fab->up.consumed = credit_consumed;
	fc__ctrl_register(fab, FC__CTRL_CREDIT, on_credit);
	fc__ctrl_register(fab, FC__CTRL_CREDIT_ASK, on_ask);
	return 0;
}
