// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: the board's peer window (FC_CAP_PEER_WINDOW). Other nodes reach
 * memory of this host only through entries of a table in the board's
 * registers (FC_PW_*), which the driver alone programs (PEER_WINDOW), from
 * buffers of the calling file, so that userspace never names a bus
 * address and a file exposes only memory it holds. An entry belongs to
 * the file that mapped it and holds its buffer until it is revoked: on
 * unmap, unregister, close, the exporter's move_notify (through
 * fc->win_revoke_mem, set here and called by fc_peer.c), shutdown and
 * removal. Revoking waits for the board's SEEN, with a bound: an entry the
 * board never acknowledges keeps its memory until the board goes.
 */
#include <linux/delay.h>
#include <linux/uaccess.h>

#include "fc.h"

/* How long the board may take to acknowledge a revocation. */
#define FC_WIN_LEAVE_MS		2000

/* Write @ctrl with the entry's next GEN; returns what was written. */
static u32 fc_win_write_ctrl(struct fc_dev *fc, unsigned int i, u32 ctrl)
{
	struct fc_pw_entry *e = &fc->win[i];

	e->ctrl = ctrl | FC_PW_CTRL_GEN(++e->gen);
	fc_wr32(fc, FC_PW_REG(i, FC_PW_CTRL), e->ctrl);
	return e->ctrl;
}

/* Does the board work by what was last written for every entry in @set? */
static bool fc_win_seen(struct fc_dev *fc, const unsigned long *set)
{
	unsigned int i;
	u32 seen;

	for_each_set_bit(i, set, FC_PW_MAX_ENTRIES) {
		seen = fc_rd32(fc, FC_PW_REG(i, FC_PW_SEEN));
		/* All ones: off the bus, it reaches nothing any more. */
		if (seen != ~0u && seen != fc->win[i].ctrl)
			return false;
	}
	return true;
}

/* Wait, bounded, until the board works by what was written for @set. */
static bool fc_win_wait_seen(struct fc_dev *fc, const unsigned long *set)
{
	unsigned long end = jiffies + msecs_to_jiffies(FC_WIN_LEAVE_MS);

	while (!fc_win_seen(fc, set)) {
		if (time_after(jiffies, end))
			return false;
		usleep_range(100, 1000);
	}
	return true;
}

/*
 * Revoke the entries in @set (win_lock held) and wait, bounded, until the
 * board works by that. RETURN VALUE: true once it does.
 */
static bool fc_win_revoke(struct fc_dev *fc, const unsigned long *set)
{
	unsigned int i;

	for_each_set_bit(i, set, FC_PW_MAX_ENTRIES)
		fc_win_write_ctrl(fc, i, 0);
	fc_ring(fc);
	return fc_win_wait_seen(fc, set);
}

/* Let go of entry @i, revoked (win_lock held). */
static void fc_win_free(struct fc_dev *fc, unsigned int i)
{
	struct fc_pw_entry *e = &fc->win[i];

	fc_mem_put(e->mem);
	e->mem = NULL;
	e->owner = NULL;
	e->handle = 0;
	e->stuck = false;
	e->freed = ++fc->win_clock;
}

/*
 * Revoke the entries in @set and free them; ones the board did not
 * acknowledge stay held (stuck) unless @force (the board is going).
 * RETURN VALUE: 0, or -EIO when some stay.
 */
static int fc_win_drop(struct fc_dev *fc, const unsigned long *set, bool force)
{
	unsigned int i;
	bool left;

	if (bitmap_empty(set, FC_PW_MAX_ENTRIES))
		return 0;
	left = fc_win_revoke(fc, set);
	if (!left && !force)
		dev_warn(&fc->pdev->dev,
			 "board did not acknowledge a peer window revocation; keeping the memory\n");
	for_each_set_bit(i, set, FC_PW_MAX_ENTRIES) {
		if (left || force || fc_rd32(fc, FC_PW_REG(i, FC_PW_SEEN)) ==
				     fc->win[i].ctrl) {
			fc_win_free(fc, i);
		} else {
			fc->win[i].owner = NULL;
			fc->win[i].stuck = true;
		}
	}
	return left ? 0 : -EIO;
}

