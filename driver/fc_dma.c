// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: DMA chains. SUBMIT checks the transfers, pins or looks up the
 * memory they name and builds hardware descriptors from the DMA segments
 * (fc_desc.c), in tables of up to FC_DMA_MAX_CHAIN. The
 * tickets of all files queue on engine FC_ENGINE and run one hardware chain
 * at a time, each file's in order, the files in turn (fc_dma_next); a
 * ticket of more than FC_DMA_MAX_CHAIN descriptors
 * runs as several chains in a row. The tables of a file's tickets that
 * have not ended count against FC_FILE_MAX_TABLES, checked before they are
 * allocated: a SUBMIT over it gets -EAGAIN, or -E2BIG if it could never
 * fit. A chain that fails or overruns
 * dma_timeout_ms ends its ticket with -errno and the engine is reset. If
 * the board does not acknowledge a reset, it may go on reaching the memory
 * of the chain it ran: that chain is parked, its pages pinned and its
 * tables allocated, until the board is removed, and the engine is out of
 * use (SUBMIT gives -EIO) until then.
 *
 * Registered memory stays mapped for DMA across chains: each chain syncs
 * it for the board before it starts and for the CPU once it is over.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/eventfd.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "fc.h"

/* How long a reset may take to be acknowledged by the board. */
#define FC_RESET_TIMEOUT_MS	1000

/* ---- chains ---- */

static void fc_chain_free(struct fc_dev *fc, struct fc_chain *c)
{
	unsigned int i;

	if (c->tables) {
		for (i = 0; i < c->ntables; i++)
			if (c->tables[i].desc)
				dma_pool_free(fc->desc_pool, c->tables[i].desc,
					      c->tables[i].dma);
		kvfree(c->tables);
	}
	kvfree(c->syncs);
	for (i = 0; i < c->nmems; i++)
		fc_mem_put(c->mems[i]);
	kvfree(c->mems);
	if (c->efd)
		eventfd_ctx_put(c->efd);
	kfree(c);
}

static void fc_chains_free(struct fc_dev *fc, struct list_head *list)
{
	struct fc_chain *c, *tmp;

	list_for_each_entry_safe(c, tmp, list, node) {
		list_del(&c->node);
		fc_chain_free(fc, c);
	}
}

/*
 * Count the @ntables descriptor tables of a new ticket against the file's
 * budget, before they are allocated. The ticket fits on its own (the walk
 * stops at FC_FILE_MAX_DESC), so -EAGAIN means that tickets of the file
 * are queued or running, and their end makes room.
 */
static int fc_file_charge(struct fc_file *ff, struct fc_chain *c,
			  unsigned int ntables)
{
	int ret = 0;

	spin_lock(&ff->res_lock);
	if (ntables > FC_FILE_MAX_TABLES - ff->tables) {
		ret = -EAGAIN;
	} else {
		ff->tables += ntables;
		c->charged = ntables;
	}
	spin_unlock(&ff->res_lock);
	return ret;
}

/* Give the tables of @c back to the file's budget (res_lock held). */
static void fc_file_uncharge_locked(struct fc_file *ff, struct fc_chain *c)
{
	ff->tables -= c->charged;
	c->charged = 0;
}

/* ---- the engine ---- */

/* Reset engine FC_ENGINE and wait (bounded) for the board to confirm. */
static int fc_engine_reset(struct fc_dev *fc)
{
	unsigned long end = jiffies + msecs_to_jiffies(FC_RESET_TIMEOUT_MS);
	u32 seq = ++fc->reset_seq;
	unsigned int round = 0;

	fc_wr32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_RESET), seq);
	fc_ring(fc);
	while (fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_RESET_ACK)) != seq) {
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		if (round++ < 50)
			usleep_range(20, 50);
		else
			usleep_range(500, 1000);
	}
	return 0;
}

/*
 * Note registered memory @m that @c must sync, each once (@max: the most
 * there can be). Only memory whose syncs do something is noted.
 */
