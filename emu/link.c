// SPDX-License-Identifier: MIT
/*
 * Links between emulated boards. A link is the receiver's input ring of
 * packet slots: the producer index is the sender's, the consumer index the
 * receiver's, and the free slots between them are the sender's credits, so
 * a full ring makes the sender wait and nothing is dropped for want of
 * buffer. A slot also serves as the sender's replay buffer: a packet the
 * wire "lost" or "corrupted" (the cluster's fault rates) stays put and is
 * taken again later, in order, as a go-back-N link would resend it.
 *
 * Counters: TX_PKTS is written by the sender's router, RX_PKTS and
 * CRC_ERRORS by the receiver's router, RETRANSMITS of the sender's port by
 * the receiver's router (it is the one that sees the loss). The packet
 * counts are also added to by express runs (express.c), which hold only
 * the destination's lock, and the fault counts by the board a burst goes
 * to, for the burst's pieces (burst.c): they are atomic additions.
 */
#include <endian.h>
#include <stddef.h>
#include <string.h>
#ifdef __x86_64__
#include <nmmintrin.h>
#endif

#include "cluster_internal.h"

/* ---- CRC32C (Castagnoli), the link CRC ---- */

static uint32_t crc_table[256];

static void crc_table_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32c_sw(const void *buf, size_t len)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const uint8_t *p = buf;
	uint32_t c = ~0u;

	pthread_once(&once, crc_table_init);
	while (len--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

#ifdef __x86_64__
/* The SSE4.2 instruction: 8 bytes a cycle, so checking costs next to nothing. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(const void *buf,
							    size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~0u;
	uint64_t w;

	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif

#ifdef __x86_64__
static int crc_hw = -1;

/* Whether the SSE4.2 instruction is there, asked once. */
static bool crc_hw_ok(void)
{
	if (__builtin_expect(crc_hw < 0, 0))
		crc_hw = __builtin_cpu_supports("sse4.2");
	return crc_hw;
}

/*
 * A whole packet, unrolled, copied to @to (if not NULL) on the way with
 * its first word's low half (the header) replaced by @hdr (if @set_hdr):
 * the CRC is taken twice per packet per hop, and a router reads the
 * packet once for both the copy and the CRC.
 */
__attribute__((target("sse4.2"), always_inline)) static inline uint32_t
crc32c_hw_pkt(void *to, const void *buf, bool set_hdr, uint32_t hdr)
{
	const uint8_t *p = buf;
	uint8_t *q = to;
	uint64_t c = ~0u, w;
	unsigned int i;

#pragma GCC unroll 8
	for (i = 0; i < FC_PKT_SIZE; i += 8) {
		memcpy(&w, p + i, 8);
		if (set_hdr && !i)
			w = (w & ~0xffffffffull) | htole32(hdr);
		c = _mm_crc32_u64(c, w);
		if (q)
			memcpy(q + i, &w, 8);
	}
	return ~(uint32_t)c;
}

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw_check(const struct fc_hw_pkt *pkt)
{
	return crc32c_hw_pkt(NULL, pkt, false, 0);
}

/* check_run() with the SSE4.2 CRC. */
__attribute__((target("sse4.2"))) static uint32_t
check_run_hw(const struct cl_ring *r, uint32_t head, uint32_t k, uint32_t end)
{
	const struct cl_slot *s;

	for (; k < end; k++) {
		s = &r->slot[(head + k) % CL_RING_SLOTS];
		if (s->seq != head + k ||
		    crc32c_hw_pkt(NULL, &s->pkt, false, 0) != s->crc)
			break;
	}
	return k;
}

/* fcemu__link_put_run() with the SSE4.2 CRC. */
__attribute__((target("sse4.2"))) static uint32_t
link_put_run_hw(struct cl_ring *to, uint32_t tail, const struct cl_ring *from,
		uint32_t head, uint32_t max, uint32_t dst, uint32_t vcbit)
{
	const struct cl_slot *f;
	struct cl_slot *s;
	uint32_t k, hdr;

	for (k = 0; k < max; k++) {
		f = &from->slot[(head + k) % CL_RING_SLOTS];
		hdr = le32toh(f->pkt.hdr);
		if ((hdr & FC_PKT_DST_BITS) != dst)
			break;
		s = &to->slot[(tail + k) % CL_RING_SLOTS];
		s->crc = crc32c_hw_pkt(&s->pkt, &f->pkt, true,
				       (hdr & ~FC_PKT_VC) | vcbit);
		s->seq = tail + k;
		s->t = f->t;
	}
	return k;
}
#endif

uint32_t fcemu__crc32c(const void *buf, size_t len)
{
#ifdef __x86_64__
	if (crc_hw_ok() && len == FC_PKT_SIZE)
		return crc32c_hw_check(buf);
	if (crc_hw_ok())
		return crc32c_hw(buf, len);
#endif
	return crc32c_sw(buf, len);
}

/* The first slot of @r from @head + @k to @head + @end whose sequence
 * number or CRC is wrong, or @end. */
static uint32_t check_run(const struct cl_ring *r, uint32_t head, uint32_t k,
			  uint32_t end)
{
	const struct cl_slot *s;

#ifdef __x86_64__
	if (crc_hw_ok())
		return check_run_hw(r, head, k, end);
#endif
	for (; k < end; k++) {
		s = &r->slot[(head + k) % CL_RING_SLOTS];
		if (s->seq != head + k ||
		    crc32c_sw(&s->pkt, sizeof(s->pkt)) != s->crc)
			break;
	}
	return k;
}

/* ---- Rings ---- */

uint32_t fcemu__link_put_run(struct cl_ring *to, uint32_t tail,
			     const struct cl_ring *from, uint32_t head,
			     uint32_t max, uint32_t dst, uint32_t vcbit)
{
	const struct cl_slot *f;
	struct cl_slot *s;
	uint32_t k, hdr;

#ifdef __x86_64__
	if (crc_hw_ok())
		return link_put_run_hw(to, tail, from, head, max, dst, vcbit);
#endif
	for (k = 0; k < max; k++) {
		f = &from->slot[(head + k) % CL_RING_SLOTS];
		hdr = le32toh(f->pkt.hdr);
		if ((hdr & FC_PKT_DST_BITS) != dst)
			break;
		s = &to->slot[(tail + k) % CL_RING_SLOTS];
		s->pkt = f->pkt;
		s->pkt.hdr = htole32((hdr & ~FC_PKT_VC) | vcbit);
		s->seq = tail + k;
		s->crc = crc32c_sw(&s->pkt, sizeof(s->pkt));
		s->t = f->t;
	}
	return k;
}

struct cl_ring *fcemu__link_ring(struct fcemu_cluster *c, unsigned int node,
				 unsigned int port, unsigned int vc)
{
	return cl_ring(c, cl_peer(c, node, port),
		       CL_RING_LINK(cl_peer_port(c, node, port), vc));
}

/* Packet counters: besides the link's router, an express run from
 * another process counts across links it does not own (express.c). */
static void count(uint32_t *r, uint32_t n)
{
	__atomic_fetch_add(r, n, __ATOMIC_RELAXED);
}

void fcemu__link_sent(struct fcemu_cluster *c, unsigned int node,
		      unsigned int port, unsigned int n)
{
	count(cl_reg(c, node, FC_PORT_REG(port, FC_PORT_TX_PKTS)), n);
	cl_set_pending(c, cl_peer(c, node, port));
}

void fcemu__link_counted(struct fcemu_cluster *c, unsigned int node,
			 unsigned int port, unsigned int n, bool rx)
{
	count(cl_reg(c, node, FC_PORT_REG(port, FC_PORT_TX_PKTS)), n);
	if (rx)
		fcemu__link_received(c, cl_peer(c, node, port),
				     cl_peer_port(c, node, port), n);
}

void fcemu__link_received(struct fcemu_cluster *c, unsigned int node,
			  unsigned int port, unsigned int n)
{
	count(cl_reg(c, node, FC_PORT_REG(port, FC_PORT_RX_PKTS)), n);
}

/* xorshift64*: fault draws need speed, not quality. */
static uint32_t draw(struct fcemu_cluster *c)
{
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return (uint32_t)((c->rng * 0x2545f4914f6cdd1dull) >> 32);
}

enum wire_try {
	WIRE_OK,
	WIRE_LOST,
	WIRE_CORRUPT
};

/* One try at crossing the wire: came, lost, or corrupted (bit *@bit of
 * @bits flipped). */
static enum wire_try wire_draw(struct fcemu_cluster *c, size_t bits,
			       size_t *bit)
{
	const struct fcemu_faults *f = &c->faults;
	uint32_t r = draw(c) % 1000000;

	if (r < f->drop_ppm)
		return WIRE_LOST;
	if (r - f->drop_ppm < f->corrupt_ppm) {
		*bit = draw(c) % bits;
		return WIRE_CORRUPT;
	}
	return WIRE_OK;
}

/*
 * A try that failed on the link into @node's port @port, as its receiver
 * saw it: a resend by the sender, and with @crc a CRC error. Atomic: the
 * pieces of a burst are counted by the board they go to, not by the
 * router of the link's receiver.
 */
static void wire_failed(struct fcemu_cluster *c, unsigned int node,
			unsigned int port, bool crc)
{
	if (crc)
		count(cl_reg(c, node, FC_PORT_REG(port, FC_PORT_CRC_ERRORS)),
		      1);
	count(cl_reg(c, cl_peer(c, node, port),
		     FC_PORT_REG(cl_peer_port(c, node, port),
				 FC_PORT_RETRANSMITS)),
	      1);
}

/* Did this try at the packet fail on the wire? Counts what it saw. */
static bool wire_fault(struct fcemu_cluster *c, unsigned int node,
		       unsigned int port, const struct cl_slot *s)
{
	struct fc_hw_pkt bad;
	size_t bit = 0;

	switch (wire_draw(c, 8 * sizeof(bad), &bit)) {
	case WIRE_LOST:
		/* the receiver sees the next sequence number, asks again */
		wire_failed(c, node, port, false);
		return true;
	case WIRE_CORRUPT:
		/* what arrived has one bit flipped: the CRC must catch it */
		bad = s->pkt;
		((uint8_t *)&bad)[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (fcemu__crc32c(&bad, sizeof(bad)) != s->crc) {
			wire_failed(c, node, port, true);
			return true;
		}
		return false;
	default:
		return false;
	}
}

bool fcemu__link_wire_piece(struct fcemu_cluster *c, unsigned int node,
			    unsigned int port, uint8_t *buf, size_t len)
{
	size_t bit = 0, i;
	uint32_t crc;

	switch (wire_draw(c, 8 * len, &bit)) {
	case WIRE_LOST:
		/* never came: what lies there is not the data */
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)~buf[i];
		wire_failed(c, node, port, false);
		return false;
	case WIRE_CORRUPT:
		crc = fcemu__crc32c(buf,
				    len); /* as the link's sender sent it */
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (fcemu__crc32c(buf, len) != crc) {
			wire_failed(c, node, port, true);
			return false;
		}
		return true; /* the CRC missed it: it lands as it is */
	default:
		return true;
	}
}

uint32_t fcemu__link_recv(struct fcemu_cluster *c, unsigned int node,
			  unsigned int port, unsigned int vc, uint32_t max)
{
	unsigned int idx = CL_RING_LINK(port, vc);
	struct cl_node *nd = &c->hdr->node[node];
	struct cl_ring *r = cl_ring(c, node, idx);
	uint32_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	uint32_t avail = cl_ld(&r->tail) - head, k, k0, end, good;
	uint32_t checked = nd->checked[idx] - head;
	bool faults = c->faults.drop_ppm || c->faults.corrupt_ppm;

	if (max > avail)
		max = avail;
	/* Packets checked once and then held back by credit stay good. */
	k0 = k = (int32_t)checked > 0 ? checked : 0;
	if (k >= max)
		return max;
	while (k < max) {
		if (faults && wire_fault(c, node, port,
					 &r->slot[(head + k) % CL_RING_SLOTS]))
			break;
		/* A wire without faults: the rest of the run in one pass. */
		end = faults ? k + 1 : max;
		good = check_run(r, head, k, end);
		if (good < end) {
			k = good;
			/*
			 * Not the wire: the shared memory itself was damaged,
			 * and asking again gives the same. Drop it once it is
			 * at the head, counted, or the link would stop here
			 * for ever.
			 */
			if (k == 0) {
				cl_inc(c, node,
				       FC_PORT_REG(port, FC_PORT_CRC_ERRORS));
				cl_inc(c, node, FC_ROUTER_DROPS);
				cl_st(&r->head, head + 1);
			}
			break;
		}
		k = end;
	}
	if (k > k0)
		nd->checked[idx] = head + k;
	return k;
}

void fcemu__link_done(struct fcemu_cluster *c, unsigned int node,
		      unsigned int port, unsigned int vc, uint32_t n)
{
	struct cl_ring *r = cl_ring(c, node, CL_RING_LINK(port, vc));

	cl_st(&r->head, __atomic_load_n(&r->head, __ATOMIC_RELAXED) + n);
	count(cl_reg(c, node, FC_PORT_REG(port, FC_PORT_RX_PKTS)), n);
}
