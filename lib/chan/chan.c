// SPDX-License-Identifier: MIT
/*
 * Channels: messages between two ranks on one endpoint (port), each message
 * one DMA chain whose destination is the peer's channel address. Receiving
 * is done by progress (fabric.c); this file opens channels, starts sends
 * and posts receives, and waits for requests.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "chan.h"
#include "proto.h"
#include "handle.h"
#include "live.h"

/*
 * Live channels, so that a closed one is refused (-EBADF) rather than read:
 * handles are compared, never dereferenced, until found here.
 */
static struct fc__live live_chans = FC__LIVE_INIT;

static bool of_dev(const void *ch, const void *dev)
{
	return ((const struct fc_chan *)ch)->dev == dev;
}

/* Channels of a device being closed: forget them all. */
void fc__chan_forget_dev(struct fc_dev *dev)
{
	fc__live_del_if(&live_chans, of_dev, dev);
}

/* RETURN VALUE: 0 and the channel's fabric locked, or -EINVAL/-EBADF. */
static inline __attribute__((always_inline)) int chan_get(struct fc_chan *ch)
{
	if (!ch)
		return -EINVAL;
	if (!fc__live_has(&live_chans, ch))
		return -EBADF;
	fc__fab_lock(ch->dev->fab);
	return 0;
}

int fc__chan_open(struct fc_dev *dev, uint32_t peer, uint32_t port,
		  struct fc_chan **chanp)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__src *s;
	struct fc_chan *ch;
	int ret;

	s = fc__src_get(fab, port, peer);
	if (!s)
		return -ENOMEM;
	if (s->chan)
		return -EBUSY;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->dev = dev;
	ch->peer = peer;
	ch->port = port;
	ret = fc__live_add(&live_chans, ch);
	if (ret) {
		free(ch);
		return ret;
	}
	s->chan = ch;
	*chanp = ch;
	return 0;
}

FC__EXPORT int fc_chan_open(struct fc_dev *dev, uint32_t peer, uint32_t port,
			    unsigned int flags, struct fc_chan **chanp)
{
	int ret;

	if (!dev || !chanp || flags)
		return -EINVAL;
	if (!dev->fab)
		return -ENOTCONN;
	if (peer >= dev->fab->world.size || port >= FC_CHAN_PORTS)
		return -EINVAL;
	fc__fab_lock(dev->fab);
	ret = fc__peer_check_open(dev, peer, port, fc__progress);
	if (!ret)
		ret = fc__chan_open(dev, peer, port, chanp);
	fc__fab_unlock(dev->fab);
	return ret;
}

FC__EXPORT int fc_chan_close(struct fc_chan *ch)
{
	struct fc__fabric *fab;
	struct fc__src *s;
	int ret;

	ret = chan_get(ch);
	if (ret)
		return ret;
	fab = ch->dev->fab;
	if (ch->reqs) {
		fc__fab_unlock(fab);
		return -EBUSY;
	}
	s = fc__src_find(fab, ch->port, ch->peer);
	s->chan = NULL;
	fc__live_del(&live_chans, ch);
	fc__fab_unlock(fab);
	free(ch);
	return 0;
}

/*
 * The request of a send whose packets are in the PIO window up to @end
 * (@taken: the board has them): @r, or a cached one (@r NULL: there is one
 * at hand).
 */
static struct fc_req *pio_req(struct fc_chan *ch, struct fc_req *r,
			      uint64_t cost, uint32_t end, bool taken,
			      bool quiet)
{
	struct fc_dev *dev = ch->dev;

	if (!r)
		r = fc__req_new(dev, FC__REQ_SEND, ch->peer); /* cached */
	r->port = ch->port;
	r->chan = ch;
	ch->reqs++;
	fc__credit_set(r, cost);
	fc__pio_sent(dev->fab, r, end, taken);
	if (r->status == -EINPROGRESS && !quiet)
		fc__progress(dev);
	return r;
}

/*
 * Start a send of @buf: *reqp its request. @lean (a blocking send): a
 * small message the window takes at once gets none, *reqp NULL, where a
 * cached request is at hand to be made if the board is slow to take it
 * (the window's packets cannot be taken back). @quiet: the board is not
 * moved here; the caller moves it once for many sends.
 */
