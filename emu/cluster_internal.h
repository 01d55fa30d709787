/* SPDX-License-Identifier: MIT */
/*
 * Private to emu/: the layout of a cluster's shared object (docs/fabric.md,
 * "The emulated cluster") and the pieces its files share.
 *
 * Every ring has exactly one producer and one consumer, each either a
 * router (under that board's router lock, in any process) or the board's
 * own process, so ring indices need only acquire/release atomics:
 *   injection ring of n:   n's process        -> n's router
 *   link input ring of n:  the peer's router  -> n's router
 *   ejection ring of n:    n's router         -> n's process
 */
#ifndef FCEMU_CLUSTER_INTERNAL_H
#define FCEMU_CLUSTER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric.h"
#include "fcemu.h"
#include "vtime.h"

#define CL_MAGIC      0x46434c55u /* "FCLU", written last by the creator */
#define CL_LAYOUT     16	  /* bump on any change below */
#define CL_MODE	      0600	  /* the object's mode: its owner only */
#define CL_RING_SLOTS 256	  /* per ring: 256 x 64 B = 16 KiB of packets */
#define CL_NO_PEER    0xffu

/* Rings of one board: local port first, then link port p, VC v. */
#define CL_RING_INJECT	    0
#define CL_RING_EJECT	    1
#define CL_RING_LINK(p, vc) (2 + 2 * ((p)-1) + (vc))
#define CL_RINGS(ports)	    (2 + 2 * (ports))

struct cl_slot {
	struct fc_hw_pkt pkt;
	/*
	 * The ring index the slot was written at: on links the link
	 * sequence number; on every ring what a consumer checks, so that a
	 * slot not written for this index (behind a forged tail) is never
	 * taken as a packet.
	 */
	uint32_t seq;
	union {
		uint32_t crc; /* link rings: the CRC32C of pkt */
		/*
		 * Ejection ring: the link port + 1 an express run
		 * (express.c) arrived by, 0 for what a router put there:
		 * that link's RX_PKTS is counted as the board takes the
		 * packet, by its own process, on a line of its own. In the
		 * slot, beside seq, on a line the board reads anyway: a line
		 * apart would cross between the cores at every run.
		 */
		uint32_t tag;
	};
	uint64_t t; /* virtual time the packet left its board, ps */
};

/* fcemu_cluster_eject_ok() finds seq right after the packet. */
_Static_assert(offsetof(struct cl_slot, seq) == sizeof(struct fc_hw_pkt),
	       "a slot's seq follows its packet");
/* fcemu_cluster_vt_arrival() finds the slot from its packet. */
_Static_assert(offsetof(struct cl_slot, pkt) == 0,
	       "a slot starts with its packet");

/*
 * Packets a board with a model moved out of its full ejection ring
 * without taking them (emu/vtorder.c): @n slots from @off on, in the
 * ring's order, logically the ring's slots just before its head (their
 * seq is that index), taken before the ring's. Room for @cap, and
 * vtorder.c's scratch for them and a ring's together.
 */
struct cl_vt_spill {
	struct cl_slot *slot;
	uint32_t off, n, cap;
	struct cl_slot *tmp;
	uint64_t *key, *arr;
	uint32_t *ord;
	uint8_t *sid, *src;
};

/* Producer and consumer index on separate cache lines: no false sharing. */
struct cl_ring {
	uint32_t head __attribute__((aligned(64))); /* consumer's */
	uint32_t tail __attribute__((aligned(64))); /* producer's */
	struct cl_slot slot[CL_RING_SLOTS] __attribute__((aligned(64)));
};

/*
 * A burst being applied by the board that owns this entry, shared out in
 * chunks with the sending board's process (emu/burst.c). @claim is the
 * job's sequence number (high half) and the next chunk to take (low half;
 * CL_JOB_CLOSED while the owner rewrites the rest, as a seqlock: a helper
 * reading the fields of a job it did not take a chunk of must not count).
 * @helped carries the sequence number too, so that a chunk of an earlier
 * job, finished late, is not counted in this one.
 */
