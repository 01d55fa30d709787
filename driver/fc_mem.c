// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: user memory the board may reach. MEM_REGISTER pins a range of
 * the caller's memory (FOLL_LONGTERM, so that fork() copies the pages for
 * the child and the parent keeps the pinned ones), charges it to
 * RLIMIT_MEMLOCK and maps it for DMA; MEM_ALLOC hands out coherent DMA
 * memory to be mmap()ed. SUBMIT pins plain user addresses the same way for
 * the life of one chain. Handles are per file.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "fc.h"

/*
 * The longest scatter-list segment: one descriptor's worth, and no more
 * than the DMA layer can map at once (swiotlb bounces in small slabs).
 */
static unsigned int fc_max_segment(struct fc_dev *fc)
{
	size_t max = dma_max_mapping_size(&fc->pdev->dev);

	return min_t(size_t, FC_DESC_MAX_LEN, max & PAGE_MASK);
}

/* Pages pinned per call, and appended to the scatter list at once. */
#define FC_PIN_CHUNK	512

/*
 * Pages pinned or allocated for DMA go on one counter, mm->pinned_vm,
 * checked against RLIMIT_MEMLOCK (as RDMA's umem does): registrations, the
 * pages of a chain and MEM_ALLOC buffers together, so that no mix of them
 * locks twice the limit. Atomics rather than account_locked_vm(): the last
 * reference may go from munmap, which holds the mmap lock already.
 */
static int fc_mem_charge(struct fc_mem *m, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 now = atomic64_add_return(npages, &current->mm->pinned_vm);

	if (now > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &current->mm->pinned_vm);
		return -ENOMEM;
	}
	m->npages = npages;
	m->mm = current->mm;
	mmgrab(m->mm);
	return 0;
}

static void fc_mem_uncharge(struct fc_mem *m)
{
	if (!m->mm)
		return;
	atomic64_sub(m->npages, &m->mm->pinned_vm);
	mmdrop(m->mm);
	m->mm = NULL;
	m->npages = 0;
}

static void fc_mem_unpin(struct fc_mem *m)
{
	struct sg_page_iter piter;
	struct page *page;

	for_each_sgtable_page(&m->sgt.sgt, &piter, 0) {
		page = sg_page_iter_page(&piter);
		unpin_user_pages_dirty_lock(&page, 1, m->dirty);
	}
}

/*
 * Does a mapping need dma_sync_*() calls (swiotlb bounce buffers, a
 * non-coherent platform)? Not on coherent x86 without bouncing, where a
 * chain's syncs are then skipped altogether.
 */
static bool fc_mem_need_sync(struct device *dev, struct sg_table *sgt)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_dma_sg(sgt, sg, i)
		if (dma_need_sync(dev, sg_dma_address(sg)))
			return true;
	return false;
}

static void fc_mem_free(struct kref *ref)
{
	struct fc_mem *m = container_of(ref, struct fc_mem, ref);
	struct fc_dev *fc = m->fc;
	struct device *dev = &fc->pdev->dev;

	if (m->peer) {
		m->release(m);	/* frees m, later */
		return;
	} else if (m->alloc) {
		/* Unless the board's removal freed it already. */
		mutex_lock(&fc->alloc_lock);
		list_del_init(&m->alloc_node);
		if (m->cpu)
			dma_free_coherent(dev, m->alloc_len, m->cpu, m->dma);
		m->cpu = NULL;
		mutex_unlock(&fc->alloc_lock);
		fc_mem_uncharge(m);
	} else {
		if (m->mapped)
			dma_unmap_sgtable(dev, &m->sgt.sgt, m->dir, 0);
		fc_mem_unpin(m);
		sg_free_append_table(&m->sgt);
		fc_mem_uncharge(m);
	}
	put_device(&m->fc->dev);
	kfree(m);
}

void fc_mem_put(struct fc_mem *m)
{
	if (m)
		kref_put(&m->ref, fc_mem_free);
}

