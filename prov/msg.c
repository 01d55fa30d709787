// SPDX-License-Identifier: MIT
/*
 * FI_MSG and FI_TAGGED operations: the library's tagged messages. Untagged
 * messages go in the endpoint's second matching space (FC_TAG_F_SPACE1),
 * so that they never meet a tagged receive. A source address narrows a
 * receive to that endpoint, rank and port (directed receive);
 * FI_ADDR_UNSPEC takes any.
 */
#include <errno.h>
#include <string.h>

#include "fcp.h"

#define TX_FLAGS                                                              \
	(FI_INJECT | FI_COMPLETION | FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE | \
	 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_MORE | FI_FENCE)
#define RX_FLAGS (FI_COMPLETION | FI_PEEK | FI_CLAIM | FI_DISCARD | FI_MORE)

static ssize_t lib_err(int ret)
{
	return ret == -EMSGSIZE ? -FI_EMSGSIZE : ret;
}

static ssize_t do_send(struct fcp_ep *ep, const void *buf, size_t len,
		       fi_addr_t dest, uint64_t tag, uint64_t data,
		       uint64_t flags, void *ctx, bool tagged)
{
	unsigned int f = tagged ? 0 : FC_TAG_F_SPACE1;
	uint32_t uf = tagged ? FCP_UF_TAGGED : 0;
	struct fcp_addr a;
	int ret;

	if (flags & ~TX_FLAGS)
		return -FI_EBADFLAGS;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if ((flags & FI_INJECT) && len > FC_TAG_INJECT_MAX)
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		f |= FC_TAG_F_DATA;
	/* an injected send is copied at once and ends without an entry
	 * (counters still count it) */
	if ((flags & FI_INJECT) ||
	    (ep->tx_selective && !(flags & FI_COMPLETION)))
		uf |= FCP_UF_NOCQ;
	pthread_mutex_lock(&ep->dom->lock);
	ret = fcp_av_lookup_addr(ep->av, dest, &a);
	if (!ret)
		ret = fc_tag_send(ep->tep, a.node, a.port, buf, len, tag, data,
				  f, ctx, uf);
	pthread_mutex_unlock(&ep->dom->lock);
	return lib_err(ret);
}

/* A CQ entry now: a peek's answer. */
static void peek_entry(struct fcp_ep *ep, const struct fc_tag_cqe *info,
		       void *ctx, int status)
{
	struct fcp_cqe e;

	if (!ep->rxcq)
		return;
	memset(&e, 0, sizeof(e));
	e.e.op_context = ctx;
	e.e.flags = FI_RECV | FI_TAGGED;
	e.src = FI_ADDR_NOTAVAIL;
	if (!status) {
		e.e.len = info->len;
		e.e.tag = info->tag;
		if (info->flags & FC_TAG_CQE_DATA) {
			e.e.flags |= FI_REMOTE_CQ_DATA;
			e.e.data = info->data;
		}
		e.src = fcp_av_reverse(ep->av, info->node, info->port);
	}
	e.err = status ? FI_ENOMSG : 0;
	e.prov_errno = status;
	fcp_cq_push(ep->rxcq, &e);
}

static ssize_t do_peek(struct fcp_ep *ep, const struct fcp_addr *src,
		       uint64_t tag, uint64_t ignore, uint64_t flags, void *ctx)
{
	struct fi_context *fc = ctx;
	struct fc_tag_msg *msg = NULL;
	struct fc_tag_cqe info;
	bool claim = flags & (FI_CLAIM | FI_DISCARD);
	int ret;

	if (claim && !ctx)
		return -FI_EINVAL;
	ret = fc_tag_probe_from(ep->tep, src->node, src->port, tag, ignore,
				claim ? FC_TAG_F_CLAIM : 0, &info, &msg);
	if (ret == -ENOMSG) {
		peek_entry(ep, &info, ctx, -ENOMSG);
		return 0;
	}
	if (ret)
		return ret;
	if (flags & FI_DISCARD) /* its completion says it is gone */
		return fc_tag_recv_msg(ep->tep, msg, NULL, 0, ctx,
				       FCP_UF_TAGGED);
	if (flags & FI_CLAIM)
		fc->internal[0] = msg; /* for the FI_CLAIM receive */
	peek_entry(ep, &info, ctx, 0);
	return 0;
}

