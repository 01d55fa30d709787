// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: the board's event queue (FC_EQ_*, docs/hardware.md section 12).
 * One file at a time holds it, in a MEM_ALLOC buffer of its own (EQ), so
 * that its process finds what arrived by reading the entries in its own
 * mapping, with no system call; it gives HEAD back now and then (EQ_HEAD),
 * and its endpoints join the queue through CHAN_RING (FC_CHAN_RING_EQ,
 * fc_chan.c). Closing the file switches the queue off.
 */
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "fc.h"

/* How long the board may take to say it left the queue (FC_EQ_SEEN). */
#define FC_EQ_LEAVE_MS		2000
/* EQ_WAIT without the queue's interrupt: how often it looks. */
#define FC_EQ_POLL_US		50

/*
 * Wait until the board works by a CTRL without ENABLE (the queue's memory
 * is then no longer written). One that reads all ones is off the bus.
 * RETURN VALUE: true once it has left; false if it never said so.
 */
static bool fc_eq_left(struct fc_dev *fc)
{
	unsigned long end = jiffies + msecs_to_jiffies(FC_EQ_LEAVE_MS);
	u32 seen;

	fc_ring(fc);
	fc_rd32(fc, FC_EQ_CTRL);	/* flush posted writes */
	for (;;) {
		seen = fc_rd32(fc, FC_EQ_SEEN);
		if (seen == ~0u || !(seen & FC_EQ_CTRL_ENABLE))
			return true;
		if (time_after(jiffies, end))
			return false;
		usleep_range(100, 1000);
	}
}

/*
 * Switch the queue off (eq_lock held): the holder's endpoints leave it,
 * then the queue; its memory goes once the board has left it, else stays
 * until the board goes. RETURN VALUE: 0, or -EIO when the board never
 * said it left.
 */
static int fc_eq_off(struct fc_dev *fc)
{
	struct fc_file *owner;

	mutex_lock(&fc->chan_lock);
	owner = fc->eq_owner;
	fc->eq_owner = NULL;
	mutex_unlock(&fc->chan_lock);
	if (owner)
		fc_chan_leave_eq(owner);
	wake_up_all(&fc->eq_wq);	/* EQ_WAIT: the holder is gone */
	if (!fc->eq_mem)
		return 0;
	fc_wr32(fc, FC_EQ_CTRL, 0);
	if (!fc_eq_left(fc)) {
		dev_warn(&fc->pdev->dev,
			 "board did not leave its event queue; keeping its memory\n");
		return -EIO;
	}
	fc_mem_put(fc->eq_mem);
	fc->eq_mem = NULL;
	return 0;
}

static int fc_eq_check(struct fc_file *ff, const struct fc_ioc_eq *a,
		       struct fc_mem **out)
{
	*out = NULL;
	if (a->flags & ~FC_EQ_OFF || a->reserved0 || a->reserved[0] ||
	    a->reserved[1])
		return -EINVAL;
	if (!(ff->fc->caps & FC_CAP_EVENT_QUEUE))
		return -EOPNOTSUPP;
	if (a->flags & FC_EQ_OFF)
		return a->handle || a->slots || a->offset ? -EINVAL : 0;
	if (a->slots < FC_EQ_MIN_SLOTS || a->slots > FC_EQ_MAX_SLOTS ||
	    !is_power_of_2(a->slots) || a->offset % FC_EQ_ENTRY_SIZE)
		return -EINVAL;
	return fc_mem_get_span(ff, a->handle, a->offset,
			       (u64)a->slots * FC_EQ_ENTRY_SIZE, out);
}

/* Program the queue in @m (its reference is taken over) and switch it on. */
static void fc_eq_on(struct fc_file *ff, const struct fc_ioc_eq *a,
		     struct fc_mem *m)
{
	struct fc_dev *fc = ff->fc;
	dma_addr_t bus = m->dma + a->offset;

	/* Entry 0 is new when its phase is 1: none may look written. */
	memset((u8 *)m->cpu + a->offset, 0,
	       (size_t)a->slots * FC_EQ_ENTRY_SIZE);
	fc_wr32(fc, FC_EQ_BASE_LO, lower_32_bits(bus));
	fc_wr32(fc, FC_EQ_BASE_HI, upper_32_bits(bus));
	fc_wr32(fc, FC_EQ_SLOTS, a->slots);
	fc_wr32(fc, FC_EQ_HEAD, 0);
	/* Out of reach while HEAD follows (EQ_HEAD): no interrupts. */
	fc_wr32(fc, FC_EQ_IRQ_AT, a->slots);
	fc_wr32(fc, FC_EQ_CTRL, FC_EQ_CTRL_ENABLE);
	fc->eq_mem = m;
	fc->eq_off = a->offset;
	fc->eq_slots = a->slots;
	fc->eq_head = 0;
	mutex_lock(&fc->chan_lock);
	fc->eq_owner = ff;
	mutex_unlock(&fc->chan_lock);
	fc_ring(fc);
}

long fc_ioctl_eq(struct fc_file *ff, void __user *arg)
{
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_eq a;
	struct fc_mem *m;
	int ret;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	ret = fc_eq_check(ff, &a, &m);
	if (ret)
		return ret;
	mutex_lock(&fc->eq_lock);
	if (fc->eq_owner && fc->eq_owner != ff) {
		ret = -EBUSY;
		goto out_put;
	}
	/* Ours, or memory the board had not left before: off first. */
	ret = fc_eq_off(fc);
	if (ret || !m)
		goto out_put;
	fc_eq_on(ff, &a, m);
	m = NULL;
out_put:
	mutex_unlock(&fc->eq_lock);
	fc_mem_put(m);
	return ret;
}

