// SPDX-License-Identifier: MIT
/*
 * The bridge: links whose far end is a board of another host, carried by a
 * libfabric RDM endpoint (docs/fabric.md, "Clusters over several hosts").
 *
 * Each host's cluster object holds every board of the topology; those of
 * other hosts are stand-ins (fcemu_cluster_create_part) whose routers
 * never run. A router here forwards to a stand-in as to any neighbour: the
 * packets land in the stand-in's input ring, which is the outgoing side of
 * the link. This process's bridge takes them off it with the link's own
 * check (CRC, the cluster's fault draws, a lost try taken again) and sends
 * them, up to BR_BATCH a message, to the process of the far board, whose
 * bridge writes them into that board's input ring with their CRC, where
 * its router checks them again as it checks any link. Credits: the far
 * bridge reports its ring's head as its router takes packets off; we never
 * have more in flight than the ring holds, so nothing is dropped for want
 * of room.
 *
 * Liveness: every bridge sends a heartbeat to every board of the other
 * hosts each BR_HB_NS; a board not heard from for FCEMU_BRIDGE_DOWN_NS, or
 * whose sends fail, is declared DEAD here (FC_ROUTER_NODES_DOWN, then
 * -EHOSTDOWN in the library); one that says goodbye EXITED. A bridge
 * declared down that speaks again (its host was stopped) is told so, and
 * a leaving bridge tells the boards it holds down; a board that opens
 * again comes back under a new bridge (epoch), whatever it was.
 *
 * Receiving runs on a thread of the bridge that sleeps on the completion
 * queue (its wait fd, else fi_cq_sread), so that an idle process costs
 * nothing and a board whose host is busy elsewhere still hears its links,
 * and from the board's progress, which reads the queue too (under the
 * lock, as the thread: in order); sending runs from the board's progress
 * (and from that thread when credits come back). While a reply is due, a
 * host that would sleep sleeps on the queue itself and the thread keeps
 * out of it (fcemu_bridge_wait_reply): one wake-up instead of two.
 * libfabric is loaded with dlopen: a library built with its headers still
 * runs where it is not installed, and only the bridge needs it.
 */
#ifdef FCEMU_HAVE_OFI

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bridge_internal.h"

uint64_t fcemu__br_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int fcemu__br_load_api(struct fcemu_bridge *b)
{
	b->dl = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!b->dl)
		return -EOPNOTSUPP;
	b->api.getinfo = (__typeof__(b->api.getinfo))dlsym(b->dl, "fi_getinfo");
	b->api.freeinfo =
		(__typeof__(b->api.freeinfo))dlsym(b->dl, "fi_freeinfo");
	b->api.dupinfo = (__typeof__(b->api.dupinfo))dlsym(b->dl, "fi_dupinfo");
	b->api.fabric = (__typeof__(b->api.fabric))dlsym(b->dl, "fi_fabric");
	if (!b->api.getinfo || !b->api.freeinfo || !b->api.dupinfo ||
	    !b->api.fabric)
		return -EOPNOTSUPP;
	return 0;
}

/* libfabric's errors are positive FI_E* (errno values) or negative. */
int fcemu__br_ofi_err(ssize_t ret)
{
	if (ret >= 0)
		return 0;
	return ret < -4096 ? -EIO : (int)ret;
}

/* A board of the far end we no longer carry anything for. */
bool fcemu__br_dead(struct fcemu_cluster *c, unsigned int n)
{
	return cl_ld(&c->hdr->node[n].state) == FCEMU_NODE_DEAD;
}

/* ---- sending ---- */

/* A small control message, never blocking. RETURN VALUE: 0 or -errno. */
int fcemu__br_send_ctl(struct fcemu_bridge *b, unsigned int dst,
		       enum br_type type, unsigned int port, unsigned int vc,
		       uint32_t head)
{
	struct br_hdr h = {
		.magic = BR_MAGIC,
		.type = (uint8_t)type,
		.port = (uint8_t)port,
		.vc = (uint8_t)vc,
		.src = (uint8_t)b->node,
		.dst = (uint8_t)dst,
		.head = head,
		.src_epoch = b->epoch,
		.dst_epoch = b->epoch_of[dst],
	};

	return fcemu__br_ofi_err(fi_inject(b->ep, &h, sizeof(h), b->addr[dst]));
}