static int isend(struct fc_chan *ch, const void *buf, size_t len, bool kept,
		 bool lean, bool quiet, struct fc_req **reqp)
{
	struct fc_dev *dev = ch->dev;
	struct fc__fabric *fab = dev->fab;
	struct fc_req *r = NULL;
	bool rndv, go;
	struct fc__src *s;
	uint32_t end = 0;
	uint64_t cost;
	int ret, pio = -EAGAIN;

	if (!buf || !len || !reqp)
		return -EINVAL;
	if (len > FC_CHAN_MAX_MSG)
		return -EMSGSIZE;
	ret = fc__peer_check(dev, ch->peer);
	if (ret)
		return ret;
	s = fc__src_get(fab, ch->port, ch->peer);
	if (!s)
		return -ENOMEM;
	if (!lean || !fab->req_cached) {
		r = fc__req_new(dev, FC__REQ_SEND, ch->peer);
		if (!r)
			return -ENOMEM;
	}
	rndv = fc__rndv_wanted(dev, len);
	cost = rndv ? 0 : fc__credit_cost(len);
	/* The short way: the window takes it, its credit counted. */
	if (!rndv && len <= PIO_MAX_MSG)
		pio = fc__eager_send_now(ch, s, buf, len, &end);
	if (pio == 2 && !r) {
		*reqp = NULL; /* sent and ended: nothing to wait for */
		return 0;
	}
	if (pio > 0) {
		*reqp = pio_req(ch, r, cost, end, pio == 2, quiet);
		return 0;
	}
	if (!r)
		r = fc__req_new(dev, FC__REQ_SEND, ch->peer); /* cached */
	r->port = ch->port;
	r->chan = ch;
	ch->reqs++;
	/* Eager bytes need the receiver's credit; announcements only
	 * their turn. */
	go = fc__credit_take(dev, ch->port, s, cost);
	fc__credit_set(r, go ? cost : 0);
	/* Large messages go straight from @buf, once the peer has room. */
	if (rndv)
		ret = fc__rndv_isend(ch, buf, len, go, r);
	else
		ret = fc__eager_isend(ch, buf, len, kept, r);
	if (ret) {
		if (go)
			fc__credit_untake(s, cost);
		ch->reqs--;
		free(r);
		return ret;
	}
	if (go && !r->submitted)
		fc__req_queue(fab, r);
	else if (!go)
		fc__credit_hold(s, r, cost);
	if (!quiet)
		fc__progress(dev);
	*reqp = r;
	return 0;
}

int fc__isend(struct fc_chan *ch, const void *buf, size_t len,
	      struct fc_req **reqp)
{
	return isend(ch, buf, len, false, false, false, reqp);
}

int fc__irecv(struct fc_chan *ch, void *buf, size_t cap, struct fc_req **reqp)
{
	struct fc_dev *dev = ch->dev;
	struct fc__src *s;
	struct fc_req *r;

	if (!buf || !reqp)
		return -EINVAL;
	s = fc__src_get(dev->fab, ch->port, ch->peer);
	if (!s)
		return -ENOMEM;
	r = fc__req_new(dev, FC__REQ_RECV, ch->peer);
	if (!r)
		return -ENOMEM;
	r->buf = buf;
	r->cap = cap;
	r->chan = ch;
	ch->reqs++;
	fc__src_post(dev->fab, ch->port, s, r);
	*reqp = r;
	return 0;
}

/*
 * A send from device memory: its bytes are copied into a host bounce
 * buffer now (so @buf is free again at once) and sent from there, as any
 * host buffer is; the bounce buffer goes back when the request is freed.
 */
static __attribute__((noinline, cold)) int
dev_isend(struct fc_chan *ch, const void *buf, size_t len, struct fc_req **reqp)
{
	struct fc__bounce *b;
	int ret;

	if (!len)
		return -EINVAL;
	if (len > FC_CHAN_MAX_MSG)
		return -EMSGSIZE;
	ret = fc__bounce_get(len, &b);
	if (ret)
		return ret;
	ret = fc__devmem_to_host(b->p, buf, len);
	if (!ret)
		ret = fc__isend(ch, b->p, len, reqp);
	if (ret) {
		fc__bounce_put(b);
		return ret;
	}
	(*reqp)->bounce = b;
	return 0;
}

