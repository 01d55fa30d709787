// SPDX-License-Identifier: MIT
/*
 * The board's peer window (docs/hardware.md section 9): imported memory
 * (a GPU's, a dma-buf) given an entry of the board's translation table, so
 * that other nodes name it by (entry, offset) in FC_REGION_PEER and never
 * by bus address. The library programs the table where the backend lets
 * it (an emulated board); a kernel board's driver does it for its own.
 */
#include <errno.h>

#include "internal.h"

#define PW_ACK_SPINS 64
#define PW_ACK_NS    (1000ull * 1000 * 1000) /* a board that never acks */

static int reg_wr(struct fc_dev *dev, uint32_t off, uint32_t val)
{
	return dev->be->reg_write(dev, off, val);
}

/* Wait until entry @e's SEEN reads @ctrl. Lock held. */
static int wait_seen(struct fc_dev *dev, unsigned int e, uint32_t ctrl)
{
	uint64_t start = fc__now_ns();
	unsigned int round = 0;
	uint32_t seen;
	int ret;

	for (;;) {
		ret = dev->be->reg_read(dev, FC_PW_REG(e, FC_PW_SEEN), &seen);
		if (ret)
			return ret;
		if (seen == ctrl)
			return 0;
		if (fc__now_ns() - start > PW_ACK_NS)
			return -EIO;
		if (++round > PW_ACK_SPINS)
			fc__backoff(&round);
	}
}

/* The free entry freed longest ago, or -1. */
static int pick_entry(struct fc__pw *pw)
{
	int best = -1;
	unsigned int e;

	for (e = 0; e < FC_PW_MAX_ENTRIES; e++)
		if (!(pw->used & (1ull << e)) &&
		    (best < 0 || pw->freed_at[e] < pw->freed_at[best]))
			best = (int)e;
	return best;
}

int fc__pw_map(struct fc_dev *dev, struct fc__mem *m)
{
	struct fc__pw *pw = &dev->pw;
	uint64_t bus, size = m->pub.len;
	uint32_t ctrl;
	int e, ret;

	if (m->pw_entry)
		return 0;
	if (size > FC_PW_MAX_SIZE)
		return -E2BIG;
	if (dev->be->pw_map) {
		unsigned int entry;

		if (!(dev->info.caps & FC_CAP_PEER_WINDOW))
			return -EOPNOTSUPP;
		ret = dev->be->pw_map(dev, m, &entry);
		if (!ret)
			m->pw_entry = entry + 1;
		return ret;
	}
	if (!dev->be->peer_window || !dev->be->mem_bus ||
	    !(dev->info.caps & FC_CAP_PEER_WINDOW))
		return -EOPNOTSUPP;
	e = pick_entry(pw);
	if (e < 0)
		return -ENOSPC;
	ret = dev->be->mem_bus(dev, m, &bus);
	if (ret)
		return ret;
	pw->gen[e]++;
	if (dev->be->pw_publish)
		dev->be->pw_publish(dev, m, (unsigned int)e, pw->gen[e]);
	ctrl = FC_PW_CTRL_VALID | FC_PW_CTRL_READ | FC_PW_CTRL_WRITE |
	       FC_PW_CTRL_GEN(pw->gen[e]);
	ret = reg_wr(dev, FC_PW_REG(e, FC_PW_BASE_LO), (uint32_t)bus);
	if (!ret)
		ret = reg_wr(dev, FC_PW_REG(e, FC_PW_BASE_HI),
			     (uint32_t)(bus >> 32));
	if (!ret)
		ret = reg_wr(dev, FC_PW_REG(e, FC_PW_SIZE_LO), (uint32_t)size);
	if (!ret)
		ret = reg_wr(dev, FC_PW_REG(e, FC_PW_SIZE_HI),
			     (uint32_t)(size >> 32));
	if (!ret)
		ret = reg_wr(dev, FC_PW_REG(e, FC_PW_CTRL), ctrl);
	if (!ret)
		ret = wait_seen(dev, (unsigned int)e, ctrl);
	if (ret)
		return ret;
	pw->used |= 1ull << e;
	m->pw_entry = (unsigned int)e + 1;
	return 0;
}

int fc__pw_unmap(struct fc_dev *dev, struct fc__mem *m)
{
	struct fc__pw *pw = &dev->pw;
	unsigned int e;
	uint32_t ctrl;
	int ret;

	if (!m->pw_entry)
		return 0;
	e = m->pw_entry - 1;
	if (dev->be->pw_unmap) {
		ret = dev->be->pw_unmap(dev, m, e);
		if (!ret)
			m->pw_entry = 0;
		return ret;
	}
	ctrl = FC_PW_CTRL_GEN(++pw->gen[e]);
	ret = reg_wr(dev, FC_PW_REG(e, FC_PW_CTRL), ctrl);
	if (!ret)
		ret = wait_seen(dev, e, ctrl);
	/* Not reused unless the board took it back: a late write must not
	 * land in the next buffer mapped there. */
	if (ret)
		return ret;
	pw->used &= ~(1ull << e);
	pw->freed_at[e] = ++pw->clock;
	m->pw_entry = 0;
	return 0;
}
