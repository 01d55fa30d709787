// SPDX-License-Identifier: MIT
/*
 * Bursts between hosts (docs/fabric.md, "Bursts between hosts").
 *
 * Within a host a burst record names the bytes in the sending process,
 * and the receiver copies them across (burst.c). Across hosts nobody can,
 * so the bridge that carries the last link to the destination board
 * writes them with one libfabric RMA write into a landing slot the far
 * bridge registered (its keys come with its name), then sends the record.
 * The far bridge checks the landed bytes as the link checks a packet: the
 * cluster's fault draw for one try on the wire, then the sender's CRC; a
 * write that failed the check is answered "write again" and is counted
 * (FC_PORT_RMA_RETRIES, with the link's retransmits and CRC errors). An
 * intact one goes into the board's input ring as a landed record, applied
 * from the slot in order with the link's other packets, and the slot goes
 * back to its sender once the board applied it.
 *
 * Order: nothing behind a burst on its link and VC leaves before the far
 * bridge said the burst landed intact, so a FENCE never overtakes the
 * bytes it fences. The record counts as one packet for the credits.
 */
#ifdef FCEMU_HAVE_OFI

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "bridge_rma.h"

#define RMA_SLOTS      8	   /* landing slots per sending board */
#define RMA_INFO_MAGIC 0x464c4e44u /* "FLND" */
#define RMA_KEY	       0x46434c44u

enum rma_state {
	RMA_IDLE,
	RMA_WRITING,  /* the write is posted */
	RMA_WRITTEN,  /* ... and done: the record is to be sent */
	RMA_CHECKING, /* the record is sent, the check awaited */
	RMA_REDO,     /* the check failed: write again */
	RMA_DONE,     /* landed intact: take the record off the ring */
};

/* A burst under way on one of our link ports and VCs. */
struct rma_link {
	struct fi_context ctx; /* first: the write's op_context */
	enum rma_state state;
	unsigned int far, slot;
	bool landed; /* false: the record goes as it is (bytes unreadable) */
	uint32_t len, crc;
	struct cl_slot rec;
	const uint8_t *bytes;
	uint8_t *stage; /* the bytes, when another process holds them */
};

/* A board's landing area, as published. */
struct rma_info {
	uint32_t magic;
	uint32_t slots;
	uint64_t base; /* remote address of slot 0 for node 0 */
	uint64_t key;
};

struct fcemu_rma {
	struct fcemu_rma_ops ops;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_mr *mr;
	bool virt_addr; /* FI_MR_VIRT_ADDR: addresses, not offsets */
	uint8_t *land;
	size_t land_len;
	uint32_t done[FC_MAX_NODES * RMA_SLOTS];
	struct fcemu_cluster *c;
	unsigned int node;
	/* as sender: each far board's area, and its slots we may use */
	struct rma_info peer[FC_MAX_NODES];
	fi_addr_t addr[FC_MAX_NODES];
	uint32_t free[FC_MAX_NODES];
	/* as receiver: slots each sender has in use here, and the answers
	 * to checks not sent yet (per input port and VC: 1 again, 2 ok) */
	uint32_t in_use[FC_MAX_NODES];
	uint8_t owe[FC_MAX_PORTS + 1][FC_NUM_VCS];
	struct rma_link link[FC_MAX_PORTS + 1][FC_NUM_VCS];
	unsigned int busy; /* links not idle */
};

/* What BURST carries after the bridge's header. */
struct rma_burst_msg {
	struct fc_hw_pkt pkt;
	uint32_t pkt_crc;
	uint32_t landed;
	uint64_t t;
	uint32_t slot; /* of the sender's, in the receiver's area */
	uint32_t len;
	uint32_t crc; /* of the bytes */
	uint32_t pad;
};

#define ALL_SLOTS ((1u << RMA_SLOTS) - 1)

static void count(struct fcemu_cluster *c, unsigned int node, unsigned int p,
		  uint32_t reg)
{
	__atomic_fetch_add(cl_reg(c, node, FC_PORT_REG(p, reg)), 1,
			   __ATOMIC_RELAXED);
}

