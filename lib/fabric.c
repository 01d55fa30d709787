// SPDX-License-Identifier: MIT
/*
 * The fabric's engine room: receive rings (one per channel port, in host
 * memory the board writes), progress (submit queued chains, let the board
 * move, retire ended chains, drain the rings into messages), and the state
 * of peers. See fabric.h for the data structures.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_internal.h"
#include "handle.h"

#define MSG_MIN_CAP	4096
#define RNDV_ENV	"FPGACOMM_RNDV_MIN"	/* bytes; 0: no rendezvous */
#define ALL_GROUPS	((uint32_t)((1ull << FC_CHAN_GROUPS) - 1))

_Static_assert(FC_CHAN_GROUPS * FC_CHAN_GROUP_SIZE == FC_MAX_CHANNELS &&
	       FC_CHAN_GROUPS <= 32, "channel groups: a 32-bit mask");

void fc__fab_lock(struct fc__fabric *fab)
{
	pthread_mutex_lock(&fab->lock);
}

void fc__fab_unlock(struct fc__fabric *fab)
{
	pthread_mutex_unlock(&fab->lock);
}

/* Append @r to the list @head .. @tail, linked by next. */
static void req_append(struct fc_req **head, struct fc_req **tail,
		       struct fc_req *r)
{
	r->next = NULL;
	if (*tail)
		(*tail)->next = r;
	else
		*head = r;
	*tail = r;
}

static uint32_t reg_rd(struct fc_dev *dev, uint32_t off)
{
	uint32_t val = 0;

	pthread_mutex_lock(&dev->lock);
	dev->be->reg_read(dev, off, &val);
	pthread_mutex_unlock(&dev->lock);
	return val;
}

static void reg_wr(struct fc_dev *dev, uint32_t off, uint32_t val)
{
	pthread_mutex_lock(&dev->lock);
	dev->be->reg_write(dev, off, val);
	pthread_mutex_unlock(&dev->lock);
}

/* ---- Setup ---- */

/* RETURN VALUE: 0, or -errno of a backend that programs rings itself. */
static int ring_program(struct fc_dev *dev, unsigned int port, uint64_t bus)
{
	struct fc__fabric *fab = dev->fab;
	uint64_t off = (uint64_t)port * RING_SLOTS * FC_PKT_SIZE;
	int ret;

	if (dev->be->chan_ring) {
		pthread_mutex_lock(&dev->lock);
		ret = dev->be->chan_ring(dev, port, fc__mem_find(dev, fab->rings),
					 off, RING_SLOTS, &fab->head[port]);
		pthread_mutex_unlock(&dev->lock);
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
	pthread_mutex_lock(&dev->lock);
	dev->be->chan_head(dev, port, head);
	pthread_mutex_unlock(&dev->lock);
}

static int mem_bus(struct fc_dev *dev, struct fc_mem *mem, uint64_t *bus)
{
	int ret;

	pthread_mutex_lock(&dev->lock);
	ret = dev->be->mem_bus(dev, fc__mem_find(dev, mem), bus);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

/*
 * A board in a cluster gets its fabric state at open: a receive ring on
 * every port, so that nothing sent to it early is lost. A board in no
 * cluster, or on a backend without the fabric ops, gets none.
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
	pthread_mutex_lock(&dev->lock);
	ret = be->world(dev, &w);
	pthread_mutex_unlock(&dev->lock);
	if (ret == -ENOTCONN)
		return 0;
	if (ret)
		return ret;

	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -ENOMEM;
	pthread_mutex_init(&fab->lock, NULL);
	fab->dev = dev;
	fab->world = w;
	fab->rndv_min = be->rendezvous ? fc__env_size(RNDV_ENV, FC_CHAN_RNDV_MIN) : 0;
	ret = fc__mem_alloc_contig(dev, (size_t)FC_MAX_CHANNELS * RING_SLOTS *
				   FC_PKT_SIZE, &fab->rings);
	if (ret)
		goto err_free_fab;
	if (!be->chan_ring)
		ret = mem_bus(dev, fab->rings, &fab->rings_bus);
	if (ret)
		goto err_free_rings;
	ret = fc_mem_alloc(dev, (size_t)STAGE_SLOTS * STAGE_SLOT_LEN, 0,
			   &fab->stage);
	if (ret)
		goto err_free_rings;
	fab->stage_free = STAGE_SLOTS >= 32 ? ~0u : (1u << STAGE_SLOTS) - 1;
	fab->chan_events = dev->info.caps & FC_CAP_CHAN_EVENTS;
	fab->rescan = ALL_GROUPS;
	fab->lanes = dev->engines > 1 ? dev->engines : 1;
	if (fab->lanes > FC_DMA_MAX_ENGINES)
		fab->lanes = FC_DMA_MAX_ENGINES;
	for (p = 0; p < FC_DMA_MAX_ENGINES; p++)
		fab->lane[p].node = -1;
	memset(fab->node_lane, -1, sizeof(fab->node_lane));

	dev->fab = fab;
	for (p = 0; p < FC_MAX_CHANNELS && !ret; p++)
		ret = ring_program(dev, p, fab->rings_bus);
	if (ret) {
		/*
		 * The endpoints belong to another open of the board (the
		 * driver's): this one has no fabric, as a board in no cluster.
		 */
		struct fc_mem *rings = fab->rings, *stage = fab->stage;

		pthread_mutex_lock(&dev->lock);
		while (p-- > 1)
			be->chan_ring(dev, p - 1, NULL, 0, 0, NULL);
		pthread_mutex_unlock(&dev->lock);
		fc__fabric_fini(dev);
		fc_mem_free(dev, stage);
		fc_mem_free(dev, rings);
		return ret == -EBUSY ? 0 : ret;
	}
	return 0;

err_free_rings:
	fc_mem_free(dev, fab->rings);
err_free_fab:
	pthread_mutex_destroy(&fab->lock);
	free(fab);
	return ret;
}

