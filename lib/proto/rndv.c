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
 * send control messages (emulated boards), from fab->rndv_min bytes on
 * (FC_CHAN_RNDV_MIN; FPGACOMM_RNDV_MIN overrides it, 0 turns it off;
 * FPGACOMM_RNDV_GET sets the largest message a receiver reads; none by
 * default).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* microseconds a 1 MiB message nobody asked for waits for its receive */
#define LAND_ENV      "FPGACOMM_RNDV_LAND_US"
#define LAND_DELAY_US 1000
#define GET_ENV	      "FPGACOMM_RNDV_GET"
/*
 * Messages up to this long are read by the receiver (FPGACOMM_RNDV_GET),
 * longer ones written by the sender's board. None by default: on emulated
 * boards a read's data moves only while the sender's process drives its
 * board, and on 32 cores with two quiet ranks the write was faster at
 * every size measured (64 KiB latency 18-21 us against 23-29 read, 128
 * KiB 24-26 against 33-35; bandwidth alike); a read saves a trip where
 * the sending side's board runs on its own (hardware).
 */
#define GET_MAX 0

/* Where a rendezvous request is (SEND: RTS, WAIT_CTS, DATA, FIN; RECV:
 * LAND, or GET when it reads the sender's buffer itself). */
enum rstate {
	FC__RNDV_NONE,
	FC__RNDV_RTS,	   /* its announcement's chain runs */
	FC__RNDV_WAIT_CTS, /* the receiver has not answered yet */
	FC__RNDV_DATA,	   /* the remote write's chain runs */
	FC__RNDV_FIN,	   /* the chain telling the receiver runs */
	FC__RNDV_LAND,	   /* receive: cleared, the data is coming */
	FC__RNDV_GET,	   /* receive: its read's chain runs, or waits */
};

/* What rendezvous keeps of a request (r->proto) while it is one. */
struct rreq {
	enum rstate state;
	uint32_t cookie;
	const void *sbuf; /* SEND: the caller's buffer */
	int data_status;  /* SEND: how the remote write ended */
	bool rget;	  /* SEND: announced with its address (RTS_GET) */
	bool revoking;	  /* SEND: a REVOKE is out, its answer not in */
	uint8_t early;	  /* SEND: the answer (its kind) that came before
			   * its RTS's chain ended, or 0 */
	uint64_t early_val;
	struct fc_req *rnext; /* waiting for an answer, a batch, or a FIN */
};

static inline struct rreq *RQ(const struct fc_req *r)
{
	return r->proto;
}

static inline enum rstate st(const struct fc_req *r)
{
	return r->proto ? RQ(r)->state : FC__RNDV_NONE;
}

/* @r takes the rendezvous way: its state, from zero. RETURN VALUE: 0 or
 * -ENOMEM. */
static int rq_new(struct fc_req *r)
{
	if (!r->proto)
		r->proto = malloc(sizeof(struct rreq));
	if (!r->proto)
		return -ENOMEM;
	memset(r->proto, 0, sizeof(struct rreq));
	return 0;
}

/* ... and leaves it. */
static void rq_end(struct fc_req *r)
{
	free(r->proto);
	r->proto = NULL;
}

/* What rendezvous keeps per board (fab->rndv): no other layer sees it. */
struct rndv {
	/* receivers read announced messages up to this long (RTS_GET);
	 * 0: never */
	size_t get_max;
	uint32_t next_cookie;
	struct fc_req *cts_wait; /* sends waiting for an answer */
	/* writes (reads) waiting for their node's batch in flight */
	struct fc_req *data_head, *data_tail;
	/* per node: writes (reads) in the send queue or flying (one batch) */
	uint8_t data_fly[FC_MAX_NODES];
	/* receives cleared (CTS), waiting for their FIN */
	struct fc_req *landing;
	uint64_t land_delay_ns; /* a 1 MiB message nobody asked for waits */
};

static inline struct rndv *RV(const struct fc__fabric *fab)
{
	return fab->rndv;
}

bool fc__rndv_wanted(struct fc_dev *dev, size_t len)
{
	size_t min = dev->fab->rndv_min;

	return min && len >= min;
}

/* ---- Sending ---- */

