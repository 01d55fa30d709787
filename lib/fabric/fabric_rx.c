// SPDX-License-Identifier: MIT
/*
 * The fabric's receive side: where the board puts what arrives (the event
 * queue, or a ring per channel port on a board without one), read a run
 * of packets at a time and handed to the messages per (port, source) of
 * fabric_msg.c. fabric.c owns setup, sends and requests.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport_internal.h"

#define EQ_SLOTS     4096	   /* event queue entries: 256 KiB */
#define EQ_ENV	     "FPGACOMM_EQ" /* 0: rings even where there is a queue */
#define SEEN_WAIT_MS 2000	   /* a board that never leaves a queue */
#define ALL_GROUPS   ((uint32_t)((1ull << FC_CHAN_GROUPS) - 1))

_Static_assert(FC_CHAN_GROUPS *FC_CHAN_GROUP_SIZE == FC_MAX_CHANNELS &&
		       FC_CHAN_GROUPS <= 32,
	       "channel groups: a 32-bit mask");

static uint32_t reg_rd(struct fc_dev *dev, uint32_t off)
{
	uint32_t val = 0;

	fc__lock(&dev->lock);
	dev->be->reg_read(dev, off, &val);
	fc__unlock(&dev->lock);
	return val;
}

static void reg_wr(struct fc_dev *dev, uint32_t off, uint32_t val)
{
	fc__lock(&dev->lock);
	dev->be->reg_write(dev, off, val);
	fc__unlock(&dev->lock);
}

/* ---- Setup ---- */

/* RETURN VALUE: 0, or -errno of a backend that programs rings itself. */
static int ring_program(struct fc_dev *dev, unsigned int port, uint64_t bus)
{
	struct fc__fabric *fab = dev->fab;
	uint64_t off = (uint64_t)port * RING_SLOTS * FC_PKT_SIZE;
	int ret;

	if (dev->be->chan_ring) {
		fc__lock(&dev->lock);
		ret = dev->be->chan_ring(dev, port,
					 fc__mem_find(dev, fab->rings), off,
					 RING_SLOTS, &fab->head[port]);
		fc__unlock(&dev->lock);
		return ret;
	}
	bus += off;

	reg_wr(dev, FC_CHAN_REG(port, FC_CHAN_CTRL), 0);
	reg_wr(dev, FC_CHAN_REG(port, FC_CHAN_RING_LO), (uint32_t)bus);
	reg_wr(dev, FC_CHAN_REG(port, FC_CHAN_RING_HI), (uint32_t)(bus >> 32));
	reg_wr(dev, FC_CHAN_REG(port, FC_CHAN_RING_SLOTS), RING_SLOTS);
	/* Start where the board is: HEAD == TAIL is an empty ring. */
	fab->head[port] = reg_rd(dev, FC_CHAN_REG(port, FC_CHAN_TAIL));
	reg_wr(dev, FC_CHAN_REG(port, FC_CHAN_HEAD), fab->head[port]);
	reg_wr(dev, FC_CHAN_REG(port, FC_CHAN_CTRL), FC_CHAN_CTRL_ENABLE);
	return 0;
}

static void head_write(struct fc_dev *dev, unsigned int port, uint32_t head)
{
	if (!dev->be->chan_head) {
		reg_wr(dev, FC_CHAN_REG(port, FC_CHAN_HEAD), head);
		return;
	}
	fc__lock(&dev->lock);
	dev->be->chan_head(dev, port, head);
	fc__unlock(&dev->lock);
}

static int mem_bus(struct fc_dev *dev, struct fc_mem *mem, uint64_t *bus)
{
	int ret;

	fc__lock(&dev->lock);
	ret = dev->be->mem_bus(dev, fc__mem_find(dev, mem), bus);
	fc__unlock(&dev->lock);
	return ret;
}

/* Packets of one run share type, source and channel. */
#define PKT_RUN_KEY                                \
	((FC_PKT_TYPE_MASK << FC_PKT_TYPE_SHIFT) | \
	 (FC_PKT_NODE_MASK << FC_PKT_SRC_SHIFT) |  \
	 (FC_PKT_CHAN_MASK << FC_PKT_CHAN_SHIFT))