static int fc_chain_add_sync(struct fc_chain *c, struct fc_mem *m,
			     bool write, unsigned int max)
{
	unsigned int i;

	if (!m || !m->need_sync)
		return 0;
	for (i = 0; i < c->nsyncs; i++) {
		if (c->syncs[i].mem == m) {
			c->syncs[i].write |= write;
			return 0;
		}
	}
	if (!c->syncs) {
		c->syncs = kvcalloc(max, sizeof(*c->syncs), GFP_KERNEL);
		if (!c->syncs)
			return -ENOMEM;
	}
	c->syncs[c->nsyncs].mem = m;
	c->syncs[c->nsyncs].write = write;
	c->nsyncs++;
	return 0;
}

/*
 * Hand the registered memory of @c to the board before it starts. Memory
 * the board writes goes bidirectional: swiotlb then fills its bounce
 * buffer, so that the bytes the board leaves alone come back unchanged
 * from the sync for the CPU.
 */
static void fc_chain_sync_for_device(struct fc_dev *fc, struct fc_chain *c)
{
	unsigned int i;

	for (i = 0; i < c->nsyncs; i++)
		dma_sync_sgtable_for_device(&fc->pdev->dev,
					    &c->syncs[i].mem->sgt.sgt,
					    c->syncs[i].write ?
					    DMA_BIDIRECTIONAL : DMA_TO_DEVICE);
}

/* Give it back to the CPU once the board is done with it. */
static void fc_chain_sync_for_cpu(struct fc_dev *fc, struct fc_chain *c)
{
	unsigned int i;

	for (i = 0; i < c->nsyncs; i++)
		dma_sync_sgtable_for_cpu(&fc->pdev->dev,
					 &c->syncs[i].mem->sgt.sgt,
					 c->syncs[i].write ?
					 DMA_FROM_DEVICE : DMA_TO_DEVICE);
}

static void fc_hw_start(struct fc_dev *fc, struct fc_chain *c)
{
	struct fc_table *t = &c->tables[c->cur];

	fc_wr32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_DESC_LO), lower_32_bits(t->dma));
	fc_wr32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_DESC_HI), upper_32_bits(t->dma));
	fc_wr32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_DESC_COUNT), t->count);
	WRITE_ONCE(fc->deadline, jiffies +
		   msecs_to_jiffies(max(READ_ONCE(fc_param_dma_timeout_ms), 1u)));
	/* writel orders the descriptor table writes before the doorbell. */
	WRITE_ONCE(fc->seq, fc->seq + 1);
	fc_wr32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_DOORBELL), fc->seq);
	fc_ring(fc);
	fc_irq_arm(fc);
}

/*
 * The next ticket: the oldest queued one of the file served longest ago,
 * so that files take the engine in turn however many tickets one of them
 * queued; each file's own tickets still run in order.
 */
static struct fc_chain *fc_dma_next(struct fc_dev *fc)
{
	struct fc_chain *c, *best = NULL;

	list_for_each_entry(c, &fc->queue, node)
		if (!best || c->ff->served < best->ff->served)
			best = c;
	return best;
}

/* Start the next queued ticket if the engine is free (fc->lock held). */
static void fc_dma_kick(struct fc_dev *fc)
{
	struct fc_chain *c;

	if (fc->running || fc->dead || fc->broken || list_empty(&fc->queue))
		return;
	c = fc_dma_next(fc);
	c->ff->served = ++fc->starts;
	list_del_init(&c->node);
	fc->running = c;
	c->cur = 0;
	fc_chain_sync_for_device(fc, c);
	fc_hw_start(fc, c);
}

/* A ticket ended: publish its result and keep it on @done to be freed. */
static void fc_chain_end(struct fc_chain *c, int status, u32 hw_error,
			 u32 hw_index, struct list_head *done)
{
	struct fc_file *ff = c->ff;
	struct fc_result *r = &ff->results[c->ticket & (FC_FILE_RESULTS - 1)];

	spin_lock(&ff->res_lock);
	if (r->ticket == c->ticket) {
		r->status = status;
		r->hw_error = hw_error;
		r->hw_index = hw_index;
		r->done = true;
	}
	/* Its tables are freed now, or parked with the board's memory. */
	fc_file_uncharge_locked(ff, c);
	ff->event = true;
	spin_unlock(&ff->res_lock);
	wake_up_interruptible_all(&ff->wq);
	if (c->efd)
		fc_eventfd_signal(c->efd);
	list_add_tail(&c->node, done);
}