#define CL_JOB_CLOSED 0xffffffffu
#define CL_JOB_FAILED (1ull << 31) /* in @helped: a chunk not written */
struct cl_burst_job {
	uint64_t claim __attribute__((aligned(64)));
	uint64_t to;	    /* destination, in the owner's process */
	uint64_t from;	    /* source, in the sender's process */
	uint64_t src_start; /* the sender's process start time ... */
	int32_t src_pid;    /* ... and pid: only it may help */
	uint32_t len;
	uint32_t src; /* the sending node */
	int32_t pid;  /* the owner's process */
	/* sequence number (high half), chunks the sender did, CL_JOB_FAILED */
	uint64_t helped __attribute__((aligned(64)));
};

/*
 * A peer window entry's CUDA IPC handle (emu/ipc.c), written by its
 * board's host; @gen is CL_IPC_PUBLISHED | the entry's generation once
 * the rest is whole, 0 while it is rewritten. @busy: bit n, board n's
 * engine may be copying into the entry; its SEEN does not move meanwhile.
 */
#define CL_IPC_PUBLISHED (1u << 16)
struct cl_pw_ipc {
	uint32_t gen;
	uint32_t pad;
	uint64_t off; /* the entry's byte 0 in the allocation */
	uint64_t busy;
	uint8_t handle[FCEMU_IPC_HANDLE_SIZE];
};

/*
 * A board's entry in the header, in cache lines by who writes them: the
 * wiring never changes, liveness rarely, the router's state on every pass.
 * A reader of one (cl_gone() for every run routed) then does not miss
 * each time another process takes the router lock.
 */
struct cl_node {
	/* wiring, fixed at create */
	uint8_t peer[FC_MAX_PORTS + 1];
	uint8_t peer_port[FC_MAX_PORTS + 1];
	uint64_t bar0_off; /* from the start of the object */
	uint64_t rings_off;
	/* liveness */
	uint32_t state __attribute__((aligned(64))); /* enum fcemu_node_state */
	int32_t pid;
	uint64_t starttime; /* /proc/PID/stat field 22: pid reuse guard */
	uint32_t burst;	    /* peers may read its process: bursts (burst.c) */
	/* the board's bell: a sleeping host waits on it (fcemu_cluster_wait) */
	uint32_t bell __attribute__((aligned(64))); /* futex word, rung */
	uint32_t sleepers;
	/* the router, under lock */
	pthread_mutex_t lock __attribute__((aligned(64))); /* robust, shared */
	uint32_t rr; /* input served first next time */
	/*
	 * The run being moved (router.c forward_run): if its router dies
	 * between publishing the output and taking the input, repair()
	 * finishes the move instead of letting the run go out twice.
	 */
	uint32_t move_count; /* packets; 0: no move under way */
	uint32_t move_in;    /* the input */
	uint32_t move_head;  /* ... its head before the run is taken off */
	uint32_t move_tail;  /* the output's tail once published */
	uint64_t move_ring;  /* the output ring: offset in the object */
	uint32_t checked[CL_RINGS(FC_MAX_PORTS)]; /* wire-checked up to */
	/*
	 * Virtual time (emu/vtorder.c), written by the board's process:
	 * @vt_on, the board has a clock; @vt_lb, its promise: no packet it
	 * sends from now on leaves before it (ps), CL_VT_WAITING while its
	 * host waits and sends nothing until it takes a packet.
	 */
	uint64_t vt_lb __attribute__((aligned(64)));
	uint32_t vt_on;
	/* the latest arrival its ejection port took (ps): whatever it takes
	 * from now on arrives after it (it only rises while vt_on) */
	uint64_t vt_eject;
	struct cl_burst_job job; /* written by the board's process */
	struct cl_pw_ipc pw_ipc[FC_PW_MAX_ENTRIES];
} __attribute__((aligned(64)));

struct cl_header {
	uint32_t magic;
	uint32_t layout;
	uint64_t size; /* bytes of the object */
	struct fc_topology topo;
	struct fcemu_faults faults;
	uint32_t ports; /* link ports per board */
	uint32_t ring_slots;
	/* bit n: board n's router has input waiting; every router writes it */
	uint64_t pending __attribute__((aligned(64)));
	/* moves whenever a board's state does (claim, release, death) */
	uint32_t state_gen __attribute__((aligned(64)));
	/* bit n: board n lives on another host (emu/bridge_ofi.c) */
	uint64_t remote;
	struct cl_node node[FC_MAX_NODES];
};

