// SPDX-License-Identifier: MIT
/*
 * test_fabric_emu: the emulated fabric at register level. Several boards
 * in one process, each its own fcemu attached to one cluster: channel
 * messages (sizes around the 60-byte packet, 4 KiB, 1 MiB) between
 * neighbours, across hops and on every kind of topology, boundaries and
 * order; F_MORE gathering; PUTs into a peer's host and board memory seen
 * when the chain ends; a slow receiver stalling the sender without loss;
 * drop and corrupt faults without loss, bursts included (their pieces
 * counted on the links); all-to-all without deadlock; a
 * dead board's packets dropped and counted; chains the check refuses;
 * the PIO window (packets the host writes, checked and sourced by the
 * board); a burst shared between receiver and sender, interleaved at set
 * points: no chunk of a job not yet published, none for a sender node
 * claimed anew, and a helper that never finishes its chunk fails the
 * burst in bounded time; the event queue (one queue for several
 * channels, read by phase, full, IRQ_AT, switched off).
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <fpgacomm/hw.h>
#include "chain_rule.h"
#include "fcemu.h"
#include "fabric.h"	      /* emu/: the model under test */
#include "emu_internal.h"     /* bursts (emu/burst.c) */
#include "cluster_internal.h" /* the burst job, the express count */

#define HOST_BUS     0x10000000ull
#define HOST_LEN     (8u << 20)
#define TABLE_OFF    0 /* engine e's table at e * TABLE_BYTES */
#define TABLE_BYTES  8192
#define SEND_OFF     (64u << 10) /* data to send, up to RING_OFF */
#define RING_OFF     (5u << 20)	 /* receive rings, RING_BYTES each */
#define RING_BYTES   (256u * FC_CHAN_SLOT_SIZE)
#define PUT_OFF	     (7u << 20) /* target of remote writes */
#define BOARD_MEM    (16u << 20)
#define MAX_CHAN     16
#define MAX_MSGS     64
#define STUCK_ROUNDS 20000 /* rounds without progress = deadlock */

/* Packets of messages from different sources interleave in a ring. */
struct rx_src {
	uint8_t *buf;
	size_t len, cap;
	unsigned int pkts;   /* of the message in progress */
	size_t start;	     /* where the message in progress began */
	unsigned int aborts; /* messages the sender cut off */
	unsigned int msgs;
	size_t msg_end[MAX_MSGS];
	unsigned int msg_pkts[MAX_MSGS];
};

struct rx {
	uint32_t slots;
	uint32_t head;
	bool manual;	   /* the test drains it, not pump() */
	unsigned int msgs; /* from all sources */
	unsigned int pkts;
	struct rx_src src[FC_MAX_NODES];
};

struct board {
	struct fcemu *emu;
	uint8_t *host;
	uint8_t *mem;
	uint32_t doorbell[2];
	uint32_t reset[2];
	struct rx *rx[MAX_CHAN];
};

struct rig {
	char name[FCEMU_CLUSTER_NAME_MAX];
	struct fcemu_cluster *c;
	struct fc_topology t;
	unsigned int nodes;
	struct board b[FC_MAX_NODES];
};

static unsigned int rig_seq;

/* Clusters of the running test, removed in teardown even if it failed. */
static char live[32][FCEMU_CLUSTER_NAME_MAX];
static unsigned int n_live;

static void note_cluster(const char *name)
{
	assert_true(n_live < 32);
	snprintf(live[n_live++], FCEMU_CLUSTER_NAME_MAX, "%s", name);
}

static int unlink_clusters(void **state)
{
	(void)state;
	while (n_live)
		fcemu_cluster_unlink(live[--n_live]);
	return 0;
}

static void *translate(void *ctx, uint64_t bus, uint64_t len)
{
	struct board *b = ctx;

	if (bus < HOST_BUS || bus - HOST_BUS > HOST_LEN ||
	    len > HOST_LEN - (bus - HOST_BUS))
		return NULL;
	return b->host + (bus - HOST_BUS);
}

static const struct fcemu_host_ops ops = { .translate = translate };

static uint32_t rd(struct rig *r, unsigned int n, uint32_t off)
{
	return __atomic_load_n(&fcemu_bar0(r->b[n].emu)[off / 4],
			       __ATOMIC_ACQUIRE);
}

static void wr(struct rig *r, unsigned int n, uint32_t off, uint32_t val)
{
	fcemu_host_write(r->b[n].emu, off, val);
}

/* Boards for every node except those in @skip (bit n: leave n alone). */
static struct rig *rig_new(const char *topo, uint32_t drop_ppm,
			   uint32_t corrupt_ppm, uint64_t skip)
{
	struct fcemu_faults f = { drop_ppm, corrupt_ppm };
	struct fcemu_config cfg;
	struct rig *r = calloc(1, sizeof(*r));
	unsigned int n;

	assert_non_null(r);
	assert_int_equal(fc_topo_parse(topo, &r->t), 0);
	snprintf(r->name, sizeof(r->name), "tfe-%d-%u", (int)getpid(),
		 rig_seq++);
	assert_int_equal(fcemu_cluster_create(&r->c, r->name, &r->t, &f), 0);
	note_cluster(r->name);
	r->nodes = r->t.nodes;
	for (n = 0; n < r->nodes; n++) {
		struct board *b = &r->b[n];

		if (skip & (1ull << n))
			continue;
		b->host = calloc(1, HOST_LEN);
		assert_non_null(b->host);
		fcemu_config_default(&cfg);
		cfg.board_mem_size = BOARD_MEM;
		cfg.node_id = n;
		cfg.cluster = r->c;
		assert_int_equal(fcemu_cluster_claim(r->c, n), 0);
		assert_int_equal(fcemu_create(&b->emu, &cfg, &ops, b), 0);
		b->mem = fcemu_board_mem(b->emu, NULL);
	}
	return r;
}

static void rig_free(struct rig *r)
{
	unsigned int n, ch, i;

	for (n = 0; n < r->nodes; n++) {
		struct board *b = &r->b[n];

		if (!b->emu)
			continue;
		fcemu_destroy(b->emu);
		fcemu_cluster_release(r->c, n);
		for (ch = 0; ch < MAX_CHAN; ch++) {
			for (i = 0; b->rx[ch] && i < FC_MAX_NODES; i++)
				free(b->rx[ch]->src[i].buf);
			free(b->rx[ch]);
		}
		free(b->host);
	}
	fcemu_cluster_detach(r->c);
	assert_int_equal(fcemu_cluster_unlink(r->name), 0);
	free(r);
}

static void fill(void *p, size_t len, uint64_t seed)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		b[i] = (uint8_t)(seed >> 56);
	}
}

/* Receive ring of @slots on channel @ch of node @n. */
static struct rx *rx_open(struct rig *r, unsigned int n, unsigned int ch,
			  uint32_t slots)
{
	struct board *b = &r->b[n];
	uint64_t ring = HOST_BUS + RING_OFF + (uint64_t)ch * RING_BYTES;
	struct rx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	assert_true(ch < MAX_CHAN && slots <= 256);
	x->slots = slots;
	x->head = rd(r, n, FC_CHAN_REG(ch, FC_CHAN_TAIL));
	b->rx[ch] = x;
	wr(r, n, FC_CHAN_REG(ch, FC_CHAN_RING_LO), (uint32_t)ring);
	wr(r, n, FC_CHAN_REG(ch, FC_CHAN_RING_HI), (uint32_t)(ring >> 32));
	wr(r, n, FC_CHAN_REG(ch, FC_CHAN_RING_SLOTS), slots);
	wr(r, n, FC_CHAN_REG(ch, FC_CHAN_HEAD), x->head);
	wr(r, n, FC_CHAN_REG(ch, FC_CHAN_CTRL), FC_CHAN_CTRL_ENABLE);
	return x;
}

