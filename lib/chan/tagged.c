// SPDX-License-Identifier: MIT
/*
 * Tagged messages: MPI's matching on top of the channels. An endpoint owns
 * one port and keeps a receive posted on the channel of every rank there
 * (into a buffer of its own, EAGER_BUF bytes): each message starts with a
 * header (tag, data, length, the sender's port). A small message is the
 * header and its payload in one channel message; a larger one is the
 * header alone, then its payload in pieces of at most FC_CHAN_MAX_MSG
 * (less through the driver, piece_max()),
 * each a channel message of its own. On a header, the receives for its
 * pieces are posted on that channel before the header's buffer is posted
 * again, so the channel's order puts each piece where it belongs: into
 * the matching receive's buffer (by rendezvous, straight from the
 * sender's), or into a buffer of ours when nobody asked for it yet.
 *
 * Everything is guarded by the fabric's lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tagged_internal.h"

/* ---- Opening and closing ---- */

FC__EXPORT int fc_tag_open(struct fc_dev *dev, uint32_t port,
			   unsigned int flags, struct fc_tag_ep **epp)
{
	struct fc__fabric *fab;
	struct fc_tag_ep *ep;
	uint32_t node;
	int ret = 0;

	if (!dev || !epp || flags || port >= FC_CHAN_PORTS)
		return -EINVAL;
	fab = dev->fab;
	if (!fab)
		return -ENOTCONN;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	ep->dev = dev;
	ep->fab = fab;
	ep->port = port;
	ep->size = fab->world.size;
	ep->ebuf = malloc((size_t)ep->size * EAGER_BUF);
	if (!ep->ebuf) {
		free(ep);
		return -ENOMEM;
	}
	fc__fab_lock(fab);
	for (node = 0; node < ep->size && !ret; node++) {
		ret = fc__chan_open(dev, node, port, &ep->ch[node]);
		if (!ret)
			ret = fc__tag_eager_post(ep, node);
	}
	fc__fab_unlock(fab);
	if (ret) {
		fc_tag_close(ep);
		return ret;
	}
	*epp = ep;
	return 0;
}

static void free_ops(struct fc_tag_ep *ep, struct op *o)
{
	struct op *next;

	for (; o; o = next) {
		next = o->next;
		fc__tag_pieces_drop(&o->pc);
		fc__tag_op_free(ep, o);
	}
}

FC__EXPORT int fc_tag_close(struct fc_tag_ep *ep)
{
	struct fc_tag_msg *m, *mnext;
	struct fc_chan *chans[FC_MAX_NODES];
	struct op *o, *next;
	uint32_t node, i;

	if (!ep)
		return -EINVAL;
	fc__fab_lock(ep->fab);
	for (node = 0; node < ep->size; node++) {
		if (ep->eager[node] && fc__req_cancel(ep->eager[node]))
			fc__req_orphan(ep->eager[node]);
		ep->eager[node] = NULL;
	}
	free_ops(ep, ep->active);
	free_ops(ep, ep->posted_h);
	free_ops(ep, ep->done_h);
	/* arriving: on the queue, claimed, or taken by a receive */
	for (m = ep->arriving; m; m = mnext) {
		mnext = m->anext;
		fc__tag_pieces_drop(&m->pc);
		m->arriving = false;
		if (m->waiter) {
			fc__tag_op_free(ep, m->waiter);
			fc__tag_msg_free(m);
		}
	}
	for (m = ep->unexp_h; m; m = mnext) {
		mnext = m->next;
		fc__tag_msg_free(m);
	}
	for (m = ep->claimed; m; m = mnext) {
		mnext = m->next;
		fc__tag_msg_free(m);
	}
	fc__fab_unlock(ep->fab);
	memcpy(chans, ep->ch, sizeof(chans));
	for (node = 0; node < ep->size; node++)
		if (chans[node])
			fc_chan_close(chans[node]);
	if (ep->xch) {
		for (i = 0; i < ep->size * FC_CHAN_PORTS; i++)
			if (ep->xch[i])
				fc_chan_close(ep->xch[i]);
		free(ep->xch);
	}
	for (o = ep->cache; o; o = next) {
		next = o->next;
		free(o);
	}
	free(ep->ebuf);
	free(ep);
	return 0;
}