/*
 * An engine reset went unacknowledged (fc->lock held): the board may still
 * be running a chain. Take the engine out of use until the board is
 * removed and end the queued chains with -EIO onto @done.
 */
static void fc_dma_set_broken(struct fc_dev *fc, struct list_head *done)
{
	struct fc_chain *c, *tmp;

	if (!fc->broken)
		dev_err(&fc->pdev->dev,
			"DMA engine reset not acknowledged in %u ms: DMA disabled until the board is removed\n",
			FC_RESET_TIMEOUT_MS);
	fc->broken = true;
	list_for_each_entry_safe(c, tmp, &fc->queue, node) {
		list_del_init(&c->node);
		fc_chain_end(c, -EIO, FC_DMA_ERR_ABORTED, 0, done);
	}
}

/*
 * Stop the running chain @c by an engine reset and end it with @status
 * (fc->lock held). Without the board's acknowledgement it may still be
 * reaching the memory @c names: @c is parked on fc->parked rather than
 * put on @done, keeping its pages pinned and mapped and its tables
 * allocated until fc_dma_fini(), and the engine is out of use.
 */
static void fc_dma_stop(struct fc_dev *fc, struct fc_chain *c, int status,
			u32 hw_error, u32 hw_index, struct list_head *done)
{
	fc->running = NULL;
	if (fc_engine_reset(fc)) {
		fc_chain_end(c, status, hw_error, hw_index, &fc->parked);
		fc_dma_set_broken(fc, done);
		return;
	}
	fc_chain_sync_for_cpu(fc, c);
	fc_chain_end(c, status, hw_error, hw_index, done);
}

/* The transfer a failed descriptor belongs to, from its tag. */
static u32 fc_failed_xfer(struct fc_chain *c, u32 index)
{
	struct fc_table *t = &c->tables[c->cur];

	return index < t->count ? le32_to_cpu(t->desc[index].tag) : 0;
}

/*
 * Look at the running chain: ended, failed or late. Called from the
 * completion work (interrupt or timer) with nothing held.
 */
void fc_dma_process(struct fc_dev *fc)
{
	struct fc_chain *c;
	LIST_HEAD(done);
	u32 err, index;

	mutex_lock(&fc->lock);
	c = fc->running;
	if (!c || fc->dead)
		goto out_unlock;

	if (fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_DONE_SEQ)) == fc->seq) {
		if (fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_STATUS)) ==
		    FC_DMA_STATUS_ERROR) {
			err = fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_ERROR));
			index = fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_ERR_INDEX));
			index = fc_failed_xfer(c, index);
			fc_dma_stop(fc, c, err ? fc_hw_dma_errno(err) : -EIO,
				    err, index, &done);
		} else if (c->cur + 1 < c->ntables) {
			c->cur++;
			fc_hw_start(fc, c);
			goto out_unlock;
		} else {
			fc->running = NULL;
			fc_chain_sync_for_cpu(fc, c);
			fc_chain_end(c, 0, FC_DMA_ERR_NONE, 0, &done);
		}
	} else if (time_after_eq(jiffies, READ_ONCE(fc->deadline))) {
		dev_err(&fc->pdev->dev,
			"DMA chain not done after %u ms: resetting the engine\n",
			fc_param_dma_timeout_ms);
		fc_dma_stop(fc, c, -ETIMEDOUT, FC_DMA_ERR_ABORTED, 0, &done);
	} else if (!hrtimer_active(&fc->timer)) {
		/* Woken early (a spurious interrupt): keep watching. */
		fc_irq_arm(fc);
	}
	fc_dma_kick(fc);
out_unlock:
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
}

static void fc_dma_work(struct work_struct *work)
{
	fc_dma_process(container_of(work, struct fc_dev, work));
}

