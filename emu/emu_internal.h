/* SPDX-License-Identifier: MIT */
/* Private to emu/: the board's state behind the register file. */
#ifndef FCEMU_INTERNAL_H
#define FCEMU_INTERNAL_H

#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <fpgacomm/hw.h>
#include "fabric.h"
#include "fcemu.h"
#include "vtime.h"

struct fcemu_stage;

struct fcemu_dma {
	unsigned int index;
	uint32_t seen_doorbell; /* last DOORBELL value latched */
	uint32_t seen_reset;	/* last RESET value acted on */
	bool busy;
	uint32_t seq;	  /* doorbell value of the running chain */
	uint32_t count;	  /* descriptors in the running chain */
	uint32_t cur;	  /* descriptor being moved */
	uint64_t cur_off; /* bytes of it already moved */
	/* fabric (emu/fabric_io.c) */
	struct fc_hw_pkt part; /* DATA packet still being filled */
	uint32_t part_len;     /* payload bytes in it */
	uint64_t fence_need;   /* nodes this chain PUT to */
	uint64_t fence_sent;   /* ... that have their FENCE */
	uint64_t fence_wait;   /* ... whose FENCE_ACK is due */
	uint32_t fence_token;  /* tells this chain's acks from stale ones */
	uint32_t fence_err;    /* FC_DMA_ERR_* an ack reported */
	bool bursts_shared;    /* receivers may share its bursts out */
	uint64_t pkt_nodes;    /* nodes PUT to by packets or bursts */
	/* peer sources of packets, staged (emu/peer.c) until the chain ends */
	struct fcemu_stage *stages;
	uint32_t stage_desc; /* 1 + the descriptor staged at stage_ptr */
	const uint8_t *stage_ptr;
	/* a message left unfinished by a reset or error is ABORTed */
	bool msg_open; /* packets of a message are out, EOM not */
	bool abort_owed;
	uint8_t msg_node, msg_chan;
	/* virtual time of the running chain (vtime.h), ps */
	uint64_t vt;
	bool vt_read, vt_wrote; /* a host read paid; host written */
	struct fc_hw_desc chain[FC_DMA_MAX_CHAIN];
};

/* A FENCE_ACK owed to an engine of another node. */
struct fcemu_ack {
	uint32_t token;
	bool owed;
	uint8_t failed; /* FC_DMA_ERR_* of a write or read not applied */
};

struct fcemu_streams;

/* A read request being answered: PUTs to @reply, from @src on. */
struct fcemu_get {
	uint8_t node, engine; /* the requester */
	uint64_t reply;	      /* region and offset there, node bits zero */
	const uint8_t *src;   /* the bytes: ours, or @copy */
	uint8_t *copy;	      /* peer memory read once, freed at the end */
	uint64_t len, done;
};

/* The event queue as the board works by it (emu/eq.c). */
struct fcemu_eq {
	uint32_t ctrl; /* FC_EQ_CTRL last acted on */
	uint32_t slots;
	uint32_t tail; /* entries written since ENABLE */
	uint64_t base; /* bus address */
	/* the queue's translation, kept as an IOTLB keeps it: NULL after
	 * fcemu_iotlb_flush() or for another base or size */
	uint8_t *q;
	uint64_t q_base;
	uint32_t q_slots;
};

/* Entries one ejection batch writes: TAIL once at its end. */
struct fcemu_eq_batch {
	int state;    /* 0 not opened, 1 open, -1 unusable */
	bool stalled; /* counted in FC_EQ_STALLS */
	uint8_t *q;
	uint32_t start, tail, head;
};

#define FCEMU_MAX_UKERNELS 64

struct fcemu_ukernel {
	uint32_t id;
	fcemu_kernel_fn fn;
	void *ctx;
};