static ssize_t do_recv(struct fcp_ep *ep, void *buf, size_t len, fi_addr_t src,
		       uint64_t tag, uint64_t ignore, uint64_t flags, void *ctx,
		       bool tagged)
{
	struct fcp_addr a = { FC_TAG_ANY_NODE, FC_TAG_ANY_PORT };
	uint32_t uf = tagged ? FCP_UF_TAGGED : 0;
	int ret = 0;

	if (flags & ~RX_FLAGS)
		return -FI_EBADFLAGS;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!tagged && (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)))
		return -FI_EBADFLAGS;
	if (ep->rx_selective && !(flags & FI_COMPLETION))
		uf |= FCP_UF_NOCQ;
	pthread_mutex_lock(&ep->dom->lock);
	/* without FI_DIRECTED_RECV, src_addr is not looked at */
	if (src != FI_ADDR_UNSPEC && ep->directed)
		ret = fcp_av_lookup_addr(ep->av, src, &a);
	if (ret)
		goto out_unlock;
	if (flags & FI_PEEK) {
		ret = do_peek(ep, &a, tag, ignore, flags, ctx);
	} else if (flags & FI_CLAIM) {
		struct fi_context *fc = ctx;

		if (!fc || !fc->internal[0]) {
			ret = -FI_EINVAL;
			goto out_unlock;
		}
		ret = fc_tag_recv_msg(ep->tep, fc->internal[0],
				      flags & FI_DISCARD ? NULL : buf,
				      flags & FI_DISCARD ? 0 : len, ctx, uf);
		if (!ret)
			fc->internal[0] = NULL;
	} else if (tagged) {
		ret = fc_tag_recv_from(ep->tep, a.node, a.port, buf, len, tag,
				       ignore, 0, ctx, uf);
	} else {
		ret = fc_tag_recv_from(ep->tep, a.node, a.port, buf, len, 0, 0,
				       FC_TAG_F_SPACE1, ctx, uf);
	}
out_unlock:
	pthread_mutex_unlock(&ep->dom->lock);
	return lib_err(ret);
}

/* One iov at most (iov_limit 1). */
static int one_iov(const struct iovec *iov, size_t count, void **buf,
		   size_t *len)
{
	if (count > 1 || (count && !iov))
		return -FI_EINVAL;
	*buf = count ? iov->iov_base : NULL;
	*len = count ? iov->iov_len : 0;
	return 0;
}

#define EP(fep) ((struct fcp_ep *)(fep))

/* ---- FI_MSG ---- */

static ssize_t m_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, void *ctx)
{
	return do_recv(EP(ep), buf, len, src, 0, 0, EP(ep)->rx_op_flags, ctx,
		       false);
}

static ssize_t m_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t src, void *ctx)
{
	size_t len;
	void *buf;
	int ret = one_iov(iov, count, &buf, &len);

	return ret ? ret : m_recv(ep, buf, len, NULL, src, ctx);
}

static ssize_t m_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags)
{
	size_t len;
	void *buf;
	int ret;

	if (!msg)
		return -FI_EINVAL;
	ret = one_iov(msg->msg_iov, msg->iov_count, &buf, &len);
	return ret ? ret :
		     do_recv(EP(ep), buf, len, msg->addr, 0, 0, flags,
			     msg->context, false);
}

static ssize_t m_send(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, void *ctx)
{
	return do_send(EP(ep), buf, len, dest, 0, 0,
		       EP(ep)->tx_op_flags & ~FI_INJECT, ctx, false);
}

static ssize_t m_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t dest, void *ctx)
{
	size_t len;
	void *buf;
	int ret = one_iov(iov, count, &buf, &len);

	return ret ? ret : m_send(ep, buf, len, NULL, dest, ctx);
}

