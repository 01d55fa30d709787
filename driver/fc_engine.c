// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: the DMA engines that run the tickets of fc_dma.c. Each engine
 * of the board (FC_REG_NUM_DMA, at most FC_DMA_MAX_ENGINES) has a queue of
 * its own and runs one hardware chain at a time: each file's tickets on it
 * in order, the files in turn (fc_engine_next). Engines run side by side;
 * nothing orders tickets on different engines. FC_IRQ_VEC_DMA is shared by
 * all of them: its work looks at every engine's DONE_SEQ. Each engine has
 * its own timer (polling, deadline), reset and state: a chain that fails or
 * overruns dma_timeout_ms ends its ticket with -errno and its engine is
 * reset. If the board does not acknowledge that reset, it may go on
 * reaching the memory of the chain it ran: that chain is parked, its pages
 * pinned and its tables allocated, until the board is removed or reset
 * (fc_reset.c: a BOARD_RESET it acknowledges frees them), and that
 * engine alone is out of use (SUBMIT to it gives -EIO) until then.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>

#include "fc.h"

/* How long a reset may take to be acknowledged by the board. */
#define FC_RESET_TIMEOUT_MS	1000

static u32 fc_eng_rd(const struct fc_engine *eng, u32 reg)
{
	return fc_rd32(eng->fc, FC_DMA_REG(eng->index, reg));
}

static void fc_eng_wr(const struct fc_engine *eng, u32 reg, u32 val)
{
	fc_wr32(eng->fc, FC_DMA_REG(eng->index, reg), val);
}

/* Reset the engine and wait (bounded) for the board to confirm. */
static int fc_engine_reset(struct fc_engine *eng)
{
	unsigned long end = jiffies + msecs_to_jiffies(FC_RESET_TIMEOUT_MS);
	u32 seq = ++eng->reset_seq;
	unsigned int round = 0;

	fc_eng_wr(eng, FC_DMA_RESET, seq);
	fc_ring(eng->fc);
	while (fc_eng_rd(eng, FC_DMA_RESET_ACK) != seq) {
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		if (round++ < 50)
			usleep_range(20, 50);
		else
			usleep_range(500, 1000);
	}
	return 0;
}

static void fc_hw_start(struct fc_engine *eng, struct fc_chain *c)
{
	struct fc_table *t = &c->tables[c->cur];

	fc_eng_wr(eng, FC_DMA_DESC_LO, lower_32_bits(t->dma));
	fc_eng_wr(eng, FC_DMA_DESC_HI, upper_32_bits(t->dma));
	fc_eng_wr(eng, FC_DMA_DESC_COUNT, t->count);
	WRITE_ONCE(eng->deadline, jiffies +
		   msecs_to_jiffies(max(READ_ONCE(fc_param_dma_timeout_ms), 1u)));
	/* writel orders the descriptor table writes before the doorbell. */
	WRITE_ONCE(eng->seq, eng->seq + 1);
	fc_eng_wr(eng, FC_DMA_DOORBELL, eng->seq);
	fc_ring(eng->fc);
	fc_irq_arm(eng);
}

/*
 * The next ticket: the oldest queued one of the file served longest ago
 * on this engine, so that files take it in turn however many tickets one
 * of them queued; each file's own tickets still run in order.
 */
static struct fc_chain *fc_engine_next(struct fc_engine *eng)
{
	struct fc_chain *c, *best = NULL;
	unsigned int e = eng->index;

	list_for_each_entry(c, &eng->queue, node)
		if (!best || c->ff->served[e] < best->ff->served[e])
			best = c;
	return best;
}

/* Start the next queued ticket if the engine is free (fc->lock held). */
void fc_engine_kick(struct fc_engine *eng)
{
	struct fc_chain *c;

	if (eng->running || eng->fc->dead || eng->broken ||
	    READ_ONCE(eng->fc->state) != FC_STATE_OK ||
	    list_empty(&eng->queue))
		return;
	c = fc_engine_next(eng);
	c->ff->served[eng->index] = ++eng->starts;
	list_del_init(&c->node);
	eng->running = c;
	c->cur = 0;
	fc_chain_sync_for_device(eng->fc, c);
	fc_hw_start(eng, c);
}

/*
 * The engine's reset went unacknowledged (fc->lock held): the board may
 * still be running a chain on it. Take the engine out of use until the
 * board is removed and end its queued chains with -EIO onto @done.
 */
static void fc_engine_set_broken(struct fc_engine *eng,
				 struct list_head *done)
{
	struct fc_chain *c, *tmp;

