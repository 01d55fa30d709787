// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: channel endpoints. A receive ring is programmed by the driver
 * (CHAN_RING), from a MEM_ALLOC buffer of the calling file, so that
 * userspace never handles the bus address the board writes to; the file
 * then owns the endpoint, moves its HEAD (CHAN_HEAD) and reads its TAIL
 * (REG_READ). Closing the file switches its endpoints off.
 */
#include <linux/delay.h>
#include <linux/log2.h>
#include <linux/uaccess.h>

#include "fc.h"

/* Largest ring: 2^20 slots of FC_CHAN_SLOT_SIZE bytes (64 MiB). */
#define FC_CHAN_MAX_SLOTS	(1u << 20)
/*
 * After CTRL is cleared, how long an emulated board may still be writing a
 * packet it took before it saw the write (fpgacomm-emud acts on register
 * writes between rounds, each far shorter than this); a real board has
 * stopped once the read-back of CTRL returns.
 */
#define FC_CHAN_GRACE_MS	20

static void fc_chan_hw_off(struct fc_dev *fc, u32 chan)
{
	fc_wr32(fc, FC_CHAN_REG(chan, FC_CHAN_CTRL), 0);
}

/* Wait until the board no longer writes rings it was told to drop. */
static void fc_chan_grace(struct fc_dev *fc)
{
	fc_ring(fc);
	fc_rd32(fc, FC_CHAN_REG(0, FC_CHAN_CTRL));	/* flush posted writes */
	if (fc->type == FC_BOARD_IVSHMEM)
		msleep(FC_CHAN_GRACE_MS);
}

/* Drop the buffers of endpoints switched off, once the grace is over. */
static void fc_chan_put_stale(struct fc_dev *fc)
{
	struct fc_mem *m;
	unsigned int i;

	mutex_lock(&fc->chan_lock);
	for (i = 0; i < FC_MAX_CHANNELS; i++) {
		struct fc_chan_ep *ep = &fc->chans[i];

		if (!ep->stale)
			continue;
		m = ep->mem;
		ep->mem = NULL;
		ep->stale = false;
		fc_mem_put(m);
	}
	mutex_unlock(&fc->chan_lock);
}

static int fc_chan_ring_check(struct fc_file *ff,
			      const struct fc_ioc_chan_ring *a,
			      struct fc_mem **out)
{
	struct fc_mem *m;

	*out = NULL;
	if (a->flags & ~FC_CHAN_RING_OFF || a->head || a->reserved0 ||
	    a->reserved[0] || a->reserved[1] || a->chan >= FC_MAX_CHANNELS)
		return -EINVAL;
	if (!(ff->fc->caps & FC_CAP_CHANNELS))
		return -EOPNOTSUPP;
	if (a->flags & FC_CHAN_RING_OFF)
		return a->handle || a->slots || a->offset ? -EINVAL : 0;
	if (!a->slots || !is_power_of_2(a->slots) ||
	    a->slots > FC_CHAN_MAX_SLOTS || a->offset % FC_CHAN_SLOT_SIZE)
		return -EINVAL;
	m = fc_mem_lookup(ff, a->handle);
	if (!m)
		return -EINVAL;
	/* The board writes the ring by one bus address: contiguous only. */
	if (!m->alloc) {
		fc_mem_put(m);
		return -EINVAL;
	}
	if (a->offset > m->len ||
	    (u64)a->slots * FC_CHAN_SLOT_SIZE > m->len - a->offset) {
		fc_mem_put(m);
		return -ERANGE;
	}
	*out = m;
	return 0;
}

/*
 * Switch endpoint @a->chan of @ff off, then, with @m (its reference is
 * taken over), on again with the ring @a describes; @a->head is set.
 */
static int fc_chan_program(struct fc_file *ff, struct fc_ioc_chan_ring *a,
			   struct fc_mem *m)
{
	struct fc_dev *fc = ff->fc;
	struct fc_chan_ep *ep;
	bool grace = false;
	dma_addr_t bus;

