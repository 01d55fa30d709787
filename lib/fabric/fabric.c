// SPDX-License-Identifier: MIT
/*
 * The fabric's engine room: setup, progress (submit queued chains, let the
 * board move, retire ended chains, drain what arrived: fabric_rx.c) and
 * the requests' lifecycle (peers' state: peer_check.c). See transport.h
 * for the data structures.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "transport_internal.h"
#include "handle.h"

static void free_req_list(struct fc_req *r);

/*
 * A board in a cluster gets its fabric state at open: somewhere to receive
 * on every port (fabric_rx.c), so that nothing sent to it early is lost. A
 * board in no cluster, or on a backend without the fabric ops, gets none.
 */
int fc__fabric_init(struct fc_dev *dev)
{
	const struct fc__backend *be = dev->be;
	struct fc__fabric *fab;
	struct fc_world w;
	unsigned int p;
	int ret;

	if (!be->world || !be->progress || !be->mem_bus)
		return 0;
	fc__lock(&dev->lock);
	ret = be->world(dev, &w);
	fc__unlock(&dev->lock);
	if (ret == -ENOTCONN)
		return 0;
	if (ret)
		return ret;

	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -ENOMEM;
	fc__lock_init(&fab->lock);
	fab->dev = dev;
	fab->single = dev->single;
	fab->world = w;
	ret = fc_mem_alloc(dev, (size_t)STAGE_SLOTS * STAGE_SLOT_LEN, 0,
			   &fab->stage);
	if (ret)
		goto err_free_fab;
	fab->stage_free = STAGE_SLOTS >= 32 ? ~0u : (1u << STAGE_SLOTS) - 1;
	fab->lanes = dev->engines > 1 ? dev->engines : 1;
	if (fab->lanes > FC_DMA_MAX_ENGINES)
		fab->lanes = FC_DMA_MAX_ENGINES;
	for (p = 0; p < FC_DMA_MAX_ENGINES; p++)
		fab->lane[p].node = -1;
	memset(fab->node_lane, -1, sizeof(fab->node_lane));
	/* A few requests at hand from the start: a blocking send whose
	 * message the board takes at once makes none (chan.c: isend()). */
	for (p = 0; p < REQ_PREFILL; p++) {
		struct fc_req *r = calloc(1, sizeof(*r));

		if (!r)
			break;
		r->next = fab->req_cache;
		fab->req_cache = r;
		fab->req_cached++;
	}
	dev->fab = fab;
	ret = fc__rx_init(dev);
	if (ret) {
		/*
		 * -EBUSY: the endpoints belong to another open of the board
		 * (the driver's): this one has no fabric, as a board in no
		 * cluster.
		 */
		dev->fab = NULL;
		fc_mem_free(dev, fab->stage);
		free_req_list(fab->req_cache);
		goto err_free_fab;
	}
	return 0;

err_free_fab:
	free(fab);
	return ret == -EBUSY ? 0 : ret;
}

static void free_req_list(struct fc_req *r)
{
	while (r) {
		struct fc_req *next = r->next;

		fc__xfers_free(r);
		free(r->proto);
		free(r);
		r = next;
	}
}

static void free_src(struct fc__fabric *fab, struct fc__src *s)
{
	struct fc__msg *m;
	unsigned int id;

	while ((m = s->q_head)) {
		s->q_head = m->next;
		free(m);
	}
	free(s->cur);
	free_req_list(s->posted_head);
	for (id = 0; id < FC__PROTO_IDS; id++)
		if (fab->proto[id].src_fini)
			fab->proto[id].src_fini(fab, s);
	free(s);
}

/*
 * Before fc_close() lets go of the board: the requests nobody waits for
 * (a blocking send that timed out going on from a copy, the library's
 * detached messages, rendezvous answers and FINs) were promised to go on,
 * so they finish first. Bounded: it stops when none has ended for
 * LINGER_QUIET_NS (their peer does not take them: gone, or not reading),
 * and after LINGER_MAX_NS whatever happens.
 */