	if (!eng->broken)
		dev_err(&eng->fc->pdev->dev,
			"DMA engine %u reset not acknowledged in %u ms: engine disabled until the board is reset or removed\n",
			eng->index, FC_RESET_TIMEOUT_MS);
	eng->broken = true;
	list_for_each_entry_safe(c, tmp, &eng->queue, node) {
		list_del_init(&c->node);
		fc_chain_end(c, -EIO, FC_DMA_ERR_ABORTED, 0, done);
	}
}

/*
 * Stop the running chain by an engine reset and end it with @status
 * (fc->lock held). Without the board's acknowledgement it may still be
 * reaching the memory the chain names: it is parked on fc->parked rather
 * than put on @done, keeping its pages pinned and mapped and its tables
 * allocated until fc_dma_fini(), and the engine is out of use.
 */
void fc_engine_stop(struct fc_engine *eng, int status, u32 hw_error,
		    u32 hw_index, struct list_head *done)
{
	struct fc_chain *c = eng->running;

	eng->running = NULL;
	if (fc_engine_reset(eng)) {
		fc_chain_end(c, status, hw_error, hw_index, &eng->fc->parked);
		fc_engine_set_broken(eng, done);
		return;
	}
	fc_chain_sync_for_cpu(eng->fc, c);
	fc_chain_end(c, status, hw_error, hw_index, done);
}

/* The transfer a failed descriptor belongs to, from its tag. */
static u32 fc_failed_xfer(struct fc_chain *c, u32 index)
{
	struct fc_table *t = &c->tables[c->cur];

	return index < t->count ? le32_to_cpu(t->desc[index].tag) : 0;
}

/* The running chain's outcome as the board reports it (error or not). */
static int fc_engine_error(struct fc_engine *eng, u32 *err, u32 *index)
{
	*err = fc_eng_rd(eng, FC_DMA_ERROR);
	*index = fc_failed_xfer(eng->running,
				fc_eng_rd(eng, FC_DMA_ERR_INDEX));
	return *err ? fc_hw_dma_errno(*err) : -EIO;
}

/* Look at the engine's running chain: ended, failed or late. */
static void fc_engine_process(struct fc_engine *eng, struct list_head *done)
{
	struct fc_chain *c = eng->running;
	u32 err, index;
	int status;

	if (!c)
		return;
	if (fc_eng_rd(eng, FC_DMA_DONE_SEQ) == eng->seq) {
		if (fc_eng_rd(eng, FC_DMA_STATUS) == FC_DMA_STATUS_ERROR) {
			status = fc_engine_error(eng, &err, &index);
			fc_engine_stop(eng, status, err, index, done);
		} else if (c->cur + 1 < c->ntables) {
			c->cur++;
			fc_hw_start(eng, c);
			return;
		} else {
			eng->running = NULL;
			fc_chain_sync_for_cpu(eng->fc, c);
			fc_chain_end(c, 0, FC_DMA_ERR_NONE, 0, done);
		}
	} else if (time_after_eq(jiffies, READ_ONCE(eng->deadline))) {
		dev_err(&eng->fc->pdev->dev,
			"DMA chain on engine %u not done after %u ms: resetting it\n",
			eng->index, fc_param_dma_timeout_ms);
		fc_engine_stop(eng, -ETIMEDOUT, FC_DMA_ERR_ABORTED, 0, done);
	} else if (!hrtimer_active(&eng->timer)) {
		/* Woken early (another engine's end): keep watching. */
		fc_irq_arm(eng);
	}
	fc_engine_kick(eng);
}

/*
 * Look at every engine. Called from the completion work (interrupt or a
 * timer) with nothing held: the interrupt does not say which engine.
 */
void fc_dma_process(struct fc_dev *fc)
{
	LIST_HEAD(done);
	unsigned int e;

	mutex_lock(&fc->lock);
	if (!fc->dead)
		for (e = 0; e < fc->nengines; e++)
			fc_engine_process(&fc->engines[e], &done);
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
}

static void fc_dma_work(struct work_struct *work)
{
	fc_dma_process(container_of(work, struct fc_dev, work));
}

/*
 * Cancel the engine's chains of @ff (all files if NULL) with @status. The
 * running one is stopped by an engine reset, unless it belongs to another
 * file; with @reset_idle an idle engine is reset too (it may sit in an
 * error state). fc->lock held; the chains go to @done. Returns -EIO if
 * the engine is out of use.
 */
