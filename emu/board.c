// SPDX-License-Identifier: MIT
/*
 * The emulated board: identity registers, board memory, interrupts, and the
 * dispatch of host notices and progress to the engines.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu_internal.h"

#define EMU_APERTURE_SIZE	(1u << 20)

void fcemu_config_default(struct fcemu_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->board_mem_size = FCEMU_DEFAULT_MEM;
	cfg->dma_engines = 2;
	cfg->num_ports = 4;	/* a 2D torus node */
}

void fcemu__raise_irq(struct fcemu *emu, unsigned int vector)
{
	emu_inc(emu, FC_REG_IRQ_COUNT(vector));
	if ((emu_rd(emu, FC_REG_IRQ_ENABLE) & (1u << vector)) &&
	    emu->ops->raise_irq)
		emu->ops->raise_irq(emu->ctx, vector);
}

static void init_regs(struct fcemu *emu)
{
	const struct fcemu_config *cfg = &emu->cfg;

	emu_wr(emu, FC_REG_ID, cfg->bad_id ? 0xffffffffu : FC_HW_ID_MAGIC);
	emu_wr(emu, FC_REG_VERSION, FC_HW_VERSION);
	emu_wr(emu, FC_REG_CAPS, FC_CAP_DMA | FC_CAP_BOARD_MEM | FC_CAP_EMULATED);
	emu_wr(emu, FC_REG_NODE_ID, cfg->node_id);
	emu_wr(emu, FC_REG_NUM_DMA, cfg->dma_engines);
	emu_wr(emu, FC_REG_NUM_PORTS, cfg->num_ports);
	emu_wr(emu, FC_REG_MEM_SIZE_LO, (uint32_t)emu->mem_size);
	emu_wr(emu, FC_REG_MEM_SIZE_HI, (uint32_t)(emu->mem_size >> 32));
	emu_wr(emu, FC_REG_SCRATCH_ECHO, ~emu_rd(emu, FC_REG_SCRATCH));
	emu_wr(emu, FC_REG_LINK_STATE, 0);	/* no links until a fabric */
	emu_wr(emu, FC_REG_APERTURE_SIZE, EMU_APERTURE_SIZE);
	emu_wr(emu, FC_EMU_MAGIC, FC_EMU_MAGIC_VALUE);
}

int fcemu_create(struct fcemu **emup, const struct fcemu_config *cfg,
		 const struct fcemu_host_ops *ops, void *ctx)
{
	struct fcemu *emu;
	unsigned int i;

	if (!emup || !cfg || !ops || !ops->translate)
		return -EINVAL;
	if (!cfg->board_mem_size || cfg->node_id >= FC_MAX_NODES ||
	    !cfg->dma_engines || cfg->dma_engines > FC_DMA_MAX_ENGINES ||
	    cfg->num_ports > FC_MAX_PORTS)
		return -EINVAL;

	emu = calloc(1, sizeof(*emu));
	if (!emu)
		return -ENOMEM;
	emu->cfg = *cfg;
	emu->ops = ops;
	emu->ctx = ctx;

	emu->bar0 = cfg->bar0;
	if (!emu->bar0) {
		emu->bar0 = calloc(1, FC_BAR0_SIZE);
		if (!emu->bar0)
			goto err_free_emu;
		emu->own_bar0 = true;
	}

	/* Reserved, not committed: pages cost RAM only once written. */
	emu->mem_size = cfg->board_mem_size;
	emu->mem = mmap(NULL, emu->mem_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (emu->mem == MAP_FAILED)
		goto err_free_bar0;
	/* Large pages where the kernel allows: fewer faults and TLB misses. */
	madvise(emu->mem, emu->mem_size, MADV_HUGEPAGE);

	/* Power-up: every register zero, then the board's identity. */
	memset((void *)emu->bar0, 0, FC_BAR0_SIZE);
	init_regs(emu);
	emu->seen_board_reset = emu_rd(emu, FC_REG_BOARD_RESET);
	for (i = 0; i < cfg->dma_engines; i++)
		fcemu__dma_init(emu, &emu->dma[i], i);
	*emup = emu;
	return 0;

err_free_bar0:
	if (emu->own_bar0)
		free((void *)emu->bar0);
err_free_emu:
	free(emu);
	return -ENOMEM;
}

void fcemu_destroy(struct fcemu *emu)
{
	if (!emu)
		return;
	munmap(emu->mem, emu->mem_size);
	if (emu->own_bar0)
		free((void *)emu->bar0);
	free(emu);
}

volatile uint32_t *fcemu_bar0(struct fcemu *emu)
{
	return emu->bar0;
}

void *fcemu_board_mem(struct fcemu *emu, uint64_t *size)
{
	if (size)
		*size = emu->mem_size;
	return emu->mem;
}

bool fcemu_host_writable(uint32_t off)
{
	return fc_hw_host_writable(off);
}

void fcemu_host_write(struct fcemu *emu, uint32_t off, uint32_t val)
{
	/* Like the hardware: writes to board-owned registers are dropped. */
	if (off >= FC_BAR0_SIZE || off % 4 || !fcemu_host_writable(off))
		return;
	emu_wr(emu, off, val);
	fcemu_notice(emu);
}

void fcemu_notice(struct fcemu *emu)
{
	uint32_t reset = emu_rd(emu, FC_REG_BOARD_RESET);
	unsigned int i;

	emu_wr(emu, FC_REG_SCRATCH_ECHO, ~emu_rd(emu, FC_REG_SCRATCH));
	if (reset != emu->seen_board_reset) {
		emu->seen_board_reset = reset;
		for (i = 0; i < emu->cfg.dma_engines; i++)
			fcemu__dma_reset(emu, &emu->dma[i]);
		emu_wr(emu, FC_REG_BOARD_RESET_ACK, reset);
	}
	for (i = 0; i < emu->cfg.dma_engines; i++)
		fcemu__dma_notice(emu, &emu->dma[i]);
}

uint64_t fcemu_progress(struct fcemu *emu, uint64_t budget)
{
	unsigned int n = emu->cfg.dma_engines;
	uint64_t moved = 0;
	unsigned int i;

	if (emu_rd(emu, FC_EMU_FAULT_DMA_STALL))
		return 0;
	/* Share the budget between engines, starting where we left off. */
	for (i = 0; i < n && moved < budget; i++) {
		struct fcemu_dma *dma = &emu->dma[(emu->next_engine + i) % n];

		moved += fcemu__dma_progress(emu, dma, budget - moved);
	}
	emu->next_engine = (emu->next_engine + 1) % n;
	return moved;
}

bool fcemu_busy(struct fcemu *emu)
{
	unsigned int i;

	for (i = 0; i < emu->cfg.dma_engines; i++)
		if (emu->dma[i].busy)
			return true;
	return false;
}
