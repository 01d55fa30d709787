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

#include "devmem.h"
#include "chan.h"

#define HDR_MAGIC     0xa7
#define HDR_SPLIT     (1u << 0)		/* the payload follows in pieces */
#define HDR_DATA      (1u << 1)		/* @data is the sender's */
#define HDR_SPACE1    (1u << 2)		/* of the second matching space */
#define EAGER_BUF     (16u << 10)	/* a header and a small payload */
#define OP_CACHE      64		/* ended operations kept for the next */
#define DEAD_CHECK_NS (20ull * 1000000) /* look for dead peers this often */

struct hdr {
	uint64_t tag;
	uint64_t data;
	uint32_t len;
	uint16_t port; /* the sender's endpoint */
	uint8_t flags; /* HDR_* */
	uint8_t magic;
	uint32_t piece; /* HDR_SPLIT: bytes per piece but the last */
	uint32_t rsvd;
};

#define EAGER_MAX (EAGER_BUF - sizeof(struct hdr))

/* Channel requests of one message's pieces. */
struct pieces {
	struct fc_req **reqs;
	struct fc_req *one; /* reqs when there is one piece */
	unsigned int n, left;
	uint32_t node;
	int status;
};

struct op {
	struct op *next;
	bool send, inject;
	bool discard;  /* receive: of a claimed message, no buffer */
	bool space1;   /* receive: FC_TAG_F_SPACE1 */
	uint32_t node; /* receive: wanted, or FC_TAG_ANY_NODE */
	uint32_t port; /* receive: the sender's wanted, or FC_TAG_ANY_PORT */
	uint64_t tag, ignore;
	uint8_t *buf;
	size_t cap;
	uint8_t *tmp; /* receive: landing of a cut-off message */
	struct pieces pc;
	struct fc_tag_cqe cqe;
	/* device memory, staged through a host buffer (devmem.h) */
	struct fc__bounce *bounce;
	void *dbuf; /* receive: the device buffer it goes to at its end */
};

/* A message nobody asked for yet. */
struct fc_tag_msg {
	struct fc_tag_msg *next;  /* unexpected queue */
	struct fc_tag_msg *anext; /* arriving: pieces outstanding */
	uint32_t node;
	struct hdr h;
	uint8_t *data; /* the whole payload, ours */
	struct pieces pc;
	bool arriving;
	bool queued;	   /* on the unexpected queue */
	struct op *waiter; /* matched, waits for its pieces */
};

struct fc_tag_ep {
	struct fc_dev *dev;
	struct fc__fabric *fab;
	uint32_t port, size;
	struct fc_chan *ch[FC_MAX_NODES];   /* on our port */
	struct fc_req *eager[FC_MAX_NODES]; /* posted on them */
	uint8_t *ebuf;			    /* size * EAGER_BUF */
	struct fc_chan **xch;		    /* other ports', ours */
	struct op *posted_h, *posted_t;
	struct fc_tag_msg *unexp_h, *unexp_t;
	struct op *active; /* pieces outstanding */
	struct fc_tag_msg *arriving;
	struct fc_tag_msg *claimed; /* by fc_tag_probe(), linked by next */
	struct op *done_h, *done_t;
	struct op *cache;
	unsigned int cached;
	uint64_t dead_check_ns;
	uint8_t sbuf[EAGER_BUF];
};

static struct op *op_new(struct fc_tag_ep *ep)
{
	struct op *o = ep->cache;

	if (o) {
		ep->cache = o->next;
		ep->cached--;
		memset(o, 0, sizeof(*o));
		return o;
	}
	return calloc(1, sizeof(*o));
}

static void pieces_free(struct pieces *pc)
{
	if (pc->reqs != &pc->one)
		free(pc->reqs);
	pc->reqs = NULL;
}

static void op_free(struct fc_tag_ep *ep, struct op *o)
{
	pieces_free(&o->pc);
	free(o->tmp);
	if (o->bounce)
		fc__bounce_put(o->bounce);
	if (ep->cached == OP_CACHE) {
		free(o);
		return;
	}
	o->next = ep->cache;
	ep->cache = o;
	ep->cached++;
}