/* Where packets are taken from: one port's ring, or the event queue. */
struct pkt_ring {
	const struct fc_hw_pkt *slot;
	uint32_t mask; /* slots - 1 */
	/* the event queue: its slots, an entry written when its phase is
	 * its number's; 0: a ring, whose slots up to TAIL are all written */
	uint32_t phased;
};

static inline const struct fc_hw_pkt *at(const struct pkt_ring *rg, uint32_t i)
{
	return &rg->slot[i & rg->mask];
}

static size_t pkt_len(uint32_t hdr)
{
	return (hdr >> FC_PKT_LEN_SHIFT) & FC_PKT_LEN_MASK;
}

/* Slot @i's header, once written: loaded before its payload is. */
static inline uint32_t hdr_at(const struct pkt_ring *rg, uint32_t i)
{
	return le32toh(__atomic_load_n(&at(rg, i)->hdr, __ATOMIC_ACQUIRE));
}

/* Is slot @i, whose header is @hdr, written? (FC_EQ_PHASE_OF for slots a
 * power of two: no division.) */
static inline bool written(const struct pkt_ring *rg, uint32_t i, uint32_t hdr)
{
	return !rg->phased ||
	       (hdr & FC_EQ_PHASE) == ((i & rg->phased) ? 0 : FC_EQ_PHASE);
}

/*
 * Copy the payloads of ring slots @head..@head+n-1 to @dst, known to fit.
 * Full packets (all but a message's last) copy a constant size, which the
 * compiler does in a few wide moves. RETURN VALUE: bytes copied.
 */
static size_t copy_payloads(uint8_t *dst, const struct pkt_ring *rg,
			    uint32_t head, uint32_t n)
{
	const struct fc_hw_pkt *pkt;
	size_t off = 0, len;
	uint32_t k;

	for (k = 0; k < n; k++) {
		pkt = at(rg, head + k);
		len = pkt_len(le32toh(pkt->hdr));
		if (len == FC_PKT_PAYLOAD)
			memcpy(dst + off, pkt->payload, FC_PKT_PAYLOAD);
		else
			memcpy(dst + off, pkt->payload, len);
		off += len;
	}
	return off;
}

/*
 * Append a run of @n packets of one message (ring slots @head on) to the
 * message @s is building, as fc__src_append() one by one would, in one go: @bytes
 * is their payload. The caller has cut the run so that no packet but the
 * first would cross FC_CHAN_MAX_MSG or start above the port's limit.
 * RETURN VALUE: packets consumed; *err -ENOMEM when one had to stay.
 */
static uint32_t append_run(struct fc__port *pt, struct fc__src *s,
			   const struct pkt_ring *rg, uint32_t head, uint32_t n,
			   size_t bytes, int *err)
{
	const struct fc_hw_pkt *pkt;
	uint8_t *dst;
	size_t len, cap;
	uint32_t k;

	*err = 0;
	if (s->drop) {
		s->cur_len += bytes;
		return n;
	}
	if (s->into) {
		dst = (uint8_t *)s->into->buf;
		if (s->cur_len + bytes <= s->into->cap) {
			s->cur_len +=
				copy_payloads(dst + s->cur_len, rg, head, n);
			return n;
		}
		/* Copy what fits; from the first that does not, drop. */
		for (k = 0; k < n; k++) {
			pkt = at(rg, head + k);
			len = pkt_len(le32toh(pkt->hdr));
			if (!s->drop && s->cur_len + len > s->into->cap)
				s->drop = true;
			if (!s->drop)
				memcpy(dst + s->cur_len, pkt->payload, len);
			s->cur_len += len;
		}
		return n;
	}
	if (n > 1 && s->cur_len + bytes <= FC_CHAN_MAX_MSG) {
		cap = s->cur_cap;
		if (!s->cur || s->cur_len + bytes > cap) {
			/* The capacity fc__src_append() would double its way to. */
			if (!cap)
				cap = FC__MSG_MIN_CAP;
			while (s->cur_len + bytes > cap)
				cap *= 2;
			dst = realloc(s->cur, sizeof(struct fc__msg) + cap);
			if (!dst)
				goto one_by_one; /* find the packet that stays */
			s->cur = dst;
			s->cur_cap = cap;
		}
		s->cur_len += copy_payloads(fc__src_msg(s)->data + s->cur_len,
					    rg, head, n);
		pt->buffered += bytes;
		return n;
	}
one_by_one:
	for (k = 0; k < n; k++) {
		pkt = at(rg, head + k);
		*err = fc__src_append(pt, s, pkt->payload,
				      pkt_len(le32toh(pkt->hdr)));
		if (*err)
			break;
	}
	return k;
}

