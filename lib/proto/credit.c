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

#include "proto.h"

#define CREDIT_ENV     "FPGACOMM_CHAN_CREDIT" /* bytes per (peer, port) */
#define CREDIT_MIN     (4u << 10)
#define GREET_ENV      "FPGACOMM_CHAN_GREET" /* 0 or 1: the backend's */
#define GREET_RETRY_MS 20

static uint64_t cost_of(size_t len)
{
	return len + FC__CREDIT_MSG;
}

uint64_t fc__credit_cost(size_t len)
{
	return cost_of(len);
}

static bool fits(const struct fc__fabric *fab, const struct fc__src *s,
		 uint64_t cost)
{
	uint64_t out = s->tx_used - s->tx_granted;

	return out + cost <= fab->credit_window || !out;
}

/* Ask once for what the receiver has consumed; answered when it has. */
static void ask(struct fc_dev *dev, uint32_t port, struct fc__src *s)
{
	if (!s->tx_asked && !fc__ctrl_send(dev, s->node, port,
					   FC__CTRL_CREDIT_ASK, 0, s->tx_used))
		s->tx_asked = true;
}

/* The first ask of a channel: 0 bytes used, answered at once. */
static void greet(struct fc_dev *dev, uint32_t port, struct fc__src *s)
{
	struct fc__fabric *fab = dev->fab;

	if (s->tx_asked)
		return;
	if (!fc__ctrl_send(dev, s->node, port, FC__CTRL_CREDIT_ASK, 0, 0)) {
		s->tx_asked = true;
		if (!fab->greeting++)
			fab->greet_sent_ns = fc__now_ns();
	}
}

/* Ask again, every GREET_RETRY_MS, where no answer came and sends wait:
 * the peer's program may have opened its board since. */
static void credit_tick(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	uint64_t now = fc__now_ns();
	unsigned int port, node;
	struct fc__src *s;

	if (now - fab->greet_sent_ns < GREET_RETRY_MS * 1000000ull)
		return;
	fab->greet_sent_ns = now;
	for (port = 0; port < FC_MAX_CHANNELS; port++) {
		for (node = 0; fab->ports[port] && node < FC_MAX_NODES;
		     node++) {
			s = fab->ports[port]->src[node];
			if (s && s->tx_asked && !s->tx_heard && s->held_head)
				fc__ctrl_send(dev, node, port,
					      FC__CTRL_CREDIT_ASK, 0, 0);
		}
	}
}

bool fc__credit_take(struct fc_dev *dev, uint32_t port, struct fc__src *s,
		     uint64_t cost)
{
	struct fc__fabric *fab = dev->fab;

	if (!fab->credit_window) {
		s->tx_used += cost; /* untake() stays right */
		return true;
	}
	if (fab->greet && !s->tx_heard) {
		greet(dev, port, s);
		return false;
	}
	if (!s->held_head && fits(fab, s, cost)) {
		s->tx_used += cost;
		return true;
	}
	if (!fits(fab, s, cost) || s->held_head)
		ask(dev, port, s);
	return false;
}

void fc__credit_untake(struct fc__src *s, uint64_t cost)
{
	s->tx_used -= cost;
}

static void credit_refund(struct fc__fabric *fab, struct fc_req *r)
{
	struct fc__src *s = fc__src_find(fab, r->port, r->node);

	if (s && r->credit && !r->held)
		s->tx_used -= r->credit;
	r->credit = 0;
}

void fc__credit_hold(struct fc__src *s, struct fc_req *r, uint64_t cost)
{
	r->credit = cost;
	r->held = true;
	r->next = NULL;
	if (s->held_tail)
		s->held_tail->next = r;
	else
		s->held_head = r;
	s->held_tail = r;
}

static void credit_unhold(struct fc__fabric *fab, struct fc_req *r)
{
	struct fc__src *s = fc__src_find(fab, r->port, r->node);
	struct fc_req **pp, *prev = NULL;

	for (pp = s ? &s->held_head : NULL; pp && *pp;
	     prev = *pp, pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			if (s->held_tail == r)
				s->held_tail = prev;
			break;
		}
	}
	r->next = NULL;
	r->held = false;
	r->credit = 0; /* never counted */
}

/* Queue held sends, in order, while the window has room. */
static void release(struct fc_dev *dev, uint32_t port, struct fc__src *s)
{
	struct fc_req *r;

	if (dev->fab->greet && !s->tx_heard)
		return;
	while ((r = s->held_head)) {
		if (!fits(dev->fab, s, r->credit)) {
			ask(dev, port, s);
			return;
		}
		s->tx_used += r->credit; /* r->credit stays: counted now */
		s->held_head = r->next;
		if (!s->held_head)
			s->held_tail = NULL;
		r->held = false;
		fc__req_queue(dev->fab, r);
	}
}

static void give(struct fc_dev *dev, uint32_t port, struct fc__src *s)
{
	if (!fc__ctrl_send(dev, s->node, port, FC__CTRL_CREDIT, 0,
			   s->rx_consumed)) {
		s->rx_returned = s->rx_consumed;
		s->rx_asked = false;
	}
}

static void credit_consumed(struct fc_dev *dev, uint32_t port,
			    struct fc__src *s, uint64_t len)
{
	struct fc__fabric *fab = dev->fab;

	s->rx_consumed += cost_of(len);
	if (s->rx_asked ||
	    s->rx_consumed - s->rx_returned >= fab->credit_window / 4)
		give(dev, port, s);
}

static void on_credit(struct fc_dev *dev, uint32_t port, uint32_t node,
		      uint32_t cookie, uint64_t consumed)
{
	struct fc__src *s = fc__src_find(dev->fab, port, node);

	(void)cookie;
	if (!s)
		return;
	if (!s->tx_heard && s->tx_asked && dev->fab->greeting)
		dev->fab->greeting--;
	s->tx_heard = true;
	/* Never more than was sent: a bad count frees nothing. */
	if (consumed > s->tx_granted && consumed <= s->tx_used)
		s->tx_granted = consumed;
	s->tx_asked = false;
	release(dev, port, s);
}

static void on_ask(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, uint64_t used)
{
	struct fc__src *s = fc__src_get(dev->fab, port, node);

	(void)cookie;
	if (!s)
		return;
	/* 0: a greeting, answered at once; else when anything was consumed */
	if (!used || s->rx_consumed != s->rx_returned)
		give(dev, port, s);
	else
		s->rx_asked = true;
}

void fc__credit_register(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	uint64_t w;

	/* Credits come back in control messages: a board (or driver) that
	 * cannot send them keeps the rings' own bound (FC_CHAN_BUFFERED). */
	if (!dev->ctrl_msgs)
		return;
	w = fc__env_size(CREDIT_ENV, FC_CHAN_CREDIT);
	fab->credit_window = w && w < CREDIT_MIN ? CREDIT_MIN : w;
	fab->greet = fab->credit_window &&
		     fc__env_size(GREET_ENV, dev->be->endpoints_off_unopened);
	fab->up.unhold = credit_unhold;
	fab->up.refund = credit_refund;
	fab->up.tick = credit_tick;
	if (fab->credit_window)
		fab->up.consumed = credit_consumed;
	fc__ctrl_register(fab, FC__CTRL_CREDIT, on_credit);
	fc__ctrl_register(fab, FC__CTRL_CREDIT_ASK, on_ask);
}