static void op_done(struct fc_tag_ep *ep, struct op *o, int status)
{
	/* a receive into device memory: there before its completion is seen
	 * (-EMSGSIZE: the first cap bytes are) */
	if (o->dbuf && (!status || status == -EMSGSIZE) && o->cqe.len) {
		int ret = fc__devmem_to_dev(o->dbuf, o->bounce->p, o->cqe.len);

		if (ret)
			status = ret;
	}
	if (o->inject) {
		op_free(ep, o);
		return;
	}
	o->cqe.status = status;
	o->next = NULL;
	if (ep->done_t)
		ep->done_t->next = o;
	else
		ep->done_h = o;
	ep->done_t = o;
}

static bool tag_match(uint64_t want, uint64_t ignore, uint64_t tag)
{
	return ((want ^ tag) & ~ignore) == 0;
}

/* Room for the requests of @len bytes in pieces of @max.
 * RETURN VALUE: 0 or -ENOMEM. */
static int pieces_init(struct pieces *pc, uint64_t len, uint64_t max,
		       uint32_t node)
{
	unsigned int n = (unsigned int)((len + max - 1) / max);

	memset(pc, 0, sizeof(*pc));
	pc->node = node;
	pc->reqs = n == 1 ? &pc->one : calloc(n, sizeof(*pc->reqs));
	if (!pc->reqs)
		return -ENOMEM;
	pc->n = n;
	return 0;
}

/* Post the receives of a payload of @len bytes into @dst, in pieces of
 * @max bytes. */
static int pieces_recv(struct fc_chan *ch, struct pieces *pc, uint8_t *dst,
		       uint64_t len, uint64_t max)
{
	uint64_t off, piece;
	unsigned int i;
	int ret;

	ret = pieces_init(pc, len, max, ch->peer);
	if (ret)
		return ret;
	for (i = 0, off = 0; off < len; off += piece, i++) {
		piece = len - off < max ? len - off : max;
		ret = fc__irecv(ch, dst + off, piece, &pc->reqs[i]);
		if (ret) {
			pc->status = ret;
			break;
		}
		pc->left++;
	}
	return 0;
}

/*
 * Look at the pieces still going. With @deep, also at those of a peer
 * that may have died (fc__req_test() asks).
 * RETURN VALUE: true when all have ended.
 */
static bool pieces_step(struct pieces *pc, bool deep)
{
	unsigned int i;
	int st;

	for (i = 0; i < pc->n && pc->left; i++) {
		struct fc_req *r = pc->reqs[i];

		if (!r || (r->status == -EINPROGRESS && !deep))
			continue;
		st = fc__req_test(r, NULL);
		if (st == -EINPROGRESS)
			continue;
		pc->reqs[i] = NULL;
		pc->left--;
		if (st && !pc->status)
			pc->status = st;
	}
	return pc->left == 0;
}

/* Give up the pieces still going (closing). */
static void pieces_drop(struct pieces *pc)
{
	unsigned int i;

	for (i = 0; i < pc->n; i++) {
		if (!pc->reqs[i])
			continue;
		if (fc__req_cancel(pc->reqs[i]))
			fc__req_orphan(pc->reqs[i]);
		pc->reqs[i] = NULL;
	}
	pc->left = 0;
}

/* A receive's entry from the message's header. */
static void recv_fill(struct op *o, uint32_t node, const struct hdr *h)
{
	o->cqe.flags = FC_TAG_CQE_RECV |
		       (h->flags & HDR_DATA ? FC_TAG_CQE_DATA : 0);
	o->cqe.tag = h->tag;
	o->cqe.data = h->flags & HDR_DATA ? h->data : 0;
	o->cqe.node = node;
	o->cqe.port = h->port;
	o->cqe.len = h->len < o->cap ? h->len : o->cap;
	o->cqe.olen = h->len - o->cqe.len;
}

