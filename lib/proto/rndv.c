// SPDX-License-Identifier: MIT
/*
 * Rendezvous: how a large channel message goes, as MPI libraries send
 * theirs. An eager message is copied into a staging buffer, cut into
 * packets and copied again out of the receive ring; for a large one the
 * copies are the cost. So the sender only announces it (RTS: its length);
 * the receiver clears it (CTS) into the buffer of the receive it matches,
 * registered for the board, or into a library buffer when nobody has asked
 * for it yet; the sender's board writes the caller's buffer straight there
 * (a remote write, which ends once the data is in place) and then says so
 * (FIN, with the write's status). The three are control messages
 * (FC_XFER_F_CTRL) on the message's own channel, so an announcement keeps
 * its place among the channel's eager messages.
 *
 * Where the boards read remotely (FC_CAP_FABRIC_GET) the announcement
 * names the sender's buffer too (RTS_GET), and a receive that meets it
 * reads the data itself, straight into its buffer (a chain of GETs, which
 * ends once the data is in place), then tells the sender (GOT): no CTS
 * trip, and the receive ends as soon as its data is there. A message
 * nobody asked for is still cleared into a library buffer (CTS), which
 * the sender answers as above. A blocking send that times out while the
 * receiver may still read its buffer asks the receiver to stop (REVOKE)
 * and waits for its answer: GOT (read), or REVOKED, and then the message
 * goes on from a copy, cleared as any other.
 *
 * Each of these control messages is one packet: where the board has a PIO
 * window they go through it, no chain (an announcement only when nothing
 * to its node is queued before it; answers and FIN at once, their order
 * not mattering: FIN leaves once the write's fence is back).
 *
 * What the caller sees is as for eager messages: boundaries and order per
 * channel, messages nobody asked for kept (within FC_CHAN_BUFFERED bytes
 * per port; past that the sender waits for a receive), and a peer that
 * dies ends the requests that depend on it with -EHOSTDOWN. Differences: a
 * send is done only once the receiver has the data, and a receive whose
 * data is on its way cannot be cancelled (it ends in bounded time).
 *
 * Used on backends that can write remotely into any registered memory and
 * send control messages (emulated boards), from struct rndv's pub.min bytes on
 * (FC_CHAN_RNDV_MIN; FPGACOMM_RNDV_MIN overrides it, 0 turns it off;
 * FPGACOMM_RNDV_GET sets the largest message a receiver reads; none by
 * default).
 */
#include "rndv_internal.h"

/* @r takes the rendezvous way: its state, from zero. RETURN VALUE: 0 or
 * -ENOMEM. */
int fc__rv_rq_new(struct fc_req *r)
{
	if (!r->proto)
		r->proto = malloc(sizeof(struct rreq));
	if (!r->proto)
		return -ENOMEM;
	memset(r->proto, 0, sizeof(struct rreq));
	return 0;
}

/* ... and leaves it. */
void fc__rv_rq_end(struct fc_req *r)
{
	free(r->proto);
	r->proto = NULL;
}

bool fc__rndv_wanted(struct fc_dev *dev, size_t len)
{
	return fc__rndv_takes(dev->fab, len);
}

/* ---- Sending ---- */

/* May the receiver read @r's data (RTS_GET)? Its value then: the buffer's
 * offset in our host region and the length (at most FC_CHAN_MAX_MSG,
 * 2^24: 24 bits as length - 1). Else the plain RTS's, the length. */
uint64_t fc__rv_rts_val(struct fc_dev *dev, struct fc_req *r)
{
	uint64_t addr;

	RQ(r)->rget = false;
	if (r->len > RV(dev->fab)->get_max || !r->umem ||
	    fc_mem_fabric_addr(dev, r->umem, r->umem_off, &addr) ||
	    FC_FABRIC_REGION(addr) != FC_REGION_HOST)
		return r->len;
	RQ(r)->rget = true;
	return FC_FABRIC_OFFSET(addr) | (uint64_t)(r->len - 1) << 40;
}

