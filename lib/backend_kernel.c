// SPDX-License-Identifier: MIT
/*
 * The kernel backend: a board behind fpgacomm.ko, reached through the ioctls
 * of <uapi/fpgacomm.h> on /dev/fpgacommN. The driver pins memory and builds
 * the descriptors; this file only translates the library's calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <uapi/fpgacomm.h>

#include "internal.h"

/* What the library needs from the driver. */
#define REQUIRED_FEATURES	(FC_FEAT_DMA | FC_FEAT_MEM_REGISTER | FC_FEAT_REG)

struct kdev {
	int fd;
	struct fc_ioc_info info;
};

static struct kdev *kdev_of(struct fc_dev *dev)
{
	return dev->be_priv;
}

/* The one place a system call's failure becomes a -errno. */
static int k_ioctl(struct kdev *k, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(k->fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

static int kernel_open(struct fc_dev *dev, const char *path)
{
	struct kdev *k;
	int ret;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->fd = open(path, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		ret = -errno;
		goto err_free;
	}
	ret = k_ioctl(k, FC_IOC_INFO, &k->info);
	if (ret == -ENOTTY || ret == -EINVAL)
		ret = -ENODEV;	/* some other device: not one of ours */
	if (ret)
		goto err_close;
	/* An older or newer ABI than ours, or a driver lacking what we use. */
	if (k->info.abi_version != FC_ABI_VERSION ||
	    (k->info.features & REQUIRED_FEATURES) != REQUIRED_FEATURES) {
		ret = -EPROTO;
		goto err_close;
	}
	dev->be_priv = k;
	dev->info.numa_node = k->info.numa_node;
	dev->info.max_xfer_len = k->info.max_xfer_len;
	return 0;

err_close:
	close(k->fd);
err_free:
	free(k);
	return ret;
}

static void kernel_close(struct fc_dev *dev)
{
	struct kdev *k = kdev_of(dev);

	close(k->fd);
	free(k);
}

static int kernel_reg_read(struct fc_dev *dev, uint32_t off, uint32_t *val)
{
	struct fc_ioc_reg r = { .offset = off };
	int ret = k_ioctl(kdev_of(dev), FC_IOC_REG_READ, &r);

	if (!ret)
		*val = r.value;
	return ret;
}

static int kernel_reg_write(struct fc_dev *dev, uint32_t off, uint32_t val)
{
	struct fc_ioc_reg r = { .offset = off, .value = val };

	return k_ioctl(kdev_of(dev), FC_IOC_REG_WRITE, &r);
}

static int kernel_mem_map(struct fc_dev *dev, struct fc__mem *mem)
{
	struct fc_ioc_mem m = {
		.addr = (uintptr_t)mem->pub.addr,
		.len = mem->pub.len,
	};
	int ret = k_ioctl(kdev_of(dev), FC_IOC_MEM_REGISTER, &m);

	if (!ret)
		mem->handle = m.handle;
	return ret;
}

static void kernel_mem_unmap(struct fc_dev *dev, struct fc__mem *mem)
{
	struct fc_ioc_mem m = { .handle = (uint32_t)mem->handle };

	k_ioctl(kdev_of(dev), FC_IOC_MEM_UNREGISTER, &m);
}

static void to_ioc_loc(struct fc_dev *dev, const struct fc_loc *loc,
		       struct fc_ioc_loc *out)
{
	out->space = loc->space;
	out->handle = 0;
	out->addr = loc->addr;
	if (loc->space == FC_SPACE_HOST)
		out->handle = (uint32_t)fc__mem_find(dev, loc->mem)->handle;
}

static int kernel_submit(struct fc_dev *dev, const struct fc_xfer *xfers,
			 unsigned int n, uint64_t *ticket)
{
	struct fc_ioc_xfer x[FC_MAX_CHAIN];
	struct fc_ioc_submit s = {
		.count = n,
		.xfers = (uintptr_t)x,
	};
	unsigned int i;
	int ret;

	memset(x, 0, n * sizeof(x[0]));
	for (i = 0; i < n; i++) {
		/* The driver's ABI has no flag for it yet. */
		if (xfers[i].flags & FC_XFER_F_MORE)
			return -EOPNOTSUPP;
		to_ioc_loc(dev, &xfers[i].src, &x[i].src);
		to_ioc_loc(dev, &xfers[i].dst, &x[i].dst);
		x[i].len = xfers[i].len;
	}
	ret = k_ioctl(kdev_of(dev), FC_IOC_SUBMIT, &s);
	if (!ret)
		*ticket = s.ticket;
	return ret;
}

static int kernel_wait(struct fc_dev *dev, uint64_t ticket, int timeout_ms,
		       struct fc_dma_result *res)
{
	struct fc_ioc_wait w = { .ticket = ticket, .timeout_ms = timeout_ms };
	int ret = k_ioctl(kdev_of(dev), FC_IOC_WAIT, &w);

	if (ret)
		return ret;
	memset(res, 0, sizeof(*res));
	res->status = w.status;
	res->hw_error = w.hw_error;
	res->hw_index = w.hw_index;
	return 0;
}

static int kernel_poll(struct fc_dev *dev, uint64_t ticket,
		       struct fc_dma_result *res, uint64_t *moved)
{
	int ret = kernel_wait(dev, ticket, 0, res);

	*moved = 0;	/* the board moves data on its own */
	return ret == -ETIMEDOUT ? -EINPROGRESS : ret;
}

static int kernel_reset(struct fc_dev *dev)
{
	struct fc_ioc_reset r = { 0 };

	return k_ioctl(kdev_of(dev), FC_IOC_RESET, &r);
}

const struct fc__backend fc__kernel_backend = {
	.name = "kernel",
	.open = kernel_open,
	.close = kernel_close,
	.reg_read = kernel_reg_read,
	.reg_write = kernel_reg_write,
	.mem_map = kernel_mem_map,
	.mem_unmap = kernel_mem_unmap,
	.submit = kernel_submit,
	.poll = kernel_poll,
	.wait = kernel_wait,
	.reset = kernel_reset,
};
