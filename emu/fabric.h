/* SPDX-License-Identifier: MIT */
/*
 * The emulated fabric (docs/fabric.md): a cluster of boards in one
 * shared-memory object whose links, routers and register files any process
 * of the cluster can drive. Its topology comes from topo/topology.h.
 */
#ifndef FCEMU_FABRIC_H
#define FCEMU_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fpgacomm/hw.h>

#include "topology.h"

/* ---- Clusters (emu/cluster.c, link.c, router.c, progress.c, bell.c) ---- */

#define FCEMU_CLUSTER_NAME_MAX 32

/* A board whose process is stopped (SIGSTOP) this long is declared down. */
#define FCEMU_STOP_NS (2 * 1000000000ull)

enum fcemu_node_state {
	FCEMU_NODE_FREE,   /* no process has claimed the board */
	FCEMU_NODE_ALIVE,  /* claimed by a live process */
	FCEMU_NODE_EXITED, /* released by its process */
	FCEMU_NODE_DEAD,   /* its process died without releasing it, or
				 * was stopped longer than FCEMU_STOP_NS */
};

struct fcemu_faults {
	uint32_t drop_ppm; /* per million packets taken off a link */
	uint32_t corrupt_ppm;
};

struct fcemu_cluster;

/*
 * Faults at set points of the emulator, for tests that must interleave
 * with it or kill it at the worst moment. They belong to one mapping (this
 * process's view of the cluster), never to the shared object: another
 * process of the cluster does not see them.
 */
enum fcemu_burst_stage {
	FCEMU_BURST_STAGE_FIELDS,    /* receiver: job written, not published */
	FCEMU_BURST_STAGE_PUBLISHED, /* receiver: job out, no chunk taken */
	FCEMU_BURST_STAGE_TAKEN,     /* helper: took a chunk, not copied */
};
struct fcemu_test_faults {
	/* A router of this mapping exits the process right after publishing
	 * a run (1), or after taking it off its input too (2). */
	int die_in_move;
	/* Called at each stage of a shared burst (emu/burst.c) in this
	 * mapping; non-zero at TAKEN makes the helper walk away from the
	 * chunk it took. */
	int (*burst_stage)(struct fcemu_cluster *c,
			   enum fcemu_burst_stage stage);
};

/*
 * Create the shared object /fpgacomm-NAME for @t (routing tables loaded).
 * RETURN VALUE: 0; -EEXIST; -EINVAL bad name or topology; -errno of shm.
 */
int fcemu_cluster_create(struct fcemu_cluster **cp, const char *name,
			 const struct fc_topology *t,
			 const struct fcemu_faults *faults);
/*
 * The same for one host's part of a cluster spread over several hosts:
 * the boards of bit set in @remote live on other hosts. They stay ALIVE
 * here until the bridge (emu/bridge.h) says otherwise; their routers
 * never run here, and the links to them are carried by the bridges.
 * RETURN VALUE: as fcemu_cluster_create(); -EINVAL a bit past the nodes.
 */
int fcemu_cluster_create_part(struct fcemu_cluster **cp, const char *name,
			      const struct fc_topology *t,
			      const struct fcemu_faults *faults,
			      uint64_t remote);
/* Bit n set: board n lives on another host. */
uint64_t fcemu_cluster_remote(const struct fcemu_cluster *c);
/*
 * Declare board @node of another host EXITED or DEAD here (its bridge
 * heard it leave, or stopped hearing it), or ALIVE again (it opened again:
 * a new bridge, which the caller tells from the one declared down).
 * RETURN VALUE: 0; -EINVAL not a remote board, or not from that state.
 */
int fcemu_cluster_set_remote_state(struct fcemu_cluster *c, unsigned int node,
				   enum fcemu_node_state state);
/*
 * Map an existing cluster. RETURN VALUE: 0; -ENOENT; -EPERM another owner
 * or a link; -EACCES a mode other than 0600; -EBADMSG not a cluster object
 * (too short, or no creator ever finished it); -EPROTO bad layout.
 */
int fcemu_cluster_attach(struct fcemu_cluster **cp, const char *name);
/*
 * Why the object of cluster @name was refused (@err from attach), in
 * words that name it and, if another user's, its owner: for the user.
 */
void fcemu_cluster_explain(const char *name, int err, char *buf, size_t len);
void fcemu_cluster_detach(struct fcemu_cluster *c);
/* Remove the shared object (mappings stay valid). RETURN VALUE: 0/-errno. */
int fcemu_cluster_unlink(const char *name);
/* Set this mapping's test faults (NULL: none). */
void fcemu_cluster_test_faults(struct fcemu_cluster *c,
			       const struct fcemu_test_faults *f);

const struct fc_topology *fcemu_cluster_topology(const struct fcemu_cluster *c);
/* Board @node's register file (FC_BAR0_SIZE bytes) in the shared object. */
volatile uint32_t *fcemu_cluster_bar0(struct fcemu_cluster *c,
				      unsigned int node);

