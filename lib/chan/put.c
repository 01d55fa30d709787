// SPDX-License-Identifier: MIT
/*
 * Remote writes (PEACH2-style): a DMA chain whose destination is another
 * node's fabric address. The board ends the chain only once the data is in
 * place at the target, so a put is visible when its request has ended, and
 * a fence is waiting for every put still going.
 */
#include <errno.h>
#include <stdlib.h>

#include "chan.h"

/*
 * A remote write or read: @local ours (host buffer, imported peer memory
 * or board memory), @remote a fabric address, @count blocks of @block
 * bytes @lstride / @rstride apart on each side (one block: the whole
 * transfer, cut into pieces the board takes).
 */
struct rma {
	struct fc_loc local;
	uint64_t remote;
	bool get;
	uint64_t count, block, lstride, rstride;
};

static int check_local(struct fc_dev *dev, const struct fc_loc *l,
		       uint64_t extent)
{
	struct fc__mem *m;
	int ret = 0;

	if (l->reserved)
		return -EINVAL;
	if (l->space == FC_SPACE_BOARD)
		return !l->mem && fc_hw_board_span_ok(
					  l->addr, extent,
					  dev->info.board_mem_size) ?
			       0 :
		       l->mem ? -EINVAL :
				-ERANGE;
	if (l->space != FC_SPACE_HOST)
		return -EINVAL;
	fc__lock(&dev->lock);
	m = l->mem ? fc__mem_find(dev, l->mem) : NULL;
	if (!m)
		ret = -EINVAL;
	else if (l->addr > m->pub.len || extent > m->pub.len - l->addr)
		ret = -ERANGE;
	fc__unlock(&dev->lock);
	return ret;
}

/* The chain: a block per transfer, or one block in pieces. */
static int rma_chain(struct fc_dev *dev, struct fc_req *r, const struct rma *a)
{
	uint64_t piece = dev->info.max_xfer_len, k, off, n, len;
	struct fc_loc rem = { FC_SPACE_FABRIC, 0, NULL, 0 };
	unsigned int i = 0;

	n = a->count > 1 ? a->count : (a->block + piece - 1) / piece;
	if (n > dev->info.max_chain)
		return a->count > 1 ? -E2BIG : -EMSGSIZE;
	r->xfers = n == 1 ? &r->xfer1 : calloc(n, sizeof(*r->xfers));
	if (!r->xfers)
		return -ENOMEM;
	for (k = 0; k < a->count; k++) {
		for (off = 0; off < a->block; off += len, i++) {
			struct fc_xfer *x = &r->xfers[i];

			len = a->block - off < piece ? a->block - off : piece;
			x->len = len;
			x->src = a->local;
			x->src.addr += k * a->lstride + off;
			rem.addr = a->remote + k * a->rstride + off;
			x->dst = rem;
			if (a->get) {
				x->dst = x->src;
				x->src = rem;
			}
		}
	}
	r->n = i;
	return 0;
}

/* Checks and the chain of a put or get, fab lock held. */
static int rma_start(struct fc_dev *dev, const struct rma *a,
		     struct fc_req **reqp)
{
	uint32_t node = (uint32_t)FC_FABRIC_NODE(a->remote);
	uint64_t lext = (a->count - 1) * a->lstride + a->block;
	uint64_t rext = (a->count - 1) * a->rstride + a->block;
	struct fc_req *r;
	int ret;

	if (FC_FABRIC_REGION(a->remote) == FC_REGION_CHAN ||
	    node >= dev->fab->world.size)
		return -EINVAL;
	if (!fc_hw_fabric_span_ok(a->remote, rext))
		return -ERANGE;
	ret = check_local(dev, &a->local, lext);
	if (ret)
		return ret;
	ret = fc__peer_check(dev, node);
	if (ret)
		return ret;
	r = fc__req_new(dev, FC__REQ_PUT, node);
	if (!r)
		return -ENOMEM;
	ret = rma_chain(dev, r, a);
	if (ret) {
		fc__req_free(r);
		return ret;
	}
	fc__req_queue(dev->fab, r);
	fc__progress(dev);
	*reqp = r;
	return 0;
}

static int rma_args(struct fc_dev *dev, uint64_t len)
{
	if (!dev || !len)
		return -EINVAL;
	if (!dev->fab)
		return -ENOTCONN;
	return 0;
}

static int rma_nowait(struct fc_dev *dev, const struct rma *a,
		      struct fc_req **reqp)
{
	struct fc_req *r;
	int ret = rma_args(dev, a->block);

	if (ret)
		return ret;
	if (!reqp)
		return -EINVAL;
	fc__fab_lock(dev->fab);
	ret = rma_start(dev, a, &r);
	if (!ret)
		ret = fc__req_export(r, reqp);
	fc__fab_unlock(dev->fab);
	return ret;
}

static int rma_wait(struct fc_dev *dev, const struct rma *a, int timeout_ms)
{
	struct fc_req *r;
	int ret = rma_args(dev, a->block);

	if (ret)
		return ret;
	fc__fab_lock(dev->fab);
	ret = rma_start(dev, a, &r);
	if (!ret) {
		ret = fc__req_wait(r, timeout_ms, NULL);
		if (ret == -ETIMEDOUT && fc__req_cancel(r) == -EBUSY)
			fc__req_orphan(r); /* a later fence waits for it */
	}
	/* Its error is the caller's now, not the next fence's. */
	if (ret && ret == dev->fab->put_error)
		dev->fab->put_error = 0;
	fc__fab_unlock(dev->fab);
	return ret;
}