/* May the receiver read @r's data (RTS_GET)? Its value then: the buffer's
 * offset in our host region and the length (at most FC_CHAN_MAX_MSG,
 * 2^24: 24 bits as length - 1). Else the plain RTS's, the length. */
static uint64_t rts_val(struct fc_dev *dev, struct fc_req *r)
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
	ret = rq_new(r);
	if (ret) {
		fc__req_umem_put(dev, r);
		return ret;
	}
	RQ(r)->state = FC__RNDV_RTS;
	RQ(r)->cookie = ++RV(dev->fab)->next_cookie;
	r->port = ch->port;
	RQ(r)->sbuf = buf;
	r->len = len;
	val = rts_val(dev, r);
	kind = RQ(r)->rget ? FC__CTRL_RTS_GET : FC__CTRL_RTS;
	/* Its turn and nothing to that node before it: the one packet goes
	 * through the PIO window (no staging, no chain), ended as a PIO
	 * send is (fc__pio_queue: then rndv_chain_ended()). */
	ret = now ? fc__ctrl_pio(dev, ch->peer, ch->port, kind, RQ(r)->cookie,
				 val, &end) :
		    -EAGAIN;
	if (ret > 0) {
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
		rq_end(r);
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
 * those cleared meanwhile gather behind it and go together next.
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
static void data_queue(struct fc__fabric *fab, struct fc_req *r)
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
	data_queue(dev->fab, r);
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

static int rndv_submit(struct fc_dev *dev, struct fc_req *r, unsigned int lane,
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

static void answered(struct fc_dev *dev, struct fc_req *r, uint8_t kind,
		     uint64_t val);

/* Receive @r has read its message (or failed to): the sender may let go
 * of its buffer, and the next reads from that node may go. */
static void read_done(struct fc_dev *dev, struct fc_req *r, int status)
{
	fc__ctrl_answer(dev, r->node, r->port, FC__CTRL_GOT, RQ(r)->cookie,
			(uint64_t)(int64_t)status);
	rq_end(r);
	fc__req_umem_put(dev, r);
	data_done(dev->fab, r);
}

static bool rndv_chain_ended(struct fc_dev *dev, struct fc_req *r, int *status)
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
			answered(dev, r, RQ(r)->early, RQ(r)->early_val);
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
	rq_end(r);
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
static void cleared(struct fc_dev *dev, struct fc_req *r, uint64_t addr)
{
	int ret;

	RQ(r)->rget = false; /* the receiver will not read it */
	RQ(r)->revoking = false;
	ret = !addr		    ? 0 :
	      !cts_addr_ok(r, addr) ? -EPROTO :
				      start_data(dev, r, addr);

	if (!addr || ret) {
		rq_end(r);
		fc__req_umem_put(dev, r);
		fc__req_end(dev, r, ret);
	}
}

/*
 * The receiver answered a send that timed out (REVOKED): it will clear
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
	if (!q || rq_new(q) || fc_mem_alloc(dev, r->len, 0, &copy)) {
		if (q)
			fc__req_free(q);
		RQ(r)->rnext = RV(fab)->cts_wait;
		RV(fab)->cts_wait = r;
		return;
	}
	memcpy(copy->addr, RQ(r)->sbuf, r->len);
	q->orphan = true; /* nobody waits: freed when it ends */
	q->port = r->port;
	q->len = r->len;
	q->umem = copy;
	RQ(q)->state = FC__RNDV_WAIT_CTS;
	RQ(q)->cookie = RQ(r)->cookie;
	RQ(q)->rnext = RV(fab)->cts_wait;
	RV(fab)->cts_wait = q;
	rq_end(r);
	fc__req_umem_put(dev, r);
	fc__req_end(dev, r, -ETIMEDOUT);
}

/* The receiver's answer of @kind to announced send @r, off every list. */
static void answered(struct fc_dev *dev, struct fc_req *r, uint8_t kind,
		     uint64_t val)
{
	int64_t err = (int64_t)val;

	RQ(r)->early = 0;
	switch (kind) {
	case FC__CTRL_CTS:
		cleared(dev, r, val);
		break;
	case FC__CTRL_GOT:
		/* read, or failed to: the receiver says which */
		rq_end(r);
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
			 * cleared since */
			if (kind != FC__CTRL_CTS && !RQ(r)->rget)
				return;
			*pp = RQ(r)->rnext;
			RQ(r)->rnext = NULL;
			answered(dev, r, kind, val);
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

static void on_cts(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, uint64_t addr)
{
	on_answer(dev, port, node, cookie, FC__CTRL_CTS, addr);
}

static void on_got(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, uint64_t val)
{
	on_answer(dev, port, node, cookie, FC__CTRL_GOT, val);
}

static void on_revoked(struct fc_dev *dev, uint32_t port, uint32_t node,
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

/* ---- Receiving ---- */

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
	struct fc__msg *m = s ? calloc(1, sizeof(*m)) : NULL;

	if (!m) {
		/* Tell the sender, or it would wait for ever. */
		fc__ctrl_answer(dev, node, port, FC__CTRL_CTS, cookie, 0);
		return;
	}
	m->state = FC__MSG_DEFERRED;
	m->cookie = cookie;
	m->raddr = raddr;
	m->len = len;
	m->land_at_ns = fc__now_ns() + land_wait_ns(fab, len);
	fc__src_queue(s, m);
	fc__src_match(fab, port, s);
}

/*
 * Read announced message @m into receive @r, registered: a chain of GETs
 * from the sender's buffer, queued behind the reads and writes to its node
 * in flight. RETURN VALUE: 0, or -errno (the message is cleared instead).
 */
static int start_get(struct fc_dev *dev, uint32_t port, struct fc_req *r,
		     const struct fc__msg *m)
{
	uint64_t piece = dev->info.max_xfer_len, off;
	unsigned int n = (unsigned int)((m->len + piece - 1) / piece), i;
	struct fc_xfer *x;

	if (!RV(dev->fab)->get_max || !piece || n > dev->info.max_chain)
		return -EMSGSIZE;
	if (rq_new(r))
		return -ENOMEM;
	x = n == 1 ? &r->xfer1 : calloc(n, sizeof(*x));
	if (!x) {
		rq_end(r);
		return -ENOMEM;
	}
	memset(x, 0, n * sizeof(*x));
	for (i = 0, off = 0; i < n; i++, off += piece) {
		x[i].src.space = FC_SPACE_FABRIC;
		x[i].src.addr = m->raddr + off;
		x[i].dst = fc_host(r->umem, r->umem_off + off);
		x[i].len = m->len - off < piece ? m->len - off : piece;
	}
	r->xfers = x;
	r->n = n;
	RQ(r)->state = FC__RNDV_GET;
	RQ(r)->cookie = m->cookie;
	r->port = port;
	fc__stat_inc(&dev->stats.rgets);
	data_queue(dev->fab, r);
	return 0;
}

static void rndv_clear(struct fc_dev *dev, uint32_t port, struct fc__src *s,
		       struct fc__msg *m, struct fc_req *r)
{
	uint32_t node = r->node;
	uint64_t addr = 0;
	int ret = 0;

	r->len = m->len;
	if (m->len > r->cap) {
		/* Consumed and dropped, as an eager one would be. */
		ret = -EMSGSIZE;
	} else {
		/* straight into the caller's registration where it has one */
		ret = fc__req_umem_get(dev, r, r->buf, m->len, true);
		if (!ret && m->raddr && !start_get(dev, port, r, m)) {
			free(m);
			return;
		}
		if (!ret)
			ret = fc_mem_fabric_addr(dev, r->umem, r->umem_off,
						 &addr);
	}
	if (!ret)
		ret = rq_new(r);
	if (!ret) {
		RQ(r)->state = FC__RNDV_LAND;
		RQ(r)->cookie = m->cookie;
		r->port = port;
		RQ(r)->rnext = RV(dev->fab)->landing;
		RV(dev->fab)->landing = r;
		ret = fc__ctrl_answer(dev, node, port, FC__CTRL_CTS, m->cookie,
				      addr);
		if (ret) {
			RV(dev->fab)->landing = RQ(r)->rnext;
			rq_end(r);
		}
	}
	if (ret) {
		fc__req_umem_put(dev, r);
		/* No address: the sender drops it (and must hear so). */
		fc__ctrl_answer(dev, node, port, FC__CTRL_CTS, m->cookie, 0);
		r->status = ret;
	}
	free(m);
}

static void rndv_deliver(struct fc__port *pt, struct fc__msg *m,
			 struct fc_req *r)
{
	r->len = m->len;
	r->status = m->status ? m->status : m->len > r->cap ? -EMSGSIZE : 0;
	if (!r->status)
		memcpy(r->buf, m->land->addr, m->len);
	pt->buffered -= m->len;
	fc__spare_put(r->dev, m->land);
	free(m);
}

static void rndv_land_deferred(struct fc_dev *dev, uint32_t port,
			       struct fc__src *s)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__port *pt = fab->ports[port];
	struct fc__msg *m;
	uint64_t addr, now = 0;

	for (m = s->q_head; m; m = m->next) {
		if (m->state != FC__MSG_DEFERRED)
			continue;
		if (!now)
			now = fc__now_ns();
		if (now < m->land_at_ns) {
			/* its receive may come yet: look again then */
			if (!fab->land_due_ns ||
			    m->land_at_ns < fab->land_due_ns)
				fab->land_due_ns = m->land_at_ns;
			return;
		}
		if (pt->buffered + m->len > FC_CHAN_BUFFERED)
			return; /* the sender waits for a receive */
		if (fc__spare_get(dev, m->len, &m->land))
			return;
		if (fc_mem_fabric_addr(dev, m->land, 0, &addr) ||
		    fc__ctrl_answer(dev, s->node, port, FC__CTRL_CTS, m->cookie,
				    addr)) {
			fc__spare_put(dev, m->land);
			m->land = NULL;
			return;
		}
		m->state = FC__MSG_LANDING;
		pt->buffered += m->len;
	}
}

/* Land what has waited long enough, wherever it is: no packet may come
 * from its source to call rndv_land_deferred() meanwhile. */
static void rndv_land_due(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	uint32_t port, node;
	struct fc__port *pt;

	if (fc__now_ns() < fab->land_due_ns)
		return;
	fab->land_due_ns = 0;
	for (port = 0; port < FC_MAX_CHANNELS; port++) {
		pt = fab->ports[port];
		for (node = 0; pt && node < FC_MAX_NODES; node++)
			if (pt->src[node] && pt->src[node]->q_head)
				rndv_land_deferred(dev, port, pt->src[node]);
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
		rq_end(r);
		fc__req_umem_put(dev, r);
		r->status = status;
		return;
	}
	for (m = s->q_head; m; m = m->next) {
		if (m->state == FC__MSG_LANDING && m->cookie == cookie) {
			m->state = FC__MSG_LANDED;
			m->status = status;
			fc__src_match(fab, port, s);
			return;
		}
	}
}

static void on_fin_ctrl(struct fc_dev *dev, uint32_t port, uint32_t node,
			uint32_t cookie, uint64_t val)
{
	int64_t err = (int64_t)val;

	on_fin(dev, port, node, cookie,
	       err < 0 && err > -4096 ? (int)err :
	       err		      ? -EIO :
					0);
}

static void on_rts_ctrl(struct fc_dev *dev, uint32_t port, uint32_t node,
			uint32_t cookie, uint64_t val)
{
	if (val && val <= FC_CHAN_MAX_MSG)
		on_rts(dev, port, node, cookie, val, 0);
}

/* An announcement naming the sender's buffer: offset | (length - 1) << 40
 * (rts_val()); read where this board can, else cleared as any. */
static void on_rts_get_ctrl(struct fc_dev *dev, uint32_t port, uint32_t node,
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

/* The sender gave up waiting: a message not read yet is cleared instead,
 * and it hears so. One being read (or cleared) is answered by that. */
static void on_revoke(struct fc_dev *dev, uint32_t port, uint32_t node,
		      uint32_t cookie, uint64_t val)
{
	struct fc__src *s = fc__src_find(dev->fab, port, node);
	struct fc__msg *m;

	for (m = s ? s->q_head : NULL; m; m = m->next) {
		if (m->state == FC__MSG_DEFERRED && m->cookie == cookie &&
		    m->raddr) {
			m->raddr = 0;
			fc__ctrl_answer(dev, node, port, FC__CTRL_REVOKED,
					cookie, 0);
			return;
		}
	}
}

/* ---- Giving up ---- */

/* Copy the caller's data, for a send that goes on without the caller. */
static int take_copy(struct fc_dev *dev, struct fc_req *r)
{
	struct fc_mem *copy;
	int ret = fc_mem_alloc(dev, r->len, 0, &copy);

	if (ret)
		return ret;
	memcpy(copy->addr, RQ(r)->sbuf, r->len);
	fc__req_umem_put(dev, r);
	r->umem = copy;
	RQ(r)->sbuf = NULL;
	return 0;
}

/* Take @r off a list of requests linked by rnext. */
static void unlink_req(struct fc_req **head, struct fc_req *r)
{
	struct fc_req **pp;

	for (pp = head; *pp && *pp != r; pp = &RQ((*pp))->rnext)
		;
	if (*pp)
		*pp = RQ(r)->rnext;
	RQ(r)->rnext = NULL;
}

static int rndv_withdraw(struct fc_dev *dev, struct fc_req *r, bool orphan)
{
	struct fc__fabric *fab = dev->fab;
	int ret;

	if (r->type == FC__REQ_RECV && st(r) == FC__RNDV_GET) {
		/* its read ends in bounded time (a dead sender fails it) */
		if (!orphan)
			return -EBUSY;
		fc__req_disown(r);
		return 1;
	}
	if (r->type == FC__REQ_RECV) {
		if (st(r) != FC__RNDV_LAND)
			return 2;
		/* Its data is on the way: only a dead sender gives it up. */
		if (!orphan)
			return -EBUSY;
		unlink_req(&RV(fab)->landing, r);
		rq_end(r);
		return 0; /* the caller frees it, and unregisters */
	}
	if (r->type != FC__REQ_SEND)
		return 2;
	if (st(r) == FC__RNDV_RTS && !r->submitted)
		return 2; /* not started: dropped as any send */
	if (st(r) == FC__RNDV_WAIT_CTS && fc__peer_down(dev, r->node)) {
		unlink_req(&RV(fab)->cts_wait, r);
		rq_end(r);
		return 0;
	}
	/* The board, or the receiver's (rget), may read the caller's buffer. */
	if (!orphan || RQ(r)->rget || st(r) >= FC__RNDV_DATA)
		return -EBUSY;
	ret = take_copy(dev, r);
	if (ret)
		return ret;
	fc__req_disown(r);
	return 1;
}

static void free_rlist(struct fc_req *r)
{
	struct fc_req *next;

	for (; r; r = next) {
		next = RQ(r)->rnext;
		fc__xfers_free(r);
		free(r->proto);
		free(r);
	}
}

static void rndv_fini(struct fc__fabric *fab)
{
	struct rndv *rv = RV(fab);

	free_rlist(rv->cts_wait);
	free_rlist(rv->data_head);
	free_rlist(rv->landing);
	free(rv);
	fab->rndv = NULL;
}

/* ---- What the transport and the control messages call ---- */

void fc__rndv_register(struct fc__fabric *fab)
{
	struct rndv *rv = calloc(1, sizeof(*rv));

	if (!rv) {
		fab->rndv_min = 0; /* every message eager, then */
		return;
	}
	fab->rndv = rv;
	fab->up.chain_ended = rndv_chain_ended;
	fab->up.submit = rndv_submit;
	fab->up.withdraw = rndv_withdraw;
	fab->up.msg_deliver = rndv_deliver;
	fab->up.msg_clear = rndv_clear;
	fab->up.msg_land = fab->rndv_min ? rndv_land_deferred : NULL;
	fab->up.msg_land_due = rndv_land_due;
	rv->land_delay_ns = fc__env_size(LAND_ENV, LAND_DELAY_US) * 1000;
	fab->up.rndv_fini = rndv_fini;
	if (fab->rndv_min && (fab->dev->info.caps & FC_CAP_FABRIC_GET))
		rv->get_max = fc__env_size(GET_ENV, GET_MAX);
	fc__ctrl_register(fab, FC__CTRL_RTS, on_rts_ctrl);
	fc__ctrl_register(fab, FC__CTRL_CTS, on_cts);
	fc__ctrl_register(fab, FC__CTRL_FIN, on_fin_ctrl);
	fc__ctrl_register(fab, FC__CTRL_RTS_GET, on_rts_get_ctrl);
	fc__ctrl_register(fab, FC__CTRL_GOT, on_got);
	fc__ctrl_register(fab, FC__CTRL_REVOKE, on_revoke);
	fc__ctrl_register(fab, FC__CTRL_REVOKED, on_revoked);
}
