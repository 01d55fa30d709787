// SPDX-License-Identifier: GPL-2.0
/*
 * fcvm_msix: a test VM fixture, not part of the driver. It binds to QEMU's
 * ivshmem-doorbell devices and requests their MSI-X vectors, so that the
 * interrupts raised by fpgacomm-emud can be counted in /proc/interrupts
 * (one line per vector, named "fcvm-msix-<vector>@<pci device>") before
 * the real driver handles them. It claims no BAR, so that the guest script
 * can reach the board with devmem meanwhile.
 *
 * Built and loaded only by scripts/vm/run-vm-tests.sh; bind by id:
 *   echo "1af4 1110" > /sys/bus/pci/drivers/fcvm_msix/new_id
 */
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#define FCVM_MAX_VECTORS	16

struct fcvm_dev {
	int nvec;
	char names[FCVM_MAX_VECTORS][32];
};

static irqreturn_t fcvm_irq(int irq, void *data)
{
	return IRQ_HANDLED;	/* the kernel counts it in /proc/interrupts */
}

static int fcvm_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct fcvm_dev *fd;
	int ret, v;

	fd = devm_kzalloc(&pdev->dev, sizeof(*fd), GFP_KERNEL);
	if (!fd)
		return -ENOMEM;
	ret = pci_enable_device_mem(pdev);
	if (ret)
		return ret;
	ret = pci_alloc_irq_vectors(pdev, 1, FCVM_MAX_VECTORS, PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "no MSI-X vectors: %d\n", ret);
		goto err_disable_pdev;
	}
	fd->nvec = ret;
	/* An MSI-X message is a memory write by the device: QEMU drops it
	 * while bus mastering is off. */
	pci_set_master(pdev);
	for (v = 0; v < fd->nvec; v++) {
		snprintf(fd->names[v], sizeof(fd->names[v]), "fcvm-msix-%d@%s",
			 v, pci_name(pdev));
		ret = request_irq(pci_irq_vector(pdev, v), fcvm_irq, 0,
				  fd->names[v], fd);
		if (ret)
			goto err_free_irqs;
	}
	pci_set_drvdata(pdev, fd);
	dev_info(&pdev->dev, "%d MSI-X vectors\n", fd->nvec);
	return 0;

err_free_irqs:
	while (--v >= 0)
		free_irq(pci_irq_vector(pdev, v), fd);
	pci_clear_master(pdev);
	pci_free_irq_vectors(pdev);
err_disable_pdev:
	pci_disable_device(pdev);
	return ret;
}

static void fcvm_remove(struct pci_dev *pdev)
{
	struct fcvm_dev *fd = pci_get_drvdata(pdev);
	int v;

	for (v = 0; v < fd->nvec; v++)
		free_irq(pci_irq_vector(pdev, v), fd);
	pci_clear_master(pdev);
	pci_free_irq_vectors(pdev);
	pci_disable_device(pdev);
}

/* No id table: nothing binds until the test writes new_id. */
static struct pci_driver fcvm_driver = {
	.name = "fcvm_msix",
	.probe = fcvm_probe,
	.remove = fcvm_remove,
};
module_pci_driver(fcvm_driver);

MODULE_DESCRIPTION("test VM fixture: count MSI-X interrupts of ivshmem devices");
MODULE_LICENSE("GPL");
