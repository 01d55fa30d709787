/* SPDX-License-Identifier: MIT */
/*
 * The transport (lib/fabric/), as the layers above it see it: the
 * protocols (proto/proto.h), the channel API (chan/chan.h) and the
 * collectives' links. Its files: fabric.c (requests, the send queue, lanes
 * and progress), peer_check.c (peers' liveness), chain.c (chains and
 * staging), fabric_rx.c (where packets arrive), fabric_msg.c (the
 * messages they make), handlers.c (control messages to the handler
 * registered for their kind), handle.c (requests as handles), world.c
 * (the world a board is in); transport_internal.h holds what only they
 * share. It calls no protocol and no channel: those it
 * reaches only through what they registered (fc__upcalls, their slots'
 * tick(), control messages' handlers).
 *
 * What arrives for a board in a cluster lands in its event queue where it
 * has one, else in a receive ring of RING_SLOTS packets per port, from
 * fc_open on. Progress drains them into per-(port, source) state: straight
 * into the buffer of the oldest posted receive when there is one, else
 * into a queue of messages nobody asked for yet.
 * Sends and puts are DMA chains; a request waits in the send queue until
 * the backend takes its chain, then in the in-flight list until it ends.
 * Chains run on lanes, one per DMA engine: a node's chains all go on the
 * lane it holds, in order, and other nodes' on other lanes meanwhile.
 * All of it is guarded by fab->lock, taken before dev->lock when both are.
 */
#ifndef FC_TRANSPORT_H
#define FC_TRANSPORT_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SPARE_BUFS    16		/* large send buffers kept for reuse */
#define SPARE_BYTES   (64ull << 20)	/* ... and at most this much */
#define PEER_CHECK_NS (10ull * 1000000) /* node state polled this often */

/* The library's control messages: one packet each, a kind (1 ..
 * FC__CTRL_KINDS - 1: the protocols number theirs, proto/proto.h) and the
 * handler a protocol registered for it (handlers.c). */
#define FC__CTRL_KINDS 16

/* A control message, little-endian: one packet (FC_XFER_F_CTRL). */
struct fc__ctrl_msg {
	uint8_t kind;
	uint8_t pad[3];
	uint32_t cookie; /* the protocol's name for what it concerns */
	uint64_t val;
};

struct fc_dev;
typedef void (*fc__ctrl_fn)(struct fc_dev *dev, uint32_t port, uint32_t node,
			    uint32_t cookie, uint64_t val);

/*
 * A queued message: plain data (@proto NULL, the bytes in data[]), or one a
 * protocol keeps (rendezvous: announced, landing, landed), whose state is
 * the protocol's own, at @proto inside the message's block (data[]), so
 * that freeing the message frees it. The matching asks the protocol what
 * to do with such a message (fc__upcalls: msg_ready, msg_take).
 */
struct fc__msg {
	struct fc__msg *next;
	size_t len;
	void *proto;
	uint8_t data[];
};

enum fc__req_type {
	FC__REQ_SEND,
	FC__REQ_RECV,
	FC__REQ_PUT,
	FC__REQ_CTRL, /* the library's own control message */
};