/*
 * The bus address of [@off, @off + @len) of @m, where those bytes are one
 * piece of bus space. RETURN VALUE: 0; -EINVAL (not one piece, not a kind
 * of buffer a window maps); -ENOLINK (the exporter took it back).
 */
static int fc_win_bus(struct fc_mem *m, u64 off, u64 len, dma_addr_t *bus)
{
	struct scatterlist *sg;
	dma_addr_t start = 0, next = 0;
	u64 pos = 0, end = off + len;
	bool in = false;
	unsigned int i;

	if (m->alloc) {
		if (!m->cpu)
			return -EINVAL;	/* freed at a removal */
		*bus = m->dma + off;
		return 0;
	}
	if (!m->peer)
		return -EINVAL;
	if (READ_ONCE(m->revoked))
		return -ENOLINK;
	for_each_sgtable_dma_sg(&m->sgt.sgt, sg, i) {
		u64 s = pos, e = pos + sg_dma_len(sg);

		pos = e;
		if (e <= off)
			continue;
		if (!in) {
			start = sg_dma_address(sg) + (off - s);
			in = true;
		} else if (sg_dma_address(sg) != next) {
			return -EINVAL;	/* a gap in bus space */
		}
		next = sg_dma_address(sg) + sg_dma_len(sg);
		if (e >= end) {
			*bus = start;
			return 0;
		}
	}
	return -EINVAL;
}

/* The free entry freed longest ago, or -ENOSPC (win_lock held). */
static int fc_win_pick(struct fc_dev *fc)
{
	int i, best = -ENOSPC;

	for (i = 0; i < FC_PW_MAX_ENTRIES; i++) {
		const struct fc_pw_entry *e = &fc->win[i];

		if (e->mem || e->stuck)
			continue;
		if (best < 0 || e->freed < fc->win[best].freed)
			best = i;
	}
	return best;
}

static int fc_win_map(struct fc_file *ff, struct fc_ioc_peer_window *a)
{
	DECLARE_BITMAP(set, FC_PW_MAX_ENTRIES);
	struct fc_dev *fc = ff->fc;
	struct fc_pw_entry *e;
	struct fc_mem *m;
	dma_addr_t bus;
	u32 ctrl = FC_PW_CTRL_VALID;
	int i, ret;

	if (!a->flags || a->flags & ~(FC_PEER_WINDOW_READ | FC_PEER_WINDOW_WRITE) ||
	    a->entry || !a->len)
		return -EINVAL;
	if (a->len > FC_PW_MAX_SIZE)
		return -ERANGE;
	if (a->flags & FC_PEER_WINDOW_READ)
		ctrl |= FC_PW_CTRL_READ;
	if (a->flags & FC_PEER_WINDOW_WRITE)
		ctrl |= FC_PW_CTRL_WRITE;
	m = fc_mem_lookup(ff, a->handle);
	if (!m)
		return -EINVAL;
	if (a->offset > m->len || a->len > m->len - a->offset) {
		ret = -ERANGE;
		goto err_put;
	}
	mutex_lock(&fc->win_lock);
	ret = fc_win_bus(m, a->offset, a->len, &bus);
	if (ret)
		goto err_unlock;
	i = fc_win_pick(fc);
	if (i < 0) {
		ret = i;
		goto err_unlock;
	}
	/* Free entries were revoked and acknowledged: SEEN is not VALID. */
	e = &fc->win[i];
	fc_wr32(fc, FC_PW_REG(i, FC_PW_BASE_LO), lower_32_bits(bus));
	fc_wr32(fc, FC_PW_REG(i, FC_PW_BASE_HI), upper_32_bits(bus));
	fc_wr32(fc, FC_PW_REG(i, FC_PW_SIZE_LO), lower_32_bits(a->len));
	fc_wr32(fc, FC_PW_REG(i, FC_PW_SIZE_HI), upper_32_bits(a->len));
	fc_win_write_ctrl(fc, i, ctrl);
	fc_ring(fc);
	e->owner = ff;
	e->mem = m;		/* takes the lookup's reference */
	e->handle = a->handle;
	/*
	 * The entry is in force once SEEN shows it: an address handed out
	 * before that could be refused by the board.
	 */
	bitmap_zero(set, FC_PW_MAX_ENTRIES);
	set_bit(i, set);
	if (!fc_win_wait_seen(fc, set)) {
		fc_win_drop(fc, set, false);
		mutex_unlock(&fc->win_lock);
		dev_warn(&fc->pdev->dev,
			 "board did not acknowledge a peer window entry\n");
		return -EIO;
	}
	a->entry = i;
	mutex_unlock(&fc->win_lock);
	return 0;

err_unlock:
	mutex_unlock(&fc->win_lock);
err_put:
	fc_mem_put(m);
	return ret;
}

