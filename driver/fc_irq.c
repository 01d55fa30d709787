// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: how the end of a chain reaches the driver. With interrupts
 * (MSI-X, else MSI, else INTx) the handler acknowledges FC_IRQ_VEC_DMA and
 * queues the completion work; the timer then only enforces the deadline.
 * In polling mode (module parameter poll=1, or a board with no interrupts
 * such as ivshmem-plain) the timer reads DONE_SEQ with a growing interval.
 * Each engine has its timer; the one vector and the work serve them all.
 */
#include <linux/interrupt.h>
#include <linux/pci.h>

#include "fc.h"

#define FC_POLL_MIN_NS	(10 * NSEC_PER_USEC)
#define FC_POLL_MAX_NS	(1 * NSEC_PER_MSEC)

static const char *const fc_irq_mode_names[] = {
	[FC_IRQ_MODE_POLL] = "poll",
	[FC_IRQ_MODE_INTX] = "intx",
	[FC_IRQ_MODE_MSI] = "msi",
	[FC_IRQ_MODE_MSIX] = "msix",
};

const char *fc_irq_mode_name(int mode)
{
	return fc_irq_mode_names[mode];
}

static irqreturn_t fc_irq_handler(int irq, void *data)
{
	struct fc_dev *fc = data;
	u32 count = fc_rd32(fc, FC_REG_IRQ_COUNT(FC_IRQ_VEC_DMA));

	/* A shared INTx line: not ours unless our counter moved. */
	if (count == fc_rd32(fc, FC_REG_IRQ_ACK(FC_IRQ_VEC_DMA)))
		return fc->irq_mode == FC_IRQ_MODE_INTX ? IRQ_NONE :
							  IRQ_HANDLED;
	fc_wr32(fc, FC_REG_IRQ_ACK(FC_IRQ_VEC_DMA), count);
	fc_ring(fc);
	queue_work(fc->wq, &fc->work);
	return IRQ_HANDLED;
}

/* FC_IRQ_VEC_CHAN, a vector of its own: the queue's entry IRQ_AT landed. */
static irqreturn_t fc_chan_irq_handler(int irq, void *data)
{
	struct fc_dev *fc = data;
	u32 count = fc_rd32(fc, FC_REG_IRQ_COUNT(FC_IRQ_VEC_CHAN));

	if (count != fc_rd32(fc, FC_REG_IRQ_ACK(FC_IRQ_VEC_CHAN))) {
		fc_wr32(fc, FC_REG_IRQ_ACK(FC_IRQ_VEC_CHAN), count);
		fc_ring(fc);
	}
	wake_up_all(&fc->eq_wq);
	return IRQ_HANDLED;
}

static enum hrtimer_restart fc_timer_fn(struct hrtimer *t)
{
	struct fc_engine *eng = container_of(t, struct fc_engine, timer);
	struct fc_dev *fc = eng->fc;
	bool due = time_after_eq(jiffies, READ_ONCE(eng->deadline));

	if (fc->irq_mode == FC_IRQ_MODE_POLL && !due &&
	    fc_rd32(fc, FC_DMA_REG(eng->index, FC_DMA_DONE_SEQ)) !=
	    READ_ONCE(eng->seq)) {
		eng->poll_ns = min_t(u32, eng->poll_ns * 2, FC_POLL_MAX_NS);
		hrtimer_forward_now(t, ns_to_ktime(eng->poll_ns));
		return HRTIMER_RESTART;
	}
	queue_work(fc->wq, &fc->work);
	return HRTIMER_NORESTART;
}

/* A hardware chain was started on @eng (fc->lock held): watch it. */
void fc_irq_arm(struct fc_engine *eng)
{
	unsigned long now = jiffies;
	ktime_t when;

	if (eng->fc->irq_mode == FC_IRQ_MODE_POLL) {
		eng->poll_ns = FC_POLL_MIN_NS;
		when = ns_to_ktime(eng->poll_ns);
	} else if (time_after(eng->deadline, now)) {
		when = ms_to_ktime(jiffies_to_msecs(eng->deadline - now) + 1);
	} else {
		when = 0;
	}
	hrtimer_start(&eng->timer, when, HRTIMER_MODE_REL);
}

/* Chain ends and error stops of every engine raise FC_IRQ_VEC_DMA. */
static void fc_engines_irq_enable(struct fc_dev *fc, u32 mask)
{
	unsigned int e;

	for (e = 0; e < fc->nengines; e++)
		fc_wr32(fc, FC_DMA_REG(e, FC_DMA_IRQ_ENABLE), mask);
}

static int fc_irq_vectors(struct fc_dev *fc)
{
	struct pci_dev *pdev = fc->pdev;
	unsigned int types = PCI_IRQ_MSIX | PCI_IRQ_MSI | PCI_IRQ_INTX;
	int n;

	/* ivshmem-doorbell interrupts by MSI-X; ivshmem-plain not at all. */
	if (fc->type == FC_BOARD_IVSHMEM) {
		if (!pdev->msix_cap)
			return 0;
		types = PCI_IRQ_MSIX;
	}
	n = pci_alloc_irq_vectors(pdev, 1, FC_IRQ_VECTORS, types);
	if (n < 0)
		return n;
	if (pdev->msix_enabled)
		fc->irq_mode = FC_IRQ_MODE_MSIX;
	else if (pdev->msi_enabled)
		fc->irq_mode = FC_IRQ_MODE_MSI;
	else
		fc->irq_mode = FC_IRQ_MODE_INTX;
	return n;
}