	mutex_lock(&fc->chan_lock);
	ep = &fc->chans[a->chan];
	if (ep->owner && ep->owner != ff) {
		mutex_unlock(&fc->chan_lock);
		fc_mem_put(m);
		return -EBUSY;
	}
	fc_chan_hw_off(fc, a->chan);
	if (ep->mem) {
		/* The old ring may still be written: keep it for the grace. */
		ep->stale = true;
		grace = true;
	}
	ep->owner = NULL;
	if (m && grace) {
		/* Let the board leave the old ring before using the new one. */
		mutex_unlock(&fc->chan_lock);
		fc_chan_grace(fc);
		fc_chan_put_stale(fc);
		grace = false;
		mutex_lock(&fc->chan_lock);
		if (ep->owner || ep->mem) {
			/* Another file took it meanwhile. */
			mutex_unlock(&fc->chan_lock);
			fc_mem_put(m);
			return -EBUSY;
		}
	}
	if (m) {
		bus = m->dma + a->offset;
		fc_wr32(fc, FC_CHAN_REG(a->chan, FC_CHAN_RING_LO),
			lower_32_bits(bus));
		fc_wr32(fc, FC_CHAN_REG(a->chan, FC_CHAN_RING_HI),
			upper_32_bits(bus));
		fc_wr32(fc, FC_CHAN_REG(a->chan, FC_CHAN_RING_SLOTS), a->slots);
		/* HEAD == TAIL: an empty ring, starting where the board is. */
		a->head = fc_rd32(fc, FC_CHAN_REG(a->chan, FC_CHAN_TAIL));
		fc_wr32(fc, FC_CHAN_REG(a->chan, FC_CHAN_HEAD), a->head);
		fc_wr32(fc, FC_CHAN_REG(a->chan, FC_CHAN_CTRL),
			FC_CHAN_CTRL_ENABLE);
		ep->owner = ff;
		ep->mem = m;
		ep->head = a->head;
	}
	mutex_unlock(&fc->chan_lock);
	fc_ring(fc);
	if (grace) {
		fc_chan_grace(fc);
		fc_chan_put_stale(fc);
	}
	return 0;
}

long fc_ioctl_chan_ring(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_chan_ring a;
	struct fc_mem *m;
	int ret;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	ret = fc_chan_ring_check(ff, &a, &m);
	if (ret)
		return ret;
	ret = fc_chan_program(ff, &a, m);
	if (ret)
		return ret;
	if (copy_to_user(arg, &a, sizeof(a))) {
		/* The caller cannot learn HEAD: leave the endpoint off. */
		if (m) {
			a.flags = FC_CHAN_RING_OFF;
			fc_chan_program(ff, &a, NULL);
		}
		return -EFAULT;
	}
	return 0;
}

/*
 * Only forward, and not past what the board has written: a HEAD beyond
 * TAIL would let the board overwrite slots not yet read, or make the ring
 * look full for good and hold up every packet behind it for this board.
 */
long fc_ioctl_chan_head(struct fc_file *ff, void __user *arg)
{
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_chan_head a;
	struct fc_chan_ep *ep;
	u32 tail;
	int ret = 0;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved || a.chan >= FC_MAX_CHANNELS)
		return -EINVAL;
	if (!(fc->caps & FC_CAP_CHANNELS))
		return -EOPNOTSUPP;
	ep = &fc->chans[a.chan];
	mutex_lock(&fc->chan_lock);
	if (ep->owner != ff) {
		ret = -EPERM;
		goto out_unlock;
	}
	tail = fc_rd32(fc, FC_CHAN_REG(a.chan, FC_CHAN_TAIL));
	if (a.head - ep->head > tail - ep->head) {
		ret = -ERANGE;
		goto out_unlock;
	}
	fc_wr32(fc, FC_CHAN_REG(a.chan, FC_CHAN_HEAD), a.head);
	ep->head = a.head;
out_unlock:
	mutex_unlock(&fc->chan_lock);
	if (!ret)
		fc_ring(fc);
	return ret;
}

/* The file is closed: switch its endpoints off, then free their rings. */
void fc_chan_release_file(struct fc_file *ff)
{
	struct fc_dev *fc = ff->fc;
	bool any = false;
	unsigned int i;

	/* The registers stay mapped while we hold off a removal. */
	down_read(&fc->remove_sem);
	mutex_lock(&fc->chan_lock);
	for (i = 0; i < FC_MAX_CHANNELS; i++) {
		struct fc_chan_ep *ep = &fc->chans[i];

		if (ep->owner != ff)
			continue;
		if (!fc->dead)
			fc_chan_hw_off(fc, i);
		ep->owner = NULL;
		ep->stale = true;
		any = true;
	}
	mutex_unlock(&fc->chan_lock);
	if (any && !fc->dead)
		fc_chan_grace(fc);
	up_read(&fc->remove_sem);
	if (any)
		fc_chan_put_stale(fc);
}

/*
 * The board is being removed (remove_sem held for writing): switch every
 * endpoint off and let the board leave the rings before they are dropped;
 * a board still on the bus could write them until then.
 */
void fc_chan_kill(struct fc_dev *fc)
{
	bool any = false;
	unsigned int i;

	mutex_lock(&fc->chan_lock);
	for (i = 0; i < FC_MAX_CHANNELS; i++) {
		if (!fc->chans[i].mem)
			continue;
		fc_chan_hw_off(fc, i);
		any = true;
	}
	mutex_unlock(&fc->chan_lock);
	if (any)
		fc_chan_grace(fc);

	mutex_lock(&fc->chan_lock);
	for (i = 0; i < FC_MAX_CHANNELS; i++) {
		fc_mem_put(fc->chans[i].mem);
		fc->chans[i].mem = NULL;
		fc->chans[i].owner = NULL;
		fc->chans[i].stale = false;
	}
	mutex_unlock(&fc->chan_lock);
}