/* bridge_rma.c's messages: @len bytes of @body after the header. */
int fcemu__br_send_msg(void *arg, unsigned int dst, unsigned int type,
		       unsigned int port, unsigned int vc, uint32_t head,
		       const void *body, size_t len)
{
	struct fcemu_bridge *b = arg;
	struct br_buf *buf = b->tx_free;
	struct br_hdr *h;
	ssize_t ret;

	if (!len)
		return fcemu__br_send_ctl(b, dst, (enum br_type)type, port, vc,
					  head);
	if (!buf || sizeof(*h) + len > BR_MSG_MAX)
		return -FI_EAGAIN;
	h = (struct br_hdr *)buf->data;
	*h = (struct br_hdr){
		.magic = BR_MAGIC,
		.type = (uint8_t)type,
		.port = (uint8_t)port,
		.vc = (uint8_t)vc,
		.src = (uint8_t)b->node,
		.dst = (uint8_t)dst,
		.head = head,
		.src_epoch = b->epoch,
		.dst_epoch = b->epoch_of[dst],
	};
	memcpy(h + 1, body, len);
	buf->dst = dst;
	ret = fi_send(b->ep, buf->data, sizeof(*h) + len, NULL, b->addr[dst],
		      &buf->ctx);
	if (ret)
		return fcemu__br_ofi_err(ret);
	b->tx_free = buf->next;
	b->tx_busy++;
	return 0;
}

/*
 * Our link port @p, VC @vc, to remote board @r: its packets waiting in
 * r's stand-in input ring, as far as credits and buffers go, in messages.
 */
static unsigned int pump_link(struct fcemu_bridge *b, unsigned int p,
			      unsigned int vc)
{
	struct fcemu_cluster *c = b->c;
	unsigned int r = cl_peer(c, b->node, p),
		     q = cl_peer_port(c, b->node, p);
	struct cl_ring *ring = cl_ring(c, r, CL_RING_LINK(q, vc));
	unsigned int moved = 0, k;
	uint32_t credits, n, head;
	struct br_hdr *h;
	struct br_slot *s;
	struct br_buf *buf;
	ssize_t ret;

	for (;;) {
		credits = CL_RING_SLOTS - (b->sent[p][vc] - b->acked[p][vc]);
		if (!credits || !b->tx_free)
			break;
		n = fcemu__link_recv(c, r, q, vc,
				     credits < BR_BATCH ? credits : BR_BATCH);
		if (!n)
			break;
		/* a burst at the head crosses by RMA; those before it first */
		if (b->rma && !(n = fcemu__rma_cut(b->rma, ring, r, n))) {
			if (!fcemu__rma_carry(b->rma, p, vc, r, q))
				break;
			moved++; /* counted in sent[] as it landed */
			continue;
		}
		buf = b->tx_free;
		h = (struct br_hdr *)buf->data;
		memset(h, 0, sizeof(*h));
		h->magic = BR_MAGIC;
		h->type = BR_DATA;
		h->port = (uint8_t)q;
		h->vc = (uint8_t)vc;
		h->src = (uint8_t)b->node;
		h->dst = (uint8_t)r;
		h->count = (uint16_t)n;
		h->src_epoch = b->epoch;
		h->dst_epoch = b->epoch_of[r];
		s = (struct br_slot *)(h + 1);
		head = __atomic_load_n(&ring->head, __ATOMIC_RELAXED);
		for (k = 0; k < n; k++) {
			const struct cl_slot *f =
				&ring->slot[(head + k) % CL_RING_SLOTS];

			s[k].pkt = f->pkt;
			s[k].crc = f->crc;
			s[k].pad = 0;
			s[k].t = f->t;
		}
		buf->dst = r;
		ret = fi_send(b->ep, buf->data,
			      sizeof(*h) + n * sizeof(struct br_slot), NULL,
			      b->addr[r], &buf->ctx);
		if (ret)
			break; /* -FI_EAGAIN: the packets stay, checked */
		b->tx_free = buf->next;
		b->tx_busy++;
		fcemu__link_done(c, r, q, vc, n);
		b->sent[p][vc] += n;
		moved += n;
	}
	return moved;
}