/*
 * Cancel the chains of @ff (all files if NULL) with @status. The running
 * one is stopped by an engine reset, unless it belongs to another file.
 * fc->lock held; the chains go to @done.
 */
static void fc_dma_cancel(struct fc_dev *fc, struct fc_file *ff, int status,
			  bool reset_idle, struct list_head *done)
{
	struct fc_chain *c, *tmp;

	list_for_each_entry_safe(c, tmp, &fc->queue, node) {
		if (ff && c->ff != ff)
			continue;
		list_del_init(&c->node);
		fc_chain_end(c, status, FC_DMA_ERR_ABORTED, 0, done);
	}
	c = fc->running;
	if (c && (!ff || c->ff == ff)) {
		fc_dma_stop(fc, c, status, FC_DMA_ERR_ABORTED, 0, done);
	} else if (!c && reset_idle && !fc->broken) {
		/* An idle engine may still sit in an error state. */
		if (fc_engine_reset(fc))
			fc_dma_set_broken(fc, done);
	}
}

/* Does @c name memory @m, or a peer region taken back (fc->lock held)? */
static bool fc_chain_uses(const struct fc_chain *c, const struct fc_mem *m)
{
	unsigned int i;

	for (i = 0; i < c->nmems; i++)
		if (c->mems[i] == m || (!m && c->mems[i]->revoked))
			return true;
	return false;
}

/*
 * The exporter of peer region @m takes its memory back (move_notify, with
 * the dma-buf's reservation held): from now on no chain may reach it. The
 * queued chains naming it end with -ENOLINK, the running one is stopped by
 * an engine reset, and SUBMIT refuses it. Nothing here takes the
 * reservation, and the chains' references go after fc->lock is dropped:
 * the region's own teardown, should they hold its last, is deferred.
 */
void fc_dma_revoke(struct fc_dev *fc, struct fc_mem *m)
{
	struct fc_chain *c, *tmp;
	LIST_HEAD(done);

	mutex_lock(&fc->lock);
	m->revoked = true;
	list_for_each_entry_safe(c, tmp, &fc->queue, node) {
		if (!fc_chain_uses(c, m))
			continue;
		list_del_init(&c->node);
		fc_chain_end(c, -ENOLINK, FC_DMA_ERR_ABORTED, 0, &done);
	}
	c = fc->running;
	if (c && !fc->dead && fc_chain_uses(c, m)) {
		fc_dma_stop(fc, c, -ENOLINK, FC_DMA_ERR_ABORTED, 0, &done);
		fc_dma_kick(fc);
	}
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
}

/* ---- ioctls ---- */

/* The memory a host end names: a handle's, or the user address pinned. */
static int fc_resolve(struct fc_file *ff, struct fc_chain *c,
		      const struct fc_ioc_loc *loc, u64 len, bool write,
		      struct fc_mem **out)
{
	struct fc_mem *m;
	int ret;

	*out = NULL;
	if (loc->space != FC_SPACE_HOST)
		return 0;
	if (loc->handle) {
		m = fc_mem_lookup(ff, loc->handle);
		if (!m)
			return -EINVAL;
		if (loc->addr > m->len || len > m->len - loc->addr) {
			fc_mem_put(m);
			return -ERANGE;
		}
	} else {
		ret = fc_mem_pin(ff->fc, loc->addr, len, write, &m);
		if (ret)
			return ret;
	}
	c->mems[c->nmems++] = m;
	*out = m;
	return 0;
}

