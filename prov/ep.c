// SPDX-License-Identifier: MIT
/*
 * Endpoints (FI_EP_RDM): a tag endpoint of the library on a port of its
 * own (fc_tag_open), bound to an address vector, completion queues and
 * counters. Its address is (this board's rank, the port). Progress turns
 * the library's completions into CQ entries and counter steps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>

#include "fcp.h"

#define POLL_BATCH 16

static void dispatch(struct fcp_ep *ep, const struct fc_tag_cqe *c)
{
	bool send = c->flags & FC_TAG_CQE_SEND;
	struct fcp_cq *cq = send ? ep->txcq : ep->rxcq;
	struct fcp_cqe e;

	fcp_cntr_inc(send ? ep->send_cntr : ep->recv_cntr, c->status != 0);
	if (!cq || (!c->status && (c->uflags & FCP_UF_NOCQ)))
		return;
	memset(&e, 0, sizeof(e));
	e.e.op_context = c->ctx;
	e.e.flags = (send ? FI_SEND : FI_RECV) |
		    (c->uflags & FCP_UF_TAGGED ? FI_TAGGED : FI_MSG);
	e.e.len = c->len;
	if (!send) {
		if (c->flags & FC_TAG_CQE_DATA) {
			e.e.flags |= FI_REMOTE_CQ_DATA;
			e.e.data = c->data;
		}
		if (c->uflags & FCP_UF_TAGGED)
			e.e.tag = c->tag;
		e.src = fcp_av_reverse(ep->av, c->node, c->port);
	} else {
		e.src = FI_ADDR_NOTAVAIL;
	}
	/* a send's -EMSGSIZE is its own size, not a cut-off receive */
	e.err = send && c->status == -EMSGSIZE ? FI_EMSGSIZE :
						 fcp_errno(c->status);
	e.prov_errno = c->status;
	e.olen = c->olen;
	fcp_cq_push(cq, &e);
}

int fcp_ep_progress(struct fcp_ep *ep)
{
	struct fc_tag_cqe c[POLL_BATCH];
	int n, i, total = 0;

	if (!ep->tep)
		return 0;
	do {
		n = fc_tag_poll(ep->tep, c, POLL_BATCH);
		for (i = 0; i < n; i++)
			dispatch(ep, &c[i]);
		total += n > 0 ? n : 0;
	} while (n == POLL_BATCH);
	return total + fcp_rma_progress(ep);
}

/* Take @ep off a CQ's or counter's list of endpoints. */
static void unlist(struct fcp_ep **eps, int *n, struct fcp_ep *ep)
{
	int i;

	for (i = 0; i < *n; i++) {
		if (eps[i] == ep) {
			eps[i] = eps[--*n];
			return;
		}
	}
}

static void cq_unbind(struct fcp_ep *ep, struct fcp_cq *cq)
{
	if (!cq)
		return;
	unlist(cq->eps, &cq->neps, ep);
	cq->refs--;
}

static void cntr_unbind(struct fcp_ep *ep, struct fcp_cntr *c)
{
	if (!c)
		return;
	unlist(c->eps, &c->neps, ep);
	c->refs--;
}

static int ep_close(struct fid *fid)
{
	struct fcp_ep *ep = (struct fcp_ep *)fid;
	struct fcp_domain *d = ep->dom;

	pthread_mutex_lock(&d->lock);
	fcp_progress_remove(d, ep);
	if (ep->tep)
		fc_tag_close(ep->tep);
	fcp_rma_drop(ep);
	/* a CQ bound for both directions is listed once, counted twice */
	if (ep->txcq == ep->rxcq && ep->txcq) {
		cq_unbind(ep, ep->txcq);
		ep->txcq->refs--;
	} else {
		cq_unbind(ep, ep->txcq);
		cq_unbind(ep, ep->rxcq);
	}
	/* a counter bound for several events is listed once, counted each */
	cntr_unbind(ep, ep->send_cntr);
	cntr_unbind(ep, ep->recv_cntr);
	cntr_unbind(ep, ep->write_cntr);
	cntr_unbind(ep, ep->read_cntr);
	if (ep->av)
		ep->av->refs--;
	d->refs--;
	pthread_mutex_unlock(&d->lock);
	free(ep);
	return 0;
}

