// SPDX-License-Identifier: GPL-2.0
/*
 * fcvm_dmabuf: a test VM fixture, not part of the driver. /dev/fcvm_dmabuf
 * hands out dma-bufs of kernel pages (FCVM_DMABUF_CREATE), which the
 * driver's PEER_IMPORT takes as any exporter's, and can revoke them
 * (FCVM_DMABUF_REVOKE: move_notify to every importer). The buffers and
 * attachments alive are counted in /sys/module/fcvm_dmabuf/parameters/
 * (live_bufs, live_attach), so that a test can tell that the importer let
 * go of everything. It can also import a dma-buf itself, as a dynamic
 * importer that maps again after a move_notify (FCVM_DMABUF_IMPORT,
 * FCVM_DMABUF_REMAP), to see what such an importer is handed. Behind QEMU
 * without an IOMMU, the pages' bus addresses are guest-physical, which
 * fpgacomm-emud reaches in the guest's RAM file. CPU access through the
 * mmap is bracketed by DMA_BUF_IOCTL_SYNC, which syncs every attachment's
 * mapping (bounce buffers under swiotlb=force).
 *
 * Built and loaded only by scripts/vm/run-vm-tests.sh.
 */
#include <linux/atomic.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "fcvm_dmabuf.h"

MODULE_IMPORT_NS(DMA_BUF);

#define FCVM_MAX_SIZE	(64ul << 20)

static atomic_t live_bufs = ATOMIC_INIT(0);
static atomic_t live_attach = ATOMIC_INIT(0);
static atomic_t moves = ATOMIC_INIT(0);
module_param_named(live_bufs, live_bufs.counter, int, 0444);
module_param_named(live_attach, live_attach.counter, int, 0444);
module_param_named(moves, moves.counter, int, 0444);

struct fcvm_buf {
	unsigned long npages;
	struct page **pages;
	struct mutex lock;		/* maps */
	struct list_head maps;
};

/* One attachment's mapping, synced around CPU access (swiotlb bounces). */
struct fcvm_map {
	struct list_head node;		/* in fcvm_buf.maps */
	struct device *dev;
	struct sg_table sgt;
	enum dma_data_direction dir;
};

static int fcvm_attach(struct dma_buf *dmabuf, struct dma_buf_attachment *at)
{
	atomic_inc(&live_attach);
	return 0;
}

static void fcvm_detach(struct dma_buf *dmabuf, struct dma_buf_attachment *at)
{
	atomic_dec(&live_attach);
}

static struct sg_table *fcvm_map(struct dma_buf_attachment *at,
				 enum dma_data_direction dir)
{
	struct fcvm_buf *b = at->dmabuf->priv;
	struct fcvm_map *m;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->dev = at->dev;
	m->dir = dir;
	ret = sg_alloc_table_from_pages(&m->sgt, b->pages, b->npages, 0,
					b->npages << PAGE_SHIFT, GFP_KERNEL);
	if (ret)
		goto err_free;
	ret = dma_map_sgtable(at->dev, &m->sgt, dir, 0);
	if (ret)
		goto err_free_table;
	mutex_lock(&b->lock);
	list_add(&m->node, &b->maps);
	mutex_unlock(&b->lock);
	return &m->sgt;

err_free_table:
	sg_free_table(&m->sgt);
err_free:
	kfree(m);
	return ERR_PTR(ret);
}

static void fcvm_unmap(struct dma_buf_attachment *at, struct sg_table *sgt,
		       enum dma_data_direction dir)
{
	struct fcvm_map *m = container_of(sgt, struct fcvm_map, sgt);
	struct fcvm_buf *b = at->dmabuf->priv;