static void free_req_list(struct fc_req *r)
{
	while (r) {
		struct fc_req *next = r->next;

		fc__xfers_free(r);
		free(r);
		r = next;
	}
}

static void free_src(struct fc__src *s)
{
	struct fc__msg *m;
	struct fc_req *r;

	while ((m = s->q_head)) {
		s->q_head = m->next;
		free(m);
	}
	while ((r = s->landing)) {
		s->landing = r->rnext;
		free(r);
	}
	free(s->cur);
	free_req_list(s->posted_head);
	free(s);
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
	fc__chan_forget_dev(dev);
	for (p = 0; p < FC_MAX_CHANNELS && !dev->be->chan_ring; p++)
		reg_wr(dev, FC_CHAN_REG(p, FC_CHAN_CTRL), 0);
	for (p = 0; p < FC_MAX_CHANNELS; p++) {
		struct fc__port *pt = fab->ports[p];

		if (!pt)
			continue;
		for (n = 0; n < FC_MAX_NODES; n++) {
			if (!pt->src[n])
				continue;
			free(pt->src[n]->chan);
			free_src(pt->src[n]);
		}
		free(pt);
	}
	free_req_list(fab->sendq_head);
	free_req_list(fab->fly_head);
	free_req_list(fab->pio_head);
	fc__rndv_fini(fab);
	free_req_list(fab->req_cache);
	while (fab->spares)
		fc_mem_free(dev, fab->spare[--fab->spares]);
	pthread_mutex_destroy(&fab->lock);
	free(fab);
	dev->fab = NULL;
}

/* ---- Per-source state ---- */

struct fc__src *fc__src_find(struct fc__fabric *fab, uint32_t port,
			     uint32_t node)
{
	struct fc__port *pt = fab->ports[port];

	return pt ? pt->src[node] : NULL;
}

struct fc__src *fc__src_get(struct fc__fabric *fab, uint32_t port,
			    uint32_t node)
{
	struct fc__port *pt = fab->ports[port];

	if (!pt) {
		pt = calloc(1, sizeof(*pt));
		if (!pt)
			return NULL;
		fab->ports[port] = pt;
	}
	if (!pt->src[node]) {
		pt->src[node] = calloc(1, sizeof(struct fc__src));
		if (pt->src[node])
			pt->src[node]->node = node;
	}
	return pt->src[node];
}

