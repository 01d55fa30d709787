// SPDX-License-Identifier: MIT
/*
 * Peer memory: another device's memory as a buffer of the board (a
 * dma-buf imported through the driver), the board's own memory as a
 * dma-buf for another device, and CUDA device memory by way of the dma-buf
 * the CUDA driver makes of it, or on an emulated board as a device window
 * (lib/peer/cuda.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The backend maps @m from @fd at @off, or from device memory at @dev_addr. */
static int import_setup(struct fc_dev *dev, struct fc__mem *m, int fd,
			uint64_t off, uint64_t dev_addr)
{
	int ret;

	fc__lock(&dev->lock);
	if (m->device)
		ret = dev->be->peer_import_dev(dev, m, dev_addr);
	else
		ret = dev->be->peer_import(dev, m, fd, off);
	if (!ret) {
		m->next = dev->mems;
		dev->mems = m;
	}
	fc__unlock(&dev->lock);
	return ret;
}

/*
 * Import [off - lead, off + len) of @fd, @off being @lead bytes past a
 * page boundary: the buffer starts at @off.
 */
int fc__peer_import(struct fc_dev *dev, int fd, uint64_t off, size_t len,
		    struct fc_mem **memp)
{
	uint64_t lead = off & (page_size() - 1);
	struct fc__mem *m;
	int ret;

	if (!dev->be->peer_import)
		return -EOPNOTSUPP;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->pub.len = len;
	m->peer = true;
	m->peer_off = lead;
	ret = import_setup(dev, m, fd, off - lead, 0);
	if (ret) {
		free(m);
		return ret;
	}
	*memp = &m->pub;
	return 0;
}

int fc__peer_import_dev(struct fc_dev *dev, uint64_t dev_addr, void *dev_ctx,
			size_t len, struct fc_mem **memp)
{
	struct fc__mem *m;
	int ret;

	if (!dev->be->peer_import_dev)
		return -EOPNOTSUPP;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->pub.len = len;
	m->peer = true;
	m->device = true;
	m->dev_ctx = dev_ctx;
	ret = import_setup(dev, m, -1, 0, dev_addr);
	if (ret) {
		free(m);
		return ret;
	}
	*memp = &m->pub;
	return 0;
}

FC__EXPORT int fc_peer_import(struct fc_dev *dev, int fd, uint64_t off,
			      size_t len, unsigned int flags,
			      struct fc_mem **memp)
{
	if (!dev || !memp || fd < 0 || !len || flags)
		return -EINVAL;
	if (off + len < off)
		return -ERANGE;
	return fc__peer_import(dev, fd, off, len, memp);
}

FC__EXPORT int fc_peer_export(struct fc_dev *dev, uint64_t off, size_t len,
			      unsigned int flags, int *fd)
{
	int ret;

	if (!dev || !fd || !len || flags)
		return -EINVAL;
	if (!dev->be->peer_export)
		return -EOPNOTSUPP;
	fc__lock(&dev->lock);
	ret = dev->be->peer_export(dev, off, len, fd);
	fc__unlock(&dev->lock);
	return ret;
}