struct fc_req {
	enum fc__req_type type;
	/* SEND: flow control's own state of it (the eager protocol's
	 * credits, proto/credit.c); opaque here, 0 when made */
	uint64_t flow;
	struct fc_dev *dev;
	struct fc_chan *chan; /* SEND, RECV */
	struct fc_req *next;  /* send queue, in flight, or posted */
	uint32_t node;	      /* the peer it depends on */
	int status;	      /* -EINPROGRESS until it ends */
	size_t len;	      /* RECV: the message's length */
	/* SEND, PUT */
	bool submitted;	  /* its chain or its PIO packets are the board's */
	bool msg_chain;	  /* queued: its chain carries channel messages */
	uint8_t lane;	  /* submitted as a chain: on this lane */
	uint32_t pio_end; /* PIO: taken once FC_PIO_HEAD is here */
	bool orphan;	  /* given up by its caller: free when ended */
	uint64_t ticket;
	unsigned int n;
	struct fc_xfer *xfers; /* &xfer1 for a one-piece chain */
	int stage;	       /* staging slot, or -1 */
	struct fc_mem *reg;    /* a large send's own copy */
	/* RECV */
	void *buf;
	size_t cap;
	/* a protocol's own state of it (rendezvous: proto/rndv.c), one
	 * malloc'd block freed with the request; NULL: none */
	void *proto;
	uint32_t port;
	/* the caller's buffer, registered: by the library for this message,
	 * or by the caller (@umem_held: fc__mem_hold, at @umem_off in it) */
	struct fc_mem *umem;
	uint64_t umem_off;
	bool umem_held;
	uint32_t handle; /* the caller's handle's slot + 1, or 0 */
	/* the channel API's: device memory staged through a host buffer
	 * (devmem.h, which says where a receive's bytes go at its end);
	 * given back when the request is freed */
	struct fc__bounce *bounce;
	/*
	 * Above: set by fc__req_new() (req_init(), field by field: a field
	 * added above goes there too). From here on a new request is left
	 * as it was (a small message needs none of it): @xfer1 is set up
	 * by fc__build_chain().
	 */
	struct fc_xfer xfer1;
};

/*
 * Protocols above the transport keep their own state, each under its id:
 * they allocate it and register it (fc__proto_register()); the transport
 * holds only the pointers, fabric-wide and per (port, source), and hands
 * them back to the protocol's fini calls at close.
 */
enum fc__proto_id {
	FC__PROTO_CREDIT,  /* end-to-end credits and the greeting (credit.c) */
	FC__PROTO_BARRIER, /* the barrier's channels and count (barrier.c) */
	FC__PROTO_RNDV,	   /* rendezvous (proto/rndv*.c) */
	FC__PROTO_IDS
};

struct fc__fabric;
struct fc__src;

struct fc__proto_slot {
	void *state; /* the protocol's, fabric-wide */
	/* per (port, source), in src->proto[id]: made with the source (an
	 * error: no source), and freed with it, at close */
	int (*src_init)(struct fc__fabric *fab, struct fc__src *s);
	void (*src_fini)(struct fc__fabric *fab, struct fc__src *s);
	/* from every round of progress while the protocol waits on time
	 * (its bit in fc__fabric.ticking: fc__proto_ticking()) */
	void (*tick)(struct fc_dev *dev);
	/* at close, after every source's src_fini: @state goes */
	void (*fini)(struct fc__fabric *fab, void *state);
};

/* What arrives on one port from one source node. */
struct fc__src {
	uint32_t node; /* where it comes from */
	/* the message being reassembled */
	bool active;
	bool drop;	     /* too long: counted, not kept */
	struct fc_req *into; /* filling this posted receive */
	uint8_t *cur;	     /* else this library buffer */
	size_t cur_len, cur_cap;
	/* complete messages nobody has asked for yet */
	struct fc__msg *q_head, *q_tail;
	/* posted receives, oldest first (the oldest may be @into) */
	struct fc_req *posted_head, *posted_tail;
	struct fc_chan *chan; /* the open channel, if any */
	/* protocols' own state for this source (struct fc__proto_slot) */
	void *proto[FC__PROTO_IDS];
};

struct fc__port {
	size_t buffered; /* bytes held in library buffers */
	struct fc__src *src[FC_MAX_NODES];
};

struct fc_chan {
	struct fc_dev *dev;
	uint32_t peer, port;
	unsigned int reqs; /* outstanding requests */
};

struct fc__peer {
	uint64_t checked_ns;	 /* node state last read */
	uint64_t checked_ticks;	 /* fc__ticks() then, or when last found
				  * recent enough; 0: ask fc__peer_check_slow */
	uint64_t down_ns;	 /* first seen down, 0 while alive */
	uint64_t grace_ns;	 /* given it from then */
	unsigned int down_polls; /* our looks since */
};