/*
 * Copy the run at @head into @dst + *@off, one pass: each packet found
 * written, its header checked (@key, its length, room below @cap) and its
 * payload copied, up to a message's end or @max packets. The ring's
 * fields are taken by value: stores into @dst cannot change them, so
 * nothing is loaded again per packet. RETURN VALUE: packets copied;
 * *@off past them, *@last the last one's header.
 */
static inline uint32_t copy_run(const struct pkt_ring rg, uint32_t head,
				uint32_t max, uint32_t key, uint8_t *dst,
				size_t *off, size_t cap, uint32_t *last)
{
	const struct fc_hw_pkt *pkt;
	size_t o = *off, len;
	uint32_t n = 0, hdr;

	while (n < max) {
		pkt = at(&rg, head + n);
		hdr = hdr_at(&rg, head + n);
		len = pkt_len(hdr);
		if (!written(&rg, head + n, hdr) ||
		    (hdr & PKT_RUN_KEY) != key || len > FC_PKT_PAYLOAD ||
		    o + len > cap)
			break;
		if (len == FC_PKT_PAYLOAD)
			memcpy(dst + o, pkt->payload, FC_PKT_PAYLOAD);
		else
			memcpy(dst + o, pkt->payload, len);
		o += len;
		*last = hdr;
		n++;
		if (hdr & FC_PKT_EOM)
			break;
	}
	*off = o;
	return n;
}

/*
 * The run at @head into the posted receive @s is filling, in one pass,
 * up to the message's end, @tail, another run's packet or the first that
 * would not fit (left for take_run()'s way, which copies what fits and
 * drops the rest). RETURN VALUE: packets taken; *last the last one's
 * header.
 */
static uint32_t run_into(const struct pkt_ring *rg, uint32_t head,
			 uint32_t tail, struct fc__src *s, uint32_t *last)
{
	size_t off = s->cur_len;
	uint32_t n;

	n = copy_run(*rg, head, tail - head, *last & PKT_RUN_KEY,
		     (uint8_t *)s->into->buf, &off, s->into->cap, last);
	s->cur_len = off;
	return n;
}

/*
 * Take packets from @head on while they form a run: one source, one
 * channel, one message, up to its end (EOM) or @tail. The source is
 * looked up once and the payloads appended in one go. From rings (a board
 * without an event queue), within the run as packet by packet, none is
 * taken once the port holds FC_CHAN_BUFFERED in library buffers: the ring
 * fills and the board holds the rest back.
 * RETURN VALUE: packets consumed; *stop when out of memory (the packet
 * that could not be taken stays where it is, for later).
 */