struct fcemu {
	struct fcemu_config cfg;
	volatile uint32_t *bar0;
	bool own_bar0;
	uint8_t *mem;
	uint64_t mem_size;
	const struct fcemu_host_ops *ops;
	void *ctx;
	uint32_t seen_board_reset;
	unsigned int next_engine; /* round-robin start for progress */
	/* an engine left a doorbell or reset for a later notice */
	bool dma_recheck;
	unsigned int engines_busy; /* engines with a chain running */
	struct fcemu_dma dma[FC_DMA_MAX_ENGINES];
	struct fcemu_cluster *cluster; /* NULL: a board on its own */
	unsigned int acks_owed;
	unsigned int aborts_owed; /* engines with abort_owed */
	uint64_t ejected;	  /* packets taken from the ejection ring */
	struct fcemu_eq eq;
	struct fcemu_ack acks[FC_MAX_NODES][FC_DMA_MAX_ENGINES];
	/* local stores and their streams (emu/stream.c), NULL: none */
	struct fcemu_streams *streams;
	pthread_mutex_t kernel_lock; /* adds to ukernels */
	unsigned int n_ukernels;
	struct fcemu_ukernel ukernels[FCEMU_MAX_UKERNELS];
	void *bounce;		   /* peer to peer copies, FCEMU_BOUNCE bytes */
	struct fcemu_ipc_map *ipc; /* others' GPU memory opened (emu/ipc.c) */
	/* read requests being answered, oldest first (emu/get.c) */
	struct fcemu_get *gets; /* get_cap of them, a ring */
	unsigned int get_cap, get_head, get_tail;
	struct fcemu_vtime vt; /* virtual time (docs/model.md) */
};

/* emu/cluster.c: board @node's virtual time for its cluster mapping. */
struct fcemu_cluster;
void fcemu__cluster_set_vt(struct fcemu_cluster *c, unsigned int node,
			   struct fcemu_vtime *vt);

/* Region and offset of a PUT's destination (node bits zero). */
#define FCEMU_PUT_ADDR_MASK                                  \
	((FC_FABRIC_REGION_MASK << FC_FABRIC_REGION_SHIFT) | \
	 FC_FABRIC_OFFSET_MASK)

/* Single-writer registers in shared memory: plain 32-bit atomic accesses. */
static inline uint32_t emu_rd(const struct fcemu *emu, uint32_t off)
{
	return __atomic_load_n(&emu->bar0[off / 4], __ATOMIC_ACQUIRE);
}

static inline void emu_wr(struct fcemu *emu, uint32_t off, uint32_t val)
{
	__atomic_store_n(&emu->bar0[off / 4], val, __ATOMIC_RELEASE);
}

static inline void emu_inc(struct fcemu *emu, uint32_t off)
{
	emu_wr(emu, off, emu_rd(emu, off) + 1);
}

/*
 * The interrupt block: count @vector in IRQ_COUNT and, if it is enabled,
 * call the host's callback (ops->raise_irq). Here, not in board.c, so that
 * the engines below the board raise interrupts without calling up into it.
 */
static inline void fcemu__raise_irq(struct fcemu *emu, unsigned int vector)
{
	emu_inc(emu, FC_REG_IRQ_COUNT(vector));
	if ((emu_rd(emu, FC_REG_IRQ_ENABLE) & (1u << vector)) &&
	    emu->ops->raise_irq)
		emu->ops->raise_irq(emu->ctx, vector);
}

/* emu/pio.c: take the packets the host wrote into the window; empty it */
void fcemu__pio_notice(struct fcemu *emu);

void fcemu__eq_notice(struct fcemu *emu);
/* RETURN VALUE: 1 written, 0 queue full (try later), -1 queue unusable. */
int fcemu__eq_put_slow(struct fcemu *emu, struct fcemu_eq_batch *b,
		       const struct fc_hw_pkt *pkt);

/* Entry @tail of the queue at @q, which has room for it: the packet, its
 * phase. */
static inline void fcemu__eq_write(uint8_t *q, uint32_t tail, uint32_t slots,
				   const struct fc_hw_pkt *pkt)
{
	struct fc_hw_pkt *e =
		(struct fc_hw_pkt *)(q + (size_t)(tail & (slots - 1)) *
						 FC_EQ_ENTRY_SIZE);
	/* FC_EQ_PHASE_OF() without its division: slots is a power of two */
	uint32_t hdr = (le32toh(pkt->hdr) & ~FC_PKT_VC) |
		       (tail & slots ? 0 : FC_EQ_PHASE);

	memcpy(e->payload, pkt->payload, sizeof(e->payload));
	/* The header last: it is what the host polls. */
	__atomic_store_n(&e->hdr, htole32(hdr), __ATOMIC_RELEASE);
}