/*
 * A lane: one DMA engine's queue of chains, held by one destination node
 * while any chain of the node's is on it, so that a node's chains run in
 * order and a node whose chains wait (for a FENCE_ACK) holds up no other.
 */
struct fc__lane {
	int node;	   /* holding it, or -1 */
	unsigned int reqs; /* its requests submitted, not ended */
};

/*
 * What the transport (fabric.c, fabric_rx.c) asks of the protocols above
 * it. They fill these in at open (fc__chan_protocols(), chan.c), each its
 * own; the transport calls them where set and names no protocol.
 */
struct fc__upcalls {
	/*
	 * Rendezvous (rndv.c), for requests with r->proto set: a chain of
	 * theirs ended with *status (true: the send goes on; else *status
	 * is how it ends); submit the remote write of @r, at the head of
	 * the send queue, and those to the same node behind it, as one chain
	 * on @lane (as fc_dma_submit; *n the requests taken, each with the
	 * chain's ticket, 1 when it failed); withdraw() of it (as withdraw's,
	 * or 2 when its state is not one it must handle).
	 */
	bool (*chain_ended)(struct fc_dev *dev, struct fc_req *r, int *status);
	int (*submit)(struct fc_dev *dev, struct fc_req *r, unsigned int lane,
		      unsigned int *n);
	int (*withdraw)(struct fc_dev *dev, struct fc_req *r, bool orphan);
	/*
	 * ... and its queued messages (m->proto set): may @m be handed to a
	 * receive now (false: it holds up those behind it)? @m, off the
	 * queue, to posted receive @r (its data, or the protocol's next
	 * step: a clear); those nobody asked for landed in library buffers
	 * while the port may keep that much.
	 */
	bool (*msg_ready)(const struct fc__msg *m);
	void (*msg_take)(struct fc_dev *dev, uint32_t port, struct fc__src *s,
			 struct fc__msg *m, struct fc_req *r);
	void (*msg_land)(struct fc_dev *dev, uint32_t port, struct fc__src *s);
	/*
	 * End-to-end credits (credit.c): a message of @len bytes from @s was
	 * handed to a receive or dropped; send @r, counted, ended without
	 * its message sent whole (its cost comes back); send @r, not
	 * submitted, is withdrawn: true if it was held (waiting for
	 * credit, now let go), false if it is in the send queue.
	 */
	void (*consumed)(struct fc_dev *dev, uint32_t port, struct fc__src *s,
			 uint64_t len);
	void (*refund)(struct fc__fabric *fab, struct fc_req *r);
	bool (*unhold)(struct fc__fabric *fab, struct fc_req *r);
};