	mutex_lock(&b->lock);
	list_del(&m->node);
	mutex_unlock(&b->lock);
	dma_unmap_sgtable(at->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(m);
}

/* DMA_BUF_IOCTL_SYNC: what the devices wrote, to the CPU's view, and back. */
static int fcvm_begin_cpu(struct dma_buf *dmabuf, enum dma_data_direction dir)
{
	struct fcvm_buf *b = dmabuf->priv;
	struct fcvm_map *m;

	mutex_lock(&b->lock);
	list_for_each_entry(m, &b->maps, node)
		dma_sync_sgtable_for_cpu(m->dev, &m->sgt, m->dir);
	mutex_unlock(&b->lock);
	return 0;
}

static int fcvm_end_cpu(struct dma_buf *dmabuf, enum dma_data_direction dir)
{
	struct fcvm_buf *b = dmabuf->priv;
	struct fcvm_map *m;

	mutex_lock(&b->lock);
	list_for_each_entry(m, &b->maps, node)
		dma_sync_sgtable_for_device(m->dev, &m->sgt, m->dir);
	mutex_unlock(&b->lock);
	return 0;
}

static void fcvm_free(struct fcvm_buf *b)
{
	unsigned long i;

	for (i = 0; i < b->npages; i++)
		if (b->pages[i])
			__free_page(b->pages[i]);
	kvfree(b->pages);
	kfree(b);
}

static void fcvm_release(struct dma_buf *dmabuf)
{
	fcvm_free(dmabuf->priv);
	atomic_dec(&live_bufs);
}

static int fcvm_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct fcvm_buf *b = dmabuf->priv;

	return vm_map_pages(vma, b->pages, b->npages);
}

static const struct dma_buf_ops fcvm_ops = {
	.attach = fcvm_attach,
	.detach = fcvm_detach,
	.map_dma_buf = fcvm_map,
	.unmap_dma_buf = fcvm_unmap,
	.release = fcvm_release,
	.mmap = fcvm_mmap,
	.begin_cpu_access = fcvm_begin_cpu,
	.end_cpu_access = fcvm_end_cpu,
};

static long fcvm_create(void __user *arg)
{
	struct fcvm_dmabuf_create __user *uarg = arg;
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct fcvm_dmabuf_create c;
	struct dma_buf *dmabuf;
	struct fcvm_buf *b;
	unsigned long i;
	int fd, ret;

	if (copy_from_user(&c, arg, sizeof(c)))
		return -EFAULT;
	if (c.reserved || c.fd || !c.size || !PAGE_ALIGNED(c.size) ||
	    c.size > FCVM_MAX_SIZE)
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->npages = c.size >> PAGE_SHIFT;
	mutex_init(&b->lock);
	INIT_LIST_HEAD(&b->maps);
	b->pages = kvcalloc(b->npages, sizeof(*b->pages), GFP_KERNEL);
	if (!b->pages) {
		kfree(b);
		return -ENOMEM;
	}
	for (i = 0; i < b->npages; i++) {
		b->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!b->pages[i]) {
			fcvm_free(b);
			return -ENOMEM;
		}
	}
	info.ops = &fcvm_ops;
	info.size = c.size;
	info.flags = O_RDWR;
	info.priv = b;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		fcvm_free(b);
		return PTR_ERR(dmabuf);
	}
	atomic_inc(&live_bufs);
	fd = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	ret = put_user(fd, &uarg->fd);
	/* The fd stays installed; the caller closes it on -EFAULT. */
	return ret;
}