/* The links an express run crosses (express.c), so that each counts it. */
struct express_path {
	unsigned int hops;
	uint8_t node[FC_MAX_NODES]; /* the sending end of each link */
	uint8_t port[FC_MAX_NODES];
	uint32_t vcbit; /* the VC it arrives on */
	uint32_t tag;	/* ... and its port + 1 (the slot's tag) */
};

/*
 * express.c: the route to a board last walked from one of this mapping's
 * boards (@src), with what it was found by: each hop's routing entry and
 * the input rings of its link. Used only with that board's router lock
 * held (as the route is), and checked again at every use.
 */
#define CL_EXPRESS_HOPS 8 /* longer routes are walked every time */
struct cl_express_route {
	struct express_path path; /* hops 0: none */
	unsigned int src;
	uint32_t entry[CL_EXPRESS_HOPS];
	struct cl_ring *in[CL_EXPRESS_HOPS][FC_NUM_VCS];
};

/*
 * One process's mapping. What never changes after create (sizes, where
 * each board's registers and rings are) is kept here too, so that the hot
 * paths read no shared line for it.
 */
struct fcemu_cluster {
	char name[FCEMU_CLUSTER_NAME_MAX];
	struct cl_header *hdr;
	uint8_t *base;
	size_t size;
	unsigned int nodes;		     /* hdr->topo.nodes */
	unsigned int ports;		     /* hdr->ports */
	uint32_t *regs[FC_MAX_NODES];	     /* each board's BAR0 */
	struct cl_ring *rings[FC_MAX_NODES]; /* ... and its rings */
	/*
	 * The wiring and the settings, checked at attach and copied: any
	 * process of the cluster can write the header, none can make this
	 * one index with it.
	 */
	struct fc_topology topo;
	struct fcemu_faults faults;
	uint8_t peer[FC_MAX_NODES][FC_MAX_PORTS + 1];
	uint8_t peer_port[FC_MAX_NODES][FC_MAX_PORTS + 1];
	/* the express hop: a wire without faults, not turned off */
	bool express;
	uint64_t rng;	       /* fault draws; private to this mapping */
	uint64_t next_scan_ns; /* next liveness check of the boards */
	unsigned int scans;
	uint64_t stopped_since[FC_MAX_NODES]; /* seen stopped first, or 0 */
	unsigned int next_board; /* round-robin start of progress */
	uint64_t mine;		 /* the boards this mapping claimed */
	/* by destination: the express hop's last route there (express.c) */
	struct cl_express_route xroute[FC_MAX_NODES];
	/* others' boards seen pending, and for how many calls in a row */
	uint64_t waiting;
	uint8_t waited[FC_MAX_NODES];
	/* injected, not yet published (fcemu_cluster_inject_commit) */
	uint64_t inject_dirty;
	/* published, not flagged pending: the next progress routes them */
	uint64_t kicked;
	uint32_t inject_tail[FC_MAX_NODES];
	/* FC_ROUTER_NODES_DOWN written for state_gen (fcemu_cluster_note_down) */
	uint64_t down_known;
	uint32_t down_gen[FC_MAX_NODES];
	struct fcemu_test_faults test; /* fcemu_cluster_test_faults() */
	/* the virtual time of this process's boards, NULL: none (vtime.h) */
	struct fcemu_vtime *vt[FC_MAX_NODES];
	/*
	 * Boards on other hosts (hdr->remote, fixed at create): their
	 * routers never run here; their input rings are the outgoing side of
	 * the links that cross hosts, drained by this process's bridge
	 * through @pump (emu/bridge_ofi.c), called at the end of every
	 * progress with @pump_arg. RETURN VALUE of @pump: packets moved.
	 */
	uint64_t remote;
	unsigned int (*pump)(void *arg);
	void *pump_arg;
	/*
	 * Bursts from boards of other hosts land here before they are
	 * applied (emu/bridge_rma.c): @land_slots slots of CL_LAND_SLOT
	 * bytes, written by libfabric RMA; the board sets @land_done[i] once
	 * it applied slot i's burst. NULL: none (no bridge with RMA here).
	 */
	uint8_t *land;
	uint32_t *land_done;
	uint32_t land_slots;
	/* last: what the hot paths never read */
	/* delivery in simulated-time order (emu/vtorder.c): the boards whose
	 * host waits in fcemu_cluster_wait() now; hops between boards + 1
	 * (0 not yet asked); where a board began to hold a packet (host ns) */
	uint64_t vt_idle;
	uint8_t vt_hops[FC_MAX_NODES][FC_MAX_NODES];
	uint64_t vt_hold_ns[FC_MAX_NODES];
	uint64_t vt_hold_sig[FC_MAX_NODES]; /* the cluster as it was then */
	/* nothing not yet in its ejection ring arrives before this (ps):
	 * the latest proof, kept (promises only rise) */
	uint64_t vt_safe[FC_MAX_NODES];
	unsigned int vt_safe_src[FC_MAX_NODES]; /* ... from no lower source */
	uint64_t vt_sent[FC_MAX_NODES];	     /* its vt->acts when looked at */
	unsigned int vt_looks[FC_MAX_NODES]; /* in a row with nothing */
	/* the host may not have seen what its board did since it last said
	 * it waits (a message sent, a chain ended, packets taken) */
	bool vt_unseen[FC_MAX_NODES];
	struct cl_vt_spill vt_spill[FC_MAX_NODES];
	/* its library says when it waits: only that counts (not a sleep) */
	bool vt_hints[FC_MAX_NODES];
	unsigned long vt_forced;  /* packets taken out of order (held) */
	unsigned long vt_resumed; /* sends by a host said to wait */
};

