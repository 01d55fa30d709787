/* SPDX-License-Identifier: MIT */
/*
 * Private to emu/: virtual time (docs/model.md). With a profile
 * (FPGACOMM_EMU_MODEL) each board keeps a clock, in picoseconds, that only
 * the model's costs move: what programs compute is the same, only time
 * differs. Every packet carries the time it left its board (struct
 * cl_slot's t, never the wire packet); a board's clock moves to the latest
 * arrival it takes. Nothing here reads a host clock, so the same program
 * on the same input gets the same times whatever the host's load.
 */
#ifndef FCEMU_VTIME_H
#define FCEMU_VTIME_H

#include <stdbool.h>
#include <stdint.h>

#include <fpgacomm/hw.h>

#include "model.h"

/* The most credits a link may have in a profile: the emulated link's own
 * ring (docs/hardware.md, 256 slots per VC). */
#define FCEMU_VT_CREDITS_MAX 256

/*
 * One link's credits in simulated time: when the credit of each of the
 * last packets sent over it is back with the sender. Credits come back in
 * the order their packets were sent (a link's buffer drains in order), so
 * packet n waits for packet n - credits's.
 */
struct fcemu_vt_credits {
	uint64_t back[FCEMU_VT_CREDITS_MAX]; /* ps, by packet number mod c */
	uint64_t n;			     /* packets sent over it */
};

struct fcemu_vtime {
	bool on;
	/* packets taken in simulated-time order (emu/vtorder.c), unless
	 * FPGACOMM_EMU_MODEL_ORDER=0 */
	bool order;
	struct fcm_profile prof;
	uint64_t now;	/* the board's (and its host's) clock, ps */
	uint64_t start; /* the message being injected leaves no sooner */
	uint64_t port_free[FC_MAX_PORTS + 1]; /* each output port's */
	uint64_t last; /* the end of the latest packet sent */
	uint64_t skip; /* packets the next one stands for, less 1 */
	uint64_t rx_last[FC_MAX_NODES];	  /* last arrival from each source */
	uint64_t rx_in[FC_MAX_PORTS + 1]; /* ... by each link into the board */
	uint8_t hops[FC_MAX_NODES];	  /* from each source, 0xff unknown */
	uint8_t in[FC_MAX_NODES]; /* the input port from each, 0xff unknown */
	/* the profile's costs, in ps */
	uint64_t pkt; /* one packet on the port */
	uint64_t tx;  /* a packet from the program to the router */
	uint64_t rx;  /* from the router into the program */
	uint64_t router, link;
	/* link credits (the profile's link_credits; 0: unbounded) and their
	 * loop: a packet that entered a link at t frees its slot in the far
	 * router's buffer once across the link and that router (arrived
	 * uncontended; the receiving board knows when it really left), and
	 * its credit is back one link latency later */
	unsigned int credits;
	uint64_t credit_loop;
	struct fcemu_vt_credits tx_cr[FC_MAX_PORTS + 1]; /* our output links */
	struct fcemu_vt_credits rx_cr[FC_MAX_PORTS + 1]; /* our input links */
	uint64_t rx_eject; /* the latest arrival taken by the ejection port */
	/* the latest end of work the board did on its own (stream runs, on
	 * worker threads); the clock takes it when the host looks */
	uint64_t async_end;
	/* the host's own sends (PIO messages, doorbells), counted: a board
	 * whose host sent meanwhile does not wait (emu/vtorder.c) */
	uint64_t acts;
};

/* Load the profile FPGACOMM_EMU_MODEL names, if any (off otherwise).
 * RETURN VALUE: 0; -EINVAL, -ENOENT: a bad profile (said on stderr). */
int fcemu__vt_init(struct fcemu_vtime *vt);

static inline uint64_t fcemu__vt_ps(double ns)
{
	return ns > 0 ? (uint64_t)(ns * 1000.0 + 0.5) : 0;
}

/* The message injected next leaves no sooner than @at (ps). */
static inline void fcemu__vt_begin(struct fcemu_vtime *vt, uint64_t at)
{
	if (vt && vt->on && at > vt->start)
		vt->start = at;
}

/* The earliest a packet ready at @t enters a link of @c credits (0:
 * unbounded): once the credit of the packet @c before it is back. */
static inline uint64_t fcemu__vt_credit(const struct fcemu_vt_credits *cr,
					unsigned int c, uint64_t t)
{
	uint64_t back;

	if (!c || cr->n < c)
		return t;
	back = cr->back[cr->n % c];
	return back > t ? back : t;
}

/* The packet sent next over that link gives its credit back at @back. */
static inline void fcemu__vt_credit_used(struct fcemu_vt_credits *cr,
					 unsigned int c, uint64_t back)
{
	if (!c)
		return;
	cr->back[cr->n % c] = back;
	cr->n++;
}