/* The announcement of send @r has left: it waits for the answer. */
static void wait_answer(struct fc__fabric *fab, struct fc_req *r)
{
	RQ(r)->state = FC__RNDV_WAIT_CTS;
	RQ(r)->rnext = RV(fab)->cts_wait;
	RV(fab)->cts_wait = r;
}

int fc__rndv_isend(struct fc_chan *ch, const void *buf, size_t len, bool now,
		   struct fc_req *r)
{
	struct fc_dev *dev = ch->dev;
	enum fc__ctrl_kind kind;
	uint32_t end = 0;
	uint64_t val;
	int ret;

	/* The board reads @buf itself: no copy, and @buf stays the caller's
	 * to keep unchanged until the request is done (fc_chan_isend). A
	 * buffer the caller registered goes as it is, others are registered
	 * for the message. The caller queues the announcement. */
	ret = fc__req_umem_get(dev, r, buf, len, true);
	if (ret)
		return ret;
	ret = fc__rv_rq_new(r);
	if (ret) {
		fc__req_umem_put(dev, r);
		return ret;
	}
	RQ(r)->state = FC__RNDV_RTS;
	RQ(r)->cookie = ++RV(dev->fab)->next_cookie;
	r->port = ch->port;
	RQ(r)->sbuf = buf;
	r->len = len;
	val = fc__rv_rts_val(dev, r);
	kind = RQ(r)->rget ? FC__CTRL_RTS_GET : FC__CTRL_RTS;
	/* Its turn and nothing to that node before it: the one packet goes
	 * through the PIO window (no staging, no chain), ended as a PIO
	 * send is (fc__pio_queue: then fc__rv_chain_ended()). */
	ret = now ? fc__ctrl_pio(dev, ch->peer, ch->port, kind, RQ(r)->cookie,
				 val, &end) :
		    -EAGAIN;
	if (ret > 0) {
		fc__stat_inc(&dev->stats.rts_pio);
		r->submitted = true;
		r->pio_end = end;
		if (ret == 2)
			wait_answer(dev->fab, r);
		else
			fc__pio_queue(dev->fab, r);
		return 0;
	}
	ret = fc__ctrl_chain(dev, r, ch->peer, ch->port, kind, RQ(r)->cookie,
			     val);
	if (ret) {
		fc__req_umem_put(dev, r);
		fc__rv_rq_end(r);
	}
	return ret;
}

/* Sends whose writes share a chain, at most (a batch ends with one fence:
 * the first of them is done no sooner than the last). */
#define BATCH_MAX   16
#define BATCH_BYTES (16u << 20)

/*
 * Queue the writes waiting for @node, up to a batch: fc__rndv_submit
 * makes them one chain. Only one batch per node is out at a time, so
 * those fc__rv_cleared meanwhile gather behind it and go together next.
 */
static void launch_node(struct fc__fabric *fab, uint32_t node)
{
	struct fc_req **pp = &RV(fab)->data_head, *r;
	size_t bytes = 0;

	while ((r = *pp) && RV(fab)->data_fly[node] < BATCH_MAX) {
		if (r->node != node ||
		    (RV(fab)->data_fly[node] && bytes + r->len > BATCH_BYTES)) {
			pp = &RQ(r)->rnext;
			continue;
		}
		*pp = RQ(r)->rnext;
		RQ(r)->rnext = NULL;
		bytes += r->len;
		RV(fab)->data_fly[node]++;
		fc__req_queue(fab, r);
	}
	RV(fab)->data_tail = NULL;
	for (r = RV(fab)->data_head; r; r = RQ(r)->rnext)
		RV(fab)->data_tail = r;
}

/* Queue @r's chain (a write, or a receive's read) behind its node's batch
 * in flight, if any. */
void fc__rv_data_queue(struct fc__fabric *fab, struct fc_req *r)
{
	RQ(r)->rnext = NULL;
	if (RV(fab)->data_tail)
		RQ(RV(fab)->data_tail)->rnext = r;
	else
		RV(fab)->data_head = r;
	RV(fab)->data_tail = r;
	if (!RV(fab)->data_fly[r->node])
		launch_node(fab, r->node);
}