void fc__fabric_linger(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	uint64_t start, now, last;
	unsigned int left, round = 0;

	if (!fab)
		return;
	fc__fab_lock(fab);
	start = last = fc__now_ns();
	left = fab->orphans;
	while (fab->orphans) {
		if (fc__progress(dev)) {
			round = 0;
		} else {
			fc__fab_unlock(fab);
			fc__backoff_dev(dev, &round, fc__now_ns());
			fc__fab_lock(fab);
		}
		now = fc__now_ns();
		if (fab->orphans < left) {
			left = fab->orphans;
			last = now;
		}
		if (now - last >= LINGER_QUIET_NS ||
		    now - start >= LINGER_MAX_NS)
			break;
	}
	fc__fab_unlock(fab);
}

/*
 * At close: the rings are switched off, everything the library holds is
 * freed (channels and requests the caller still has become invalid); the
 * buffers go with the device's other registered memory.
 */
void fc__fabric_fini(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	unsigned int p, n;

	if (!fab)
		return;
	fc__handle_drop_dev(dev);
	fc__rx_fini(dev);
	for (p = 0; p < FC_MAX_CHANNELS; p++) {
		struct fc__port *pt = fab->ports[p];

		if (!pt)
			continue;
		for (n = 0; n < FC_MAX_NODES; n++) {
			if (!pt->src[n])
				continue;
			free(pt->src[n]->chan);
			free_src(fab, pt->src[n]);
		}
		free(pt);
	}
	free_req_list(fab->sendq_head);
	free_req_list(fab->fly_head);
	free_req_list(fab->pio_head);
	for (p = 0; p < FC__PROTO_IDS; p++)
		if (fab->proto[p].fini)
			fab->proto[p].fini(fab, fab->proto[p].state);
	free_req_list(fab->req_cache);
	while (fab->spares)
		fc_mem_free(dev, fab->spare[--fab->spares]);
	free(fab);
	dev->fab = NULL;
}

/* ---- Sends and puts: the chains ---- */

/*
 * Large sends copy into a registered buffer of their own. Allocating and
 * registering one per message costs a page fault per 4 KiB and more than
 * the copy itself: keep a few for the next sends.
 */
int fc__spare_get(struct fc_dev *dev, size_t len, struct fc_mem **memp)
{
	struct fc__fabric *fab = dev->fab;
	unsigned int i;

	for (i = 0; i < fab->spares; i++) {
		struct fc_mem *m = fab->spare[i];

		/* Not much larger: a big one stays for a big message. */
		if (m->len >= len && m->len / 2 <= len) {
			fab->spare[i] = fab->spare[--fab->spares];
			fab->spare_bytes -= m->len;
			*memp = m;
			return 0;
		}
	}
	return fc_mem_alloc(dev, len, 0, memp);
}

void fc__spare_put(struct fc_dev *dev, struct fc_mem *m)
{
	struct fc__fabric *fab = dev->fab;

	if (fab->spares == SPARE_BUFS ||
	    fab->spare_bytes + m->len > SPARE_BYTES) {
		fc_mem_free(dev, m);
		return;
	}
	fab->spare[fab->spares++] = m;
	fab->spare_bytes += m->len;
}

void fc__req_release(struct fc_dev *dev, struct fc_req *r)
{
	struct fc__fabric *fab = dev->fab;

	if (r->stage >= 0)
		fab->stage_free |= 1u << r->stage;
	r->stage = -1;
	if (r->reg)
		fc__spare_put(dev, r->reg);
	r->reg = NULL;
	fc__xfers_free(r);
}

void fc__req_end(struct fc_dev *dev, struct fc_req *r, int status)
{
	struct fc__fabric *fab = dev->fab;

	/* The board found no way to the node: it died or left (asked anew:
	 * the board may know before our last look at it did). */
	if (status == -EHOSTUNREACH && fc__peer_check_fresh(dev, r->node))
		status = -EHOSTDOWN;
	r->next = NULL;
	if (r->proto && fab->up.chain_ended(dev, r, &status))
		return; /* the next step of a rendezvous is queued */
	r->status = status;
	if (status && r->type == FC__REQ_SEND && fab->up.refund)
		fab->up.refund(fab, r);
	fc__req_release(dev, r);
	if (r->type == FC__REQ_PUT) {
		fab->puts--;
		if (status && !fab->put_error)
			fab->put_error = status;
	}
	if (r->orphan)
		fc__req_free(r);
}

