// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: PCI probe and remove. Maps the register file, checks that the
 * board is one this driver speaks to, sets up DMA addressing, the DMA queue,
 * interrupts and the character device /dev/fpgacommN.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "fc.h"

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

int fc_pci_probe(struct pci_dev *pdev, const struct pci_device_id *ent)
{
	struct device *dev = &pdev->dev;
	struct fc_dev *fc;
	int ret;

	fc = kzalloc(sizeof(*fc), GFP_KERNEL);
	if (!fc)
		return -ENOMEM;
	fc->pdev = pdev;
	fc->type = ent->driver_data;
	fc->regs_bar = fc->type == FC_BOARD_IVSHMEM ? FC_IVSHMEM_BAR_SHM :
						     FC_BAR_REGS;
	fc->irq = -1;
	init_rwsem(&fc->remove_sem);
	mutex_init(&fc->mmap_lock);
	INIT_LIST_HEAD(&fc->mmap_mms);
	mutex_init(&fc->alloc_lock);
	INIT_LIST_HEAD(&fc->allocs);
	mutex_init(&fc->lock);
	mutex_init(&fc->chan_lock);
	mutex_init(&fc->eq_lock);
	init_waitqueue_head(&fc->eq_wq);
	INIT_LIST_HEAD(&fc->files);
	INIT_LIST_HEAD(&fc->parked);

	fc->minor = fc_minor_get();
	if (fc->minor < 0) {
		ret = fc->minor;
		dev_err(dev, "no free minor: %d\n", ret);
		goto err_free;
	}

	ret = pci_enable_device_mem(pdev);
	if (ret) {
		dev_err(dev, "cannot enable device: %d\n", ret);
		goto err_put_minor;
	}

	if (!(pci_resource_flags(pdev, fc->regs_bar) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, fc->regs_bar) < FC_BAR0_SIZE) {
		dev_err(dev, "BAR%d is not a memory BAR of at least %u bytes\n",
			fc->regs_bar, FC_BAR0_SIZE);
		ret = -ENODEV;
		goto err_disable_pdev;
	}

	ret = pci_request_mem_regions(pdev, FC_DRV_NAME);
	if (ret) {
		dev_err(dev, "cannot claim memory BARs: %d\n", ret);
		goto err_disable_pdev;
	}

	fc->regs = pci_iomap(pdev, fc->regs_bar, FC_BAR0_SIZE);
	if (!fc->regs) {
		dev_err(dev, "cannot map BAR%d\n", fc->regs_bar);
		ret = -ENOMEM;
		goto err_release_regions;
	}
	if (fc->type == FC_BOARD_IVSHMEM &&
	    pci_resource_flags(pdev, FC_IVSHMEM_BAR_IVREGS) & IORESOURCE_MEM) {
		fc->ivregs = pci_iomap(pdev, FC_IVSHMEM_BAR_IVREGS, 0x100);
		if (!fc->ivregs) {
			dev_err(dev, "cannot map ivshmem registers\n");
			ret = -ENOMEM;
			goto err_iounmap;
		}
	}

	ret = fc_check_board(fc);
	if (ret)
		goto err_iounmap;

	ret = fc_set_dma_mask(fc);
	if (ret)
		goto err_iounmap;
	fc_find_windows(fc);
	/* The VM's other emulated boards reach our aperture by this. */
	if (fc->type == FC_BOARD_IVSHMEM && fc->caps & FC_CAP_EMULATED) {
		u64 bus = pci_bus_address(pdev, FC_IVSHMEM_BAR_SHM);

		fc_wr32(fc, FC_EMU_SHM_BUS_LO, lower_32_bits(bus));
		fc_wr32(fc, FC_EMU_SHM_BUS_HI, upper_32_bits(bus));
	}

	pci_set_master(pdev);
	pci_set_drvdata(pdev, fc);

	ret = fc_dma_init(fc);
	if (ret)
		goto err_clear_master;

	ret = fc_irq_init(fc);
	if (ret)
		goto err_dma_fini;

	/* From here on, fc is freed by put_device(&fc->dev). */
	device_initialize(&fc->dev);
	fc->dev.class = fc_class;
	fc->dev.parent = dev;
	fc->dev.devt = MKDEV(MAJOR(fc_devt), fc->minor);
	fc->dev.groups = fc_groups;
	fc->dev.release = fc_dev_release;
	pci_dev_get(pdev);
	ret = dev_set_name(&fc->dev, FC_DRV_NAME "%d", fc->minor);
	if (ret)
		goto err_put_device;
	cdev_init(&fc->cdev, &fc_fops);
	fc->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&fc->cdev, &fc->dev);
	if (ret) {
		dev_err(dev, "cannot add /dev/%s: %d\n", dev_name(&fc->dev),
			ret);
		goto err_put_device;
	}

	dev_info(dev, "board id 0x%08x version %u.%u caps 0x%08x node %u mem %llu MiB%s\n",
		 fc->id, FC_HW_VERSION_GET_MAJOR(fc->version),
		 FC_HW_VERSION_GET_MINOR(fc->version), fc->caps, fc->node_id,
		 fc->mem_size >> 20,
		 fc->type == FC_BOARD_IVSHMEM ? " (ivshmem)" : "");
	return 0;