int fc_engine_cancel(struct fc_engine *eng, struct fc_file *ff, int status,
		     bool reset_idle, struct list_head *done)
{
	struct fc_chain *c, *tmp;

	list_for_each_entry_safe(c, tmp, &eng->queue, node) {
		if (ff && c->ff != ff)
			continue;
		list_del_init(&c->node);
		fc_chain_end(c, status, FC_DMA_ERR_ABORTED, 0, done);
	}
	c = eng->running;
	if (c && (!ff || c->ff == ff)) {
		fc_engine_stop(eng, status, FC_DMA_ERR_ABORTED, 0, done);
	} else if (!c && reset_idle && !eng->broken) {
		if (fc_engine_reset(eng))
			fc_engine_set_broken(eng, done);
	}
	return eng->broken ? -EIO : 0;
}

/*
 * How the engine's running chain stood before a board reset: -ECANCELED
 * unless it had ended (its status then). fc->lock held.
 */
static int fc_engine_outcome(struct fc_engine *eng, u32 *err, u32 *index)
{
	struct fc_chain *c = eng->running;

	*err = FC_DMA_ERR_ABORTED;
	*index = 0;
	if (!c || fc_eng_rd(eng, FC_DMA_DONE_SEQ) != eng->seq)
		return -ECANCELED;
	if (fc_eng_rd(eng, FC_DMA_STATUS) == FC_DMA_STATUS_ERROR)
		return fc_engine_error(eng, err, index);
	if (c->cur + 1 < c->ntables)
		return -ECANCELED;
	*err = FC_DMA_ERR_NONE;
	return 0;
}

/* Wait (bounded) for the board to act on BOARD_RESET @val. */
int fc_board_reset_wait(struct fc_dev *fc, u32 val)
{
	unsigned long end = jiffies + msecs_to_jiffies(FC_RESET_TIMEOUT_MS);

	while (fc_rd32(fc, FC_REG_BOARD_RESET_ACK) != val) {
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		usleep_range(50, 200);
	}
	return 0;
}

/*
 * A BOARD_RESET written through REG_WRITE (bring-up tools): the board
 * aborts every engine's running chain without its DONE_SEQ and clears its
 * outcome. Read the outcomes first, reset, wait for BOARD_RESET_ACK, then
 * end the chains (-ECANCELED unless they had already ended) and start the
 * next: the other files' tickets go on. Channel rings need nothing: the
 * board keeps their TAIL (docs/hardware.md, section 5).
 */
int fc_dma_board_reset(struct fc_dev *fc, u32 val)
{
	u32 err[FC_DMA_MAX_ENGINES], index[FC_DMA_MAX_ENGINES];
	int status[FC_DMA_MAX_ENGINES], ret;
	struct fc_engine *eng;
	LIST_HEAD(done);
	unsigned int e;

	mutex_lock(&fc->lock);
	for (e = 0; e < fc->nengines; e++)
		status[e] = fc_engine_outcome(&fc->engines[e], &err[e],
					      &index[e]);
	fc_wr32(fc, FC_REG_BOARD_RESET, val);
	fc_ring(fc);
	/* Unacknowledged, the chains may still run: their deadlines act. */
	ret = fc_board_reset_wait(fc, val);
	for (e = 0; !ret && e < fc->nengines; e++) {
		eng = &fc->engines[e];
		if (eng->running) {
			fc_chain_sync_for_cpu(fc, eng->running);
			fc_chain_end(eng->running, status[e], err[e], index[e],
				     &done);
			eng->running = NULL;
		}
		fc_engine_kick(eng);
	}
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
	return ret;
}

/* Sequences go on from what the board last saw; a busy engine is reset. */
static void fc_engine_init(struct fc_dev *fc, unsigned int index)
{
	struct fc_engine *eng = &fc->engines[index];
	LIST_HEAD(none);
	u32 status, done;

	eng->fc = fc;
	eng->index = index;
	INIT_LIST_HEAD(&eng->queue);
	eng->seq = fc_eng_rd(eng, FC_DMA_DOORBELL);
	eng->reset_seq = fc_eng_rd(eng, FC_DMA_RESET);
	status = fc_eng_rd(eng, FC_DMA_STATUS);
	done = fc_eng_rd(eng, FC_DMA_DONE_SEQ);
	if (status != FC_DMA_STATUS_IDLE || done != eng->seq) {
		dev_info(&fc->pdev->dev,
			 "DMA engine %u left busy or failed (status %u): resetting it\n",
			 index, status);
		if (fc_engine_reset(eng))
			fc_engine_set_broken(eng, &none);	/* nothing queued */
	}
}

int fc_dma_init(struct fc_dev *fc)
{
	struct device *dev = &fc->pdev->dev;
	unsigned int e;

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

	/* A board that names none still has engine 0 (as before engines). */
	fc->nengines = clamp_t(u32, fc->num_dma, 1, FC_DMA_MAX_ENGINES);
	for (e = 0; e < fc->nengines; e++)
		fc_engine_init(fc, e);
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
