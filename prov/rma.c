// SPDX-License-Identifier: MIT
/*
 * FI_RMA: remote writes (fc_iput) to and reads (fc_iget, the board's read
 * requests) from a peer's registered buffer, named by its key (mr.c) plus
 * the address or offset given. Neither is seen by the target's library,
 * so there is no remote CQ data or remote counter for them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <fpgacomm/hw.h>

#include "fcp.h"

#define WR_FLAGS                                          \
	(FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE | \
	 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_MORE | FI_FENCE)
#define RD_FLAGS (FI_COMPLETION | FI_MORE | FI_FENCE)

static void rma_end(struct fcp_ep *ep, struct fcp_rma *r, int status)
{
	struct fcp_cqe e;

	if (r->own)
		fc_mem_free(ep->dom->dev, r->own);
	fcp_cntr_inc(r->read ? ep->read_cntr : ep->write_cntr, status != 0);
	if (ep->txcq && (status || !(r->uflags & FCP_UF_NOCQ))) {
		memset(&e, 0, sizeof(e));
		e.e.op_context = r->ctx;
		e.e.flags = FI_RMA | (r->read ? FI_READ : FI_WRITE);
		e.e.len = status ? 0 : r->len;
		e.src = FI_ADDR_NOTAVAIL;
		e.err = fcp_errno(status);
		e.prov_errno = status;
		fcp_cq_push(ep->txcq, &e);
	}
	free(r);
}

int fcp_rma_progress(struct fcp_ep *ep)
{
	struct fcp_rma **pp = &ep->rma, *r;
	int n = 0, st;

	while ((r = *pp)) {
		st = r->req ? fc_req_test(r->req, NULL) : 0;
		if (st == -EINPROGRESS) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		rma_end(ep, r, st);
		n++;
	}
	return n;
}

void fcp_rma_drop(struct fcp_ep *ep)
{
	struct fcp_rma *r, *next;

	for (r = ep->rma; r; r = next) {
		next = r->next;
		/* one the board has begun is waited for: it uses @own */
		if (r->req && fc_req_cancel(r->req) == -EBUSY)
			fc_req_wait(r->req, -1, NULL);
		if (r->own)
			fc_mem_free(ep->dom->dev, r->own);
		free(r);
	}
	ep->rma = NULL;
}

/*
 * The fabric address @key and @addr name at the peer @dest, if the key
 * grants @need (FCP_KEY_READ or _WRITE) and names that peer's board.
 * RETURN VALUE: 0, -FI_EINVAL (not a key, another board, a bad @dest),
 * -FI_EACCES (the owner did not grant it).
 */
static int rma_target(struct fcp_ep *ep, fi_addr_t dest, uint64_t addr,
		      uint64_t key, uint64_t need, uint64_t *fa)
{
	struct fcp_addr a;
	int ret;

	ret = fcp_av_lookup_addr(ep->av, dest, &a);
	if (ret)
		return ret;
	if (!(key & FCP_KEY_VALID))
		return -FI_EINVAL;
	if (!(key & need))
		return -FI_EACCES;
	*fa = (key + addr) & FCP_KEY_ADDR_MASK;
	/* the key names the board it was made on */
	if (FC_FABRIC_NODE(*fa) != a.node)
		return -FI_EINVAL;
	return 0;
}

