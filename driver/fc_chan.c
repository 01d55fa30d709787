// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: channel endpoints. A receive ring is programmed by the driver
 * (CHAN_RING), from a MEM_ALLOC buffer of the calling file, so that
 * userspace never handles the bus address the board writes to; the file
 * then owns the endpoint, moves its HEAD (CHAN_HEAD) and reads its TAIL
 * (REG_READ). A file that holds the event queue (fc_eq.c) may instead
 * switch an endpoint into the queue (FC_CHAN_RING_EQ). Closing the file
 * switches its endpoints off.
 */
#include <linux/delay.h>
#include <linux/log2.h>
#include <linux/uaccess.h>

#include "fc.h"

/* Largest ring: 2^20 slots of FC_CHAN_SLOT_SIZE bytes (64 MiB). */
#define FC_CHAN_MAX_SLOTS	(1u << 20)
/*
 * A board without FC_CAP_CHAN_SEEN: after CTRL is cleared, how long an
 * emulated one may still be writing a packet it took before it saw the
 * write (a real one has stopped once the read-back of CTRL returns).
 */
#define FC_CHAN_GRACE_MS	20
/* A board with it: how long it may take to say so before we give up. */
#define FC_CHAN_LEAVE_MS	2000

static void fc_chan_hw_off(struct fc_dev *fc, u32 chan)
{
	fc_wr32(fc, FC_CHAN_REG(chan, FC_CHAN_CTRL), 0);
}

/*
 * Has the board left every ring of @off (its SEEN without ENABLE)? One
 * that reads all ones is off the bus: it writes nothing any more.
 */
static bool fc_chan_left(struct fc_dev *fc, const unsigned long *off)
{
	unsigned int c;
	u32 seen;

	for_each_set_bit(c, off, FC_MAX_CHANNELS) {
		seen = fc_rd32(fc, FC_CHAN_REG(c, FC_CHAN_SEEN));
		if (seen != ~0u && (seen & FC_CHAN_CTRL_ENABLE))
			return false;
	}
	return true;
}

/*
 * Wait until the board no longer writes the rings of the endpoints in
 * @off, switched off. RETURN VALUE: true once it has left them; false if
 * it never said so: their memory must then stay until the board goes.
 */
static bool fc_chan_grace(struct fc_dev *fc, const unsigned long *off)
{
	unsigned long end = jiffies + msecs_to_jiffies(FC_CHAN_LEAVE_MS);

	fc_ring(fc);
	fc_rd32(fc, FC_CHAN_REG(0, FC_CHAN_CTRL));	/* flush posted writes */
	if (!(fc->caps & FC_CAP_CHAN_SEEN)) {
		if (fc->type == FC_BOARD_IVSHMEM)
			msleep(FC_CHAN_GRACE_MS);
		return true;
	}
	while (!fc_chan_left(fc, off)) {
		if (time_after(jiffies, end)) {
			dev_warn(&fc->pdev->dev,
				 "board did not leave its receive rings; keeping their memory\n");
			return false;
		}
		usleep_range(100, 1000);
	}
	return true;
}