/* Does @r's chain send a channel message (data or control)? Its order
 * against the channel's other messages is kept; remote writes' is not. */
static bool chain_has_msg(const struct fc_req *r)
{
	unsigned int i;

	for (i = 0; i < r->n; i++)
		if (r->xfers[i].dst.space == FC_SPACE_FABRIC &&
		    FC_FABRIC_REGION(r->xfers[i].dst.addr) == FC_REGION_CHAN)
			return true;
	return false;
}

/* A chain request to its node queued, or off the queue and the board. */
static void node_chain_add(struct fc__fabric *fab, struct fc_req *r)
{
	fab->node_chains[r->node]++;
	r->msg_chain = chain_has_msg(r);
	if (r->msg_chain)
		fab->node_msg_chains[r->node]++;
}

static void node_chain_drop(struct fc__fabric *fab, struct fc_req *r)
{
	fab->node_chains[r->node]--;
	if (r->msg_chain)
		fab->node_msg_chains[r->node]--;
	r->msg_chain = false;
}

void fc__req_queue(struct fc__fabric *fab, struct fc_req *r)
{
	fc__req_append(&fab->sendq_head, &fab->sendq_tail, r);
	node_chain_add(fab, r);
	if (r->type == FC__REQ_PUT)
		fab->puts++;
}

void fc__pio_queue(struct fc__fabric *fab, struct fc_req *r)
{
	fc__req_append(&fab->pio_head, &fab->pio_tail, r);
}

/* End the PIO sends whose packets the board has taken, in order. */
static bool reap_pio(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	uint32_t head = dev->be->pio_head(dev);
	bool moved = false;
	struct fc_req *r;

	while ((r = fab->pio_head) && (int32_t)(head - r->pio_end) >= 0) {
		fab->pio_head = r->next;
		if (!fab->pio_head)
			fab->pio_tail = NULL;
		fc__req_end(dev, r, 0);
		moved = true;
	}
	return moved;
}

/* ---- Lanes: a queue of chains per DMA engine ---- */

/*
 * The lane for a chain to @node: the one it holds, else a free one that
 * has not just refused a chain (@full); the first engine last, as the
 * caller's own chains (fc_dma_submit) run there. RETURN VALUE: the lane,
 * or -1 when every lane is held by other nodes.
 */
static int lane_for(struct fc__fabric *fab, uint32_t node, uint32_t full)
{
	unsigned int l;

	if (fab->node_lane[node] >= 0)
		return fab->node_lane[node];
	for (l = fab->lanes; l-- > 0;)
		if (fab->lane[l].node < 0 && !(full & (1u << l)))
			return (int)l;
	return -1;
}

static void lane_take(struct fc__fabric *fab, unsigned int l, uint32_t node)
{
	fab->lane[l].node = (int)node;
	fab->lane[l].reqs++;
	fab->node_lane[node] = (int8_t)l;
}

/* A chain request has left the board: its lane is free once the node's
 * last chain there has ended. */
static void lane_put(struct fc__fabric *fab, struct fc_req *r)
{
	struct fc__lane *ln = &fab->lane[r->lane];

	if (!--ln->reqs) {
		fab->node_lane[ln->node] = -1;
		ln->node = -1;
	}
}

/* Nodes with messages in the PIO window the board has not taken yet:
 * their chains wait (see pio_isend()). */
static uint64_t pio_nodes(struct fc__fabric *fab)
{
	uint64_t nodes = 0;
	struct fc_req *r;

	for (r = fab->pio_head; r; r = r->next)
		nodes |= 1ull << r->node;
	return nodes;
}

/*
 * Hand queued chains to the board, each on its node's lane. A node's
 * chains keep their order (a node that must wait, holds up only its
 * own); nodes get lanes in queue order: at the first chain that finds no
 * lane free, the walk stops, so a node waiting for one is not passed by
 * later nodes for ever.
 */