/* ---- Sending ---- */

/*
 * Bytes per piece. Through the driver a channel message is copied into a
 * buffer of the library's and sent as one hardware chain, a descriptor a
 * page where its pages are not contiguous, and a message of more pages
 * than a chain holds is refused (-EMSGSIZE): pieces stay below that. The
 * receiver takes the size from the header.
 */
static uint32_t piece_max(struct fc_dev *dev)
{
	if (!strcmp(dev->info.backend, "kernel"))
		return (FC_DMA_MAX_CHAIN - 1) * 4096u;
	return FC_CHAN_MAX_MSG;
}

/* The channel to (@node, @port): ours, or one of this endpoint's. */
static int chan_for(struct fc_tag_ep *ep, uint32_t node, uint32_t port,
		    struct fc_chan **chp)
{
	struct fc_chan **slot;

	if (port == ep->port) {
		*chp = ep->ch[node];
		return *chp ? 0 : -ENOTCONN;
	}
	if (!ep->xch) {
		ep->xch = calloc((size_t)ep->size * FC_CHAN_PORTS,
				 sizeof(*ep->xch));
		if (!ep->xch)
			return -ENOMEM;
	}
	slot = &ep->xch[(size_t)node * FC_CHAN_PORTS + port];
	if (!*slot) {
		struct fc__src *s = fc__src_get(ep->fab, port, node);

		if (!s)
			return -ENOMEM;
		if (s->chan) { /* another endpoint's: share it */
			*chp = s->chan;
			return 0;
		}
		int ret = fc__chan_open(ep->dev, node, port, slot);

		if (ret)
			return ret;
	}
	*chp = *slot;
	return 0;
}

/* The header @h, then the pieces of @len bytes of @buf, in that order
 * on the channel; the header's request is last in the array. */
static int send_split(struct fc_chan *ch, struct op *o, const struct hdr *h,
		      const uint8_t *buf, uint64_t len)
{
	uint64_t off, piece, max = h->piece;
	unsigned int i;
	int ret;

	memset(&o->pc, 0, sizeof(o->pc));
	o->pc.node = ch->peer;
	o->pc.n = (unsigned int)((len + max - 1) / max) + 1;
	o->pc.reqs = calloc(o->pc.n, sizeof(*o->pc.reqs));
	if (!o->pc.reqs)
		return -ENOMEM;
	ret = fc__isend(ch, h, sizeof(*h), &o->pc.reqs[o->pc.n - 1]);
	if (ret)
		return ret;
	o->pc.left++;
	for (i = 0, off = 0; off < len; off += piece, i++) {
		piece = len - off < max ? len - off : max;
		ret = fc__isend(ch, buf + off, piece, &o->pc.reqs[i]);
		if (ret) {
			/* the header went: the receiver waits for pieces
			 * that never come; said through the completion */
			o->pc.status = ret;
			break;
		}
		o->pc.left++;
	}
	return 0;
}