/* Report the heads of our inputs from remote boards: their credits. */
static void return_credits(struct fcemu_bridge *b)
{
	struct fcemu_cluster *c = b->c;
	uint64_t links;
	unsigned int p, vc, r;
	uint32_t head;
	struct cl_ring *ring;

	for (links = b->links; links; links &= links - 1) {
		p = (unsigned int)__builtin_ctzll(links);
		r = cl_peer(c, b->node, p);
		if (fcemu__br_dead(c, r))
			continue;
		for (vc = 0; vc < FC_NUM_VCS; vc++) {
			ring = cl_ring(c, b->node, CL_RING_LINK(p, vc));
			head = cl_ld(&ring->head);
			if (head == b->reported[p][vc] ||
			    (head - b->reported[p][vc] < BR_CREDIT_BATCH &&
			     !fcemu__ring_empty(ring)))
				continue;
			if (!fcemu__br_send_ctl(b, r, BR_CREDIT,
						cl_peer_port(c, b->node, p), vc,
						head - b->reported[p][vc]))
				b->reported[p][vc] = head;
		}
	}
}

/* Everything that leaves: packets, then credits. Lock held. */
unsigned int fcemu__br_pump_locked(struct fcemu_bridge *b)
{
	struct fcemu_cluster *c = b->c;
	unsigned int moved = 0, p, vc;
	uint64_t links;

	for (links = b->links; links; links &= links - 1) {
		p = (unsigned int)__builtin_ctzll(links);
		/* one that left still carries what passes through it */
		if (fcemu__br_dead(c, cl_peer(c, b->node, p)))
			continue;
		for (vc = 0; vc < FC_NUM_VCS; vc++)
			moved += pump_link(b, p, vc);
	}
	return_credits(b);
	if (moved) {
		b->moved_at = fcemu__br_now_ns();
		__atomic_store_n(&b->due_until,
				 b->moved_at + FCEMU_BRIDGE_DUE_NS,
				 __ATOMIC_RELAXED);
	}
	if (b->rma)
		fcemu__rma_release(b->rma);
	return moved;
}

/* The cluster's progress hook (c->pump): never waits for the thread. */
unsigned int fcemu__br_pump(void *arg)
{
	struct fcemu_bridge *b = arg;
	unsigned int moved;

	if (pthread_mutex_trylock(&b->lock))
		return 0;
	/* what arrived, taken by a host that polls: no thread wake-up (only
	 * where the thread too reads under the lock, keeping the order) */
	moved = b->wait_fd >= 0 ? fcemu__br_reap(b) : 0;
	moved += fcemu__br_pump_locked(b);
	pthread_mutex_unlock(&b->lock);
	return moved;
}

/* ---- receiving ---- */

static void declare(struct fcemu_bridge *b, unsigned int n,
		    enum fcemu_node_state s, const char *why, int err)
{
	if (s == FCEMU_NODE_DEAD)
		b->down_epoch[n] = b->epoch_of[n];
	b->left &= ~(1ull << n);
	b->reborn &= ~(1ull << n);
	if (s == FCEMU_NODE_EXITED) {
		b->left |= 1ull << n;
		b->left_at[n] = fcemu__br_now_ns();
	}
	if (!fcemu_cluster_set_remote_state(b->c, n, s) &&
	    getenv("FPGACOMM_BRIDGE_VERBOSE"))
		fprintf(stderr, "fpgacomm: board %u: board %u %s: %s%s%s\n",
			b->node, n,
			s == FCEMU_NODE_DEAD ? "is down" : "is gone", why,
			err ? ": " : "", err ? strerror(err) : "");
	b->peers &= ~(1ull << n);
}

/* Packets from remote board @h->src into our input port @h->port. */
static void take_data(struct fcemu_bridge *b, const struct br_hdr *h,
		      size_t len)
{
	struct fcemu_cluster *c = b->c;
	const struct br_slot *s = (const struct br_slot *)(h + 1);
	unsigned int q = h->port, n = h->count, k;
	struct cl_ring *ring;
	struct cl_slot *d;
	uint32_t tail;

	if (q < 1 || q > c->ports || h->vc >= FC_NUM_VCS || !n ||
	    n > BR_BATCH || len != sizeof(*h) + n * sizeof(*s) ||
	    cl_peer(c, b->node, q) != h->src)
		return;
	ring = cl_ring(c, b->node, CL_RING_LINK(q, h->vc));
	/* the sender kept to our credits: room is there, or it lies */
	if (fcemu__ring_free(ring) < n) {
		cl_inc(c, b->node, FC_ROUTER_DROPS);
		return;
	}
	tail = fcemu__ring_tail(ring);
	for (k = 0; k < n; k++) {
		d = &ring->slot[(tail + k) % CL_RING_SLOTS];
		d->pkt = s[k].pkt;
		d->seq = tail + k;
		d->crc = s[k].crc; /* our router checks it, as on any link */
		d->t = s[k].t;
	}
	fcemu__ring_publish(ring, tail + n);
	b->moved_at = fcemu__br_now_ns();
	/* the reply came; the rest of a message may be right behind it */
	__atomic_store_n(&b->due_until, b->moved_at + BR_TRAIL_NS,
			 __ATOMIC_RELAXED);
	fcemu__link_sent(c, h->src, cl_peer_port(c, b->node, q), n);
	fcemu__cluster_ring(c, b->node);
}