static uint32_t take_run(struct fc__fabric *fab, const struct pkt_ring *rg,
			 uint32_t head, uint32_t tail, bool *stop)
{
	uint32_t hdr = le32toh(at(rg, head)->hdr), h2, n;
	unsigned int port = (hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK;
	unsigned int type = (hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK;
	unsigned int src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	size_t len = pkt_len(hdr), bytes, l2, lim;
	struct fc__port *pt;
	struct fc__src *s;
	bool queue, capped;
	int err;

	if (type == FC_PKT_T_ABORT) {
		fc__src_abort(fab, port, src);
		return 1;
	}
	if (type == FC_PKT_T_CTRL && len <= FC_PKT_PAYLOAD) {
		/* The library's own: one packet each. */
		if (hdr & FC_PKT_EOM)
			fc__ctrl_take(fab->dev, port, src,
				      at(rg, head)->payload, len);
		return 1;
	}
	if (type != FC_PKT_T_DATA || len > FC_PKT_PAYLOAD)
		return 1; /* not a channel packet: nothing for us */
	s = fc__src_get(fab, port, src);
	if (!s) {
		*stop = true;
		return 0;
	}
	pt = fab->ports[port];
	if (!s->active) {
		s->active = true;
		s->into = s->q_head ? NULL : s->posted_head;
	}
	/* Into the posted receive, room for it: one pass. */
	if (s->into && !s->drop) {
		n = run_into(rg, head, tail, s, &hdr);
		if (n) {
			if (hdr & FC_PKT_EOM)
				fc__src_finish(fab, port, s);
			return n;
		}
	}
	/* Into a library buffer: the port's limit and the message's bound. */
	queue = !s->drop && !s->into;
	capped = queue && (!fab->eq || !fab->flow_bounded);
	lim = FC_CHAN_MAX_MSG -
	      (s->cur_len < FC_CHAN_MAX_MSG ? s->cur_len : FC_CHAN_MAX_MSG);
	bytes = len;
	for (n = 1; !(hdr & FC_PKT_EOM) && head + n != tail; n++) {
		h2 = hdr_at(rg, head + n);
		if (!written(rg, head + n, h2) ||
		    (h2 & PKT_RUN_KEY) != (hdr & PKT_RUN_KEY))
			break;
		l2 = pkt_len(h2);
		if (l2 > FC_PKT_PAYLOAD)
			break;
		if (queue &&
		    (bytes + l2 > lim ||
		     (capped && pt->buffered + bytes >= FC_CHAN_BUFFERED)))
			break;
		bytes += l2;
		hdr = h2;
	}
	n = append_run(pt, s, rg, head, n, bytes, &err);
	if (err) {
		*stop = true;
		return n;
	}
	if (hdr & FC_PKT_EOM)
		fc__src_finish(fab, port, s);
	return n;
}

/*
 * The common small message, before take_run(): a data packet that is a
 * whole message, into the posted receive that asked for it.
 * RETURN VALUE: true taken.
 */
static inline bool take_whole(struct fc__fabric *fab,
			      const struct fc_hw_pkt *pkt)
{
	uint32_t hdr = le32toh(pkt->hdr);
	size_t len = pkt_len(hdr);

	if (((hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK) != FC_PKT_T_DATA ||
	    !(hdr & FC_PKT_EOM) || len > FC_PKT_PAYLOAD)
		return false;
	return fc__src_take_whole(fab,
				  (hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK,
				  (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK,
				  pkt->payload, len);
}

static bool is_ctrl(const struct fc_hw_pkt *pkt)
{
	uint32_t hdr = le32toh(pkt->hdr);

	return ((hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK) == FC_PKT_T_CTRL;
}

static bool drain(struct fc_dev *dev, unsigned int port, uint32_t tail)
{
	struct fc__fabric *fab = dev->fab;
	const struct pkt_ring rg = {
		.slot = (const struct fc_hw_pkt *)fab->rings->addr +
			(size_t)port * RING_SLOTS,
		.mask = RING_SLOTS - 1,
	};
	uint32_t head = fab->head[port];
	bool stop = false;

	while (head != tail && !stop) {
		struct fc__port *pt = fab->ports[port];

		/* Past the limit the ring fills and the board holds back;
		 * control messages are taken still: they free buffers. */
		if (pt && pt->buffered >= FC_CHAN_BUFFERED &&
		    !is_ctrl(at(&rg, head)))
			break;
		if (take_whole(fab, at(&rg, head)))
			head++;
		else
			head += take_run(fab, &rg, head, tail, &stop);
	}
	if (head != tail)
		fab->rescan |= 1u << port / FC_CHAN_GROUP_SIZE;
	if (head == fab->head[port])
		return false;
	fab->head[port] = head;
	head_write(dev, port, head);
	return true;
}

/*
 * Polling reads of board registers: straight from the register file where
 * the backend maps it (no lock), else through the backend under dev->lock,
 * held from regs_hold() to regs_release().
 */
static void regs_hold(struct fc_dev *dev)
{
	if (!dev->regs)
		fc__lock(&dev->lock);
}

static void regs_release(struct fc_dev *dev)
{
	if (!dev->regs)
		fc__unlock(&dev->lock);
}

/* RETURN VALUE: 0, or the backend's -errno (a board gone): then no
 * value, rather than a 0 taken for one. */
static inline int reg_get(struct fc_dev *dev, uint32_t off, uint32_t *val)
{
	if (dev->regs) {
		*val = __atomic_load_n(&dev->regs[off / 4], __ATOMIC_ACQUIRE);
		return 0;
	}
	return dev->be->reg_read(dev, off, val);
}

/*
 * The groups of rings with news (FC_REG_CHAN_EVENTS), and those left
 * unread. A board without the counters: all of them.
 */
static uint32_t groups_moved(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	uint32_t groups = fab->rescan, ev;
	unsigned int g;

	if (!fab->chan_events)
		return ALL_GROUPS;
	for (g = 0; g < FC_CHAN_GROUPS; g++) {
		if (reg_get(dev, FC_REG_CHAN_EVENTS(g), &ev))
			return 0;
		if (ev != fab->group_events[g]) {
			fab->group_events[g] = ev;
			groups |= 1u << g;
		}
	}
	return groups;
}

/* The first channel of the lowest group in @groups. */
static unsigned int group_first(uint32_t groups)
{
	return (unsigned int)__builtin_ctz(groups) * FC_CHAN_GROUP_SIZE;
}

static bool drain_all(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	uint32_t tail[FC_MAX_CHANNELS], irqs, groups, left, t;
	uint8_t news[FC_MAX_CHANNELS];
	unsigned int p, end, n = 0, i;
	bool moved = false;

	/*
	 * The board counts an event on the channel vector after packets land
	 * (after TAIL and its group's count): with the count unchanged and
	 * nothing left unread, no ring has news. Else only the groups whose
	 * count moved are read. Counter first, then the groups, then the
	 * tails, so nothing that landed before it is missed.
	 */
	regs_hold(dev);
	if (reg_get(dev, FC_REG_IRQ_COUNT(FC_IRQ_VEC_CHAN), &irqs) ||
	    (irqs == fab->chan_irqs && !fab->rescan)) {
		regs_release(dev);
		return false;
	}
	fab->chan_irqs = irqs;
	groups = groups_moved(dev);
	fab->rescan = 0;
	/* All the tails in one go, TAIL read before the slots: the rings
	 * with news, in order. */
	for (left = groups; left; left &= left - 1) {
		end = group_first(left) + FC_CHAN_GROUP_SIZE;
		for (p = group_first(left); p < end; p++) {
			if (reg_get(dev, FC_CHAN_REG(p, FC_CHAN_TAIL), &t))
				break;
			/* A board moves TAIL at most a ring ahead of HEAD. */
			if (t - fab->head[p] > RING_SLOTS) {
				fab->bad_tails++;
				continue;
			}
			if (t != fab->head[p]) {
				tail[p] = t;
				news[n++] = (uint8_t)p;
			}
		}
	}
	regs_release(dev);
	for (i = 0; i < n; i++)
		moved |= drain(dev, news[i], tail[news[i]]);
	return moved;
}

/* ---- The event queue ---- */

/* Is entry @n of the queue written (its phase the board's for it)? */
static inline bool eq_written(const struct fc__fabric *fab, uint32_t n)
{
	const struct fc_hw_pkt *e = (const struct fc_hw_pkt *)fab->eq->addr +
				    (n & (fab->eq_slots - 1));
	uint32_t hdr = le32toh(__atomic_load_n(&e->hdr, __ATOMIC_ACQUIRE));

	/* FC_EQ_PHASE_OF(n, slots) for slots a power of two: no division */
	return (hdr & FC_EQ_PHASE) == ((n & fab->eq_slots) ? 0 : FC_EQ_PHASE);
}

/* RETURN VALUE: 0, or the backend's -errno (-ERANGE: TAIL lags). */
static int eq_head_write(struct fc_dev *dev, uint32_t head)
{
	int ret;

	if (!dev->be->eq_head) {
		reg_wr(dev, FC_EQ_HEAD, head);
		return 0;
	}
	fc__lock(&dev->lock);
	ret = dev->be->eq_head(dev, head);
	fc__unlock(&dev->lock);
	return ret;
}

/* Entries up to @head are read: HEAD goes back to the board a quarter of
 * the queue at a time (a register write each; through a driver, a system
 * call). */
static inline void eq_advance(struct fc_dev *dev, uint32_t head)
{
	struct fc__fabric *fab = dev->fab;

	fab->eq_head = head;
	dev->eq_next = head;
	if (head - fab->eq_told >= fab->eq_slots / 4 &&
	    !eq_head_write(dev, head))
		fab->eq_told = head;
}

/*
 * Without credits (a driver without FC_FEAT_XFER_CTRL) a port's library
 * buffers are bounded as with rings: past FC_CHAN_BUFFERED its next packet stays in
 * the queue and the board holds back the rest, as a full ring would.
 */
static bool eq_held(const struct fc__fabric *fab, const struct fc_hw_pkt *e)
{
	uint32_t hdr = le32toh(e->hdr);
	const struct fc__port *pt;

	if (fab->flow_bounded || is_ctrl(e))
		return false;
	pt = fab->ports[(hdr >> FC_PKT_CHAN_SHIFT) & FC_PKT_CHAN_MASK];
	return pt && pt->buffered >= FC_CHAN_BUFFERED;
}

/*
 * What the board wrote since we last looked, in order: one load when
 * nothing came. Each entry is looked at once: a run's entries are found
 * written as they are taken, not counted first.
 */
static bool drain_eq(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	const struct pkt_ring rg = {
		.slot = (const struct fc_hw_pkt *)fab->eq->addr,
		.mask = fab->eq_slots - 1,
		.phased = fab->eq_slots,
	};
	uint32_t head = fab->eq_head, end = head + fab->eq_slots;
	bool stop = false;

	while (head != end && !stop && eq_written(fab, head) &&
	       !eq_held(fab, at(&rg, head))) {
		if (take_whole(fab, at(&rg, head)))
			head++;
		else
			head += take_run(fab, &rg, head, end, &stop);
	}
	if (head == fab->eq_head)
		return false;
	eq_advance(dev, head);
	return true;
}

/*
 * take_direct() for a message of several packets: its entries, all
 * written, of one data message from @s's node on @port, up to its EOM,
 * with at most @cap bytes, copied into @buf as they are checked (one
 * pass). Anything else (not all here yet, another source's or kind's
 * entry among them, too long) stops it: the bytes copied so far are the
 * message's own first bytes, which the long way then writes again where
 * they are, and nothing past @cap is written. Out of line, so that the
 * one-packet way stays as short as it was.
 * RETURN VALUE: entries taken (0: none, take the long way), *len bytes.
 */
static __attribute__((noinline)) uint32_t
take_direct_run(struct fc_dev *dev, struct fc__src *s, uint32_t port, void *buf,
		size_t cap, size_t *len)
{
	struct fc__fabric *fab = dev->fab;
	const struct pkt_ring rg = {
		.slot = (const struct fc_hw_pkt *)fab->eq->addr,
		.mask = fab->eq_slots - 1,
		.phased = fab->eq_slots,
	};
	uint32_t k, hdr = 0;
	size_t off = 0;

	k = copy_run(rg, fab->eq_head, fab->eq_slots,
		     FC_PKT_HDR(0, s->node, port, 0, FC_PKT_T_DATA), buf, &off,
		     cap, &hdr);
	if (!k || !(hdr & FC_PKT_EOM))
		return 0;
	*len = off;
	fc__stat_inc(&dev->stats.straight);
	return k;
}

/*
 * The message at the head of the event queue (after one step of the
 * board, if there is nothing), when it is all here, a data message from
 * @s's node on @port of at most @cap bytes: its payloads copied straight
 * into @buf and its entries consumed.
 * RETURN VALUE: true taken (*len its length), else false and nothing
 * consumed (@buf may hold the message's first bytes: take_direct_run()).
 */
static bool take_direct(struct fc_dev *dev, struct fc__src *s, uint32_t port,
			void *buf, size_t cap, size_t *len)
{
	struct fc__fabric *fab = dev->fab;
	const struct fc_hw_pkt *pkt;
	uint64_t board = 0;
	uint32_t hdr, k = 1;
	size_t n;

	if (!eq_written(fab, fab->eq_head)) {
		/* One step of the board: the message may be on its way in. */
		fc__dev_lock(dev);
		dev->be->progress(dev, &board);
		fc__dev_unlock(dev);
		if (!eq_written(fab, fab->eq_head))
			return false;
	}
	pkt = (const struct fc_hw_pkt *)fab->eq->addr +
	      (fab->eq_head & (fab->eq_slots - 1));
	hdr = le32toh(pkt->hdr);
	n = pkt_len(hdr);
	/* One packet, the common small message; else a longer one, all
	 * here. Any other entry comes first, and takes the long way. */
	if ((hdr & (PKT_RUN_KEY | FC_PKT_EOM)) ==
	    (FC_PKT_HDR(0, s->node, port, 0, FC_PKT_T_DATA) | FC_PKT_EOM)) {
		if (n > FC_PKT_PAYLOAD || n > cap)
			return false;
		fc__copy_small(buf, pkt->payload, n);
	} else {
		k = take_direct_run(dev, s, port, buf, cap, &n);
		if (!k)
			return false;
	}
	*len = n;
	eq_advance(dev, fab->eq_head + k);
	if (fab->up.consumed)
		fab->up.consumed(dev, port, s, n);
	return true;
}

int fc__recv_now(struct fc_dev *dev, uint32_t port, uint32_t node, void *buf,
		 size_t cap, size_t *len)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__port *pt = fab->ports[port];
	struct fc__src *s = pt ? pt->src[node] : NULL;

	if (!s || s->active || s->posted_head || fab->sendq_head ||
	    fab->fly_head || fab->ticking)
		return -EAGAIN;
	if (s->q_head)
		return fc__src_take_queued(fab, port, s, buf, cap, len);
	if (!fab->eq)
		return -EAGAIN;
	return take_direct(dev, s, port, buf, cap, len) ? 0 : -EAGAIN;
}

/*
 * Wait (boundedly) until the board works by @want in the SEEN register
 * @seen: a queue or ring it has left may be reused.
 * RETURN VALUE: 0, or -ETIMEDOUT.
 */
static int wait_seen(struct fc_dev *dev, uint32_t seen, uint32_t want)
{
	const struct timespec ms = { .tv_nsec = 1000000 };
	unsigned int i;

	for (i = 0; i < SEEN_WAIT_MS; i++) {
		if (reg_rd(dev, seen) == want)
			return 0;
		nanosleep(&ms, NULL);
	}
	return -ETIMEDOUT;
}

static void eq_off(struct fc_dev *dev)
{
	unsigned int p;

	if (dev->be->eq_set) {
		/* The driver switches the endpoints off with it, and waits. */
		fc__lock(&dev->lock);
		dev->be->eq_set(dev, NULL, 0, 0);
		fc__unlock(&dev->lock);
		return;
	}

	for (p = 0; p < FC_MAX_CHANNELS; p++)
		reg_wr(dev, FC_CHAN_REG(p, FC_CHAN_CTRL), 0);
	reg_wr(dev, FC_EQ_CTRL, 0);
	wait_seen(dev, FC_EQ_SEEN, 0);
}

/* Through the driver: it programs the queue and the endpoints. */
static int eq_init_be(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__mem *mem = fc__mem_find(dev, fab->eq);
	unsigned int p;
	int ret;

	fc__lock(&dev->lock);
	ret = dev->be->eq_set(dev, mem, 0, EQ_SLOTS);
	for (p = 0; p < FC_MAX_CHANNELS && !ret; p++)
		ret = dev->be->chan_eq(dev, p);
	if (ret && p)
		dev->be->eq_set(dev, NULL, 0, 0);
	fc__unlock(&dev->lock);
	return ret;
}

/* The event queue, every port's packets into it. */
static int eq_init(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	size_t bytes = (size_t)EQ_SLOTS * FC_EQ_ENTRY_SIZE;
	unsigned int p;
	uint64_t bus;
	int ret;

	ret = fc__mem_alloc_contig(dev, bytes, &fab->eq);
	if (ret)
		return ret;
	memset(fab->eq->addr, 0, bytes);
	fab->eq_slots = EQ_SLOTS;
	if (dev->be->eq_set) {
		ret = eq_init_be(dev);
		if (ret)
			goto err_free;
		return 0;
	}
	ret = mem_bus(dev, fab->eq, &bus);
	if (ret)
		goto err_free;
	/* A queue an earlier process left on: the board must leave it. */
	reg_wr(dev, FC_EQ_CTRL, 0);
	ret = wait_seen(dev, FC_EQ_SEEN, 0);
	if (ret)
		goto err_free;
	fab->eq_slots = EQ_SLOTS;
	reg_wr(dev, FC_EQ_BASE_LO, (uint32_t)bus);
	reg_wr(dev, FC_EQ_BASE_HI, (uint32_t)(bus >> 32));
	reg_wr(dev, FC_EQ_SLOTS, EQ_SLOTS);
	reg_wr(dev, FC_EQ_HEAD, 0);
	/* No interrupt: a sleeper here waits on the board's bell. */
	reg_wr(dev, FC_EQ_IRQ_AT, EQ_SLOTS);
	reg_wr(dev, FC_EQ_CTRL, FC_EQ_CTRL_ENABLE);
	for (p = 0; p < FC_MAX_CHANNELS; p++)
		reg_wr(dev, FC_CHAN_REG(p, FC_CHAN_CTRL),
		       FC_CHAN_CTRL_ENABLE | FC_CHAN_CTRL_EQ);
	return 0;

err_free:
	fc_mem_free(dev, fab->eq);
	fab->eq = NULL;
	return ret;
}

/* ---- Rings, on a board without an event queue ---- */

static int rings_init(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	unsigned int p;
	int ret;

	ret = fc__mem_alloc_contig(
		dev, (size_t)FC_MAX_CHANNELS * RING_SLOTS * FC_PKT_SIZE,
		&fab->rings);
	if (ret)
		return ret;
	if (!dev->be->chan_ring)
		ret = mem_bus(dev, fab->rings, &fab->rings_bus);
	if (ret)
		goto err_free;
	fab->chan_events = dev->info.caps & FC_CAP_CHAN_EVENTS;
	fab->rescan = ALL_GROUPS;
	for (p = 0; p < FC_MAX_CHANNELS && !ret; p++)
		ret = ring_program(dev, p, fab->rings_bus);
	if (!ret)
		return 0;
	/* The endpoints belong to another open of the board (the driver's). */
	fc__lock(&dev->lock);
	while (p-- > 1)
		dev->be->chan_ring(dev, p - 1, NULL, 0, 0, NULL);
	fc__unlock(&dev->lock);
err_free:
	fc_mem_free(dev, fab->rings);
	fab->rings = NULL;
	return ret;
}

/* ---- Entry points ---- */

int fc__rx_init(struct fc_dev *dev)
{
	int ret;

	if ((dev->info.caps & FC_CAP_EVENT_QUEUE) &&
	    (!dev->be->chan_ring || dev->be->eq_set) &&
	    fc__env_size(EQ_ENV, 1)) {
		ret = eq_init(dev);
		/* A driver without the queue: its rings. */
		if (ret != -EOPNOTSUPP)
			return ret;
	}
	return rings_init(dev);
}

/* At close: the board stops writing; the memory goes with the device's. */
void fc__rx_fini(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	unsigned int p;

	if (fab->eq) {
		eq_off(dev);
		return;
	}
	for (p = 0; p < FC_MAX_CHANNELS && !dev->be->chan_ring; p++)
		reg_wr(dev, FC_CHAN_REG(p, FC_CHAN_CTRL), 0);
}

bool fc__rx_drain(struct fc_dev *dev)
{
	return dev->fab->eq ? drain_eq(dev) : drain_all(dev);
}
