// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: the transfers of a SUBMIT checked, and the hardware
 * descriptors built from the DMA segments of the memory they name (one
 * per bus-contiguous piece), in tables of up to FC_DMA_MAX_CHAIN. The
 * engine that runs them is fc_dma.c's.
 */
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "fc.h"

/* ---- building descriptors ---- */

/* Does @loc name a channel endpoint (one message per transfer)? */
static bool fc_loc_is_chan(const struct fc_ioc_loc *loc)
{
	return fc_hw_dst_is_chan(loc->space, loc->addr);
}

/* A transfer as the chain rule (fc_hw_chain_check()) sees it. */
static struct fc_hw_chain_step fc_xfer_step(const struct fc_ioc_xfer *x)
{
	struct fc_hw_chain_step s = {
		.flags = (x->flags & FC_XFER_MORE ? FC_DESC_F_MORE : 0) |
			 (x->flags & FC_XFER_CTRL ? FC_DESC_F_CTRL : 0),
		.dst_space = x->dst.space,
		.dst = x->dst.addr,
	};

	return s;
}

/* A position in one end of a transfer: a linear address or DMA segments. */
struct fc_cursor {
	u8 space;
	bool sg;
	bool fixed;		/* a channel endpoint: the address stays */
	u64 addr;		/* linear: the next address */
	struct scatterlist *seg;	/* sg: the current DMA segment */
	unsigned int left;	/* sg: segments from seg on */
	u64 off;		/* sg: offset in seg */
};

static int fc_cursor_init(struct fc_cursor *c, const struct fc_ioc_loc *loc,
			  struct fc_mem *m)
{
	/* A user address (handle 0) was pinned from its first byte. */
	u64 addr = loc->space == FC_SPACE_HOST && !loc->handle ? 0 : loc->addr;

	c->space = loc->space;
	c->sg = false;
	c->fixed = fc_loc_is_chan(loc);
	if (loc->space != FC_SPACE_HOST) {
		c->addr = addr;
		return 0;
	}
	if (m->alloc) {
		c->addr = m->dma + addr;
		return 0;
	}
	c->sg = true;
	c->seg = m->sgt.sgt.sgl;
	c->left = m->sgt.sgt.nents;
	while (c->left && addr >= sg_dma_len(c->seg)) {
		addr -= sg_dma_len(c->seg);
		c->seg = sg_next(c->seg);
		c->left--;
	}
	c->off = addr;
	return c->left ? 0 : -ERANGE;
}

static u64 fc_cursor_avail(const struct fc_cursor *c)
{
	return c->sg ? sg_dma_len(c->seg) - c->off : U64_MAX;
}

static u64 fc_cursor_bus(const struct fc_cursor *c)
{
	return c->sg ? sg_dma_address(c->seg) + c->off : c->addr;
}

static int fc_cursor_advance(struct fc_cursor *c, u64 n)
{
	if (!c->sg) {
		if (!c->fixed)
			c->addr += n;
		return 0;
	}
	c->off += n;
	if (c->off < sg_dma_len(c->seg))
		return 0;
	c->off = 0;
	c->left--;
	if (c->left)
		c->seg = sg_next(c->seg);
	return 0;
}

static struct fc_hw_desc *fc_chain_desc(struct fc_chain *c, unsigned int i)
{
	return &c->tables[i / FC_DMA_MAX_CHAIN].desc[i % FC_DMA_MAX_CHAIN];
}

/*
 * Walk the transfers and count the descriptors they need; with @fill, also
 * write them. Returns the count or -errno.
 */
long fc_chain_walk(struct fc_chain *c, const struct fc_ioc_xfer *x,
		   const struct fc_xfer_res *res, unsigned int n, bool fill)
{
	unsigned long count = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		struct fc_cursor s, d;
		u64 left = x[i].len;

		ret = fc_cursor_init(&s, &x[i].src, res[i].src);
		if (ret)
			return ret;
		ret = fc_cursor_init(&d, &x[i].dst, res[i].dst);
		if (ret)
			return ret;
		while (left) {
			u64 step = min3(left, fc_cursor_avail(&s),
					fc_cursor_avail(&d));

			step = min_t(u64, step, FC_DESC_MAX_LEN);
			if (!step || (s.sg && !s.left) || (d.sg && !d.left))
				return -ERANGE;
			/* More than a file may ever hold: never runs. */
			if (count >= FC_FILE_MAX_DESC)
				return -E2BIG;
			if (fill) {
				struct fc_hw_desc *h = fc_chain_desc(c, count);
				u16 flags = 0;

				/*
				 * A channel transfer is one message: every
				 * piece but its last goes on in the next, and
				 * so does the last with FC_XFER_MORE.
				 */
				if (d.fixed && (left > step ||
						x[i].flags & FC_XFER_MORE))
					flags = FC_DESC_F_MORE;
				if (x[i].flags & FC_XFER_CTRL)
					flags |= FC_DESC_F_CTRL;
				h->len = cpu_to_le32(step);
				h->flags = cpu_to_le16(flags);
				h->src_space = s.space;
				h->dst_space = d.space;
				h->src = cpu_to_le64(fc_cursor_bus(&s));
				h->dst = cpu_to_le64(fc_cursor_bus(&d));
				h->tag = cpu_to_le32(i);
				h->reserved = 0;
			}
			count++;
			fc_cursor_advance(&s, step);
			fc_cursor_advance(&d, step);
			left -= step;
		}
	}
	return count;
}