struct fc__fabric {
	struct fc__lock lock;
	bool single; /* dev->single: the lock is not taken */
	struct fc_dev *dev;
	struct fc_world world;
	/* what arrives: the event queue, else a ring per port (fabric_rx.c) */
	struct fc_mem *eq;
	uint32_t eq_slots;
	uint32_t eq_head; /* next entry to read */
	uint32_t eq_told; /* FC_EQ_HEAD as last written */
	struct fc_mem *rings;
	uint64_t rings_bus;
	struct fc_mem *stage;
	uint32_t stage_free; /* bit i: slot i free */
	/* large sends' buffers, kept: registering costs page faults */
	struct fc_mem *spare[SPARE_BUFS];
	unsigned int spares;
	uint64_t spare_bytes;
	uint32_t head[FC_MAX_CHANNELS]; /* slots consumed: FC_CHAN_HEAD */
	uint32_t chan_irqs; /* IRQ_COUNT(FC_IRQ_VEC_CHAN) last seen */
	/* TAILs read more than a ring ahead of our head (not a board's
	 * doing: shared memory written by another process): ignored */
	uint32_t bad_tails;
	bool chan_events; /* the board has FC_REG_CHAN_EVENTS */
	uint32_t group_events[FC_CHAN_GROUPS]; /* ... last seen */
	uint32_t rescan; /* bit g: a ring of group g was left
					 * unread, look again */
	struct fc__port *ports[FC_MAX_CHANNELS];
	struct fc_req *sendq_head, *sendq_tail;
	struct fc_req *fly_head, *fly_tail;
	unsigned int lanes; /* 1..FC_DMA_MAX_ENGINES */
	struct fc__lane lane[FC_DMA_MAX_ENGINES];
	int8_t node_lane[FC_MAX_NODES]; /* the lane a node holds, or -1 */
	/* chain requests to each node, queued or in flight */
	uint16_t node_chains[FC_MAX_NODES];
	/* ... of them, those carrying channel messages (an announcement may
	 * pass the others, remote writes and reads, but not these) */
	uint16_t node_msg_chains[FC_MAX_NODES];
	/* sends in the PIO window the board has not taken yet, oldest first */
	struct fc_req *pio_head, *pio_tail;
	/* freed requests, reused: a message costs no allocation */
	struct fc_req *req_cache;
	unsigned int req_cached;
	unsigned int puts; /* put requests not yet ended */
	/* requests nobody waits for (orphan), not yet ended: fc_close()
	 * lets them finish (fc__fabric_linger) */
	unsigned int orphans;
	int put_error; /* first error of an unwaited put */
	struct fc__peer peers[FC_MAX_NODES];
	/* the protocols above (see struct fc__upcalls) */
	struct fc__upcalls up;
	/* control messages' handlers (ctrl.c) */
	fc__ctrl_fn ctrl[FC__CTRL_KINDS];
	/* the protocols' own state, by id */
	struct fc__proto_slot proto[FC__PROTO_IDS];
	/* a protocol bounds what each source may send ahead (credits): a
	 * port's library buffers need no cap of their own */
	bool flow_bounded;
	/* bit id: the protocol waits on time (the greeting's retries, a
	 * landing's deadline): its slot's tick() from every round of
	 * progress */
	uint32_t ticking;
};

/* Append @r to the list @head .. @tail, linked by next. */
static inline void fc__req_append(struct fc_req **head, struct fc_req **tail,
				  struct fc_req *r)
{
	r->next = NULL;
	if (*tail)
		(*tail)->next = r;
	else
		*head = r;
	*tail = r;
}

/* fabric.c; the lock is held for all of these */
/* A registered buffer of at least @len bytes for a large send. */
int fc__spare_get(struct fc_dev *dev, size_t len, struct fc_mem **memp);
void fc__spare_put(struct fc_dev *dev, struct fc_mem *m);
static inline void fc__fab_lock(struct fc__fabric *fab)
{
	if (!fab->single)
		fc__lock(&fab->lock);
}

static inline void fc__fab_unlock(struct fc__fabric *fab)
{
	if (!fab->single)
		fc__unlock(&fab->lock);
}
/* One round of progress. RETURN VALUE: true if anything moved. */
bool fc__progress(struct fc_dev *dev);
/* peer_check.c: is @node down for good (dead or left, and given time to
 * drain)? */
bool fc__peer_down(struct fc_dev *dev, uint32_t node);
/* The state of what arrives on @port from @node, made at first use;
 * NULL out of memory. Every message looks it up: inline. */
struct fc__src *fc__src_make(struct fc__fabric *fab, uint32_t port,
			     uint32_t node);
static inline struct fc__src *fc__src_get(struct fc__fabric *fab, uint32_t port,
					  uint32_t node)
{
	struct fc__port *pt = fab->ports[port];

	if (pt && pt->src[node])
		return pt->src[node];
	return fc__src_make(fab, port, node);
}
struct fc__src *fc__src_find(struct fc__fabric *fab, uint32_t port,
			     uint32_t node);