static bool submit_queued(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	struct fc_req **pp = &fab->sendq_head, *r, *prev = NULL;
	uint64_t held = fab->pio_head ? pio_nodes(fab) : 0;
	uint32_t full = 0;
	bool moved = false;
	unsigned int n;
	int lane, ret;

	while ((r = *pp)) {
		if (held & (1ull << r->node))
			goto skip;
		lane = lane_for(fab, r->node, full);
		if (lane < 0)
			break;
		if (full & (1u << lane))
			goto hold;
		/* Rendezvous writes and reads may go several to a chain
		 * (rndv.c). */
		n = 1;
		ret = r->proto ?
			      fab->up.submit(dev, r, (unsigned int)lane, &n) :
			      fc__dma_submit_on(dev, (unsigned int)lane,
						r->xfers, r->n, &r->ticket);
		if (ret == -EAGAIN) {
			full |= 1u << lane;
			if (full == (1u << fab->lanes) - 1)
				break; /* no lane takes more now */
			goto hold;
		}
		moved = true;
		for (; n; n--) {
			r = *pp;
			*pp = r->next;
			if (fab->sendq_tail == r)
				fab->sendq_tail = prev;
			if (ret) {
				node_chain_drop(fab, r);
				fc__req_end(dev, r, ret);
				continue;
			}
			r->submitted = true;
			r->lane = (uint8_t)lane;
			lane_take(fab, (unsigned int)lane, r->node);
			fc__req_append(&fab->fly_head, &fab->fly_tail, r);
		}
		continue;
hold:
		/* Its lane is full: the node's later chains wait too. */
		held |= 1ull << r->node;
skip:
		prev = r;
		pp = &r->next;
	}
	return moved;
}