int fc_chain_alloc_tables(struct fc_dev *fc, struct fc_chain *c,
			  unsigned long ndesc)
{
	unsigned int i;

	c->ntables = DIV_ROUND_UP(ndesc, FC_DMA_MAX_CHAIN);
	/* Charged to the caller's memory cgroup, as the tables are below. */
	c->tables = kvcalloc(c->ntables, sizeof(*c->tables),
			     GFP_KERNEL_ACCOUNT);
	if (!c->tables)
		return -ENOMEM;
	for (i = 0; i < c->ntables; i++) {
		struct fc_table *t = &c->tables[i];

		t->desc = dma_pool_zalloc(fc->desc_pool, GFP_KERNEL_ACCOUNT,
					  &t->dma);
		if (!t->desc)
			return -ENOMEM;
		t->count = min_t(unsigned long, ndesc - i * FC_DMA_MAX_CHAIN,
				 FC_DMA_MAX_CHAIN);
	}
	return 0;
}

/*
 * Mark the last descriptor of each hardware chain. A channel message
 * cannot go on from one chain to the next (hw.h): a ticket whose message
 * would straddle two chains gets -EMSGSIZE.
 */
int fc_chain_mark_ends(struct fc_chain *c)
{
	struct fc_hw_chain_step step;
	struct fc_hw_desc *last;
	unsigned int i;

	for (i = 0; i < c->ntables; i++) {
		last = &c->tables[i].desc[c->tables[i].count - 1];
		step = fc_hw_desc_step(last);
		if (fc_hw_chain_check(&step, NULL))
			return -EMSGSIZE;
		last->flags |= cpu_to_le16(FC_DESC_F_EOC);
	}
	return 0;
}

/* ---- checking transfers ---- */

/*
 * A fabric address in a host region is a raw bus address, on this node or
 * another: only CAP_SYS_RAWIO may name one, as only it may write the
 * registers. Channels and board memory are the fabric's own, and a peer
 * region names entries of the receiving board's window, which only its
 * host maps.
 */
static bool fc_loc_raw_bus(const struct fc_ioc_loc *loc)
{
	return loc->space == FC_SPACE_FABRIC &&
	       FC_FABRIC_REGION(loc->addr) == FC_REGION_HOST;
}

static int fc_check_loc(struct fc_dev *fc, const struct fc_ioc_loc *loc,
			u64 len)
{
	int ret;

	if (loc->space == FC_SPACE_HOST)
		return loc->addr + len < loc->addr ? -ERANGE : 0;
	/* Board memory and the fabric are not registered memory. */
	if (loc->handle)
		return -EINVAL;
	ret = fc_hw_span_check(loc->space, loc->addr, len, fc->mem_size);
	if (ret)
		return ret;
	if (fc_loc_raw_bus(loc) && !capable(CAP_SYS_RAWIO))
		return -EPERM;
	return 0;
}

/* @next: the transfer after @x in the ticket, NULL for the last. */
int fc_check_xfer(struct fc_dev *fc, const struct fc_ioc_xfer *x,
		  const struct fc_ioc_xfer *next)
{
	struct fc_hw_chain_step step, next_step;
	int ret;

	if (x->flags & ~(FC_XFER_MORE | FC_XFER_CTRL) || x->reserved)
		return -EINVAL;
	step = fc_xfer_step(x);
	if (next)
		next_step = fc_xfer_step(next);
	ret = fc_hw_dma_errno(fc_hw_chain_check(&step,
						next ? &next_step : NULL));
	if (ret)
		return ret;
	if (!x->len || x->len > FC_DESC_MAX_LEN)
		return -EINVAL;
	ret = fc_check_loc(fc, &x->src, x->len);
	if (ret)
		return ret;
	return fc_check_loc(fc, &x->dst, x->len);
}