/* Entries an open batch has room for, as last seen (0 if not open). */
static inline uint32_t fcemu__eq_room(const struct fcemu *emu,
				      const struct fcemu_eq_batch *b)
{
	uint32_t used = b->tail - b->head;

	return b->state > 0 && used < emu->eq.slots ? emu->eq.slots - used : 0;
}

/* Inline while the batch is open and has room as last seen (per packet
 * of a run); else the queue is opened, its HEAD read again or a stall
 * counted. Same RETURN VALUE. */
static inline int fcemu__eq_put(struct fcemu *emu, struct fcemu_eq_batch *b,
				const struct fc_hw_pkt *pkt)
{
	if (!fcemu__eq_room(emu, b))
		return fcemu__eq_put_slow(emu, b, pkt);
	fcemu__eq_write(b->q, b->tail++, emu->eq.slots, pkt);
	return 1;
}
void fcemu__eq_batch_end(struct fcemu *emu, struct fcemu_eq_batch *b);
void fcemu__pio_reset(struct fcemu *emu);

/* emu/dma.c */
void fcemu__dma_init(struct fcemu *emu, struct fcemu_dma *dma,
		     unsigned int index);
/* Act on new RESET and DOORBELL values; what it must leave for later
 * (a doorbell of a busy engine, a reset not heard) sets dma_recheck. */
void fcemu__dma_notice(struct fcemu *emu, struct fcemu_dma *dma);
void fcemu__dma_reset(struct fcemu *emu, struct fcemu_dma *dma);
uint64_t fcemu__dma_progress(struct fcemu *emu, struct fcemu_dma *dma,
			     uint64_t budget);

/* emu/stream.c: local stores, each with two streams run by worker threads */
#define FCEMU_LS_SIZE	(128u << 10)
#define FCEMU_PCHANNELS 32
int fcemu__streams_create(struct fcemu *emu);
void fcemu__streams_destroy(struct fcemu *emu);
/* Act on new LS RESET and START values; @board_reset: reset every LS;
 * @written: a stream register may have moved (else only a board reset or
 * a START that waited for its stream's run to end is acted on). */
void fcemu__streams_notice(struct fcemu *emu, bool board_reset, bool written);
bool fcemu__is_stream_command(uint32_t off);
/* Virtual time: the host looks; ended stream runs reach the clock. */
void fcemu__streams_vt_sync(struct fcemu *emu);

/* emu/kernels.c */
uint32_t fcemu__kernels_builtin(void);
/* For struct fc_hw_sgeom: @ctx is the board. */
int fcemu__kernel_present(void *ctx, uint32_t id);
/* RETURN VALUE: the kernel's result (0 good). */
int fcemu__kernel_run(struct fcemu *emu, uint32_t id, void *dst,
		      const void *src, uint32_t n, uint32_t arg);

/* emu/copy.c: move data as an engine does (memmove semantics) */
void fcemu__copy(void *dst, const void *src, size_t len);

/* emu/space.c: resolve descriptor ends to memory */
int fcemu__check_range(struct fcemu *emu, unsigned int space, uint64_t addr,
		       uint64_t len);
void *fcemu__resolve(struct fcemu *emu, unsigned int space, uint64_t addr,
		     uint64_t len);
/* One end of a copy: CPU memory at ptr, or (ptr NULL) a peer window at bus. */
struct fcemu_span {
	void *ptr;
	uint64_t bus;
};
/*
 * Where a PUT, burst or GET reply to @addr (region, offset) from node @src
 * lands, or where a GET reads (@access FCEMU_PW_READ): the peer region
 * through the window. RETURN VALUE: FC_DMA_ERR_NONE, FC_DMA_ERR_WINDOW
 * (the window refused and counted it), FC_DMA_ERR_ADDR.
 */