/* Receive @o ends with a payload that is whole in @data. */
static void recv_copy(struct fc_tag_ep *ep, struct op *o, const uint8_t *data,
		      int status)
{
	if (!status && o->cqe.len)
		memcpy(o->buf, data, o->cqe.len);
	if (!status && o->cqe.olen && !o->discard)
		status = -EMSGSIZE;
	op_done(ep, o, status);
}

/* Is a message from (@node, @port) one that (@want_node, @want_port)
 * asks for? */
static bool src_match(uint32_t want_node, uint32_t want_port, uint32_t node,
		      uint32_t port)
{
	return (want_node == FC_TAG_ANY_NODE || want_node == node) &&
	       (want_port == FC_TAG_ANY_PORT || want_port == port);
}

/* The first posted receive that a message from (@node, @port) with @tag
 * matches, taken off the queue; or NULL. */
static struct op *posted_take(struct fc_tag_ep *ep, uint32_t node,
			      uint32_t port, uint64_t tag, bool space1)
{
	struct op **pp, *prev = NULL;

	for (pp = &ep->posted_h; *pp; prev = *pp, pp = &(*pp)->next) {
		struct op *o = *pp;

		if (!src_match(o->node, o->port, node, port) ||
		    o->space1 != space1 || !tag_match(o->tag, o->ignore, tag))
			continue;
		*pp = o->next;
		if (ep->posted_t == o)
			ep->posted_t = prev;
		o->next = NULL;
		return o;
	}
	return NULL;
}

static void unexp_append(struct fc_tag_ep *ep, struct fc_tag_msg *m)
{
	m->next = NULL;
	m->queued = true;
	if (ep->unexp_t)
		ep->unexp_t->next = m;
	else
		ep->unexp_h = m;
	ep->unexp_t = m;
}

static struct fc_tag_msg *unexp_find(struct fc_tag_ep *ep, uint32_t node,
				     uint32_t port, uint64_t tag,
				     uint64_t ignore, bool space1, bool take)
{
	struct fc_tag_msg **pp, *prev = NULL;

	for (pp = &ep->unexp_h; *pp; prev = *pp, pp = &(*pp)->next) {
		struct fc_tag_msg *m = *pp;

		if (!src_match(node, port, m->node, m->h.port) ||
		    !(m->h.flags & HDR_SPACE1) != !space1 ||
		    !tag_match(tag, ignore, m->h.tag))
			continue;
		if (take) {
			*pp = m->next;
			if (ep->unexp_t == m)
				ep->unexp_t = prev;
			m->next = NULL;
			m->queued = false;
		}
		return m;
	}
	return NULL;
}

static void msg_free(struct fc_tag_msg *m)
{
	pieces_free(&m->pc);
	free(m->data);
	free(m);
}

/* Receive @o takes message @m (off the unexpected queue). */
static void msg_deliver(struct fc_tag_ep *ep, struct fc_tag_msg *m,
			struct op *o)
{
	recv_fill(o, m->node, &m->h);
	if (m->arriving) {
		m->waiter = o; /* ends with the pieces */
		return;
	}
	recv_copy(ep, o, m->data, m->pc.status);
	msg_free(m);
}

/* A header that says its payload follows, from @node: the receives of
 * the pieces, into @o's buffer or ours. */
static void take_split(struct fc_tag_ep *ep, uint32_t node, const struct hdr *h,
		       struct op *o)
{
	struct fc_chan *ch = ep->ch[node];
	struct fc_tag_msg *m;
	int ret;