long fc_ioctl_submit(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_submit __user *uarg = arg;
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_submit s;
	struct fc_ioc_xfer *x;
	struct fc_xfer_res *res = NULL;
	struct fc_chain *c = NULL;
	struct fc_result *r;
	unsigned int i;
	long ndesc;
	int ret;

	if (copy_from_user(&s, arg, sizeof(s)))
		return -EFAULT;
	if (s.flags & ~FC_SUBMIT_EVENTFD || s.reserved0 || s.reserved[0] ||
	    s.reserved[1])
		return -EINVAL;
	if (!s.count || s.count > FC_DMA_MAX_CHAIN)
		return -E2BIG;

	x = memdup_user(u64_to_user_ptr(s.xfers), s.count * sizeof(*x));
	if (IS_ERR(x))
		return PTR_ERR(x);
	for (i = 0; i < s.count; i++) {
		ret = fc_check_xfer(fc, &x[i],
				    i + 1 < s.count ? &x[i + 1] : NULL);
		if (ret)
			goto out_free_x;
	}

	ret = -ENOMEM;
	res = kcalloc(s.count, sizeof(*res), GFP_KERNEL);
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!res || !c)
		goto out_free_chain;
	INIT_LIST_HEAD(&c->node);
	c->ff = ff;
	c->mems = kvcalloc(2 * s.count, sizeof(*c->mems), GFP_KERNEL);
	if (!c->mems)
		goto out_free_chain;

	if (s.flags & FC_SUBMIT_EVENTFD) {
		c->efd = eventfd_ctx_fdget(s.eventfd);
		if (IS_ERR(c->efd)) {
			ret = PTR_ERR(c->efd);
			c->efd = NULL;
			goto out_free_chain;
		}
	}

	for (i = 0; i < s.count; i++) {
		ret = fc_resolve(ff, c, &x[i].src, x[i].len, false, &res[i].src);
		if (ret)
			goto out_free_chain;
		ret = fc_resolve(ff, c, &x[i].dst, x[i].len, true, &res[i].dst);
		if (ret)
			goto out_free_chain;
		ret = fc_chain_add_sync(c, res[i].src, false, 2 * s.count);
		if (ret)
			goto out_free_chain;
		ret = fc_chain_add_sync(c, res[i].dst, true, 2 * s.count);
		if (ret)
			goto out_free_chain;
	}

	ndesc = fc_chain_walk(c, x, res, s.count, false);
	if (ndesc < 0) {
		ret = ndesc;
		goto out_free_chain;
	}
	ret = fc_file_charge(ff, c, DIV_ROUND_UP(ndesc, FC_DMA_MAX_CHAIN));
	if (ret)
		goto out_free_chain;
	ret = fc_chain_alloc_tables(fc, c, ndesc);
	if (ret)
		goto out_free_chain;
	fc_chain_walk(c, x, res, s.count, true);
	ret = fc_chain_mark_ends(c);
	if (ret)
		goto out_free_chain;

	mutex_lock(&fc->lock);
	spin_lock(&ff->res_lock);
	r = &ff->results[(ff->last_ticket + 1) & (FC_FILE_RESULTS - 1)];
	if (fc->dead) {
		ret = -ENODEV;
	} else if (fc->broken) {
		ret = -EIO;
	} else if (fc_chain_uses(c, NULL)) {
		ret = -ENOLINK;		/* a peer region taken back */
	} else if (ff->uncollected >= FC_FILE_MAX_UNCOLLECTED ||
		   (r->ticket && !r->collected)) {
		ret = -EAGAIN;
	} else {
		c->ticket = ++ff->last_ticket;
		r->ticket = c->ticket;
		r->done = false;
		r->collected = false;
		ff->uncollected++;
		ret = 0;
	}
	spin_unlock(&ff->res_lock);
	if (!ret) {
		list_add_tail(&c->node, &fc->queue);
		fc_dma_kick(fc);
		s.ticket = c->ticket;
		c = NULL;
	}
	mutex_unlock(&fc->lock);
	/* Queued: it runs even if the ticket cannot be told. */
	if (!ret && put_user(s.ticket, &uarg->ticket))
		ret = -EFAULT;

out_free_chain:
	if (c) {
		spin_lock(&ff->res_lock);
		fc_file_uncharge_locked(ff, c);
		spin_unlock(&ff->res_lock);
		fc_chain_free(fc, c);
	}
	kfree(res);
out_free_x:
	kfree(x);
	return ret;
}

