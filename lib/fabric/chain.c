// SPDX-License-Identifier: MIT
/*
 * Chains, the transport's unit of work: a message or a remote write cut
 * into transfers, its bytes staged where the board reads them, the
 * request handed to the caller, and the fabric address a chain names.
 * Protocols and the channel API build on these; none of them is called
 * from here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport_internal.h"
#include "handle.h"

FC__EXPORT int fc_mem_fabric_addr(struct fc_dev *dev, struct fc_mem *mem,
				  uint64_t off, uint64_t *addr)
{
	struct fc__mem *m;
	uint64_t bus = 0;
	int ret;

	if (!dev || !mem || !addr)
		return -EINVAL;
	if (!dev->fab)
		return -ENOTCONN;
	fc__lock(&dev->lock);
	m = fc__mem_find(dev, mem);
	if (!m || off >= m->pub.len)
		ret = -EINVAL;
	else if (m->peer)
		ret = fc__pw_map(dev, m); /* peer memory: by window entry */
	else if (!dev->be->mem_bus)
		ret = -EOPNOTSUPP;
	else
		ret = dev->be->mem_bus(dev, m, &bus);
	if (!ret && m->peer) {
		*addr = FC_PW_ADDR(dev->fab->world.node_id, m->pw_entry - 1,
				   off);
		fc__unlock(&dev->lock);
		return 0;
	}
	fc__unlock(&dev->lock);
	if (ret)
		return ret;
	if (bus + off > FC_FABRIC_OFFSET_MASK)
		return -ERANGE;
	*addr = FC_FABRIC_ADDR(dev->fab->world.node_id, FC_REGION_HOST,
			       bus + off);
	return 0;
}

/* Take a free staging slot. RETURN VALUE: its index, or -1. */
static int stage_get(struct fc__fabric *fab)
{
	int i = __builtin_ffs((int)fab->stage_free) - 1;

	if (i >= 0)
		fab->stage_free &= ~(1u << i);
	return i;
}

/*
 * The chain of a message: pieces of at most max_xfer_len, F_MORE between;
 * or of a remote write (!@message). @spare more transfers are left zeroed
 * at the end for the caller (not counted in r->n).
 */
int fc__build_chain(struct fc_dev *dev, struct fc_req *r, struct fc_loc src,
		    uint64_t dst, uint64_t len, bool message,
		    unsigned int spare)
{
	uint64_t piece = dev->info.max_xfer_len, off = 0;
	unsigned int i, n = (unsigned int)((len + piece - 1) / piece);

	if (n + spare > dev->info.max_chain)
		return -EMSGSIZE;
	if (n + spare == 1) {
		memset(&r->xfer1, 0, sizeof(r->xfer1));
		r->xfers = &r->xfer1;
	} else {
		r->xfers = calloc(n + spare, sizeof(*r->xfers));
		if (!r->xfers)
			return -ENOMEM;
	}
	for (i = 0; i < n; i++, off += piece) {
		struct fc_xfer *x = &r->xfers[i];

		x->src = src;
		x->src.addr += off;
		x->dst.space = FC_SPACE_FABRIC;
		x->dst.addr = message ? dst : dst + off;
		x->len = len - off < piece ? len - off : piece;
		if (message && i < n - 1)
			x->flags = FC_XFER_F_MORE;
	}
	r->n = n;
	return 0;
}

/* A chain to @dst from @src (queued, progress once). */
int fc__chain_start(struct fc_dev *dev, struct fc_req *r, struct fc_loc src,
		    uint64_t dst, uint64_t len, bool message)
{
	int ret = fc__build_chain(dev, r, src, dst, len, message, 0);

	if (ret)
		return ret;
	fc__req_queue(dev->fab, r);
	fc__progress(dev);
	return 0;
}

/*
 * Copy @len bytes at @buf into memory the board reads, for @r's chain: a
 * staging slot, or a buffer of its own when large (r->stage, r->reg).
 */
int fc__stage_copy(struct fc_dev *dev, struct fc_req *r, const void *buf,
		   size_t len, struct fc_loc *src)
{
	struct fc__fabric *fab = dev->fab;
	int ret;

	if (len <= STAGE_SLOT_LEN)
		r->stage = stage_get(fab);
	if (r->stage >= 0) {
		*src = fc_host(fab->stage, (uint64_t)r->stage * STAGE_SLOT_LEN);
		memcpy((uint8_t *)fab->stage->addr + src->addr, buf, len);
		return 0;
	}
	ret = fc__spare_get(dev, len, &r->reg);
	if (ret)
		return ret;
	memcpy(r->reg->addr, buf, len);
	*src = fc_host(r->reg, 0);
	return 0;
}

/*
 * Hand @r to the caller as a handle, fabric locked; without one (out of
 * memory) it is given up. RETURN VALUE: 0 or -ENOMEM.
 */
int fc__req_export(struct fc_req *r, struct fc_req **reqp)
{
	int ret = fc__handle_new(r, reqp);

	if (ret && fc__req_cancel(r))
		fc__req_orphan(r);
	return ret;
}
