// SPDX-License-Identifier: MIT
/*
 * The emulated board: identity registers, board memory, and the dispatch of
 * host notices and progress to the engines (interrupts: emu_internal.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu_internal.h"
#include "fabric.h"

#define EMU_APERTURE_SIZE (1u << 20)

void fcemu_config_default(struct fcemu_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->board_mem_size = FCEMU_DEFAULT_MEM;
	cfg->dma_engines = 2;
	cfg->num_ports = 4; /* a 2D torus node */
	cfg->num_ls = FC_MAX_LS;
}

/* Link ports that are up, from the port blocks the cluster set up. */
static uint32_t link_state(struct fcemu *emu)
{
	uint32_t links = 0;
	unsigned int p;

	for (p = 1; emu->cluster && p <= emu->cfg.num_ports; p++)
		if (emu_rd(emu, FC_PORT_REG(p, FC_PORT_STATUS)) & FC_PORT_UP)
			links |= 1u << (p - 1);
	return links;
}

static void init_regs(struct fcemu *emu)
{
	const struct fcemu_config *cfg = &emu->cfg;
	uint32_t caps = FC_CAP_DMA | FC_CAP_BOARD_MEM | FC_CAP_PEER_MAP |
			FC_CAP_EMULATED;

	if (emu->cluster)
		caps |= FC_CAP_ROUTER | FC_CAP_CHANNELS | FC_CAP_FABRIC_DMA |
			FC_CAP_CHAN_EVENTS | FC_CAP_PIO_SEND |
			FC_CAP_CHAN_SEEN | FC_CAP_EVENT_QUEUE |
			FC_CAP_PEER_WINDOW | FC_CAP_FABRIC_GET;
	emu_wr(emu, FC_REG_ID, cfg->bad_id ? 0xffffffffu : FC_HW_ID_MAGIC);
	emu_wr(emu, FC_REG_VERSION, FC_HW_VERSION);
	emu_wr(emu, FC_REG_CAPS, caps);
	emu_wr(emu, FC_REG_NODE_ID, cfg->node_id);
	emu_wr(emu, FC_REG_NUM_DMA, cfg->dma_engines);
	emu_wr(emu, FC_REG_NUM_PORTS, cfg->num_ports);
	emu_wr(emu, FC_REG_MEM_SIZE_LO, (uint32_t)emu->mem_size);
	emu_wr(emu, FC_REG_MEM_SIZE_HI, (uint32_t)(emu->mem_size >> 32));
	emu_wr(emu, FC_REG_SCRATCH_ECHO, ~emu_rd(emu, FC_REG_SCRATCH));
	emu_wr(emu, FC_REG_LINK_STATE, link_state(emu));
	emu_wr(emu, FC_REG_APERTURE_SIZE, EMU_APERTURE_SIZE);
	emu_wr(emu, FC_EMU_MAGIC, FC_EMU_MAGIC_VALUE);
	fcemu__pw_init(emu);
	/* In process every host write is seen (fpgacomm-emud sets its own). */
	if (emu->cluster)
		emu_wr(emu, FC_PIO_WATCH, 1);
}

/*
 * Power-up of the register file: all zero, except on a cluster board the
 * router and port blocks, which the cluster owns (tables loaded at its
 * creation, counters that other processes' routers write).
 */
static void clear_regs(struct fcemu *emu)
{
	uint8_t *b = (uint8_t *)emu->bar0;

	if (!emu->cluster) {
		memset(b, 0, FC_BAR0_SIZE);
		return;
	}
	memset(b, 0, FC_ROUTER_BASE);
	memset(b + FC_CHAN_BASE, 0, FC_BAR0_SIZE - FC_CHAN_BASE);
}