/* A receive into device memory: into a bounce buffer, copied to @buf
 * when the request ends (fabric.c, req_done). */
static __attribute__((noinline, cold)) int
dev_irecv(struct fc_chan *ch, void *buf, size_t cap, struct fc_req **reqp)
{
	struct fc__bounce *b;
	int ret;

	if (cap > FC_CHAN_MAX_MSG)
		cap = FC_CHAN_MAX_MSG; /* no message is longer */
	ret = fc__bounce_get(cap, &b);
	if (ret)
		return ret;
	ret = fc__irecv(ch, b->p, cap, reqp);
	if (ret) {
		fc__bounce_put(b);
		return ret;
	}
	b->dst = buf;
	(*reqp)->bounce = b;
	return 0;
}

/* A user's send or receive, by where its buffer lives (devmem.c). */
static inline __attribute__((always_inline)) int
user_isend(struct fc_chan *ch, const void *buf, size_t len, bool lean,
	   struct fc_req **reqp)
{
	if (fc__devmem_path(ch->dev, buf) == FC__PATH_HOST)
		return isend(ch, buf, len, false, lean, false, reqp);
	return reqp ? dev_isend(ch, buf, len, reqp) : -EINVAL;
}

static inline __attribute__((always_inline)) int
user_irecv(struct fc_chan *ch, void *buf, size_t cap, struct fc_req **reqp)
{
	if (fc__devmem_path(ch->dev, buf) == FC__PATH_HOST)
		return fc__irecv(ch, buf, cap, reqp);
	return reqp ? dev_irecv(ch, buf, cap, reqp) : -EINVAL;
}

/* Posts a send of @sbuf (@send; @kept: see fc__eager_isend()) or a receive
 * into @rbuf, of @n bytes. */
static int chan_post(struct fc_chan *ch, bool send, bool kept, const void *sbuf,
		     void *rbuf, size_t n, struct fc_req **reqp)
{
	struct fc_req *r;
	int ret = chan_get(ch);

	if (ret)
		return ret;
	if (!reqp)
		ret = -EINVAL;
	else if (kept) /* the library's own buffers */
		ret = isend(ch, sbuf, n, kept, false, false, &r);
	else if (send)
		ret = user_isend(ch, sbuf, n, false, &r);
	else
		ret = user_irecv(ch, rbuf, n, &r);
	if (!ret)
		ret = fc__req_export(r, reqp);
	fc__fab_unlock(ch->dev->fab);
	return ret;
}

FC__EXPORT int fc_chan_isend(struct fc_chan *ch, const void *buf, size_t len,
			     struct fc_req **reqp)
{
	return chan_post(ch, true, false, buf, NULL, len, reqp);
}

int fc__chan_isend_kept(struct fc_chan *ch, const void *buf, size_t len,
			struct fc_req **reqp)
{
	return chan_post(ch, true, true, buf, NULL, len, reqp);
}

int fc__chan_isend_now(struct fc_chan *ch, const void *buf, size_t len,
		       struct fc_req **reqp)
{
	struct fc_req *r;
	int ret = chan_get(ch);

	if (ret)
		return ret;
	/* a rendezvous would read @buf after we return */
	ret = fc__rndv_wanted(ch->dev, len) ?
		      -E2BIG :
		      isend(ch, buf, len, false, true, true, &r);
	if (!ret && !r)
		*reqp = NULL; /* in the window and taken: ended */
	else if (!ret)
		ret = fc__req_export(r, reqp);
	fc__fab_unlock(ch->dev->fab);
	return ret;
}

FC__EXPORT int fc_chan_irecv(struct fc_chan *ch, void *buf, size_t cap,
			     struct fc_req **reqp)
{
	return chan_post(ch, false, false, NULL, buf, cap, reqp);
}

