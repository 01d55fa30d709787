// SPDX-License-Identifier: MIT
/*
 * The barrier: dissemination (Hensgen, Finkel and Manber) over the
 * library's own port. In round k rank r tells rank r + 2^k and hears from
 * rank r - 2^k; after ceil(log2 size) rounds everyone has heard, directly
 * or not, from everyone. A source only ever sends one round's tokens to a
 * given rank, and channels keep order, so tokens of consecutive barriers
 * cannot be confused; each carries its barrier number, and tokens of a
 * barrier this rank abandoned on a timeout are skipped.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>

#include "chan.h"

struct token {
	uint32_t epoch; /* little endian */
	uint32_t round;
};

/* The barrier's own state (FC__PROTO_BARRIER): its count and channels
 * (the transport frees channels at close). */
struct barrier {
	uint32_t epoch;
	struct fc_chan *chan[FC_MAX_NODES];
};

static void barrier_fini(struct fc__fabric *fab, void *state)
{
	free(state);
}

/* Made at the first barrier, with the fabric locked. */
static struct barrier *barrier_get(struct fc__fabric *fab)
{
	struct fc__proto_slot slot = { .fini = barrier_fini };

	if (fc__proto_state(fab, FC__PROTO_BARRIER))
		return fc__proto_state(fab, FC__PROTO_BARRIER);
	slot.state = calloc(1, sizeof(struct barrier));
	if (slot.state)
		fc__proto_register(fab, FC__PROTO_BARRIER, &slot);
	return slot.state;
}

static int barrier_chan(struct fc_dev *dev, struct barrier *b, uint32_t peer,
			struct fc_chan **chp)
{
	int ret;

	if (!b->chan[peer]) {
		ret = fc__chan_open(dev, peer, FC_CHAN_PORT_BARRIER,
				    &b->chan[peer]);
		if (ret)
			return ret;
	}
	*chp = b->chan[peer];
	return 0;
}

static int wait_both(struct fc_req *send, struct fc_req *recv,
		     uint64_t deadline, bool forever, struct token *got)
{
	int64_t left;
	size_t len = 0;
	int ret, ret2;

	left = forever ? -1 : (int64_t)(deadline - fc__now_ns()) / 1000000;
	if (!forever && left < 0)
		left = 0;
	ret = fc__req_wait(recv, (int)left, &len);
	if (ret == -ETIMEDOUT)
		fc__req_cancel(recv);
	else if (!ret && len != sizeof(*got))
		ret = -EPROTO;
	left = forever ? -1 : (int64_t)(deadline - fc__now_ns()) / 1000000;
	if (!forever && left < 0)
		left = 0;
	ret2 = fc__req_wait(send, (int)left, NULL);
	if (ret2 == -ETIMEDOUT && fc__req_cancel(send) == -EBUSY)
		fc__req_orphan(send);
	return ret ? ret : ret2;
}

static int64_t left_ms(uint64_t deadline, bool forever)
{
	int64_t left;

	if (forever)
		return -1;
	left = (int64_t)(deadline - fc__now_ns()) / 1000000;
	return left < 0 ? 0 : left;
}

/*
 * A token from a barrier this rank gave up on (timed out) may still come:
 * skip tokens of older epochs, waiting for the one of @epoch.
 */
static int skip_stale(struct fc_chan *from, uint32_t epoch, uint64_t deadline,
		      bool forever, struct token *got)
{
	struct fc_req *rr;
	size_t len = 0;
	int ret;

	while ((int32_t)(le32toh(got->epoch) - epoch) < 0) {
		ret = fc__irecv(from, got, sizeof(*got), &rr);
		if (ret)
			return ret;
		ret = fc__req_wait(rr, (int)left_ms(deadline, forever), &len);
		if (ret == -ETIMEDOUT)
			fc__req_cancel(rr);
		if (ret)
			return ret;
		if (len != sizeof(*got))
			return -EPROTO;
	}
	return 0;
}

FC__EXPORT int fc_barrier(struct fc_dev *dev, int timeout_ms)
{
	struct fc__fabric *fab;
	struct barrier *b;
	uint64_t deadline = 0;
	uint32_t n, rank, dist, round;
	struct token tok, got;
	struct fc_chan *to, *from;
	struct fc_req *sr, *rr;
	int ret = 0;

	if (!dev)
		return -EINVAL;
	fab = dev->fab;
	if (!fab)
		return -ENOTCONN;
	n = fab->world.size;
	rank = fab->world.rank;
	if (timeout_ms >= 0)
		deadline = fc__now_ns() + (uint64_t)timeout_ms * 1000000ull;

	fc__fab_lock(fab);
	b = barrier_get(fab);
	if (!b) {
		fc__fab_unlock(fab);
		return -ENOMEM;
	}
	b->epoch++;
	for (round = 0, dist = 1; dist < n; round++, dist <<= 1) {
		ret = barrier_chan(dev, b, (rank + dist) % n, &to);
		if (!ret)
			ret = barrier_chan(dev, b, (rank + n - dist) % n,
					   &from);
		if (ret)
			break;
		ret = fc__irecv(from, &got, sizeof(got), &rr);
		if (ret)
			break;
		tok.epoch = htole32(b->epoch);
		tok.round = htole32(round);
		ret = fc__isend(to, &tok, sizeof(tok), &sr);
		if (ret) {
			fc__req_cancel(rr);
			break;
		}
		ret = wait_both(sr, rr, deadline, timeout_ms < 0, &got);
		if (!ret)
			ret = skip_stale(from, b->epoch, deadline,
					 timeout_ms < 0, &got);
		if (ret)
			break;
		if (le32toh(got.epoch) != b->epoch ||
		    le32toh(got.round) != round) {
			ret = -EPROTO;
			break;
		}
	}
	fc__fab_unlock(fab);
	return ret;
}