struct fc_mem *fc_mem_new(struct fc_dev *fc)
{
	struct fc_mem *m = kzalloc(sizeof(*m), GFP_KERNEL_ACCOUNT);

	if (!m)
		return NULL;
	kref_init(&m->ref);
	m->fc = fc;
	INIT_LIST_HEAD(&m->alloc_node);
	get_device(&fc->dev);
	return m;
}

/*
 * Pin [addr, addr + len) of the current process and map it for DMA. The
 * pinning goes in chunks, so that no array of all the pages is needed and
 * there is no size limit but RLIMIT_MEMLOCK (CAP_IPC_LOCK bypasses it).
 * @write: the board may write it (FOLL_WRITE); a registration is long-term.
 */
static int fc_mem_pin_flags(struct fc_dev *fc, u64 addr, u64 len,
			    bool write, bool longterm, struct fc_mem **out)
{
	unsigned int gup = (write ? FOLL_WRITE : 0) |
			   (longterm ? FOLL_LONGTERM : 0);
	unsigned long start, npages, done = 0;
	unsigned int offset;
	struct page **pages;
	struct fc_mem *m;
	u64 left = len;
	int ret;

	if (!len || addr + len < addr)
		return -EINVAL;
	if (addr > TASK_SIZE_MAX || len > TASK_SIZE_MAX - addr)
		return -EFAULT;
	if (!access_ok(u64_to_user_ptr(addr), len))
		return -EFAULT;
	start = addr & PAGE_MASK;
	offset = offset_in_page(addr);
	npages = (PAGE_ALIGN(addr + len) - start) >> PAGE_SHIFT;

	m = fc_mem_new(fc);
	if (!m)
		return -ENOMEM;
	m->len = len;
	m->dirty = write;
	m->dir = write ? (longterm ? DMA_BIDIRECTIONAL : DMA_FROM_DEVICE) :
		 DMA_TO_DEVICE;

	pages = kmalloc_array(FC_PIN_CHUNK, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages) {
		ret = -ENOMEM;
		goto err_put;
	}

	ret = fc_mem_charge(m, npages);
	if (ret)
		goto err_free_pages;

	while (done < npages) {
		int want = min_t(unsigned long, npages - done, FC_PIN_CHUNK);
		unsigned long bytes;
		int got;

		got = pin_user_pages_fast(start + (done << PAGE_SHIFT), want,
					  gup, pages);
		if (got <= 0) {
			ret = got ? got : -EFAULT;
			goto err_free_pages;
		}
		bytes = min_t(u64, left, ((unsigned long)got << PAGE_SHIFT) -
				   offset);
		ret = sg_alloc_append_table_from_pages(&m->sgt, pages, got,
						       offset, bytes,
						       fc_max_segment(m->fc),
						       npages - done - got,
						       GFP_KERNEL_ACCOUNT);
		if (ret) {
			unpin_user_pages(pages, got);
			goto err_free_pages;
		}
		done += got;
		left -= bytes;
		offset = 0;
		cond_resched();
	}
	kfree(pages);
	pages = NULL;

	ret = dma_map_sgtable(&fc->pdev->dev, &m->sgt.sgt, m->dir, 0);
	if (ret)
		goto err_put;
	m->mapped = true;
	/*
	 * A registration stays mapped (bidirectional) across many chains,
	 * each of which syncs it; a pin for one chain is mapped for it.
	 */
	m->need_sync = longterm && fc_mem_need_sync(&fc->pdev->dev,
						    &m->sgt.sgt);
	*out = m;
	return 0;

err_free_pages:
	kfree(pages);
err_put:
	m->dirty = false;
	fc_mem_put(m);
	return ret;
}

int fc_mem_pin(struct fc_dev *fc, u64 addr, u64 len, bool write,
	       struct fc_mem **out)
{
	return fc_mem_pin_flags(fc, addr, len, write, false, out);
}

