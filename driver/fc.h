/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fpgacomm driver: private definitions shared by the driver's files.
 */
#ifndef _FC_H
#define _FC_H

#include <linux/io.h>
#include <linux/pci.h>
#include <linux/types.h>

#include <fpgacomm/hw.h>

#define FC_DRV_NAME		"fpgacomm"

/*
 * QEMU's ivshmem-plain exposes its shared memory as BAR2; BAR0 holds
 * ivshmem's own registers. The emulated board's register file is that
 * shared memory, from offset 0.
 */
#define FC_IVSHMEM_BAR_SHMEM	2

/* What a matching PCI ID is; stored in pci_device_id.driver_data. */
enum fc_board_type {
	FC_BOARD_NATIVE,	/* the real board: registers in BAR0 */
	FC_BOARD_IVSHMEM,	/* emulated board behind QEMU ivshmem */
};

struct fc_dev {
	struct pci_dev *pdev;
	enum fc_board_type type;
	int regs_bar;
	void __iomem *regs;	/* FC_BAR0_SIZE bytes of registers */

	/* Read once at probe. */
	u32 id;
	u32 version;
	u32 caps;
	u32 node_id;
	u64 mem_size;
};

static inline u32 fc_rd32(const struct fc_dev *fc, u32 reg)
{
	return ioread32(fc->regs + reg);
}

static inline void fc_wr32(const struct fc_dev *fc, u32 reg, u32 val)
{
	iowrite32(val, fc->regs + reg);
}

/* fc_pci.c */
int fc_pci_probe(struct pci_dev *pdev, const struct pci_device_id *ent);
void fc_pci_remove(struct pci_dev *pdev);

#endif /* _FC_H */
