// SPDX-License-Identifier: MIT
/*
 * Delivery in simulated-time order (docs/model.md, "Order of delivery"):
 * conservative parallel discrete event simulation over the cluster's
 * shared memory.
 *
 * A board with a model takes the packets waiting in its ejection ring in
 * order of arrival, not of host time: those that arrived by its present
 * whenever it looks; a later one only while its host waits (in simulated
 * time the host would sit idle until then), and only once nothing can
 * still arrive before it: every other board has promised to send nothing
 * earlier (its clock, or "waiting" while its host waits and has nothing
 * of its own to send), and every packet still on its way anywhere in the
 * cluster arrives later. The board whose next packet is the earliest of
 * the cluster can always go on, so waiting boards never hold each other
 * for good; a board held for VT_FORCE_NS of host time (a peer that neither
 * sends nor waits through its board, a host stopped in a debugger) takes
 * its next packet anyway.
 *
 * A host waits when its library says so (fcemu_host_waits()), or when it
 * looked VT_LOOKS times in a row with nothing to take and wrote no PIO
 * message and rang no doorbell between, or (a host whose library never
 * said so) sleeps in fcemu_cluster_wait(). Where the library says so, a
 * loop of its that peeks between full looks must not count as waiting
 * before its next full look does: VT_LIBLOOKS looks then, for a
 * program's own polling loop. Its board may still
 * send (a chain running): it then promises that chain's next departure.
 *
 * Rings stop senders in host time: a full ejection ring whose packets
 * cannot be taken yet may hold back an earlier one, or the board whose
 * promise they wait for. Its packets then move aside (spill()), still
 * waiting, and are taken in order with the rest.
 */
#include <endian.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster_internal.h"

#include "topology.h"

#define VT_FORCE_NS (1000ull * 1000 * 1000)
#define VT_TRIES    4  /* looks at the rings before giving up this time */
#define VT_LOOKS    64 /* looks with nothing to take: the host waits */
/* packets a board may hold spilled out of its ejection ring at most: two
 * rings' worth, so that the emulated fabric stops senders about where it
 * did (what a sleeping receiver's sender gets through, test_channels) */
#define VT_SPILL_MAX (2u * CL_RING_SLOTS)
/* looks with nothing to take where the library says when its host waits */
#define VT_LIBLOOKS 1024

_Static_assert(FC_PKT_NODE_MASK + 1 == FC_MAX_NODES,
	       "a packet names any board, and only those");

static uint64_t host_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Hops from @a to @b, asked of the topology once. */
static unsigned int hops(struct fcemu_cluster *c, unsigned int a,
			 unsigned int b)
{
	unsigned int h;

	if (!c->vt_hops[a][b]) {
		h = fc_topo_hops(&c->topo, a, b);
		c->vt_hops[a][b] = (uint8_t)(h < 254 ? h + 1 : 255);
	}
	return c->vt_hops[a][b] - 1u;
}

static unsigned int slot_node(const struct cl_slot *s, unsigned int shift)
{
	return (le32toh(s->pkt.hdr) >> shift) & FC_PKT_NODE_MASK;
}