static void posted_pop(struct fc__src *s)
{
	s->posted_head = s->posted_head->next;
	if (!s->posted_head)
		s->posted_tail = NULL;
}

static void deliver(struct fc__port *pt, struct fc__msg *m, struct fc_req *r)
{
	if (m->state != FC__MSG_DATA) {
		/* A rendezvous message: not ready, or in a buffer of its own. */
		fc__rndv_deliver(pt, m, r);
		return;
	}
	r->len = m->len;
	if (m->len > r->cap) {
		r->status = -EMSGSIZE;
	} else {
		memcpy(r->buf, m->data, m->len);
		r->status = 0;
	}
	pt->buffered -= m->len;
	free(m);
}

/*
 * Hand queued messages to posted receives, oldest to oldest. A message
 * announced by rendezvous and not yet cleared is cleared into the receive
 * it meets (fc__rndv_clear); one still landing holds up those behind it.
 */
void fc__src_match(struct fc__fabric *fab, uint32_t port, struct fc__src *s)
{
	struct fc__port *pt = fab->ports[port];

	while (s->q_head && s->posted_head && s->posted_head != s->into) {
		struct fc__msg *m = s->q_head;
		struct fc_req *r = s->posted_head;

		if (m->state == FC__MSG_LANDING)
			break;
		s->q_head = m->next;
		if (!s->q_head)
			s->q_tail = NULL;
		posted_pop(s);
		r->next = NULL;
		if (m->state == FC__MSG_DEFERRED)
			fc__rndv_clear(fab->dev, port, s, m, r);
		else
			deliver(pt, m, r);
	}
	if (fab->rndv_min)
		fc__rndv_land_deferred(fab->dev, port, s);
}

int fc__src_detach_req(struct fc__fabric *fab, uint32_t port,
		       struct fc__src *s)
{
	struct fc__port *pt = fab->ports[port];
	struct fc_req *r = s->into;
	struct fc__msg *m;
	size_t cap;

	if (!r)
		return 0;
	if (!s->drop) {
		cap = s->cur_len > MSG_MIN_CAP ? s->cur_len : MSG_MIN_CAP;
		m = malloc(sizeof(*m) + cap);
		if (!m)
			return -ENOMEM;
		memcpy(m->data, r->buf, s->cur_len);
		m->len = s->cur_len;
		s->cur = (uint8_t *)m;
		s->cur_cap = cap;
		pt->buffered += s->cur_len;
	}
	s->into = NULL;
	return 0;
}

void fc__src_queue(struct fc__src *s, struct fc__msg *m)
{
	m->next = NULL;
	if (s->q_tail)
		s->q_tail->next = m;
	else
		s->q_head = m;
	s->q_tail = m;
}

void fc__src_post(struct fc__fabric *fab, uint32_t port, struct fc__src *s,
		  struct fc_req *r)
{
	req_append(&s->posted_head, &s->posted_tail, r);
	fc__src_match(fab, port, s);
}

/* ---- Draining the receive rings ---- */

static struct fc__msg *cur_msg(struct fc__src *s)
{
	return (struct fc__msg *)s->cur;
}

/* Append @len bytes to the message @s is building. */
static int append(struct fc__port *pt, struct fc__src *s, const uint8_t *data,
		  size_t len)
{
	struct fc__msg *m;
	size_t cap;

	if (s->drop) {
		s->cur_len += len;
		return 0;
	}
	if (s->into) {
		if (s->cur_len + len > s->into->cap)
			s->drop = true;
		else
			memcpy((uint8_t *)s->into->buf + s->cur_len, data, len);
		s->cur_len += len;
		return 0;
	}
	if (s->cur_len + len > FC_CHAN_MAX_MSG) {
		/* Longer than any sender may send: not ours to keep. */
		pt->buffered -= s->cur_len;
		free(s->cur);
		s->cur = NULL;
		s->cur_cap = 0;
		s->drop = true;
		s->cur_len += len;
		return 0;
	}
	if (!s->cur || s->cur_len + len > s->cur_cap) {
		cap = s->cur_cap ? s->cur_cap * 2 : MSG_MIN_CAP;
		m = realloc(s->cur, sizeof(*m) + cap);
		if (!m)
			return -ENOMEM;
		s->cur = (uint8_t *)m;
		s->cur_cap = cap;
	}
	m = cur_msg(s);
	memcpy(m->data + s->cur_len, data, len);
	s->cur_len += len;
	pt->buffered += len;
	return 0;
}

