// SPDX-License-Identifier: MIT
/*
 * Rendezvous, the receiving side (rndv_internal.h): an announcement
 * matched against a posted receive, or kept; a receive cleared (CTS) into
 * its buffer, or reading the sender's buffer itself (RTS_GET); messages
 * nobody asked for landed into a library buffer after their wait; FIN and
 * REVOKE from the sender.
 */
#include "rndv_internal.h"

/*
 * How long a message nobody has asked for waits for its receive before
 * the library lands it in a buffer of its own: landed, it is copied
 * twice (once there, once out); asked for meanwhile, the sender's board
 * writes it straight into the receive. Ranks of a collective come to
 * their receives a little apart, so landing at once copied about half
 * of an alltoall's messages twice. The wait grows with the length, as
 * the copy it saves does: RV(fab)->land_delay_ns for 1 MiB.
 */
static uint64_t land_wait_ns(const struct fc__fabric *fab, uint64_t len)
{
	return (uint64_t)((double)RV(fab)->land_delay_ns * (double)len /
			  (double)(1u << 20));
}

static void on_rts(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, uint64_t len, uint64_t raddr)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__src *s = fc__src_get(fab, port, node);
	struct fc__msg *m = s ? calloc(1, sizeof(*m) + sizeof(struct rmsg)) :
				NULL;
	struct rmsg *rm;

	if (!m) {
		/* Tell the sender, or it would wait for ever. */
		fc__ctrl_answer(dev, node, port, FC__CTRL_CTS, cookie, 0);
		return;
	}
	/* its state in its own block: freed with it, wherever that is */
	rm = (struct rmsg *)m->data;
	m->proto = rm;
	m->len = len;
	rm->state = MSG_DEFERRED;
	rm->cookie = cookie;
	rm->raddr = raddr;
	rm->land_at_ns = fc__now_ns() + land_wait_ns(fab, len);
	fc__src_queue(s, m);
	fc__src_match(fab, port, s);
}

/*
 * Read announced message @m into receive @r, registered: a chain of GETs
 * from the sender's buffer, queued behind the reads and writes to its node
 * in flight. RETURN VALUE: 0, or -errno (the message is fc__rv_cleared instead).
 */
static int start_get(struct fc_dev *dev, uint32_t port, struct fc_req *r,
		     const struct fc__msg *m)
{
	uint64_t piece = dev->info.max_xfer_len, off;
	unsigned int n = (unsigned int)((m->len + piece - 1) / piece), i;
	struct fc_xfer *x;

	if (!RV(dev->fab)->get_max || !piece || n > dev->info.max_chain)
		return -EMSGSIZE;
	if (fc__rv_rq_new(r))
		return -ENOMEM;
	x = n == 1 ? &r->xfer1 : calloc(n, sizeof(*x));
	if (!x) {
		fc__rv_rq_end(r);
		return -ENOMEM;
	}
	memset(x, 0, n * sizeof(*x));
	for (i = 0, off = 0; i < n; i++, off += piece) {
		x[i].src.space = FC_SPACE_FABRIC;
		x[i].src.addr = RM(m)->raddr + off;
		x[i].dst = fc_host(r->umem, r->umem_off + off);
		x[i].len = m->len - off < piece ? m->len - off : piece;
	}
	r->xfers = x;
	r->n = n;
	RQ(r)->state = FC__RNDV_GET;
	RQ(r)->cookie = RM(m)->cookie;
	r->port = port;
	fc__stat_inc(&dev->stats.rgets);
	fc__rv_data_queue(dev->fab, r);
	return 0;
}

static void clear(struct fc_dev *dev, uint32_t port, struct fc__msg *m,
		  struct fc_req *r)
{
	uint32_t node = r->node, cookie = RM(m)->cookie;
	uint64_t addr = 0;
	int ret = 0;

	r->len = m->len;
	if (m->len > r->cap) {
		/* Consumed and dropped, as an eager one would be. */
		ret = -EMSGSIZE;
	} else {
		/* straight into the caller's registration where it has one */
		ret = fc__req_umem_get(dev, r, r->buf, m->len, true);
		if (!ret && RM(m)->raddr && !start_get(dev, port, r, m)) {
			free(m);
			return;
		}
		if (!ret)
			ret = fc_mem_fabric_addr(dev, r->umem, r->umem_off,
						 &addr);
	}
	if (!ret)
		ret = fc__rv_rq_new(r);
	if (!ret) {
		RQ(r)->state = FC__RNDV_LAND;
		RQ(r)->cookie = cookie;
		r->port = port;
		RQ(r)->rnext = RV(dev->fab)->landing;
		RV(dev->fab)->landing = r;
		ret = fc__ctrl_answer(dev, node, port, FC__CTRL_CTS, cookie,
				      addr);
		if (ret) {
			RV(dev->fab)->landing = RQ(r)->rnext;
			fc__rv_rq_end(r);
		}
	}
	if (ret) {
		fc__req_umem_put(dev, r);
		/* No address: the sender drops it (and must hear so). */
		fc__ctrl_answer(dev, node, port, FC__CTRL_CTS, cookie, 0);
		r->status = ret;
	}
	free(m);
}

static void deliver(struct fc__port *pt, struct fc__msg *m, struct fc_req *r)
{
	struct rmsg *rm = RM(m);

	r->len = m->len;
	r->status = rm->status ? rm->status : m->len > r->cap ? -EMSGSIZE : 0;
	if (!r->status)
		memcpy(r->buf, rm->land->addr, m->len);
	pt->buffered -= m->len;
	fc__spare_put(r->dev, rm->land);
	free(m);
}

/* A message still landing holds up those behind it. */
bool fc__rv_msg_ready(const struct fc__msg *m)
{
	return RM(m)->state != MSG_LANDING;
}