static ssize_t m_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags)
{
	size_t len;
	void *buf;
	int ret;

	if (!msg)
		return -FI_EINVAL;
	ret = one_iov(msg->msg_iov, msg->iov_count, &buf, &len);
	return ret ? ret :
		     do_send(EP(ep), buf, len, msg->addr, 0, msg->data, flags,
			     msg->context, false);
}

static ssize_t m_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest)
{
	return do_send(EP(ep), buf, len, dest, 0, 0, FI_INJECT, NULL, false);
}

static ssize_t m_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest, void *ctx)
{
	return do_send(EP(ep), buf, len, dest, 0, data,
		       (EP(ep)->tx_op_flags & ~FI_INJECT) | FI_REMOTE_CQ_DATA,
		       ctx, false);
}

static ssize_t m_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest)
{
	return do_send(EP(ep), buf, len, dest, 0, data,
		       FI_INJECT | FI_REMOTE_CQ_DATA, NULL, false);
}

struct fi_ops_msg fcp_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = m_recv,
	.recvv = m_recvv,
	.recvmsg = m_recvmsg,
	.send = m_send,
	.sendv = m_sendv,
	.sendmsg = m_sendmsg,
	.inject = m_inject,
	.senddata = m_senddata,
	.injectdata = m_injectdata,
};

/* ---- FI_TAGGED ---- */

static ssize_t t_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	return do_recv(EP(ep), buf, len, src, tag, ignore,
		       EP(ep)->rx_op_flags & ~(FI_PEEK | FI_CLAIM | FI_DISCARD),
		       ctx, true);
}

static ssize_t t_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t src, uint64_t tag,
		       uint64_t ignore, void *ctx)
{
	size_t len;
	void *buf;
	int ret = one_iov(iov, count, &buf, &len);

	return ret ? ret : t_recv(ep, buf, len, NULL, src, tag, ignore, ctx);
}

static ssize_t t_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			 uint64_t flags)
{
	size_t len;
	void *buf;
	int ret;

	if (!msg)
		return -FI_EINVAL;
	ret = one_iov(msg->msg_iov, msg->iov_count, &buf, &len);
	return ret ? ret :
		     do_recv(EP(ep), buf, len, msg->addr, msg->tag, msg->ignore,
			     flags, msg->context, true);
}

static ssize_t t_send(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, uint64_t tag, void *ctx)
{
	return do_send(EP(ep), buf, len, dest, tag, 0,
		       EP(ep)->tx_op_flags & ~FI_INJECT, ctx, true);
}

static ssize_t t_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t dest, uint64_t tag, void *ctx)
{
	size_t len;
	void *buf;
	int ret = one_iov(iov, count, &buf, &len);

	return ret ? ret : t_send(ep, buf, len, NULL, dest, tag, ctx);
}

static ssize_t t_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			 uint64_t flags)
{
	size_t len;
	void *buf;
	int ret;

	if (!msg)
		return -FI_EINVAL;
	ret = one_iov(msg->msg_iov, msg->iov_count, &buf, &len);
	return ret ? ret :
		     do_send(EP(ep), buf, len, msg->addr, msg->tag, msg->data,
			     flags, msg->context, true);
}

static ssize_t t_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest, uint64_t tag)
{
	return do_send(EP(ep), buf, len, dest, tag, 0, FI_INJECT, NULL, true);
}

static ssize_t t_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest,
			  uint64_t tag, void *ctx)
{
	return do_send(EP(ep), buf, len, dest, tag, data,
		       (EP(ep)->tx_op_flags & ~FI_INJECT) | FI_REMOTE_CQ_DATA,
		       ctx, true);
}

static ssize_t t_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest, uint64_t tag)
{
	return do_send(EP(ep), buf, len, dest, tag, data,
		       FI_INJECT | FI_REMOTE_CQ_DATA, NULL, true);
}

struct fi_ops_tagged fcp_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = t_recv,
	.recvv = t_recvv,
	.recvmsg = t_recvmsg,
	.send = t_send,
	.sendv = t_sendv,
	.sendmsg = t_sendmsg,
	.inject = t_inject,
	.senddata = t_senddata,
	.injectdata = t_injectdata,
};