int fcemu__rma_open(struct fcemu_rma **rp, const struct fi_info *info,
		    struct fid_domain *domain, struct fid_ep *ep,
		    const struct fcemu_rma_ops *ops)
{
	struct fcemu_rma *r;
	int mode = info->domain_attr->mr_mode, ret;

	if (!(info->caps & FI_RMA) ||
	    (mode & (FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_RAW)))
		return -EOPNOTSUPP;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ops = *ops;
	r->domain = domain;
	r->ep = ep;
	r->virt_addr = mode & FI_MR_VIRT_ADDR;
	/* pages are only touched where bursts land */
	r->land_len = (size_t)FC_MAX_NODES * RMA_SLOTS * CL_LAND_SLOT;
	r->land = mmap(NULL, r->land_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r->land == MAP_FAILED) {
		free(r);
		return -ENOMEM;
	}
	ret = fi_mr_reg(domain, r->land, r->land_len, FI_REMOTE_WRITE, 0,
			RMA_KEY, 0, &r->mr, NULL);
	if (ret) {
		munmap(r->land, r->land_len);
		free(r);
		return ret < 0 ? ret : -ret;
	}
	*rp = r;
	return 0;
}

static void reset_link(struct fcemu_rma *r, struct rma_link *l)
{
	if (l->state != RMA_IDLE)
		r->busy--;
	l->state = RMA_IDLE;
}

void fcemu__rma_start(struct fcemu_rma *r, struct fcemu_cluster *c,
		      unsigned int node)
{
	unsigned int p, vc;

	r->c = c;
	r->node = node;
	memset(r->peer, 0, sizeof(r->peer));
	memset(r->free, 0, sizeof(r->free));
	memset(r->in_use, 0, sizeof(r->in_use));
	memset(r->done, 0, sizeof(r->done));
	memset(r->owe, 0, sizeof(r->owe));
	/* a write of the last bridge may still complete: its state stays
	 * until then, its burst is gone with its peers */
	for (p = 0; p <= FC_MAX_PORTS; p++)
		for (vc = 0; vc < FC_NUM_VCS; vc++)
			if (r->link[p][vc].state != RMA_WRITING)
				reset_link(r, &r->link[p][vc]);
	c->land_done = r->done;
	c->land_slots = c->nodes * RMA_SLOTS;
	__atomic_store_n(&c->land, r->land, __ATOMIC_RELEASE);
}

void fcemu__rma_info(const struct fcemu_rma *r, void *info)
{
	struct rma_info i = { 0 };

	if (r) {
		i.magic = RMA_INFO_MAGIC;
		i.slots = RMA_SLOTS;
		i.base = r->virt_addr ? (uintptr_t)r->land : 0;
		i.key = fi_mr_key(r->mr);
	}
	memcpy(info, &i, sizeof(i));
}

_Static_assert(sizeof(struct rma_info) == FCEMU_RMA_INFO_LEN, "info");

void fcemu__rma_meet(struct fcemu_rma *r, unsigned int n, fi_addr_t addr,
		     const void *info)
{
	struct rma_info i;
	unsigned int p, vc;
	bool ok;

	memcpy(&i, info, sizeof(i));
	ok = i.magic == RMA_INFO_MAGIC && i.slots == RMA_SLOTS;
	r->peer[n] = i;
	r->peer[n].magic = ok ? RMA_INFO_MAGIC : 0;
	r->addr[n] = addr;
	r->free[n] = ok ? ALL_SLOTS : 0;
	r->in_use[n] = 0;
	for (p = 0; p <= FC_MAX_PORTS; p++)
		for (vc = 0; vc < FC_NUM_VCS; vc++)
			if (r->link[p][vc].far == n &&
			    r->link[p][vc].state != RMA_WRITING)
				reset_link(r, &r->link[p][vc]);
	/* the stand-in takes bursts (on the routes that end on its link)
	 * while its bridge takes our writes */
	cl_st(&r->c->hdr->node[n].burst, ok);
}