/*
 * Back this process's view of board @node's register file with @fd's
 * memory at @off (page aligned; FC_BAR0_SIZE bytes), e.g. the memory a
 * virtual machine sees as the board's BAR (fpgacomm-emud), after copying
 * the current registers there. The router and port blocks, [FC_ROUTER_BASE,
 * FC_CHAN_BASE), stay in the cluster: other processes route through them.
 * The other blocks are the board's own: only its process reads them once
 * the board runs (other processes keep seeing the cluster's copy of them as
 * it was at the call: the board's identity). Call it after fcemu_create(),
 * in the board's own process; the host mirrors the router and port blocks
 * into @fd's copy of them itself if its guest is to see them.
 * RETURN VALUE: 0, or -errno (-EINVAL bad node, fd or offset).
 */
int fcemu_cluster_map_regs(struct fcemu_cluster *c, unsigned int node, int fd,
			   uint64_t off);
/*
 * Sleep until board @node's bell rings (packets reached it, or room came
 * in its injection ring) or @max_ns pass: the interrupt an idle host
 * waits for. @news, called once the sleeper is counted, runs the board
 * and says whether anything came for the host meanwhile (then no sleep):
 * what arrived before the count is seen by it, what arrives after rings.
 * Spurious returns are allowed; the caller polls afterwards.
 */
void fcemu_cluster_wait(struct fcemu_cluster *c, unsigned int node,
			uint64_t max_ns, bool (*news)(void *arg), void *arg);
/*
 * For a host that watches the bell from a thread of its own (the daemon
 * behind a VM): while watched, every arrival rings. bell_wait sleeps while
 * the bell still reads @seen, at most @max_ns, and returns its value.
 */
void fcemu_cluster_watch(struct fcemu_cluster *c, unsigned int node, bool on);
uint32_t fcemu_cluster_bell_wait(struct fcemu_cluster *c, unsigned int node,
				 uint32_t seen, uint64_t max_ns);

/* Keep board @node's FC_ROUTER_NODES_DOWN up to date (its own process). */
void fcemu_cluster_note_down(struct fcemu_cluster *c, unsigned int node);
/*
 * What a board's side of the fabric reads of the cluster: register @off of
 * board @node as the cluster holds it (its routes, its memory size), and
 * whether packets for @node go nowhere (no such node, it left or died).
 */
uint32_t fcemu_cluster_reg(struct fcemu_cluster *c, unsigned int node,
			   uint32_t off);
bool fcemu_cluster_gone(struct fcemu_cluster *c, unsigned int node);
/* Bit n set: board n's router has packets waiting (traffic in flight). */
uint64_t fcemu_cluster_pending(const struct fcemu_cluster *c);

/* Claim board @node for this process. RETURN VALUE: 0; -EBUSY (a live
 * process has it); -EINVAL. Release marks it EXITED. */
int fcemu_cluster_claim(struct fcemu_cluster *c, unsigned int node);
void fcemu_cluster_release(struct fcemu_cluster *c, unsigned int node);
/* The board's state; an ALIVE board whose process is gone becomes DEAD. */
enum fcemu_node_state fcemu_cluster_node_state(struct fcemu_cluster *c,
					       unsigned int node);

/*
 * Run the routers of every board with packets waiting, moving at most
 * @budget packets. RETURN VALUE: packets moved.
 */
uint64_t fcemu_cluster_progress(struct fcemu_cluster *c, unsigned int budget);

/*
 * A board's local port: inject packets (from its DMA engine) and eject
 * those addressed to it. Only the board's own process calls these.
 * inject RETURN VALUE: 1 if taken, 0 if the injection ring is full; the
 * router sees injected packets after fcemu_cluster_inject_commit(), once
 * for a batch (one index update and one flag instead of one per packet).
 * eject_peek RETURN VALUE: the @k-th packet waiting (0 first), or NULL;
 * it stays queued (and must not be changed) until
 * fcemu_cluster_eject_done() takes @n from the head.
 */
int fcemu_cluster_inject(struct fcemu_cluster *c, unsigned int node,
			 const struct fc_hw_pkt *pkt);
void fcemu_cluster_inject_commit(struct fcemu_cluster *c, unsigned int node);
/*
 * Inject up to @n packets of header @hdr whose payloads are the
 * FC_PKT_PAYLOAD bytes each at @src on: a run of a message's full packets,
 * written in place. RETURN VALUE: packets taken, fewer when the ring fills.
 */
unsigned int fcemu_cluster_inject_full(struct fcemu_cluster *c,
				       unsigned int node, uint32_t hdr,
				       const uint8_t *src, unsigned int n);
/* Packets the injection ring of @node can take now. */
unsigned int fcemu_cluster_inject_room(struct fcemu_cluster *c,
				       unsigned int node);
/*
 * The same for a caller that calls fcemu_cluster_progress() next, on the
 * same mapping: that call routes the packets, and flags the board pending
 * only if it cannot (its router busy, the budget spent), which saves two
 * writes of the flag word every other process reads.
 */
void fcemu_cluster_inject_route(struct fcemu_cluster *c, unsigned int node);
/*
 * Publish what board @node injected and route its board now, in this
 * process (its own: it moves its packets on at once, as a router would).
 * Another process routing it meanwhile leaves them to that one.
 */
