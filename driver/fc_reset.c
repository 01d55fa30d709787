// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: the board through the machine's life. A PCI function reset
 * (reset_prepare/reset_done: sysfs "reset", vfio), PCIe error recovery
 * (AER: error_detected, mmio_enabled, slot_reset, resume), shutdown
 * (reboot, kexec, power-off) and suspend. docs/hardware.md, section 5,
 * says what the board does on each.
 *
 * Each starts by quiescing the board: no chain starts (fc->state is not
 * FC_STATE_OK), the BAR mappings of every file are revoked (a touch gets
 * SIGBUS; a new mmap after the reset works), the PIO window is free again,
 * and every ticket not ended ends with -EIO. Where the registers may be
 * touched the driver writes BOARD_RESET itself, so that a board that never
 * sees the PCI reset (the emulator behind ivshmem) stops too; without its
 * acknowledgement the chains' memory is parked, as after an unheeded engine
 * reset, until one comes. The board is then brought back: it must answer
 * with its ID, take another BOARD_RESET, and gets its interrupt enables
 * again; open files go on (registered memory, channel rings and the event
 * queue survive, as a board reset keeps them). A board that does not come
 * back is gone for every open file (-ENODEV), as after a remove.
 */
#include <linux/pci.h>

#include "fc.h"

static const char *const fc_state_names[] = {
	[FC_STATE_OK] = "ok",
	[FC_STATE_RESETTING] = "resetting",
	[FC_STATE_FAILED] = "failed",
	[FC_STATE_SUSPENDED] = "suspended",
	[FC_STATE_OFF] = "off",
};

const char *fc_state_name(const struct fc_dev *fc)
{
	if (fc->dead && fc->state != FC_STATE_FAILED)
		return "removed";
	return fc_state_names[READ_ONCE(fc->state)];
}

/*
 * Tell an emulated board behind ivshmem the bus address of its shared
 * memory, by which the VM's other boards reach its aperture. Written at
 * probe and again after a reset.
 */
void fc_board_set_shm_bus(struct fc_dev *fc)
{
	u64 bus;

	if (fc->type != FC_BOARD_IVSHMEM || !(fc->caps & FC_CAP_EMULATED))
		return;
	bus = pci_bus_address(fc->pdev, FC_IVSHMEM_BAR_SHM);
	fc_wr32(fc, FC_EMU_SHM_BUS_LO, lower_32_bits(bus));
	fc_wr32(fc, FC_EMU_SHM_BUS_HI, upper_32_bits(bus));
}

/*
 * BOARD_RESET with a new value, and its acknowledgement (fc->lock held).
 * RETURN VALUE: 0 once the board acted on it, -ENODEV if it reads as off
 * the bus, -ETIMEDOUT if it never said so.
 */
static int fc_board_stop(struct fc_dev *fc)
{
	u32 val = fc_rd32(fc, FC_REG_BOARD_RESET_ACK);

	if (fc_rd32(fc, FC_REG_ID) != FC_HW_ID_MAGIC)
		return -ENODEV;
	fc_wr32(fc, FC_REG_BOARD_RESET, ++val);
	fc_ring(fc);
	return fc_board_reset_wait(fc, val);
}

/*
 * End every ticket of @eng (fc->lock held) with @status: the queued ones
 * onto @done, the running one onto @done if the board has stopped, else
 * onto fc->parked with its memory.
 */
static void fc_engine_abort(struct fc_engine *eng, int status, bool stopped,
			    struct list_head *done)
{
	struct fc_chain *c, *tmp;

	list_for_each_entry_safe(c, tmp, &eng->queue, node) {
		list_del_init(&c->node);
		fc_chain_end(c, status, FC_DMA_ERR_ABORTED, 0, done);
	}
	c = eng->running;
	if (!c)
		return;
	eng->running = NULL;
	if (stopped) {
		fc_chain_sync_for_cpu(eng->fc, c);
		fc_chain_end(c, status, FC_DMA_ERR_ABORTED, 0, done);
	} else {
		fc_chain_end(c, status, FC_DMA_ERR_ABORTED, 0,
			     &eng->fc->parked);
	}
}