static void finish(struct fc__fabric *fab, uint32_t port, struct fc__src *s)
{
	struct fc_req *r = s->into;
	struct fc__msg *m;

	if (r) {
		posted_pop(s);
		r->next = NULL;
		r->len = s->cur_len;
		r->status = s->drop ? -EMSGSIZE : 0;
	} else if (s->cur && !s->drop) {
		m = cur_msg(s);
		m->len = s->cur_len;
		m->state = FC__MSG_DATA;
		fc__src_queue(s, m);
	} else {
		free(s->cur);
	}
	s->active = false;
	s->drop = false;
	s->into = NULL;
	s->cur = NULL;
	s->cur_len = 0;
	s->cur_cap = 0;
	fc__src_match(fab, port, s);
}

/*
 * The sender's board stopped in the middle of a message (a reset, an
 * error): what came of it is dropped, and a receive it was filling stays
 * posted for the next message.
 */
static void abort_msg(struct fc__fabric *fab, uint32_t port, uint32_t node)
{
	struct fc__src *s = fc__src_find(fab, port, node);

	if (!s || !s->active)
		return;
	if (s->cur && !s->into && !s->drop)
		fab->ports[port]->buffered -= s->cur_len;
	free(s->cur);
	s->cur = NULL;
	s->cur_len = 0;
	s->cur_cap = 0;
	s->into = NULL;
	s->drop = false;
	s->active = false;
	fc__src_match(fab, port, s);
}

#define PKT_RUN_KEY	((FC_PKT_TYPE_MASK << FC_PKT_TYPE_SHIFT) | \
			 (FC_PKT_NODE_MASK << FC_PKT_SRC_SHIFT))

static size_t pkt_len(uint32_t hdr)
{
	return (hdr >> FC_PKT_LEN_SHIFT) & FC_PKT_LEN_MASK;
}

/*
 * Copy the payloads of ring slots @head..@head+n-1 to @dst, known to fit.
 * Full packets (all but a message's last) copy a constant size, which the
 * compiler does in a few wide moves. RETURN VALUE: bytes copied.
 */
static size_t copy_payloads(uint8_t *dst, const struct fc_hw_pkt *ring,
			    uint32_t head, uint32_t n)
{
	const struct fc_hw_pkt *pkt;
	size_t off = 0, len;
	uint32_t k;

	for (k = 0; k < n; k++) {
		pkt = &ring[(head + k) % RING_SLOTS];
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
 * message @s is building, as append() one by one would, in one go: @bytes
 * is their payload. The caller has cut the run so that no packet but the
 * first would cross FC_CHAN_MAX_MSG or start above the port's limit.
 * RETURN VALUE: packets consumed; *err -ENOMEM when one had to stay.
 */
static uint32_t append_run(struct fc__port *pt, struct fc__src *s,
			   const struct fc_hw_pkt *ring, uint32_t head,
			   uint32_t n, size_t bytes, int *err)
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
			s->cur_len += copy_payloads(dst + s->cur_len, ring,
						    head, n);
			return n;
		}
		/* Copy what fits; from the first that does not, drop. */
		for (k = 0; k < n; k++) {
			pkt = &ring[(head + k) % RING_SLOTS];
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
			/* The capacity append() would double its way to. */
			if (!cap)
				cap = MSG_MIN_CAP;
			while (s->cur_len + bytes > cap)
				cap *= 2;
			dst = realloc(s->cur, sizeof(struct fc__msg) + cap);
			if (!dst)
				goto one_by_one;	/* find the packet that stays */
			s->cur = dst;
			s->cur_cap = cap;
		}
		s->cur_len += copy_payloads(cur_msg(s)->data + s->cur_len,
					    ring, head, n);
		pt->buffered += bytes;
		return n;
	}
