// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: the character device /dev/fpgacommN. open/release, the ioctl
 * dispatch with INFO and register access, mmap of the register file, the
 * aperture and MEM_ALLOC buffers, and poll(2) for chain ends.
 */
#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "fc.h"

#define FC_FEATURES	(FC_FEAT_DMA | FC_FEAT_MEM_REGISTER | \
			 FC_FEAT_MMAP_REGS | FC_FEAT_MMAP_APERTURE | \
			 FC_FEAT_MEM_ALLOC | FC_FEAT_EVENTFD | FC_FEAT_POLL | \
			 FC_FEAT_REG | FC_FEAT_CHAN_RING | FC_FEAT_XFER_MORE | \
			 FC_FEAT_MEM_INFO | FC_FEAT_DESC_LIMIT | \
			 FC_FEAT_PEER_IMPORT | FC_FEAT_PEER_EXPORT | FC_FEAT_EQ | \
			 FC_FEAT_XFER_CTRL | FC_FEAT_EQ_WAIT | FC_FEAT_ENGINES | \
			 FC_FEAT_PEER_WINDOW)

static int fc_open(struct inode *inode, struct file *file)
{
	struct fc_dev *fc = container_of(inode->i_cdev, struct fc_dev, cdev);
	struct fc_file *ff;
	int ret;

	ff = kzalloc(sizeof(*ff), GFP_KERNEL_ACCOUNT);
	if (!ff)
		return -ENOMEM;
	ff->results = kvcalloc(FC_FILE_RESULTS, sizeof(*ff->results),
			       GFP_KERNEL_ACCOUNT);
	if (!ff->results) {
		ret = -ENOMEM;
		goto err_free;
	}
	ff->fc = fc;
	ff->mapping = file->f_mapping;
	xa_init_flags(&ff->mems, XA_FLAGS_ALLOC1);
	init_waitqueue_head(&ff->wq);
	spin_lock_init(&ff->res_lock);
	INIT_LIST_HEAD(&ff->node);

	mutex_lock(&fc->lock);
	if (fc->dead) {
		mutex_unlock(&fc->lock);
		ret = -ENODEV;
		goto err_free_results;
	}
	list_add_tail(&ff->node, &fc->files);
	get_device(&fc->dev);
	mutex_unlock(&fc->lock);

	file->private_data = ff;
	return nonseekable_open(inode, file);

err_free_results:
	kvfree(ff->results);
err_free:
	kfree(ff);
	return ret;
}

static int fc_release(struct inode *inode, struct file *file)
{
	struct fc_file *ff = file->private_data;
	struct fc_dev *fc = ff->fc;

	fc_dma_release_file(ff);
	fc_chan_release_file(ff);
	fc_eq_release_file(ff);
	fc_pio_release_file(ff);
	fc_window_release_file(ff);
	fc_mem_release_all(ff);
	xa_destroy(&ff->mems);
	kvfree(ff->results);
	kfree(ff);
	put_device(&fc->dev);
	return 0;
}

