// SPDX-License-Identifier: MIT
/*
 * Board memory as pseudo-channels: the geometry the board reports, and a
 * first-fit allocator per pseudo-channel so that callers place data on the
 * channel they mean (the board does not interleave, hw.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hbm.h"

#define HBM_ALIGN 64ull

uint32_t fc__hbm_rd(struct fc_dev *dev, uint32_t off)
{
	uint32_t v = 0;

	if (dev->regs)
		return __atomic_load_n(&dev->regs[off / 4], __ATOMIC_ACQUIRE);
	fc__lock(&dev->lock);
	dev->be->reg_read(dev, off, &v);
	fc__unlock(&dev->lock);
	return v;
}

static void hbm_destroy(struct fc__hbm *h)
{
	unsigned int p;

	for (p = 0; p < h->info.pchannels; p++)
		free(h->pch[p].ext);
	free(h->pch);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static int hbm_create(struct fc_dev *dev, struct fc__hbm **hp)
{
	struct fc__hbm *h;
	unsigned int l, s;

	if (!(dev->info.caps & FC_CAP_HBM_STREAMS))
		return -EOPNOTSUPP;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->info.pchannels = fc__hbm_rd(dev, FC_HBM_PCHANNELS);
	h->info.num_ls = fc__hbm_rd(dev, FC_HBM_NUM_LS);
	h->info.ls_size = fc__hbm_rd(dev, FC_HBM_LS_SIZE);
	h->info.kernels = fc__hbm_rd(dev, FC_HBM_KERNELS);
	h->info.pch_bytes = fc__hbm_rd(dev, FC_HBM_PCH_BYTES_LO) |
			    (uint64_t)fc__hbm_rd(dev, FC_HBM_PCH_BYTES_HI)
				    << 32;
	if (!h->info.pchannels || !h->info.pch_bytes ||
	    h->info.num_ls > FC_MAX_LS) {
		free(h);
		return -EPROTO;
	}
	h->pch = calloc(h->info.pchannels, sizeof(*h->pch));
	if (!h->pch) {
		free(h);
		return -ENOMEM;
	}
	/* Runs of other openers are not ours: start from what is there. */
	for (l = 0; l < h->info.num_ls; l++) {
		h->reset_seq[l] = fc__hbm_rd(dev, FC_LS_REG(l, FC_LS_RESET));
		for (s = 0; s < FC_LS_STREAMS; s++)
			h->start_seq[l][s] =
				fc__hbm_rd(dev, FC_LS_SREG(l, s, FC_LS_START));
	}
	pthread_mutex_init(&h->lock, NULL);
	*hp = h;
	return 0;
}