/* The result of @ticket, if it has ended; -ENOENT if unknown. */
static int fc_result_get(struct fc_file *ff, u64 ticket, struct fc_result *out)
{
	struct fc_result *r = &ff->results[ticket & (FC_FILE_RESULTS - 1)];
	int ret;

	spin_lock(&ff->res_lock);
	if (!ticket || r->ticket != ticket)
		ret = -ENOENT;
	else if (!r->done)
		ret = -EINPROGRESS;
	else
		ret = 0;
	if (out)
		*out = *r;
	spin_unlock(&ff->res_lock);
	return ret;
}

static bool fc_wait_done(struct fc_file *ff, u64 ticket)
{
	return fc_result_get(ff, ticket, NULL) != -EINPROGRESS ||
	       READ_ONCE(ff->fc->dead);
}

long fc_ioctl_wait(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_wait w;
	struct fc_result r, *r2;
	long left;
	int ret;

	if (copy_from_user(&w, arg, sizeof(w)))
		return -EFAULT;
	if (w.flags || w.reserved0 || w.reserved[0] || w.reserved[1])
		return -EINVAL;

	ret = fc_result_get(ff, w.ticket, &r);
	if (ret == -EINPROGRESS) {
		if (!w.timeout_ms)
			return -ETIMEDOUT;
		if (w.timeout_ms < 0) {
			left = wait_event_interruptible(ff->wq,
							fc_wait_done(ff, w.ticket));
		} else {
			left = wait_event_interruptible_timeout(ff->wq,
					fc_wait_done(ff, w.ticket),
					msecs_to_jiffies(w.timeout_ms));
			if (left == 0)
				return -ETIMEDOUT;
		}
		if (left < 0)
			return -EINTR;
		ret = fc_result_get(ff, w.ticket, &r);
		if (ret == -EINPROGRESS)
			return -ENODEV;
	}
	if (ret)
		return ret;

	spin_lock(&ff->res_lock);
	ff->event = false;
	r2 = &ff->results[w.ticket & (FC_FILE_RESULTS - 1)];
	if (r2->ticket == w.ticket && !r2->collected) {
		r2->collected = true;
		ff->uncollected--;
	}
	spin_unlock(&ff->res_lock);
	w.status = r.status;
	w.hw_error = r.hw_error;
	w.hw_index = r.hw_index;
	if (copy_to_user(arg, &w, sizeof(w)))
		return -EFAULT;
	return 0;
}

long fc_ioctl_reset(struct fc_file *ff, void __user *arg)
{
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_reset a;
	LIST_HEAD(done);
	int ret;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved)
		return -EINVAL;

	mutex_lock(&fc->lock);
	fc_dma_cancel(fc, ff, -ECANCELED, true, &done);
	fc_dma_kick(fc);
	ret = fc->broken ? -EIO : 0;
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
	return ret;
}

/*
 * A BOARD_RESET written through REG_WRITE (bring-up tools): the board
 * aborts the running chain without its DONE_SEQ and clears its outcome.
 * Read the outcome first, reset, wait for BOARD_RESET_ACK, then end the
 * chain (-ECANCELED unless it had already ended) and start the next: the
 * other files' tickets go on. Channel rings need nothing: the board keeps
 * their TAIL (docs/hardware.md, section 5).
 */
int fc_dma_board_reset(struct fc_dev *fc, u32 val)
{
	unsigned long end = jiffies + msecs_to_jiffies(FC_RESET_TIMEOUT_MS);
	u32 err = FC_DMA_ERR_ABORTED, index = 0;
	int status = -ECANCELED, ret = 0;
	struct fc_chain *c;
	LIST_HEAD(done);

	mutex_lock(&fc->lock);
	c = fc->running;
	if (c && fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_DONE_SEQ)) == fc->seq) {
		if (fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_STATUS)) ==
		    FC_DMA_STATUS_ERROR) {
			err = fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_ERROR));
			index = fc_failed_xfer(c, fc_rd32(fc,
				FC_DMA_REG(FC_ENGINE, FC_DMA_ERR_INDEX)));
			status = err ? fc_hw_dma_errno(err) : -EIO;
		} else if (c->cur + 1 == c->ntables) {
			err = FC_DMA_ERR_NONE;
			status = 0;
		}
	}
	fc_wr32(fc, FC_REG_BOARD_RESET, val);
	fc_ring(fc);
	while (fc_rd32(fc, FC_REG_BOARD_RESET_ACK) != val) {
		if (time_after(jiffies, end)) {
			/* The chain may still run: its deadline deals with it. */
			ret = -ETIMEDOUT;
			goto out_unlock;
		}
		usleep_range(50, 200);
	}
	if (c) {
		fc->running = NULL;
		fc_chain_sync_for_cpu(fc, c);
		fc_chain_end(c, status, err, index, &done);
	}
	fc_dma_kick(fc);