#define CL_LAND_SLOT (1u << 20) /* a burst record's bytes at most */

static inline uint32_t cl_ld(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void cl_st(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline struct cl_ring *cl_ring(struct fcemu_cluster *c,
				      unsigned int node, unsigned int ring)
{
	return c->rings[node] + ring;
}

/* Where link port @port of @node leads (CL_NO_PEER: nowhere). */
static inline unsigned int cl_peer(const struct fcemu_cluster *c,
				   unsigned int node, unsigned int port)
{
	return c->peer[node][port];
}

static inline unsigned int cl_peer_port(const struct fcemu_cluster *c,
					unsigned int node, unsigned int port)
{
	return c->peer_port[node][port];
}

static inline uint32_t *cl_reg(struct fcemu_cluster *c, unsigned int node,
			       uint32_t off)
{
	return c->regs[node] + off / 4;
}

static inline uint32_t cl_rd(struct fcemu_cluster *c, unsigned int node,
			     uint32_t off)
{
	return cl_ld(cl_reg(c, node, off));
}

/* Board-written counters: each has one writer (see link.c), no RMW race. */
static inline void cl_inc(struct fcemu_cluster *c, unsigned int node,
			  uint32_t off)
{
	uint32_t *r = cl_reg(c, node, off);

	cl_st(r, cl_ld(r) + 1);
}

/* emu/router.c: a run's move, finished for a router that died in it */
void fcemu__router_repair(struct fcemu_cluster *c, unsigned int node);
/* Run board @node's router, its lock held. RETURN VALUE: packets moved. */
unsigned int fcemu__router_run(struct fcemu_cluster *c, unsigned int node,
			       unsigned int budget);
/* Its injection ring only (what its host just sent), lock held. */
void fcemu__router_run_injected(struct fcemu_cluster *c, unsigned int node,
				unsigned int budget);

/* emu/route.c: the output port for packet header @hdr at board @n, or -1
 * to drop it (its routing table entry in *@entry), and the VC it leaves
 * on. */
int fcemu__route(struct fcemu_cluster *c, unsigned int n, uint32_t hdr,
		 uint32_t *entry);
unsigned int fcemu__out_vc(uint32_t entry, unsigned int in, unsigned int vc,
			   unsigned int out);
/* The links a packet from @src to @dst crosses by the routing tables,
 * each by its receiving end (board, input port), into @node and @port
 * (FC_MAX_NODES each). RETURN VALUE: how many; 0 if none or no route. */
unsigned int fcemu__route_links(struct fcemu_cluster *c, unsigned int src,
				unsigned int dst, uint8_t *node, uint8_t *port);

/*
 * emu/express.c: what board @n's own process injected, from the head of
 * its injection ring, by the express hop while it can go (up to @budget
 * packets), under @n's router lock. RETURN VALUE: packets moved.
 */
unsigned int fcemu__express_injected(struct fcemu_cluster *c, unsigned int n,
				     unsigned int budget);
/* Tests only: packets this process sent by the express hop. */
extern unsigned long fcemu__express_pkts;

/* emu/bell.c: wake @node's host if it sleeps (news for its board);
 * _fenced when a locked operation came after the news was published. */
void fcemu__cluster_ring(struct fcemu_cluster *c, unsigned int node);
void fcemu__cluster_ring_fenced(struct fcemu_cluster *c, unsigned int node);

/* @i mod @n for @i < 2n: round-robin without a division per step. */
static inline unsigned int cl_wrap(unsigned int i, unsigned int n)
{
	return i >= n ? i - n : i;
}

static inline void cl_set_pending(struct fcemu_cluster *c, unsigned int node)
{
	__atomic_fetch_or(&c->hdr->pending, 1ull << node, __ATOMIC_SEQ_CST);
}

/* Packets for a board that left, or whose process died, go nowhere. */
static inline bool cl_gone(struct fcemu_cluster *c, unsigned int node)
{
	uint32_t s = cl_ld(&c->hdr->node[node].state);

	return s == FCEMU_NODE_EXITED || s == FCEMU_NODE_DEAD;
}

/* emu/link.c: rings and the emulated wire */
uint32_t fcemu__crc32c(const void *buf, size_t len);

/* Inline: the routers ask these of every input and output on every pass. */
static inline uint32_t fcemu__ring_free(struct cl_ring *r)
{
	uint32_t used =
		__atomic_load_n(&r->tail, __ATOMIC_RELAXED) - cl_ld(&r->head);

	/* A head moved past our tail was written by no honest consumer:
	 * no room, rather than slots not yet read written over. */
	return used > CL_RING_SLOTS ? 0 : CL_RING_SLOTS - used;
}

static inline bool fcemu__ring_empty(struct cl_ring *r)
{
	return cl_ld(&r->tail) == __atomic_load_n(&r->head, __ATOMIC_RELAXED);
}

static inline uint32_t fcemu__ring_tail(struct cl_ring *r)
{
	return __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
}

static inline void fcemu__ring_publish(struct cl_ring *r, uint32_t tail)
{
	cl_st(&r->tail, tail); /* the slots are visible before the index */
}
/* Batched pushes: put slots from fcemu__ring_tail() on, then publish the
 * new tail once (the caller checked the room with fcemu__ring_free()). */
static inline void fcemu__ring_put(struct cl_ring *r, uint32_t idx,
				   const struct fc_hw_pkt *pkt, uint64_t t)
{
	struct cl_slot *s = &r->slot[idx % CL_RING_SLOTS];

	s->pkt = *pkt;
	s->seq = idx;
	s->tag = 0;
	s->t = t;
}

/* emu/cluster.c: the departure stamped on the next packet board @node
 * injects, header @hdr (its route picks the port). */
uint64_t fcemu__cluster_vt_next(struct fcemu_cluster *c, unsigned int node,
				uint32_t hdr);

static inline uint64_t cl_vt_next(struct fcemu_cluster *c, unsigned int node,
				  uint32_t hdr)
{
	return c->vt[node] ? fcemu__cluster_vt_next(c, node, hdr) : 0;
}
/* emu/vtorder.c (fcemu__vt_order() in fabric.h): board @node's promise
 * (vt_lb), published; a rise to CL_VT_WAITING rings the other boards'
 * bells (one of them may go on now). */
#define CL_VT_WAITING UINT64_MAX
void fcemu__vt_promise(struct fcemu_cluster *c, unsigned int node, uint64_t lb);
/* Drop board @node's spilled packets (struct cl_vt_spill) and free it. */
void fcemu__vt_spill_free(struct fcemu_cluster *c, unsigned int node);
/* Board @node sends while its promise says it waits: its clock again. */
void fcemu__vt_resume(struct fcemu_cluster *c, unsigned int node);
/* A packet header's destination bits, in place. */
#define FC_PKT_DST_BITS (FC_PKT_NODE_MASK << FC_PKT_DST_SHIFT)
/*
 * The same on a link for the run of packets at @from's slots from @head
 * on whose destination bits are @dst, up to @max, to @to's from @tail on:
 * the VC bit of each header set to @vcbit, the CRC taken on the way.
 * RETURN VALUE: packets put.
 */
uint32_t fcemu__link_put_run(struct cl_ring *to, uint32_t tail,
			     const struct cl_ring *from, uint32_t head,
			     uint32_t max, uint32_t dst, uint32_t vcbit);
/* The input ring at the far end of @node's link port @port, VC @vc. */
struct cl_ring *fcemu__link_ring(struct fcemu_cluster *c, unsigned int node,
				 unsigned int port, unsigned int vc);
/* After publishing @n packets on that ring: count them, flag the peer. */
void fcemu__link_sent(struct fcemu_cluster *c, unsigned int node,
		      unsigned int port, unsigned int n);
/* @n packets that took the express hop across @node's port @port:
 * counted as sent and, with @rx, as received at the far end. */
void fcemu__link_counted(struct fcemu_cluster *c, unsigned int node,
			 unsigned int port, unsigned int n, bool rx);
/* @n packets that arrived at @node's port @port by the express hop,
 * counted as received as the board takes them. */
void fcemu__link_received(struct fcemu_cluster *c, unsigned int node,
			  unsigned int port, unsigned int n);
/*
 * How many packets from the head of @node's input port @port VC @vc, up to
 * @max, came over the wire intact: checked in order, the first one lost
 * or corrupt this time ends the run (it is taken again later). A slot
 * whose own memory was damaged is dropped, counted, once it is the head.
 */
uint32_t fcemu__link_recv(struct fcemu_cluster *c, unsigned int node,
			  unsigned int port, unsigned int vc, uint32_t max);
/*
 * A piece of a burst (emu/burst.c: FC_PKT_PUT_DATA bytes at most, at
 * @buf in the receiving board's memory) crossing the link into @node's
 * input port @port on a wire with faults: one try, drawn and counted as a
 * packet's. RETURN VALUE: true it came intact; false it was lost or the
 * CRC caught it corrupt (@buf no longer holds the bytes): take it again.
 */
bool fcemu__link_wire_piece(struct fcemu_cluster *c, unsigned int node,
			    unsigned int port, uint8_t *buf, size_t len);
/* Take @n packets from the head of that input. */
void fcemu__link_done(struct fcemu_cluster *c, unsigned int node,
		      unsigned int port, unsigned int vc, uint32_t n);

/* emu/burst.c: a burst record (FCEMU_PKT_T_BURST) as a bridge sees it */
struct fcemu_burst_view {
	uint64_t src;	/* the bytes, in process @pid */
	uint64_t start; /* that process's start time */
	int32_t pid;
	uint32_t len;
};
/* Read burst record @pkt. RETURN VALUE: false if it is none, or landed. */
bool fcemu__burst_view(const struct fc_hw_pkt *pkt, struct fcemu_burst_view *v);
/* Rewrite burst record @pkt as landed: its bytes wait in landing slot
 * @slot of the receiving process (struct fcemu_cluster, @land). */
void fcemu__burst_land(struct fc_hw_pkt *pkt, uint32_t slot);

/* emu/cma.c: may peers read this process's memory (bursts)? False with
 * FPGACOMM_EMU_BURST=0. Under Yama, names our launcher as a ptracer. */
bool fcemu__cma_offer(void);

/* emu/cluster.c */
void fcemu__cluster_scan(struct fcemu_cluster *c);
/* Board @node's virtual time (NULL or off: none), for this mapping. */
void fcemu__cluster_set_vt(struct fcemu_cluster *c, unsigned int node,
			   struct fcemu_vtime *vt);
/* Lock board @node's router, repairing it after a holder died.
 * RETURN VALUE: 0 locked; -EBUSY (trylock only); -ENOTRECOVERABLE. */
int fcemu__cluster_lock(struct fcemu_cluster *c, unsigned int node, bool wait);
void fcemu__cluster_unlock(struct fcemu_cluster *c, unsigned int node);

#endif /* FCEMU_CLUSTER_INTERNAL_H */
