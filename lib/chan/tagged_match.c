// SPDX-License-Identifier: MIT
/*
 * The matching side of tagged endpoints (tagged_internal.h): cached
 * operations, the pieces of split messages, the posted and unexpected
 * queues, and taking what the channels delivered: headers matched against
 * posted receives, pieces landing, dead peers ending what waits on them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tagged_internal.h"
struct op *fc__tag_op_new(struct fc_tag_ep *ep)
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

void fc__tag_op_free(struct fc_tag_ep *ep, struct op *o)
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

void fc__tag_op_done(struct fc_tag_ep *ep, struct op *o, int status)
{
	/* a receive into device memory: there before its completion is seen
	 * (-EMSGSIZE: the first cap bytes are) */
	if (o->dbuf && (!status || status == -EMSGSIZE) && o->cqe.len) {
		int ret = fc__devmem_to_dev(o->dbuf, o->bounce->p, o->cqe.len);

		if (ret)
			status = ret;
	}
	if (o->inject) {
		fc__tag_op_free(ep, o);
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
void fc__tag_pieces_drop(struct pieces *pc)
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
	fc__tag_op_done(ep, o, status);
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

struct fc_tag_msg *fc__tag_unexp_find(struct fc_tag_ep *ep, uint32_t node,
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

void fc__tag_msg_free(struct fc_tag_msg *m)
{
	pieces_free(&m->pc);
	free(m->data);
	free(m);
}

/* Receive @o takes message @m (off the unexpected queue). */
void fc__tag_msg_deliver(struct fc_tag_ep *ep, struct fc_tag_msg *m,
			 struct op *o)
{
	recv_fill(o, m->node, &m->h);
	if (m->arriving) {
		m->waiter = o; /* ends with the pieces */
		return;
	}
	recv_copy(ep, o, m->data, m->pc.status);
	fc__tag_msg_free(m);
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
			fc__tag_op_done(ep, o, ret);
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
		fc__tag_msg_free(m);
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

int fc__tag_eager_post(struct fc_tag_ep *ep, uint32_t node)
{
	return fc__irecv(ep->ch[node], ep->ebuf + (size_t)node * EAGER_BUF,
			 EAGER_BUF, &ep->eager[node]);
}

/* Headers that have come; RETURN VALUE: true if any did. */
bool fc__tag_take_headers(struct fc_tag_ep *ep)
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
			if (fc__tag_eager_post(ep, node))
				ep->eager[node] = NULL; /* out of memory */
			any = true;
		}
	}
	return any;
}

/* Pieces that ended, and posted receives from peers that are gone. */
void fc__tag_take_pieces(struct fc_tag_ep *ep)
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
			fc__tag_op_done(ep, o, o->pc.status);
			continue;
		}
		if (o->tmp)
			recv_copy(ep, o, o->tmp, o->pc.status);
		else
			fc__tag_op_done(ep, o, o->pc.status);
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
			fc__tag_msg_free(m);
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
			fc__tag_op_done(ep, o, -EHOSTDOWN);
		}
	}
}

void fc__tag_progress(struct fc_tag_ep *ep)
{
	fc__progress(ep->dev);
	fc__tag_take_headers(ep);
	fc__tag_take_pieces(ep);
}