/* Take up to @max packets of channel @ch on node @n. RETURN VALUE: taken. */
static unsigned int rx_drain(struct rig *r, unsigned int n, unsigned int ch,
			     unsigned int max)
{
	struct board *b = &r->b[n];
	struct rx *x = b->rx[ch];
	struct rx_src *xs;
	uint32_t tail = rd(r, n, FC_CHAN_REG(ch, FC_CHAN_TAIL));
	unsigned int got = 0;

	while (x->head != tail && got < max) {
		const struct fc_hw_pkt *p =
			(const void *)(b->host + RING_OFF + ch * RING_BYTES +
				       (x->head % x->slots) *
					       FC_CHAN_SLOT_SIZE);
		uint32_t hdr = le32toh(p->hdr);
		uint32_t len = (hdr >> FC_PKT_LEN_SHIFT) & FC_PKT_LEN_MASK;
		uint32_t type = (hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK;

		assert_int_equal(hdr & FC_PKT_NODE_MASK, n);
		assert_int_equal((hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK,
				 ch);
		xs = &x->src[(hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK];
		if (type == FC_PKT_T_ABORT) {
			/* what came of the message is not a message */
			assert_true(hdr & FC_PKT_EOM);
			xs->len = xs->start;
			xs->pkts = 0;
			xs->aborts++;
			x->head++;
			got++;
			continue;
		}
		assert_int_equal(type, FC_PKT_T_DATA);
		assert_true(len >= 1 && len <= FC_PKT_PAYLOAD);
		if (xs->len + len > xs->cap) {
			xs->cap = (xs->cap + len) * 2;
			xs->buf = realloc(xs->buf, xs->cap);
			assert_non_null(xs->buf);
		}
		memcpy(xs->buf + xs->len, p->payload, len);
		xs->len += len;
		xs->pkts++;
		x->pkts++;
		if (hdr & FC_PKT_EOM) {
			assert_true(xs->msgs < MAX_MSGS);
			xs->msg_pkts[xs->msgs] = xs->pkts;
			xs->msg_end[xs->msgs++] = xs->len;
			xs->start = xs->len;
			xs->pkts = 0;
			x->msgs++;
		}
		x->head++;
		got++;
	}
	if (got)
		wr(r, n, FC_CHAN_REG(ch, FC_CHAN_HEAD), x->head);
	return got;
}

/* One round: every board makes progress, every automatic ring drains. */
static uint64_t pump(struct rig *r)
{
	uint64_t moved = 0;
	unsigned int n, ch;

	for (n = 0; n < r->nodes; n++) {
		if (!r->b[n].emu)
			continue;
		moved += fcemu_progress(r->b[n].emu, 1u << 20);
		for (ch = 0; ch < MAX_CHAN; ch++)
			if (r->b[n].rx[ch] && !r->b[n].rx[ch]->manual)
				moved += rx_drain(r, n, ch, ~0u);
	}
	return moved;
}

static void set_desc(struct fc_hw_desc *d, uint32_t len, unsigned int ss,
		     uint64_t src, unsigned int ds, uint64_t dst,
		     uint16_t flags)
{
	memset(d, 0, sizeof(*d));
	d->len = htole32(len);
	d->flags = htole16(flags);
	d->src_space = (uint8_t)ss;
	d->dst_space = (uint8_t)ds;
	d->src = htole64(src);
	d->dst = htole64(dst);
}

static struct fc_hw_desc *table(struct rig *r, unsigned int n, unsigned int e)
{
	return (struct fc_hw_desc *)(r->b[n].host + TABLE_OFF +
				     e * TABLE_BYTES);
}

static void kick(struct rig *r, unsigned int n, unsigned int e, uint32_t count)
{
	uint64_t bus = HOST_BUS + TABLE_OFF + e * TABLE_BYTES;

	wr(r, n, FC_DMA_REG(e, FC_DMA_DESC_LO), (uint32_t)bus);
	wr(r, n, FC_DMA_REG(e, FC_DMA_DESC_HI), (uint32_t)(bus >> 32));
	wr(r, n, FC_DMA_REG(e, FC_DMA_DESC_COUNT), count);
	wr(r, n, FC_DMA_REG(e, FC_DMA_DOORBELL), ++r->b[n].doorbell[e]);
}

static bool chain_ended(struct rig *r, unsigned int n, unsigned int e)
{
	return rd(r, n, FC_DMA_REG(e, FC_DMA_DONE_SEQ)) == r->b[n].doorbell[e];
}

static void reset_engine(struct rig *r, unsigned int n, unsigned int e)
{
	wr(r, n, FC_DMA_REG(e, FC_DMA_RESET), ++r->b[n].reset[e]);
	assert_int_equal(rd(r, n, FC_DMA_REG(e, FC_DMA_RESET_ACK)),
			 r->b[n].reset[e]);
}

/* Pump until @done says so; fail if nothing moves for too long. */
static void run_until(struct rig *r, bool (*done)(struct rig *, void *),
		      void *arg)
{
	unsigned int idle = 0;

	while (!done(r, arg)) {
		if (pump(r))
			idle = 0;
		else
			assert_true(++idle < STUCK_ROUNDS);
	}
}

struct chain_ref {
	unsigned int node, engine;
};

static bool one_chain_ended(struct rig *r, void *arg)
{
	struct chain_ref *c = arg;

	return chain_ended(r, c->node, c->engine);
}

static void wait_chain(struct rig *r, unsigned int n, unsigned int e)
{
	struct chain_ref c = { n, e };

	run_until(r, one_chain_ended, &c);
	assert_int_equal(rd(r, n, FC_DMA_REG(e, FC_DMA_ERROR)),
			 FC_DMA_ERR_NONE);
	assert_int_equal(rd(r, n, FC_DMA_REG(e, FC_DMA_STATUS)),
			 FC_DMA_STATUS_IDLE);
}

/* The chain on (@n, @e) ends with @err, at its last descriptor. */
static void wait_chain_err(struct rig *r, unsigned int n, unsigned int e,
			   uint32_t err)
{
	struct chain_ref c = { n, e };

	run_until(r, one_chain_ended, &c);
	assert_int_equal(rd(r, n, FC_DMA_REG(e, FC_DMA_ERROR)), err);
	assert_int_equal(rd(r, n, FC_DMA_REG(e, FC_DMA_STATUS)),
			 FC_DMA_STATUS_ERROR);
}

struct msgs_ref {
	unsigned int node, ch, msgs;
};

static bool got_msgs(struct rig *r, void *arg)
{
	struct msgs_ref *m = arg;

	return r->b[m->node].rx[m->ch]->msgs >= m->msgs;
}

static void wait_msgs(struct rig *r, unsigned int n, unsigned int ch,
		      unsigned int msgs)
{
	struct msgs_ref m = { n, ch, msgs };

	run_until(r, got_msgs, &m);
}

static uint64_t sum_ports(struct rig *r, uint32_t reg)
{
	uint64_t s = 0;
	unsigned int n, p;

	for (n = 0; n < r->nodes; n++)
		for (p = 1; p <= fc_topo_ports(&r->t); p++)
			s += fcemu_cluster_bar0(r->c,
						n)[FC_PORT_REG(p, reg) / 4];
	return s;
}

static uint64_t sum_drops(struct rig *r)
{
	uint64_t s = 0;
	unsigned int n;

	for (n = 0; n < r->nodes; n++)
		s += fcemu_cluster_bar0(r->c, n)[FC_ROUTER_DROPS / 4];
	return s;
}

/*
 * Send messages of @sizes from @src to channel @ch of @dst as one chain
 * (one descriptor per message), and check what arrives: each message whole,
 * in order, and cut into ceil(size / 60) packets.
 */
static void send_sizes(struct rig *r, unsigned int src, unsigned int dst,
		       unsigned int ch, const uint32_t *sizes,
		       unsigned int count)
{
	struct board *s = &r->b[src];
	struct rx *x = r->b[dst].rx[ch] ? r->b[dst].rx[ch] :
					  rx_open(r, dst, ch, 256);
	struct rx_src *xs = &x->src[src];
	unsigned int first = xs->msgs, want = x->msgs + count, i;
	size_t base = xs->len, off = 0;

	for (i = 0; i < count; i++) {
		assert_true(SEND_OFF + off + sizes[i] <= RING_OFF);
		fill(s->host + SEND_OFF + off, sizes[i], src * 1000 + dst + i);
		set_desc(&table(r, src, 0)[i], sizes[i], FC_SPACE_HOST,
			 HOST_BUS + SEND_OFF + off, FC_SPACE_FABRIC,
			 FC_FABRIC_CHAN(dst, ch),
			 i == count - 1 ? FC_DESC_F_EOC : 0);
		off += sizes[i];
	}
	kick(r, src, 0, count);
	wait_chain(r, src, 0);
	wait_msgs(r, dst, ch, want);
	assert_int_equal(xs->msgs, first + count);
	assert_int_equal(xs->len - base, off);
	assert_memory_equal(xs->buf + base, s->host + SEND_OFF, off);
	for (i = 0, off = base; i < count; i++) {
		off += sizes[i];
		assert_int_equal(xs->msg_end[first + i], off);
		assert_int_equal(xs->msg_pkts[first + i],
				 (sizes[i] + FC_PKT_PAYLOAD - 1) /
					 FC_PKT_PAYLOAD);
	}
}

static const uint32_t sizes[] = { 1, 59, 60, 61, 4096, 1u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Write @n packets into @src's PIO window and hand them over. */
static void pio_write(struct rig *r, unsigned int src,
		      const struct fc_hw_pkt *pkts, unsigned int n)
{
	uint32_t tail = rd(r, src, FC_PIO_TAIL);
	unsigned int i;

	for (i = 0; i < n; i++)
		fcemu_host_write_line(r->b[src].emu, FC_PIO_SLOT(tail + i),
				      &pkts[i]);
	wr(r, src, FC_PIO_TAIL, tail + n);
}

static void pio_pkt(struct fc_hw_pkt *p, unsigned int dst,
		    unsigned int fake_src, unsigned int ch, unsigned int len,
		    unsigned int type, uint32_t flags, uint64_t seed)
{
	memset(p, 0, sizeof(*p));
	p->hdr = htole32(FC_PKT_HDR(dst, fake_src, ch, len, type) | flags);
	fill(p->payload, FC_PKT_PAYLOAD, seed);
}

/*
 * The PIO window: packets written by the host arrive as messages, with the
 * board's own node as source whatever the host wrote; a message is taken
 * only once its EOM is written; one with a packet of another type, an
 * empty one without EOM or a len over 60 is refused whole and counted;
 * more than the window holds is refused; a full window is all delivered.
 */
static void test_pio_window(void **state)
{
	struct rig *r = rig_new("torus:2x2", 0, 0, 0);
	struct fc_hw_pkt p[FC_PIO_SLOTS + 1];
	struct rx *x = rx_open(r, 3, 2, 256);
	struct rx_src *xs = &x->src[0];
	uint32_t caps = rd(r, 0, FC_REG_CAPS), head;
	unsigned int i;

	(void)state;
	assert_true(caps & FC_CAP_PIO_SEND);
	/* a 3-packet message to a node 2 hops away, claiming to be node 2 */
	for (i = 0; i < 3; i++)
		pio_pkt(&p[i], 3, 2, 2, i < 2 ? 60 : 7, FC_PKT_T_DATA,
			i == 2 ? FC_PKT_EOM : 0, 100 + i);
	pio_write(r, 0, p, 3);
	assert_int_equal(rd(r, 0, FC_PIO_HEAD), rd(r, 0, FC_PIO_TAIL));
	wait_msgs(r, 3, 2, 1);
	assert_int_equal(xs->msgs, 1);
	assert_int_equal(xs->msg_end[0], 127);
	assert_int_equal(x->src[2].msgs, 0);
	for (i = 0; i < 3; i++)
		assert_memory_equal(xs->buf + 60 * i, p[i].payload,
				    i < 2 ? 60 : 7);

	/* not taken before its end is written */
	head = rd(r, 0, FC_PIO_HEAD);
	pio_pkt(&p[0], 3, 0, 2, 60, FC_PKT_T_DATA, 0, 11);
	pio_pkt(&p[1], 3, 0, 2, 2, FC_PKT_T_DATA, FC_PKT_EOM, 12);
	pio_write(r, 0, p, 1);
	pump(r);
	assert_int_equal(rd(r, 0, FC_PIO_HEAD), head);
	pio_write(r, 0, &p[1], 1);
	assert_int_equal(rd(r, 0, FC_PIO_HEAD), head + 2);
	wait_msgs(r, 3, 2, 2);
	assert_int_equal(xs->msg_end[1], 127 + 62);

	/* refused whole: a PUT, a FENCE, len 61, an empty packet without
	 * EOM (and the good one after it, in the same message) */
	pio_pkt(&p[0], 3, 0, 2, 8, FC_PKT_T_PUT, FC_PKT_EOM, 1);
	pio_pkt(&p[1], 3, 0, 2, 8, FC_PKT_T_FENCE, FC_PKT_EOM, 2);
	pio_pkt(&p[2], 3, 0, 2, 61, FC_PKT_T_DATA, FC_PKT_EOM, 3);
	pio_pkt(&p[3], 3, 0, 2, 0, FC_PKT_T_DATA, 0, 4);
	pio_pkt(&p[4], 3, 0, 2, 5, FC_PKT_T_DATA, FC_PKT_EOM, 5);
	pio_pkt(&p[5], 3, 0, 2, 5, FC_PKT_T_DATA, FC_PKT_EOM, 6);
	pio_write(r, 0, p, 6);
	assert_int_equal(rd(r, 0, FC_PIO_ERRORS), 5);
	wait_msgs(r, 3, 2, 3);
	assert_int_equal(xs->msgs, 3);
	assert_int_equal(xs->msg_end[2], 127 + 62 + 5);
	assert_memory_equal(xs->buf + 127 + 62, p[5].payload, 5);

	/* a host that writes past the window: all of it refused */
	head = rd(r, 0, FC_PIO_HEAD);
	wr(r, 0, FC_PIO_TAIL, head + FC_PIO_SLOTS + 1);
	assert_int_equal(rd(r, 0, FC_PIO_HEAD), head + FC_PIO_SLOTS + 1);
	assert_int_equal(rd(r, 0, FC_PIO_ERRORS), 5 + FC_PIO_SLOTS + 1);

	/* a full window: as many packets as it holds, then all delivered */
	for (i = 0; i < FC_PIO_SLOTS; i++)
		pio_pkt(&p[i], 1, 0, 2, 1, FC_PKT_T_DATA, FC_PKT_EOM, 200 + i);
	rx_open(r, 1, 2, 256);
	pio_write(r, 0, p, FC_PIO_SLOTS);
	wait_msgs(r, 1, 2, FC_PIO_SLOTS);
	for (i = 0; i < FC_PIO_SLOTS; i++)
		assert_int_equal(r->b[1].rx[2]->src[0].buf[i], p[i].payload[0]);

	/* a board reset drops a message not taken yet, and counts it */
	head = rd(r, 0, FC_PIO_ERRORS);
	pio_pkt(&p[0], 1, 0, 2, 60, FC_PKT_T_DATA, 0, 300);
	pio_write(r, 0, p, 1); /* no EOM: waits in the window */
	wr(r, 0, FC_REG_BOARD_RESET, rd(r, 0, FC_REG_BOARD_RESET_ACK) + 1);
	assert_int_equal(rd(r, 0, FC_PIO_HEAD), rd(r, 0, FC_PIO_TAIL));
	assert_int_equal(rd(r, 0, FC_PIO_ERRORS), head + 1);
	rig_free(r);
}

static void test_neighbours(void **state)
{
	struct rig *r = rig_new("torus:4x4", 0, 0, 0);

	(void)state;
	assert_int_equal(fc_topo_hops(&r->t, 0, 1), 1);
	send_sizes(r, 0, 1, 3, sizes, NSIZES);
	send_sizes(r, 1, 0, 3, sizes, NSIZES);
	/* over the wrap-around link (dateline) and in y */
	send_sizes(r, 0, 3, 0, sizes, NSIZES);
	send_sizes(r, 0, 12, 0, sizes, NSIZES);
	assert_int_equal(sum_drops(r), 0);
	rig_free(r);
}

static void test_multihop(void **state)
{
	struct rig *r = rig_new("torus:4x4", 0, 0, 0);

	(void)state;
	assert_int_equal(fc_topo_hops(&r->t, 0, 10), 4);
	assert_true(fc_topo_hops(&r->t, 13, 6) >= 3);
	send_sizes(r, 0, 10, 1, sizes, NSIZES);
	send_sizes(r, 13, 6, 2, sizes, NSIZES);
	send_sizes(r, 10, 0, 1, sizes, NSIZES);
	assert_int_equal(sum_drops(r), 0);
	rig_free(r);
}

/* Registers the cluster sets up, against the topology's own answers. */
static void check_wiring(struct rig *r)
{
	unsigned int ports = fc_topo_ports(&r->t);
	unsigned int n, p, d, peer, peer_port;
	uint32_t links, st;

	for (n = 0; n < r->nodes; n++) {
		assert_int_equal(rd(r, n, FC_REG_NODE_ID), n);
		assert_int_equal(rd(r, n, FC_REG_NUM_PORTS), ports);
		assert_int_equal(
			rd(r, n, FC_REG_CAPS) &
				(FC_CAP_ROUTER | FC_CAP_CHANNELS |
				 FC_CAP_FABRIC_DMA | FC_CAP_CHAN_EVENTS),
			FC_CAP_ROUTER | FC_CAP_CHANNELS | FC_CAP_FABRIC_DMA |
				FC_CAP_CHAN_EVENTS);
		assert_true(rd(r, n, FC_ROUTER_STATUS) & FC_ROUTER_STATUS_UP);
		links = 0;
		for (p = 1; p <= ports; p++) {
			st = rd(r, n, FC_PORT_REG(p, FC_PORT_STATUS));
			if (fc_topo_peer(&r->t, n, p, &peer, &peer_port)) {
				assert_int_equal(st, 0);
				continue;
			}
			links |= 1u << (p - 1);
			assert_int_equal(
				st, FC_PORT_UP | peer << FC_PORT_PEER_SHIFT);
		}
		assert_int_equal(rd(r, n, FC_REG_LINK_STATE), links);
		for (d = 0; d < r->nodes; d++)
			assert_int_equal(rd(r, n, FC_ROUTE_TABLE(d)),
					 fc_topo_route(&r->t, n, d));
	}
}

static void test_topologies(void **state)
{
	static const char *const topos[] = {
		"full:1",   "ring:2",	 "ring:5",    "ring:8",	   "mesh:3x3",
		"mesh:4x2", "torus:2x2", "torus:3x3", "torus:4x4", "torus:5x3",
		"full:2",   "full:4",	 "full:9",
	};
	static const uint32_t sz[] = { 1, 60, 61, 4096, 65536 + 7 };
	unsigned int i, n, far, hops;

	(void)state;
	for (i = 0; i < sizeof(topos) / sizeof(topos[0]); i++) {
		struct rig *r = rig_new(topos[i], 0, 0, 0);

		check_wiring(r);
		for (far = 0, hops = 0, n = 1; n < r->nodes; n++) {
			if (fc_topo_hops(&r->t, 0, n) > hops) {
				hops = fc_topo_hops(&r->t, 0, n);
				far = n;
			}
		}
		send_sizes(r, 0, far, 4, sz, 5);
		send_sizes(r, far, 0, 4, sz, 5);
		send_sizes(r, r->nodes - 1, r->nodes / 2, 5, sz, 5);
		/* to itself: through its own router and back out */
		send_sizes(r, r->nodes > 1, r->nodes > 1, 6, sz, 2);
		assert_int_equal(sum_drops(r), 0);
		rig_free(r);
	}
}

static void test_more_gather(void **state)
{
	struct rig *r = rig_new("torus:4x4", 0, 0, 0);
	struct fc_hw_desc *t = table(r, 0, 0);
	uint8_t *h = r->b[0].host + SEND_OFF;
	const uint64_t bus = HOST_BUS + SEND_OFF;
	const uint64_t to = FC_FABRIC_CHAN(5, 7);
	uint8_t want[10 + 50 + 7 + 100 + 1 + 120];
	struct rx *x = rx_open(r, 5, 7, 256);
	unsigned int g;

	(void)state;
	fill(h, 65536, 42);
	/* 67 bytes from three buffers, then 101 from two, then 120 alone */
	set_desc(&t[0], 10, FC_SPACE_HOST, bus + 1000, FC_SPACE_FABRIC, to,
		 FC_DESC_F_MORE);
	set_desc(&t[1], 50, FC_SPACE_HOST, bus + 3, FC_SPACE_FABRIC, to,
		 FC_DESC_F_MORE);
	set_desc(&t[2], 7, FC_SPACE_HOST, bus + 5000, FC_SPACE_FABRIC, to, 0);
	set_desc(&t[3], 100, FC_SPACE_HOST, bus + 7000, FC_SPACE_FABRIC, to,
		 FC_DESC_F_MORE);
	set_desc(&t[4], 1, FC_SPACE_HOST, bus + 9, FC_SPACE_FABRIC, to, 0);
	set_desc(&t[5], 120, FC_SPACE_HOST, bus + 20000, FC_SPACE_FABRIC, to,
		 FC_DESC_F_EOC);
	memcpy(want, h + 1000, 10);
	memcpy(want + 10, h + 3, 50);
	memcpy(want + 60, h + 5000, 7);
	memcpy(want + 67, h + 7000, 100);
	memcpy(want + 167, h + 9, 1);
	memcpy(want + 168, h + 20000, 120);
	kick(r, 0, 0, 6);
	wait_chain(r, 0, 0);
	wait_msgs(r, 5, 7, 3);
	assert_int_equal(x->src[0].len, sizeof(want));
	assert_memory_equal(x->src[0].buf, want, sizeof(want));
	assert_int_equal(x->src[0].msg_end[0], 67);
	assert_int_equal(x->src[0].msg_end[1], 168);
	assert_int_equal(x->src[0].msg_end[2], 288);
	/* packets are filled across descriptors: 60 + 7, 60 + 41, 60 + 60 */
	assert_int_equal(x->src[0].msg_pkts[0], 2);
	assert_int_equal(x->src[0].msg_pkts[1], 2);
	assert_int_equal(x->src[0].msg_pkts[2], 2);
	/* the summary names channel 7's group, and no other */
	assert_true(rd(r, 5, FC_REG_CHAN_EVENTS(7 / FC_CHAN_GROUP_SIZE)) != 0);
	for (g = 0; g < FC_CHAN_GROUPS; g++)
		if (g != 7 / FC_CHAN_GROUP_SIZE)
			assert_int_equal(rd(r, 5, FC_REG_CHAN_EVENTS(g)), 0);
	rig_free(r);
}

static void test_put(void **state)
{
	struct rig *r = rig_new("torus:4x4", 0, 0, 0);
	struct fc_hw_desc *t = table(r, 0, 0);
	uint8_t *h = r->b[0].host + SEND_OFF;
	const uint64_t bus = HOST_BUS + SEND_OFF;

	(void)state;
	fill(h, 400000, 7);
	/* a neighbour's host memory, a far board's memory, our own host */
	set_desc(&t[0], 100003, FC_SPACE_HOST, bus, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(1, FC_REGION_HOST, HOST_BUS + PUT_OFF + 5), 0);
	set_desc(&t[1], 70001, FC_SPACE_HOST, bus + 100003, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(10, FC_REGION_BOARD, 12345), 0);
	set_desc(&t[2], 52, FC_SPACE_HOST, bus + 200000, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(10, FC_REGION_HOST, HOST_BUS + PUT_OFF), 0);
	set_desc(&t[3], 999, FC_SPACE_HOST, bus + 300000, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(0, FC_REGION_HOST, HOST_BUS + PUT_OFF),
		 FC_DESC_F_EOC);
	kick(r, 0, 0, 4);
	wait_chain(r, 0, 0);
	/* visible when the chain ends, without any further progress */
	assert_memory_equal(r->b[1].host + PUT_OFF + 5, h, 100003);
	assert_memory_equal(r->b[10].mem + 12345, h + 100003, 70001);
	assert_memory_equal(r->b[10].host + PUT_OFF, h + 200000, 52);
	assert_memory_equal(r->b[0].host + PUT_OFF, h + 300000, 999);
	assert_int_equal(r->b[1].host[PUT_OFF + 4], 0);
	assert_int_equal(r->b[1].host[PUT_OFF + 5 + 100003], 0);
	assert_int_equal(rd(r, 0, FC_DMA_REG(0, FC_DMA_BYTES_LO)),
			 100003 + 70001 + 52 + 999);

	/* a write outside the peer's host window is dropped there, counted,
	 * and fails the chain through the FENCE_ACK */
	set_desc(&t[0], 200, FC_SPACE_HOST, bus, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(2, FC_REGION_HOST, 0x1000), FC_DESC_F_EOC);
	kick(r, 0, 0, 1);
	wait_chain_err(r, 0, 0, FC_DMA_ERR_ADDR);
	assert_int_equal(rd(r, 2, FC_ROUTER_EJECT_DROPS), 4); /* 200 / 52 */
	rig_free(r);
}

#define WIN_OFF (6u << 20) /* board 1's memory behind its window entry */
#define WIN_LEN (64u << 10)
#define WIN_E	5

static void win_map(struct rig *r, unsigned int n, uint32_t ctrl)
{
	wr(r, n, FC_PW_REG(WIN_E, FC_PW_BASE_LO),
	   (uint32_t)(HOST_BUS + WIN_OFF));
	wr(r, n, FC_PW_REG(WIN_E, FC_PW_BASE_HI),
	   (uint32_t)((HOST_BUS + WIN_OFF) >> 32));
	wr(r, n, FC_PW_REG(WIN_E, FC_PW_SIZE_LO), WIN_LEN);
	wr(r, n, FC_PW_REG(WIN_E, FC_PW_SIZE_HI), 0);
	wr(r, n, FC_PW_REG(WIN_E, FC_PW_CTRL), ctrl);
	/* acknowledged before the next packet is checked */
	assert_int_equal(rd(r, n, FC_PW_REG(WIN_E, FC_PW_SEEN)), ctrl);
}

/* A PUT of @len bytes at entry offset @off from node 0 to node 1. */
static void win_put(struct rig *r, uint64_t off, uint32_t len, uint32_t err)
{
	struct fc_hw_desc *t = table(r, 0, 0);

	set_desc(&t[0], len, FC_SPACE_HOST, HOST_BUS + SEND_OFF,
		 FC_SPACE_FABRIC, FC_PW_ADDR(1, WIN_E, off), FC_DESC_F_EOC);
	kick(r, 0, 0, 1);
	if (!err) {
		wait_chain(r, 0, 0);
		return;
	}
	wait_chain_err(r, 0, 0, err);
	reset_engine(r, 0, 0);
}

/* A GET into node 0's PUT_OFF of @len bytes at @src (node 1). */
static void win_get(struct rig *r, uint64_t src, uint32_t len, uint32_t err)
{
	struct fc_hw_desc *t = table(r, 0, 0);

	set_desc(&t[0], len, FC_SPACE_FABRIC, src, FC_SPACE_HOST,
		 HOST_BUS + PUT_OFF, FC_DESC_F_EOC);
	kick(r, 0, 0, 1);
	if (!err) {
		wait_chain(r, 0, 0);
		return;
	}
	wait_chain_err(r, 0, 0, err);
	reset_engine(r, 0, 0);
}

static void expect_refusal(struct rig *r, uint32_t count, uint32_t why)
{
	assert_int_equal(rd(r, 1, FC_PW_REFUSED), count);
	assert_int_equal(FC_PW_REF_WHY(rd(r, 1, FC_PW_LAST_REFUSED)), why);
	assert_int_equal(FC_PW_REF_ENTRY(rd(r, 1, FC_PW_LAST_REFUSED)), WIN_E);
	assert_int_equal(FC_PW_REF_SRC(rd(r, 1, FC_PW_LAST_REFUSED)), 0);
}

/*
 * The peer window (FC_REGION_PEER): PUTs, bursts and GETs through a valid
 * entry land; out of bounds, without permission, or after revocation
 * nothing is written, the refusal is counted and named, and the sending
 * chain ends with FC_DMA_ERR_WINDOW. GETs of host and board memory too.
 */
static void test_peer_window(void **state)
{
	struct rig *r = rig_new("ring:4", 0, 0, 0);
	uint8_t *win = r->b[1].host + WIN_OFF, *got = r->b[0].host + PUT_OFF;
	uint8_t *src = r->b[0].host + SEND_OFF;
	static uint8_t before[WIN_LEN];
	uint32_t rw = FC_PW_CTRL_VALID | FC_PW_CTRL_READ | FC_PW_CTRL_WRITE;

	(void)state;
	assert_true(rd(r, 1, FC_REG_CAPS) & FC_CAP_PEER_WINDOW);
	assert_true(rd(r, 1, FC_REG_CAPS) & FC_CAP_FABRIC_GET);
	assert_int_equal(rd(r, 1, FC_PW_ENTRIES), FC_PW_MAX_ENTRIES);
	/* never programmed: refused, nothing written */
	fill(src, WIN_LEN, 1);
	memcpy(before, win, WIN_LEN);
	win_put(r, 0, 100, FC_DMA_ERR_WINDOW);
	expect_refusal(r, 2, FC_PW_WHY_INVALID); /* 100 bytes: 2 packets */
	assert_memory_equal(win, before, WIN_LEN);
	assert_int_equal(rd(r, 1, FC_ROUTER_EJECT_DROPS), 0);
	/* mapped: packets and a burst land at base + offset */
	win_map(r, 1, rw | FC_PW_CTRL_GEN(1));
	win_put(r, 100, 1000, 0);
	assert_memory_equal(win + 100, src, 1000);
	win_put(r, 4096, 40000, 0);
	assert_memory_equal(win + 4096, src, 40000);
	/* the last byte in bounds, then one past */
	memcpy(before, win, WIN_LEN);
	win_put(r, WIN_LEN - 52, 52, 0);
	memcpy(before, win, WIN_LEN);
	win_put(r, WIN_LEN - 51, 52, FC_DMA_ERR_WINDOW);
	expect_refusal(r, 3, FC_PW_WHY_RANGE);
	assert_memory_equal(win, before, WIN_LEN);
	/* a burst past the end writes nothing either */
	fill(src, WIN_LEN, 2);
	win_put(r, WIN_LEN - 8192, 16384, FC_DMA_ERR_WINDOW);
	assert_memory_equal(win, before, WIN_LEN);
	/* read only: PUTs refused, GETs answered */
	win_map(r, 1, FC_PW_CTRL_VALID | FC_PW_CTRL_READ | FC_PW_CTRL_GEN(2));
	win_put(r, 0, 52, FC_DMA_ERR_WINDOW);
	expect_refusal(r, 5, FC_PW_WHY_PERM);
	assert_memory_equal(win, before, WIN_LEN);
	win_get(r, FC_PW_ADDR(1, WIN_E, 0), 30000, 0);
	assert_memory_equal(got, win, 30000);
	win_get(r, FC_PW_ADDR(1, WIN_E, 7), 101, 0);
	assert_memory_equal(got, win + 7, 101);
	/* write only: GETs refused, nothing read */
	win_map(r, 1, FC_PW_CTRL_VALID | FC_PW_CTRL_WRITE | FC_PW_CTRL_GEN(3));
	memset(got, 0xee, 4096);
	win_get(r, FC_PW_ADDR(1, WIN_E, 0), 4096, FC_DMA_ERR_WINDOW);
	expect_refusal(r, 6, FC_PW_WHY_PERM);
	assert_int_equal(got[0], 0xee);
	assert_int_equal(got[4095], 0xee);
	/* revoked: the ack is SEEN; nothing lands any more */
	win_map(r, 1, rw | FC_PW_CTRL_GEN(4));
	wr(r, 1, FC_PW_REG(WIN_E, FC_PW_CTRL), FC_PW_CTRL_GEN(5));
	assert_int_equal(rd(r, 1, FC_PW_REG(WIN_E, FC_PW_SEEN)),
			 FC_PW_CTRL_GEN(5));
	memcpy(before, win, WIN_LEN);
	win_put(r, 0, 8192, FC_DMA_ERR_WINDOW);
	expect_refusal(r, 7, FC_PW_WHY_INVALID);
	assert_memory_equal(win, before, WIN_LEN);
	/* GETs of the other node's host memory and board memory */
	fill(r->b[1].host + PUT_OFF, 70000, 3);
	win_get(r, FC_FABRIC_ADDR(1, FC_REGION_HOST, HOST_BUS + PUT_OFF), 70000,
		0);
	assert_memory_equal(got, r->b[1].host + PUT_OFF, 70000);
	fill(r->b[1].mem + 4096, 333, 4);
	win_get(r, FC_FABRIC_ADDR(1, FC_REGION_BOARD, 4096), 333, 0);
	assert_memory_equal(got, r->b[1].mem + 4096, 333);
	/* across the ring: node 2 two hops away */
	fill(r->b[2].host + PUT_OFF, 5000, 5);
	win_get(r, FC_FABRIC_ADDR(2, FC_REGION_HOST, HOST_BUS + PUT_OFF), 5000,
		0);
	assert_memory_equal(got, r->b[2].host + PUT_OFF, 5000);
	/* a host range the other side does not map: ERR_ADDR, nothing */
	win_get(r, FC_FABRIC_ADDR(1, FC_REGION_HOST, 0x1000), 64,
		FC_DMA_ERR_ADDR);
	rig_free(r);
}

static void test_disabled_endpoint(void **state)
{
	struct rig *r = rig_new("ring:4", 0, 0, 0);
	struct fc_hw_desc *t = table(r, 0, 0);

	(void)state;
	set_desc(&t[0], 600, FC_SPACE_HOST, HOST_BUS + SEND_OFF,
		 FC_SPACE_FABRIC, FC_FABRIC_CHAN(2, 9), FC_DESC_F_EOC);
	kick(r, 0, 0, 1);
	wait_chain(r, 0, 0);
	while (pump(r))
		;
	assert_int_equal(rd(r, 2, FC_CHAN_REG(9, FC_CHAN_DROPS)), 10);
	assert_int_equal(rd(r, 2, FC_ROUTER_EJECT_DROPS), 10);
	assert_int_equal(rd(r, 2, FC_CHAN_REG(9, FC_CHAN_TAIL)), 0);
	rig_free(r);
}

/*
 * FC_CHAN_SEEN says which CTRL the board works by: at once for a trapped
 * write, at the next notice for a host that stores into the registers
 * itself (a VM's); the driver frees a ring's memory only after it.
 */
static void test_chan_seen(void **state)
{
	struct rig *r = rig_new("ring:2", 0, 0, 0);
	volatile uint32_t *bar = fcemu_bar0(r->b[0].emu);

	(void)state;
	assert_true(rd(r, 0, FC_REG_CAPS) & FC_CAP_CHAN_SEEN);
	rx_open(r, 0, 3, 16);
	assert_int_equal(rd(r, 0, FC_CHAN_REG(3, FC_CHAN_SEEN)),
			 FC_CHAN_CTRL_ENABLE);
	wr(r, 0, FC_CHAN_REG(3, FC_CHAN_CTRL), 0);
	assert_int_equal(rd(r, 0, FC_CHAN_REG(3, FC_CHAN_SEEN)), 0);
	/* the host cannot write SEEN itself */
	wr(r, 0, FC_CHAN_REG(3, FC_CHAN_SEEN), FC_CHAN_CTRL_ENABLE);
	assert_int_equal(rd(r, 0, FC_CHAN_REG(3, FC_CHAN_SEEN)), 0);
	/* untrapped: seen only once noticed */
	bar[FC_CHAN_REG(5, FC_CHAN_CTRL) / 4] = FC_CHAN_CTRL_ENABLE;
	assert_int_equal(rd(r, 0, FC_CHAN_REG(5, FC_CHAN_SEEN)), 0);
	fcemu_notice(r->b[0].emu);
	assert_int_equal(rd(r, 0, FC_CHAN_REG(5, FC_CHAN_SEEN)),
			 FC_CHAN_CTRL_ENABLE);
	bar[FC_CHAN_REG(5, FC_CHAN_CTRL) / 4] = 0;
	fcemu_notice(r->b[0].emu);
	assert_int_equal(rd(r, 0, FC_CHAN_REG(5, FC_CHAN_SEEN)), 0);
	rig_free(r);
}

static void slow_receiver(unsigned int dst, unsigned int hops)
{
	struct rig *r = rig_new("ring:4", 0, 0, 0);
	const uint32_t len = 256u << 10;
	struct rx *x = rx_open(r, dst, 0, 4);
	struct fc_hw_desc *t = table(r, 0, 0);
	unsigned int stalled = 0, rounds = 0;
	unsigned long express0 = fcemu__express_pkts;
	uint32_t bytes, irq0;

	x->manual = true;
	fill(r->b[0].host + SEND_OFF, len, 99);
	set_desc(&t[0], len, FC_SPACE_HOST, HOST_BUS + SEND_OFF,
		 FC_SPACE_FABRIC, FC_FABRIC_CHAN(dst, 0), FC_DESC_F_EOC);
	irq0 = rd(r, dst, FC_REG_IRQ_COUNT(FC_IRQ_VEC_CHAN));
	kick(r, 0, 0, 1);
	while (x->msgs < 1) {
		bytes = rd(r, 0, FC_DMA_REG(0, FC_DMA_BYTES_LO));
		pump(r);
		if (fcemu_busy(r->b[0].emu) &&
		    rd(r, 0, FC_DMA_REG(0, FC_DMA_BYTES_LO)) == bytes)
			stalled++;
		/* the receiver takes one packet every other round */
		if (rounds++ % 2)
			rx_drain(r, dst, 0, 1);
		/* never more than the ring holds */
		assert_true(rd(r, dst, FC_CHAN_REG(0, FC_CHAN_TAIL)) -
				    x->head <=
			    4);
		assert_true(rounds < 4 * (len / FC_PKT_PAYLOAD) + 10000);
	}
	assert_true(chain_ended(r, 0, 0));
	assert_int_equal(x->src[0].len, len);
	assert_memory_equal(x->src[0].buf, r->b[0].host + SEND_OFF, len);
	/* the engine waited for credit most of the time, and resumed */
	assert_true(stalled > 1000);
	assert_true(rd(r, dst, FC_REG_IRQ_COUNT(FC_IRQ_VEC_CHAN)) != irq0);
	assert_int_equal(sum_drops(r), 0);
	/*
	 * Packets that found the route idle took the express hop, the
	 * others waited on the links, and the message above is whole and
	 * in order all the same. Both ways are counted on every link.
	 */
	assert_true(fcemu__express_pkts - express0 > 0);
	assert_true(fcemu__express_pkts - express0 < len / FC_PKT_PAYLOAD);
	assert_int_equal(sum_ports(r, FC_PORT_TX_PKTS),
			 hops * ((len + FC_PKT_PAYLOAD - 1) / FC_PKT_PAYLOAD));
	assert_int_equal(sum_ports(r, FC_PORT_RX_PKTS),
			 hops * ((len + FC_PKT_PAYLOAD - 1) / FC_PKT_PAYLOAD));
	print_message("slow receiver %u hop(s) away: %u rounds, engine stalled "
		      "in %u, %lu packets by the express hop\n",
		      hops, rounds, stalled, fcemu__express_pkts - express0);
	rig_free(r);
}

/* On ring:4, 0 -> 1 is one hop and 0 -> 2 two. */
static void test_slow_receiver(void **state)
{
	(void)state;
	slow_receiver(1, 1);
	slow_receiver(2, 2);
}

/*
 * The express hop never passes what is on its way. A message to a board
 * two hops away whose router is stopped waits on the last link; the
 * router is started again and, before anything else moves, a message is
 * written into the PIO window (taken at once, in the write): it must go
 * behind the first (the route is not idle), not past it straight into
 * the destination. Once the route is idle again, the next one takes the
 * hop.
 */
static void test_express_keeps_order(void **state)
{
	uint32_t *ctrl2;
	struct rig *r = rig_new("ring:4", 0, 0, 0);
	struct rx *x = rx_open(r, 2, 0, 256);
	struct rx_src *xs = &x->src[0];
	const uint32_t len = 600;
	unsigned long express0;
	struct fc_hw_pkt p[2];
	unsigned int i;

	(void)state;
	ctrl2 = (uint32_t *)&fcemu_cluster_bar0(r->c, 2)[FC_ROUTER_CTRL / 4];
	/* 2's router off, in the cluster's register that the routers read */
	__atomic_store_n(ctrl2, 0, __ATOMIC_RELEASE);
	fill(r->b[0].host + SEND_OFF, len, 5);
	set_desc(&table(r, 0, 0)[0], len, FC_SPACE_HOST, HOST_BUS + SEND_OFF,
		 FC_SPACE_FABRIC, FC_FABRIC_CHAN(2, 0), FC_DESC_F_EOC);
	kick(r, 0, 0, 1);
	for (i = 0; i < 100; i++)
		pump(r);
	assert_true(chain_ended(r, 0, 0));
	assert_int_equal(x->msgs, 0); /* held on the link into 2 */
	__atomic_store_n(ctrl2, FC_ROUTER_CTRL_ENABLE, __ATOMIC_RELEASE);
	express0 = fcemu__express_pkts;
	for (i = 0; i < 2; i++)
		pio_pkt(&p[i], 2, 0, 0, FC_PKT_PAYLOAD, FC_PKT_T_DATA,
			FC_PKT_EOM, 6 + i);
	pio_write(r, 0, &p[0], 1);
	assert_int_equal(fcemu__express_pkts, express0);
	wait_msgs(r, 2, 0, 2);
	assert_int_equal(xs->msgs, 2);
	assert_int_equal(xs->msg_end[0], len);
	assert_memory_equal(xs->buf, r->b[0].host + SEND_OFF, len);
	assert_memory_equal(xs->buf + len, p[0].payload, FC_PKT_PAYLOAD);
	/* the route idle again: the next one takes the hop */
	pio_write(r, 0, &p[1], 1);
	assert_int_equal(fcemu__express_pkts, express0 + 1);
	wait_msgs(r, 2, 0, 3);
	assert_memory_equal(xs->buf + len + FC_PKT_PAYLOAD, p[1].payload,
			    FC_PKT_PAYLOAD);
	rig_free(r);
}

/*
 * A slot in the middle of a run of the ejection ring damaged in memory
 * (its index, as a stray write would leave it): the board takes the
 * packets before it, drops it (counted in EJECT_DROPS) and takes the one
 * behind it; its bytes never reach the channel. The board checks each
 * slot as it reads the packet (fcemu_cluster_eject_ok), not in a pass
 * of its own: this is that check.
 */
static void test_eject_run_damaged(void **state)
{
	struct rig *r = rig_new("full:2", 0, 0, 0);
	struct rx *x = rx_open(r, 1, 0, 16);
	struct cl_ring *ej = cl_ring(r->c, 1, CL_RING_EJECT);
	uint32_t drops0 = rd(r, 1, FC_ROUTER_EJECT_DROPS);
	struct fc_hw_pkt p[4];
	unsigned int i;

	(void)state;
	for (i = 0; i < 4; i++)
		pio_pkt(&p[i], 1, 0, 0, FC_PKT_PAYLOAD, FC_PKT_T_DATA,
			i == 3 ? FC_PKT_EOM : 0, 40 + i);
	pio_write(r, 0, p, 4);
	/* board 0 alone: by the express hop or its router, into 1's ring */
	for (i = 0; i < 100 && ej->tail - ej->head < 4; i++)
		fcemu_progress(r->b[0].emu, 1u << 20);
	assert_int_equal(ej->tail - ej->head, 4);
	ej->slot[(ej->head + 2) % CL_RING_SLOTS].seq += CL_RING_SLOTS;
	for (i = 0; i < 10; i++)
		pump(r);
	assert_int_equal(ej->head, ej->tail);
	assert_int_equal(rd(r, 1, FC_ROUTER_EJECT_DROPS), drops0 + 1);
	assert_int_equal(x->pkts, 3);
	assert_int_equal(x->msgs, 1);
	assert_int_equal(x->src[0].len, 3 * FC_PKT_PAYLOAD);
	assert_memory_equal(x->src[0].buf, p[0].payload, FC_PKT_PAYLOAD);
	assert_memory_equal(x->src[0].buf + FC_PKT_PAYLOAD, p[1].payload,
			    FC_PKT_PAYLOAD);
	assert_memory_equal(x->src[0].buf + 2 * FC_PKT_PAYLOAD, p[3].payload,
			    FC_PKT_PAYLOAD);
	rig_free(r);
}

/*
 * An engine reset in the middle of a message: the receiver is told (an
 * ABORT slot) instead of finding the next message glued to the part that
 * came, and the next message from the same engine arrives whole.
 */
static void test_abort_mid_message(void **state)
{
	struct rig *r = rig_new("ring:4", 0, 0, 0);
	const uint32_t len = 64u << 10, next = 1000;
	struct rx *x = rx_open(r, 1, 0, 4);
	struct fc_hw_desc *t = table(r, 0, 0);
	unsigned int rounds = 0;

	(void)state;
	x->manual = true;
	fill(r->b[0].host + SEND_OFF, len + next, 7);
	set_desc(&t[0], len, FC_SPACE_HOST, HOST_BUS + SEND_OFF,
		 FC_SPACE_FABRIC, FC_FABRIC_CHAN(1, 0), FC_DESC_F_EOC);
	kick(r, 0, 0, 1);
	/* the receiver takes a few packets; the sender is held back */
	while (x->pkts < 20) {
		pump(r);
		rx_drain(r, 1, 0, 1);
		assert_true(rounds++ < 100000);
	}
	assert_false(chain_ended(r, 0, 0));
	reset_engine(r, 0, 0);
	/* the next message, on the same engine and channel */
	set_desc(&t[0], next, FC_SPACE_HOST, HOST_BUS + SEND_OFF + len,
		 FC_SPACE_FABRIC, FC_FABRIC_CHAN(1, 0), FC_DESC_F_EOC);
	kick(r, 0, 0, 1);
	while (x->msgs < 1) {
		pump(r);
		rx_drain(r, 1, 0, 4);
		assert_true(rounds++ < 200000);
	}
	assert_int_equal(x->src[0].aborts, 1);
	assert_int_equal(x->src[0].msg_end[0], next);
	assert_memory_equal(x->src[0].buf, r->b[0].host + SEND_OFF + len, next);
	rig_free(r);
}

static void test_faults(void **state)
{
	struct rig *r = rig_new("torus:4x4", 10000, 10000, 0);
	static const uint32_t sz[] = { 1, 61, 4096, 1u << 20 };

	(void)state;
	send_sizes(r, 0, 10, 1, sz, 4);
	send_sizes(r, 15, 5, 2, sz, 4);
	assert_true(sum_ports(r, FC_PORT_CRC_ERRORS) > 0);
	assert_true(sum_ports(r, FC_PORT_RETRANSMITS) >
		    sum_ports(r, FC_PORT_CRC_ERRORS));
	assert_int_equal(sum_ports(r, FC_PORT_TX_PKTS),
			 sum_ports(r, FC_PORT_RX_PKTS));
	assert_int_equal(sum_drops(r), 0);
	print_message(
		"faults 1%%+1%%: %llu CRC errors, %llu retransmits of %llu packets\n",
		(unsigned long long)sum_ports(r, FC_PORT_CRC_ERRORS),
		(unsigned long long)sum_ports(r, FC_PORT_RETRANSMITS),
		(unsigned long long)sum_ports(r, FC_PORT_TX_PKTS));
	rig_free(r);
}

/*
 * Large PUTs travel as burst records plus one copy (emu/burst.c), and the
 * faults must reach their bytes too: a burst is a run of PUT packets on
 * the wire. A 1 MiB PUT two hops away and 300 KiB to a neighbour under
 * 1% drop + 1% corrupt arrive whole, and the links' fault counters show
 * that the bursts' pieces crossed them: more CRC errors and resends than
 * the packets that crossed could ever give (a few records and fences).
 */
static void test_burst_faults(void **state)
{
	struct rig *r = rig_new("ring:4", 10000, 10000, 0);
	struct fc_hw_desc *t = table(r, 0, 0);
	uint8_t *h = r->b[0].host + SEND_OFF;
	const uint64_t bus = HOST_BUS + SEND_OFF;
	const uint32_t big = (1u << 20) + 13, small = 300000;
	uint64_t tx, crc, rtx;

	(void)state;
	if (!fcemu__burst_usable(r->b[0].emu, 2)) {
		rig_free(r);
		skip(); /* bursts turned off, or not allowed here */
	}
	fill(h, big + small, 31);
	memset(r->b[2].mem, 0xa5, big + 10);
	set_desc(&t[0], big, FC_SPACE_HOST, bus, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(2, FC_REGION_BOARD, 5), 0);
	set_desc(&t[1], small, FC_SPACE_HOST, bus + big, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(1, FC_REGION_HOST, HOST_BUS + PUT_OFF + 3),
		 FC_DESC_F_EOC);
	kick(r, 0, 0, 2);
	wait_chain(r, 0, 0);
	assert_int_equal(rd(r, 0, FC_DMA_REG(0, FC_DMA_ERROR)),
			 FC_DMA_ERR_NONE);
	assert_memory_equal(r->b[2].mem + 5, h, big);
	assert_int_equal(r->b[2].mem[4], 0xa5);
	assert_int_equal(r->b[2].mem[5 + big], 0xa5);
	assert_memory_equal(r->b[1].host + PUT_OFF + 3, h + big, small);
	assert_int_equal(rd(r, 1, FC_ROUTER_EJECT_DROPS), 0);
	assert_int_equal(rd(r, 2, FC_ROUTER_EJECT_DROPS), 0);
	tx = sum_ports(r, FC_PORT_TX_PKTS);
	crc = sum_ports(r, FC_PORT_CRC_ERRORS);
	rtx = sum_ports(r, FC_PORT_RETRANSMITS);
	print_message("bursts under 1%%+1%% faults: %llu CRC errors, %llu "
		      "retransmits, %llu link packets\n",
		      (unsigned long long)crc, (unsigned long long)rtx,
		      (unsigned long long)tx);
	assert_true(tx < 100);
	assert_true(crc > tx && rtx > crc);
	assert_int_equal(tx, sum_ports(r, FC_PORT_RX_PKTS));
	rig_free(r);
}

struct a2a {
	unsigned int len;
};

static bool a2a_done(struct rig *r, void *arg)
{
	unsigned int n;

	(void)arg;
	for (n = 0; n < r->nodes; n++)
		if (!chain_ended(r, n, 0) || !chain_ended(r, n, 1) ||
		    r->b[n].rx[0]->msgs < r->nodes - 1)
			return false;
	return true;
}

/*
 * Every node sends to every other at once: channel messages on engine 0,
 * PUTs on engine 1. All must arrive; a deadlock shows as no progress.
 */
static void all_to_all(const char *topo, unsigned int len, uint32_t slots)
{
	struct rig *r = rig_new(topo, 0, 0, 0);
	unsigned int n, d, i, k;

	for (n = 0; n < r->nodes; n++)
		rx_open(r, n, 0, slots);
	for (n = 0; n < r->nodes; n++) {
		fill(r->b[n].host + SEND_OFF, (size_t)len * r->nodes, n + 1);
		for (i = 0, k = 0; i < r->nodes; i++) {
			d = (n + 1 + i) % r->nodes; /* staggered starts */
			if (d == n)
				continue;
			set_desc(&table(r, n, 0)[k], len, FC_SPACE_HOST,
				 HOST_BUS + SEND_OFF + (uint64_t)d * len,
				 FC_SPACE_FABRIC, FC_FABRIC_CHAN(d, 0),
				 k == r->nodes - 2 ? FC_DESC_F_EOC : 0);
			set_desc(&table(r, n, 1)[k], len, FC_SPACE_HOST,
				 HOST_BUS + SEND_OFF + (uint64_t)d * len,
				 FC_SPACE_FABRIC,
				 FC_FABRIC_ADDR(d, FC_REGION_HOST,
						HOST_BUS + PUT_OFF +
							(uint64_t)n * len),
				 k == r->nodes - 2 ? FC_DESC_F_EOC : 0);
			k++;
		}
	}
	for (n = 0; n < r->nodes; n++) {
		kick(r, n, 0, r->nodes - 1);
		kick(r, n, 1, r->nodes - 1);
	}
	run_until(r, a2a_done, NULL);
	for (d = 0; d < r->nodes; d++) {
		struct rx *x = r->b[d].rx[0];

		assert_int_equal(x->msgs, r->nodes - 1);
		for (n = 0; n < r->nodes; n++) {
			const uint8_t *want =
				r->b[n].host + SEND_OFF + (size_t)d * len;

			if (n == d)
				continue;
			assert_int_equal(x->src[n].msgs, 1);
			assert_int_equal(x->src[n].msg_end[0], len);
			assert_memory_equal(x->src[n].buf, want, len);
			assert_memory_equal(r->b[d].host + PUT_OFF +
						    (size_t)n * len,
					    want, len);
		}
		assert_int_equal(rd(r, d, FC_DMA_REG(0, FC_DMA_ERROR)), 0);
		assert_int_equal(rd(r, d, FC_DMA_REG(1, FC_DMA_ERROR)), 0);
	}
	assert_int_equal(sum_drops(r), 0);
	rig_free(r);
}

static void test_all_to_all(void **state)
{
	(void)state;
	all_to_all("torus:4x4", 32768, 256);
	all_to_all("torus:4x4", 4099, 8); /* small rings: more backpressure */
	all_to_all("ring:8", 32768, 256);
	all_to_all("mesh:3x3", 8191, 16);
	all_to_all("full:6", 20000, 64);
}

struct child {
	pid_t pid;
	int fd; /* closing it ends the child */
};

/* A child claims @node, says so, and waits for the pipe to close. */
static struct child claim_in_child(const char *name, unsigned int node,
				   bool lock)
{
	int up[2], down[2];
	pid_t pid;
	char ch;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct fcemu_cluster *c;

		close(up[0]);
		close(down[1]);
		if (fcemu_cluster_attach(&c, name) ||
		    fcemu_cluster_claim(c, node))
			_exit(1);
		if (lock && fcemu__cluster_lock(c, node, true))
			_exit(1);
		if (write(up[1], "x", 1) != 1)
			_exit(1);
		while (read(down[0], &ch, 1) > 0)
			;
		_exit(0); /* dies with the board claimed, maybe locked */
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &ch, 1), 1);
	close(up[0]);
	return (struct child){ pid, down[1] };
}

static void end_child(struct child ch)
{
	int status;

	close(ch.fd);
	assert_int_equal(waitpid(ch.pid, &status, 0), ch.pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_dead_board(void **state)
{
	struct rig *r = rig_new("ring:6", 0, 0, 1ull << 3);
	struct fc_hw_desc *t = table(r, 0, 0);
	const uint32_t len = 1u << 20; /* more than the path holds */
	unsigned int round;
	struct child child;

	(void)state;
	child = claim_in_child(r->name, 3, false);
	assert_int_equal(fcemu_cluster_node_state(r->c, 3), FCEMU_NODE_ALIVE);
	assert_int_equal(fcemu_cluster_claim(r->c, 3), -EBUSY);
	rx_open(r, 4, 0, 256);

	/* 0 -> 3 goes 0, 1, 2, 3; nobody drains 3, so the path fills up */
	set_desc(&t[0], len, FC_SPACE_HOST, HOST_BUS + SEND_OFF,
		 FC_SPACE_FABRIC, FC_FABRIC_CHAN(3, 0), FC_DESC_F_EOC);
	kick(r, 0, 0, 1);
	/* 2 -> 4 passes through 3's router, behind 0's packets */
	fill(r->b[2].host + SEND_OFF, 5000, 5);
	set_desc(&table(r, 2, 0)[0], 5000, FC_SPACE_HOST, HOST_BUS + SEND_OFF,
		 FC_SPACE_FABRIC, FC_FABRIC_CHAN(4, 0), FC_DESC_F_EOC);
	kick(r, 2, 0, 1);
	for (round = 0; round < 2000; round++)
		pump(r);
	assert_false(chain_ended(r, 0, 0));
	assert_int_equal(sum_drops(r), 0);
	assert_int_equal(rd(r, 0, FC_ROUTER_NODES_DOWN_LO), 0);

	end_child(child);
	assert_int_equal(fcemu_cluster_node_state(r->c, 3), FCEMU_NODE_DEAD);
	wait_chain(r, 0, 0);
	wait_chain(r, 2, 0);
	wait_msgs(r, 4, 0, 1);
	assert_memory_equal(r->b[4].rx[0]->src[2].buf, r->b[2].host + SEND_OFF,
			    5000);
	assert_true(sum_drops(r) > 0);
	assert_true(sum_drops(r) <= (len + 59) / 60);
	/* every board tells its host (a kernel driver's user asks it) */
	for (round = 0; round < 6; round++)
		if (round != 3)
			assert_int_equal(rd(r, round, FC_ROUTER_NODES_DOWN_LO),
					 1u << 3);
	/* new chains to the dead board are refused */
	kick(r, 0, 0, 1);
	run_until(r, one_chain_ended, &(struct chain_ref){ 0, 0 });
	assert_int_equal(rd(r, 0, FC_DMA_REG(0, FC_DMA_ERROR)),
			 FC_DMA_ERR_ROUTE);
	reset_engine(r, 0, 0);
	/* the board can be claimed again */
	assert_int_equal(fcemu_cluster_claim(r->c, 3), 0);
	assert_int_equal(fcemu_cluster_node_state(r->c, 3), FCEMU_NODE_ALIVE);
	pump(r);
	assert_int_equal(rd(r, 0, FC_ROUTER_NODES_DOWN_LO), 0);
	fcemu_cluster_release(r->c, 3);
	assert_int_equal(fcemu_cluster_node_state(r->c, 3), FCEMU_NODE_EXITED);
	pump(r);
	assert_int_equal(rd(r, 5, FC_ROUTER_NODES_DOWN_LO), 1u << 3);
	rig_free(r);
}

/* A process that dies holding a router lock does not stop the cluster. */
static void test_dead_lock_holder(void **state)
{
	struct rig *r = rig_new("ring:4", 0, 0, 1ull << 2);
	static const uint32_t sz[] = { 1, 4096 };
	struct child child;

	(void)state;
	child = claim_in_child(r->name, 2, true);
	end_child(child);
	assert_int_equal(fcemu_cluster_node_state(r->c, 2), FCEMU_NODE_DEAD);
	/* 1 -> 3 on ring:4 is a tie going +: through 2's router */
	assert_int_equal(fc_topo_route(&r->t, 1, 3) & FC_ROUTE_PORT_MASK, 2);
	send_sizes(r, 1, 3, 0, sz, 2);
	rig_free(r);
}

/*
 * A router killed at the worst moments: it has published a run on its
 * output but not taken it off its input (@stage 1), or taken it off but
 * not yet said so (2). The next router to lock the board finishes the move
 * once, and the message arrives once, whole: not twice, not cut.
 */
static void router_dies_mid_move(int stage)
{
	/* The express hop would take 1 -> 3 past 2's router: not here. */
	int env = setenv("FPGACOMM_EMU_EXPRESS", "0", 1);
	struct rig *r = rig_new("ring:4", 0, 0, 1ull << 2);
	struct rx *x = rx_open(r, 3, 0, 256);
	int up[2], down[2], status;
	const uint32_t len = 600; /* 10 packets */
	unsigned int i;
	pid_t pid;
	char ch;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct fcemu_cluster *c;

		if (fcemu_cluster_attach(&c, r->name) ||
		    fcemu_cluster_claim(c, 2) || write(up[1], "x", 1) != 1 ||
		    read(down[0], &ch, 1) != 1)
			_exit(1);
		fcemu_cluster_test_faults(
			c, &(struct fcemu_test_faults){ .die_in_move = stage });
		fcemu_cluster_progress(c, 1024); /* routes board 2: dies */
		_exit(2);
	}
	assert_int_equal(read(up[0], &ch, 1), 1);
	/* 1 -> 3 on ring:4 goes through 2; 2's input gets the message */
	fill(r->b[1].host + SEND_OFF, len, 77);
	set_desc(&table(r, 1, 0)[0], len, FC_SPACE_HOST, HOST_BUS + SEND_OFF,
		 FC_SPACE_FABRIC, FC_FABRIC_CHAN(3, 0), FC_DESC_F_EOC);
	kick(r, 1, 0, 1);
	for (i = 0; i < 2; i++)
		fcemu_progress(r->b[1].emu, 1u << 20); /* not yet 2's turn */
	assert_true(chain_ended(r, 1, 0));
	assert_int_equal(write(down[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the others' scan finds it dead (and repairs its router) */
	assert_int_equal(fcemu_cluster_node_state(r->c, 2), FCEMU_NODE_DEAD);
	wait_msgs(r, 3, 0, 1);
	for (i = 0; i < 100; i++)
		pump(r);
	assert_int_equal(x->src[1].msgs, 1);
	assert_int_equal(x->src[1].len, len);
	assert_int_equal(x->pkts, 10);
	assert_memory_equal(x->src[1].buf, r->b[1].host + SEND_OFF, len);
	/* and the link through the dead board goes on as before */
	fill(r->b[1].host + SEND_OFF + len, len, 78);
	set_desc(&table(r, 1, 0)[0], len, FC_SPACE_HOST,
		 HOST_BUS + SEND_OFF + len, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(3, 0), FC_DESC_F_EOC);
	kick(r, 1, 0, 1);
	wait_msgs(r, 3, 0, 2);
	assert_int_equal(x->pkts, 20);
	assert_memory_equal(x->src[1].buf, r->b[1].host + SEND_OFF, 2 * len);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	rig_free(r);
	assert_int_equal(env, 0);
	unsetenv("FPGACOMM_EMU_EXPRESS");
}

static void test_router_dies_mid_move(void **state)
{
	(void)state;
	router_dies_mid_move(1);
	router_dies_mid_move(2);
}

static void expect_refused(struct rig *r, unsigned int n, uint32_t count,
			   uint32_t code, uint32_t index)
{
	unsigned int i;

	kick(r, n, 0, count);
	assert_true(chain_ended(r, n, 0));
	assert_int_equal(rd(r, n, FC_DMA_REG(0, FC_DMA_ERROR)), code);
	assert_int_equal(rd(r, n, FC_DMA_REG(0, FC_DMA_ERR_INDEX)), index);
	reset_engine(r, n, 0);
	for (i = 0; i < 10; i++)
		pump(r);
}

/*
 * A descriptor of a chain-rule case (tests/chain_rule.h) from node 0 to
 * node 1 (other: 4): channels 9 and 10 there have no endpoint open, so
 * what a good case sends is dropped there.
 */
static void set_rule_desc(struct fc_hw_desc *d, uint64_t h, enum chain_dst to,
			  uint16_t flags)
{
	uint32_t space;
	uint64_t dst;

	chain_case_dst(to, 1, 4, &space, &dst);
	set_desc(d, 64, FC_SPACE_HOST, h, space, dst, flags);
}

/* Every case of the chain rule's table through the board: bad or good. */
static void run_rule_cases(struct rig *r, bool bad)
{
	struct fc_hw_desc *t = table(r, 0, 0);
	const uint64_t h = HOST_BUS + SEND_OFF;
	const struct chain_case *c;
	unsigned int i;
	uint32_t err, index;

	for (i = 0; i < CHAIN_CASES; i++) {
		c = &chain_cases[i];
		if ((c->bad >= 0) != bad)
			continue;
		set_rule_desc(&t[0], h, c->dst[0], c->flags[0]);
		set_rule_desc(&t[1], h, c->dst[1], c->flags[1] | FC_DESC_F_EOC);
		if (!bad) {
			kick(r, 0, 0, 2);
			wait_chain(r, 0, 0);
			continue;
		}
		kick(r, 0, 0, 2);
		assert_true(chain_ended(r, 0, 0));
		err = rd(r, 0, FC_DMA_REG(0, FC_DMA_ERROR));
		index = rd(r, 0, FC_DMA_REG(0, FC_DMA_ERR_INDEX));
		if (err != FC_DMA_ERR_FLAGS || index != (uint32_t)c->bad)
			fail_msg("%s: error %u at %u, not FLAGS at %d", c->what,
				 err, index, c->bad);
		reset_engine(r, 0, 0);
	}
}

static void test_bad_chains(void **state)
{
	struct rig *r = rig_new("torus:4x4", 0, 0, 0);
	struct fc_hw_desc *t = table(r, 0, 0);
	const uint64_t h = HOST_BUS + SEND_OFF;
	struct rx *x = rx_open(r, 1, 2, 256);
	struct fcemu_config cfg;
	struct fcemu *solo;
	struct board b = { 0 };

	(void)state;
	set_desc(&t[0], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(1, 2), 0);
	/* channel address with offset bits set */
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(1, 2) | 4, FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_ADDR, 1);
	/* a node beyond the cluster, reserved bits */
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(20, 2), FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_ROUTE, 1);
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(20, FC_REGION_HOST, 0), FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_ROUTE, 1);
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(1, 2) | 1ull << 60, FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_ADDR, 1);
	/* remote board memory past its end; remote range past 2^40 */
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(1, FC_REGION_BOARD, BOARD_MEM - 63),
		 FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_ADDR, 1);
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(1, FC_REGION_HOST, FC_FABRIC_OFFSET_MASK - 62),
		 FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_ADDR, 1);
	/* reading from another node into a third; a read of a channel */
	set_desc(&t[1], 64, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(1, FC_REGION_HOST, h), FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(2, FC_REGION_HOST, h), FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_ROUTE, 1);
	set_desc(&t[1], 64, FC_SPACE_FABRIC, FC_FABRIC_CHAN(1, 2),
		 FC_SPACE_HOST, h, FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_ADDR, 1);
	/* the chain rule's table (tests/chain_rule.h) */
	run_rule_cases(r, true);
	/* F_MORE: on a non-channel destination, on the last, to elsewhere */
	set_desc(&t[0], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(1, FC_REGION_HOST, h), FC_DESC_F_MORE);
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(1, FC_REGION_HOST, h), FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_FLAGS, 0);
	set_desc(&t[0], 64, FC_SPACE_HOST, h, FC_SPACE_BOARD, 0,
		 FC_DESC_F_MORE);
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_BOARD, 0, FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_FLAGS, 0);
	set_desc(&t[0], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(1, 2), 0);
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(1, 2), FC_DESC_F_EOC | FC_DESC_F_MORE);
	expect_refused(r, 0, 2, FC_DMA_ERR_FLAGS, 1);
	set_desc(&t[0], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(1, 2), FC_DESC_F_MORE);
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(1, 3), FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_FLAGS, 0);
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(4, 2), FC_DESC_F_EOC);
	expect_refused(r, 0, 2, FC_DMA_ERR_FLAGS, 0);
	/* nothing left the board for any of them */
	assert_int_equal(x->pkts, 0);
	assert_int_equal(sum_ports(r, FC_PORT_TX_PKTS), 0);
	/* and a good chain goes */
	set_desc(&t[1], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(1, 2), FC_DESC_F_EOC);
	kick(r, 0, 0, 2);
	wait_chain(r, 0, 0);
	wait_msgs(r, 1, 2, 1);
	assert_int_equal(x->src[0].len, 128);
	run_rule_cases(r, false);

	/* a board on its own has no channels and no F_MORE */
	b.host = r->b[0].host;
	fcemu_config_default(&cfg);
	cfg.board_mem_size = BOARD_MEM;
	assert_int_equal(fcemu_create(&solo, &cfg, &ops, &b), 0);
	assert_false(fcemu_bar0(solo)[FC_REG_CAPS / 4] & FC_CAP_CHANNELS);
	set_desc(&t[0], 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(0, 2), FC_DESC_F_EOC);
	fcemu_host_write(solo, FC_DMA_REG(0, FC_DMA_DESC_LO),
			 (uint32_t)HOST_BUS);
	fcemu_host_write(solo, FC_DMA_REG(0, FC_DMA_DESC_COUNT), 1);
	fcemu_host_write(solo, FC_DMA_REG(0, FC_DMA_DOORBELL), 1);
	assert_int_equal(fcemu_bar0(solo)[FC_DMA_REG(0, FC_DMA_ERROR) / 4],
			 FC_DMA_ERR_ROUTE);
	fcemu_destroy(solo);
	/* a board config naming the cluster and its own BAR0 is refused */
	cfg.cluster = r->c;
	cfg.bar0 = r->b[0].host;
	assert_int_equal(fcemu_create(&solo, &cfg, &ops, &b), -EINVAL);
	rig_free(r);
}