/*
 * Stop the board and enter @state: nothing starts, the files' BAR
 * mappings are revoked, every ticket not ended ends with -EIO. @mmio:
 * the registers may be touched (not while the link is frozen).
 */
void fc_quiesce(struct fc_dev *fc, int state, bool mmio)
{
	struct fc_file *ff;
	unsigned int e;
	LIST_HEAD(done);
	bool stopped = false;

	/* No BAR page goes in from here on, and none that is in stays. */
	mutex_lock(&fc->mmap_lock);
	WRITE_ONCE(fc->state, state);
	fc->bar_gen++;
	fc->pio_owner = NULL;
	mutex_unlock(&fc->mmap_lock);

	mutex_lock(&fc->lock);
	if (mmio) {
		fc_irq_mask(fc);
		stopped = !fc_board_stop(fc);
	}
	for (e = 0; e < fc->nengines; e++)
		fc_engine_abort(&fc->engines[e], -EIO, stopped, &done);
	list_for_each_entry(ff, &fc->files, node)
		if (ff->mapping)
			unmap_mapping_range(ff->mapping, 0, FC_MMAP_ALLOC_BASE,
					    1);
	mutex_unlock(&fc->lock);
	/* Nothing runs: no timer need look at the registers. */
	for (e = 0; e < fc->nengines; e++)
		hrtimer_cancel(&fc->engines[e].timer);
	fc_chains_free(fc, &done);
}

/*
 * Bring the board back after a reset, an error or a resume: it answers,
 * takes a BOARD_RESET (one that missed the PCI reset stops now), and the
 * engines go on from what it shows. RETURN VALUE: 0, or -errno if it is
 * not back (the caller then reports it gone).
 */
int fc_restart(struct fc_dev *fc)
{
	LIST_HEAD(parked);
	unsigned int e;
	int ret;

	mutex_lock(&fc->lock);
	ret = fc_board_stop(fc);
	if (ret) {
		mutex_unlock(&fc->lock);
		return ret;
	}
	/* Nothing the board did before can reach memory any more. */
	list_splice_init(&fc->parked, &parked);
	for (e = 0; e < fc->nengines; e++) {
		struct fc_engine *eng = &fc->engines[e];

		eng->broken = false;
		eng->seq = fc_rd32(fc, FC_DMA_REG(e, FC_DMA_DOORBELL));
		eng->reset_seq = fc_rd32(fc, FC_DMA_REG(e, FC_DMA_RESET));
	}
	fc_board_set_shm_bus(fc);
	fc_irq_unmask(fc);
	mutex_lock(&fc->mmap_lock);
	WRITE_ONCE(fc->state, FC_STATE_OK);
	mutex_unlock(&fc->mmap_lock);
	for (e = 0; e < fc->nengines; e++)
		fc_engine_kick(&fc->engines[e]);
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &parked);
	/* Restoring used up the saved state (6.1): keep one for next time. */
	pci_save_state(fc->pdev);
	return 0;
}

/*
 * The board is gone for every open file, as at a remove (remove_sem held
 * for writing): chains end with -ENODEV, memory and mappings are dropped,
 * every call gives -ENODEV. Idempotent; the caller makes the state.
 */
void fc_kill_files(struct fc_dev *fc)
{
	LIST_HEAD(mms);

	if (fc->dead)
		return;
	mutex_lock(&fc->mmap_lock);
	fc->dead = true;
	list_splice_init(&fc->mmap_mms, &mms);
	mutex_unlock(&fc->mmap_lock);
	fc_mmap_settle(&mms);
	fc_dma_kill(fc);
	fc_chan_kill(fc);
	fc_eq_kill(fc);
	fc_window_kill(fc);
	fc_export_kill(fc);
}