err_put_device:
	fc_irq_fini(fc);
	fc_dma_fini(fc);
	pci_clear_master(pdev);
	pci_set_drvdata(pdev, NULL);
	if (fc->ivregs)
		pci_iounmap(pdev, fc->ivregs);
	pci_iounmap(pdev, fc->regs);
	pci_release_mem_regions(pdev);
	pci_disable_device(pdev);
	fc_minor_put(fc->minor);
	put_device(&fc->dev);
	return ret;

err_dma_fini:
	fc_dma_fini(fc);
err_clear_master:
	pci_clear_master(pdev);
	pci_set_drvdata(pdev, NULL);
err_iounmap:
	if (fc->ivregs)
		pci_iounmap(pdev, fc->ivregs);
	pci_iounmap(pdev, fc->regs);
err_release_regions:
	pci_release_mem_regions(pdev);
err_disable_pdev:
	pci_disable_device(pdev);
err_put_minor:
	fc_minor_put(fc->minor);
err_free:
	kfree(fc);
	return ret;
}

/*
 * The board goes away, possibly with files open: they keep fc (the device's
 * refcount) but every call on them returns -ENODEV from now on, their
 * chains end with -ENODEV and their memory is unpinned here. Their
 * mappings stay, emptied: a touch of a BAR or a MEM_ALLOC buffer gets
 * SIGBUS, and the coherent memory is freed here, not at munmap.
 */
void fc_pci_remove(struct pci_dev *pdev)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);
	LIST_HEAD(mms);

	/* No new opens, no sysfs readers of the registers. */
	cdev_device_del(&fc->cdev, &fc->dev);

	down_write(&fc->remove_sem);
	/* No new mapping, no BAR page faulted in from here on. */
	mutex_lock(&fc->mmap_lock);
	fc->dead = true;
	list_splice_init(&fc->mmap_mms, &mms);
	mutex_unlock(&fc->mmap_lock);
	fc_mmap_settle(&mms);
	/* Chains end, handles go, every mapping of the files is zapped. */
	fc_dma_kill(fc);
	fc_chan_kill(fc);
	fc_eq_kill(fc);
	fc_export_kill(fc);
	up_write(&fc->remove_sem);
	/* Peer regions let go above are unmapped while the device is here. */
	fc_peer_flush();

	fc_irq_fini(fc);
	fc_dma_fini(fc);

	pci_clear_master(pdev);
	fc_mem_kill_allocs(fc);
	if (fc->ivregs)
		pci_iounmap(pdev, fc->ivregs);
	pci_iounmap(pdev, fc->regs);
	fc->regs = NULL;
	pci_release_mem_regions(pdev);
	pci_disable_device(pdev);
	pci_set_drvdata(pdev, NULL);
	fc_minor_put(fc->minor);
	dev_info(&pdev->dev, "removed\n");
	put_device(&fc->dev);
}