/*
 * Board @n's endpoint is called @name: the first we learn, or a board
 * that left in order and opened again (a later job in the same
 * processes), whose names are withdrawn as they leave. It is ALIVE here
 * (again); if it was declared DEAD, only once its new bridge speaks (a
 * host that died leaves its names behind). RETURN VALUE: 0 or -errno.
 */
int fcemu__br_meet_peer(struct fcemu_bridge *b, unsigned int n,
			const void *blob, size_t len)
{
	enum fcemu_node_state s = fcemu_cluster_node_state(b->c, n);
	/* published: epoch, landing area (bridge_rma.c), endpoint name */
	const uint8_t *name =
		(const uint8_t *)blob + sizeof(uint32_t) + FCEMU_RMA_INFO_LEN;
	unsigned int p, vc;
	uint32_t epoch;
	fi_addr_t a;

	if (len <= sizeof(epoch) + FCEMU_RMA_INFO_LEN)
		return -EINVAL;
	memcpy(&epoch, blob, sizeof(epoch));
	if (epoch == b->epoch_of[n] || epoch == b->down_epoch[n])
		return 0; /* the bridge we know */
	if (fi_av_insert(b->av, name, 1, &a, 0, NULL) != 1)
		return -EINVAL;
	if (s == FCEMU_NODE_DEAD && b->epoch_of[n] && !b->down_epoch[n])
		b->down_epoch[n] = b->epoch_of[n];
	b->epoch_of[n] = epoch;
	b->spoke &= ~(1ull << n);
	b->addr[n] = a;
	/* what was in flight to an earlier incarnation is gone with it */
	for (p = 1; p <= b->c->ports; p++)
		if (cl_peer(b->c, b->node, p) == n)
			for (vc = 0; vc < FC_NUM_VCS; vc++)
				b->acked[p][vc] = b->sent[p][vc];
	b->left &= ~(1ull << n);
	if (s == FCEMU_NODE_DEAD) {
		b->reborn |= 1ull << n;
		return 0;
	}
	if (s == FCEMU_NODE_EXITED)
		fcemu_cluster_set_remote_state(b->c, n, FCEMU_NODE_ALIVE);
	if (b->rma)
		fcemu__rma_meet(b->rma, n, a,
				(const uint8_t *)blob + sizeof(epoch));
	b->peers |= 1ull << n;
	b->heard[n] = fcemu__br_now_ns();
	return 0;
}

/* Board @n says it is (back) there: its name is published already. */
static void rejoin(struct fcemu_bridge *b, unsigned int n)
{
	uint8_t name[BR_NAME_MAX];
	size_t len = sizeof(name);

	if (!b->boot.get(b->boot.arg, n, name, &len))
		fcemu__br_meet_peer(b, n, name, len);
}