/* Queue the complete (or announced) message @m on @s, last. */
void fc__src_queue(struct fc__src *s, struct fc__msg *m);
/* fabric_msg.c: a library buffer's first size for a message */
#define FC__MSG_MIN_CAP 4096
/* The message @s is building in a library buffer (s->cur). */
static inline struct fc__msg *fc__src_msg(struct fc__src *s)
{
	return (struct fc__msg *)s->cur;
}
/* Append @len bytes to the message @s is building. RETURN VALUE: 0 or
 * -ENOMEM. */
int fc__src_append(struct fc__port *pt, struct fc__src *s, const uint8_t *data,
		   size_t len);
/* The message @s was building is whole: to its receive, or queued. */
void fc__src_finish(struct fc__fabric *fab, uint32_t port, struct fc__src *s);
/*
 * A whole message of @len bytes (one packet) from @node on @port, straight
 * into the oldest posted receive where nothing comes before it and it
 * fits. RETURN VALUE: true taken; false: take it packet by packet.
 */
bool fc__src_take_whole(struct fc__fabric *fab, uint32_t port, uint32_t node,
			const uint8_t *data, size_t len);
/*
 * The oldest queued message of @s (nothing posted before it), a whole
 * data message of at most @cap bytes, copied into @buf and freed.
 * RETURN VALUE: 0 (*len its length), or -EAGAIN: take the long way.
 */
int fc__src_take_queued(struct fc__fabric *fab, uint32_t port,
			struct fc__src *s, void *buf, size_t cap, size_t *len);
/*
 * fabric_rx.c: a blocking receive's short way, with no request: the next message from
 * @node on @port when it is here already (queued, or at the head of the
 * event queue) and plain data that fits @buf, copied straight into it.
 * Only while nothing else of ours waits for progress (queued or running
 * chains, a protocol waiting on time), so that skipping a round of it holds
 * nothing up. RETURN VALUE: 0 (*len its length), or -EAGAIN: post a
 * receive and wait.
 */
int fc__recv_now(struct fc_dev *dev, uint32_t port, uint32_t node, void *buf,
		 size_t cap, size_t *len);
/*
 * The sender's board stopped in the middle of a message (a reset, an
 * error): what came of it is dropped, and a receive it was filling stays
 * posted for the next message.
 */
void fc__src_abort(struct fc__fabric *fab, uint32_t port, uint32_t node);
/* Post receive @r on @s; it may end at once with a queued message. */
void fc__src_post(struct fc__fabric *fab, uint32_t port, struct fc__src *s,
		  struct fc_req *r);
/* A library buffer holding the partial message of @s: a posted receive
 * being filled is given up (cancel). RETURN VALUE: 0 or -ENOMEM. */
int fc__src_detach_req(struct fc__fabric *fab, uint32_t port,
		       struct fc__src *s);

/* RETURN VALUE: 0, or -EHOSTDOWN when @node has died or left. Every
 * send asks: inline, the backend asked only now and then (peer_check.c). */
int fc__peer_check_slow(struct fc_dev *dev, uint32_t node);
static inline int fc__peer_check(struct fc_dev *dev, uint32_t node)
{
	const struct fc__peer *p;

	/* Seen alive lately: the time stamp counter says so without a call
	 * (a span of PEER_CHECK_NS ticks is at most as long in ns); the slow
	 * way asks the backend once PEER_CHECK_NS have passed in ns. */
	if (node < FC_MAX_NODES) {
		p = &dev->fab->peers[node];
		if (p->checked_ticks && !p->down_ns &&
		    fc__ticks() - p->checked_ticks < PEER_CHECK_NS)
			return 0;
	}
	return fc__peer_check_slow(dev, node);
}

/*
 * fc_chan_open()'s check of @node. RETURN VALUE: 0, or -EHOSTDOWN when it
 * died and nothing it sent on @port waits here: one that closed its board
 * in order is no reason to refuse (what it sent is delivered; receives
 * get -EHOSTDOWN once nothing more of it is buffered or on its way).
 * What the board holds of a dead one is drained first by @progress
 * (fc__progress: passed in, so that peer_check.c calls no file that
 * calls it).
 */