static struct fc_mem *fc_mem_lookup_kind(struct fc_file *ff, u32 handle,
					 bool alloc_only)
{
	struct fc_mem *m;

	xa_lock(&ff->mems);
	m = xa_load(&ff->mems, handle);
	if (m && alloc_only && !m->alloc)
		m = NULL;
	if (m)
		kref_get(&m->ref);
	xa_unlock(&ff->mems);
	return m;
}

struct fc_mem *fc_mem_lookup(struct fc_file *ff, u32 handle)
{
	return fc_mem_lookup_kind(ff, handle, false);
}

/*
 * The MEM_ALLOC buffer @handle of @ff, holding [@offset, @offset + @bytes),
 * for something the board writes by one bus address (a receive ring, the
 * event queue): contiguous memory only. A reference on *@out.
 * RETURN VALUE: 0; -EINVAL (no such buffer, or not contiguous); -ERANGE.
 */
int fc_mem_get_span(struct fc_file *ff, u32 handle, u64 offset, u64 bytes,
		    struct fc_mem **out)
{
	struct fc_mem *m = fc_mem_lookup(ff, handle);

	if (!m)
		return -EINVAL;
	if (!m->alloc) {
		fc_mem_put(m);
		return -EINVAL;
	}
	if (offset > m->len || bytes > m->len - offset) {
		fc_mem_put(m);
		return -ERANGE;
	}
	*out = m;
	return 0;
}

/* Copies in the argument of a MEM_* ioctl and checks its unused fields. */
static int fc_mem_get_arg(struct fc_ioc_mem *a, void __user *arg)
{
	if (copy_from_user(a, arg, sizeof(*a)))
		return -EFAULT;
	if (a->flags || a->reserved[0] || a->reserved[1])
		return -EINVAL;
	return 0;
}

/* A new handle for @m, which it takes over (dropped on error). */
int fc_mem_publish_handle(struct fc_file *ff, struct fc_mem *m, u32 *handle)
{
	int ret;

	ret = xa_alloc(&ff->mems, handle, m, XA_LIMIT(1, FC_MAX_HANDLE),
		       GFP_KERNEL_ACCOUNT);
	if (ret) {
		fc_mem_put(m);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	return 0;
}

static long fc_mem_publish(struct fc_file *ff, struct fc_mem *m,
			   struct fc_ioc_mem *a, void __user *arg)
{
	u32 handle;
	int ret;

	ret = fc_mem_publish_handle(ff, m, &handle);
	if (ret)
		return ret;
	a->handle = handle;
	if (m->alloc)
		a->mmap_offset = FC_MMAP_ALLOC_BASE +
				 ((u64)handle << FC_MMAP_ALLOC_SHIFT);
	if (copy_to_user(arg, a, sizeof(*a))) {
		m = xa_erase(&ff->mems, handle);
		fc_mem_put(m);
		return -EFAULT;
	}
	return 0;
}

long fc_ioctl_mem_register(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_mem a;
	struct fc_mem *m;
	int ret;

	ret = fc_mem_get_arg(&a, arg);
	if (ret)
		return ret;
	if (a.mmap_offset)
		return -EINVAL;
	ret = fc_mem_pin_flags(ff->fc, a.addr, a.len, true, true, &m);
	if (ret)
		return ret;
	return fc_mem_publish(ff, m, &a, arg);
}

/* Driver-allocated buffers count on the same counter as pinned pages. */
static int fc_mem_charge_alloc(struct fc_mem *m)
{
	return fc_mem_charge(m, m->alloc_len >> PAGE_SHIFT);
}

static void fc_mem_uncharge_alloc(struct fc_mem *m)
{
	fc_mem_uncharge(m);
}

long fc_ioctl_mem_alloc(struct fc_file *ff, void __user *arg)
{
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_mem a;
	struct fc_mem *m;
	int ret;

	ret = fc_mem_get_arg(&a, arg);
	if (ret)
		return ret;
	if (a.addr || a.mmap_offset || !a.len)
		return -EINVAL;
	if (a.len > FC_ALLOC_MAX_LEN)
		return -ENOMEM;

	m = fc_mem_new(fc);
	if (!m)
		return -ENOMEM;
	m->alloc = true;
	m->len = a.len;
	m->alloc_len = PAGE_ALIGN(a.len);
	ret = fc_mem_charge_alloc(m);
	if (ret) {
		m->alloc = false;
		fc_mem_put(m);
		return ret;
	}
	m->cpu = dma_alloc_coherent(&fc->pdev->dev, m->alloc_len, &m->dma,
				    GFP_KERNEL | __GFP_NOWARN);
	if (!m->cpu) {
		fc_mem_uncharge_alloc(m);
		m->alloc = false;
		fc_mem_put(m);
		return -ENOMEM;
	}
	/* No removal meanwhile: ioctls hold it off. */
	mutex_lock(&fc->alloc_lock);
	list_add(&m->alloc_node, &fc->allocs);
	mutex_unlock(&fc->alloc_lock);
	return fc_mem_publish(ff, m, &a, arg);
}

long fc_ioctl_mem_unregister(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_mem a;
	struct fc_mem *m;
	int ret;

	ret = fc_mem_get_arg(&a, arg);
	if (ret)
		return ret;
	if (a.addr || a.len || a.mmap_offset || !a.handle)
		return -EINVAL;
	/* Chains using it hold their own references. */
	m = xa_erase(&ff->mems, a.handle);
	if (!m)
		return -EINVAL;
	if (m->peer)		/* its count against max_imports */
		atomic_dec(&ff->peer_imports);
	fc_mem_put(m);
	return 0;
}

long fc_ioctl_mem_info(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_mem_info a;
	struct fc_mem *m;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.len || a.bus_addr || a.out_flags || a.reserved0 ||
	    a.reserved[0] || a.reserved[1])
		return -EINVAL;
	m = fc_mem_lookup(ff, a.handle);
	if (!m)
		return -EINVAL;
	a.len = m->len;
	/* A bus address is only of use to whoever may name one in a chain. */
	if (m->alloc && capable(CAP_SYS_RAWIO)) {
		a.out_flags = FC_MEM_INFO_CONTIG;
		a.bus_addr = m->dma;
	}
	fc_mem_put(m);
	if (copy_to_user(arg, &a, sizeof(a)))
		return -EFAULT;
	return 0;
}