static void take_msg(struct fcemu_bridge *b, const void *data, size_t len)
{
	const struct br_hdr *h = data;
	struct fcemu_cluster *c = b->c;
	unsigned int src;

	if (len < sizeof(*h) || h->magic != BR_MAGIC || h->dst != b->node ||
	    h->src >= c->nodes || !(c->remote & (1ull << h->src)))
		return;
	src = h->src;
	if (h->dst_epoch != b->epoch)
		return; /* for an earlier bridge of our board */
	if (h->type == BR_HELLO && h->src_epoch != b->epoch_of[src])
		rejoin(b, src);
	if (h->src_epoch != b->epoch_of[src])
		return; /* from an earlier bridge of that board */
	if (fcemu__br_dead(c, src) && (b->reborn & (1ull << src))) {
		/* opened again since it was declared down: back */
		b->reborn &= ~(1ull << src);
		fcemu_cluster_set_remote_state(c, src, FCEMU_NODE_ALIVE);
		b->peers |= 1ull << src;
	} else if (fcemu__br_dead(c, src)) {
		/* down for good here: it must not go on as if not */
		b->down_epoch[src] = b->epoch_of[src];
		b->peers &= ~(1ull << src);
		if (h->type != BR_DOWN && h->type != BR_BYE)
			fcemu__br_send_ctl(b, src, BR_DOWN, 0, 0, 0);
		return;
	}
	b->heard[src] = fcemu__br_now_ns();
	/* a hello comes before its sender's heartbeats start (it may wait
	 * for a late third's name): the short bound starts with those */
	if (h->type != BR_HELLO)
		b->spoke |= 1ull << src;
	switch (h->type) {
	case BR_DATA:
		take_data(b, h, len);
		break;
	case BR_CREDIT:
		if (h->port >= 1 && h->port <= c->ports && h->vc < FC_NUM_VCS &&
		    (b->links & (1ull << h->port)) &&
		    cl_peer(c, b->node, h->port) == src &&
		    h->head <=
			    b->sent[h->port][h->vc] - b->acked[h->port][h->vc])
			b->acked[h->port][h->vc] += h->head;
		break;
	case BR_BYE:
		declare(b, src, FCEMU_NODE_EXITED, "left", 0);
		break;
	case BR_DOWN:
		declare(b, src, FCEMU_NODE_DEAD, "it declared us down", 0);
		break;
	default:
		/* a burst of ours landed: its credit counts before the far
		 * side's return of it, which comes after this */
		if (b->rma && h->type >= FCEMU_RMA_MSG_BURST &&
		    fcemu__rma_take(b->rma, h->type, src, h->port, h->vc,
				    h->head, h + 1, len - sizeof(*h)))
			b->sent[h->port][h->vc]++;
		break;
	}
}

static void post_recv(struct fcemu_bridge *b, struct br_buf *buf)
{
	/* -FI_EAGAIN once the endpoint is up would lose a buffer: rare,
	 * and BR_RX of them leave room for it */
	fi_recv(b->ep, buf->data, BR_MSG_MAX, NULL, FI_ADDR_UNSPEC, &buf->ctx);
}

static void complete(struct fcemu_bridge *b, struct br_buf *buf, size_t len,
		     int err)
{
	unsigned int dst;

	if (b->rma && fcemu__rma_complete(b->rma, buf, err, &dst)) {
		if (err)
			declare(b, dst, FCEMU_NODE_DEAD, "a write failed", err);
		return;
	}
	if (buf->rx) {
		if (!err)
			take_msg(b, buf->data, len);
		/* posted even when stopping: the endpoint outlives us */
		post_recv(b, buf);
		return;
	}
	/* a send that failed: the board's host is gone (or unreachable) */
	if (err)
		declare(b, buf->dst, FCEMU_NODE_DEAD, "a send failed", err);
	buf->next = b->tx_free;
	b->tx_free = buf;
	b->tx_busy--;
}

/* Completions waiting, without waiting for any. Lock held. */
unsigned int fcemu__br_reap(struct fcemu_bridge *b)
{
	struct fi_cq_msg_entry e[16];
	struct fi_cq_err_entry err;
	ssize_t n, i;

	n = fi_cq_read(b->cq, e, 16);
	for (i = 0; i < n; i++)
		complete(b, e[i].op_context, e[i].len, 0);
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(b->cq, &err, 0) > 0 && err.op_context)
			complete(b, err.op_context, 0, err.err ? err.err : EIO);
	}
	return n > 0 ? (unsigned int)n : 0;
}

/* Heartbeats due, and boards not heard from for too long. Lock held. */
static void tick(struct fcemu_bridge *b)
{
	uint64_t now = fcemu__br_now_ns(), peers;
	unsigned int n;

	/*
	 * We were not running for a while (stopped, or starved): what we
	 * did not hear meanwhile says nothing about the others. They may
	 * have declared us down: they will say so.
	 */
	if (b->last_tick && now - b->last_tick > FCEMU_BRIDGE_DOWN_NS / 2)
		for (peers = b->peers; peers; peers &= peers - 1)
			b->heard[__builtin_ctzll(peers)] = now;
	b->last_tick = now;
	for (peers = b->peers; peers; peers &= peers - 1) {
		n = (unsigned int)__builtin_ctzll(peers);
		/* declared down by another bridge of this host: so it is here,
		 * and our heartbeats must not tell it otherwise */
		if (fcemu__br_dead(b->c, n)) {
			b->down_epoch[n] = b->epoch_of[n];
			b->peers &= ~(1ull << n);
			continue;
		}
		/* one that never spoke may wait for a late third to start */
		if (now - b->heard[n] > (b->spoke & (1ull << n) ?
						 FCEMU_BRIDGE_DOWN_NS :
						 BR_FIRST_NS))
			declare(b, n, FCEMU_NODE_DEAD, "silent too long", 0);
	}
	for (peers = b->left; peers; peers &= peers - 1) {
		n = (unsigned int)__builtin_ctzll(peers);
		if (cl_ld(&b->c->hdr->node[n].state) != FCEMU_NODE_EXITED ||
		    now - b->left_at[n] > BR_STOP_NS)
			b->left &= ~(1ull << n);
	}
	if (now < b->next_hb)
		return;
	b->next_hb = now + BR_HB_NS;
	for (peers = b->peers | b->left; peers; peers &= peers - 1)
		fcemu__br_send_ctl(b, (unsigned int)__builtin_ctzll(peers),
				   BR_HB, 0, 0, 0);
}

