// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: dma-bufs imported as peer regions (PEER_IMPORT). Another
 * device's memory (a GPU's, another board's aperture, a driver's pages)
 * arrives as a dma-buf file descriptor; the driver attaches to it as a
 * dynamic importer that allows peer-to-peer where the board can do it
 * (FC_CAP_PEER_MAP), pins it, maps it for the board and keeps the bus
 * addresses of the requested range as a handle like a registered buffer's:
 * SUBMIT builds FC_SPACE_HOST descriptors from them (hw.h, FC_REGION_PEER).
 *
 * Locking: the dma-buf's reservation (dma_resv) is taken around attach,
 * pin, map and their undoing, and the exporter holds it when it calls
 * move_notify. move_notify takes fc->lock (fc_dma_revoke()) and, through
 * fc->win_revoke_mem, win_lock (fc_window.c); nothing of ours takes the
 * reservation under either. A region's last reference may
 * go where the reservation is held (a chain freed by move_notify), so its
 * teardown always runs from a work item of our own queue, which module
 * exit and board removal flush.
 */
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "fc.h"

MODULE_IMPORT_NS(DMA_BUF);

/*
 * Peer regions one file may hold at a time. Each costs kernel memory (the
 * attachment, its mapping, the handle) that no rlimit counts, since the
 * pages are the exporter's: without a bound one file could make a million.
 */
unsigned int fc_param_max_imports = 1024;
module_param_named(max_imports, fc_param_max_imports, uint, 0644);
MODULE_PARM_DESC(max_imports,
		 "PEER_IMPORT regions one open file may hold (-EMFILE beyond)");

struct fc_peer {
	struct fc_mem *mem;		/* the handle's memory (no reference) */
	struct dma_buf *dmabuf;		/* referenced */
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;		/* the exporter's mapping, whole */
	bool pinned;
	struct work_struct free_work;
};

static struct workqueue_struct *fc_peer_wq;

/*
 * The exporter moves or revokes the memory, reservation held: stop every
 * transfer that names it. The mapping stays until the teardown; the
 * region is unusable (SUBMIT -ENOLINK) until its handle is released, and
 * the peer window's entries that map it are revoked (win_revoke_mem).
 */
static void fc_peer_move_notify(struct dma_buf_attachment *attach)
{
	struct fc_peer *p = attach->importer_priv;
	struct fc_dev *fc = p->mem->fc;

	dev_dbg(&fc->pdev->dev, "peer region revoked by its exporter\n");
	fc_dma_revoke(fc, p->mem);
	if (fc->win_revoke_mem)
		fc->win_revoke_mem(fc, p->mem);
}

static const struct dma_buf_attach_ops fc_peer_p2p_ops = {
	.allow_peer2peer = true,
	.move_notify = fc_peer_move_notify,
};

static const struct dma_buf_attach_ops fc_peer_ops = {
	.allow_peer2peer = false,
	.move_notify = fc_peer_move_notify,
};

/* Undo the attach (work item: the reservation may be taken here). */
static void fc_peer_free_work(struct work_struct *work)
{
	struct fc_peer *p = container_of(work, struct fc_peer, free_work);
	struct fc_mem *m = p->mem;
	struct dma_buf *dmabuf = p->dmabuf;

	if (p->attach) {
		dma_resv_lock(dmabuf->resv, NULL);
		if (p->sgt)
			dma_buf_unmap_attachment(p->attach, p->sgt,
						 DMA_BIDIRECTIONAL);
		if (p->pinned)
			dma_buf_unpin(p->attach);
		dma_resv_unlock(dmabuf->resv);
		dma_buf_detach(dmabuf, p->attach);
	}
	dma_buf_put(dmabuf);
	sg_free_table(&m->sgt.sgt);
	put_device(&m->fc->dev);
	kfree(m);
	kfree(p);
}

/* The region's last reference went (fc_mem_free()). */
static void fc_peer_release(struct fc_mem *m)
{
	queue_work(fc_peer_wq, &m->peer->free_work);
}

/*
 * Keep in m->sgt.sgt the DMA segments of @whole that cover [off, off +
 * len): bus addresses only, no pages (the exporter's may have none).
 */