void fcemu_cluster_route_now(struct fcemu_cluster *c, unsigned int node);
/*
 * The express hop (emu/express.c) for a message of board @node's own: its
 * @n packets at @pkts, headers as the host wrote them (the source field is
 * set to @node), straight into the destination's ejection ring if it is a
 * neighbour, the link is idle and nothing of @node's is still in its
 * injection ring. RETURN VALUE: true if sent whole; false: inject it.
 */
bool fcemu_cluster_express(struct fcemu_cluster *c, unsigned int node,
			   const struct fc_hw_pkt *const *pkts, unsigned int n);
/*
 * The same for up to @n full packets of header @hdr whose payloads are at
 * @src on (as fcemu_cluster_inject_full() takes them), written in place.
 * RETURN VALUE: packets sent; inject the rest.
 */
unsigned int fcemu_cluster_express_full(struct fcemu_cluster *c,
					unsigned int node, uint32_t hdr,
					const uint8_t *src, unsigned int n);
const struct fc_hw_pkt *fcemu_cluster_eject_peek(struct fcemu_cluster *c,
						 unsigned int node,
						 unsigned int k);
/*
 * The packets waiting from the @k-th on, up to @max, into @pkts (as
 * eject_peek's), as far as the ring's end. Only slots written for their
 * index are taken: one at the head that was not, or a tail more than a
 * ring ahead, is damage (another process wrote the ring), dropped and
 * counted in FC_ROUTER_EJECT_DROPS. RETURN VALUE: how many; fewer than
 * waiting at the ring's end or before a damaged slot (ask again from
 * there).
 */
unsigned int fcemu_cluster_eject_peek_run(struct fcemu_cluster *c,
					  unsigned int node, unsigned int k,
					  const struct fc_hw_pkt **pkts,
					  unsigned int max);
/*
 * As eject_peek_run, for a taker that reads each packet once: the tail's
 * bound and the head slot are checked here, every other slot's index by
 * the taker with fcemu_cluster_eject_ok(@pkts[i], *@first + i) just
 * before it reads that packet, stopping at the first that fails (the
 * next call from there drops it). A pass of its own over the slots,
 * before the packets are read, made a 4 KiB message about 5% slower.
 * *@waiting: the packets waiting from the head as the tail was read (at
 * most @k + the count returned: nothing more to ask for then).
 */
unsigned int fcemu_cluster_eject_peek_lazy(struct fcemu_cluster *c,
					   unsigned int node, unsigned int k,
					   const struct fc_hw_pkt **pkts,
					   unsigned int max, uint32_t *first,
					   uint32_t *waiting);
/* Was the slot of @pkt (a peeked packet) written for ring index @idx?
 * Its index is the word right after the packet (struct cl_slot). */
static inline bool fcemu_cluster_eject_ok(const struct fc_hw_pkt *pkt,
					  uint32_t idx)
{
	return *(const uint32_t *)(const void *)(pkt + 1) == idx;
}
void fcemu_cluster_eject_done(struct fcemu_cluster *c, unsigned int node,
			      unsigned int n);
/* Is anything waiting in board @node's ejection ring (published)? A cheap
 * look for a taker that has nothing else to do when nothing is. */
bool fcemu_cluster_eject_waiting(struct fcemu_cluster *c, unsigned int node);
/*
 * With a model (emu/vtorder.c): delivery in simulated-time order. How
 * many packets from the head of board @node's ejection ring it may take
 * now, those waiting first put in order of arrival (UINT_MAX: any).
 * @idle_lb(@arg), asked while the host waits: UINT64_MAX if the board
 * has nothing of its own to send (no chain running, no ack, abort or
 * answer owed), else the earliest its next packet can leave (ps).
 */
unsigned int fcemu__vt_order(struct fcemu_cluster *c, unsigned int node,
			     uint64_t (*idle_lb)(void *arg), void *arg);
/* With a model: the earliest board @node's next packet to board @dst can
 * leave (ps), by the output port its route takes. */
uint64_t fcemu_cluster_vt_departs(struct fcemu_cluster *c, unsigned int node,
				  unsigned int dst);
/* With a model: when @pkt, waiting in board @node's ejection ring (a
 * pointer from a peek), reaches the board (ps), before the way into the
 * program. */
uint64_t fcemu_cluster_vt_arrival(struct fcemu_cluster *c, unsigned int node,
				  const struct fc_hw_pkt *pkt);
/* Board @node's host sends: if it promised later, its clock again. */
void fcemu__vt_acts(struct fcemu_cluster *c, unsigned int node);
/* Board @node did something its host sees without a packet (a chain
 * ended): the host's next "waiting" is not yet one. */
void fcemu__vt_event(struct fcemu_cluster *c, unsigned int node);
/* Board @node's host waits: it sends nothing until it takes a packet. */
void fcemu__vt_waits(struct fcemu_cluster *c, unsigned int node);

#endif /* FCEMU_FABRIC_H */
