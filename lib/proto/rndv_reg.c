// SPDX-License-Identifier: MIT
/*
 * Rendezvous: giving up (a send or receive withdrawn, a message taken from
 * a copy) and what the transport and the control messages call
 * (rndv_internal.h): the upcalls and handlers registered at open, and the
 * board's state freed at close.
 */
#include "rndv_internal.h"

/* ---- Giving up ---- */

/* Copy the caller's data, for a send that goes on without the caller. */
static int take_copy(struct fc_dev *dev, struct fc_req *r)
{
	struct fc_mem *copy;
	int ret = fc_mem_alloc(dev, r->len, 0, &copy);

	if (ret)
		return ret;
	memcpy(copy->addr, RQ(r)->sbuf, r->len);
	fc__req_umem_put(dev, r);
	r->umem = copy;
	RQ(r)->sbuf = NULL;
	return 0;
}

/* Take @r off a list of requests linked by rnext. */
static void unlink_req(struct fc_req **head, struct fc_req *r)
{
	struct fc_req **pp;

	for (pp = head; *pp && *pp != r; pp = &RQ((*pp))->rnext)
		;
	if (*pp)
		*pp = RQ(r)->rnext;
	RQ(r)->rnext = NULL;
}

static int rndv_withdraw(struct fc_dev *dev, struct fc_req *r, bool orphan)
{
	struct fc__fabric *fab = dev->fab;
	int ret;

	if (r->type == FC__REQ_RECV && st(r) == FC__RNDV_GET) {
		/* its read ends in bounded time (a dead sender fails it) */
		if (!orphan)
			return -EBUSY;
		fc__req_disown(r);
		return 1;
	}
	if (r->type == FC__REQ_RECV) {
		if (st(r) != FC__RNDV_LAND)
			return 2;
		/* Its data is on the way: only a dead sender gives it up. */
		if (!orphan)
			return -EBUSY;
		unlink_req(&RV(fab)->landing, r);
		fc__rv_rq_end(r);
		return 0; /* the caller frees it, and unregisters */
	}
	if (r->type != FC__REQ_SEND)
		return 2;
	if (st(r) == FC__RNDV_RTS && !r->submitted)
		return 2; /* not started: dropped as any send */
	if (st(r) == FC__RNDV_WAIT_CTS && fc__peer_down(dev, r->node)) {
		unlink_req(&RV(fab)->cts_wait, r);
		fc__rv_rq_end(r);
		return 0;
	}
	/* The board, or the receiver's (rget), may read the caller's buffer. */
	if (!orphan || RQ(r)->rget || st(r) >= FC__RNDV_DATA)
		return -EBUSY;
	ret = take_copy(dev, r);
	if (ret)
		return ret;
	fc__req_disown(r);
	return 1;
}

static void free_rlist(struct fc_req *r)
{
	struct fc_req *next;

	for (; r; r = next) {
		next = RQ(r)->rnext;
		fc__xfers_free(r);
		free(r->proto);
		free(r);
	}
}

static void rndv_fini(struct fc__fabric *fab, void *state)
{
	struct rndv *rv = state;

	free_rlist(rv->cts_wait);
	free_rlist(rv->data_head);
	free_rlist(rv->landing);
	free(rv);
}

/* ---- What the transport and the control messages call ---- */

int fc__rndv_register(struct fc__fabric *fab)
{
	struct rndv *rv = calloc(1, sizeof(*rv));
	const struct fc__proto_slot slot = {
		.state = rv,
		.tick = fc__rv_land_due,
		.fini = rndv_fini,
	};

	if (!rv)
		return -ENOMEM;
	/* the backend's word: a board that writes remotely into any
	 * registered memory and sends control messages */
	rv->pub.min = fab->dev->be->rendezvous ?
			      fc__env_size(RNDV_ENV, FC_CHAN_RNDV_MIN) :
			      0;
	fc__proto_register(fab, FC__PROTO_RNDV, &slot);
	fab->up.chain_ended = fc__rv_chain_ended;
	fab->up.submit = fc__rv_submit;
	fab->up.withdraw = rndv_withdraw;
	fab->up.msg_ready = fc__rv_msg_ready;
	fab->up.msg_take = fc__rv_msg_take;
	fab->up.msg_land = rv->pub.min ? fc__rv_land_deferred : NULL;
	rv->land_delay_ns = fc__env_size(LAND_ENV, LAND_DELAY_US) * 1000;
	if (rv->pub.min && (fab->dev->info.caps & FC_CAP_FABRIC_GET))
		rv->get_max = fc__env_size(GET_ENV, GET_MAX);
	fc__ctrl_register(fab, FC__CTRL_RTS, fc__rv_on_rts_ctrl);
	fc__ctrl_register(fab, FC__CTRL_CTS, fc__rv_on_cts);
	fc__ctrl_register(fab, FC__CTRL_FIN, fc__rv_on_fin_ctrl);
	fc__ctrl_register(fab, FC__CTRL_RTS_GET, fc__rv_on_rts_get_ctrl);
	fc__ctrl_register(fab, FC__CTRL_GOT, fc__rv_on_got);
	fc__ctrl_register(fab, FC__CTRL_REVOKE, fc__rv_on_revoke);
	fc__ctrl_register(fab, FC__CTRL_REVOKED, fc__rv_on_revoked);
	return 0;
}
