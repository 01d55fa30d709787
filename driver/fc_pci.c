// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: PCI probe and remove. Maps the register file, checks that the
 * board is one this driver speaks to, sets up DMA addressing, the DMA queue,
 * interrupts and the character device /dev/fpgacommN.
 */
#include <linux/dma-mapping.h>
#include <linux/idr.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "fc.h"

/* The boards' minors: /dev/fpgacommN, N from fc_minors (fc_main.c). */
static int fc_minor_get(void)
{
	return ida_alloc_max(&fc_minors, FC_MAX_BOARDS - 1, GFP_KERNEL);
}

static void fc_minor_put(int minor)
{
	ida_free(&fc_minors, minor);
}

/* Refuse anything that is not an fpgacomm board of a major version we know. */
static int fc_check_board(struct fc_dev *fc)
{
	struct device *dev = &fc->pdev->dev;

	fc->id = fc_rd32(fc, FC_REG_ID);
	fc->version = fc_rd32(fc, FC_REG_VERSION);

	if (fc->id == ~0u) {
		dev_err(dev, "board not responding: ID register reads all-ones\n");
		return -ENODEV;
	}
	if (fc->id != FC_HW_ID_MAGIC) {
		dev_err(dev, "not an fpgacomm board: ID 0x%08x, expected 0x%08x\n",
			fc->id, FC_HW_ID_MAGIC);
		return -ENODEV;
	}
	if (FC_HW_VERSION_GET_MAJOR(fc->version) != FC_HW_VERSION_MAJOR) {
		dev_err(dev, "unsupported hardware version %u.%u, driver supports %u.x\n",
			FC_HW_VERSION_GET_MAJOR(fc->version),
			FC_HW_VERSION_GET_MINOR(fc->version),
			FC_HW_VERSION_MAJOR);
		return -ENODEV;
	}

	fc->caps = fc_rd32(fc, FC_REG_CAPS);
	fc->node_id = fc_rd32(fc, FC_REG_NODE_ID) & FC_FABRIC_NODE_MASK;
	fc->num_dma = fc_rd32(fc, FC_REG_NUM_DMA);
	fc->num_ports = fc_rd32(fc, FC_REG_NUM_PORTS);
	fc->mem_size = (u64)fc_rd32(fc, FC_REG_MEM_SIZE_HI) << 32 |
		       fc_rd32(fc, FC_REG_MEM_SIZE_LO);
	return 0;
}

static int fc_set_dma_mask(struct fc_dev *fc)
{
	struct device *dev = &fc->pdev->dev;
	int ret;

	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(32));
	if (ret) {
		dev_err(dev, "no usable DMA addressing (64 or 32 bits): %d\n",
			ret);
		return ret;
	}
	/* A descriptor moves up to 1 GiB: let an IOMMU merge that much. */
	return fc_dma_set_max_seg_size(dev, FC_DESC_MAX_LEN);
}

/* Where the register file and the aperture are, for mmap. */
static void fc_find_windows(struct fc_dev *fc)
{
	struct pci_dev *pdev = fc->pdev;
	u64 want = fc_rd32(fc, FC_REG_APERTURE_SIZE);
	u64 len;

	fc->regs_phys = pci_resource_start(pdev, fc->regs_bar);
	if (fc->type == FC_BOARD_IVSHMEM) {
		len = pci_resource_len(pdev, FC_IVSHMEM_BAR_SHM);
		fc->aper_phys = fc->regs_phys + FC_IVSHMEM_APERTURE_OFF;
		len = len > FC_IVSHMEM_APERTURE_OFF ?
		      len - FC_IVSHMEM_APERTURE_OFF : 0;
	} else if (pci_resource_flags(pdev, FC_BAR_APERTURE) & IORESOURCE_MEM) {
		fc->aper_phys = pci_resource_start(pdev, FC_BAR_APERTURE);
		len = pci_resource_len(pdev, FC_BAR_APERTURE);
	} else {
		len = 0;
	}
	fc->aper_size = round_down(min(want, len), PAGE_SIZE);
}

