// SPDX-License-Identifier: GPL-2.0
/*
 * The PIO send window (hw.h FC_PIO_*): its two pages of BAR0 mapped for one
 * file at a time, which writes channel packets there itself, and the kick
 * that tells a board behind ivshmem that PIO_TAIL moved. The board checks
 * every packet and writes its own source into it, so mapping these pages
 * gives a user nothing a SUBMIT to a channel address would not.
 *
 * fork(): the mapping is VM_DONTCOPY (fc_mmap_io()), so a child never has
 * the window, and the process that mapped it stays PIO_TAIL's only writer;
 * the library refuses a handle in a child that inherited it (-EBADFD).
 */
#include <linux/fs.h>
#include <linux/uaccess.h>

#include "fc.h"

/* Two pages of their own in BAR0, as the contract places them. */
static_assert(FC_PIO_WINDOW == FC_PIO_BASE + 0x1000);
static_assert(FC_PIO_SLOTS * FC_PKT_SIZE == 0x1000);

bool fc_pio_offered(const struct fc_dev *fc)
{
	return (fc->caps & FC_CAP_PIO_SEND) && PAGE_SIZE == 0x1000;
}

int fc_pio_window(const struct fc_dev *fc, u64 off, phys_addr_t *phys,
		  u64 *left)
{
	if (!fc_pio_offered(fc) || off < FC_MMAP_PIO ||
	    off - FC_MMAP_PIO >= FC_MMAP_PIO_SIZE)
		return -EINVAL;
	off -= FC_MMAP_PIO;
	*phys = fc->regs_phys + FC_PIO_BASE + off;
	*left = FC_MMAP_PIO_SIZE - off;
	return 0;
}

/* The pages go to @ff unless another file holds them. Under mmap_lock. */
int fc_pio_claim(struct fc_file *ff)
{
	struct fc_dev *fc = ff->fc;

	lockdep_assert_held(&fc->mmap_lock);
	if (!fc_pio_offered(fc))
		return -EINVAL;
	if (fc->pio_owner && fc->pio_owner != ff)
		return -EBUSY;
	fc->pio_owner = ff;
	return 0;
}

/* At close: every mapping of @ff is gone (each held the file). */
void fc_pio_release_file(struct fc_file *ff)
{
	struct fc_dev *fc = ff->fc;

	mutex_lock(&fc->mmap_lock);
	if (fc->pio_owner == ff)
		fc->pio_owner = NULL;
	mutex_unlock(&fc->mmap_lock);
}

long fc_ioctl_pio_kick(struct fc_file *ff, void __user *arg)
{
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_pio_kick k;

	if (copy_from_user(&k, arg, sizeof(k)))
		return -EFAULT;
	if (k.flags || k.reserved0 || k.reserved[0])
		return -EINVAL;
	if (!fc_pio_offered(fc))
		return -EOPNOTSUPP;
	if (READ_ONCE(fc->pio_owner) != ff)
		return -EACCES;
	fc_ring(fc);
	return 0;
}