/* Announced: cleared into @r; landed: copied into it. */
void fc__rv_msg_take(struct fc_dev *dev, uint32_t port, struct fc__src *s,
		     struct fc__msg *m, struct fc_req *r)
{
	if (RM(m)->state == MSG_DEFERRED)
		clear(dev, port, m, r);
	else
		deliver(dev->fab->ports[port], m, r);
}

void fc__rv_land_deferred(struct fc_dev *dev, uint32_t port, struct fc__src *s)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__port *pt = fab->ports[port];
	struct rndv *rv = RV(fab);
	struct fc__msg *m;
	uint64_t addr, now = 0;

	for (m = s->q_head; m; m = m->next) {
		struct rmsg *rm = RM(m);

		if (!rm || rm->state != MSG_DEFERRED)
			continue;
		if (!now)
			now = fc__now_ns();
		if (now < rm->land_at_ns) {
			/* its receive may come yet: look again then */
			if (!rv->land_due_ns ||
			    rm->land_at_ns < rv->land_due_ns) {
				rv->land_due_ns = rm->land_at_ns;
				fc__proto_ticking(fab, FC__PROTO_RNDV, true);
			}
			return;
		}
		if (pt->buffered + m->len > FC_CHAN_BUFFERED)
			return; /* the sender waits for a receive */
		if (fc__spare_get(dev, m->len, &rm->land))
			return;
		if (fc_mem_fabric_addr(dev, rm->land, 0, &addr) ||
		    fc__ctrl_answer(dev, s->node, port, FC__CTRL_CTS,
				    rm->cookie, addr)) {
			fc__spare_put(dev, rm->land);
			rm->land = NULL;
			return;
		}
		rm->state = MSG_LANDING;
		pt->buffered += m->len;
	}
}

/* Land what has waited long enough, wherever it is: no packet may come
 * from its source to call fc__rv_land_deferred() meanwhile. */
void fc__rv_land_due(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	struct rndv *rv = RV(fab);
	uint32_t port, node;
	struct fc__port *pt;

	if (fc__now_ns() < rv->land_due_ns)
		return;
	rv->land_due_ns = 0;
	fc__proto_ticking(fab, FC__PROTO_RNDV, false);
	for (port = 0; port < FC_MAX_CHANNELS; port++) {
		pt = fab->ports[port];
		for (node = 0; pt && node < FC_MAX_NODES; node++)
			if (pt->src[node] && pt->src[node]->q_head)
				fc__rv_land_deferred(dev, port, pt->src[node]);
	}
}

static void on_fin(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, int status)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__src *s = fc__src_find(fab, port, node);
	struct fc_req **pp, *r;
	struct fc__msg *m;

	if (!s)
		return;
	for (pp = &RV(fab)->landing; (r = *pp); pp = &RQ(r)->rnext) {
		if (RQ(r)->cookie != cookie || r->node != node ||
		    r->port != port)
			continue;
		*pp = RQ(r)->rnext;
		RQ(r)->rnext = NULL;
		fc__rv_rq_end(r);
		fc__req_umem_put(dev, r);
		r->status = status;
		return;
	}
	for (m = s->q_head; m; m = m->next) {
		if (RM(m) && RM(m)->state == MSG_LANDING &&
		    RM(m)->cookie == cookie) {
			RM(m)->state = MSG_LANDED;
			RM(m)->status = status;
			fc__src_match(fab, port, s);
			return;
		}
	}
}

void fc__rv_on_fin_ctrl(struct fc_dev *dev, uint32_t port, uint32_t node,
			uint32_t cookie, uint64_t val)
{
	int64_t err = (int64_t)val;

	on_fin(dev, port, node, cookie,
	       err < 0 && err > -4096 ? (int)err :
	       err		      ? -EIO :
					0);
}

void fc__rv_on_rts_ctrl(struct fc_dev *dev, uint32_t port, uint32_t node,
			uint32_t cookie, uint64_t val)
{
	if (val && val <= FC_CHAN_MAX_MSG)
		on_rts(dev, port, node, cookie, val, 0);
}

/* An announcement naming the sender's buffer: offset | (length - 1) << 40
 * (fc__rv_rts_val()); read where this board can, else fc__rv_cleared as any. */
void fc__rv_on_rts_get_ctrl(struct fc_dev *dev, uint32_t port, uint32_t node,
			    uint32_t cookie, uint64_t val)
{
	uint64_t len = (val >> 40) + 1;
	uint64_t off = val & FC_FABRIC_OFFSET_MASK;

	if (len > FC_CHAN_MAX_MSG || len > FC_FABRIC_OFFSET_MASK + 1 - off)
		return;
	on_rts(dev, port, node, cookie, len,
	       RV(dev->fab)->get_max ?
		       FC_FABRIC_ADDR(node, FC_REGION_HOST, off) :
		       0);
}

/* The sender gave up waiting: a message not read yet is fc__rv_cleared instead,
 * and it hears so. One being read (or fc__rv_cleared) is fc__rv_answered by that. */
void fc__rv_on_revoke(struct fc_dev *dev, uint32_t port, uint32_t node,
		      uint32_t cookie, uint64_t val)
{
	struct fc__src *s = fc__src_find(dev->fab, port, node);
	struct fc__msg *m;

	for (m = s ? s->q_head : NULL; m; m = m->next) {
		struct rmsg *rm = RM(m);

		if (rm && rm->state == MSG_DEFERRED && rm->cookie == cookie &&
		    rm->raddr) {
			rm->raddr = 0;
			fc__ctrl_answer(dev, node, port, FC__CTRL_REVOKED,
					cookie, 0);
			return;
		}
	}
}
