// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: PCI probe and remove. Maps the register file, checks that the
 * board is one this driver speaks to, and sets up DMA addressing.
 */
#include <linux/dma-mapping.h>
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
	if (ret)
		dev_err(dev, "no usable DMA addressing (64 or 32 bits): %d\n",
			ret);
	return ret;
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
	fc->regs_bar = fc->type == FC_BOARD_IVSHMEM ? FC_IVSHMEM_BAR_SHMEM :
						     FC_BAR_REGS;

	ret = pci_enable_device_mem(pdev);
	if (ret) {
		dev_err(dev, "cannot enable device: %d\n", ret);
		goto err_free;
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

	ret = fc_check_board(fc);
	if (ret)
		goto err_iounmap;

	ret = fc_set_dma_mask(fc);
	if (ret)
		goto err_iounmap;

	pci_set_master(pdev);
	pci_set_drvdata(pdev, fc);

	dev_info(dev, "board id 0x%08x version %u.%u caps 0x%08x node %u mem %llu MiB%s\n",
		 fc->id, FC_HW_VERSION_GET_MAJOR(fc->version),
		 FC_HW_VERSION_GET_MINOR(fc->version), fc->caps, fc->node_id,
		 fc->mem_size >> 20,
		 fc->type == FC_BOARD_IVSHMEM ? " (ivshmem)" : "");
	return 0;

err_iounmap:
	pci_iounmap(pdev, fc->regs);
err_release_regions:
	pci_release_mem_regions(pdev);
err_disable_pdev:
	pci_disable_device(pdev);
err_free:
	kfree(fc);
	return ret;
}

void fc_pci_remove(struct pci_dev *pdev)
{
	struct fc_dev *fc = pci_get_drvdata(pdev);

	pci_clear_master(pdev);
	pci_iounmap(pdev, fc->regs);
	pci_release_mem_regions(pdev);
	pci_disable_device(pdev);
	pci_set_drvdata(pdev, NULL);
	kfree(fc);
	dev_info(&pdev->dev, "removed\n");
}