uint32_t fcemu__rma_cut(struct fcemu_rma *r, struct cl_ring *ring,
			unsigned int far, uint32_t n)
{
	uint32_t head = __atomic_load_n(&ring->head, __ATOMIC_RELAXED), k, hdr;
	struct fcemu_burst_view v;
	const struct cl_slot *s;

	if (r->peer[far].magic != RMA_INFO_MAGIC)
		return n;
	for (k = 0; k < n; k++) {
		s = &ring->slot[(head + k) % CL_RING_SLOTS];
		hdr = le32toh(s->pkt.hdr);
		/* one for the far board itself: it lands there */
		if (fcemu__burst_view(&s->pkt, &v) &&
		    ((hdr >> FC_PKT_DST_SHIFT) & FC_PKT_NODE_MASK) == far)
			return k;
	}
	return n;
}

/* The burst's bytes, read from the process that holds them if not ours.
 * RETURN VALUE: false they cannot be read (the record goes as it is). */
static bool get_bytes(struct rma_link *l, const struct fcemu_burst_view *v)
{
	struct iovec lo, re;
	size_t done;
	ssize_t n;

	if (!v->len || v->len > CL_LAND_SLOT)
		return false;
	if (v->pid == (int32_t)getpid()) {
		l->bytes = (const uint8_t *)(uintptr_t)v->src;
		return true;
	}
	if (!l->stage) {
		l->stage = malloc(CL_LAND_SLOT);
		if (!l->stage)
			return false;
	}
	for (done = 0; done < v->len; done += (size_t)n) {
		lo = (struct iovec){ l->stage + done, v->len - done };
		re = (struct iovec){ (void *)(uintptr_t)(v->src + done),
				     v->len - done };
		n = process_vm_readv(v->pid, &lo, 1, &re, 1, 0);
		if (n <= 0)
			return false;
	}
	l->bytes = l->stage;
	return true;
}

/* Start (or start again) the write of @l's bytes. */
static void post_write(struct fcemu_rma *r, struct rma_link *l)
{
	const struct rma_info *i = &r->peer[l->far];
	uint64_t at = i->base +
		      ((uint64_t)r->node * RMA_SLOTS + l->slot) * CL_LAND_SLOT;
	ssize_t ret;

	ret = fi_write(r->ep, l->bytes, l->len, NULL, r->addr[l->far], at,
		       i->key, &l->ctx);
	if (!ret) {
		l->state = RMA_WRITING;
	} else if (ret != -FI_EAGAIN) {
		/* the record goes as it is: the far board fails it */
		r->free[l->far] |= 1u << l->slot;
		l->landed = false;
		l->state = RMA_WRITTEN;
	}
}

/* Send the record after its bytes; the far bridge checks them. */
static void send_record(struct fcemu_rma *r, struct rma_link *l, unsigned int p,
			unsigned int vc)
{
	struct fcemu_cluster *c = r->c;
	struct rma_burst_msg m = {
		.pkt = l->rec.pkt,
		.pkt_crc = l->rec.crc,
		.landed = l->landed,
		.t = l->rec.t,
		.slot = l->slot,
		.len = l->len,
		.crc = l->crc,
	};

	if (!r->ops.send(r->ops.arg, l->far, FCEMU_RMA_MSG_BURST,
			 cl_peer_port(c, r->node, p), vc, 0, &m, sizeof(m)))
		l->state = RMA_CHECKING;
}

bool fcemu__rma_carry(struct fcemu_rma *r, unsigned int p, unsigned int vc,
		      unsigned int far, unsigned int q)
{
	struct fcemu_cluster *c = r->c;
	struct rma_link *l = &r->link[p][vc];
	struct cl_ring *ring = cl_ring(c, far, CL_RING_LINK(q, vc));
	struct fcemu_burst_view v;

	switch (l->state) {
	case RMA_IDLE:
		if (!r->free[far])
			return false; /* the far board applies what it has */
		l->rec = ring->slot[__atomic_load_n(&ring->head,
						    __ATOMIC_RELAXED) %
				    CL_RING_SLOTS];
		if (!fcemu__burst_view(&l->rec.pkt, &v))
			return false; /* not for us: cut() said otherwise */
		l->far = far;
		l->slot = (unsigned int)__builtin_ctz(r->free[far]);
		l->len = v.len;
		l->landed = get_bytes(l, &v);
		r->busy++;
		if (!l->landed) {
			l->state = RMA_WRITTEN;
			send_record(r, l, p, vc);
			return false;
		}
		r->free[far] &= ~(1u << l->slot);
		l->crc = fcemu__crc32c(l->bytes, l->len);
		post_write(r, l);
		if (l->state == RMA_WRITTEN)
			send_record(r, l, p, vc);
		return false;
	case RMA_REDO:
		post_write(r, l);
		if (l->state == RMA_WRITTEN)
			send_record(r, l, p, vc);
		return false;
	case RMA_WRITTEN:
		send_record(r, l, p, vc);
		return false;
	case RMA_DONE:
		fcemu__link_done(c, far, q, vc, 1);
		if (l->landed)
			count(c, r->node, p, FC_PORT_RMA_WRITES);
		reset_link(r, l);
		return true;
	default:
		return false;
	}
}