/* @r's chain of the batch ended: the next batch to its node may go. */
static void data_done(struct fc__fabric *fab, struct fc_req *r)
{
	if (!--RV(fab)->data_fly[r->node] && RV(fab)->data_head)
		launch_node(fab, r->node);
}

/* The CTS came: write the data to @addr. RETURN VALUE: 0 or -errno. */
static int start_data(struct fc_dev *dev, struct fc_req *r, uint64_t addr)
{
	int ret = fc__build_chain(dev, r, fc_host(r->umem, r->umem_off), addr,
				  r->len, false, 0);

	if (ret)
		return ret;
	RQ(r)->state = FC__RNDV_DATA;
	fc__rv_data_queue(dev->fab, r);
	return 0;
}

/* Does @r's chain go in batches (writes, reads)? */
static bool batched(const struct fc_req *r)
{
	return st(r) == FC__RNDV_DATA || st(r) == FC__RNDV_GET;
}

/* May @q's write (read) join a chain that has @n transfers and @bytes so
 * far, led by @r? */
static bool joins(struct fc_dev *dev, const struct fc_req *r,
		  const struct fc_req *q, unsigned int n, size_t bytes)
{
	return q && q->type == r->type && st(q) == st(r) &&
	       q->node == r->node && n + q->n <= dev->info.max_chain &&
	       bytes + q->len <= BATCH_BYTES;
}

int fc__rv_submit(struct fc_dev *dev, struct fc_req *r, unsigned int lane,
		  unsigned int *n)
{
	unsigned int k = 1, xn = r->n, i;
	size_t bytes = r->len;
	struct fc_xfer *x;
	struct fc_req *q;
	uint64_t ticket;
	int ret;

	/*
	 * A chain of writes ends only when the receiver's FENCE_ACK is back;
	 * one chain per message leaves the receiver idle for that round trip
	 * before each (a chain of reads, for the sender's). Writes (reads)
	 * queued together go as one chain, back to back.
	 */
	for (q = r->next;
	     batched(r) && k < BATCH_MAX && joins(dev, r, q, xn, bytes);
	     q = q->next, k++) {
		xn += q->n;
		bytes += q->len;
	}
	*n = 1;
	if (k == 1)
		return fc__dma_submit_on(dev, lane, r->xfers, r->n, &r->ticket);
	x = malloc(xn * sizeof(*x));
	if (!x)
		return fc__dma_submit_on(dev, lane, r->xfers, r->n, &r->ticket);
	memcpy(x, r->xfers, r->n * sizeof(*x));
	for (q = r->next, xn = r->n, i = 1; i < k; q = q->next, i++) {
		memcpy(x + xn, q->xfers, q->n * sizeof(*x));
		xn += q->n;
	}
	ret = fc__dma_submit_on(dev, lane, x, xn, &ticket);
	free(x);
	if (ret)
		return ret;
	for (q = r, i = 0; i < k; q = q->next, i++)
		q->ticket = ticket;
	*n = k;
	return 0;
}

/* Receive @r has read its message (or failed to): the sender may let go
 * of its buffer, and the next reads from that node may go. */
static void read_done(struct fc_dev *dev, struct fc_req *r, int status)
{
	fc__ctrl_answer(dev, r->node, r->port, FC__CTRL_GOT, RQ(r)->cookie,
			(uint64_t)(int64_t)status);
	fc__rv_rq_end(r);
	fc__req_umem_put(dev, r);
	data_done(dev->fab, r);
}