/* Retire chains that have ended, whatever their order. */
static bool reap(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	struct fc_req **pp = &fab->fly_head, *r, *last = NULL;
	bool moved = false;
	int ret;

	/* fc__progress() has just moved the board: look, do not move it. */
	while ((r = *pp)) {
		ret = fc__dma_ended(dev, r->ticket);
		if (ret == -EINPROGRESS) {
			last = r;
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		moved = true;
		lane_put(fab, r);
		node_chain_drop(fab, r);
		fc__req_end(dev, r, ret == -ENOENT ? -EIO : ret);
	}
	fab->fly_tail = last;
	return moved;
}

/* The protocols waiting on time, in the order of their ids. */
static void proto_ticks(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	unsigned int id;

	for (id = 0; id < FC__PROTO_IDS; id++)
		if (fab->ticking & (1u << id))
			fab->proto[id].tick(dev);
}

bool fc__progress(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	uint64_t board = 0;
	bool moved;

	moved = fab->sendq_head && submit_queued(dev);
	fc__dev_lock(dev);
	dev->be->progress(dev, &board);
	fc__dev_unlock(dev);
	if (fab->fly_head)
		moved |= reap(dev);
	if (fab->pio_head)
		moved |= reap_pio(dev);
	moved |= fc__rx_drain(dev);
	if (fab->ticking)
		proto_ticks(dev);
	if (fab->sendq_head)
		moved |= submit_queued(dev);
	return moved || board;
}

void fc__proto_register(struct fc__fabric *fab, enum fc__proto_id id,
			const struct fc__proto_slot *slot)
{
	fab->proto[id] = *slot;
}

/* ---- Waiting for requests ---- */

/* ---- Requests are made and freed here (ended: fc__req_end) ---- */

/* A request's fields up to FC__REQ_COLD, one by one: cheaper than a
 * memset of them (a string instruction), every message makes two. */
static void req_init(struct fc_req *r, struct fc_dev *dev,
		     enum fc__req_type type, uint32_t node)
{
	r->type = type;
	r->flow = 0;
	r->dev = dev;
	r->chan = NULL;
	r->next = NULL;
	r->node = node;
	r->status = -EINPROGRESS;
	r->len = 0;
	r->submitted = false;
	r->msg_chain = false;
	r->lane = 0;
	r->pio_end = 0;
	r->orphan = false;
	r->ticket = 0;
	r->n = 0;
	r->xfers = NULL;
	r->stage = -1;
	r->reg = NULL;
	r->buf = NULL;
	r->cap = 0;
	r->proto = NULL;
	r->port = 0;
	r->umem = NULL;
	r->umem_off = 0;
	r->umem_held = false;
	r->handle = 0;
	r->bounce = NULL;
}

struct fc_req *fc__req_new(struct fc_dev *dev, enum fc__req_type type,
			   uint32_t node)
{
	struct fc__fabric *fab = dev->fab;
	struct fc_req *r = fab->req_cache;

	if (r) {
		fab->req_cache = r->next;
		fab->req_cached--;
	} else {
		r = calloc(1, sizeof(*r));
		if (!r)
			return NULL;
	}
	req_init(r, dev, type, node);
	return r;
}

int fc__req_umem_get(struct fc_dev *dev, struct fc_req *r, const void *buf,
		     size_t len, bool reg)
{
	r->umem = fc__mem_hold(dev, buf, len, &r->umem_off);
	if (r->umem) {
		r->umem_held = true;
		fc__stat_inc(&dev->stats.direct);
		return 0;
	}
	r->umem_off = 0;
	if (!reg)
		return 0;
	return fc__mem_register_transient(dev, (void *)buf, len, &r->umem);
}

void fc__req_umem_put(struct fc_dev *dev, struct fc_req *r)
{
	if (!r->umem)
		return;
	if (r->umem_held)
		fc__mem_unhold(dev, r->umem);
	else
		fc_mem_free(dev, r->umem);
	r->umem = NULL;
	r->umem_held = false;
	r->umem_off = 0;
}

/* Device memory staged through @r->bounce (devmem.h): out of the way of
 * the host path, which pays one branch. */
static __attribute__((noinline, cold)) void req_bounce_put(struct fc_req *r)
{
	fc__bounce_put(r->bounce);
	r->bounce = NULL;
}

static __attribute__((noinline, cold)) int req_bounce_end(struct fc_req *r,
							  int ret)
{
	return fc__bounce_end(r->bounce, r->len, ret);
}

void fc__req_free(struct fc_req *r)
{
	struct fc__fabric *fab = r->dev->fab;

	fc__handle_put(r);
	if (r->chan)
		r->chan->reqs--;
	if (r->orphan)
		fab->orphans--;
	fc__req_umem_put(r->dev, r);
	fc__xfers_free(r);
	if (__builtin_expect(r->proto != NULL, 0)) {
		free(r->proto);
		r->proto = NULL;
	}
	if (__builtin_expect(r->bounce != NULL, 0))
		req_bounce_put(r);
	if (fab->req_cached == REQ_CACHE) {
		free(r);
		return;
	}
	r->next = fab->req_cache;
	fab->req_cache = r;
	fab->req_cached++;
}

static void posted_remove(struct fc__src *s, struct fc_req *r)
{
	struct fc_req **pp, *prev = NULL;

	for (pp = &s->posted_head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			if (s->posted_tail == r)
				s->posted_tail = prev;
			r->next = NULL;
			return;
		}
	}
}

static void sendq_remove(struct fc__fabric *fab, struct fc_req *r)
{
	struct fc_req **pp, *prev = NULL;

	for (pp = &fab->sendq_head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			if (fab->sendq_tail == r)
				fab->sendq_tail = prev;
			r->next = NULL;
			node_chain_drop(fab, r);
			if (r->type == FC__REQ_PUT)
				fab->puts--;
			return;
		}
	}
}

/*
 * Withdraw a request that has not ended. A posted receive being filled
 * hands its partial message to a library buffer; a chain the board has
 * not taken is dropped; one it has is left to end on its own (@orphan).
 * RETURN VALUE: 0 withdrawn (the caller frees it), 1 orphaned (freed when
 * its chain ends), -EBUSY (chain running, @orphan false), -ENOMEM.
 */
static int withdraw(struct fc_dev *dev, struct fc_req *r, bool orphan)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__src *s;
	int ret;

	if (r->proto) {
		ret = fab->up.withdraw(dev, r, orphan);
		if (ret != 2)
			return ret;
	}

	if (r->type == FC__REQ_RECV) {
		s = fc__src_find(fab, r->chan->port, r->chan->peer);
		if (s->into == r) {
			ret = fc__src_detach_req(fab, r->chan->port, s);
			if (ret)
				return ret;
		}
		posted_remove(s, r);
		return 0;
	}
	if (!r->submitted) {
		if (!fab->up.unhold || !fab->up.unhold(fab, r)) {
			sendq_remove(fab, r);
			if (fab->up.refund)
				fab->up.refund(fab, r);
		}
		fc__req_release(dev, r);
		return 0;
	}
	if (!orphan)
		return -EBUSY;
	fc__req_disown(r);
	return 1;
}