static struct rma whole(struct fc_loc local, uint64_t remote, uint64_t len,
			bool get)
{
	struct rma a = { local, remote, get, 1, len, 0, 0 };

	return a;
}

FC__EXPORT int fc_iput(struct fc_dev *dev, uint64_t dst, struct fc_mem *src,
		       uint64_t off, uint64_t len, struct fc_req **reqp)
{
	struct rma a = whole(fc_host(src, off), dst, len, false);

	if (!src)
		return -EINVAL;
	return rma_nowait(dev, &a, reqp);
}

FC__EXPORT int fc_put(struct fc_dev *dev, uint64_t dst, struct fc_mem *src,
		      uint64_t off, uint64_t len, int timeout_ms)
{
	struct rma a = whole(fc_host(src, off), dst, len, false);

	if (!src)
		return -EINVAL;
	return rma_wait(dev, &a, timeout_ms);
}

FC__EXPORT int fc_iput_from(struct fc_dev *dev, uint64_t dst, struct fc_loc src,
			    uint64_t len, struct fc_req **reqp)
{
	struct rma a = whole(src, dst, len, false);

	return rma_nowait(dev, &a, reqp);
}

FC__EXPORT int fc_put_from(struct fc_dev *dev, uint64_t dst, struct fc_loc src,
			   uint64_t len, int timeout_ms)
{
	struct rma a = whole(src, dst, len, false);

	return rma_wait(dev, &a, timeout_ms);
}

FC__EXPORT int fc_iget(struct fc_dev *dev, struct fc_loc dst, uint64_t src,
		       uint64_t len, struct fc_req **reqp)
{
	struct rma a = whole(dst, src, len, true);

	return rma_nowait(dev, &a, reqp);
}

FC__EXPORT int fc_get(struct fc_dev *dev, struct fc_loc dst, uint64_t src,
		      uint64_t len, int timeout_ms)
{
	struct rma a = whole(dst, src, len, true);

	return rma_wait(dev, &a, timeout_ms);
}

/* A block-stride transfer's shape, checked (fc_hw_stride_check()). */
static int strided(struct fc_dev *dev, const struct fc_stride *st,
		   struct fc_loc local, uint64_t remote, bool get,
		   struct rma *a)
{
	int ret;

	if (!dev || !st)
		return -EINVAL;
	ret = fc_hw_stride_check(st->count, st->block, st->src_stride,
				 st->dst_stride, dev->info.max_chain);
	if (ret)
		return ret;
	if (st->block > dev->info.max_xfer_len)
		return -E2BIG;
	*a = whole(local, remote, st->block, get);
	a->count = st->count;
	a->lstride = get ? st->dst_stride : st->src_stride;
	a->rstride = get ? st->src_stride : st->dst_stride;
	return 0;
}

FC__EXPORT int fc_put_strided(struct fc_dev *dev, uint64_t dst,
			      struct fc_loc src, const struct fc_stride *st,
			      int timeout_ms)
{
	struct rma a;
	int ret = strided(dev, st, src, dst, false, &a);

	return ret ? ret : rma_wait(dev, &a, timeout_ms);
}

FC__EXPORT int fc_get_strided(struct fc_dev *dev, struct fc_loc dst,
			      uint64_t src, const struct fc_stride *st,
			      int timeout_ms)
{
	struct rma a;
	int ret = strided(dev, st, dst, src, true, &a);

	return ret ? ret : rma_wait(dev, &a, timeout_ms);
}

/* A put still going to a node that is down? */
static bool puts_stuck(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	struct fc_req *r;

	for (r = fab->sendq_head; r; r = r->next)
		if (r->type == FC__REQ_PUT && fc__peer_down(dev, r->node))
			return true;
	for (r = fab->fly_head; r; r = r->next)
		if (r->type == FC__REQ_PUT && fc__peer_down(dev, r->node))
			return true;
	return false;
}

/* Lock held. */
int fc__put_fence(struct fc_dev *dev, int timeout_ms)
{
	struct fc__fabric *fab = dev->fab;
	uint64_t deadline = 0;
	unsigned int round = 0;
	int ret;

	if (timeout_ms >= 0)
		deadline = fc__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	while (fab->puts) {
		if (fc__progress(dev)) {
			round = 0;
			continue;
		}
		if (puts_stuck(dev))
			return -EHOSTDOWN;
		if (timeout_ms >= 0 && fc__now_ns() >= deadline)
			return -ETIMEDOUT;
		fc__fab_unlock(fab);
		if (fc__poll_all(dev))
			round = 0;
		else
			fc__backoff_dev(dev, &round, fc__now_ns());
		fc__fab_lock(fab);
	}
	ret = fab->put_error;
	fab->put_error = 0;
	return ret;
}

FC__EXPORT int fc_fence(struct fc_dev *dev, int timeout_ms)
{
	int ret;

	if (!dev)
		return -EINVAL;
	if (!dev->fab)
		return -ENOTCONN;
	fc__fab_lock(dev->fab);
	ret = fc__put_fence(dev, timeout_ms);
	fc__fab_unlock(dev->fab);
	return ret;
}