static int fc_peer_trim(struct fc_mem *m, struct sg_table *whole, u64 off,
			u64 len)
{
	struct scatterlist *sg, *out;
	unsigned int i, n = 0;
	u64 pos = 0, end = off + len;
	int ret;

	for_each_sgtable_dma_sg(whole, sg, i) {
		u64 s = pos, e = pos + sg_dma_len(sg);

		pos = e;
		if (e > off && s < end)
			n++;
	}
	if (pos < end)
		return -ERANGE;	/* the mapping is shorter than the dma-buf */
	ret = sg_alloc_table(&m->sgt.sgt, n, GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	out = m->sgt.sgt.sgl;
	pos = 0;
	for_each_sgtable_dma_sg(whole, sg, i) {
		u64 s = pos, e = pos + sg_dma_len(sg);
		u64 from = max(s, off), to = min(e, end);

		pos = e;
		if (from >= to)
			continue;
		sg_dma_address(out) = sg_dma_address(sg) + (from - s);
		sg_dma_len(out) = to - from;
		out = sg_next(out);
	}
	m->sgt.sgt.nents = n;
	return 0;
}

/* Attach, pin and map @p's dma-buf for the board. */
static int fc_peer_map(struct fc_dev *fc, struct fc_peer *p)
{
	const struct dma_buf_attach_ops *ops =
		fc->caps & FC_CAP_PEER_MAP ? &fc_peer_p2p_ops : &fc_peer_ops;
	struct dma_buf *dmabuf = p->dmabuf;
	struct sg_table *sgt;
	long left;
	int ret;

	p->attach = dma_buf_dynamic_attach(dmabuf, &fc->pdev->dev, ops, p);
	if (IS_ERR(p->attach)) {
		ret = PTR_ERR(p->attach);
		p->attach = NULL;
		return ret;
	}
	dma_resv_lock(dmabuf->resv, NULL);
	/* The board cannot take a page fault: the memory must stay put. */
	ret = dma_buf_pin(p->attach);
	if (ret)
		goto out_unlock;
	p->pinned = true;
	sgt = dma_buf_map_attachment(p->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto out_unlock;
	}
	p->sgt = sgt;
	/* Moves the exporter started before the pin must be over. */
	left = dma_resv_wait_timeout(dmabuf->resv, DMA_RESV_USAGE_KERNEL,
				     false, MAX_SCHEDULE_TIMEOUT);
	ret = left < 0 ? left : 0;
out_unlock:
	dma_resv_unlock(dmabuf->resv);
	return ret;
}

/* Count a new region of @ff against max_imports. */
static int fc_peer_reserve(struct fc_file *ff)
{
	if (atomic_inc_return(&ff->peer_imports) >
	    READ_ONCE(fc_param_max_imports)) {
		atomic_dec(&ff->peer_imports);
		return -EMFILE;
	}
	return 0;
}

/*
 * A peer region of @fc for bytes [@off, @off + @len) of @dmabuf, which it
 * takes over (put on error).
 */
static int fc_peer_new(struct fc_dev *fc, struct dma_buf *dmabuf, u64 off,
		       u64 len, struct fc_mem **out)
{
	struct fc_peer *p;
	struct fc_mem *m;
	int ret;

	m = fc_mem_new(fc);
	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!m || !p) {
		kfree(m);
		kfree(p);
		if (m)
			put_device(&fc->dev);
		dma_buf_put(dmabuf);
		return -ENOMEM;
	}
	p->mem = m;
	p->dmabuf = dmabuf;
	INIT_WORK(&p->free_work, fc_peer_free_work);
	m->peer = p;
	m->release = fc_peer_release;
	m->len = len;
	/* From here on the last fc_mem_put() undoes everything. */
	ret = fc_peer_map(fc, p);
	if (!ret)
		ret = fc_peer_trim(m, p->sgt, off, len);
	if (ret) {
		fc_mem_put(m);
		return ret;
	}
	*out = m;
	return 0;
}

long fc_ioctl_peer_import(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_peer_import __user *uarg = arg;
	struct fc_ioc_peer_import a;
	struct dma_buf *dmabuf;
	struct fc_mem *m;
	u32 handle;
	int ret;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.handle || a.reserved0 || a.reserved[0] ||
	    a.reserved[1])
		return -EINVAL;
	if (!a.len || !PAGE_ALIGNED(a.offset) || !PAGE_ALIGNED(a.len))
		return -EINVAL;
	ret = fc_peer_reserve(ff);
	if (ret)
		return ret;
	dmabuf = dma_buf_get(a.fd);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto err_unreserve;
	}
	if (a.offset >= dmabuf->size || a.len > dmabuf->size - a.offset) {
		dma_buf_put(dmabuf);
		ret = -ERANGE;
		goto err_unreserve;
	}
	ret = fc_peer_new(ff->fc, dmabuf, a.offset, a.len, &m);
	if (ret)
		goto err_unreserve;
	ret = fc_mem_publish_handle(ff, m, &handle);
	if (ret)
		goto err_unreserve;
	/* The handle holds the count now: MEM_UNREGISTER gives it back. */
	if (put_user(handle, &uarg->handle)) {
		ret = -EFAULT;
		m = xa_erase(&ff->mems, handle);
		if (!m)
			return ret;	/* MEM_UNREGISTER took it, and the count */
		fc_mem_put(m);
		goto err_unreserve;
	}
	return 0;

err_unreserve:
	atomic_dec(&ff->peer_imports);
	return ret;
}

/* Wait for the teardown of every region released so far. */
void fc_peer_flush(void)
{
	flush_workqueue(fc_peer_wq);
}

int fc_peer_init(void)
{
	fc_peer_wq = alloc_workqueue("fpgacomm-peer", WQ_UNBOUND, 0);
	return fc_peer_wq ? 0 : -ENOMEM;
}

void fc_peer_exit(void)
{
	destroy_workqueue(fc_peer_wq);
}
