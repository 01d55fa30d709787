/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/proto/: the credits' state (credit.c) and rendezvous's
 * threshold (rndv_reg.c), which the eager send's short way (eager.c)
 * reads and counts without a call.
 */
#ifndef FC_PROTO_INTERNAL_H
#define FC_PROTO_INTERNAL_H

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

#endif /* FC_PROTO_INTERNAL_H */
