/* SPDX-License-Identifier: MIT */
/* Private to emu/: the board's state behind the register file. */
#ifndef FCEMU_INTERNAL_H
#define FCEMU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fpgacomm/hw.h>
#include "fcemu.h"

struct fcemu_dma {
	unsigned int index;
	uint32_t seen_doorbell;		/* last DOORBELL value latched */
	uint32_t seen_reset;		/* last RESET value acted on */
	bool busy;
	uint32_t seq;			/* doorbell value of the running chain */
	uint32_t count;			/* descriptors in the running chain */
	uint32_t cur;			/* descriptor being moved */
	uint64_t cur_off;		/* bytes of it already moved */
	struct fc_hw_desc chain[FC_DMA_MAX_CHAIN];
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
	unsigned int next_engine;	/* round-robin start for progress */
	struct fcemu_dma dma[FC_DMA_MAX_ENGINES];
};

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

void fcemu__raise_irq(struct fcemu *emu, unsigned int vector);

/* emu/dma.c */
void fcemu__dma_init(struct fcemu *emu, struct fcemu_dma *dma, unsigned int index);
void fcemu__dma_notice(struct fcemu *emu, struct fcemu_dma *dma);
void fcemu__dma_reset(struct fcemu *emu, struct fcemu_dma *dma);
uint64_t fcemu__dma_progress(struct fcemu *emu, struct fcemu_dma *dma, uint64_t budget);

/* emu/copy.c: move data as an engine does (memmove semantics) */
void fcemu__copy(void *dst, const void *src, size_t len);

/* emu/space.c: resolve descriptor ends to memory */
int fcemu__check_range(struct fcemu *emu, unsigned int space, uint64_t addr, uint64_t len);
void *fcemu__resolve(struct fcemu *emu, unsigned int space, uint64_t addr, uint64_t len);

#endif /* FCEMU_INTERNAL_H */