FC__EXPORT int fc_chan_send(struct fc_chan *ch, const void *buf, size_t len,
			    int timeout_ms)
{
	struct fc__fabric *fab;
	struct fc_req *r;
	uint32_t end;
	int ret = chan_get(ch);

	if (ret)
		return ret;
	fab = ch->dev->fab;
	/* The shortest way: one packet, which the window takes at once. */
	if (buf && len - 1 < FC_PKT_PAYLOAD &&
	    fc__devmem_path(ch->dev, buf) == FC__PATH_HOST) {
		ret = fc__eager_send_one(ch, buf, len, &end);
		if (ret == 2 || (ret < 0 && ret != -EAGAIN)) {
			fc__fab_unlock(fab);
			return ret < 0 ? ret : 0;
		}
	}
	if (ret == 1) { /* written, not taken yet: waited for */
		r = pio_req(ch, NULL, fc__credit_cost(len), end, false, false);
		ret = 0;
	} else {
		ret = user_isend(ch, buf, len, true, &r);
	}
	if (!ret && r) {
		ret = fc__req_wait(r, timeout_ms, NULL);
		/* Not started: dropped; started: the board goes on with it,
		 * unless a board may read @buf itself (rendezvous): that
		 * ends in bounded time, and is waited for. */
		if (ret == -ETIMEDOUT && fc__req_cancel(r) == -EBUSY) {
			if (fc__rndv_send_busy(ch->dev, r))
				ret = fc__req_wait(r, -1, NULL);
			else
				fc__req_orphan(r);
		}
	}
	fc__fab_unlock(fab);
	return ret;
}

int fc__chan_send_detached(struct fc_chan *ch, const void *buf, size_t len)
{
	struct fc_req *r;
	int ret = chan_get(ch);

	if (ret)
		return ret;
	/* A rendezvous would read @buf after we return. */
	ret = fc__rndv_wanted(ch->dev, len) ? -EINVAL :
					      fc__isend(ch, buf, len, &r);
	if (!ret) {
		if (r->status == -EINPROGRESS)
			fc__req_disown(r); /* freed when it ends */
		else
			fc__req_free(r);
	}
	fc__fab_unlock(ch->dev->fab);
	return ret;
}

/* fc_chan_recv() the long way: a receive posted, and waited for. */
static __attribute__((noinline)) int recv_wait(struct fc_chan *ch, void *buf,
					       size_t cap, size_t *len,
					       int timeout_ms)
{
	struct fc_req *r;
	size_t got = 0;
	int ret;

	ret = user_irecv(ch, buf, cap, &r);
	if (ret)
		return ret;
	ret = fc__req_wait(r, timeout_ms, &got);
	/* A message being written into @buf (rendezvous) is waited for. */
	if (ret == -ETIMEDOUT && fc__req_cancel(r) == -EBUSY)
		ret = fc__req_wait(r, -1, &got);
	if (ret != -ETIMEDOUT)
		*len = got;
	return ret;
}

FC__EXPORT int fc_chan_recv(struct fc_chan *ch, void *buf, size_t cap,
			    size_t *len, int timeout_ms)
{
	int ret = chan_get(ch);

	if (ret)
		return ret;
	/* Here already: no request (host memory only: a device buffer
	 * takes its bounce buffer's way). */
	if (!len)
		ret = -EINVAL;
	else if (!buf || fc__devmem_path(ch->dev, buf) != FC__PATH_HOST ||
		 fc__recv_now(ch->dev, ch->port, ch->peer, buf, cap, len))
		ret = recv_wait(ch, buf, cap, len, timeout_ms);
	fc__fab_unlock(ch->dev->fab);
	return ret;
}

/* ---- Requests ---- */

enum req_op {
	REQ_TEST,
	REQ_PEEK,
	REQ_WAIT,
	REQ_CANCEL
};