int fcemu_create(struct fcemu **emup, const struct fcemu_config *cfg,
		 const struct fcemu_host_ops *ops, void *ctx)
{
	struct fcemu *emu;
	unsigned int i;
	int ret = -ENOMEM;

	if (!emup || !cfg || !ops || !ops->translate)
		return -EINVAL;
	if (!cfg->board_mem_size || cfg->node_id >= FC_MAX_NODES ||
	    !cfg->dma_engines || cfg->dma_engines > FC_DMA_MAX_ENGINES ||
	    cfg->num_ports > FC_MAX_PORTS || cfg->num_ls > FC_MAX_LS)
		return -EINVAL;
	if (cfg->cluster &&
	    (cfg->bar0 ||
	     cfg->node_id >= fcemu_cluster_topology(cfg->cluster)->nodes))
		return -EINVAL;

	emu = calloc(1, sizeof(*emu));
	if (!emu)
		return -ENOMEM;
	emu->cfg = *cfg;
	emu->ops = ops;
	emu->ctx = ctx;
	emu->cluster = cfg->cluster;
	ret = fcemu__vt_init(&emu->vt);
	if (ret)
		goto err_free_emu;
	ret = -ENOMEM;
	if (emu->cluster) {
		emu->cfg.num_ports =
			fc_topo_ports(fcemu_cluster_topology(emu->cluster));
		emu->bar0 = fcemu_cluster_bar0(emu->cluster, cfg->node_id);
	}

	if (!emu->bar0)
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

	/* Power-up: registers zero, then the board's identity. */
	clear_regs(emu);
	init_regs(emu);
	emu->seen_board_reset = emu_rd(emu, FC_REG_BOARD_RESET);
	for (i = 0; i < cfg->dma_engines; i++)
		fcemu__dma_init(emu, &emu->dma[i], i);
	pthread_mutex_init(&emu->kernel_lock, NULL);
	if (fcemu__streams_create(emu))
		goto err_unmap_mem;
	if (emu->cluster)
		fcemu__cluster_set_vt(emu->cluster, cfg->node_id, &emu->vt);
	*emup = emu;
	return 0;

err_unmap_mem:
	pthread_mutex_destroy(&emu->kernel_lock);
	munmap(emu->mem, emu->mem_size);
err_free_bar0:
	if (emu->own_bar0)
		free((void *)emu->bar0);
err_free_emu:
	free(emu);
	return ret;
}

void fcemu_destroy(struct fcemu *emu)
{
	if (!emu)
		return;
	fcemu__streams_destroy(emu); /* its workers use board memory */
	if (emu->cluster)
		fcemu__cluster_set_vt(emu->cluster, emu->cfg.node_id, NULL);
	pthread_mutex_destroy(&emu->kernel_lock);
	munmap(emu->mem, emu->mem_size);
	free(emu->bounce);
	fcemu__ipc_fini(emu);
	for (unsigned int i = 0; i < FC_DMA_MAX_ENGINES; i++)
		fcemu__peer_unstage(&emu->dma[i]);
	fcemu__get_free(emu);
	if (emu->own_bar0)
		free((void *)emu->bar0);
	free(emu);
}