static long fc_ioctl_info(struct fc_dev *fc, void __user *arg)
{
	struct fc_ioc_info info;

	if (copy_from_user(&info, arg, sizeof(info)))
		return -EFAULT;
	if (info.flags)
		return -EINVAL;
	memset(&info, 0, sizeof(info));
	info.abi_version = FC_ABI_VERSION;
	info.features = FC_FEATURES;
	if (fc_pio_offered(fc))
		info.features |= FC_FEAT_PIO | (fc->ivregs ? FC_FEAT_PIO_KICK : 0);
	info.irq_mode = fc->irq_mode;
	info.hw_id = fc->id;
	info.hw_version = fc->version;
	info.hw_caps = fc->caps;
	info.node_id = fc->node_id;
	info.dma_engines = fc->num_dma;
	info.num_ports = fc->num_ports;
	info.max_chain = FC_DMA_MAX_CHAIN;
	info.numa_node = dev_to_node(&fc->pdev->dev);
	info.max_xfer_len = FC_DESC_MAX_LEN;
	info.board_mem_size = fc->mem_size;
	info.regs_size = FC_BAR0_SIZE;
	info.aperture_size = fc->aper_size;
	info.max_desc = FC_FILE_MAX_DESC;
	if (copy_to_user(arg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static int fc_reg_check(const struct fc_ioc_reg *r)
{
	if (r->flags || r->reserved)
		return -EINVAL;
	if (r->offset >= FC_BAR0_SIZE || r->offset % 4)
		return -EINVAL;
	return 0;
}

static long fc_ioctl_reg_read(struct fc_dev *fc, void __user *arg)
{
	struct fc_ioc_reg r;
	int ret;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	ret = fc_reg_check(&r);
	if (ret)
		return ret;
	/* Bus addresses are for those who may name one (MEM_INFO too). */
	if (fc_hw_bus_addr_reg(r.offset) && !capable(CAP_SYS_RAWIO))
		r.value = 0;
	else
		r.value = fc_rd32(fc, r.offset);
	if (copy_to_user(arg, &r, sizeof(r)))
		return -EFAULT;
	return 0;
}

/*
 * Behind ivshmem the register file is plain shared memory and the board
 * acts on it asynchronously. Make it behave like the hardware: writes to
 * board-owned or reserved registers are dropped (a forged DONE_SEQ would
 * end a chain still moving data), and SCRATCH_ECHO is current when the
 * write returns, as a PCIe read after a write would see it.
 */
static void fc_reg_write_emulated(struct fc_dev *fc, u32 off, u32 val)
{
	unsigned long end;

	if (!fc_hw_host_writable(off))
		return;
	fc_wr32(fc, off, val);
	fc_ring(fc);
	if (off != FC_REG_SCRATCH)
		return;
	end = jiffies + msecs_to_jiffies(100);
	while (fc_rd32(fc, FC_REG_SCRATCH_ECHO) != ~val &&
	       time_before(jiffies, end))
		usleep_range(10, 50);
}

/*
 * Registers can start DMA to any address: CAP_SYS_RAWIO only, except the
 * local stores' (a stream program reaches board memory and its LS only,
 * which any user may reach by DMA already).
 */
static long fc_ioctl_reg_write(struct fc_dev *fc, void __user *arg)
{
	struct fc_ioc_reg r;
	int ret;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	ret = fc_reg_check(&r);
	if (ret)
		return ret;
	if (!capable(CAP_SYS_RAWIO) &&
	    !(fc_hw_ls_reg(r.offset) && fc_hw_host_writable(r.offset)))
		return -EPERM;
	/* The driver's chains must hear of it (fc_dma_board_reset()). */
	if (r.offset == FC_REG_BOARD_RESET)
		return fc_dma_board_reset(fc, r.value);
	if (fc->type == FC_BOARD_IVSHMEM) {
		fc_reg_write_emulated(fc, r.offset, r.value);
		return 0;
	}
	fc_wr32(fc, r.offset, r.value);
	return 0;
}

static bool fc_ioctl_known(unsigned int cmd)
{
	switch (cmd) {
	case FC_IOC_INFO:
	case FC_IOC_MEM_REGISTER:
	case FC_IOC_MEM_UNREGISTER:
	case FC_IOC_MEM_ALLOC:
	case FC_IOC_SUBMIT:
	case FC_IOC_WAIT:
	case FC_IOC_RESET:
	case FC_IOC_REG_READ:
	case FC_IOC_REG_WRITE:
	case FC_IOC_CHAN_RING:
	case FC_IOC_CHAN_HEAD:
	case FC_IOC_MEM_INFO:
	case FC_IOC_PIO_KICK:
	case FC_IOC_PEER_IMPORT:
	case FC_IOC_PEER_EXPORT:
	case FC_IOC_EQ:
	case FC_IOC_EQ_HEAD:
	case FC_IOC_EQ_WAIT:
	case FC_IOC_PEER_WINDOW:
		return true;
	default:
		return false;
	}
}

/* The calls made with remove_sem held for reading and the board there. */
static long fc_ioctl_locked(struct fc_file *ff, unsigned int cmd,
			    void __user *uarg)
{
	struct fc_dev *fc = ff->fc;

	switch (cmd) {
	case FC_IOC_INFO:
		return fc_ioctl_info(fc, uarg);
	case FC_IOC_MEM_REGISTER:
		return fc_ioctl_mem_register(ff, uarg);
	case FC_IOC_MEM_UNREGISTER:
		/* Through the window: no entry may map it once it is gone. */
		return fc_window_mem_unregister(ff, uarg);
	case FC_IOC_MEM_ALLOC:
		return fc_ioctl_mem_alloc(ff, uarg);
	case FC_IOC_SUBMIT:
		return fc_ioctl_submit(ff, uarg);
	case FC_IOC_RESET:
		return fc_ioctl_reset(ff, uarg);
	case FC_IOC_REG_READ:
		return fc_ioctl_reg_read(fc, uarg);
	case FC_IOC_REG_WRITE:
		return fc_ioctl_reg_write(fc, uarg);
	case FC_IOC_CHAN_RING:
		return fc_ioctl_chan_ring(ff, uarg);
	case FC_IOC_CHAN_HEAD:
		return fc_ioctl_chan_head(ff, uarg);
	case FC_IOC_MEM_INFO:
		return fc_ioctl_mem_info(ff, uarg);
	case FC_IOC_PIO_KICK:
		return fc_ioctl_pio_kick(ff, uarg);
	case FC_IOC_PEER_IMPORT:
		return fc_ioctl_peer_import(ff, uarg);
	case FC_IOC_PEER_EXPORT:
		return fc_ioctl_peer_export(ff, uarg);
	case FC_IOC_PEER_WINDOW:
		return fc_ioctl_peer_window(ff, uarg);
	case FC_IOC_EQ:
		return fc_ioctl_eq(ff, uarg);
	case FC_IOC_EQ_HEAD:
		return fc_ioctl_eq_head(ff, uarg);
	default:
		return -ENOTTY;
	}
}

static long fc_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct fc_file *ff = file->private_data;
	struct fc_dev *fc = ff->fc;
	void __user *uarg = (void __user *)arg;
	long ret;

	/* EQ_WAIT takes remove_sem only to arm. */
	if (cmd == FC_IOC_EQ_WAIT)
		return fc_ioctl_eq_wait(ff, uarg);

	/* WAIT sleeps without holding off a removal. */
	if (cmd == FC_IOC_WAIT) {
		if (READ_ONCE(fc->dead))
			return -ENODEV;
		return fc_ioctl_wait(ff, uarg);
	}

	/* An unknown command is -ENOTTY even once the board is gone. */
	if (!fc_ioctl_known(cmd))
		return -ENOTTY;
	down_read(&fc->remove_sem);
	if (fc->dead)
		ret = -ENODEV;
	/* Error recovery under way, or the machine is going (fc_reset.c). */
	else if (READ_ONCE(fc->state) != FC_STATE_OK)
		ret = -EIO;
	else
		ret = fc_ioctl_locked(ff, cmd, uarg);
	up_read(&fc->remove_sem);
	return ret;
}

/*
 * Where file offset @off of a BAR mapping lands: the PIO pages at
 * FC_MMAP_PIO, the register file below FC_MMAP_APERTURE, then the
 * aperture. -EINVAL beyond them.
 */
static int fc_io_window(struct fc_dev *fc, u64 off, phys_addr_t *phys,
			u64 *left)
{
	u64 len;

	if (off >= FC_MMAP_PIO && off < FC_MMAP_PIO + FC_MMAP_PIO_SIZE)
		return fc_pio_window(fc, off, phys, left);
	if (off < FC_MMAP_APERTURE) {
		*phys = fc->regs_phys;
		len = FC_BAR0_SIZE;
	} else if (off < FC_MMAP_ALLOC_BASE) {
		off -= FC_MMAP_APERTURE;
		*phys = fc->aper_phys;
		len = fc->aper_size;
	} else {
		return -EINVAL;
	}
	if (off >= len)
		return -EINVAL;
	*phys += off;
	*left = len - off;
	return 0;
}

/*
 * BAR pages go in one at a time, when touched, and only while the board is
 * there (as vfio-pci does): remove sets fc->dead under mmap_lock, so no
 * page goes in after that, then zaps every mapping of the file
 * (fc_dma_kill()). A touch after the remove gets SIGBUS instead of
 * reaching a BAR that is gone, or whatever the bus address holds next.
 */
static vm_fault_t fc_io_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct fc_file *ff = vma->vm_file->private_data;
	struct fc_dev *fc = ff->fc;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	phys_addr_t phys;
	u64 left;

	mutex_lock(&fc->mmap_lock);
	/* A reset revoked the mappings made before it (fc_reset.c). */
	if (!fc->dead && fc->state == FC_STATE_OK &&
	    (unsigned long)vma->vm_private_data == fc->bar_gen &&
	    !fc_io_window(fc, (u64)vmf->pgoff << PAGE_SHIFT, &phys, &left))
		ret = vmf_insert_pfn(vma, vmf->address, PHYS_PFN(phys));
	mutex_unlock(&fc->mmap_lock);
	return ret;
}

static const struct vm_operations_struct fc_io_vm_ops = {
	.fault = fc_io_fault,
};

/*
 * Map part of a BAR, uncached (write-combined: the PIO pages, written a
 * packet at a time); the pages go in at fault time.
 */
static int fc_mmap_io(struct fc_dev *fc, struct vm_area_struct *vma, u64 off,
		      bool wc)
{
	unsigned long size = vma->vm_end - vma->vm_start;
	phys_addr_t phys;
	u64 left;

	if (fc_io_window(fc, off, &phys, &left) || size > left)
		return -EINVAL;
	vma->vm_page_prot = wc ? pgprot_writecombine(vma->vm_page_prot) :
				 pgprot_noncached(vma->vm_page_prot);
	fc_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP |
			     VM_DONTCOPY);
	vma->vm_ops = &fc_io_vm_ops;
	vma->vm_private_data = (void *)fc->bar_gen;
	return 0;
}