FC__EXPORT int fc_tag_send(struct fc_tag_ep *ep, uint32_t node, uint32_t port,
			   const void *buf, size_t len, uint64_t tag,
			   uint64_t data, unsigned int flags, void *ctx,
			   uint32_t uflags)
{
	struct fc__bounce *stage = NULL;
	struct fc_chan *ch;
	struct fc_req *r;
	struct op *o;
	struct hdr h;
	int ret;

	if (!ep || (!buf && len) ||
	    (flags & ~(FC_TAG_F_DATA | FC_TAG_F_INJECT | FC_TAG_F_SPACE1)))
		return -EINVAL;
	if (node >= ep->size || port >= FC_CHAN_PORTS)
		return -EINVAL;
	if (len > FC_TAG_MAX_MSG ||
	    ((flags & FC_TAG_F_INJECT) && len > FC_TAG_INJECT_MAX))
		return -EMSGSIZE;
	memset(&h, 0, sizeof(h));
	h.tag = tag;
	h.data = flags & FC_TAG_F_DATA ? data : 0;
	h.len = (uint32_t)len;
	h.port = (uint16_t)ep->port;
	h.flags = (flags & FC_TAG_F_DATA ? HDR_DATA : 0) |
		  (flags & FC_TAG_F_SPACE1 ? HDR_SPACE1 : 0) |
		  (len > EAGER_MAX ? HDR_SPLIT : 0);
	h.magic = HDR_MAGIC;
	h.piece = piece_max(ep->dev);
	if (len && fc__devmem_path(ep->dev, buf) != FC__PATH_HOST) {
		/* device memory: sent from a host copy, made now */
		ret = fc__bounce_get(len, &stage);
		if (!ret)
			ret = fc__devmem_to_host(stage->p, buf, len);
		if (ret) {
			fc__bounce_put(stage);
			return ret;
		}
		buf = stage->p;
	}

	fc__fab_lock(ep->fab);
	ret = fc__peer_check(ep->dev, node);
	if (!ret)
		ret = chan_for(ep, node, port, &ch);
	if (ret)
		goto out_unlock;
	o = fc__tag_op_new(ep);
	if (!o) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	o->send = true;
	o->inject = flags & FC_TAG_F_INJECT;
	o->bounce = stage; /* freed with the op, whatever happens */
	stage = NULL;
	o->cqe.ctx = ctx;
	o->cqe.uflags = uflags;
	o->cqe.flags = FC_TAG_CQE_SEND;
	o->cqe.tag = tag;
	o->cqe.len = len;
	if (!(h.flags & HDR_SPLIT)) {
		/* one channel message, copied by the channel: @buf is free */
		memcpy(ep->sbuf, &h, sizeof(h));
		if (len)
			memcpy(ep->sbuf + sizeof(h), buf, len);
		ret = fc__isend(ch, ep->sbuf, sizeof(h) + len, &r);
		if (ret) {
			fc__tag_op_free(ep, o);
			goto out_unlock;
		}
		if (r->status != -EINPROGRESS) { /* through the PIO window */
			fc__tag_op_done(ep, o, fc__req_test(r, NULL));
			goto out_unlock;
		}
		o->pc.reqs = &o->pc.one;
		o->pc.one = r;
		o->pc.n = o->pc.left = 1;
		o->pc.node = node;
	} else {
		ret = send_split(ch, o, &h, buf, len);
		if (ret) {
			fc__tag_op_free(ep, o);
			goto out_unlock;
		}
	}
	o->next = ep->active;
	ep->active = o;
	fc__tag_progress(ep);
out_unlock:
	fc__fab_unlock(ep->fab);
	fc__bounce_put(stage);
	return ret;
}

/* ---- Receiving ---- */

/* A receive into device memory @buf lands in a bounce buffer of @o's. */
static int recv_stage(struct fc_tag_ep *ep, struct op *o, void *buf, size_t cap)
{
	int ret;

	if (fc__devmem_path(ep->dev, buf) == FC__PATH_HOST)
		return 0;
	ret = fc__bounce_get(cap, &o->bounce);
	if (ret)
		return ret;
	o->buf = o->bounce->p;
	o->dbuf = buf;
	return 0;
}