static bool listed(struct fcp_ep **eps, int n, struct fcp_ep *ep)
{
	for (int i = 0; i < n; i++)
		if (eps[i] == ep)
			return true;
	return false;
}

static int bind_cq(struct fcp_ep *ep, struct fcp_cq *cq, uint64_t flags)
{
	if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EBADFLAGS;
	if (((flags & FI_TRANSMIT) && ep->txcq) ||
	    ((flags & FI_RECV) && ep->rxcq))
		return -FI_EINVAL;
	if (!listed(cq->eps, cq->neps, ep)) {
		if (cq->neps == FCP_MAX_CQ_EPS)
			return -FI_ENOSPC;
		cq->eps[cq->neps++] = ep;
	}
	if (flags & FI_TRANSMIT) {
		ep->txcq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		cq->refs++;
	}
	if (flags & FI_RECV) {
		ep->rxcq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		cq->refs++;
	}
	return 0;
}

static int bind_cntr(struct fcp_ep *ep, struct fcp_cntr *c, uint64_t flags)
{
	if (flags & ~(FI_SEND | FI_RECV | FI_WRITE | FI_READ))
		return -FI_EBADFLAGS; /* remote writes and reads are not seen */
	if (!listed(c->eps, c->neps, ep)) {
		if (c->neps == FCP_MAX_CQ_EPS)
			return -FI_ENOSPC;
		c->eps[c->neps++] = ep;
	}
	if (flags & FI_SEND) {
		ep->send_cntr = c;
		c->refs++;
	}
	if (flags & FI_RECV) {
		ep->recv_cntr = c;
		c->refs++;
	}
	if (flags & FI_WRITE) {
		ep->write_cntr = c;
		c->refs++;
	}
	if (flags & FI_READ) {
		ep->read_cntr = c;
		c->refs++;
	}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct fcp_ep *ep = (struct fcp_ep *)fid;
	int ret = 0;

	if (!bfid)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		if (ep->av) {
			ret = -FI_EINVAL;
			break;
		}
		ep->av = (struct fcp_av *)bfid;
		ep->av->refs++;
		break;
	case FI_CLASS_CQ:
		ret = bind_cq(ep, (struct fcp_cq *)bfid, flags);
		break;
	case FI_CLASS_CNTR:
		ret = bind_cntr(ep, (struct fcp_cntr *)bfid, flags);
		break;
	case FI_CLASS_EQ:
		break; /* no connections: no events */
	default:
		ret = -FI_ENOSYS;
		break;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct fcp_ep *ep = (struct fcp_ep *)fid;
	uint64_t *flags = arg;

	switch (command) {
	case FI_ENABLE:
		if (!ep->av)
			return -FI_ENOAV;
		if (!ep->txcq || !ep->rxcq)
			return -FI_ENOCQ;
		pthread_mutex_lock(&ep->dom->lock);
		ep->enabled = true;
		fcp_progress_add(ep->dom, ep);
		pthread_mutex_unlock(&ep->dom->lock);
		return 0;
	case FI_GETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		*flags = *flags & FI_TRANSMIT ? ep->tx_op_flags :
						ep->rx_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if (*flags & FI_TRANSMIT)
			ep->tx_op_flags = *flags & ~FI_TRANSMIT;
		else
			ep->rx_op_flags = *flags & ~FI_RECV;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = fcp_no_ops_open,
};

static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct fcp_ep *ep = (struct fcp_ep *)fid;
	int ret;

	pthread_mutex_lock(&ep->dom->lock);
	ret = fc_tag_cancel(ep->tep, context);
	pthread_mutex_unlock(&ep->dom->lock);
	return ret == -ENOENT ? -FI_ENOENT : ret;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval,
		     size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static int no_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		  struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t size_left(struct fid_ep *ep)
{
	return FCP_QUEUE_SIZE; /* the library queues without bound */
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = no_ctx,
	.rx_ctx = no_rx_ctx,
	.rx_size_left = size_left,
	.tx_size_left = size_left,
};

static int cm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct fcp_ep *ep = (struct fcp_ep *)fid;
	struct fcp_addr a = { ep->dom->world.rank, ep->port };
	size_t len;

	if (!addrlen)
		return -FI_EINVAL;
	len = *addrlen;
	*addrlen = sizeof(a);
	if (len < sizeof(a))
		return -FI_ETOOSMALL;
	memcpy(addr, &a, sizeof(a));
	return 0;
}

