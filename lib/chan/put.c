// SPDX-License-Identifier: MIT
/*
 * Remote writes (PEACH2-style): a DMA chain whose destination is another
 * node's fabric address. The board ends the chain only once the data is in
 * place at the target, so a put is visible when its request has ended, and
 * a fence is waiting for every put still going.
 */
#include <errno.h>

#include "chan.h"

/* Checks and the chain of a put, lock held. */
static int put_start(struct fc_dev *dev, uint64_t dst, struct fc_mem *src,
		     uint64_t off, uint64_t len, struct fc_req **reqp)
{
	uint32_t node = (uint32_t)FC_FABRIC_NODE(dst);
	struct fc__mem *m;
	struct fc_req *r;
	int ret;

	if (FC_FABRIC_REGION(dst) == FC_REGION_CHAN ||
	    node >= dev->fab->world.size)
		return -EINVAL;
	if (!fc_hw_fabric_span_ok(dst, len))
		return -ERANGE;
	pthread_mutex_lock(&dev->lock);
	m = fc__mem_find(dev, src);
	ret = !m					 ? -EINVAL :
	      off > m->pub.len || len > m->pub.len - off ? -ERANGE :
							   0;
	pthread_mutex_unlock(&dev->lock);
	if (ret)
		return ret;
	ret = fc__peer_check(dev, node);
	if (ret)
		return ret;
	r = fc__req_new(dev, FC__REQ_PUT, node);
	if (!r)
		return -ENOMEM;
	ret = fc__chain_start(dev, r, fc_host(src, off), dst, len, false);
	if (ret) {
		fc__req_free(r);
		return ret;
	}
	*reqp = r;
	return 0;
}

static int put_args(struct fc_dev *dev, struct fc_mem *src, uint64_t len)
{
	if (!dev || !src || !len)
		return -EINVAL;
	if (!dev->fab)
		return -ENOTCONN;
	return 0;
}

FC__EXPORT int fc_iput(struct fc_dev *dev, uint64_t dst, struct fc_mem *src,
		       uint64_t off, uint64_t len, struct fc_req **reqp)
{
	struct fc_req *r;
	int ret = put_args(dev, src, len);

	if (ret)
		return ret;
	if (!reqp)
		return -EINVAL;
	fc__fab_lock(dev->fab);
	ret = put_start(dev, dst, src, off, len, &r);
	if (!ret)
		ret = fc__req_export(r, reqp);
	fc__fab_unlock(dev->fab);
	return ret;
}

FC__EXPORT int fc_put(struct fc_dev *dev, uint64_t dst, struct fc_mem *src,
		      uint64_t off, uint64_t len, int timeout_ms)
{
	struct fc_req *r;
	int ret = put_args(dev, src, len);

	if (ret)
		return ret;
	fc__fab_lock(dev->fab);
	ret = put_start(dev, dst, src, off, len, &r);
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