/* A mapping of MEM_ALLOC memory keeps the memory. */
static void fc_alloc_vm_open(struct vm_area_struct *vma)
{
	struct fc_mem *m = vma->vm_private_data;

	kref_get(&m->ref);
}

static void fc_alloc_vm_close(struct vm_area_struct *vma)
{
	fc_mem_put(vma->vm_private_data);
}

/*
 * Every page is mapped at mmap time; a page is missing only once the board
 * was removed, which zapped the mapping and freed the memory.
 */
static vm_fault_t fc_alloc_vm_fault(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct fc_alloc_vm_ops = {
	.open = fc_alloc_vm_open,
	.close = fc_alloc_vm_close,
	.fault = fc_alloc_vm_fault,
};

/* One process that mapped a MEM_ALLOC buffer: fc->mmap_mms. */
struct fc_mm {
	struct list_head node;
	struct mm_struct *mm;		/* mmgrab()bed */
};

/*
 * Note the calling process in fc->mmap_mms (fc->mmap_lock held), and
 * forget those that have exited meanwhile.
 */
static int fc_mmap_note_mm(struct fc_dev *fc)
{
	struct fc_mm *e, *tmp;

	list_for_each_entry_safe(e, tmp, &fc->mmap_mms, node) {
		if (e->mm == current->mm)
			return 0;
		if (!atomic_read(&e->mm->mm_users)) {
			list_del(&e->node);
			mmdrop(e->mm);
			kfree(e);
		}
	}
	e = kmalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;
	e->mm = current->mm;
	mmgrab(e->mm);
	list_add(&e->node, &fc->mmap_mms);
	return 0;
}

/*
 * mmap() of a MEM_ALLOC buffer maps its pages (dma_mmap_coherent()) before
 * the mm links the vma into the file's address_space, which it does after
 * ->mmap returns and before it drops its mmap_lock. Remove zaps mappings
 * through the address_space: first it waits for the mmaps begun before
 * fc->dead was set to be linked, by taking the mmap_lock of every process
 * that mapped such a buffer (@mms, taken off fc->mmap_mms), and drops the
 * list. A process that has exited has no mappings left to race with. The
 * BARs need none of this: their pages go in at fault time, and only while
 * the board is there.
 */
void fc_mmap_settle(struct list_head *mms)
{
	struct fc_mm *e, *tmp;

	list_for_each_entry_safe(e, tmp, mms, node) {
		if (mmget_not_zero(e->mm)) {
			mmap_read_lock(e->mm);
			mmap_read_unlock(e->mm);
			/* Not the exit of an mm here, should it be the last. */
			mmput_async(e->mm);
		}
		list_del(&e->node);
		mmdrop(e->mm);
		kfree(e);
	}
}

int fc_mmap_alloc(struct fc_file *ff, struct vm_area_struct *vma, u64 off)
{
	unsigned long size = vma->vm_end - vma->vm_start;
	u64 rel = off - FC_MMAP_ALLOC_BASE;
	u32 handle = rel >> FC_MMAP_ALLOC_SHIFT;
	u64 in = rel & (FC_ALLOC_MAX_LEN - 1);
	struct fc_mem *m;
	int ret;

	/*
	 * Only MEM_ALLOC buffers: the last reference to a pinned one may be
	 * dropped here, and unpinning takes the mmap lock that we hold.
	 */
	m = fc_mem_lookup_kind(ff, handle, true);
	if (!m)
		return -EINVAL;
	if (in >= m->alloc_len || size > m->alloc_len - in) {
		ret = -EINVAL;
		goto err_put;
	}
	ret = fc_mmap_note_mm(ff->fc);
	if (ret)
		goto err_put;
	vma->vm_pgoff = in >> PAGE_SHIFT;
	ret = dma_mmap_coherent(&ff->fc->pdev->dev, vma, m->cpu, m->dma,
				m->alloc_len);
	if (ret)
		goto err_put;
	fc_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = m;	/* our reference */
	vma->vm_ops = &fc_alloc_vm_ops;
	return 0;

err_put:
	fc_mem_put(m);
	return ret;
}

/*
 * The board is being removed, with bus mastering off: free the coherent
 * memory of the MEM_ALLOC buffers that mappings still hold (their last
 * reference would go at munmap, after the remove).
 *
 * Keeping the struct device referenced until then (as each fc_mem does)
 * would keep the structure, not what dma_free_coherent() needs from it:
 * once the device is gone from the bus it has left its IOMMU group
 * (iommu_release_device()), and 6.1's iommu_dma_free() reaches the domain
 * to unmap from through dev->iommu_group, then NULL; the DMA API expects
 * a driver to have freed a device's DMA memory before it is unbound. So
 * the memory goes here, while the device is still bound, after
 * fc_dma_kill() zapped every user mapping of it (fc_mmap_settle() made
 * sure none escapes): the vmas stay, without pages, and a touch gets
 * SIGBUS (fc_alloc_vm_fault()).
 */
void fc_mem_kill_allocs(struct fc_dev *fc)
{
	struct fc_mem *m, *tmp;

	mutex_lock(&fc->alloc_lock);
	list_for_each_entry_safe(m, tmp, &fc->allocs, alloc_node) {
		dma_free_coherent(&fc->pdev->dev, m->alloc_len, m->cpu, m->dma);
		m->cpu = NULL;
		list_del_init(&m->alloc_node);
	}
	mutex_unlock(&fc->alloc_lock);
}

/* Drop every handle of a file (close, or the board went away). */
void fc_mem_release_all(struct fc_file *ff)
{
	struct fc_mem *m;
	unsigned long i;

	xa_for_each(&ff->mems, i, m) {
		m = xa_erase(&ff->mems, i);
		fc_mem_put(m);
	}
}