/* The PIO pages: claimed for @ff only if they are mapped (a failed mmap,
 * too large say, must not keep every other file from them). */
static int fc_mmap_pio(struct fc_file *ff, struct vm_area_struct *vma, u64 off)
{
	struct fc_dev *fc = ff->fc;
	bool had = fc->pio_owner == ff;
	int ret = fc_pio_claim(ff);

	if (ret)
		return ret;
	ret = fc_mmap_io(fc, vma, off, true);
	if (ret && !had)
		fc->pio_owner = NULL;
	return ret;
}

static int fc_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct fc_file *ff = file->private_data;
	struct fc_dev *fc = ff->fc;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	/* Not remove_sem: mmap_lock is held here and ioctls pin under it. */
	mutex_lock(&fc->mmap_lock);
	if (fc->dead)
		ret = -ENODEV;
	else if (fc->state != FC_STATE_OK)
		ret = -EIO;
	else if (off >= FC_MMAP_PIO && off < FC_MMAP_PIO + FC_MMAP_PIO_SIZE)
		ret = off != FC_MMAP_PIO ? -EINVAL : fc_mmap_pio(ff, vma, off);
	else if (off < FC_MMAP_APERTURE && !capable(CAP_SYS_RAWIO))
		ret = -EPERM;
	else if (off < FC_MMAP_ALLOC_BASE)
		ret = fc_mmap_io(fc, vma, off, false);
	else
		ret = fc_mmap_alloc(ff, vma, off);
	mutex_unlock(&fc->mmap_lock);
	return ret;
}

static __poll_t fc_poll(struct file *file, poll_table *wait)
{
	struct fc_file *ff = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &ff->wq, wait);
	if (READ_ONCE(ff->fc->dead))
		mask |= EPOLLERR | EPOLLHUP;
	if (fc_dma_file_event(ff))
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

const struct file_operations fc_fops = {
	.owner		= THIS_MODULE,
	.open		= fc_open,
	.release	= fc_release,
	.unlocked_ioctl	= fc_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= fc_mmap,
	.poll		= fc_poll,
	/* no .llseek: nonseekable_open() makes lseek -ESPIPE (no_llseek,
	 * NULL since 6.0, is gone in 6.12) */
};