static void test_cluster_objects(void **state)
{
	struct fc_topology t;
	struct fcemu_cluster *c, *c2;
	char name[32];
	struct child child;

	(void)state;
	snprintf(name, sizeof(name), "tfe-%d-obj", (int)getpid());
	assert_int_equal(fc_topo_parse("mesh:2x3", &t), 0);
	assert_int_equal(fcemu_cluster_create(&c, "bad/name", &t, NULL),
			 -EINVAL);
	assert_int_equal(fcemu_cluster_attach(&c, name), -ENOENT);
	assert_int_equal(fcemu_cluster_create(&c, name, &t, NULL), 0);
	note_cluster(name);
	assert_int_equal(fcemu_cluster_create(&c2, name, &t, NULL), -EEXIST);
	assert_int_equal(fcemu_cluster_attach(&c2, name), 0);
	assert_int_equal(fcemu_cluster_topology(c2)->nodes, 6);
	assert_ptr_equal(fcemu_cluster_bar0(c2, 6), NULL);
	/* one object, two mappings */
	fcemu_cluster_bar0(c, 5)[FC_REG_SCRATCH / 4] = 77;
	assert_int_equal(fcemu_cluster_bar0(c2, 5)[FC_REG_SCRATCH / 4], 77);
	assert_int_equal(fcemu_cluster_node_state(c, 1), FCEMU_NODE_FREE);
	assert_int_equal(fcemu_cluster_claim(c, 1), 0);
	assert_int_equal(fcemu_cluster_claim(c2, 1), 0); /* same process */
	child = claim_in_child(name, 2, false);
	assert_int_equal(fcemu_cluster_node_state(c, 2), FCEMU_NODE_ALIVE);
	assert_int_equal(fcemu_cluster_claim(c, 2), -EBUSY);
	end_child(child);
	assert_int_equal(fcemu_cluster_node_state(c2, 2), FCEMU_NODE_DEAD);
	fcemu_cluster_release(c, 1);
	assert_int_equal(fcemu_cluster_node_state(c2, 1), FCEMU_NODE_EXITED);
	assert_int_equal(fcemu_cluster_claim(c, 9), -EINVAL);
	fcemu_cluster_detach(c2);
	fcemu_cluster_detach(c);
	assert_int_equal(fcemu_cluster_unlink(name), 0);
	assert_int_equal(fcemu_cluster_unlink(name), -ENOENT);
}