static int fc_win_unmap(struct fc_file *ff, u32 entry)
{
	struct fc_dev *fc = ff->fc;
	DECLARE_BITMAP(set, FC_PW_MAX_ENTRIES);
	int ret;

	if (entry >= FC_PW_MAX_ENTRIES)
		return -ERANGE;
	bitmap_zero(set, FC_PW_MAX_ENTRIES);
	mutex_lock(&fc->win_lock);
	if (!fc->win[entry].mem || fc->win[entry].stuck) {
		ret = -ENOENT;
	} else if (fc->win[entry].owner != ff) {
		ret = -EPERM;
	} else {
		set_bit(entry, set);
		ret = fc_win_drop(fc, set, false);
	}
	mutex_unlock(&fc->win_lock);
	return ret;
}

long fc_ioctl_peer_window(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_peer_window __user *uarg = arg;
	struct fc_ioc_peer_window a;
	int ret;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.reserved[0] || a.reserved[1])
		return -EINVAL;
	if (a.op == FC_PEER_WINDOW_UNMAP) {
		if (a.flags || a.handle || a.offset || a.len)
			return -EINVAL;
	} else if (a.op != FC_PEER_WINDOW_MAP) {
		return -EINVAL;
	}
	if (!(ff->fc->caps & FC_CAP_PEER_WINDOW))
		return -EOPNOTSUPP;
	if (a.op == FC_PEER_WINDOW_UNMAP)
		return fc_win_unmap(ff, a.entry);
	ret = fc_win_map(ff, &a);
	if (ret)
		return ret;
	if (put_user(a.entry, &uarg->entry)) {
		/* The caller cannot know the entry: take it back. */
		fc_win_unmap(ff, a.entry);
		return -EFAULT;
	}
	return 0;
}

/* Mark the entries of @ff (and, with @handle not 0, of that handle). */
static bool fc_win_of_file(struct fc_dev *fc, struct fc_file *ff, u32 handle,
			   unsigned long *set)
{
	unsigned int i;

	bitmap_zero(set, FC_PW_MAX_ENTRIES);
	for (i = 0; i < FC_PW_MAX_ENTRIES; i++)
		if (fc->win[i].owner == ff &&
		    (!handle || fc->win[i].handle == handle))
			set_bit(i, set);
	return !bitmap_empty(set, FC_PW_MAX_ENTRIES);
}

/*
 * MEM_UNREGISTER: the entries that map the buffer are revoked first, and
 * win_lock held across both, so that no entry maps it once it is gone.
 */
long fc_window_mem_unregister(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_mem __user *uarg = arg;
	struct fc_dev *fc = ff->fc;
	DECLARE_BITMAP(set, FC_PW_MAX_ENTRIES);
	u32 handle;
	long ret;

	if (get_user(handle, &uarg->handle))
		return -EFAULT;
	mutex_lock(&fc->win_lock);
	if (handle && fc_win_of_file(fc, ff, handle, set))
		fc_win_drop(fc, set, false);
	ret = fc_ioctl_mem_unregister(ff, arg);
	mutex_unlock(&fc->win_lock);
	return ret;
}