/*
 * Only forward, and not past what the board has written: a HEAD beyond
 * TAIL would let the board overwrite entries not yet read.
 */
long fc_ioctl_eq_head(struct fc_file *ff, void __user *arg)
{
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_eq_head a;
	u32 tail;
	int ret = 0;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved)
		return -EINVAL;
	if (!(fc->caps & FC_CAP_EVENT_QUEUE))
		return -EOPNOTSUPP;
	mutex_lock(&fc->eq_lock);
	if (fc->eq_owner != ff) {
		ret = -EPERM;
		goto out_unlock;
	}
	tail = fc_rd32(fc, FC_EQ_TAIL);
	if (a.head - fc->eq_head > tail - fc->eq_head) {
		ret = -ERANGE;
		goto out_unlock;
	}
	/* IRQ_AT first: it stays beyond what the board may write. */
	fc_wr32(fc, FC_EQ_IRQ_AT, a.head + fc->eq_slots);
	fc_wr32(fc, FC_EQ_HEAD, a.head);
	fc->eq_head = a.head;
	fc_ring(fc);
out_unlock:
	mutex_unlock(&fc->eq_lock);
	return ret;
}

/* Has the board written entry @entry of the queue at @q (@slots)? */
static bool fc_eq_written(const struct fc_hw_pkt *q, u32 slots, u32 entry)
{
	u32 hdr = le32_to_cpu(READ_ONCE(q[entry & (slots - 1)].hdr));

	return (hdr & FC_EQ_PHASE) == FC_EQ_PHASE_OF(entry, slots);
}

/*
 * Sleep until entry @a.entry is written: armed under remove_sem and
 * eq_lock (IRQ_AT set, a reference on the queue's memory taken), then the
 * sleep holds neither, and reads only that memory, so that a removal or
 * the queue going off need not wait for it (both wake it).
 */
long fc_ioctl_eq_wait(struct fc_file *ff, void __user *arg)
{
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_eq_wait a;
	const struct fc_hw_pkt *q = NULL;
	struct fc_mem *m = NULL;
	ktime_t end, now, step;
	u32 slots = 0;
	long ret = 0;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved)
		return -EINVAL;
	if (!(fc->caps & FC_CAP_EVENT_QUEUE))
		return -EOPNOTSUPP;
	down_read(&fc->remove_sem);
	mutex_lock(&fc->eq_lock);
	if (fc->dead) {
		ret = -ENODEV;
	} else if (fc->eq_owner != ff || !fc->eq_mem) {
		ret = -EPERM;
	} else if (a.entry - fc->eq_head > fc->eq_slots) {
		ret = -EINVAL;
	} else {
		m = fc->eq_mem;
		kref_get(&m->ref);
		atomic_inc(&fc->eq_waiters);
		slots = fc->eq_slots;
		q = (const struct fc_hw_pkt *)((u8 *)m->cpu + fc->eq_off);
		fc_wr32(fc, FC_EQ_IRQ_AT, a.entry);
		fc_ring(fc);
	}
	mutex_unlock(&fc->eq_lock);
	up_read(&fc->remove_sem);
	if (ret)
		return ret;

	/*
	 * The queue's memory is read only while the board is not dead: a
	 * removal frees it, after waiting for eq_waiters to reach 0.
	 */
	end = ktime_add_us(ktime_get(), a.timeout_us);
	for (;;) {
		if (READ_ONCE(fc->dead) || READ_ONCE(fc->eq_owner) != ff) {
			ret = READ_ONCE(fc->dead) ? -ENODEV : -EPERM;
			break;
		}
		if (fc_eq_written(q, slots, a.entry)) {
			ret = 0;
			break;
		}
		now = ktime_get();
		if (ktime_compare(now, end) >= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		step = ktime_sub(end, now);
		if (fc->chan_irq < 0)
			step = min_t(ktime_t, step, ns_to_ktime(FC_EQ_POLL_US * NSEC_PER_USEC));
		ret = wait_event_interruptible_hrtimeout(fc->eq_wq,
			READ_ONCE(fc->dead) || READ_ONCE(fc->eq_owner) != ff ||
			fc_eq_written(q, slots, a.entry),
			step);
		if (ret == -ERESTARTSYS) {
			ret = -EINTR;
			break;
		}
	}
	fc_mem_put(m);
	if (atomic_dec_and_test(&fc->eq_waiters))
		wake_up_all(&fc->eq_wq);
	return ret;
}

/* The file is closed: its queue goes off (its endpoints went before). */
void fc_eq_release_file(struct fc_file *ff)
{
	struct fc_dev *fc = ff->fc;

	/* The registers stay mapped while we hold off a removal. */
	down_read(&fc->remove_sem);
	mutex_lock(&fc->eq_lock);
	if (fc->eq_owner == ff && !fc->dead)
		fc_eq_off(fc);
	mutex_unlock(&fc->eq_lock);
	up_read(&fc->remove_sem);
}

/*
 * The board is being removed (remove_sem held for writing, endpoints off):
 * let it leave the queue; the memory goes at the removal all the same.
 */
void fc_eq_kill(struct fc_dev *fc)
{
	/* dead is set: sleepers in EQ_WAIT leave without reading the queue */
	wake_up_all(&fc->eq_wq);
	wait_event(fc->eq_wq, !atomic_read(&fc->eq_waiters));
	mutex_lock(&fc->eq_lock);
	fc_eq_off(fc);
	fc_mem_put(fc->eq_mem);
	fc->eq_mem = NULL;
	mutex_unlock(&fc->eq_lock);
}
