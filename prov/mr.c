// SPDX-License-Identifier: MIT
/*
 * Memory registration: the buffer registered with the board
 * (fc_mem_register). Its key is what a peer's remote write or read needs
 * to reach it: the buffer's fabric address (node, region, bus address),
 * less the buffer's virtual address with FI_MR_VIRT_ADDR, so that the
 * initiator adds the address it was given (or the offset into the region
 * without it), and the access granted, which the initiator's provider
 * checks. The board does not check keys of host memory: a peer that knows
 * a key reaches any buffer registered on that board (docs/libfabric.md).
 */
#include <stdlib.h>

#include "fcp.h"

static int mr_close(struct fid *fid)
{
	struct fcp_mr *mr = (struct fcp_mr *)fid;
	struct fcp_domain *d = mr->dom;
	int ret;

	pthread_mutex_lock(&d->lock);
	ret = fc_mem_free(d->dev, mr->mem);
	if (!ret)
		d->refs--;
	pthread_mutex_unlock(&d->lock);
	if (ret)
		return ret == -EBUSY ? -FI_EBUSY : ret;
	free(mr);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = fcp_no_bind,
	.control = fcp_no_control,
	.ops_open = fcp_no_ops_open,
};

/* What a peer needs to reach [buf, ...) and what it may do (fcp.h). */
static uint64_t mr_key(const struct fcp_domain *d, uint64_t fa, const void *buf,
		       uint64_t access)
{
	uint64_t key;

	if (!(access & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return 0; /* no remote access: not a key */
	key = d->mr_mode & FI_MR_VIRT_ADDR ? fa - (uint64_t)buf : fa;
	key = (key & FCP_KEY_ADDR_MASK) | FCP_KEY_VALID;
	if (access & FI_REMOTE_READ)
		key |= FCP_KEY_READ;
	if (access & FI_REMOTE_WRITE)
		key |= FCP_KEY_WRITE;
	return key;
}

/* Host memory (fc_mem_register) or, with @cuda, GPU memory imported. */
static int mr_make(struct fid *fid, const void *buf, size_t len,
		   uint64_t access, uint64_t flags, bool cuda,
		   struct fid_mr **fmr, void *context)
{
	struct fcp_domain *d = (struct fcp_domain *)fid;
	struct fcp_mr *mr;
	uint64_t fa = 0;
	int ret;

	if (!fmr || !len || !buf)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	pthread_mutex_lock(&d->lock);
	if (cuda)
		ret = fc_peer_import_cuda(d->dev, (uint64_t)(uintptr_t)buf, len,
					  0, &mr->mem);
	else
		ret = fc_mem_register(d->dev, (void *)buf, len, 0, &mr->mem);
	if (!ret && (access & (FI_REMOTE_WRITE | FI_REMOTE_READ)))
		ret = fc_mem_fabric_addr(d->dev, mr->mem, 0, &fa);
	if (ret && mr->mem)
		fc_mem_free(d->dev, mr->mem);
	if (!ret)
		d->refs++;
	pthread_mutex_unlock(&d->lock);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->dom = d;
	mr->base = buf;
	mr->len = len;
	mr->cuda = cuda;
	mr->mr.fid.fclass = FI_CLASS_MR;
	mr->mr.fid.context = context;
	mr->mr.fid.ops = &mr_fi_ops;
	mr->mr.mem_desc = mr;
	mr->mr.key = mr_key(d, fa, buf, access);
	*fmr = &mr->mr;
	return 0;
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		  uint64_t offset, uint64_t requested_key, uint64_t flags,
		  struct fid_mr **fmr, void *context)
{
	return mr_make(fid, buf, len, access, flags, false, fmr, context);
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		   uint64_t access, uint64_t offset, uint64_t requested_key,
		   uint64_t flags, struct fid_mr **mr, void *context)
{
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return mr_reg(fid, iov->iov_base, iov->iov_len, access, offset,
		      requested_key, flags, mr, context);
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		      uint64_t flags, struct fid_mr **mr)
{
	if (!attr || attr->iov_count != 1)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM && attr->iface != FI_HMEM_CUDA)
		return -FI_EOPNOTSUPP;
	if (!attr->mr_iov)
		return -FI_EINVAL;
	/* the pointer names its device: attr->device.cuda is not needed */
	return mr_make(fid, attr->mr_iov->iov_base, attr->mr_iov->iov_len,
		       attr->access, flags, attr->iface == FI_HMEM_CUDA, mr,
		       attr->context);
}

struct fi_ops_mr fcp_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};