int fcemu__put_locate(struct fcemu *emu, uint64_t addr, uint64_t len,
		      int access, unsigned int src, struct fcemu_span *span);
/* A descriptor end in this node's own peer region: its permission. */
int fcemu__pw_local_perm(struct fcemu *emu, unsigned int space, uint64_t addr,
			 uint64_t len, int access);

/* emu/window.c: the peer window (FC_PW_*) */
#define FCEMU_PW_READ  0
#define FCEMU_PW_WRITE 1
#define FCEMU_PW_ANY   2 /* valid and in bounds, either permission */
void fcemu__pw_init(struct fcemu *emu);
bool fcemu__pw_is_ctrl(uint32_t off);
/* Entries whose CTRL changed: acknowledged in SEEN. */
void fcemu__pw_notice(struct fcemu *emu);
/* RETURN VALUE: FC_DMA_ERR_NONE and *bus, or FC_DMA_ERR_WINDOW (counted,
 * LAST_REFUSED naming @src). */
int fcemu__pw_translate(struct fcemu *emu, uint64_t off, uint64_t len,
			int access, unsigned int src, uint64_t *bus);
bool fcemu__peer_span(struct fcemu *emu, uint64_t bus, uint64_t len);
bool fcemu__locate(struct fcemu *emu, unsigned int space, uint64_t addr,
		   uint64_t len, struct fcemu_span *span);

/* emu/peer.c: a copy with one end or both in peer windows; FC_DMA_ERR_* */
int fcemu__peer_copy(struct fcemu *emu, const struct fcemu_span *to,
		     const struct fcemu_span *from, uint64_t len);
/*
 * A copy of @len bytes of the peer window at @bus, kept with @dma's chain
 * (the packets or bursts made of it are read until its fences are
 * answered). RETURN VALUE: the copy, or NULL (no memory, the move failed).
 */
const uint8_t *fcemu__peer_stage(struct fcemu *emu, struct fcemu_dma *dma,
				 uint64_t bus, uint64_t len);
/* Free @dma's staged copies: its chain has ended. */
void fcemu__peer_unstage(struct fcemu_dma *dma);

/* emu/fabric_io.c and fabric_eject.c: the board's side of the fabric */
/* Does a descriptor to (@space, @addr) go out as packets? */
bool fcemu__fabric_packets(const struct fcemu *emu, unsigned int space,
			   uint64_t addr);
/* Chain check of such a destination: FC_DMA_ERR_*. */
int fcemu__fabric_check(struct fcemu *emu, uint64_t addr, uint64_t len);
void fcemu__fabric_chain_start(struct fcemu *emu, struct fcemu_dma *dma);
/*
 * Packetise the current descriptor from cur_off, up to @budget bytes.
 * RETURN VALUE: bytes taken; *err an FC_DMA_ERR_* if the source vanished.
 * The descriptor is done when cur_off == len on return and *blocked is false.
 */
uint64_t fcemu__fabric_send(struct fcemu *emu, struct fcemu_dma *dma,
			    uint64_t budget, bool *blocked, int *err);
/* The engine stops (reset, error): a message it left open is aborted. */
void fcemu__fabric_abort(struct fcemu *emu, struct fcemu_dma *dma);
/* Inject the ABORTs owed. RETURN VALUE: true when none is owed any more. */
bool fcemu__fabric_flush_aborts(struct fcemu *emu);
/* After the last descriptor: FENCE each node PUT to and wait for the acks.
 * RETURN VALUE: 1 done, 0 still waiting, or -FC_DMA_ERR_ROUTE. */
int fcemu__fabric_fence(struct fcemu *emu, struct fcemu_dma *dma);
/* A FENCE or FENCE_ACK (@type) to @node for @engine's @token (an ack's
 * @status). RETURN VALUE: 1 injected, 0 no room. */
int fcemu__fabric_inject_fence(struct fcemu *emu, unsigned int type,
			       unsigned int node, unsigned int engine,
			       uint32_t token, uint8_t status);

/* emu/burst.c: large PUTs as one record, applied with one copy */
/* The emulator's own packet type: a run of PUT packets as one record.
 * Never seen by hosts. */