int fcemu_sim_time_ps(struct fcemu *emu, uint64_t *ps)
{
	if (!emu || !ps)
		return -EINVAL;
	if (!emu->vt.on)
		return -EOPNOTSUPP;
	fcemu__streams_vt_sync(emu);
	fcemu__vt_sync(&emu->vt);
	*ps = emu->vt.now;
	return 0;
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

/*
 * Does a write to @off command the board (a doorbell, a reset, the echo)?
 * The other host registers hold state the board reads when it needs it: a
 * chain's DESC_* at its doorbell, a ring's registers at ejection.
 */
static bool is_command(uint32_t off)
{
	uint32_t r = off - FC_DMA_BASE;

	if (off >= FC_DMA_BASE && r < FC_DMA_STRIDE * FC_DMA_MAX_ENGINES)
		return r % FC_DMA_STRIDE == FC_DMA_DOORBELL ||
		       r % FC_DMA_STRIDE == FC_DMA_RESET;
	if (fcemu__is_stream_command(off))
		return true;
	/* the fault knobs too: a reset held by a deaf engine goes through */
	return off == FC_REG_SCRATCH || off == FC_REG_BOARD_RESET ||
	       off >= FC_EMU_BASE;
}

/*
 * Endpoints whose CTRL changed: acknowledged in SEEN. The board's own
 * process ejects between calls, never during one, so from here on it
 * works by the new value.
 */
static void chan_seen(struct fcemu *emu)
{
	unsigned int c;
	uint32_t ctrl;

	for (c = 0; c < FC_MAX_CHANNELS; c++) {
		ctrl = emu_rd(emu, FC_CHAN_REG(c, FC_CHAN_CTRL));
		if (ctrl != emu_rd(emu, FC_CHAN_REG(c, FC_CHAN_SEEN)))
			emu_wr(emu, FC_CHAN_REG(c, FC_CHAN_SEEN), ctrl);
	}
}

static void command_notice(struct fcemu *emu, bool streams, int engine);

/* The engine whose DOORBELL or RESET @off is, or -1 (any other command). */
static int command_engine(const struct fcemu *emu, uint32_t off)
{
	uint32_t e = (off - FC_DMA_BASE) / FC_DMA_STRIDE;

	if (off < FC_DMA_BASE || e >= emu->cfg.dma_engines)
		return -1;
	return (int)e;
}

static bool is_chan_ctrl(uint32_t off)
{
	uint32_t r = off - FC_CHAN_BASE;

	return off >= FC_CHAN_BASE && r < FC_CHAN_STRIDE * FC_MAX_CHANNELS &&
	       r % FC_CHAN_STRIDE == FC_CHAN_CTRL;
}

void fcemu_host_write(struct fcemu *emu, uint32_t off, uint32_t val)
{
	/* Like the hardware: writes to board-owned registers are dropped. */
	if (off >= FC_BAR0_SIZE || off % 4 || !fcemu_host_writable(off))
		return;
	emu_wr(emu, off, val);
	if (off == FC_PIO_TAIL)
		fcemu__pio_notice(emu);
	else if (is_chan_ctrl(off))
		emu_wr(emu, off - FC_CHAN_CTRL + FC_CHAN_SEEN, val);
	else if (fcemu__pw_is_ctrl(off))
		fcemu__pw_notice(emu);
	else if (off == FC_EQ_CTRL)
		fcemu__eq_notice(emu);
	else if (is_command(off))
		command_notice(emu, fcemu__is_stream_command(off),
			       command_engine(emu, off));
}

void fcemu_host_write_line(struct fcemu *emu, uint32_t off, const void *line)
{
	if (off < FC_PIO_WINDOW || off >= FC_PIO_SLOT(FC_PIO_SLOTS - 1) + 1 ||
	    (off - FC_PIO_WINDOW) % FC_PKT_SIZE)
		return;
	memcpy((uint8_t *)emu->bar0 + off, line, FC_PKT_SIZE);
}

/*
 * Doorbells, resets and the echo: what a trapped write of a command does;
 * @streams: a stream's START or an LS's RESET may have moved; @engine:
 * only that engine's DOORBELL or RESET did (-1: any engine's may have).
 */
static void command_notice(struct fcemu *emu, bool streams, int engine)
{
	uint32_t reset = emu_rd(emu, FC_REG_BOARD_RESET);
	/* Deaf: a wedged board, seen once it hears (the next notice). */
	bool board_reset = reset != emu->seen_board_reset &&
			   !emu_rd(emu, FC_EMU_FAULT_RESET_DEAF);
	unsigned int i;

	emu_wr(emu, FC_REG_SCRATCH_ECHO, ~emu_rd(emu, FC_REG_SCRATCH));
	if (board_reset) {
		emu->seen_board_reset = reset;
		for (i = 0; i < emu->cfg.dma_engines; i++)
			fcemu__dma_reset(emu, &emu->dma[i]);
		fcemu__pio_reset(emu);
	}
	/* Local stores: a board reset's is under way when it is acked. */
	fcemu__streams_notice(emu, board_reset, streams);
	if (board_reset)
		emu_wr(emu, FC_REG_BOARD_RESET_ACK, reset);
	/* The other engines only if one of them left something for later. */
	if (engine >= 0 && !board_reset && !emu->dma_recheck) {
		fcemu__dma_notice(emu, &emu->dma[engine]);
		return;
	}
	emu->dma_recheck = false;
	for (i = 0; i < emu->cfg.dma_engines; i++)
		fcemu__dma_notice(emu, &emu->dma[i]);
}

/*
 * A host that does not trap its writes (a VM's, behind ivshmem): every
 * register may have changed, a ring's CTRL and the window's TAIL too.
 */
void fcemu_notice(struct fcemu *emu)
{
	command_notice(emu, true, -1);
	if (emu->cluster) {
		chan_seen(emu);
		fcemu__pw_notice(emu);
		fcemu__eq_notice(emu);
	}
	if (emu_rd(emu, FC_PIO_TAIL) != emu_rd(emu, FC_PIO_HEAD))
		fcemu__pio_notice(emu);
}

static uint64_t engines_progress(struct fcemu *emu, uint64_t budget)
{
	unsigned int n = emu->cfg.dma_engines;
	uint64_t moved = 0;
	unsigned int i;

	if (emu_rd(emu, FC_EMU_FAULT_DMA_STALL))
		return 0;
	/* Share the budget between engines, starting where we left off. */
	for (i = 0; i < n && moved < budget && emu->engines_busy; i++) {
		struct fcemu_dma *dma = &emu->dma[(emu->next_engine + i) % n];

		if (dma->busy)
			moved += fcemu__dma_progress(emu, dma, budget - moved);
	}
	emu->next_engine = (emu->next_engine + 1) % n;
	return moved;
}

uint64_t fcemu_progress(struct fcemu *emu, uint64_t budget)
{
	uint64_t pkts = budget / FC_PKT_PAYLOAD, moved;

	if (!emu->cluster)
		return engines_progress(emu, budget);
	/*
	 * Deliver first (fence acks free waiting engines, and room in the
	 * ejection ring lets the router go on), then inject, route, and
	 * deliver what arrived. Routing is every board's, not just ours: an
	 * idle board's transit traffic moves whenever anyone makes progress.
	 */
	if (pkts > 4096)
		pkts = 4096;
	fcemu_cluster_note_down(emu->cluster, emu->cfg.node_id);
	moved = FC_PKT_SIZE * fcemu__fabric_eject(emu, (unsigned int)pkts);
	/* Window packets the injection queue had no room for. */
	if (emu_rd(emu, FC_PIO_TAIL) != emu_rd(emu, FC_PIO_HEAD))
		fcemu__pio_notice(emu);
	moved += engines_progress(emu, budget);
	fcemu_cluster_inject_route(emu->cluster, emu->cfg.node_id);
	moved += FC_PKT_SIZE *
		 fcemu_cluster_progress(
			 emu->cluster,
			 (unsigned int)pkts < 256 ? 256 : (unsigned int)pkts);
	moved += FC_PKT_SIZE * fcemu__fabric_eject(emu, (unsigned int)pkts);
	return moved;
}

/* Moves whenever a chain ends, well or not (each engine's DONE_SEQ). */
static uint32_t chains_done(struct fcemu *emu)
{
	uint32_t sum = 0;
	unsigned int i;

	for (i = 0; i < emu->cfg.dma_engines; i++)
		sum += emu_rd(emu, FC_DMA_REG(i, FC_DMA_DONE_SEQ));
	return sum;
}

bool fcemu_progress_news(struct fcemu *emu, uint64_t budget)
{
	uint64_t ejected = emu->ejected;
	uint32_t done = chains_done(emu);

	fcemu_progress(emu, budget);
	return emu->ejected != ejected || chains_done(emu) != done;
}

bool fcemu_flush_aborts(struct fcemu *emu)
{
	bool done;

	if (!emu->cluster || !emu->aborts_owed)
		return true;
	done = fcemu__fabric_flush_aborts(emu);
	fcemu_cluster_route_now(emu->cluster, emu->cfg.node_id);
	return done;
}

void fcemu_host_waits(struct fcemu *emu)
{
	if (emu->vt.order && emu->cluster)
		fcemu__vt_waits(emu->cluster, emu->cfg.node_id);
}

bool fcemu_busy(struct fcemu *emu)
{
	return emu->engines_busy;
}