FC__EXPORT int fc_tag_recv_from(struct fc_tag_ep *ep, uint32_t node,
				uint32_t port, void *buf, size_t cap,
				uint64_t tag, uint64_t ignore,
				unsigned int flags, void *ctx, uint32_t uflags)
{
	struct fc_tag_msg *m;
	struct op *o;

	if (!ep || (!buf && cap) || (flags & ~FC_TAG_F_SPACE1))
		return -EINVAL;
	if (node != FC_TAG_ANY_NODE && node >= ep->size)
		return -EINVAL;
	if (port != FC_TAG_ANY_PORT && port >= FC_CHAN_PORTS)
		return -EINVAL;
	fc__fab_lock(ep->fab);
	o = fc__tag_op_new(ep);
	if (!o) {
		fc__fab_unlock(ep->fab);
		return -ENOMEM;
	}
	o->node = node;
	o->port = port;
	o->tag = tag;
	o->ignore = ignore;
	o->space1 = flags & FC_TAG_F_SPACE1;
	o->buf = buf;
	o->cap = cap;
	o->cqe.ctx = ctx;
	o->cqe.uflags = uflags;
	o->cqe.flags = FC_TAG_CQE_RECV;
	if (recv_stage(ep, o, buf, cap)) {
		fc__tag_op_free(ep, o);
		fc__fab_unlock(ep->fab);
		return -ENOMEM;
	}
	/* what came first and was not taken by a header since */
	fc__tag_take_headers(ep);
	m = fc__tag_unexp_find(ep, node, port, tag, ignore, o->space1, true);
	if (m) {
		fc__tag_msg_deliver(ep, m, o);
	} else {
		o->next = NULL;
		if (ep->posted_t)
			ep->posted_t->next = o;
		else
			ep->posted_h = o;
		ep->posted_t = o;
	}
	fc__fab_unlock(ep->fab);
	return 0;
}

FC__EXPORT int fc_tag_recv(struct fc_tag_ep *ep, uint32_t node, void *buf,
			   size_t cap, uint64_t tag, uint64_t ignore,
			   unsigned int flags, void *ctx, uint32_t uflags)
{
	return fc_tag_recv_from(ep, node, FC_TAG_ANY_PORT, buf, cap, tag,
				ignore, flags, ctx, uflags);
}

static void info_of(const struct fc_tag_msg *m, struct fc_tag_cqe *info)
{
	memset(info, 0, sizeof(*info));
	info->flags = FC_TAG_CQE_RECV |
		      (m->h.flags & HDR_DATA ? FC_TAG_CQE_DATA : 0);
	info->tag = m->h.tag;
	info->data = m->h.flags & HDR_DATA ? m->h.data : 0;
	info->len = m->h.len;
	info->node = m->node;
	info->port = m->h.port;
}

FC__EXPORT int fc_tag_probe_from(struct fc_tag_ep *ep, uint32_t node,
				 uint32_t port, uint64_t tag, uint64_t ignore,
				 unsigned int flags, struct fc_tag_cqe *info,
				 struct fc_tag_msg **msgp)
{
	bool claim = flags & FC_TAG_F_CLAIM;
	struct fc_tag_msg *m;

	if (!ep || !info || (flags & ~(FC_TAG_F_CLAIM | FC_TAG_F_SPACE1)) ||
	    (claim && !msgp))
		return -EINVAL;
	if (node != FC_TAG_ANY_NODE && node >= ep->size)
		return -EINVAL;
	if (port != FC_TAG_ANY_PORT && port >= FC_CHAN_PORTS)
		return -EINVAL;
	fc__fab_lock(ep->fab);
	fc__tag_progress(ep);
	m = fc__tag_unexp_find(ep, node, port, tag, ignore,
			       flags & FC_TAG_F_SPACE1, claim);
	if (m) {
		info_of(m, info);
		if (claim) {
			m->next = ep->claimed;
			ep->claimed = m;
			*msgp = m;
		}
	}
	fc__fab_unlock(ep->fab);
	return m ? 0 : -ENOMSG;
}

FC__EXPORT int fc_tag_probe(struct fc_tag_ep *ep, uint32_t node, uint64_t tag,
			    uint64_t ignore, unsigned int flags,
			    struct fc_tag_cqe *info, struct fc_tag_msg **msgp)
{
	return fc_tag_probe_from(ep, node, FC_TAG_ANY_PORT, tag, ignore, flags,
				 info, msgp);
}