one_by_one:
	for (k = 0; k < n; k++) {
		pkt = &ring[(head + k) % RING_SLOTS];
		*err = append(pt, s, pkt->payload, pkt_len(le32toh(pkt->hdr)));
		if (*err)
			break;
	}
	return k;
}

/*
 * Take packets from @head on while they form a run: one source, one
 * message, up to its end (EOM) or @tail. The source is looked up once and
 * the payloads appended in one go. Within the run, as packet by packet,
 * none is taken once the port holds FC_CHAN_BUFFERED in library buffers.
 * RETURN VALUE: packets consumed; *stop when out of memory (the packet
 * that could not be taken stays in the ring for later).
 */
static uint32_t take_run(struct fc__fabric *fab, unsigned int port,
			 const struct fc_hw_pkt *ring, uint32_t head,
			 uint32_t tail, bool *stop)
{
	uint32_t hdr = le32toh(ring[head % RING_SLOTS].hdr), h2, n;
	unsigned int type = (hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK;
	unsigned int src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	size_t len = pkt_len(hdr), bytes, l2, lim;
	struct fc__port *pt;
	struct fc__src *s;
	bool queue;
	int err;

	if (type == FC_PKT_T_ABORT) {
		abort_msg(fab, port, src);
		return 1;
	}
	if (type == FC_PKT_T_CTRL && len <= FC_PKT_PAYLOAD) {
		/* The library's own: one packet each. */
		if (hdr & FC_PKT_EOM)
			fc__rndv_ctrl(fab->dev, port, src,
				      ring[head % RING_SLOTS].payload, len);
		return 1;
	}
	if (type != FC_PKT_T_DATA || len > FC_PKT_PAYLOAD)
		return 1;	/* not a channel packet: nothing for us */
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
	/* Into a library buffer: the port's limit and the message's bound. */
	queue = !s->drop && !s->into;
	lim = FC_CHAN_MAX_MSG - (s->cur_len < FC_CHAN_MAX_MSG ?
				 s->cur_len : FC_CHAN_MAX_MSG);
	bytes = len;
	for (n = 1; !(hdr & FC_PKT_EOM) && head + n != tail; n++) {
		h2 = le32toh(ring[(head + n) % RING_SLOTS].hdr);
		if ((h2 & PKT_RUN_KEY) != (hdr & PKT_RUN_KEY))
			break;
		l2 = pkt_len(h2);
		if (l2 > FC_PKT_PAYLOAD)
			break;
		if (queue && (pt->buffered + bytes >= FC_CHAN_BUFFERED ||
			      bytes + l2 > lim))
			break;
		bytes += l2;
		hdr = h2;
	}
	n = append_run(pt, s, ring, head, n, bytes, &err);
	if (err) {
		*stop = true;
		return n;
	}
	if (hdr & FC_PKT_EOM)
		finish(fab, port, s);
	return n;
}

static bool is_ctrl(const struct fc_hw_pkt *pkt)
{
	uint32_t hdr = le32toh(pkt->hdr);

	return ((hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK) == FC_PKT_T_CTRL;
}

static bool drain(struct fc_dev *dev, unsigned int port, uint32_t tail)
{
	struct fc__fabric *fab = dev->fab;
	const struct fc_hw_pkt *ring = (const struct fc_hw_pkt *)
		((const uint8_t *)fab->rings->addr +
		 (size_t)port * RING_SLOTS * FC_PKT_SIZE);
	uint32_t head = fab->head[port];
	bool stop = false;

	while (head != tail && !stop) {
		struct fc__port *pt = fab->ports[port];

		/* Past the limit the ring fills and the board holds back;
		 * control messages are taken still: they free buffers. */
		if (pt && pt->buffered >= FC_CHAN_BUFFERED &&
		    !is_ctrl(&ring[head % RING_SLOTS]))
			break;
		head += take_run(fab, port, ring, head, tail, &stop);
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
		pthread_mutex_lock(&dev->lock);
}

static void regs_release(struct fc_dev *dev)
{
	if (!dev->regs)
		pthread_mutex_unlock(&dev->lock);
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

	if (fab->spares == SPARE_BUFS || fab->spare_bytes + m->len > SPARE_BYTES) {
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

	/* The board found no way to the node: it died or left. */
	if (status == -EHOSTUNREACH && fc__peer_check(dev, r->node))
		status = -EHOSTDOWN;
	r->next = NULL;
	if (r->rndv && fc__rndv_chain_ended(dev, r, &status))
		return;		/* the next step of a rendezvous is queued */
	r->status = status;
	fc__req_release(dev, r);
	if (r->type == FC__REQ_PUT) {
		fab->puts--;
		if (status && !fab->put_error)
			fab->put_error = status;
	}
	if (r->orphan)
		fc__req_free(r);
}

void fc__req_queue(struct fc__fabric *fab, struct fc_req *r)
{
	req_append(&fab->sendq_head, &fab->sendq_tail, r);
	fab->node_chains[r->node]++;
	if (r->type == FC__REQ_PUT)
		fab->puts++;
}

void fc__pio_queue(struct fc__fabric *fab, struct fc_req *r)
{
	req_append(&fab->pio_head, &fab->pio_tail, r);
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
		/* Rendezvous writes may go several to a chain (rndv.c). */
		n = 1;
		ret = r->rndv == FC__RNDV_DATA ?
			fc__rndv_submit(dev, r, (unsigned int)lane, &n) :
			fc__dma_submit_on(dev, (unsigned int)lane, r->xfers,
					  r->n, &r->ticket);
		if (ret == -EAGAIN) {
			full |= 1u << lane;
			goto hold;
		}
		moved = true;
		for (; n; n--) {
			r = *pp;
			*pp = r->next;
			if (fab->sendq_tail == r)
				fab->sendq_tail = prev;
			if (ret) {
				fab->node_chains[r->node]--;
				fc__req_end(dev, r, ret);
				continue;
			}
			r->submitted = true;
			r->lane = (uint8_t)lane;
			lane_take(fab, (unsigned int)lane, r->node);
			req_append(&fab->fly_head, &fab->fly_tail, r);
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

	while ((r = *pp)) {
		ret = fc_dma_poll(dev, r->ticket);
		if (ret == -EINPROGRESS) {
			last = r;
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		moved = true;
		lane_put(fab, r);
		fab->node_chains[r->node]--;
		fc__req_end(dev, r, ret == -ENOENT ? -EIO : ret);
	}
	fab->fly_tail = last;
	return moved;
}

bool fc__progress(struct fc_dev *dev)
{
	struct fc__fabric *fab = dev->fab;
	uint64_t board = 0;
	bool moved;

	moved = submit_queued(dev);
	pthread_mutex_lock(&dev->lock);
	dev->be->progress(dev, &board);
	pthread_mutex_unlock(&dev->lock);
	if (fab->fly_head)
		moved |= reap(dev);
	if (fab->pio_head)
		moved |= reap_pio(dev);
	moved |= drain_all(dev);
	if (fab->sendq_head)
		moved |= submit_queued(dev);
	return moved || board;
}

/* ---- Peers ---- */

/* fc__peer_down() at time @now. */
static bool peer_down_at(struct fc_dev *dev, uint32_t node, uint64_t now)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__peer *p = &fab->peers[node];
	int state;

	if (node == fab->world.rank || node >= FC_MAX_NODES)
		return false;
	if (!p->down_ns && now - p->checked_ns >= PEER_CHECK_NS) {
		p->checked_ns = now;
		pthread_mutex_lock(&dev->lock);
		state = dev->be->node_state ? dev->be->node_state(dev, node) :
					      -EOPNOTSUPP;
		pthread_mutex_unlock(&dev->lock);
		if (state == FC__NODE_EXITED || state == FC__NODE_DEAD)
			p->down_ns = now;
	}
	/* Seen down: packets it sent may still be on the way; drain first. */
	return p->down_ns && now - p->down_ns >= PEER_GRACE_NS;
}

bool fc__peer_down(struct fc_dev *dev, uint32_t node)
{
	return peer_down_at(dev, node, fc__now_ns());
}

/* A peer may come back (closed, then opened its board again). */
static void peer_recheck(struct fc__fabric *fab, uint32_t node)
{
	fab->peers[node].down_ns = 0;
	fab->peers[node].checked_ns = 0;
}

/* ---- Waiting for requests ---- */

void fc__req_free(struct fc_req *r)
{
	struct fc__fabric *fab = r->dev->fab;

	fc__handle_put(r);
	if (r->chan)
		r->chan->reqs--;
	if (r->umem)
		fc_mem_free(r->dev, r->umem);
	fc__xfers_free(r);
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
			fab->node_chains[r->node]--;
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

	if (r->rndv) {
		ret = fc__rndv_withdraw(dev, r, orphan);
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
		sendq_remove(fab, r);
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

/*
 * One look at @r. *now: the time, read here when @r is still going, for
 * the caller to reuse. RETURN VALUE: -EINPROGRESS, or its end (r freed).
 */
static int req_step(struct fc_req *r, size_t *len, bool *moved, uint64_t *now)
{
	struct fc_dev *dev = r->dev;
	int ret;

	*moved = false;
	if (r->status == -EINPROGRESS)
		*moved = fc__progress(dev);
	if (r->status == -EINPROGRESS) {
		*now = fc__now_ns();
		if (!peer_down_at(dev, r->node, *now))
			return -EINPROGRESS;
		ret = withdraw(dev, r, true);
		if (ret < 0)
			return -EINPROGRESS;	/* out of memory: try again */
		if (ret == 0)
			fc__req_free(r);
		return -EHOSTDOWN;
	}
	ret = r->status;
	if (len)
		*len = r->len;
	fc__req_free(r);
	return ret;
}

int fc__req_test(struct fc_req *r, size_t *len)
{
	uint64_t now;
	bool moved;

	return req_step(r, len, &moved, &now);
}

/*
 * One clock read per round serves the peer check, the timeout and the
 * backoff; the timeout counts from the first round that did not end it.
 */
int fc__req_wait(struct fc_req *r, int timeout_ms, size_t *len)
{
	struct fc__fabric *fab = r->dev->fab;
	uint64_t deadline = 0, now;
	unsigned int round = 0;
	bool moved, started = false;
	int ret;

	for (;;) {
		ret = req_step(r, len, &moved, &now);
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
		fc__fab_unlock(fab);
		fc__backoff_dev(r->dev, &round, now);
		fc__fab_lock(fab);
	}
}

/* Before a new request to @node. RETURN VALUE: 0, or -EHOSTDOWN when it
 * has died or left (one that came back is usable again). */
int fc__peer_check(struct fc_dev *dev, uint32_t node)
{
	struct fc__fabric *fab = dev->fab;
	struct fc__peer *p;
	uint64_t now;
	int state;

	if (node == fab->world.rank || !dev->be->node_state ||
	    node >= FC_MAX_NODES)
		return 0;
	/*
	 * Asking the backend may read /proc or enter the kernel: once per
	 * PEER_CHECK_NS is enough for a peer seen alive. A death in between
	 * is caught by the request's wait (fc__peer_down), in bounded time.
	 */
	p = &fab->peers[node];
	now = fc__now_ns();
	if (!p->down_ns && p->checked_ns && now - p->checked_ns < PEER_CHECK_NS)
		return 0;
	pthread_mutex_lock(&dev->lock);
	state = dev->be->node_state(dev, node);
	pthread_mutex_unlock(&dev->lock);
	if (state == FC__NODE_EXITED || state == FC__NODE_DEAD)
		return -EHOSTDOWN;
	peer_recheck(fab, node);
	p->checked_ns = now;
	return 0;
}
