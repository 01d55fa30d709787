// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: module entry points, parameters, the device class and the PCI
 * driver.
 */
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "fc.h"

static bool ivshmem;
module_param(ivshmem, bool, 0444);
MODULE_PARM_DESC(ivshmem,
		 "Also bind to QEMU ivshmem devices holding an emulated board (test VMs only; default: no)");

bool fc_param_poll;
module_param_named(poll, fc_param_poll, bool, 0444);
MODULE_PARM_DESC(poll, "Poll for chain completion instead of using interrupts (default: no)");

unsigned int fc_param_dma_timeout_ms = 5000;
module_param_named(dma_timeout_ms, fc_param_dma_timeout_ms, uint, 0644);
MODULE_PARM_DESC(dma_timeout_ms,
		 "Fail a hardware chain not done after this many ms and reset the engine (default: 5000)");

struct class *fc_class;
dev_t fc_devt;
DEFINE_IDA(fc_minors);

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
	.shutdown	= fc_pci_shutdown,
	.err_handler	= &fc_err_handlers,
	.driver.pm	= pm_sleep_ptr(&fc_pm_ops),
};

static int __init fc_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&fc_devt, 0, FC_MAX_BOARDS, FC_DRV_NAME);
	if (ret)
		return ret;

	fc_class = fc_class_create(FC_DRV_NAME);
	if (IS_ERR(fc_class)) {
		ret = PTR_ERR(fc_class);
		goto err_unregister_chrdev;
	}

	ret = fc_peer_init();
	if (ret)
		goto err_destroy_class;

	ret = pci_register_driver(&fc_pci_driver);
	if (ret)
		goto err_peer_exit;

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
			goto err_unregister_driver;
	}
	return 0;

err_unregister_driver:
	pci_unregister_driver(&fc_pci_driver);
err_peer_exit:
	fc_peer_exit();
err_destroy_class:
	class_destroy(fc_class);
err_unregister_chrdev:
	unregister_chrdev_region(fc_devt, FC_MAX_BOARDS);
	return ret;
}

static void __exit fc_exit(void)
{
	pci_unregister_driver(&fc_pci_driver);
	fc_peer_exit();		/* after the last file: every region freed */
	class_destroy(fc_class);
	unregister_chrdev_region(fc_devt, FC_MAX_BOARDS);
	ida_destroy(&fc_minors);
}

module_init(fc_init);
module_exit(fc_exit);

MODULE_DESCRIPTION("fpgacomm FPGA inter-board network driver");
MODULE_LICENSE("GPL");