static void fc_dev_release(struct device *dev)
{
	struct fc_dev *fc = to_fc_dev(dev);

	pci_dev_put(fc->pdev);
	kfree(fc);
}

/*
 * What probe sets up is undone by devm actions, after fc_pci_remove() or
 * a failed probe, in the reverse order: interrupts, the DMA queue, bus
 * mastering and the MEM_ALLOC buffers, the BAR mappings and claims (pcim),
 * the minor, and last fc itself (put_device: open files may keep it).
 */
static void fc_put_dev(void *data)
{
	struct fc_dev *fc = data;

	put_device(&fc->dev);
}

static void fc_put_minor(void *data)
{
	struct fc_dev *fc = data;

	fc_minor_put(fc->minor);
}

/* The board can no longer reach MEM_ALLOC buffers: free them. */
static void fc_stop_master(void *data)
{
	struct fc_dev *fc = data;

	pci_clear_master(fc->pdev);
	fc_mem_kill_allocs(fc);
}

static void fc_dma_release(void *data)
{
	fc_dma_fini(data);
}

static void fc_irq_release(void *data)
{
	fc_irq_fini(data);
}

/* fc with its locks and lists; freed by put_device() from here on. */
static struct fc_dev *fc_dev_new(struct pci_dev *pdev,
				 const struct pci_device_id *ent)
{
	struct fc_dev *fc = kzalloc(sizeof(*fc), GFP_KERNEL);

	if (!fc)
		return NULL;
	fc->pdev = pci_dev_get(pdev);
	fc->type = ent->driver_data;
	fc->regs_bar = fc->type == FC_BOARD_IVSHMEM ? FC_IVSHMEM_BAR_SHM :
						     FC_BAR_REGS;
	fc->irq = -1;
	fc->minor = -1;
	init_rwsem(&fc->remove_sem);
	mutex_init(&fc->mmap_lock);
	INIT_LIST_HEAD(&fc->mmap_mms);
	mutex_init(&fc->alloc_lock);
	INIT_LIST_HEAD(&fc->allocs);
	mutex_init(&fc->lock);
	mutex_init(&fc->chan_lock);
	mutex_init(&fc->eq_lock);
	mutex_init(&fc->win_lock);
	init_waitqueue_head(&fc->eq_wq);
	INIT_LIST_HEAD(&fc->files);
	INIT_LIST_HEAD(&fc->parked);
	device_initialize(&fc->dev);
	fc->dev.class = fc_class;
	fc->dev.parent = &pdev->dev;
	fc->dev.groups = fc_groups;
	fc->dev.release = fc_dev_release;
	return fc;
}

/* Enable the device, claim its memory BARs and map the registers. */
static int fc_map_bars(struct fc_dev *fc)
{
	struct pci_dev *pdev = fc->pdev;
	struct device *dev = &pdev->dev;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret) {
		dev_err(dev, "cannot enable device: %d\n", ret);
		return ret;
	}
	if (!(pci_resource_flags(pdev, fc->regs_bar) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, fc->regs_bar) < FC_BAR0_SIZE) {
		dev_err(dev, "BAR%d is not a memory BAR of at least %u bytes\n",
			fc->regs_bar, FC_BAR0_SIZE);
		return -ENODEV;
	}
	/* Managed: pcim_enable_device() came first. */
	ret = pci_request_mem_regions(pdev, FC_DRV_NAME);
	if (ret) {
		dev_err(dev, "cannot claim memory BARs: %d\n", ret);
		return ret;
	}
	fc->regs = pcim_iomap(pdev, fc->regs_bar, FC_BAR0_SIZE);
	if (!fc->regs) {
		dev_err(dev, "cannot map BAR%d\n", fc->regs_bar);
		return -ENOMEM;
	}
	if (fc->type == FC_BOARD_IVSHMEM &&
	    pci_resource_flags(pdev, FC_IVSHMEM_BAR_IVREGS) & IORESOURCE_MEM) {
		fc->ivregs = pcim_iomap(pdev, FC_IVSHMEM_BAR_IVREGS, 0x100);
		if (!fc->ivregs) {
			dev_err(dev, "cannot map ivshmem registers\n");
			return -ENOMEM;
		}
	}
	return 0;
}