static int cm_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

static int cm_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int cm_connect(struct fid_ep *ep, const void *addr, const void *param,
		      size_t paramlen)
{
	return -FI_ENOSYS;
}

static int cm_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int cm_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int cm_reject(struct fid_pep *pep, fid_t handle, const void *param,
		     size_t paramlen)
{
	return -FI_ENOSYS;
}

static int cm_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int cm_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		   struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = cm_setname,
	.getname = cm_getname,
	.getpeer = cm_getpeer,
	.connect = cm_connect,
	.listen = cm_listen,
	.accept = cm_accept,
	.reject = cm_reject,
	.shutdown = cm_shutdown,
	.join = cm_join,
};

/* The board has no atomic operations: the checks say so; the rest are
 * never reached by a caller that asked for what fi_getinfo offers. */
static int no_atomic(struct fid_ep *ep, enum fi_datatype datatype,
		     enum fi_op op, size_t *count)
{
	return -FI_EOPNOTSUPP;
}

static struct fi_ops_atomic no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.writevalid = no_atomic,
	.readwritevalid = no_atomic,
	.compwritevalid = no_atomic,
};

/* A port for a new endpoint: the one @info's source address names, else
 * the first free one from FPGACOMM_FI_PORT (default 0) on. */
static int open_port(struct fcp_domain *d, const struct fi_info *info,
		     struct fcp_ep *ep)
{
	const struct fcp_addr *src = info ? info->src_addr : NULL;
	const char *env = getenv("FPGACOMM_FI_PORT");
	uint32_t port;
	int ret = -EBUSY;

	if (src && info->src_addrlen == sizeof(*src) &&
	    src->node == d->world.rank) {
		ep->port = src->port;
		return fc_tag_open(d->dev, src->port, 0, &ep->tep);
	}
	port = d->next_port;
	if (!port && env && *env)
		port = (uint32_t)strtoul(env, NULL, 0);
	for (; port < FC_CHAN_PORTS && ret == -EBUSY; port++)
		ret = fc_tag_open(d->dev, port, 0, &ep->tep);
	if (ret)
		return ret;
	ep->port = port - 1;
	d->next_port = port;
	return 0;
}

int fcp_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **fep, void *context)
{
	struct fcp_domain *d = (struct fcp_domain *)domain;
	struct fcp_ep *ep;
	int ret;

	if (!fep)
		return -FI_EINVAL;
	if (info && info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->dom = d;
	pthread_mutex_lock(&d->lock);
	ret = open_port(d, info, ep);
	if (!ret)
		d->refs++;
	pthread_mutex_unlock(&d->lock);
	if (ret) {
		free(ep);
		return ret;
	}
	if (info)
		ep->directed =
			(info->rx_attr ? info->rx_attr->caps : info->caps) &
			FI_DIRECTED_RECV;
	if (info && info->tx_attr)
		ep->tx_op_flags = info->tx_attr->op_flags;
	if (info && info->rx_attr)
		ep->rx_op_flags = info->rx_attr->op_flags;
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &ep_fi_ops;
	ep->ep.ops = &ep_ops;
	ep->ep.cm = &cm_ops;
	ep->ep.msg = &fcp_msg_ops;
	ep->ep.tagged = &fcp_tagged_ops;
	ep->ep.rma = &fcp_rma_ops;
	ep->ep.atomic = &no_atomic_ops;
	*fep = &ep->ep;
	return 0;
}
