/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/backend/backend_emu*.c: the emulated board as this
 * backend holds it, and its DMA engines' queues (backend_emu_dma.c), which
 * the backend's calls (backend_emu.c) use.
 */
#ifndef FC_BACKEND_EMU_INTERNAL_H
#define FC_BACKEND_EMU_INTERNAL_H

#include "internal.h"
#include "emu_iommu.h"
#include "fcemu.h"

#define EMU_QUEUE_DEPTH 64	     /* chains queued or running */
#define EMU_FAIL_LOG	128	     /* failed chains remembered */
#define EMU_STEP_BYTES	(8ull << 20) /* engine work per poll */
#define EMU_TABLE_BYTES 8192	     /* one chain's descriptor table */
#define EMU_TABLES_LEN \
	((size_t)FC_DMA_MAX_ENGINES * EMU_QUEUE_DEPTH * EMU_TABLE_BYTES)
#define EMU_CLUSTER_MAX	 32
#define EMU_MIN_MEM	 4096ull
#define EMU_MAX_MEM	 (1ull << 40)
#define EMU_JOIN_WAIT_MS 30000 /* a job's rank 0 creates its cluster */

struct emu_fail {
	uint64_t seq; /* of its engine */
	struct fc_dma_result res;
};

/*
 * One DMA engine's queue of chains. Ticket t of engine e is chain number
 * seq = t / FC_DMA_MAX_ENGINES of that engine, e = t % FC_DMA_MAX_ENGINES;
 * an engine's chains end in order, those of different engines in any.
 */
struct emu_engine {
	struct fc_hw_desc *tables; /* EMU_QUEUE_DEPTH descriptor tables */
	uint64_t tables_bus;
	uint16_t count[EMU_QUEUE_DEPTH]; /* descriptors in each table */
	uint64_t last_seq;		 /* newest chain handed out */
	uint64_t done_upto;		 /* every chain up to here has ended */
	bool running; /* chain done_upto + 1 is on the engine */
	uint32_t reset_seq;
	uint32_t board_reset_seen; /* BOARD_RESET_ACK at the last kick */
	struct emu_fail fails[EMU_FAIL_LOG];
	unsigned int fail_next;
	uint64_t newest_fail;	 /* the last chain recorded as failed */
	uint64_t forgotten_upto; /* results up to here may be evicted */
};

struct emu_board {
	struct fcemu *emu;
	volatile uint32_t *bar0; /* fcemu_bar0(emu) */
	struct fc__iommu mmu;
	void *tables;	      /* every engine's, in one mapping */
	unsigned int engines; /* of the board's, those we queue on */
	uint32_t running;     /* bit e: eng[e].running */
	struct emu_engine eng[FC_DMA_MAX_ENGINES];
	char cluster[EMU_CLUSTER_MAX + 1];
	unsigned int index;
	struct fcemu_cluster *fabric; /* the cluster joined, or NULL */
	struct fcemu_bridge *bridge;  /* its links to other hosts, or NULL */
};

static inline struct emu_board *board_of(struct fc_dev *dev)
{
	return dev->be_priv;
}

static inline uint32_t rd(struct emu_board *b, uint32_t off)
{
	return __atomic_load_n(&b->bar0[off / 4], __ATOMIC_ACQUIRE);
}

/* A host write, seen by the board as a bus write would be. */
static inline void wr(struct emu_board *b, uint32_t off, uint32_t val)
{
	fcemu_host_write(b->emu, off, val);
}

/* ---- backend_emu_dma.c: the engines' queues ---- */

/* Take every engine's ended chains (their results, the next kick). */
void fc__emu_reap(struct emu_board *b);
/* The backend's submit, poll and reset (struct fc__backend). */
int fc__emu_submit(struct fc_dev *dev, unsigned int engine,
		   const struct fc_xfer *xfers, unsigned int n,
		   uint64_t *ticket);
int fc__emu_poll(struct fc_dev *dev, uint64_t ticket, struct fc_dma_result *res,
		 uint64_t *moved);
int fc__emu_reset(struct fc_dev *dev);

#endif /* FC_BACKEND_EMU_INTERNAL_H */