int fc__peer_check_open(struct fc_dev *dev, uint32_t node, uint32_t port,
			bool (*progress)(struct fc_dev *dev));

/* A send whose packets are in the PIO window: it ends once they are taken. */
void fc__pio_queue(struct fc__fabric *fab, struct fc_req *req);

/* Queue a SEND or PUT request; progress submits it. */
void fc__req_queue(struct fc__fabric *fab, struct fc_req *req);
void fc__req_free(struct fc_req *req);
/*
 * The caller's buffer @buf of @len bytes as @r's umem: the caller's own
 * registration where one covers it (held), else, with @reg, registered
 * for this message. RETURN VALUE: 0 (@r->umem NULL if neither), -errno.
 */
int fc__req_umem_get(struct fc_dev *dev, struct fc_req *r, const void *buf,
		     size_t len, bool reg);
/* ... and let it go: unheld, or unregistered. */
void fc__req_umem_put(struct fc_dev *dev, struct fc_req *r);
/* Free the transfers of @req's chain (none in memory of their own when
 * the chain is one piece). */
static inline void fc__xfers_free(struct fc_req *r)
{
	if (r->xfers != &r->xfer1)
		free(r->xfers);
	r->xfers = NULL;
}
/* fabric.c: fc_req_test/wait/cancel with the lock held (wait drops it
 * to sleep). */
int fc__req_test(struct fc_req *req, size_t *len);
int fc__req_wait(struct fc_req *req, int timeout_ms, size_t *len);
int fc__req_cancel(struct fc_req *req);
/* chain.c: give @r to the caller as a handle (handle.h). */
int fc__req_export(struct fc_req *r, struct fc_req **reqp);
/* Give up waiting for @req: freed now, or when its chain ends. */
void fc__req_orphan(struct fc_req *req);
/* Nobody waits for @req any more: its channel lets go, its end frees it
 * (counted in fab->orphans until then). */
void fc__req_disown(struct fc_req *req);

/* chain.c: a chain to @dst from @src, queued; @len bytes at @buf staged
 * where the board reads them; the chain of a message or remote write. */
int fc__chain_start(struct fc_dev *dev, struct fc_req *r, struct fc_loc src,
		    uint64_t dst, uint64_t len, bool message);
int fc__stage_copy(struct fc_dev *dev, struct fc_req *r, const void *buf,
		   size_t len, struct fc_loc *src);
int fc__build_chain(struct fc_dev *dev, struct fc_req *r, struct fc_loc src,
		    uint64_t dst, uint64_t len, bool message,
		    unsigned int spare);
/* fabric_msg.c: queued messages to posted receives, in order */
void fc__src_match(struct fc__fabric *fab, uint32_t port, struct fc__src *s);
/* fabric.c: a request's life */
struct fc_req *fc__req_new(struct fc_dev *dev, enum fc__req_type type,
			   uint32_t node);
void fc__req_release(struct fc_dev *dev, struct fc_req *r);
void fc__req_end(struct fc_dev *dev, struct fc_req *r, int status);

/* fabric.c: a protocol's state, by id (fab->proto[id]); at open. */
void fc__proto_register(struct fc__fabric *fab, enum fc__proto_id id,
			const struct fc__proto_slot *slot);
static inline void *fc__proto_state(const struct fc__fabric *fab,
				    enum fc__proto_id id)
{
	return fab->proto[id].state;
}
/* Protocol @id waits on time from now (@on) or no longer: its tick() is
 * called from every round of progress meanwhile. */
static inline void fc__proto_ticking(struct fc__fabric *fab,
				     enum fc__proto_id id, bool on)
{
	if (on)
		fab->ticking |= 1u << id;
	else
		fab->ticking &= ~(1u << id);
}

/* handlers.c: a protocol's handler of control messages of @kind */
void fc__ctrl_register(struct fc__fabric *fab, unsigned int kind,
		       fc__ctrl_fn fn);

#endif /* FC_TRANSPORT_H */