static long fcvm_revoke(void __user *arg)
{
	struct fcvm_dmabuf_revoke r;
	struct dma_buf *dmabuf;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	if (r.reserved)
		return -EINVAL;
	dmabuf = dma_buf_get(r.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (dmabuf->ops != &fcvm_ops) {
		dma_buf_put(dmabuf);
		return -EINVAL;
	}
	dma_resv_lock(dmabuf->resv, NULL);
	dma_buf_move_notify(dmabuf);
	dma_resv_unlock(dmabuf->resv);
	dma_buf_put(dmabuf);
	return 0;
}

/* ---- The fixture as an importer (IMPORT, REMAP) ---- */

static struct miscdevice fcvm_misc;

/* An open file's import: a dynamic attachment and its current mapping. */
struct fcvm_imp {
	struct mutex lock;
	struct dma_buf *dmabuf;		/* NULL: none yet */
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;		/* NULL: unmapped */
};

static void fcvm_imp_move(struct dma_buf_attachment *attach)
{
	atomic_inc(&moves);
}

static const struct dma_buf_attach_ops fcvm_imp_ops = {
	.allow_peer2peer = true,
	.move_notify = fcvm_imp_move,
};

/* Map the attachment again, dropping the old mapping. Under imp->lock. */
static int fcvm_imp_map(struct fcvm_imp *imp, u64 *addr)
{
	struct sg_table *sgt;

	dma_resv_lock(imp->dmabuf->resv, NULL);
	if (imp->sgt)
		dma_buf_unmap_attachment(imp->attach, imp->sgt,
					 DMA_BIDIRECTIONAL);
	imp->sgt = NULL;
	sgt = dma_buf_map_attachment(imp->attach, DMA_BIDIRECTIONAL);
	if (!IS_ERR(sgt))
		imp->sgt = sgt;
	dma_resv_unlock(imp->dmabuf->resv);
	if (IS_ERR(sgt))
		return PTR_ERR(sgt);
	*addr = sg_dma_address(sgt->sgl);
	return 0;
}

static long fcvm_import(struct fcvm_imp *imp, unsigned int cmd,
			void __user *arg)
{
	struct fcvm_dmabuf_import a;
	struct dma_buf *dmabuf;
	long ret;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.reserved || a.addr || (cmd == FCVM_DMABUF_REMAP && a.fd))
		return -EINVAL;
	mutex_lock(&imp->lock);
	ret = -EINVAL;
	if (cmd == FCVM_DMABUF_REMAP && !imp->attach)
		goto out;
	if (cmd == FCVM_DMABUF_IMPORT) {
		if (imp->attach)
			goto out;
		dmabuf = dma_buf_get(a.fd);
		ret = PTR_ERR(dmabuf);
		if (IS_ERR(dmabuf))
			goto out;
		imp->attach = dma_buf_dynamic_attach(dmabuf,
						     fcvm_misc.this_device,
						     &fcvm_imp_ops, imp);
		if (IS_ERR(imp->attach)) {
			ret = PTR_ERR(imp->attach);
			imp->attach = NULL;
			dma_buf_put(dmabuf);
			goto out;
		}
		imp->dmabuf = dmabuf;
	}
	ret = fcvm_imp_map(imp, &a.addr);
	if (!ret && copy_to_user(arg, &a, sizeof(a)))
		ret = -EFAULT;
out:
	mutex_unlock(&imp->lock);
	return ret;
}

static int fcvm_open(struct inode *inode, struct file *file)
{
	struct fcvm_imp *imp = kzalloc(sizeof(*imp), GFP_KERNEL);

	if (!imp)
		return -ENOMEM;
	mutex_init(&imp->lock);
	file->private_data = imp;
	return 0;
}

static int fcvm_release_file(struct inode *inode, struct file *file)
{
	struct fcvm_imp *imp = file->private_data;

	if (imp->attach) {
		dma_resv_lock(imp->dmabuf->resv, NULL);
		if (imp->sgt)
			dma_buf_unmap_attachment(imp->attach, imp->sgt,
						 DMA_BIDIRECTIONAL);
		dma_resv_unlock(imp->dmabuf->resv);
		dma_buf_detach(imp->dmabuf, imp->attach);
		dma_buf_put(imp->dmabuf);
	}
	kfree(imp);
	return 0;
}

static long fcvm_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case FCVM_DMABUF_CREATE:
		return fcvm_create((void __user *)arg);
	case FCVM_DMABUF_REVOKE:
		return fcvm_revoke((void __user *)arg);
	case FCVM_DMABUF_IMPORT:
	case FCVM_DMABUF_REMAP:
		return fcvm_import(file->private_data, cmd,
				   (void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations fcvm_fops = {
	.owner = THIS_MODULE,
	.open = fcvm_open,
	.release = fcvm_release_file,
	.unlocked_ioctl = fcvm_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice fcvm_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "fcvm_dmabuf",
	.fops = &fcvm_fops,
	.mode = 0666,
};

/* The device the fixture imports with: direct DMA, no IOMMU in the VM. */
static int __init fcvm_init(void)
{
	struct device *dev;
	int ret;

	ret = misc_register(&fcvm_misc);
	if (ret)
		return ret;
	dev = fcvm_misc.this_device;
	dev->dma_mask = &dev->coherent_dma_mask;
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		misc_deregister(&fcvm_misc);
	return ret;
}

static void __exit fcvm_exit(void)
{
	misc_deregister(&fcvm_misc);
}

module_init(fcvm_init);
module_exit(fcvm_exit);

MODULE_DESCRIPTION("fpgacomm test VM fixture: kernel pages as dma-bufs");
MODULE_LICENSE("GPL");