/* Sleep until the CQ has something (or @max_ns), reading nothing: the
 * reads are under the lock, so that messages are taken in order. The
 * thread waits here, and a host while a reply is due. */
void fcemu__br_wait_cq(struct fcemu_bridge *b, uint64_t max_ns)
{
	struct fid *f = &b->cq->fid;
	struct pollfd pfd = { .fd = b->wait_fd, .events = POLLIN };
	struct timespec ts = {
		.tv_sec = (time_t)(max_ns / 1000000000ull),
		.tv_nsec = (long)(max_ns % 1000000000ull),
	};

	if (fi_trywait(b->fabric, &f, 1) == FI_SUCCESS)
		ppoll(&pfd, 1, &ts, NULL);
}

/* Packets from other hosts wait in our inputs, not yet routed. */
bool fcemu__br_inputs_waiting(struct fcemu_bridge *b)
{
	uint64_t links;
	unsigned int p, vc;

	for (links = b->links; links; links &= links - 1) {
		p = (unsigned int)__builtin_ctzll(links);
		for (vc = 0; vc < FC_NUM_VCS; vc++)
			if (!fcemu__ring_empty(cl_ring(b->c, b->node,
						       CL_RING_LINK(p, vc))))
				return true;
	}
	return false;
}

/* A reply is due: the host reads the queue (fcemu_bridge_wait_reply). */
static bool reply_due(struct fcemu_bridge *b, uint64_t *until)
{
	*until = __atomic_load_n(&b->due_until, __ATOMIC_RELAXED);
	return *until && fcemu__br_now_ns() < *until;
}

/*
 * While a reply is due the host takes what comes, waiting on the queue
 * itself: were the thread to take it, the host would not hear (it does
 * not sleep on the bell meanwhile), and two sleepers on one queue both
 * wake. So the thread sleeps until the window ends (what a host busy
 * elsewhere leaves waits that long at most), but for heartbeats and the
 * silence checks.
 */
static void stand_aside(struct fcemu_bridge *b, uint64_t until)
{
	uint64_t now = fcemu__br_now_ns();
	struct timespec nap = { 0, (long)(until > now ? until - now : 0) };

	nanosleep(&nap, NULL);
	if (fcemu__br_now_ns() -
		    __atomic_load_n(&b->last_tick, __ATOMIC_RELAXED) <
	    BR_HB_NS / 4)
		return;
	pthread_mutex_lock(&b->lock);
	tick(b);
	pthread_mutex_unlock(&b->lock);
}

void *fcemu__br_bridge_thread(void *arg)
{
	struct fcemu_bridge *b = arg;
	struct fi_cq_msg_entry e[16];
	struct fi_cq_err_entry err;
	uint64_t until;
	ssize_t n, i;

	while (!b->stop) {
		if (b->wait_fd >= 0 && reply_due(b, &until)) {
			stand_aside(b, until);
			continue;
		}
		if (b->wait_fd >= 0) {
			fcemu__br_wait_cq(b, BR_SREAD_MS * 1000000ull);
			n = 0;
			/* a reply came that the host waits for: its to take */
			if (reply_due(b, &until))
				continue;
		} else {
			n = fi_cq_sread(b->cq, e, 16, NULL, BR_SREAD_MS);
		}
		pthread_mutex_lock(&b->lock);
		if (b->wait_fd >= 0)
			fcemu__br_reap(b);
		for (i = 0; i < n; i++)
			complete(b, e[i].op_context, e[i].len, 0);
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(b->cq, &err, 0) > 0 && err.op_context)
				complete(b, err.op_context, 0,
					 err.err ? err.err : EIO);
		}
		tick(b);
		fcemu__br_pump_locked(b);
		pthread_mutex_unlock(&b->lock);
	}
	return NULL;
}

#endif /* FCEMU_HAVE_OFI */