out_unlock:
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
	return ret;
}

bool fc_dma_file_event(struct fc_file *ff)
{
	bool ev;

	spin_lock(&ff->res_lock);
	ev = ff->event;
	spin_unlock(&ff->res_lock);
	return ev;
}

/* The file is closed: stop its chains (bounded) before its memory goes. */
void fc_dma_release_file(struct fc_file *ff)
{
	struct fc_dev *fc = ff->fc;
	LIST_HEAD(done);

	mutex_lock(&fc->lock);
	list_del_init(&ff->node);
	if (!fc->dead) {
		fc_dma_cancel(fc, ff, -ECANCELED, false, &done);
		fc_dma_kick(fc);
	}
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
}

/*
 * The board is being removed (remove_sem held for writing, fc->dead set):
 * end every chain with -ENODEV, drop every file's memory and mappings.
 */
void fc_dma_kill(struct fc_dev *fc)
{
	struct fc_file *ff, *tmp;
	LIST_HEAD(done);

	mutex_lock(&fc->lock);
	fc_dma_cancel(fc, NULL, -ENODEV, true, &done);
	list_for_each_entry_safe(ff, tmp, &fc->files, node) {
		list_del_init(&ff->node);
		fc_mem_release_all(ff);
		if (ff->mapping)
			unmap_mapping_range(ff->mapping, 0, 0, 1);
		wake_up_interruptible_all(&ff->wq);
	}
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
}

int fc_dma_init(struct fc_dev *fc)
{
	struct device *dev = &fc->pdev->dev;
	LIST_HEAD(none);
	u32 status, done;

	fc->desc_pool = dma_pool_create(FC_DRV_NAME, dev, FC_TABLE_BYTES,
					FC_DESC_ALIGN, 0);
	if (!fc->desc_pool)
		return -ENOMEM;
	fc->wq = alloc_ordered_workqueue("fpgacomm/%s",
					 WQ_MEM_RECLAIM | WQ_HIGHPRI,
					 pci_name(fc->pdev));
	if (!fc->wq) {
		dma_pool_destroy(fc->desc_pool);
		return -ENOMEM;
	}
	INIT_WORK(&fc->work, fc_dma_work);

	/* Sequences go on from what the board last saw. */
	fc->seq = fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_DOORBELL));
	fc->reset_seq = fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_RESET));
	status = fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_STATUS));
	done = fc_rd32(fc, FC_DMA_REG(FC_ENGINE, FC_DMA_DONE_SEQ));
	if (status != FC_DMA_STATUS_IDLE || done != fc->seq) {
		dev_info(dev, "DMA engine left busy or failed (status %u): resetting it\n",
			 status);
		if (fc_engine_reset(fc))
			fc_dma_set_broken(fc, &none);	/* nothing queued */
	}
	return 0;
}

/* After fc_irq_fini(): nothing queues the work any more. */
void fc_dma_fini(struct fc_dev *fc)
{
	cancel_work_sync(&fc->work);
	/*
	 * With bus mastering off the board can no longer reach the memory of
	 * the chains parked by an unacknowledged reset: free them at last.
	 */
	if (!list_empty(&fc->parked)) {
		pci_clear_master(fc->pdev);
		fc_chains_free(fc, &fc->parked);
	}
	destroy_workqueue(fc->wq);
	dma_pool_destroy(fc->desc_pool);
}
