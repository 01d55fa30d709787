// SPDX-License-Identifier: MIT
/*
 * Chaining DMA, backend-independent part: every transfer is checked here so
 * that bad input gets a precise error before anything reaches the board.
 */
#include <errno.h>

#include "internal.h"

static int check_loc(struct fc_dev *dev, const struct fc_loc *loc, uint64_t len)
{
	struct fc__mem *m;

	if (loc->reserved)
		return -EINVAL;
	if (loc->space == FC_SPACE_HOST) {
		m = loc->mem ? fc__mem_find(dev, loc->mem) : NULL;
		if (!m)
			return -EINVAL;
		if (loc->addr > m->pub.len || len > m->pub.len - loc->addr)
			return -ERANGE;
		return 0;
	}
	/*
	 * Board memory and the fabric are not registered memory. Fabric
	 * routes are the board's business; the address layout is ours.
	 */
	if (loc->mem)
		return -EINVAL;
	return fc_hw_span_check(loc->space, loc->addr, len,
				dev->info.board_mem_size);
}

/* A transfer as the chain rule sees the descriptor it becomes. */
static struct fc_hw_chain_step chain_step(const struct fc_xfer *x)
{
	struct fc_hw_chain_step s = {
		.flags = (x->flags & FC_XFER_F_MORE ? FC_DESC_F_MORE : 0) |
			 (x->flags & FC_XFER_F_CTRL ? FC_DESC_F_CTRL : 0),
		.dst_space = x->dst.space,
		.dst = x->dst.addr,
	};

	return s;
}

/* @next: the transfer after @x in the chain, NULL for the last. */
static int check_xfer(struct fc_dev *dev, const struct fc_xfer *x,
		      const struct fc_xfer *next)
{
	struct fc_hw_chain_step s, n;
	int ret;

	if ((x->flags & ~(FC_XFER_F_MORE | FC_XFER_F_CTRL)) || x->reserved)
		return -EINVAL;
	s = chain_step(x);
	if (next)
		n = chain_step(next);
	ret = fc_hw_dma_errno(fc_hw_chain_check(&s, next ? &n : NULL));
	if (ret)
		return ret;
	if (!x->len || x->len > dev->info.max_xfer_len)
		return -EINVAL;
	ret = check_loc(dev, &x->src, x->len);
	if (ret)
		return ret;
	return check_loc(dev, &x->dst, x->len);
}

static void note_ticket(struct fc_dev *dev, const struct fc_loc *loc,
			unsigned int engine, uint64_t ticket)
{
	if (loc->space == FC_SPACE_HOST)
		fc__mem_find(dev, loc->mem)->last_ticket[engine] = ticket;
}

int fc__dma_submit_on(struct fc_dev *dev, unsigned int engine,
		      const struct fc_xfer *xfers, unsigned int n,
		      uint64_t *ticket)
{
	unsigned int i;
	int ret;

	if (n == 0 || n > dev->info.max_chain)
		return -E2BIG;
	if (engine && engine >= dev->engines)
		return -EINVAL;

	fc__lock(&dev->lock);
	for (i = 0; i < n; i++) {
		ret = check_xfer(dev, &xfers[i],
				 i + 1 < n ? &xfers[i + 1] : NULL);
		if (ret)
			goto out_unlock;
	}
	ret = dev->be->submit(dev, engine, xfers, n, ticket);
	if (ret)
		goto out_unlock;
	for (i = 0; i < n; i++) {
		note_ticket(dev, &xfers[i].src, engine, *ticket);
		note_ticket(dev, &xfers[i].dst, engine, *ticket);
	}
out_unlock:
	fc__unlock(&dev->lock);
	return ret;
}

/* The caller's chains run in order: all on the first queue. */
FC__EXPORT int fc_dma_submit(struct fc_dev *dev, const struct fc_xfer *xfers,
			     unsigned int n, unsigned int flags,
			     uint64_t *ticket)
{
	if (!dev || !xfers || !ticket || flags)
		return -EINVAL;
	return fc__dma_submit_on(dev, 0, xfers, n, ticket);
}

static int poll_locked(struct fc_dev *dev, uint64_t ticket,
		       struct fc_dma_result *res, uint64_t *moved)
{
	int ret;

	fc__lock(&dev->lock);
	ret = dev->be->poll(dev, ticket, res, moved);
	fc__unlock(&dev->lock);
	return ret;
}

FC__EXPORT int fc_dma_poll(struct fc_dev *dev, uint64_t ticket)
{
	struct fc_dma_result res;
	uint64_t moved;
	int ret;

	if (!dev)
		return -EINVAL;
	ret = poll_locked(dev, ticket, &res, &moved);
	return ret ? ret : res.status;
}

int fc__dma_ended(struct fc_dev *dev, uint64_t ticket)
{
	struct fc_dma_result res;
	int ret;

	fc__lock(&dev->lock);
	ret = dev->be->poll(dev, ticket, &res, NULL);
	fc__unlock(&dev->lock);
	return ret ? ret : res.status;
}

FC__EXPORT int fc_dma_wait(struct fc_dev *dev, uint64_t ticket, int timeout_ms)
{
	uint64_t deadline = 0, moved;
	struct fc_dma_result res;
	unsigned int round = 0;
	int ret;

	if (!dev)
		return -EINVAL;
	if (dev->be->wait) {
		ret = dev->be->wait(dev, ticket, timeout_ms, &res);
		return ret ? ret : res.status;
	}
	if (timeout_ms >= 0)
		deadline = fc__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		ret = poll_locked(dev, ticket, &res, &moved);
		if (ret != -EINPROGRESS)
			return ret ? ret : res.status;
		if (timeout_ms >= 0 && fc__now_ns() >= deadline)
			return -ETIMEDOUT;
		/* Progress is made by this loop; back off only when stalled. */
		if (moved)
			round = 0;
		else
			fc__backoff(&round);
	}
}

FC__EXPORT int fc_dma_result(struct fc_dev *dev, uint64_t ticket,
			     struct fc_dma_result *res)
{
	uint64_t moved;

	if (!dev || !res)
		return -EINVAL;
	return poll_locked(dev, ticket, res, &moved);
}

FC__EXPORT int fc_dma_reset(struct fc_dev *dev)
{
	int ret;

	if (!dev)
		return -EINVAL;
	fc__lock(&dev->lock);
	ret = dev->be->reset(dev);
	fc__unlock(&dev->lock);
	return ret;
}

FC__EXPORT int fc_dma_run(struct fc_dev *dev, const struct fc_xfer *xfers,
			  unsigned int n, int timeout_ms)
{
	uint64_t ticket;
	int ret;

	ret = fc_dma_submit(dev, xfers, n, 0, &ticket);
	if (ret)
		return ret;
	return fc_dma_wait(dev, ticket, timeout_ms);
}
