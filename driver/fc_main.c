// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: module entry points and the PCI driver.
 */
#include <linux/module.h>
#include <linux/pci.h>

#include "fc.h"

static bool ivshmem;
module_param(ivshmem, bool, 0444);
MODULE_PARM_DESC(ivshmem,
		 "Also bind to QEMU ivshmem devices holding an emulated board (test VMs only; default: no)");

static const struct pci_device_id fc_pci_ids[] = {
	{ PCI_DEVICE(FC_PCI_VENDOR_ID, FC_PCI_DEVICE_ID),
	  .driver_data = FC_BOARD_NATIVE },
	{ }
};
MODULE_DEVICE_TABLE(pci, fc_pci_ids);

static struct pci_driver fc_pci_driver = {
	.name		= FC_DRV_NAME,
	.id_table	= fc_pci_ids,
	.probe		= fc_pci_probe,
	.remove		= fc_pci_remove,
};

static int __init fc_init(void)
{
	int ret;

	ret = pci_register_driver(&fc_pci_driver);
	if (ret)
		return ret;

	/*
	 * ivshmem is a generic QEMU device, so it is not in fc_pci_ids: that
	 * would make udev autoload us for any ivshmem device. It is added as
	 * a dynamic ID only when asked for, and dropped again at unregister.
	 */
	if (ivshmem) {
		ret = pci_add_dynid(&fc_pci_driver, FC_IVSHMEM_VENDOR_ID,
				    FC_IVSHMEM_DEVICE_ID, PCI_ANY_ID, PCI_ANY_ID,
				    0, 0, FC_BOARD_IVSHMEM);
		if (ret)
			goto err_unregister;
	}
	return 0;

err_unregister:
	pci_unregister_driver(&fc_pci_driver);
	return ret;
}

static void __exit fc_exit(void)
{
	pci_unregister_driver(&fc_pci_driver);
}

module_init(fc_init);
module_exit(fc_exit);

MODULE_DESCRIPTION("fpgacomm FPGA inter-board network driver");
MODULE_LICENSE("GPL");