bool fc__rv_chain_ended(struct fc_dev *dev, struct fc_req *r, int *status)
{
	struct fc__fabric *fab = dev->fab;
	int ret;

	if (r->type == FC__REQ_RECV) {
		if (st(r) == FC__RNDV_GET)
			read_done(dev, r, *status); /* and it ends */
		return false;
	}
	if (r->type != FC__REQ_SEND)
		return false;
	fc__req_release(dev, r);
	switch (st(r)) {
	case FC__RNDV_RTS:
		if (*status)
			break;
		if (RQ(r)->early) {
			fc__rv_answered(dev, r, RQ(r)->early, RQ(r)->early_val);
			return true;
		}
		wait_answer(fab, r);
		return true;
	case FC__RNDV_DATA:
		/* Written or not, the receiver must hear how it went: at once
		 * through the PIO window (the data is in place: the chain's
		 * fence came back), else as a chain, queued before the next
		 * batch, not behind its fence. */
		RQ(r)->data_status = *status;
		if (!fc__ctrl_pio_unordered(dev, r->node, r->port, FC__CTRL_FIN,
					    RQ(r)->cookie,
					    (uint64_t)(int64_t)*status)) {
			data_done(fab, r);
			break; /* and it ends, with *status */
		}
		ret = fc__ctrl_chain(dev, r, r->node, r->port, FC__CTRL_FIN,
				     RQ(r)->cookie, (uint64_t)(int64_t)*status);
		if (!ret) {
			RQ(r)->state = FC__RNDV_FIN;
			fc__req_queue(fab, r);
		}
		data_done(fab, r);
		if (!ret)
			return true;
		*status = ret;
		break;
	case FC__RNDV_FIN:
		if (RQ(r)->data_status)
			*status = RQ(r)->data_status;
		break;
	default:
		break;
	}
	fc__rv_rq_end(r);
	fc__req_umem_put(dev, r);
	return false;
}

/*
 * Is @addr where the receiver of @r could want it? Host memory of that
 * node, with room for the message: a CTS naming anything else (another
 * node, its board memory, an offset that wraps) is a peer's bug or a
 * forgery, and the data must not go there.
 */
static bool cts_addr_ok(const struct fc_req *r, uint64_t addr)
{
	return !(addr & FC_FABRIC_RSVD_MASK) &&
	       FC_FABRIC_NODE(addr) == r->node &&
	       FC_FABRIC_REGION(addr) == FC_REGION_HOST &&
	       r->len <= FC_FABRIC_OFFSET_MASK + 1 - FC_FABRIC_OFFSET(addr);
}

/* Receiver @r's CTS came with @addr: write there, or end (no address:
 * the receiver dropped the message, longer than its buffer; -EPROTO an
 * address it cannot have meant). */
void fc__rv_cleared(struct fc_dev *dev, struct fc_req *r, uint64_t addr)
{
	int ret;

	RQ(r)->rget = false; /* the receiver will not read it */
	RQ(r)->revoking = false;
	ret = !addr		    ? 0 :
	      !cts_addr_ok(r, addr) ? -EPROTO :
				      start_data(dev, r, addr);

	if (!addr || ret) {
		fc__rv_rq_end(r);
		fc__req_umem_put(dev, r);
		fc__req_end(dev, r, ret);
	}
}

/*
 * The receiver fc__rv_answered a send that timed out (REVOKED): it will clear
 * the message rather than read it. The message goes on from a copy, on
 * a request of its own, and the caller's ends (-ETIMEDOUT). Without
 * memory for the copy it goes from the caller's buffer, still waited for.
 */
static void revoked(struct fc_dev *dev, struct fc_req *r)
{
	struct fc__fabric *fab = dev->fab;
	struct fc_req *q = fc__req_new(dev, FC__REQ_SEND, r->node);
	struct fc_mem *copy = NULL;

	RQ(r)->rget = false;
	RQ(r)->revoking = false;
	if (!q || fc__rv_rq_new(q) || fc_mem_alloc(dev, r->len, 0, &copy)) {
		if (q)
			fc__req_free(q);
		RQ(r)->rnext = RV(fab)->cts_wait;
		RV(fab)->cts_wait = r;
		return;
	}
	memcpy(copy->addr, RQ(r)->sbuf, r->len);
	fc__req_disown(q); /* nobody waits: freed when it ends */
	q->port = r->port;
	q->len = r->len;
	q->umem = copy;
	RQ(q)->state = FC__RNDV_WAIT_CTS;
	RQ(q)->cookie = RQ(r)->cookie;
	RQ(q)->rnext = RV(fab)->cts_wait;
	RV(fab)->cts_wait = q;
	fc__rv_rq_end(r);
	fc__req_umem_put(dev, r);
	fc__req_end(dev, r, -ETIMEDOUT);
}