/* A packet (or the packets a burst record stands for) ready at @t to go
 * out of link port @port: each once its credit is back. RETURN VALUE:
 * the departure (of the last). */
uint64_t fcemu__vt_credits(struct fcemu_vtime *vt, unsigned int port,
			   uint64_t t);

/*
 * The departure of the next packet, out of output port @port (0 local);
 * that port is then busy one packet. Ports work side by side (a full mesh
 * sends to every peer at once). No packet leaves before the board's
 * present: what the board sends of its own (a FENCE_ACK, an ABORT) leaves
 * once what it answers has arrived. With link credits, a packet out of a
 * link port leaves once a credit for it is back (fcemu__vt_credits()).
 */
static inline uint64_t fcemu__vt_next(struct fcemu_vtime *vt, unsigned int port)
{
	uint64_t t = vt->start;

	if (t < vt->now)
		t = vt->now;
	if (t < vt->port_free[port])
		t = vt->port_free[port];
	/* a burst record leaves as the last packet it stands for */
	if (vt->credits && port)
		t = fcemu__vt_credits(vt, port, t);
	else
		t += vt->skip * vt->pkt;
	vt->skip = 0;
	vt->port_free[port] = t + vt->pkt;
	if (vt->last < t + vt->pkt)
		vt->last = t + vt->pkt;
	return t;
}

/* The next packet stands for @n (a burst record); 1 to undo. */
static inline void fcemu__vt_skip(struct fcemu_vtime *vt, uint64_t n)
{
	if (vt && vt->on)
		vt->skip = n ? n - 1 : 0;
}

/* Move the clock to @t if it is later. */
static inline void fcemu__vt_reach(struct fcemu_vtime *vt, uint64_t t)
{
	if (vt && vt->on && t > vt->now)
		vt->now = t;
}

/* Work on a worker thread ends at @t: kept for the host's next look. */
static inline void fcemu__vt_async(struct fcemu_vtime *vt, uint64_t t)
{
	uint64_t old = __atomic_load_n(&vt->async_end, __ATOMIC_RELAXED);

	while (old < t &&
	       !__atomic_compare_exchange_n(&vt->async_end, &old, t, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* The host looks at the board (its thread): the clock takes that work. */
static inline void fcemu__vt_sync(struct fcemu_vtime *vt)
{
	if (vt->on)
		fcemu__vt_reach(vt, __atomic_load_n(&vt->async_end,
						    __ATOMIC_RELAXED));
}

/* The arrival at the board of a packet @hops links away that left at @t,
 * behind @last, the arrival of the one before it from its source (0:
 * none), before the way into the program. */
static inline uint64_t fcemu__vt_at(const struct fcemu_vtime *vt,
				    unsigned int hops, uint64_t t,
				    uint64_t last)
{
	uint64_t at = t + (hops + 1) * vt->router + hops * vt->link;

	return last && at < last + vt->pkt ? last + vt->pkt : at;
}

/*
 * The arrival of a packet that left at @t, @hops links away, behind what
 * came before it: @last, the one before from its source (0: none); by a
 * link into the board (@link), @in_last, the one before by that link (0:
 * none), and @credit, when its credit there was back (0: no credits);
 * @eject, the one before by the ejection port (0: none). Before the way
 * into the program.
 */
static inline uint64_t fcemu__vt_arrival(const struct fcemu_vtime *vt,
					 unsigned int hops, bool link,
					 uint64_t t, uint64_t last,
					 uint64_t in_last, uint64_t credit,
					 uint64_t eject)
{
	uint64_t at = fcemu__vt_at(vt, hops, t, last);

	if (link) {
		if (in_last && at < in_last + vt->pkt)
			at = in_last + vt->pkt;
		if (at < credit)
			at = credit;
	}
	if (eject && at < eject + vt->pkt)
		at = eject + vt->pkt;
	return at;
}

/*
 * A packet from @src, @hops links away, that left at @t, taken by the
 * board now, by the link into input port @in (0: none, a board's own):
 * its arrival after the path, behind the one before it from the same
 * source and behind the one before it on that link (a link carries one
 * packet at a time: flows that merge on their way here share the links
 * from there on), no sooner than a credit of that link was back for it
 * (a credit comes back when a packet leaves the board's input buffer,
 * that is when the board takes it, and crosses the link back), and
 * behind the one before it from any link or the board itself (one
 * ejection port), then into the program. Taken in order of arrival
 * (emu/vtorder.c), this gives the same times whatever the host's order.
 */
void fcemu__vt_arrive(struct fcemu_vtime *vt, unsigned int src,
		      unsigned int hops, unsigned int in, uint64_t t);

#endif /* FCEMU_VTIME_H */