/* The file is closed: its entries go. */
void fc_window_release_file(struct fc_file *ff)
{
	struct fc_dev *fc = ff->fc;
	DECLARE_BITMAP(set, FC_PW_MAX_ENTRIES);

	mutex_lock(&fc->win_lock);
	if (fc_win_of_file(fc, ff, 0, set))
		fc_win_drop(fc, set, false);
	mutex_unlock(&fc->win_lock);
}

/* The exporter of @m took it back (move_notify, its reservation held). */
static void fc_window_revoke_mem(struct fc_dev *fc, struct fc_mem *m)
{
	DECLARE_BITMAP(set, FC_PW_MAX_ENTRIES);
	unsigned int i;

	bitmap_zero(set, FC_PW_MAX_ENTRIES);
	mutex_lock(&fc->win_lock);
	for (i = 0; i < FC_PW_MAX_ENTRIES; i++)
		if (fc->win[i].mem == m && !fc->win[i].stuck)
			set_bit(i, set);
	fc_win_drop(fc, set, false);
	mutex_unlock(&fc->win_lock);
}

/* Every entry in use, stuck ones included. */
static void fc_win_in_use(struct fc_dev *fc, unsigned long *set)
{
	unsigned int i;

	bitmap_zero(set, FC_PW_MAX_ENTRIES);
	for (i = 0; i < FC_PW_MAX_ENTRIES; i++)
		if (fc->win[i].mem)
			set_bit(i, set);
}

/* The board goes (removal, failure): every entry is revoked and freed. */
void fc_window_kill(struct fc_dev *fc)
{
	DECLARE_BITMAP(set, FC_PW_MAX_ENTRIES);

	if (!(fc->caps & FC_CAP_PEER_WINDOW))
		return;
	mutex_lock(&fc->win_lock);
	fc_win_in_use(fc, set);
	fc_win_drop(fc, set, true);
	mutex_unlock(&fc->win_lock);
}

/* Shutdown: the board stops serving every entry; nothing is freed. */
void fc_window_off(struct fc_dev *fc)
{
	DECLARE_BITMAP(set, FC_PW_MAX_ENTRIES);

	if (!(fc->caps & FC_CAP_PEER_WINDOW))
		return;
	mutex_lock(&fc->win_lock);
	fc_win_in_use(fc, set);
	if (!bitmap_empty(set, FC_PW_MAX_ENTRIES))
		fc_win_revoke(fc, set);
	mutex_unlock(&fc->win_lock);
}

/* Is an entry mapped? A board that loses power keeps none (suspend). */
bool fc_window_busy(struct fc_dev *fc)
{
	DECLARE_BITMAP(set, FC_PW_MAX_ENTRIES);

	mutex_lock(&fc->win_lock);
	fc_win_in_use(fc, set);
	mutex_unlock(&fc->win_lock);
	return !bitmap_empty(set, FC_PW_MAX_ENTRIES);
}

/*
 * At probe: the table keeps its values across resets and driver loads, so
 * an entry left valid (a previous driver that never revoked it) is revoked
 * before anything of ours is mapped; GENs go on from what the board shows.
 */
int fc_window_init(struct fc_dev *fc)
{
	DECLARE_BITMAP(set, FC_PW_MAX_ENTRIES);
	unsigned int i;
	u32 seen;

	fc->win_revoke_mem = fc_window_revoke_mem;
	if (!(fc->caps & FC_CAP_PEER_WINDOW))
		return 0;
	bitmap_zero(set, FC_PW_MAX_ENTRIES);
	mutex_lock(&fc->win_lock);
	for (i = 0; i < FC_PW_MAX_ENTRIES; i++) {
		seen = fc_rd32(fc, FC_PW_REG(i, FC_PW_SEEN));
		fc->win[i].gen = seen >> FC_PW_GEN_SHIFT;
		fc->win[i].ctrl = seen;
		if (seen & FC_PW_CTRL_VALID)
			set_bit(i, set);
	}
	if (!bitmap_empty(set, FC_PW_MAX_ENTRIES) && !fc_win_revoke(fc, set)) {
		mutex_unlock(&fc->win_lock);
		dev_err(&fc->pdev->dev, "board did not revoke its peer window\n");
		return -EIO;
	}
	mutex_unlock(&fc->win_lock);
	return 0;
}