	if (o) {
		recv_fill(o, node, h);
		if (!o->cqe.olen) {
			ret = pieces_recv(ch, &o->pc, o->buf, h->len, h->piece);
		} else {
			o->tmp = malloc(h->len);
			ret = o->tmp ? pieces_recv(ch, &o->pc, o->tmp, h->len,
						   h->piece) :
				       -ENOMEM;
		}
		if (ret) {
			op_done(ep, o, ret);
			return;
		}
		o->next = ep->active;
		ep->active = o;
		return;
	}
	m = calloc(1, sizeof(*m));
	if (m)
		m->data = malloc(h->len);
	if (!m || !m->data) {
		free(m);
		return; /* the pieces are then taken as headers: dropped */
	}
	m->node = node;
	m->h = *h;
	if (pieces_recv(ch, &m->pc, m->data, h->len, h->piece)) {
		msg_free(m);
		return;
	}
	m->arriving = true;
	m->anext = ep->arriving;
	ep->arriving = m;
	unexp_append(ep, m);
}

/* A message of @len bytes from @node is in its eager buffer. */
static void take_eager(struct fc_tag_ep *ep, uint32_t node, size_t len)
{
	const uint8_t *b = ep->ebuf + (size_t)node * EAGER_BUF;
	struct fc_tag_msg *m;
	struct hdr h;
	struct op *o;

	if (len < sizeof(h))
		return;
	memcpy(&h, b, sizeof(h));
	if (h.magic != HDR_MAGIC)
		return; /* not ours: dropped */
	if (!(h.flags & HDR_SPLIT) && h.len != len - sizeof(h))
		return;
	if ((h.flags & HDR_SPLIT) && (!h.piece || h.piece > FC_CHAN_MAX_MSG))
		return;
	o = posted_take(ep, node, h.port, h.tag, h.flags & HDR_SPACE1);
	if (h.flags & HDR_SPLIT) {
		take_split(ep, node, &h, o);
		return;
	}
	if (o) {
		recv_fill(o, node, &h);
		recv_copy(ep, o, b + sizeof(h), 0);
		return;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return;
	m->data = malloc(h.len ? h.len : 1);
	if (!m->data) {
		free(m);
		return;
	}
	memcpy(m->data, b + sizeof(h), h.len);
	m->node = node;
	m->h = h;
	unexp_append(ep, m);
}

static int eager_post(struct fc_tag_ep *ep, uint32_t node)
{
	return fc__irecv(ep->ch[node], ep->ebuf + (size_t)node * EAGER_BUF,
			 EAGER_BUF, &ep->eager[node]);
}

/* Headers that have come; RETURN VALUE: true if any did. */
static bool take_headers(struct fc_tag_ep *ep)
{
	bool any = false;
	uint32_t node;
	size_t len;
	int st;

	for (node = 0; node < ep->size; node++) {
		struct fc_req *r;

		/* all that waits: a repost takes a queued message at once */
		while ((r = ep->eager[node]) && r->status != -EINPROGRESS) {
			st = fc__req_test(r, &len);
			ep->eager[node] = NULL;
			if (!st)
				take_eager(ep, node, len);
			if (eager_post(ep, node))
				ep->eager[node] = NULL; /* out of memory */
			any = true;
		}
	}
	return any;
}

/* Pieces that ended, and posted receives from peers that are gone. */
static void take_pieces(struct fc_tag_ep *ep)
{
	struct fc_tag_msg **mp;
	struct op **pp;
	bool deep = false;
	uint64_t now;

	if (ep->active || ep->arriving || ep->posted_h) {
		now = fc__now_ns();
		if (now - ep->dead_check_ns > DEAD_CHECK_NS) {
			ep->dead_check_ns = now;
			deep = true;
		}
	}
	for (pp = &ep->active; *pp;) {
		struct op *o = *pp;

		if (!pieces_step(&o->pc, deep)) {
			pp = &o->next;
			continue;
		}
		*pp = o->next;
		if (o->send) {
			op_done(ep, o, o->pc.status);
			continue;
		}
		if (o->tmp)
			recv_copy(ep, o, o->tmp, o->pc.status);
		else
			op_done(ep, o, o->pc.status);
	}
	for (mp = &ep->arriving; *mp;) {
		struct fc_tag_msg *m = *mp;

		if (!pieces_step(&m->pc, deep)) {
			mp = &m->anext;
			continue;
		}
		*mp = m->anext;
		m->arriving = false;
		if (m->waiter) {
			recv_copy(ep, m->waiter, m->data, m->pc.status);
			msg_free(m);
		}
	}
	/* A directed receive from a rank that is gone ends. */
	if (deep) {
		struct op *prev = NULL, *o = ep->posted_h, *next;

		for (; o; o = next) {
			next = o->next;
			if (o->node == FC_TAG_ANY_NODE ||
			    !fc__peer_down(ep->dev, o->node) ||
			    (ep->eager[o->node] &&
			     ep->eager[o->node]->status != -EINPROGRESS)) {
				prev = o;
				continue;
			}
			if (prev)
				prev->next = next;
			else
				ep->posted_h = next;
			if (ep->posted_t == o)
				ep->posted_t = prev;
			op_done(ep, o, -EHOSTDOWN);
		}
	}
}

static void progress(struct fc_tag_ep *ep)
{
	fc__progress(ep->dev);
	take_headers(ep);
	take_pieces(ep);
}

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
			ret = eager_post(ep, node);
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
		pieces_drop(&o->pc);
		op_free(ep, o);
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
		pieces_drop(&m->pc);
		m->arriving = false;
		if (m->waiter) {
			op_free(ep, m->waiter);
			msg_free(m);
		}
	}
	for (m = ep->unexp_h; m; m = mnext) {
		mnext = m->next;
		msg_free(m);
	}
	for (m = ep->claimed; m; m = mnext) {
		mnext = m->next;
		msg_free(m);
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
	o = op_new(ep);
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
			op_free(ep, o);
			goto out_unlock;
		}
		if (r->status != -EINPROGRESS) { /* through the PIO window */
			op_done(ep, o, fc__req_test(r, NULL));
			goto out_unlock;
		}
		o->pc.reqs = &o->pc.one;
		o->pc.one = r;
		o->pc.n = o->pc.left = 1;
		o->pc.node = node;
	} else {
		ret = send_split(ch, o, &h, buf, len);
		if (ret) {
			op_free(ep, o);
			goto out_unlock;
		}
	}
	o->next = ep->active;
	ep->active = o;
	progress(ep);
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
	o = op_new(ep);
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
		op_free(ep, o);
		fc__fab_unlock(ep->fab);
		return -ENOMEM;
	}
	/* what came first and was not taken by a header since */
	take_headers(ep);
	m = unexp_find(ep, node, port, tag, ignore, o->space1, true);
	if (m) {
		msg_deliver(ep, m, o);
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
	progress(ep);
	m = unexp_find(ep, node, port, tag, ignore, flags & FC_TAG_F_SPACE1,
		       claim);
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
	o = op_new(ep);
	if (!o) {
		fc__fab_unlock(ep->fab);
		return -ENOMEM;
	}
	for (pp = &ep->claimed; *pp && *pp != msg; pp = &(*pp)->next)
		;
	if (!*pp) {
		op_free(ep, o);
		fc__fab_unlock(ep->fab);
		return -EINVAL; /* not a claimed message of ours */
	}
	o->buf = buf;
	o->cap = cap;
	o->discard = !buf && !cap;
	if (recv_stage(ep, o, buf, cap)) {
		op_free(ep, o);
		fc__fab_unlock(ep->fab);
		return -ENOMEM; /* the message stays claimed */
	}
	*pp = msg->next;
	msg->next = NULL;
	o->cqe.ctx = ctx;
	o->cqe.uflags = uflags;
	msg_deliver(ep, msg, o);
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
		op_done(ep, o, -ECANCELED);
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
	progress(ep);
	while (got < n && ep->done_h) {
		struct op *o = ep->done_h;

		ep->done_h = o->next;
		if (!ep->done_h)
			ep->done_t = NULL;
		cqe[got++] = o->cqe;
		op_free(ep, o);
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
		moved |= take_headers(ep);
		take_pieces(ep);
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