static ssize_t do_write(struct fcp_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			uint64_t flags, void *ctx)
{
	struct fcp_domain *d = ep->dom;
	struct fcp_mr *mr = desc;
	struct fc_mem *mem = NULL;
	struct fcp_rma *r;
	uint64_t dst = 0, off = 0;
	int ret;

	if (flags & ~WR_FLAGS)
		return -FI_EBADFLAGS;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if ((!buf && len) || ((flags & FI_INJECT) && len > FC_TAG_INJECT_MAX))
		return -FI_EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -FI_ENOMEM;
	r->ctx = ctx;
	r->len = len;
	if ((flags & FI_INJECT) ||
	    (ep->tx_selective && !(flags & FI_COMPLETION)))
		r->uflags = FCP_UF_NOCQ;
	pthread_mutex_lock(&d->lock);
	ret = rma_target(ep, dest, addr, key, FCP_KEY_WRITE, &dst);
	if (ret || !len)
		goto out;
	if (mr && !(flags & FI_INJECT) && fcp_mr_holds(mr, buf, len)) {
		mem = mr->mem;
		off = (uint64_t)((const uint8_t *)buf - mr->base);
	} else if (mr && mr->cuda) {
		ret = -FI_EINVAL; /* GPU memory only through its registration */
	} else if (flags & FI_INJECT) {
		/* @buf is the caller's again once we return */
		ret = fc_mem_alloc(d->dev, len, 0, &r->own);
		if (!ret)
			memcpy(r->own->addr, buf, len);
		mem = r->own;
	} else {
		ret = fc_mem_register(d->dev, (void *)buf, len, 0, &r->own);
		mem = r->own;
	}
	if (!ret)
		ret = fc_iput(d->dev, dst, mem, off, len, &r->req);
out:
	if (ret) {
		if (r->own)
			fc_mem_free(d->dev, r->own);
		free(r);
	} else {
		r->next = ep->rma;
		ep->rma = r;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

/*
 * A read lands in @buf as the board's answers arrive: in the registered
 * buffer @desc names when it holds @buf, else in @buf registered for it.
 */
static ssize_t do_read(struct fcp_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src, uint64_t addr, uint64_t key,
		       uint64_t flags, void *ctx)
{
	struct fcp_domain *d = ep->dom;
	struct fcp_mr *mr = desc;
	struct fc_mem *mem;
	struct fcp_rma *r;
	uint64_t from = 0, off = 0;
	int ret;

	if (flags & ~RD_FLAGS)
		return -FI_EBADFLAGS;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!buf && len)
		return -FI_EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -FI_ENOMEM;
	r->ctx = ctx;
	r->len = len;
	r->read = true;
	if (ep->tx_selective && !(flags & FI_COMPLETION))
		r->uflags = FCP_UF_NOCQ;
	pthread_mutex_lock(&d->lock);
	ret = rma_target(ep, src, addr, key, FCP_KEY_READ, &from);
	if (ret || !len)
		goto out;
	if (mr && fcp_mr_holds(mr, buf, len)) {
		mem = mr->mem;
		off = (uint64_t)((uint8_t *)buf - mr->base);
	} else if (mr && mr->cuda) {
		ret = -FI_EINVAL; /* GPU memory only through its registration */
	} else {
		ret = fc_mem_register(d->dev, buf, len, 0, &r->own);
		mem = r->own;
	}
	if (!ret)
		ret = fc_iget(d->dev, fc_host(mem, off), from, len, &r->req);
out:
	if (ret) {
		if (r->own)
			fc_mem_free(d->dev, r->own);
		free(r);
	} else {
		r->next = ep->rma;
		ep->rma = r;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

#define EP(fep) ((struct fcp_ep *)(fep))

static ssize_t r_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, uint64_t addr, uint64_t key, void *ctx)
{
	return do_read(EP(ep), buf, len, desc, src, addr, key,
		       EP(ep)->tx_op_flags & RD_FLAGS, ctx);
}

static ssize_t r_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t src, uint64_t addr, uint64_t key,
		       void *ctx)
{
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return r_read(ep, iov->iov_base, iov->iov_len, desc ? desc[0] : NULL,
		      src, addr, key, ctx);
}

static ssize_t r_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			 uint64_t flags)
{
	if (!msg || msg->iov_count != 1 || msg->rma_iov_count != 1 ||
	    !msg->msg_iov || !msg->rma_iov)
		return -FI_EINVAL;
	return do_read(EP(ep), msg->msg_iov->iov_base, msg->msg_iov->iov_len,
		       msg->desc ? msg->desc[0] : NULL, msg->addr,
		       msg->rma_iov->addr, msg->rma_iov->key, flags,
		       msg->context);
}

static ssize_t r_write(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
		       void *ctx)
{
	return do_write(EP(ep), buf, len, desc, dest, addr, key,
			EP(ep)->tx_op_flags & ~FI_INJECT & WR_FLAGS, ctx);
}

static ssize_t r_writev(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t dest, uint64_t addr,
			uint64_t key, void *ctx)
{
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return r_write(ep, iov->iov_base, iov->iov_len, desc ? desc[0] : NULL,
		       dest, addr, key, ctx);
}

static ssize_t r_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags)
{
	if (!msg || msg->iov_count != 1 || msg->rma_iov_count != 1)
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_ENOSYS;
	return do_write(EP(ep), msg->msg_iov->iov_base, msg->msg_iov->iov_len,
			msg->desc ? msg->desc[0] : NULL, msg->addr,
			msg->rma_iov->addr, msg->rma_iov->key, flags,
			msg->context);
}

static ssize_t r_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return do_write(EP(ep), buf, len, NULL, dest, addr, key, FI_INJECT,
			NULL);
}

/* The target's library never sees a write: no data to tell it. */
static ssize_t r_writedata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest,
			   uint64_t addr, uint64_t key, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t r_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest, uint64_t addr,
			    uint64_t key)
{
	return -FI_ENOSYS;
}

struct fi_ops_rma fcp_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = r_read,
	.readv = r_readv,
	.readmsg = r_readmsg,
	.write = r_write,
	.writev = r_writev,
	.writemsg = r_writemsg,
	.inject = r_inject,
	.writedata = r_writedata,
	.injectdata = r_injectdata,
};