FC__EXPORT int fc_tag_recv_msg(struct fc_tag_ep *ep, struct fc_tag_msg *msg,
			       void *buf, size_t cap, void *ctx,
			       uint32_t uflags)
{
	struct fc_tag_msg **pp;
	struct op *o;

	if (!ep || !msg || (!buf && cap))
		return -EINVAL;
	fc__fab_lock(ep->fab);
	o = fc__tag_op_new(ep);
	if (!o) {
		fc__fab_unlock(ep->fab);
		return -ENOMEM;
	}
	for (pp = &ep->claimed; *pp && *pp != msg; pp = &(*pp)->next)
		;
	if (!*pp) {
		fc__tag_op_free(ep, o);
		fc__fab_unlock(ep->fab);
		return -EINVAL; /* not a claimed message of ours */
	}
	o->buf = buf;
	o->cap = cap;
	o->discard = !buf && !cap;
	if (recv_stage(ep, o, buf, cap)) {
		fc__tag_op_free(ep, o);
		fc__fab_unlock(ep->fab);
		return -ENOMEM; /* the message stays claimed */
	}
	*pp = msg->next;
	msg->next = NULL;
	o->cqe.ctx = ctx;
	o->cqe.uflags = uflags;
	fc__tag_msg_deliver(ep, msg, o);
	fc__fab_unlock(ep->fab);
	return 0;
}

FC__EXPORT int fc_tag_cancel(struct fc_tag_ep *ep, void *ctx)
{
	struct op **pp, *prev = NULL;
	int ret = -ENOENT;

	if (!ep)
		return -EINVAL;
	fc__fab_lock(ep->fab);
	for (pp = &ep->posted_h; *pp; prev = *pp, pp = &(*pp)->next) {
		struct op *o = *pp;

		if (o->cqe.ctx != ctx)
			continue;
		*pp = o->next;
		if (ep->posted_t == o)
			ep->posted_t = prev;
		fc__tag_op_done(ep, o, -ECANCELED);
		ret = 0;
		break;
	}
	fc__fab_unlock(ep->fab);
	return ret;
}

/* ---- Completions ---- */

FC__EXPORT int fc_tag_poll(struct fc_tag_ep *ep, struct fc_tag_cqe *cqe,
			   unsigned int n)
{
	unsigned int got = 0;

	if (!ep || (!cqe && n))
		return -EINVAL;
	fc__fab_lock(ep->fab);
	fc__tag_progress(ep);
	while (got < n && ep->done_h) {
		struct op *o = ep->done_h;

		ep->done_h = o->next;
		if (!ep->done_h)
			ep->done_t = NULL;
		cqe[got++] = o->cqe;
		fc__tag_op_free(ep, o);
	}
	fc__fab_unlock(ep->fab);
	return (int)got;
}

FC__EXPORT int fc_tag_wait(struct fc_tag_ep *ep, int timeout_ms)
{
	uint64_t now, deadline = 0;
	unsigned int round = 0;
	bool moved;
	int ret = 0;

	if (!ep)
		return -EINVAL;
	fc__fab_lock(ep->fab);
	now = fc__now_ns();
	if (timeout_ms >= 0)
		deadline = now + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		moved = fc__progress(ep->dev);
		moved |= fc__tag_take_headers(ep);
		fc__tag_take_pieces(ep);
		if (ep->done_h)
			break;
		now = fc__now_ns();
		if (timeout_ms >= 0 && now >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		if (moved) {
			round = 0;
			continue;
		}
		fc__fab_unlock(ep->fab);
		fc__backoff_dev(ep->dev, &round, now);
		fc__fab_lock(ep->fab);
	}
	fc__fab_unlock(ep->fab);
	return ret;
}