/* ---- The event queue (FC_EQ_*) ---- */

#define EQ_OFF	 (6u << 20) /* between the rings and PUT_OFF */
#define EQ_SLOTS 64

struct eq_reader {
	uint32_t next; /* entry number to read */
	/* what arrived per (channel, source) */
	uint8_t *buf[MAX_CHAN][FC_MAX_NODES];
	size_t len[MAX_CHAN][FC_MAX_NODES];
	unsigned int eoms[MAX_CHAN][FC_MAX_NODES];
};

static void eq_open(struct rig *r, unsigned int n, struct eq_reader *q)
{
	uint64_t bus = HOST_BUS + EQ_OFF;

	memset(r->b[n].host + EQ_OFF, 0, EQ_SLOTS * FC_EQ_ENTRY_SIZE);
	q->next = 0;
	wr(r, n, FC_EQ_BASE_LO, (uint32_t)bus);
	wr(r, n, FC_EQ_BASE_HI, (uint32_t)(bus >> 32));
	wr(r, n, FC_EQ_SLOTS, EQ_SLOTS);
	wr(r, n, FC_EQ_HEAD, 0);
	wr(r, n, FC_EQ_IRQ_AT, 1u << 31);
	wr(r, n, FC_EQ_CTRL, FC_EQ_CTRL_ENABLE);
	assert_int_equal(rd(r, n, FC_EQ_SEEN), FC_EQ_CTRL_ENABLE);
	assert_int_equal(rd(r, n, FC_EQ_TAIL), 0);
}