/* Runs @op on the request @handle names, with its fabric locked. */
static int req_call(struct fc_req *handle, enum req_op op, int timeout_ms,
		    size_t *len)
{
	struct fc__fabric *fab;
	struct fc_dev *dev;
	struct fc_req *req;
	int ret;

	/* Ended, or its board closed: a stale handle, not a request. */
	req = handle ? fc__handle_get(handle, &dev) : NULL;
	if (!req)
		return -EINVAL;
	/* A test moves everything else of the process too (a wait does
	 * whenever its own request did not move). */
	if (op == REQ_TEST)
		fc__poll_all(dev);
	fab = dev->fab;
	fc__fab_lock(fab);
	if (fc__handle_get(handle, &dev) != req) {
		fc__fab_unlock(fab); /* ended meanwhile, by another thread */
		return -EINVAL;
	}
	switch (op) {
	case REQ_TEST:
		ret = fc__req_test(req, len);
		break;
	case REQ_PEEK:
		ret = req->status == -EINPROGRESS ? -EINPROGRESS :
						    fc__req_test(req, len);
		break;
	case REQ_WAIT:
		ret = fc__req_wait(req, timeout_ms, len);
		break;
	default:
		ret = fc__req_cancel(req);
		break;
	}
	fc__fab_unlock(fab);
	return ret;
}

FC__EXPORT int fc_req_test(struct fc_req *req, size_t *len)
{
	return req_call(req, REQ_TEST, 0, len);
}

int fc__req_peek(struct fc_req *req, size_t *len)
{
	return req_call(req, REQ_PEEK, 0, len);
}

FC__EXPORT int fc_req_wait(struct fc_req *req, int timeout_ms, size_t *len)
{
	return req_call(req, REQ_WAIT, timeout_ms, len);
}

FC__EXPORT int fc_req_cancel(struct fc_req *req)
{
	return req_call(req, REQ_CANCEL, 0, NULL);
}

FC__EXPORT int fc_progress(struct fc_dev *dev)
{
	uint64_t moved = 0;
	bool any;

	if (!dev)
		return -EINVAL;
	if (!dev->fab) {
		if (dev->be->progress) {
			fc__lock(&dev->lock);
			dev->be->progress(dev, &moved);
			fc__unlock(&dev->lock);
		}
		return moved ? 1 : 0;
	}
	fc__fab_lock(dev->fab);
	any = fc__progress(dev);
	fc__fab_unlock(dev->fab);
	any |= fc__poll_all(dev);
	return any ? 1 : 0;
}

/* Registering costs a page fault per 4 KiB and a mapping: kept. */
int fc__chan_buf_get(struct fc_dev *dev, size_t len, struct fc_mem **memp)
{
	int ret;

	if (!dev->fab)
		return fc_mem_alloc(dev, len, 0, memp);
	fc__fab_lock(dev->fab);
	ret = fc__spare_get(dev, len, memp);
	fc__fab_unlock(dev->fab);
	return ret;
}

void fc__chan_buf_put(struct fc_dev *dev, struct fc_mem *mem)
{
	if (!dev->fab || fc__mem_held(dev, mem)) {
		/* a send given up on still reads it: -EBUSY, it goes at
		 * fc_close() */
		fc_mem_free(dev, mem);
		return;
	}
	fc__fab_lock(dev->fab);
	fc__spare_put(dev, mem);
	fc__fab_unlock(dev->fab);
}

void fc__chan_stats_get(struct fc_dev *dev, struct fc__chan_stats *out)
{
	out->kept_copies =
		__atomic_load_n(&dev->stats.kept_copies, __ATOMIC_RELAXED);
	out->rndv_regs =
		__atomic_load_n(&dev->stats.rndv_regs, __ATOMIC_RELAXED);
	out->direct = __atomic_load_n(&dev->stats.direct, __ATOMIC_RELAXED);
	out->rgets = __atomic_load_n(&dev->stats.rgets, __ATOMIC_RELAXED);
	out->straight = __atomic_load_n(&dev->stats.straight, __ATOMIC_RELAXED);
	out->rts_pio = __atomic_load_n(&dev->stats.rts_pio, __ATOMIC_RELAXED);
	out->one_packet =
		__atomic_load_n(&dev->stats.one_packet, __ATOMIC_RELAXED);
}

int fc__chan_protocols(struct fc_dev *dev)
{
	int ret;

	if (!dev->fab)
		return 0;
	ret = fc__rndv_register(dev->fab);
	if (!ret)
		ret = fc__credit_register(dev);
	return ret;
}