#define FCEMU_PKT_T_BURST 15
#define FCEMU_BURST_MIN	  (4u << 10)	  /* smaller PUTs go as packets */
#define FCEMU_BURST_MAX	  (1u << 20)	  /* bytes per record */
#define FCEMU_IPC_STEP	  FC_DESC_MAX_LEN /* bytes per direct GPU copy */
/* May this board send bursts to @node? */
bool fcemu__burst_usable(struct fcemu *emu, unsigned int node);
/* RETURN VALUE: 1 injected, 0 no room in the injection ring. */
int fcemu__burst_inject(struct fcemu *emu, unsigned int chan, unsigned int node,
			uint64_t dst, const void *src, uint32_t len);
/* Take shares of the bursts this board sent to @nodes that their
 * receivers are applying now. */
void fcemu__burst_help(struct fcemu *emu, uint64_t nodes);
/* Is a burst of @len bytes shared out by its receiver? */
bool fcemu__burst_shared(uint64_t len);
/* Apply a burst record addressed to this board. RETURN VALUE:
 * FC_DMA_ERR_NONE, or why it was not (FC_DMA_ERR_WINDOW, _ADDR). */
int fcemu__burst_apply(struct fcemu *emu, const struct fc_hw_pkt *pkt,
		       uint32_t hdr);
/* emu/ipc.c: puts straight into another process's GPU memory */
/*
 * Write @len bytes from @src (located) into peer window offset @off of
 * @node directly, when its board published a CUDA IPC handle for the
 * entry and the entry lets this write in. RETURN VALUE: @len, or 0: not
 * done (the caller sends it the usual way; the receiver decides).
 */
struct fcemu_span;
uint64_t fcemu__ipc_put(struct fcemu *emu, unsigned int node, uint64_t off,
			const struct fcemu_span *src, uint64_t len);
/* Before entry @entry's SEEN takes a new CTRL: no direct copy into it
 * still runs. RETURN VALUE: false when one still ran after the bound. */
bool fcemu__ipc_drain(struct fcemu *emu, unsigned int entry);
void fcemu__ipc_fini(struct fcemu *emu);
/* A board taking its node: clear what an earlier process left there. */
void fcemu__ipc_claim(struct fcemu *emu);

/* emu/peer.c: its bounce buffer's size */
#define FCEMU_BOUNCE (4u << 20)

/* With a model: the host sends (a PIO message, a doorbell); one that had
 * promised a later departure while waiting is at its clock again. */
static inline void fcemu__host_acts(struct fcemu *emu)
{
	emu->vt.acts++;
	if (emu->vt.order && emu->cluster)
		fcemu__vt_acts(emu->cluster, emu->cfg.node_id);
}

/* emu/get.c: read requests (FC_PKT_T_GET), both sides */
/* Is (@space, @addr) a source on another node (a descriptor that GETs)? */
bool fcemu__get_desc(const struct fcemu *emu, unsigned int space,
		     uint64_t addr);
/* Chain check of such a source: FC_DMA_ERR_*. */
int fcemu__get_check(struct fcemu *emu, uint64_t src, uint64_t len);
/* Send the current descriptor's GET. RETURN VALUE: 1 sent, 0 no room. */
int fcemu__get_send(struct fcemu *emu, struct fcemu_dma *dma);
/* A GET arrived: queued, or refused in *@failed (the requester's
 * FENCE_ACK status). */
void fcemu__get_take(struct fcemu *emu, const struct fc_hw_pkt *pkt,
		     uint32_t hdr, uint8_t *failed);
/* Free the answers still queued (the board goes). */
void fcemu__get_free(struct fcemu *emu);
/* Answer the GETs taken as far as the injection ring lets us.
 * RETURN VALUE: true when none is left. */
bool fcemu__get_answer(struct fcemu *emu);

/* Deliver packets addressed to this board. RETURN VALUE: packets taken. */
unsigned int fcemu__fabric_eject(struct fcemu *emu, unsigned int budget);

#endif /* FCEMU_INTERNAL_H */