/*
 * The event queue's vector, where MSI or MSI-X gives it one (@n vectors):
 * EQ_WAIT sleeps on it. Without it (INTx shares one line) EQ_WAIT polls.
 */
static void fc_chan_irq_init(struct fc_dev *fc, int n)
{
	int irq, ret;

	fc->chan_irq = -1;
	if (fc->irq_mode != FC_IRQ_MODE_MSI && fc->irq_mode != FC_IRQ_MODE_MSIX)
		return;
	if (n <= FC_IRQ_VEC_CHAN || !(fc->caps & FC_CAP_EVENT_QUEUE))
		return;
	irq = pci_irq_vector(fc->pdev, FC_IRQ_VEC_CHAN);
	if (irq < 0)
		return;
	ret = request_irq(irq, fc_chan_irq_handler, 0, FC_DRV_NAME, fc);
	if (ret) {
		dev_info(&fc->pdev->dev,
			 "cannot request the queue's irq %d (%d): EQ_WAIT polls\n",
			 irq, ret);
		return;
	}
	fc->chan_irq = irq;
}

int fc_irq_init(struct fc_dev *fc)
{
	struct device *dev = &fc->pdev->dev;
	unsigned int e;
	int ret, n = 0;

	for (e = 0; e < fc->nengines; e++) {
		hrtimer_init(&fc->engines[e].timer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL);
		fc->engines[e].timer.function = fc_timer_fn;
	}
	fc->irq_mode = FC_IRQ_MODE_POLL;

	fc->chan_irq = -1;
	if (!fc_param_poll) {
		ret = fc_irq_vectors(fc);
		if (ret < 0)
			dev_info(dev, "no interrupts (%d), polling\n", ret);
		n = ret;
	}
	if (fc->irq_mode != FC_IRQ_MODE_POLL) {
		fc->irq = pci_irq_vector(fc->pdev, FC_IRQ_VEC_DMA);
		ret = request_irq(fc->irq, fc_irq_handler,
				  fc->irq_mode == FC_IRQ_MODE_INTX ?
				  IRQF_SHARED : 0, FC_DRV_NAME, fc);
		if (ret) {
			dev_info(dev, "cannot request irq %d (%d), polling\n",
				 fc->irq, ret);
			pci_free_irq_vectors(fc->pdev);
			fc->irq = -1;
			fc->irq_mode = FC_IRQ_MODE_POLL;
		}
	}

	if (fc->irq_mode != FC_IRQ_MODE_POLL)
		fc_chan_irq_init(fc, n);

	fc_irq_unmask(fc);
	dev_info(dev, "completion by %s\n", fc_irq_mode_name(fc->irq_mode));
	return 0;
}

/*
 * Forget events from before, then let the board interrupt as the mode
 * wants: at probe, and after a reset (fc_reset.c).
 */
void fc_irq_unmask(struct fc_dev *fc)
{
	fc_wr32(fc, FC_REG_IRQ_ACK(FC_IRQ_VEC_DMA),
		fc_rd32(fc, FC_REG_IRQ_COUNT(FC_IRQ_VEC_DMA)));
	fc_wr32(fc, FC_REG_IRQ_ACK(FC_IRQ_VEC_CHAN),
		fc_rd32(fc, FC_REG_IRQ_COUNT(FC_IRQ_VEC_CHAN)));
	if (fc->irq_mode != FC_IRQ_MODE_POLL) {
		fc_engines_irq_enable(fc, FC_DMA_IRQ_CHAIN | FC_DMA_IRQ_ERROR);
		fc_wr32(fc, FC_REG_IRQ_ENABLE, BIT(FC_IRQ_VEC_DMA) |
			(fc->chan_irq >= 0 ? BIT(FC_IRQ_VEC_CHAN) : 0));
	} else {
		fc_engines_irq_enable(fc, 0);
		fc_wr32(fc, FC_REG_IRQ_ENABLE, 0);
	}
	fc_ring(fc);
}

/* The board raises nothing until fc_irq_unmask(); handlers stay. */
void fc_irq_mask(struct fc_dev *fc)
{
	fc_wr32(fc, FC_REG_IRQ_ENABLE, 0);
	fc_engines_irq_enable(fc, 0);
	fc_ring(fc);
}

/* Quiet the board's interrupts and stop the timers; regs still mapped. */
void fc_irq_fini(struct fc_dev *fc)
{
	unsigned int e;

	fc_irq_mask(fc);
	if (fc->chan_irq >= 0) {
		free_irq(fc->chan_irq, fc);
		fc->chan_irq = -1;
	}
	if (fc->irq >= 0) {
		free_irq(fc->irq, fc);
		pci_free_irq_vectors(fc->pdev);
		fc->irq = -1;
	}
	for (e = 0; e < fc->nengines; e++)
		hrtimer_cancel(&fc->engines[e].timer);
}