/* Drop the buffers of the endpoints in @off, once the board has left them. */
static void fc_chan_put_stale(struct fc_dev *fc, const unsigned long *off)
{
	struct fc_mem *m;
	unsigned int i;

	mutex_lock(&fc->chan_lock);
	for_each_set_bit(i, off, FC_MAX_CHANNELS) {
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
	*out = NULL;
	if (a->flags & ~(FC_CHAN_RING_OFF | FC_CHAN_RING_EQ) ||
	    a->flags == (FC_CHAN_RING_OFF | FC_CHAN_RING_EQ) || a->head ||
	    a->reserved0 || a->reserved[0] || a->reserved[1] ||
	    a->chan >= FC_MAX_CHANNELS)
		return -EINVAL;
	if (!(ff->fc->caps & FC_CAP_CHANNELS))
		return -EOPNOTSUPP;
	if ((a->flags & FC_CHAN_RING_EQ) &&
	    !(ff->fc->caps & FC_CAP_EVENT_QUEUE))
		return -EOPNOTSUPP;
	if (a->flags)
		return a->handle || a->slots || a->offset ? -EINVAL : 0;
	if (!a->slots || !is_power_of_2(a->slots) ||
	    a->slots > FC_CHAN_MAX_SLOTS || a->offset % FC_CHAN_SLOT_SIZE)
		return -EINVAL;
	return fc_mem_get_span(ff, a->handle, a->offset,
			       (u64)a->slots * FC_CHAN_SLOT_SIZE, out);
}

/*
 * Switch endpoint @a->chan of @ff off, then, with @m (its reference is
 * taken over), on again with the ring @a describes, or with @eq into the
 * event queue @ff holds; @a->head is set.
 */
static int fc_chan_program(struct fc_file *ff, struct fc_ioc_chan_ring *a,
			   struct fc_mem *m, bool eq)
{
	struct fc_dev *fc = ff->fc;
	DECLARE_BITMAP(off, FC_MAX_CHANNELS);
	struct fc_chan_ep *ep;
	bool grace = false, left;
	dma_addr_t bus;

	bitmap_zero(off, FC_MAX_CHANNELS);
	set_bit(a->chan, off);
	mutex_lock(&fc->chan_lock);
	ep = &fc->chans[a->chan];
	if (ep->owner && ep->owner != ff) {
		mutex_unlock(&fc->chan_lock);
		fc_mem_put(m);
		return -EBUSY;
	}
	if (eq && fc->eq_owner != ff) {
		mutex_unlock(&fc->chan_lock);
		return -EPERM;
	}
	fc_chan_hw_off(fc, a->chan);
	if (ep->mem) {
		/* The old ring may still be written: keep it for the grace. */
		ep->stale = true;
		grace = true;
	}
	ep->owner = NULL;
	ep->eq = false;
	if ((m || eq) && grace) {
		/* Let the board leave the old ring before using the new one. */
		mutex_unlock(&fc->chan_lock);
		left = fc_chan_grace(fc, off);
		if (left)
			fc_chan_put_stale(fc, off);
		grace = false;
		mutex_lock(&fc->chan_lock);
		if (!left) {
			/* It may still write the old one: that stays. */
			mutex_unlock(&fc->chan_lock);
			fc_mem_put(m);
			return -EIO;
		}
		if (ep->owner || ep->mem) {
			/* Another file took it meanwhile. */
			mutex_unlock(&fc->chan_lock);
			fc_mem_put(m);
			return -EBUSY;
		}
		if (eq && fc->eq_owner != ff) {
			/* The queue went off meanwhile. */
			mutex_unlock(&fc->chan_lock);
			return -EPERM;
		}
	}
	if (eq) {
		a->head = 0;
		fc_wr32(fc, FC_CHAN_REG(a->chan, FC_CHAN_CTRL),
			FC_CHAN_CTRL_ENABLE | FC_CHAN_CTRL_EQ);
		ep->owner = ff;
		ep->eq = true;
	} else if (m) {
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
	if (grace && fc_chan_grace(fc, off))
		fc_chan_put_stale(fc, off);
	return 0;
}

long fc_ioctl_chan_ring(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_chan_ring a;
	struct fc_mem *m;
	bool eq;
	int ret;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	ret = fc_chan_ring_check(ff, &a, &m);
	if (ret)
		return ret;
	eq = a.flags & FC_CHAN_RING_EQ;
	ret = fc_chan_program(ff, &a, m, eq);
	if (ret)
		return ret;
	if (copy_to_user(arg, &a, sizeof(a))) {
		/* The caller cannot learn HEAD: leave the endpoint off. */
		if (m || eq) {
			a.flags = FC_CHAN_RING_OFF;
			fc_chan_program(ff, &a, NULL, false);
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
	if (ep->eq) {
		/* No ring: the queue has the one HEAD (EQ_HEAD). */
		ret = -EINVAL;
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
	DECLARE_BITMAP(off, FC_MAX_CHANNELS);
	bool any = false, left = true;
	unsigned int i;

	bitmap_zero(off, FC_MAX_CHANNELS);
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
		ep->eq = false;
		ep->stale = true;
		set_bit(i, off);
		any = true;
	}
	mutex_unlock(&fc->chan_lock);
	if (any && !fc->dead)
		left = fc_chan_grace(fc, off);
	up_read(&fc->remove_sem);
	if (any && left)
		fc_chan_put_stale(fc, off);
}

/*
 * The event queue of @ff goes off (fc_eq.c): so do its endpoints in it.
 * They have no memory of their own; the queue waits for the board.
 */
void fc_chan_leave_eq(struct fc_file *ff)
{
	struct fc_dev *fc = ff->fc;
	unsigned int i;

	mutex_lock(&fc->chan_lock);
	for (i = 0; i < FC_MAX_CHANNELS; i++) {
		struct fc_chan_ep *ep = &fc->chans[i];

		if (ep->owner != ff || !ep->eq)
			continue;
		fc_chan_hw_off(fc, i);
		ep->owner = NULL;
		ep->eq = false;
	}
	mutex_unlock(&fc->chan_lock);
}

/*
 * The board is being removed (remove_sem held for writing): switch every
 * endpoint off and let the board leave the rings before they are dropped;
 * a board still on the bus could write them until then.
 */
void fc_chan_kill(struct fc_dev *fc)
{
	DECLARE_BITMAP(off, FC_MAX_CHANNELS);
	bool any = false;
	unsigned int i;

	bitmap_zero(off, FC_MAX_CHANNELS);
	mutex_lock(&fc->chan_lock);
	for (i = 0; i < FC_MAX_CHANNELS; i++) {
		if (!fc->chans[i].mem)
			continue;
		fc_chan_hw_off(fc, i);
		set_bit(i, off);
		any = true;
	}
	mutex_unlock(&fc->chan_lock);
	/* The memory goes at the removal all the same (fc_mem.c). */
	if (any)
		fc_chan_grace(fc, off);

	mutex_lock(&fc->chan_lock);
	for (i = 0; i < FC_MAX_CHANNELS; i++) {
		fc_mem_put(fc->chans[i].mem);
		fc->chans[i].mem = NULL;
		fc->chans[i].owner = NULL;
		fc->chans[i].stale = false;
		fc->chans[i].eq = false;
	}
	mutex_unlock(&fc->chan_lock);
}