/* A DATA packet with more of its message behind it. */
static bool slot_mid(const struct cl_slot *s)
{
	uint32_t hdr = le32toh(s->pkt.hdr);

	return ((hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK) ==
		       FC_PKT_T_DATA &&
	       !(hdr & FC_PKT_EOM);
}

void fcemu__vt_spill_free(struct fcemu_cluster *c, unsigned int node)
{
	struct cl_vt_spill *sp = &c->vt_spill[node];

	free(sp->slot);
	free(sp->tmp);
	free(sp->key);
	free(sp->arr);
	free(sp->ord);
	free(sp->sid);
	free(sp->src);
	memset(sp, 0, sizeof(*sp));
}

/* Room for @need spilled packets (and the scratch for them and a ring).
 * RETURN VALUE: false past VT_SPILL_MAX or out of memory. */
static bool spill_room(struct cl_vt_spill *sp, uint32_t need)
{
	uint32_t cap = sp->cap ? sp->cap : 1024;
	size_t all;

	if (need > VT_SPILL_MAX)
		return false;
	if (sp->off && sp->off + need > sp->cap) {
		memmove(sp->slot, sp->slot + sp->off,
			sp->n * sizeof(*sp->slot));
		sp->off = 0;
	}
	if (need <= sp->cap)
		return true;
	while (cap < need)
		cap *= 2;
	all = (size_t)cap + CL_RING_SLOTS;
#define VT_GROW(p_, n_)                                         \
	do {                                                    \
		void *q_ = realloc((p_), (n_) * sizeof(*(p_))); \
		if (!q_)                                        \
			return false;                           \
		(p_) = q_;                                      \
	} while (0)
	VT_GROW(sp->slot, cap);
	VT_GROW(sp->tmp, all);
	VT_GROW(sp->key, all);
	VT_GROW(sp->arr, all);
	VT_GROW(sp->ord, all);
	VT_GROW(sp->sid, all);
	VT_GROW(sp->src, all);
#undef VT_GROW
	sp->cap = cap;
	return true;
}

/* The @i-th packet waiting for board @node: the spilled ones first, then
 * its ejection ring's from @head on. */
static struct cl_slot *waiting_slot(struct fcemu_cluster *c, unsigned int node,
				    struct cl_ring *r, uint32_t head,
				    uint32_t i)
{
	struct cl_vt_spill *sp = &c->vt_spill[node];

	if (i < sp->n)
		return &sp->slot[sp->off + i];
	return &r->slot[(head + i - sp->n) % CL_RING_SLOTS];
}

/* The packets on their way to a board: the earliest arrival of them
 * (CL_VT_WAITING: none), and a bit for each source they come from. */
struct vt_mine {
	uint64_t first, from;
};

static bool lbts(struct fcemu_cluster *c, unsigned int me,
		 const struct fcemu_vtime *vt, uint32_t skip, uint64_t *lb,
		 unsigned int *lb_src, struct vt_mine *mine);

/*
 * Board @node's ejection ring is full and it can take none of its packets
 * yet, and packets on their way here wait behind it: an earlier one may
 * be among them, or come from a board they stop (links and rings stop
 * senders in host time, not in simulated time). Then the @used packets
 * of the ring from @head on move out of it, still waiting, before
 * whatever comes into it next (the board's promise already covers them).
 * RETURN VALUE: false if they did not move.
 */
static bool spill(struct fcemu_cluster *c, unsigned int node, struct cl_ring *r,
		  uint32_t head, uint32_t used)
{
	struct cl_vt_spill *sp = &c->vt_spill[node];
	struct vt_mine mine;
	unsigned int lb_src;
	uint64_t lb;
	uint32_t i;

	if (!lbts(c, node, c->vt[node], used, &lb, &lb_src, &mine) ||
	    !mine.from)
		return false;
	if (!spill_room(sp, sp->n + used))
		return false;
	for (i = 0; i < used; i++)
		sp->slot[sp->off + sp->n + i] =
			r->slot[(head + i) % CL_RING_SLOTS];
	sp->n += used;
	cl_st(&r->head, head + used);
	return true;
}

void fcemu__vt_promise(struct fcemu_cluster *c, unsigned int node, uint64_t lb)
{
	uint64_t *p = &c->hdr->node[node].vt_lb, old;
	unsigned int n;

	if (__atomic_load_n(p, __ATOMIC_RELAXED) == lb)
		return;
	old = __atomic_exchange_n(p, lb, __ATOMIC_SEQ_CST);
	if (lb != CL_VT_WAITING || old == CL_VT_WAITING)
		return;
	/* A board held by our promise may go on now. */
	for (n = 0; n < c->nodes; n++)
		if (n != node &&
		    __atomic_load_n(&c->hdr->node[n].vt_on, __ATOMIC_RELAXED))
			fcemu__cluster_ring_fenced(c, n);
}

struct vt_idx {
	uint32_t head, tail;
};

static void snap(struct fcemu_cluster *c, struct vt_idx *x)
{
	unsigned int rings = CL_RINGS(c->ports), n, r;
	struct cl_ring *ring;

	for (n = 0; n < c->nodes; n++)
		for (r = 0; r < rings; r++, x++) {
			ring = cl_ring(c, n, r);
			x->head = cl_ld(&ring->head);
			x->tail = cl_ld(&ring->tail);
		}
}

/*
 * A packet that board @n is still to take arrives there at @t or after
 * the last its ejection port took (one packet at a time, in the order
 * taken): without that floor a stream queued at another board looks
 * earlier than it can be, and two boards may each hold their packets
 * for the other's.
 */
static uint64_t eject_floor(struct fcemu_cluster *c, unsigned int n, uint64_t t)
{
	uint64_t floor =
		__atomic_load_n(&c->hdr->node[n].vt_eject, __ATOMIC_ACQUIRE);

	return floor > t ? floor : t;
}

/*
 * The earliest time anything but the first @skip packets of @me's
 * ejection ring can arrive anywhere (ps) into *@lb: the other boards'
 * promises, and the arrival of every packet on its way, those that came
 * into our ring since we looked included; into *@lb_src the lowest
 * source that can send a packet arriving then (what a board sends after
 * our packet from it comes behind it); into @mine (if not NULL) what is
 * on its way to @me. RETURN VALUE: false if packets kept moving while we
 * looked (ask again later).
 */
static bool lbts(struct fcemu_cluster *c, unsigned int me,
		 const struct fcemu_vtime *vt, uint32_t skip, uint64_t *lb,
		 unsigned int *lb_src, struct vt_mine *mine)
{
	static __thread struct vt_idx a[FC_MAX_NODES * CL_RINGS(FC_MAX_PORTS)],
		b[FC_MAX_NODES * CL_RINGS(FC_MAX_PORTS)];
	unsigned int rings = CL_RINGS(c->ports), n, r, i, k, tries, src, dst;
	const struct cl_slot *s;
	struct cl_node *nd;
	unsigned int min_src, from;
	struct vt_mine to_me;
	uint64_t min, t;
	uint32_t used;

#define VT_MIN(t_, from_)                                               \
	do {                                                            \
		if ((t_) < min || ((t_) == min && (from_) < min_src)) { \
			min = (t_);                                     \
			min_src = (from_);                              \
		}                                                       \
	} while (0)
	for (tries = 0; tries < VT_TRIES; tries++) {
		snap(c, a);
		min = CL_VT_WAITING;
		min_src = UINT_MAX;
		to_me.first = CL_VT_WAITING;
		to_me.from = 0;
		for (n = 0; n < c->nodes; n++) {
			nd = &c->hdr->node[n];
			if (n == me || cl_ld(&nd->state) != FCEMU_NODE_ALIVE)
				continue;
			/* our own process's other boards wait with us */
			if (c->vt[n])
				continue;
			/* claimed, its clock not yet there: it may send at 0 */
			if (!__atomic_load_n(&nd->vt_on, __ATOMIC_ACQUIRE)) {
				VT_MIN(0, 0u);
				continue;
			}
			t = __atomic_load_n(&nd->vt_lb, __ATOMIC_SEQ_CST);
			/* whatever it sends, or makes others send, comes
			 * here by its path at least */
			if (t != CL_VT_WAITING) {
				t = fcemu__vt_at(vt, hops(c, n, me), t, 0);
				VT_MIN(t, n);
			}
		}
		for (n = 0, i = 0; n < c->nodes; n++) {
			for (r = 0; r < rings; r++, i++) {
				used = a[i].tail - a[i].head;
				if (used > CL_RING_SLOTS)
					used = CL_RING_SLOTS;
				/* ours: those come in since we looked */
				k = n == me && r == CL_RING_EJECT ? skip : 0;
				for (; k < used; k++) {
					s = &cl_ring(c, n, r)
						     ->slot[(a[i].head + k) %
							    CL_RING_SLOTS];
					src = slot_node(s, FC_PKT_SRC_SHIFT);
					dst = slot_node(s, FC_PKT_DST_SHIFT);
					t = s->t;
					from = src < c->nodes ? src : 0;
					/* its arrival; elsewhere, what its
					 * taker sends comes on from there */
					if (src < c->nodes && dst < c->nodes)
						t = fcemu__vt_at(
							vt, hops(c, src, dst),
							t, 0);
					if (dst < c->nodes && dst != me)
						t = eject_floor(c, dst, t);
					if (dst != me && dst < c->nodes) {
						t = fcemu__vt_at(
							vt, hops(c, dst, me), t,
							0);
						from = dst;
					}
					if (dst == me && src < c->nodes) {
						to_me.from |= 1ull << src;
						if (t < to_me.first)
							to_me.first = t;
					}
					VT_MIN(t, from);
				}
			}
		}
		snap(c, b);
		if (!memcmp(a, b, (size_t)c->nodes * rings * sizeof(a[0]))) {
			*lb = min;
			*lb_src = min_src;
			if (mine)
				*mine = to_me;
			return true;
		}
	}
#undef VT_MIN
	return false;
}

void fcemu__vt_resume(struct fcemu_cluster *c, unsigned int node)
{
	c->vt_resumed++;
	c->vt_looks[node] = 0;
	fcemu__vt_promise(c, node, c->vt[node]->now);
}

void fcemu__vt_acts(struct fcemu_cluster *c, unsigned int node)
{
	const struct fcemu_vtime *vt = c->vt[node];

	c->vt_unseen[node] = true;
	if (vt && __atomic_load_n(&c->hdr->node[node].vt_lb, __ATOMIC_RELAXED) >
			  vt->now)
		fcemu__vt_resume(c, node);
}

void fcemu__vt_event(struct fcemu_cluster *c, unsigned int node)
{
	c->vt_unseen[node] = true;
	c->vt_looks[node] = 0;
}

void fcemu__vt_waits(struct fcemu_cluster *c, unsigned int node)
{
	/* A wait loop says so when a look moved nothing of its own; one
	 * that looked before its board took packets, finished a send or a
	 * chain sees that on its next look and may act, without a packet:
	 * not waiting yet. */
	c->vt_hints[node] = true;
	if (c->vt_unseen[node]) {
		c->vt_unseen[node] = false;
		c->vt_looks[node] = 0;
		return;
	}
	/* until it takes a packet or sends */
	c->vt_looks[node] = VT_LIBLOOKS;
}

/* Put the @used packets waiting (waiting_slot()) in order of arrival, a
 * source's own packets kept in their order. */
static void sort_ring(struct fcemu_cluster *c, unsigned int node,
		      struct cl_ring *r, uint32_t head, uint32_t used)
{
	static __thread struct cl_slot tmp_ring[CL_RING_SLOTS];
	static __thread uint64_t key_ring[CL_RING_SLOTS];
	static __thread uint32_t ord_ring[CL_RING_SLOTS];
	static __thread uint8_t sid_ring[CL_RING_SLOTS];
	struct cl_vt_spill *sp = &c->vt_spill[node];
	struct cl_slot *tmp = sp->n ? sp->tmp : tmp_ring;
	uint64_t *key = sp->n ? sp->key : key_ring;
	uint32_t *ord = sp->n ? sp->ord : ord_ring;
	uint8_t *sid = sp->n ? sp->src : sid_ring;
	uint64_t last[FC_PKT_NODE_MASK + 1] = { 0 };
	const struct fcemu_vtime *vt = c->vt[node];
	uint32_t first = head - sp->n;
	unsigned int i, j, src;
	struct cl_slot *s;
	bool moved = false;
	uint32_t o;

	for (i = 0; i < used; i++) {
		s = waiting_slot(c, node, r, head, i);
		src = slot_node(s, FC_PKT_SRC_SHIFT);
		key[i] = src < c->nodes ?
				 fcemu__vt_at(vt, hops(c, src, node), s->t, 0) :
				 0;
		if (key[i] < last[src])
			key[i] = last[src];
		last[src] = key[i];
		sid[i] = (uint8_t)src;
		ord[i] = (uint16_t)i;
	}
	/* stable: few packets, mostly in order already; a tie goes to the
	 * lower source, whatever order the host brought them in */
	for (i = 1; i < used; i++) {
		o = ord[i];
		for (j = i; j > 0 && (key[ord[j - 1]] > key[o] ||
				      (key[ord[j - 1]] == key[o] &&
				       sid[ord[j - 1]] > sid[o]));
		     j--)
			ord[j] = ord[j - 1];
		ord[j] = o;
		moved |= j != i;
	}
	if (!moved)
		return;
	for (i = 0; i < used; i++)
		tmp[i] = *waiting_slot(c, node, r, head, ord[i]);
	for (i = 0; i < used; i++) {
		s = waiting_slot(c, node, r, head, i);
		*s = tmp[i];
		s->seq = first + i;
	}
}

/* No live board of the cluster is another process's. */
static bool alone(struct fcemu_cluster *c, unsigned int me)
{
	int32_t pid = c->hdr->node[me].pid;
	unsigned int n;

	for (n = 0; n < c->nodes; n++)
		if (n != me &&
		    cl_ld(&c->hdr->node[n].state) == FCEMU_NODE_ALIVE &&
		    __atomic_load_n(&c->hdr->node[n].pid, __ATOMIC_RELAXED) !=
			    pid)
			return false;
	return true;
}

/* The host may act now: its promise is its clock, @at. */
static void running(struct fcemu_cluster *c, unsigned int node, uint64_t at)
{
	__atomic_fetch_and(&c->vt_idle, ~(1ull << node), __ATOMIC_RELAXED);
	c->vt_hold_ns[node] = 0;
	c->vt_looks[node] = 0;
	c->vt_unseen[node] = true; /* packets its host may act on */
	fcemu__vt_promise(c, node, at);
}

/* Does a packet from @src arriving @at go before anything arriving at
 * @lb from @lb_src or later? A tie goes to the lower source; a board's
 * own packets keep their order. */
static bool before(uint64_t at, unsigned int src, uint64_t lb,
		   unsigned int lb_src)
{
	return at < lb || (at == lb && src <= lb_src);
}

/*
 * Can nothing not among the first @skip packets of the ejection ring
 * still arrive before the packet from @src arriving @at (before())?
 * *@lb, *@lb_src: the earliest anything else can arrive, as far as we
 * know. The proof is kept: the other boards' promises only rise.
 */
static bool proven(struct fcemu_cluster *c, unsigned int node,
		   const struct fcemu_vtime *vt, uint64_t at, unsigned int src,
		   uint32_t skip, uint64_t *lb, unsigned int *lb_src)
{
	uint64_t *safe = &c->vt_safe[node];
	unsigned int *safe_src = &c->vt_safe_src[node];

	/* what we knew, if packets keep moving */
	*lb = *safe;
	*lb_src = *safe_src;
	if (before(at, src, *safe, *safe_src))
		return true;
	if (!lbts(c, node, vt, skip, lb, lb_src, NULL))
		return false;
	if (!before(*lb, *lb_src, *safe, *safe_src)) {
		*safe = *lb;
		*safe_src = *lb_src;
	}
	return before(at, src, *lb, *lb_src);
}

/* What moves in the cluster, in one word: every ring's indices and every
 * board's promise. */
static uint64_t cluster_sig(struct fcemu_cluster *c)
{
	unsigned int rings = CL_RINGS(c->ports), n, r;
	uint64_t h = 14695981039346656037ull;
	struct cl_ring *ring;

	for (n = 0; n < c->nodes; n++) {
		h = (h ^ __atomic_load_n(&c->hdr->node[n].vt_lb,
					 __ATOMIC_RELAXED)) *
		    1099511628211ull;
		for (r = 0; r < rings; r++) {
			ring = cl_ring(c, n, r);
			h = (h ^ cl_ld(&ring->head)) * 1099511628211ull;
			h = (h ^ cl_ld(&ring->tail)) * 1099511628211ull;
		}
	}
	return h;
}

/*
 * Must the earliest waiting packet (arriving @at) wait for what may still
 * come before it? Not with the ring @full and no more room to spill it
 * (what may come before it may be stuck behind the ring: link
 * back-pressure is host time, not simulated), nor once nothing in the cluster moved for VT_FORCE_NS of
 * host time (said once): a host that waits outside the library. A
 * loaded host only slows the others down.
 * *@lb, *@lb_src: the earliest anything else can still arrive.
 */
static bool held(struct fcemu_cluster *c, unsigned int node,
		 struct fcemu_vtime *vt, uint64_t at, unsigned int src,
		 uint32_t skip, bool full, uint64_t *lb, unsigned int *lb_src)
{
	uint64_t t, sig;

	*lb = at;
	*lb_src = src;
	if (full || proven(c, node, vt, at, src, skip, lb, lb_src))
		return false;
	*lb = at;
	*lb_src = src;
	t = host_ns();
	if (!c->vt_hold_ns[node]) {
		c->vt_hold_ns[node] = t;
		c->vt_hold_sig[node] = cluster_sig(c);
		return true;
	}
	if (t - c->vt_hold_ns[node] < VT_FORCE_NS)
		return true;
	/* something moved meanwhile: hold on */
	sig = cluster_sig(c);
	if (sig != c->vt_hold_sig[node]) {
		c->vt_hold_ns[node] = t;
		c->vt_hold_sig[node] = sig;
		return true;
	}
	if (!c->vt_forced++)
		fprintf(stderr,
			"fpgacomm: board %u: a packet held %llu ms for "
			"simulated-time order, nothing moving, taken "
			"anyway: times may differ from run to run\n",
			node, VT_FORCE_NS / 1000000ull);
	return false;
}

/* How many of the @n packets first in order (from @sid, arriving @arr)
 * nothing can still come before (@skip, @full: as held()'s). */
static uint32_t present(struct fcemu_cluster *c, unsigned int node,
			const struct fcemu_vtime *vt, const uint64_t *arr,
			const uint8_t *sid, uint32_t n, uint32_t skip,
			bool full)
{
	unsigned int lb_src;
	uint32_t i, m = 0;
	uint64_t lb;

	for (i = 1; i < n; i++) /* the latest of them */
		if (!before(arr[i], sid[i], arr[m], sid[m]))
			m = i;
	/* a full ring: what may come before them may be stuck behind it */
	if (full || proven(c, node, vt, arr[m], sid[m], skip, &lb, &lb_src))
		return n;
	for (i = 0; i < n - 1; i++)
		if (!before(arr[i], sid[i], lb, lb_src))
			break;
	return i;
}

/*
 * Taken in order, the packets before it: when they arrive as
 * fcemu__vt_arrive() will have them (a link and the ejection port carry
 * one at a time, a link's credits), to tell which arrived by the present.
 */
struct vt_taking {
	uint64_t last[FC_MAX_NODES];
	uint64_t in[FC_MAX_PORTS + 1];
	uint32_t on[FC_MAX_PORTS + 1]; /* taken by each link */
	uint64_t eject;
};

/* The arrival of the next packet taken, or 0 if not known yet (its link
 * not asked, more than its credits by one link). */
static uint64_t taking(const struct fcemu_vtime *vt, struct vt_taking *tk,
		       unsigned int src, unsigned int h, uint64_t t)
{
	unsigned int in = vt->in[src];
	const struct fcemu_vt_credits *cr;
	uint64_t at, credit = 0;
	bool link;

	if (in == 0xff || vt->hops[src] == 0xff)
		return 0;
	link = h && in && in <= FC_MAX_PORTS;
	if (link && vt->credits) {
		cr = &vt->rx_cr[in];
		if (tk->on[in] >= vt->credits)
			return 0;
		if (cr->n + tk->on[in] >= vt->credits)
			credit = cr->back[(cr->n + tk->on[in]) % vt->credits];
	}
	at = fcemu__vt_arrival(vt, h, link, t, tk->last[src],
			       link ? tk->in[in] : 0, credit, tk->eject);
	tk->last[src] = tk->eject = at;
	if (link) {
		tk->in[in] = at;
		tk->on[in]++;
	}
	return at;
}

/*
 * Each waiting packet's arrival into @arr (its source into @sid), behind
 * the one before it from its source. RETURN VALUE: how many of the first
 * arrived by the board's present, as they will be taken: a packet taken
 * as arrived moves its clock no further.
 */
static uint32_t arrivals(struct fcemu_cluster *c, unsigned int node,
			 struct cl_ring *r, uint32_t head, uint32_t used,
			 uint64_t *arr, uint8_t *sid)
{
	static __thread struct vt_taking tk;
	struct fcemu_vtime *vt = c->vt[node];
	uint64_t last[FC_PKT_NODE_MASK + 1];
	const struct cl_slot *s;
	unsigned int src, h;
	uint32_t i, n = 0;
	uint64_t at;

	memcpy(last, vt->rx_last, sizeof(last));
	memcpy(tk.last, vt->rx_last, sizeof(tk.last));
	memcpy(tk.in, vt->rx_in, sizeof(tk.in));
	memset(tk.on, 0, sizeof(tk.on));
	tk.eject = vt->rx_eject;
	for (i = 0; i < used; i++) {
		s = waiting_slot(c, node, r, head, i);
		src = slot_node(s, FC_PKT_SRC_SHIFT);
		h = src < c->nodes ? hops(c, src, node) : 0;
		arr[i] = src < c->nodes ?
				 fcemu__vt_at(vt, h, s->t, last[src]) :
				 0; /* no such source: dropped at once */
		sid[i] = (uint8_t)(src < c->nodes ? src : 0);
		if (src < c->nodes)
			last[src] = arr[i];
		if (n < i)
			continue;
		at = src < c->nodes ? taking(vt, &tk, src, h, s->t) : 0;
		if (src < c->nodes ? at && at + vt->rx <= vt->now :
				     arr[i] + vt->rx <= vt->now)
			n++;
	}
	return n;
}

/*
 * The packets waiting for board @node, in order: *@ring of them in its
 * ejection ring from *@head on (those written for their index), behind
 * those it spilled; their arrivals into *@arr, their sources into *@sid.
 * *@full: the ring is full and cannot be spilled (spill()).
 * RETURN VALUE: how many wait in all; *@n: how many of the first
 * arrived by the board's present. UINT_MAX: its ring is damaged.
 */
static uint32_t waiting_pkts(struct fcemu_cluster *c, unsigned int node,
			     uint32_t *head, uint32_t *ring, uint64_t **arr,
			     uint8_t **sid, uint32_t *n, bool *full)
{
	static __thread uint64_t arr_ring[CL_RING_SLOTS];
	static __thread uint8_t sid_ring[CL_RING_SLOTS];
	struct cl_vt_spill *sp = &c->vt_spill[node];
	struct cl_ring *r = cl_ring(c, node, CL_RING_EJECT);
	uint32_t used, i;

	*head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	used = cl_ld(&r->tail) - *head;
	if (used > CL_RING_SLOTS)
		return UINT_MAX; /* damaged: the ejection path repairs it */
	for (i = 0; i < used; i++)
		if (r->slot[(*head + i) % CL_RING_SLOTS].seq != *head + i)
			break;
	*ring = i; /* the rest behind a damaged slot waits */
	/* a full ring is spilled rather than taken out of order, while the
	 * spill has room (made now: the scratch below may move) */
	*full = i >= CL_RING_SLOTS && !spill_room(sp, sp->n + i);
	used = sp->n + i;
	*arr = sp->n ? sp->arr : arr_ring;
	*sid = sp->n ? sp->sid : sid_ring;
	sort_ring(c, node, r, *head, used);
	*n = arrivals(c, node, r, *head, used, *arr, *sid);
	return used;
}

/* Whether board @node's host waits, counting this look with nothing to
 * take (@dirty: it injected packets nobody sees yet). */
static bool host_waits(struct fcemu_cluster *c, unsigned int node, bool dirty)
{
	/* a host that sleeps has looked, unless its library says when */
	unsigned int looks = c->vt_hints[node] ? VT_LIBLOOKS : VT_LOOKS;
	bool waiting;

	if (!c->vt_hints[node] &&
	    (__atomic_load_n(&c->vt_idle, __ATOMIC_RELAXED) & (1ull << node)))
		c->vt_looks[node] = looks;
	waiting = !dirty && c->vt_looks[node] >= looks;
	if (c->vt_looks[node] < looks)
		c->vt_looks[node]++;
	return waiting;
}

/* If some of the @used packets waiting (arriving @arr) are spilled (or
 * about to be: the @ring packets of the ejection ring fill it), the
 * earliest the board may answer them: the earliest arrival, no sooner
 * than its present. Else CL_VT_WAITING. Others cannot see spilled
 * packets: the board's promise covers what it may send once it takes
 * them. */
static uint64_t spill_floor(struct fcemu_cluster *c, unsigned int node,
			    const uint64_t *arr, uint32_t used, uint32_t ring)
{
	uint64_t floor = CL_VT_WAITING;
	uint32_t i;

	if (!c->vt_spill[node].n && ring < CL_RING_SLOTS)
		return floor;
	for (i = 0; i < used; i++)
		if (arr[i] < floor)
			floor = arr[i];
	return floor > c->vt[node]->now ? floor : c->vt[node]->now;
}

unsigned int fcemu__vt_order(struct fcemu_cluster *c, unsigned int node,
			     uint64_t (*idle_lb)(void *arg), void *arg)
{
	struct fcemu_vtime *vt = c->vt[node];
	struct cl_ring *r = cl_ring(c, node, CL_RING_EJECT);
	uint64_t at, now = vt->now, lb, own, *arr;
	uint32_t head, ring, used, i, n;
	bool dirty, mid, full;
	unsigned int lb_src;
	uint8_t *sid;

	if (c->remote)
		return UINT_MAX; /* boards elsewhere keep no promises here */
	if (alone(c, node))
		return UINT_MAX; /* one host: program order is the order */
	__atomic_store_n(&c->hdr->node[node].vt_eject, vt->rx_eject,
			 __ATOMIC_RELEASE);
	/* packets injected, not yet published: nobody else sees them */
	dirty = c->inject_dirty & (1ull << node);
	if (vt->acts != c->vt_sent[node]) {
		c->vt_sent[node] = vt->acts; /* it sent: it does not wait */
		c->vt_looks[node] = 0;
	}
	used = waiting_pkts(c, node, &head, &ring, &arr, &sid, &n, &full);
	if (used == UINT_MAX)
		return UINT_MAX;
	/*
	 * Those that arrived by the present: the host sees them and may act.
	 * Taken once nothing can still come before them, so that a board
	 * takes its packets in one order whatever the host's timing.
	 */
	if (n && (n = present(c, node, vt, arr, sid, n, ring, full))) {
		running(c, node, now);
		return n;
	}
	if (!host_waits(c, node, dirty)) {
		fcemu__vt_promise(c, node, now);
		c->vt_hold_ns[node] = 0;
		goto none;
	}
	/*
	 * A board that still sends while its host waits (a chain running,
	 * an ack owed) promises its next departure, and takes a packet only
	 * if it arrives by then: what it sends is not delayed by it.
	 */
	own = idle_lb(arg);
	if (own != CL_VT_WAITING && own < now)
		own = now;
	lb = spill_floor(c, node, arr, used, ring);
	fcemu__vt_promise(c, node, lb < own ? lb : own);
	if (!used)
		return 0;
	at = arr[0]; /* the earliest waiting */
	if (own != CL_VT_WAITING && at + vt->rx > own) {
		c->vt_hold_ns[node] = 0;
		goto none;
	}
	/* The earliest packet waiting, if nothing can come before it. */
	if (held(c, node, vt, at, sid[0], ring, full, &lb, &lb_src))
		goto none;
	/*
	 * It, and those behind it that arrive by then; and behind a packet
	 * in the middle of a message (nothing a host acts on), the next.
	 * Each only if nothing can come before it either.
	 */
	if (own != CL_VT_WAITING && lb + vt->rx > own) {
		lb = own - vt->rx;
		lb_src = 0;
	}
	if (now < at + vt->rx)
		now = at + vt->rx;
	for (i = 1; i < used; i++) {
		mid = slot_mid(waiting_slot(c, node, r, head, i - 1));
		at = arr[i];
		if (at + vt->rx > now && !mid)
			break;
		if (!before(at, sid[i], lb, lb_src))
			break;
		if (at + vt->rx > now)
			now = at + vt->rx;
	}
	/* its clock as it is: a packet not taken after all moves nothing */
	running(c, node, vt->now);
	return i;
none:
	/* nothing to take yet: a full ring makes room for what may come
	 * before its packets (the promise published covers them); one that
	 * cannot takes its earliest packet anyway, as below */
	if (ring >= CL_RING_SLOTS && !full)
		spill(c, node, r, head, ring);
	if (!full)
		return 0;
	running(c, node, vt->now);
	return 1;
}