void fc_fail(struct fc_dev *fc, int why)
{
	unsigned int e;

	down_write(&fc->remove_sem);
	WRITE_ONCE(fc->state, FC_STATE_FAILED);
	/* Nothing runs (quiesced): no engine reset to wait for in vain. */
	mutex_lock(&fc->lock);
	for (e = 0; e < fc->nengines; e++)
		fc->engines[e].broken = true;
	mutex_unlock(&fc->lock);
	fc_kill_files(fc);
	up_write(&fc->remove_sem);
	fc_peer_flush();
	dev_err(&fc->pdev->dev, "board did not come back (%d): gone for every open file until removed\n",
		why);
}

/* ---- PCI function reset ---- */

/*
 * remove_sem is held from prepare to done (the PCI core calls both, in
 * this thread): ioctls wait for the reset rather than reach a board that
 * is not there.
 */
static void fc_reset_prepare(struct pci_dev *pdev)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);

	down_write(&fc->remove_sem);
	if (fc->dead)
		return;
	fc_quiesce(fc, FC_STATE_RESETTING, true);
	dev_info(&pdev->dev, "reset: chains ended with -EIO, BAR mappings revoked\n");
}

static void fc_reset_done(struct pci_dev *pdev)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);
	int ret;

	if (fc->dead) {
		up_write(&fc->remove_sem);
		return;
	}
	ret = fc_restart(fc);
	up_write(&fc->remove_sem);
	if (ret)
		fc_fail(fc, ret);
	else
		dev_info(&pdev->dev, "reset done: board ready\n");
}

/* ---- PCIe error recovery ---- */

static pci_ers_result_t fc_error_detected(struct pci_dev *pdev,
					  pci_channel_state_t state)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);

	if (fc->dead)
		return PCI_ERS_RESULT_DISCONNECT;
	if (state == pci_channel_io_perm_failure) {
		fc_fail(fc, -ENODEV);
		return PCI_ERS_RESULT_DISCONNECT;
	}
	/* Frozen: the link is down, the registers not to be touched. */
	fc_quiesce(fc, FC_STATE_RESETTING, state == pci_channel_io_normal);
	dev_info(&pdev->dev, "PCIe error (%s): chains ended with -EIO, recovering\n",
		 state == pci_channel_io_normal ? "non-fatal" : "fatal");
	return state == pci_channel_io_normal ? PCI_ERS_RESULT_CAN_RECOVER :
						PCI_ERS_RESULT_NEED_RESET;
}

/* Non-fatal: the registers work; the board need not be reset. */
static pci_ers_result_t fc_mmio_enabled(struct pci_dev *pdev)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);

	if (fc_rd32(fc, FC_REG_ID) != FC_HW_ID_MAGIC) {
		fc_fail(fc, -ENODEV);
		return PCI_ERS_RESULT_DISCONNECT;
	}
	return PCI_ERS_RESULT_RECOVERED;
}

static pci_ers_result_t fc_slot_reset(struct pci_dev *pdev)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);

	if (fc->dead)
		return PCI_ERS_RESULT_DISCONNECT;
	pci_restore_state(pdev);
	pci_save_state(pdev);
	if (fc_rd32(fc, FC_REG_ID) != FC_HW_ID_MAGIC) {
		fc_fail(fc, -ENODEV);
		return PCI_ERS_RESULT_DISCONNECT;
	}
	return PCI_ERS_RESULT_RECOVERED;
}

static void fc_resume_after_error(struct pci_dev *pdev)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);
	int ret;

	if (fc->dead)
		return;
	ret = fc_restart(fc);
	if (ret)
		fc_fail(fc, ret);
	else
		dev_info(&pdev->dev, "recovered from the PCIe error: board ready\n");
}

const struct pci_error_handlers fc_err_handlers = {
	.error_detected	= fc_error_detected,
	.mmio_enabled	= fc_mmio_enabled,
	.slot_reset	= fc_slot_reset,
	.resume		= fc_resume_after_error,
	.reset_prepare	= fc_reset_prepare,
	.reset_done	= fc_reset_done,
};
