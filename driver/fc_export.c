// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: a range of the board's aperture (BAR2, board memory) exported
 * as a dma-buf (PEER_EXPORT), for another device's driver to import, as a
 * GPU's or NIC's driver would, and for mmap. Each importer gets the BAR
 * range mapped for its own device (dma_map_resource(): a bus address, no
 * pages), so it must be able to do peer-to-peer. The dma-buf holds the
 * board's struct device; when the board is removed its importers are told
 * (move_notify), new attaches, pins and maps fail and CPU mappings lose
 * their pages.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "fc.h"

struct fc_export {
	struct fc_dev *fc;		/* its struct device referenced */
	struct dma_buf *dmabuf;
	struct list_head node;		/* in fc_exports, under fc_export_lock */
	phys_addr_t phys;		/* of the range's first byte */
	u64 len;
	bool dead;			/* the board is gone (fc_export_lock) */
};

/* Every live export of every board: few, and walked only at a removal. */
static LIST_HEAD(fc_exports);
static DEFINE_MUTEX(fc_export_lock);

static int fc_export_attach(struct dma_buf *dmabuf,
			    struct dma_buf_attachment *attach)
{
	struct fc_export *e = dmabuf->priv;

	/* A BAR has no pages: only an importer that copes may have it. */
	if (!attach->peer2peer)
		return -EOPNOTSUPP;
	return READ_ONCE(e->dead) ? -ENODEV : 0;
}

/*
 * The range never moves while the board is there, so a pin only checks
 * that it is. Having pin and unpin makes the exporter dynamic: the core
 * then calls map for every mapping a dynamic importer asks for (after a
 * move_notify too), instead of handing out the one it cached at attach,
 * which would still hold the BAR's address after the board went.
 * Reservation held.
 */
static int fc_export_pin(struct dma_buf_attachment *attach)
{
	struct fc_export *e = attach->dmabuf->priv;

	return READ_ONCE(e->dead) ? -ENODEV : 0;
}

static void fc_export_unpin(struct dma_buf_attachment *attach)
{
}

static struct sg_table *fc_export_map(struct dma_buf_attachment *attach,
				      enum dma_data_direction dir)
{
	struct fc_export *e = attach->dmabuf->priv;
	struct sg_table *sgt;
	dma_addr_t addr;
	int ret;

	/* Called with the reservation held: no fc_export_lock here. */
	if (READ_ONCE(e->dead))
		return ERR_PTR(-ENODEV);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, 1, GFP_KERNEL);
	if (ret)
		goto err_free;
	addr = dma_map_resource(attach->dev, e->phys, e->len, dir,
				DMA_ATTR_SKIP_CPU_SYNC);
	if (dma_mapping_error(attach->dev, addr)) {
		ret = -ENOMEM;
		goto err_free_table;
	}
	sg_dma_address(sgt->sgl) = addr;
	sg_dma_len(sgt->sgl) = e->len;
	return sgt;

err_free_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void fc_export_unmap(struct dma_buf_attachment *attach,
			    struct sg_table *sgt, enum dma_data_direction dir)
{
	struct fc_export *e = attach->dmabuf->priv;

	dma_unmap_resource(attach->dev, sg_dma_address(sgt->sgl), e->len, dir,
			   DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
	kfree(sgt);
}

static void fc_export_release(struct dma_buf *dmabuf)
{
	struct fc_export *e = dmabuf->priv;

	mutex_lock(&fc_export_lock);
	list_del(&e->node);
	mutex_unlock(&fc_export_lock);
	put_device(&e->fc->dev);
	kfree(e);
}

/* Pages of the BAR go in when touched, and only while the board is there. */
static vm_fault_t fc_export_fault(struct vm_fault *vmf)
{
	struct fc_export *e = vmf->vma->vm_private_data;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	mutex_lock(&fc_export_lock);
	if (!e->dead && off < e->len)
		ret = vmf_insert_pfn(vmf->vma, vmf->address,
				     PHYS_PFN(e->phys + off));
	mutex_unlock(&fc_export_lock);
	return ret;
}

static const struct vm_operations_struct fc_export_vm_ops = {
	.fault = fc_export_fault,
};

/* dma_buf_mmap_internal() has checked the range against the size. */
static int fc_export_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	fc_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP |
				     VM_DONTCOPY);
	vma->vm_ops = &fc_export_vm_ops;
	vma->vm_private_data = dmabuf->priv;
	return 0;
}

static const struct dma_buf_ops fc_export_ops = {
	.attach = fc_export_attach,
	.pin = fc_export_pin,
	.unpin = fc_export_unpin,
	.map_dma_buf = fc_export_map,
	.unmap_dma_buf = fc_export_unmap,
	.release = fc_export_release,
	.mmap = fc_export_mmap,
};

long fc_ioctl_peer_export(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_peer_export __user *uarg = arg;
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_peer_export a;
	struct dma_buf *dmabuf;
	struct fc_export *e;
	int fd;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.fd || a.reserved[0] || a.reserved[1])
		return -EINVAL;
	if (!a.len || !PAGE_ALIGNED(a.offset) || !PAGE_ALIGNED(a.len))
		return -EINVAL;
	if (!fc->aper_size)
		return -EOPNOTSUPP;
	if (a.offset >= fc->aper_size || a.len > fc->aper_size - a.offset)
		return -ERANGE;

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;
	e->fc = fc;
	e->phys = fc->aper_phys + a.offset;
	e->len = a.len;
	INIT_LIST_HEAD(&e->node);
	info.ops = &fc_export_ops;
	info.size = a.len;
	info.flags = O_RDWR;
	info.priv = e;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		kfree(e);
		return fd;
	}
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		put_unused_fd(fd);
		kfree(e);
		return PTR_ERR(dmabuf);
	}
	/* From here on its release undoes the rest. */
	e->dmabuf = dmabuf;
	get_device(&fc->dev);
	mutex_lock(&fc_export_lock);
	list_add(&e->node, &fc_exports);
	mutex_unlock(&fc_export_lock);
	if (put_user(fd, &uarg->fd)) {
		put_unused_fd(fd);
		dma_buf_put(dmabuf);
		return -EFAULT;
	}
	fd_install(fd, dmabuf->file);
	return 0;
}

/*
 * The board is going (remove_sem held for writing): its exports lose the
 * BAR. CPU mappings are emptied (a touch gets SIGBUS), new maps fail, and
 * importers are told to stop (move_notify, under each dma-buf's
 * reservation). fc_export_lock is held throughout: a dma-buf whose last
 * reference went waits for it in its release, so it is still whole here.
 * Lock order: fc_export_lock, then a reservation; nothing takes them the
 * other way round (map reads @dead without the lock).
 */
void fc_export_kill(struct fc_dev *fc)
{
	struct fc_export *e;

	mutex_lock(&fc_export_lock);
	list_for_each_entry(e, &fc_exports, node) {
		if (e->fc != fc)
			continue;
		WRITE_ONCE(e->dead, true);
		unmap_mapping_range(e->dmabuf->file->f_mapping, 0, 0, 1);
		dma_resv_lock(e->dmabuf->resv, NULL);
		dma_buf_move_notify(e->dmabuf);
		dma_resv_unlock(e->dmabuf->resv);
	}
	mutex_unlock(&fc_export_lock);
}