void fc__req_disown(struct fc_req *r)
{
	if (r->chan)
		r->chan->reqs--;
	r->chan = NULL;
	if (!r->orphan)
		r->dev->fab->orphans++;
	r->orphan = true;
}

void fc__req_orphan(struct fc_req *r)
{
	if (withdraw(r->dev, r, true) == 0)
		fc__req_free(r);
}

int fc__req_cancel(struct fc_req *r)
{
	int ret = 0;

	if (r->status == -EINPROGRESS)
		ret = withdraw(r->dev, r, false);
	if (!ret)
		fc__req_free(r);
	return ret;
}

/* @r has ended: its status and length to the caller, and it is freed. */
static int req_done(struct fc_req *r, size_t *len)
{
	int ret = r->status;

	if (len)
		*len = r->len;
	if (__builtin_expect(r->bounce != NULL, 0))
		ret = req_bounce_end(r, ret);
	fc__req_free(r);
	return ret;
}

/*
 * One look at @r. With @clock, *now: the time, read here when @r is still
 * going (for the peer check, and for the caller to reuse); without, only
 * progress. RETURN VALUE: -EINPROGRESS, or its end (r freed).
 */
static inline __attribute__((always_inline)) int
req_step(struct fc_req *r, size_t *len, bool *moved, uint64_t *now, bool clock)
{
	struct fc_dev *dev = r->dev;
	int ret;

	*moved = false;
	if (r->status == -EINPROGRESS)
		*moved = fc__progress(dev);
	if (r->status == -EINPROGRESS) {
		if (!clock)
			return -EINPROGRESS;
		*now = fc__now_ns();
		if (!fc__peer_down_at(dev, r->node, *now))
			return -EINPROGRESS;
		ret = withdraw(dev, r, true);
		if (ret < 0)
			return -EINPROGRESS; /* out of memory: try again */
		if (ret == 0)
			fc__req_free(r);
		return -EHOSTDOWN;
	}
	return req_done(r, len);
}

int fc__req_test(struct fc_req *r, size_t *len)
{
	uint64_t now;
	bool moved;

	return req_step(r, len, &moved, &now, true);
}

/*
 * One clock read serves the peer check, the timeout and the backoff; the
 * timeout counts from the first round that did not end it. While it spins
 * (a ping-pong's wait, a fraction of a microsecond a round) only every
 * SPIN_LOOKS-th round reads the clock: a read costs as much as the rest
 * of the round, and the spin's bounds are microseconds.
 */
#define SPIN_LOOKS 8

static int req_wait_loop(struct fc_req *r, int timeout_ms, size_t *len)
{
	struct fc__fabric *fab = r->dev->fab;
	uint64_t deadline = 0, now = 0;
	unsigned int round = 0, polls = 0;
	bool moved, started = false;
	int ret;

	for (;;) {
		ret = req_step(r, len, &moved, &now,
			       round > 1 || polls++ % SPIN_LOOKS == 0);
		if (ret != -EINPROGRESS)
			return ret;
		if (timeout_ms >= 0 && !started)
			deadline = now + (uint64_t)timeout_ms * 1000000ull;
		started = true;
		if (timeout_ms >= 0 && now >= deadline)
			return -ETIMEDOUT;
		if (moved) {
			round = 0;
			continue;
		}
		/* Nothing of ours moved: everything else of the process may. */
		fc__fab_unlock(fab);
		if (fc__poll_all(r->dev))
			round = 0;
		else
			fc__backoff_dev(r->dev, &round, now);
		fc__fab_lock(fab);
	}
}

int fc__req_wait(struct fc_req *r, int timeout_ms, size_t *len)
{
	/* Ended already (a PIO send, most of the time): nothing to wait for. */
	if (r->status != -EINPROGRESS)
		return req_done(r, len);
	return req_wait_loop(r, timeout_ms, len);
}