int fc__hbm_get(struct fc_dev *dev, struct fc__hbm **hp)
{
	struct fc__hbm *h;
	int ret;

	struct fc__hbm *none = NULL;

	h = __atomic_load_n(&dev->hbm, __ATOMIC_ACQUIRE);
	if (h) {
		*hp = h;
		return 0;
	}
	/* Without dev->lock: reading registers may take it. */
	ret = hbm_create(dev, &h);
	if (ret)
		return ret;
	if (!__atomic_compare_exchange_n(&dev->hbm, &none, h, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		hbm_destroy(h); /* another thread was first */
		h = none;
	}
	*hp = h;
	return 0;
}

void fc__hbm_fini(struct fc_dev *dev)
{
	struct fc__hbm *h = dev->hbm;

	if (!h)
		return;
	if (h->bounce)
		fc_mem_free(dev, h->bounce);
	hbm_destroy(h);
	dev->hbm = NULL;
}

/* The start of the gap before reservation @i of channel @c (64-aligned). */
static uint64_t gap_start(const struct fc__hbm_pch *c, unsigned int i,
			  uint64_t base)
{
	if (!i)
		return base;
	return (c->ext[i - 1].addr + c->ext[i - 1].len + HBM_ALIGN - 1) &
	       ~(HBM_ALIGN - 1);
}

/*
 * First fit in channel @p, or with @top the highest place that fits.
 * RETURN VALUE: 0, -ENOSPC, -ENOMEM.
 */
static int pch_reserve(struct fc__hbm *h, uint32_t p, uint64_t len, bool top,
		       uint64_t *addr)
{
	struct fc__hbm_pch *c = &h->pch[p];
	uint64_t base = p * h->info.pch_bytes, end = base + h->info.pch_bytes;
	uint64_t at = 0, from, next;
	unsigned int i, k;
	bool found = false;
	void *ext;

	for (k = 0; k <= c->n && !found; k++) {
		i = top ? c->n - k : k;
		from = gap_start(c, i, base);
		next = i < c->n ? c->ext[i].addr : end;
		if (next < from || next - from < len)
			continue;
		at = top ? (next - len) & ~(HBM_ALIGN - 1) : from;
		found = at >= from;
	}
	if (!found)
		return -ENOSPC;
	if (c->n == c->cap) {
		ext = realloc(c->ext, (c->cap * 2 + 8) * sizeof(*c->ext));
		if (!ext)
			return -ENOMEM;
		c->ext = ext;
		c->cap = c->cap * 2 + 8;
	}
	memmove(&c->ext[i + 1], &c->ext[i], (c->n - i) * sizeof(*c->ext));
	c->ext[i].addr = at;
	c->ext[i].len = len;
	c->n++;
	*addr = at;
	return 0;
}

int fc__hbm_reserve(struct fc__hbm *h, uint64_t len, uint32_t pch, bool top,
		    uint64_t *addr)
{
	uint32_t i, p;
	int ret = -ENOSPC;

	if (len > h->info.pch_bytes)
		return -E2BIG;
	if (pch != FC_HBM_PCH_ANY)
		return pch_reserve(h, pch, len, top, addr);
	for (i = 0; i < h->info.pchannels && ret == -ENOSPC; i++) {
		p = (h->next_pch + i) % h->info.pchannels;
		ret = pch_reserve(h, p, len, top, addr);
		if (!ret)
			h->next_pch = (p + 1) % h->info.pchannels;
	}
	return ret;
}

FC__EXPORT int fc_hbm_query(struct fc_dev *dev, struct fc_hbm_info *info)
{
	struct fc__hbm *h;
	int ret;

	if (!dev || !info)
		return -EINVAL;
	ret = fc__hbm_get(dev, &h);
	if (!ret)
		*info = h->info;
	return ret;
}

FC__EXPORT int fc_hbm_alloc(struct fc_dev *dev, uint64_t len, uint32_t pch,
			    unsigned int flags, uint64_t *addr)
{
	struct fc__hbm *h;
	int ret;

	if (!dev || !addr || !len || flags)
		return -EINVAL;
	ret = fc__hbm_get(dev, &h);
	if (ret)
		return ret;
	if (pch != FC_HBM_PCH_ANY && pch >= h->info.pchannels)
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	ret = fc__hbm_reserve(h, len, pch, false, addr);
	pthread_mutex_unlock(&h->lock);
	return ret;
}

FC__EXPORT int fc_hbm_free(struct fc_dev *dev, uint64_t addr)
{
	struct fc__hbm_pch *c;
	struct fc__hbm *h;
	unsigned int i;
	int ret;

	if (!dev)
		return -EINVAL;
	ret = fc__hbm_get(dev, &h);
	if (ret)
		return ret;
	if (addr / h->info.pch_bytes >= h->info.pchannels)
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	c = &h->pch[addr / h->info.pch_bytes];
	ret = -EINVAL;
	for (i = 0; i < c->n; i++) {
		/* the program area is the library's own */
		if (c->ext[i].addr == addr && addr != h->prog_base) {
			memmove(&c->ext[i], &c->ext[i + 1],
				(c->n - i - 1) * sizeof(*c->ext));
			c->n--;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}