/* The receiver's answer of @kind to announced send @r, off every list. */
void fc__rv_answered(struct fc_dev *dev, struct fc_req *r, uint8_t kind,
		     uint64_t val)
{
	int64_t err = (int64_t)val;

	RQ(r)->early = 0;
	switch (kind) {
	case FC__CTRL_CTS:
		fc__rv_cleared(dev, r, val);
		break;
	case FC__CTRL_GOT:
		/* read, or failed to: the receiver says which */
		fc__rv_rq_end(r);
		fc__req_umem_put(dev, r);
		fc__req_end(dev, r,
			    err < 0 && err > -4096 ? (int)err :
			    err			   ? -EIO :
						     0);
		break;
	default:
		revoked(dev, r);
		break;
	}
}

static bool is_sender(const struct fc_req *r, uint32_t port, uint32_t node,
		      uint32_t cookie)
{
	return r->type == FC__REQ_SEND && RQ(r)->cookie == cookie &&
	       r->node == node && r->port == port;
}

/* Is @r the announced send the answer is for, its RTS not seen ended?
 * Then the answer waits for that. */
static bool early(struct fc_req *r, uint32_t port, uint32_t node,
		  uint32_t cookie, uint8_t kind, uint64_t val)
{
	if (st(r) != FC__RNDV_RTS || !is_sender(r, port, node, cookie))
		return false;
	RQ(r)->early = kind;
	RQ(r)->early_val = val;
	return true;
}

static void on_answer(struct fc_dev *dev, uint32_t port, uint32_t node,
		      uint32_t cookie, uint8_t kind, uint64_t val)
{
	struct fc__fabric *fab = dev->fab;
	struct fc_req **pp, *r;

	for (pp = &RV(fab)->cts_wait; (r = *pp); pp = &RQ(r)->rnext) {
		if (is_sender(r, port, node, cookie)) {
			/* GOT and REVOKED answer only a send the receiver
			 * may read: not its copy (revoked()), nor one
			 * fc__rv_cleared since */
			if (kind != FC__CTRL_CTS && !RQ(r)->rget)
				return;
			*pp = RQ(r)->rnext;
			RQ(r)->rnext = NULL;
			fc__rv_answered(dev, r, kind, val);
			return;
		}
	}
	/*
	 * The RTS's chain may have ended on the board without the library
	 * having seen it yet (the receiver was quicker): then on its end.
	 */
	for (r = fab->fly_head; r; r = r->next)
		if (early(r, port, node, cookie, kind, val))
			return;
	/* ... or its packet in the PIO window not seen taken yet */
	for (r = fab->pio_head; r; r = r->next)
		if (early(r, port, node, cookie, kind, val))
			return;
}

void fc__rv_on_cts(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, uint64_t addr)
{
	on_answer(dev, port, node, cookie, FC__CTRL_CTS, addr);
}

void fc__rv_on_got(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, uint64_t val)
{
	on_answer(dev, port, node, cookie, FC__CTRL_GOT, val);
}

void fc__rv_on_revoked(struct fc_dev *dev, uint32_t port, uint32_t node,
		       uint32_t cookie, uint64_t val)
{
	on_answer(dev, port, node, cookie, FC__CTRL_REVOKED, val);
}

bool fc__rndv_send_busy(struct fc_dev *dev, struct fc_req *r)
{
	if (r->type != FC__REQ_SEND)
		return false;
	if (st(r) == FC__RNDV_DATA || st(r) == FC__RNDV_FIN)
		return true; /* the board reads the buffer now */
	if (st(r) != FC__RNDV_RTS && st(r) != FC__RNDV_WAIT_CTS)
		return false;
	if (!RQ(r)->rget)
		return false;
	/* The receiver may read it: ask it not to, and wait for its answer
	 * (the buffer is intact meanwhile, the caller waiting). */
	if (!RQ(r)->revoking &&
	    !fc__ctrl_send(dev, r->node, r->port, FC__CTRL_REVOKE,
			   RQ(r)->cookie, 0))
		RQ(r)->revoking = true;
	return true;
}