/*
 * Read the entries the board wrote, by their phase alone (no register),
 * and give the slots back. RETURN VALUE: entries read.
 */
static unsigned int eq_drain(struct rig *r, unsigned int n, struct eq_reader *q)
{
	const struct fc_hw_pkt *e;
	unsigned int got = 0, ch, src;
	uint32_t hdr, len;

	for (;;) {
		e = (const void *)(r->b[n].host + EQ_OFF +
				   (q->next % EQ_SLOTS) * FC_EQ_ENTRY_SIZE);
		hdr = le32toh(__atomic_load_n(&e->hdr, __ATOMIC_ACQUIRE));
		if ((hdr & FC_EQ_PHASE) != FC_EQ_PHASE_OF(q->next, EQ_SLOTS))
			break;
		assert_int_equal(hdr & FC_PKT_NODE_MASK, n);
		assert_int_equal((hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK,
				 FC_PKT_T_DATA);
		ch = (hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK;
		src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
		len = (hdr >> FC_PKT_LEN_SHIFT) & FC_PKT_LEN_MASK;
		assert_true(ch < MAX_CHAN && len <= FC_PKT_PAYLOAD);
		q->buf[ch][src] =
			realloc(q->buf[ch][src], q->len[ch][src] + len);
		assert_non_null(q->buf[ch][src]);
		memcpy(q->buf[ch][src] + q->len[ch][src], e->payload, len);
		q->len[ch][src] += len;
		q->eoms[ch][src] += !!(hdr & FC_PKT_EOM);
		q->next++;
		got++;
	}
	if (got)
		wr(r, n, FC_EQ_HEAD, q->next);
	return got;
}

static void eq_free(struct eq_reader *q)
{
	unsigned int ch, src;

	for (ch = 0; ch < MAX_CHAN; ch++)
		for (src = 0; src < FC_MAX_NODES; src++)
			free(q->buf[ch][src]);
}

/* Node @src sends @len bytes (pattern @seed) to channel @ch of node 1. */
static void eq_send(struct rig *r, unsigned int src, unsigned int ch,
		    uint32_t len, uint64_t seed, uint32_t off)
{
	fill(r->b[src].host + SEND_OFF + off, len, seed);
	set_desc(&table(r, src, 0)[0], len, FC_SPACE_HOST,
		 HOST_BUS + SEND_OFF + off, FC_SPACE_FABRIC,
		 FC_FABRIC_CHAN(1, ch), FC_DESC_F_EOC);
	kick(r, src, 0, 1);
}

static bool eq_idle(struct rig *r, unsigned int rounds)
{
	unsigned int i;

	for (i = 0; i < rounds; i++)
		if (pump(r))
			return false;
	return true;
}

/*
 * Two sources, two channels into one queue of 64 entries, a third channel
 * on its own ring: a queue the host does not read fills, holds the rest
 * back (STALLS) and loses nothing; read by phase alone, the entries of the
 * second pass carry the other phase; IRQ_AT raises one event however much
 * arrives; a queue switched off drops and counts.
 */
static void test_event_queue(void **state)
{
	struct rig *r = rig_new("full:3", 0, 0, 0);
	struct eq_reader *q = calloc(1, sizeof(*q));
	const uint32_t a = 1500, b = 3000; /* 25 and 50 packets */
	uint32_t irq0, tail;
	unsigned int rounds = 0;

	(void)state;
	assert_non_null(q);
	assert_true(rd(r, 1, FC_REG_CAPS) & FC_CAP_EVENT_QUEUE);
	eq_open(r, 1, q);
	wr(r, 1, FC_CHAN_REG(3, FC_CHAN_CTRL),
	   FC_CHAN_CTRL_ENABLE | FC_CHAN_CTRL_EQ);
	wr(r, 1, FC_CHAN_REG(5, FC_CHAN_CTRL),
	   FC_CHAN_CTRL_ENABLE | FC_CHAN_CTRL_EQ);
	rx_open(r, 1, 7, 64);

	/* 0 -> ch 3 and 2 -> ch 5: 75 entries for a queue of 64, unread */
	eq_send(r, 0, 3, a, 31, 0);
	eq_send(r, 2, 5, b, 52, 0);
	while (!eq_idle(r, 200))
		assert_true(++rounds < STUCK_ROUNDS);
	assert_int_equal(rd(r, 1, FC_EQ_TAIL), EQ_SLOTS);
	assert_true(rd(r, 1, FC_EQ_STALLS) >= 1);
	/* nothing was written past the host's HEAD: entry 0 is still there */
	assert_int_equal(eq_drain(r, 1, q), EQ_SLOTS);

	/* read on: the rest arrives, with the second pass's phase */
	while (!chain_ended(r, 0, 0) || !chain_ended(r, 2, 0) || q->next < 75) {
		pump(r);
		eq_drain(r, 1, q);
		assert_true(++rounds < 10 * STUCK_ROUNDS);
	}
	assert_int_equal(q->next, 75);
	assert_int_equal(rd(r, 1, FC_EQ_TAIL), 75);
	assert_int_equal(q->len[3][0], a);
	assert_int_equal(q->len[5][2], b);
	assert_int_equal(q->eoms[3][0], 1);
	assert_int_equal(q->eoms[5][2], 1);
	assert_memory_equal(q->buf[3][0], r->b[0].host + SEND_OFF, a);
	assert_memory_equal(q->buf[5][2], r->b[2].host + SEND_OFF, b);
	/* a ring endpoint beside the queue still gets its own packets */
	eq_send(r, 0, 7, 600, 77, 0);
	wait_msgs(r, 1, 7, 1);
	assert_int_equal(r->b[1].rx[7]->src[0].len, 600);
	assert_int_equal(q->next, 75);

	/* IRQ_AT: one event for the batch that writes that entry */
	irq0 = rd(r, 1, FC_REG_IRQ_COUNT(FC_IRQ_VEC_CHAN));
	wr(r, 1, FC_EQ_IRQ_AT, q->next + 2);
	eq_send(r, 0, 3, a, 33, 0);
	while (q->next < 100) {
		pump(r);
		eq_drain(r, 1, q);
		assert_true(++rounds < 20 * STUCK_ROUNDS);
	}
	wait_chain(r, 0, 0);
	assert_int_equal(rd(r, 1, FC_REG_IRQ_COUNT(FC_IRQ_VEC_CHAN)), irq0 + 1);
	eq_send(r, 0, 3, 60, 34, 0);
	while (q->next < 101)
		pump(r), eq_drain(r, 1, q);
	assert_int_equal(rd(r, 1, FC_REG_IRQ_COUNT(FC_IRQ_VEC_CHAN)), irq0 + 1);

	/* switched off: SEEN follows, packets for it are dropped and counted */
	wr(r, 1, FC_EQ_CTRL, 0);
	assert_int_equal(rd(r, 1, FC_EQ_SEEN), 0);
	tail = rd(r, 1, FC_EQ_TAIL);
	eq_send(r, 0, 3, 120, 35, 0);
	wait_chain(r, 0, 0);
	while (pump(r))
		;
	assert_int_equal(rd(r, 1, FC_CHAN_REG(3, FC_CHAN_DROPS)), 2);
	assert_int_equal(rd(r, 1, FC_ROUTER_EJECT_DROPS), 2);
	assert_int_equal(rd(r, 1, FC_EQ_TAIL), tail);
	eq_free(q);
	free(q);
	rig_free(r);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Not a pass/fail criterion: how fast one link goes in one process. */
static void test_link_rate(void **state)
{
	struct rig *r = rig_new("ring:2", 0, 0, 0);
	const uint32_t len = 16u << 20;
	struct fc_hw_desc *t = table(r, 0, 0);
	unsigned int i;
	double t0, dt;

	(void)state;
	rx_open(r, 1, 0, 256);
	fill(r->b[0].host + SEND_OFF, 1u << 20, 1);
	for (i = 0; i < 16; i++)
		set_desc(&t[i], 1u << 20, FC_SPACE_HOST, HOST_BUS + SEND_OFF,
			 FC_SPACE_FABRIC, FC_FABRIC_CHAN(1, 0),
			 i == 15 ? FC_DESC_F_EOC : 0);
	t0 = now_s();
	kick(r, 0, 0, 16);
	wait_chain(r, 0, 0);
	wait_msgs(r, 1, 0, 16);
	dt = now_s() - t0;
	assert_int_equal(r->b[1].rx[0]->src[0].len, len);
	print_message(
		"one link, one process: %.0f packets/s, %.0f MB/s payload\n",
		len / 60.0 / dt, len / dt / 1e6);
	rig_free(r);
}

/* ---- Bursts shared between receiver and sender (emu/burst.c) ---- */

#define BURST_DST   (1u << 20)	/* in board 1's memory */
#define BURST_SMALL (64u << 10) /* two chunks */
#define BURST_BIG   (1u << 20)	/* four chunks */

static struct {
	struct rig *r;
	enum fcemu_burst_stage stage; /* where the test steps in */
	bool stall;		      /* the helper walks away from its chunk */
	bool reclaim;		      /* board 0's node looks claimed anew */
	bool busy;
	unsigned int calls;
	unsigned int changed; /* times the helper wrote during a hook */
	uint8_t *snap;
} bh;

/* At @stage of the receiver (board 1), run the sender's (board 0's) help
 * as if it came in at that moment, and see what it wrote. */
static int burst_hook(struct fcemu_cluster *c, enum fcemu_burst_stage stage)
{
	uint8_t *dst = bh.r->b[1].mem + BURST_DST;
	struct cl_node *nd = &c->hdr->node[0];
	const size_t len = BURST_SMALL + BURST_BIG;

	if (stage == FCEMU_BURST_STAGE_TAKEN)
		return bh.stall;
	if (stage != bh.stage || bh.busy)
		return 0;
	bh.busy = true;
	bh.calls++;
	memcpy(bh.snap, dst, len);
	if (bh.reclaim)
		nd->starttime ^= 1;
	fcemu__burst_help(bh.r->b[0].emu, 1ull << 1);
	if (bh.reclaim)
		nd->starttime ^= 1;
	bh.changed += memcmp(bh.snap, dst, len) != 0;
	bh.busy = false;
	return 0;
}

/* Board 0 PUTs 64 KiB then 1 MiB to board 1 as two shared bursts. */
static struct rig *burst_rig(enum fcemu_burst_stage stage, bool stall,
			     bool reclaim)
{
	struct rig *r = rig_new("full:2", 0, 0, 0);
	struct fc_hw_desc *t = table(r, 0, 0);
	const uint64_t bus = HOST_BUS + SEND_OFF;

	if (!fcemu__burst_usable(r->b[0].emu, 1) ||
	    !fcemu__burst_shared(BURST_BIG)) {
		rig_free(r);
		skip(); /* bursts or their sharing turned off */
	}
	memset(&bh, 0, sizeof(bh));
	bh.r = r;
	bh.stage = stage;
	bh.stall = stall;
	bh.reclaim = reclaim;
	bh.snap = malloc(BURST_SMALL + BURST_BIG);
	assert_non_null(bh.snap);
	fill(r->b[0].host + SEND_OFF, BURST_SMALL + BURST_BIG, 21);
	set_desc(&t[0], BURST_SMALL, FC_SPACE_HOST, bus, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(1, FC_REGION_BOARD, BURST_DST), 0);
	set_desc(&t[1], BURST_BIG, FC_SPACE_HOST, bus + BURST_SMALL,
		 FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(1, FC_REGION_BOARD, BURST_DST + BURST_SMALL),
		 FC_DESC_F_EOC);
	fcemu_cluster_test_faults(
		r->c, &(struct fcemu_test_faults){ .burst_stage = burst_hook });
	kick(r, 0, 0, 2);
	return r;
}

/* The chain ended well, the hook ran, nothing changed under it, the
 * bytes are all there. */
static void burst_delivered(struct rig *r)
{
	wait_chain(r, 0, 0);
	assert_true(bh.calls >= 2); /* a record per span, 1 MiB at most */
	assert_int_equal(bh.changed, 0);
	assert_memory_equal(r->b[1].mem + BURST_DST, r->b[0].host + SEND_OFF,
			    BURST_SMALL + BURST_BIG);
}

static void burst_rig_free(struct rig *r)
{
	fcemu_cluster_test_faults(r->c, NULL);
	free(bh.snap);
	bh.snap = NULL;
	rig_free(r);
}

/*
 * The sender looks in while the receiver rewrites its job for the second
 * burst: the claim of the first still stands, with fewer chunks than the
 * second has. Taking a chunk there would copy with stale words and count
 * it in the wrong job; the job is closed instead.
 */
static void test_burst_job_rewrite(void **state)
{
	struct rig *r = burst_rig(FCEMU_BURST_STAGE_FIELDS, false, false);

	(void)state;
	burst_delivered(r);
	assert_int_equal(rd(r, 1, FC_ROUTER_EJECT_DROPS), 0);
	burst_rig_free(r);
}

/* The sender's node claimed anew (another start time) after the burst was
 * published: that process is not the sender and must not help. */
static void test_burst_sender_reclaimed(void **state)
{
	struct rig *r = burst_rig(FCEMU_BURST_STAGE_PUBLISHED, false, true);

	(void)state;
	burst_delivered(r);
	burst_rig_free(r);
}

/*
 * The sender takes a chunk and never finishes it (stopped, or gone with
 * its node still alive): the receiver gives up after its bound (1 s at
 * least) and fails the burst, the chain ends with an error; no hang.
 */
static void test_burst_helper_stalls(void **state)
{
	struct rig *r = burst_rig(FCEMU_BURST_STAGE_PUBLISHED, true, false);
	struct chain_ref cr = { 0, 0 };
	double t0 = now_s(), dt;

	(void)state;
	run_until(r, one_chain_ended, &cr);
	dt = now_s() - t0;
	assert_int_not_equal(rd(r, 0, FC_DMA_REG(0, FC_DMA_ERROR)),
			     FC_DMA_ERR_NONE);
	assert_true(bh.calls >= 2);
	assert_int_equal(rd(r, 1, FC_ROUTER_EJECT_DROPS), bh.calls);
	assert_true(dt >= 0.9 * bh.calls && dt < 5.0 * bh.calls);
	reset_engine(r, 0, 0);
	burst_rig_free(r);
}

int main(void)
{
	const char *dev = getenv("FPGACOMM_TEST_DEVICE");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_cluster_objects,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_neighbours, unlink_clusters),
		cmocka_unit_test_teardown(test_pio_window, unlink_clusters),
		cmocka_unit_test_teardown(test_multihop, unlink_clusters),
		cmocka_unit_test_teardown(test_topologies, unlink_clusters),
		cmocka_unit_test_teardown(test_more_gather, unlink_clusters),
		cmocka_unit_test_teardown(test_put, unlink_clusters),
		cmocka_unit_test_teardown(test_disabled_endpoint,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_chan_seen, unlink_clusters),
		cmocka_unit_test_teardown(test_slow_receiver, unlink_clusters),
		cmocka_unit_test_teardown(test_express_keeps_order,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_eject_run_damaged,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_abort_mid_message,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_faults, unlink_clusters),
		cmocka_unit_test_teardown(test_burst_faults, unlink_clusters),
		cmocka_unit_test_teardown(test_all_to_all, unlink_clusters),
		cmocka_unit_test_teardown(test_dead_board, unlink_clusters),
		cmocka_unit_test_teardown(test_dead_lock_holder,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_router_dies_mid_move,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_bad_chains, unlink_clusters),
		cmocka_unit_test_teardown(test_burst_job_rewrite,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_burst_sender_reclaimed,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_burst_helper_stalls,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_link_rate, unlink_clusters),
		cmocka_unit_test_teardown(test_event_queue, unlink_clusters),
		cmocka_unit_test_teardown(test_peer_window, unlink_clusters),
	};

	/*
	 * This drives the board model itself; a run aimed at a real board
	 * (the VM's /dev/fpgacommN, 256 MiB guests) has nothing to add here.
	 */
	if (dev && !strncmp(dev, "/dev/", 5)) {
		printf("SKIP: models emulated clusters in-process; "
		       "FPGACOMM_TEST_DEVICE=%s is a kernel board\n",
		       dev);
		return 77;
	}
	return cmocka_run_group_tests_name("fabric_emu", tests, NULL, NULL);
}