/* The DMA queue and interrupts, each undone by its devm action. */
static int fc_start_engines(struct fc_dev *fc)
{
	struct device *dev = &fc->pdev->dev;
	int ret;

	pci_set_master(fc->pdev);
	ret = devm_add_action_or_reset(dev, fc_stop_master, fc);
	if (ret)
		return ret;
	ret = fc_dma_init(fc);
	if (ret)
		return ret;
	ret = devm_add_action_or_reset(dev, fc_dma_release, fc);
	if (ret)
		return ret;
	ret = fc_irq_init(fc);
	if (ret)
		return ret;
	return devm_add_action_or_reset(dev, fc_irq_release, fc);
}

/* /dev/fpgacommN: the last step of probe, undone by fc_pci_remove(). */
static int fc_cdev_add(struct fc_dev *fc)
{
	int ret;

	fc->dev.devt = MKDEV(MAJOR(fc_devt), fc->minor);
	ret = dev_set_name(&fc->dev, FC_DRV_NAME "%d", fc->minor);
	if (ret)
		return ret;
	cdev_init(&fc->cdev, &fc_fops);
	fc->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&fc->cdev, &fc->dev);
	if (ret)
		dev_err(&fc->pdev->dev, "cannot add /dev/%s: %d\n",
			dev_name(&fc->dev), ret);
	return ret;
}

int fc_pci_probe(struct pci_dev *pdev, const struct pci_device_id *ent)
{
	struct device *dev = &pdev->dev;
	struct fc_dev *fc;
	int ret;

	fc = fc_dev_new(pdev, ent);
	if (!fc)
		return -ENOMEM;
	ret = devm_add_action_or_reset(dev, fc_put_dev, fc);
	if (ret)
		return ret;
	fc->minor = fc_minor_get();
	if (fc->minor < 0) {
		dev_err(dev, "no free minor: %d\n", fc->minor);
		return fc->minor;
	}
	ret = devm_add_action_or_reset(dev, fc_put_minor, fc);
	if (ret)
		return ret;

	ret = fc_map_bars(fc);
	if (ret)
		return ret;
	ret = fc_check_board(fc);
	if (ret)
		return ret;
	ret = fc_set_dma_mask(fc);
	if (ret)
		return ret;
	fc_find_windows(fc);
	fc_board_set_shm_bus(fc);
	pci_set_drvdata(pdev, fc);

	ret = fc_start_engines(fc);
	if (ret)
		return ret;
	ret = fc_window_init(fc);
	if (ret)
		return ret;
	/* What error recovery and resets restore (fc_reset.c). */
	pci_save_state(pdev);
	ret = fc_cdev_add(fc);
	if (ret)
		return ret;

	dev_info(dev, "board id 0x%08x version %u.%u caps 0x%08x node %u mem %llu MiB%s\n",
		 fc->id, FC_HW_VERSION_GET_MAJOR(fc->version),
		 FC_HW_VERSION_GET_MINOR(fc->version), fc->caps, fc->node_id,
		 fc->mem_size >> 20,
		 fc->type == FC_BOARD_IVSHMEM ? " (ivshmem)" : "");
	return 0;
}

/*
 * The board goes away, possibly with files open: they keep fc (the device's
 * refcount) but every call on them returns -ENODEV from now on, their
 * chains end with -ENODEV and their memory is unpinned here. Their
 * mappings stay, emptied: a touch of a BAR or a MEM_ALLOC buffer gets
 * SIGBUS, and the coherent memory is freed (by fc_stop_master()), not at
 * munmap. The rest is undone by the devm actions of probe.
 */
void fc_pci_remove(struct pci_dev *pdev)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);

	/* No new opens, no sysfs readers of the registers. */
	cdev_device_del(&fc->cdev, &fc->dev);

	down_write(&fc->remove_sem);
	/* Chains end, handles go, every mapping of the files is zapped. */
	fc_kill_files(fc);
	up_write(&fc->remove_sem);
	/* Peer regions let go above are unmapped while the device is here. */
	fc_peer_flush();
	dev_info(&pdev->dev, "removed\n");
}