bool fcemu__rma_complete(struct fcemu_rma *r, void *ctx, int err,
			 unsigned int *dst)
{
	struct rma_link *l = ctx;
	unsigned int p, vc;

	if ((uint8_t *)ctx < (uint8_t *)r->link ||
	    (uint8_t *)ctx >= (uint8_t *)r->link + sizeof(r->link))
		return false;
	*dst = l->far;
	if (l->state != RMA_WRITING)
		return true; /* of a bridge that stopped */
	if (err) {
		/* the far host is gone: the bridge declares it down */
		reset_link(r, l);
		return true;
	}
	l->state = RMA_WRITTEN;
	p = (unsigned int)(l - &r->link[0][0]) / FC_NUM_VCS;
	vc = (unsigned int)(l - &r->link[0][0]) % FC_NUM_VCS;
	send_record(r, l, p, vc);
	return true;
}

/* Answer the check of the burst on our input @q, VC @vc: now, or from
 * fcemu__rma_release() once there is room. */
static void answer(struct fcemu_rma *r, unsigned int q, unsigned int vc)
{
	struct fcemu_cluster *c = r->c;

	if (r->owe[q][vc] &&
	    !r->ops.send(r->ops.arg, cl_peer(c, r->node, q),
			 FCEMU_RMA_MSG_CHECKED, cl_peer_port(c, r->node, q), vc,
			 r->owe[q][vc] == 2, NULL, 0))
		r->owe[q][vc] = 0;
}

/* Our board's input port @q, VC @vc, from @src: the record of a burst
 * whose bytes are in slot @m->slot of @src's. */
static void take_burst(struct fcemu_rma *r, unsigned int src, unsigned int q,
		       unsigned int vc, const struct rma_burst_msg *m)
{
	struct fcemu_cluster *c = r->c;
	unsigned int abs = src * RMA_SLOTS + m->slot;
	uint32_t hdr = le32toh(m->pkt.hdr), tail;
	struct cl_ring *ring;
	struct cl_slot *d;
	struct fc_hw_pkt pkt = m->pkt;
	uint32_t crc = m->pkt_crc;
	uint8_t *at;
	bool ok = true;

	if (q < 1 || q > c->ports || vc >= FC_NUM_VCS ||
	    cl_peer(c, r->node, q) != src || m->slot >= RMA_SLOTS ||
	    m->len > CL_LAND_SLOT)
		return;
	/* only a burst for our board lands here; another goes as it is
	 * (and fails where it is applied) */
	if (m->landed &&
	    ((hdr >> FC_PKT_DST_SHIFT) & FC_PKT_NODE_MASK) == r->node) {
		at = r->land + (size_t)abs * CL_LAND_SLOT;
		/* one try on the wire, then the sender's CRC */
		if (!fcemu__link_wire_piece(c, r->node, q, at, m->len))
			ok = false;
		else if (fcemu__crc32c(at, m->len) != m->crc) {
			count(c, r->node, q, FC_PORT_CRC_ERRORS);
			ok = false;
		}
		if (!ok) {
			r->owe[q][vc] = 1;
			answer(r, q, vc);
			return;
		}
		fcemu__burst_land(&pkt, abs);
		crc = fcemu__crc32c(&pkt, sizeof(pkt));
		r->done[abs] = 0;
		r->in_use[src] |= 1u << m->slot;
	}
	ring = cl_ring(c, r->node, CL_RING_LINK(q, vc));
	if (fcemu__ring_free(ring) < 1) {
		cl_inc(c, r->node, FC_ROUTER_DROPS); /* beyond its credits */
	} else {
		tail = fcemu__ring_tail(ring);
		d = &ring->slot[tail % CL_RING_SLOTS];
		d->pkt = pkt;
		d->seq = tail;
		d->crc = crc; /* our router checks it, as on any link */
		d->t = m->t;
		fcemu__ring_publish(ring, tail + 1);
		fcemu__link_sent(c, src, cl_peer_port(c, r->node, q), 1);
		fcemu__cluster_ring(c, r->node);
	}
	r->owe[q][vc] = 2;
	answer(r, q, vc);
}

