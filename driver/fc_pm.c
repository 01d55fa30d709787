// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: shutdown and power. At reboot, kexec or power-off the board
 * stops writing into memory the next kernel owns; a suspend is refused
 * while anything of a file depends on the board keeping its state. Both
 * quiesce and restart as a reset does (fc_reset.c).
 */
#include <linux/delay.h>
#include <linux/pci.h>

#include "fc.h"

/* How long the board may take to leave its rings at shutdown. */
#define FC_LEAVE_MS	1000

/* Has the board left every receive ring and the event queue? */
static bool fc_rings_left(struct fc_dev *fc)
{
	unsigned int c;
	u32 seen;

	if (fc->caps & FC_CAP_EVENT_QUEUE) {
		seen = fc_rd32(fc, FC_EQ_SEEN);
		if (seen != ~0u && (seen & FC_EQ_CTRL_ENABLE))
			return false;
	}
	if (!(fc->caps & FC_CAP_CHAN_SEEN))
		return true;
	for (c = 0; c < FC_MAX_CHANNELS; c++) {
		seen = fc_rd32(fc, FC_CHAN_REG(c, FC_CHAN_SEEN));
		if (seen != ~0u && (seen & FC_CHAN_CTRL_ENABLE))
			return false;
	}
	return true;
}

/* Wait (bounded) for the board to work by the CTRL values just written. */
static void fc_board_leave_rings(struct fc_dev *fc)
{
	unsigned long end = jiffies + msecs_to_jiffies(FC_LEAVE_MS);

	fc_rd32(fc, FC_REG_ID);		/* flush posted writes */
	if (!(fc->caps & (FC_CAP_CHAN_SEEN | FC_CAP_EVENT_QUEUE))) {
		if (fc->type == FC_BOARD_IVSHMEM)
			msleep(20);	/* as fc_chan_grace() */
		return;
	}
	while (!fc_rings_left(fc) && time_before(jiffies, end))
		usleep_range(100, 1000);
}

/*
 * Reboot, kexec, power-off: nothing of the board may write into memory
 * the next kernel owns. Receive rings and the event queue go off first
 * (the board leaves them within a bound), then BOARD_RESET stops the
 * engines, streams and the PIO window, interrupts are masked and bus
 * mastering goes off. Memory is not freed: the machine is going.
 */
void fc_pci_shutdown(struct pci_dev *pdev)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);
	unsigned int c;

	if (!fc || fc->dead)
		return;
	if (fc->caps & FC_CAP_CHANNELS) {
		mutex_lock(&fc->chan_lock);
		for (c = 0; c < FC_MAX_CHANNELS; c++)
			if (fc->chans[c].owner)
				fc_wr32(fc, FC_CHAN_REG(c, FC_CHAN_CTRL), 0);
		mutex_unlock(&fc->chan_lock);
	}
	if (fc->caps & FC_CAP_EVENT_QUEUE)
		fc_wr32(fc, FC_EQ_CTRL, 0);
	fc_ring(fc);
	fc_board_leave_rings(fc);
	fc_window_off(fc);
	fc_quiesce(fc, FC_STATE_OFF, true);
	pci_clear_master(pdev);
	dev_info(&pdev->dev, "shutdown: board stopped, interrupts masked\n");
}

/* Does anything of a file depend on the board keeping its state? */
static bool fc_busy(struct fc_dev *fc)
{
	bool busy = false;
	unsigned int i;

	mutex_lock(&fc->lock);
	for (i = 0; i < fc->nengines; i++)
		busy |= fc->engines[i].running ||
			!list_empty(&fc->engines[i].queue);
	mutex_unlock(&fc->lock);
	mutex_lock(&fc->chan_lock);
	for (i = 0; i < FC_MAX_CHANNELS; i++)
		busy |= fc->chans[i].owner != NULL;
	busy |= fc->eq_owner != NULL;
	mutex_unlock(&fc->chan_lock);
	busy |= fc_window_busy(fc);
	return busy;
}

/*
 * A board may lose power in a suspend, and a chain or a receive ring does
 * not survive that: suspend is refused while any is in use. An idle board
 * is quiesced (BAR mappings revoked, as at a reset) and brought back at
 * resume; registered memory stays.
 */
static int fc_pm_suspend(struct device *dev)
{
	struct fc_dev *fc = pci_get_drvdata(to_pci_dev(dev));

	if (fc->dead)
		return 0;
	if (fc_busy(fc)) {
		dev_info(dev, "suspend refused: chains, receive rings or peer window entries in use\n");
		return -EBUSY;
	}
	fc_quiesce(fc, FC_STATE_SUSPENDED, true);
	return 0;
}

static int fc_pm_resume(struct device *dev)
{
	struct fc_dev *fc = pci_get_drvdata(to_pci_dev(dev));
	int ret;

	if (fc->dead)
		return 0;
	ret = fc_restart(fc);
	if (ret)
		fc_fail(fc, ret);
	return 0;
}

DEFINE_SIMPLE_DEV_PM_OPS(fc_pm_ops, fc_pm_suspend, fc_pm_resume);