bool fcemu__rma_take(struct fcemu_rma *r, unsigned int type, unsigned int src,
		     unsigned int port, unsigned int vc, uint32_t head,
		     const void *body, size_t len)
{
	struct rma_burst_msg m;
	struct rma_link *l;

	if (!r->c)
		return false;
	switch (type) {
	case FCEMU_RMA_MSG_BURST:
		if (len != sizeof(m))
			return false;
		memcpy(&m, body, sizeof(m));
		take_burst(r, src, port, vc, &m);
		break;
	case FCEMU_RMA_MSG_CHECKED:
		if (port < 1 || port > FC_MAX_PORTS || vc >= FC_NUM_VCS)
			return false;
		l = &r->link[port][vc];
		if (l->state != RMA_CHECKING || l->far != src)
			return false;
		if (head) {
			l->state = RMA_DONE;
			return true;
		}
		count(r->c, r->node, port, FC_PORT_RETRANSMITS);
		count(r->c, r->node, port, FC_PORT_RMA_RETRIES);
		l->state = RMA_REDO;
		break;
	case FCEMU_RMA_MSG_FREE:
		r->free[src] |= head & ALL_SLOTS;
		break;
	default:
		break;
	}
	return false;
}

void fcemu__rma_release(struct fcemu_rma *r)
{
	unsigned int n, s, q, vc;
	uint32_t mask;

	for (q = 1; r->c && q <= r->c->ports; q++)
		for (vc = 0; vc < FC_NUM_VCS; vc++)
			answer(r, q, vc);
	for (n = 0; r->c && n < r->c->nodes; n++) {
		if (!r->in_use[n])
			continue;
		mask = 0;
		for (s = 0; s < RMA_SLOTS; s++)
			if ((r->in_use[n] & (1u << s)) &&
			    __atomic_load_n(&r->done[n * RMA_SLOTS + s],
					    __ATOMIC_ACQUIRE))
				mask |= 1u << s;
		if (mask && !r->ops.send(r->ops.arg, n, FCEMU_RMA_MSG_FREE, 0,
					 0, mask, NULL, 0))
			r->in_use[n] &= ~mask;
	}
}

bool fcemu__rma_busy(const struct fcemu_rma *r)
{
	const struct rma_link *l;
	unsigned int p, vc;

	/* a burst to a board declared dead never ends: not waited for */
	for (p = 0; r->busy && p <= FC_MAX_PORTS; p++)
		for (vc = 0; vc < FC_NUM_VCS; vc++) {
			l = &r->link[p][vc];
			if (l->state != RMA_IDLE &&
			    cl_ld(&r->c->hdr->node[l->far].state) !=
				    FCEMU_NODE_DEAD)
				return true;
		}
	return false;
}

void fcemu__rma_close(struct fcemu_rma *r)
{
	unsigned int p, vc;

	if (!r)
		return;
	if (r->c && r->c->land == r->land)
		r->c->land = NULL;
	fi_close(&r->mr->fid);
	munmap(r->land, r->land_len);
	for (p = 0; p <= FC_MAX_PORTS; p++)
		for (vc = 0; vc < FC_NUM_VCS; vc++)
			free(r->link[p][vc].stage);
	free(r);
}

#endif /* FCEMU_HAVE_OFI */
