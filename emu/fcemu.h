/* SPDX-License-Identifier: MIT */
/*
 * libfcemu: the emulated fpgacomm board, a device model of the contract in
 * <fpgacomm/hw.h>. It owns no thread: a host (the library's emu backend, or
 * the fpgacomm-emud daemon behind a QEMU ivshmem device) stores register
 * writes into the BAR0 memory, calls fcemu_notice() so the board sees them,
 * and calls fcemu_progress() to let the engines move data.
 */
#ifndef FCEMU_H
#define FCEMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fcemu;
struct fcemu_cluster; /* emu/fabric.h */

/* What the board needs from its host. */
struct fcemu_host_ops {
	/*
	 * Translate a host bus address range to a pointer, or NULL when any
	 * byte of [bus, bus+len) is not mapped for the board (an IOMMU fault).
	 */
	void *(*translate)(void *ctx, uint64_t bus, uint64_t len);
	/* Deliver an interrupt on @vector (may be NULL: no interrupts). */
	void (*raise_irq)(void *ctx, unsigned int vector);
	/*
	 * Peer memory that the CPU cannot load or store (a GPU's), mapped at
	 * bus addresses like host memory; both NULL: there is none.
	 * peer_span: does [bus, bus+len) lie wholly in one such window?
	 * peer_move: copy @len bytes between CPU memory @cpu and the window
	 * at @bus, into the peer if @to_peer; 0, or -errno when it failed.
	 * translate() returns NULL for these windows.
	 */
	bool (*peer_span)(void *ctx, uint64_t bus, uint64_t len);
	int (*peer_move)(void *ctx, uint64_t bus, void *cpu, uint64_t len,
			 bool to_peer);
	/*
	 * Another process's GPU memory, opened from the CUDA IPC handle its
	 * board published (fcemu_pw_publish()); all NULL: none, puts into it
	 * go through the receiver. ipc_open: open @handle
	 * (FCEMU_IPC_HANDLE_SIZE bytes) where a copy from the peer window at
	 * @src_bus (0: CPU memory) can reach it; *@base its allocation here,
	 * *@token the host's for the two others. ipc_copy: @len bytes to
	 * @dst in such a mapping from CPU memory @cpu, else from the peer
	 * window at @src_bus, finished on return. 0, or -errno.
	 */
	int (*ipc_open)(void *ctx, const void *handle, uint64_t src_bus,
			uint64_t *base, void **token);
	int (*ipc_copy)(void *ctx, void *token, uint64_t dst, const void *cpu,
			uint64_t src_bus, uint64_t len);
	void (*ipc_close)(void *ctx, void *token, uint64_t base);
};

#define FCEMU_IPC_HANDLE_SIZE 64

struct fcemu_config {
	uint64_t board_mem_size; /* bytes; reserved, backed on first write */
	uint32_t node_id;
	uint32_t dma_engines; /* 1..FC_DMA_MAX_ENGINES */
	uint32_t num_ports;
	uint32_t bad_id;       /* test knob: ID reads all-ones */
	uint32_t num_ls;       /* local stores, 0..FC_MAX_LS (0: none) */
	uint32_t stream_cores; /* threads running streams; 0: CPUs */
	void *bar0;	       /* FC_BAR0_SIZE bytes, or NULL: allocate */
	/*
	 * A board of this cluster (node_id < its nodes), or NULL. The board's
	 * BAR0 is then its register file in the cluster (bar0 must be NULL),
	 * num_ports is the topology's, and the board has a router, channel
	 * endpoints and fabric DMA. The host claims the node
	 * (fcemu_cluster_claim()) before fcemu_create() and releases it after
	 * fcemu_destroy(); the cluster must outlive the board.
	 */
	struct fcemu_cluster *cluster;
};

#define FCEMU_DEFAULT_MEM (8ull << 30)

void fcemu_config_default(struct fcemu_config *cfg);

/* RETURN VALUE: 0 and *emup set; -EINVAL bad config; -ENOMEM. */
int fcemu_create(struct fcemu **emup, const struct fcemu_config *cfg,
		 const struct fcemu_host_ops *ops, void *ctx);
void fcemu_destroy(struct fcemu *emu);

/* The register file, FC_BAR0_SIZE bytes. */
volatile uint32_t *fcemu_bar0(struct fcemu *emu);
/* Board memory, for hosts that expose an aperture (BAR2). */
void *fcemu_board_mem(struct fcemu *emu, uint64_t *size);

/* Is @off a register the host writes (the "H" registers of hw.h)? */
bool fcemu_host_writable(uint32_t off);

/* A host write trapped by an in-process host: dropped for board-owned
 * registers, as the hardware drops it; else stored, then noticed if it
 * is a command (a doorbell, a reset, SCRATCH, a fault knob). */
void fcemu_host_write(struct fcemu *emu, uint32_t off, uint32_t val);
/* One 64-byte store at @off (a write-combined line): the PIO window's
 * slots only; dropped elsewhere. */
void fcemu_host_write_line(struct fcemu *emu, uint32_t off, const void *line);

/* The host wrote registers: act on new doorbells, resets and acks. */
void fcemu_notice(struct fcemu *emu);

/*
 * Let the engines move up to @budget bytes in total. On a cluster board,
 * also run the cluster's routers and this board's ejection (channel
 * receive rings, remote writes, fences): only this call, in the board's
 * own process, delivers packets addressed to the board.
 * RETURN VALUE: bytes moved (0 when idle or stalled); on a cluster board
 * plus FC_PKT_SIZE per packet routed or delivered, so that 0 still means
 * that nothing happened.
 */
uint64_t fcemu_progress(struct fcemu *emu, uint64_t budget);

/*
 * fcemu_progress(), and say whether anything came for the host: packets
 * taken from the ejection ring, or a chain ended.
 */
bool fcemu_progress_news(struct fcemu *emu, uint64_t budget);

/*
 * A user kernel for FC_SOP_RUN: @n 4-byte elements, dst and src in a
 * local store, @arg the instruction's scalar.
 * RETURN VALUE: 0, or non-zero: the run fails with FC_LS_ERR_KFAIL.
 */
typedef int (*fcemu_kernel_fn)(void *dst, const void *src, uint32_t n,
			       uint32_t arg, void *ctx);

/*
 * fcemu_kernel_register - load kernel @id (FC_KERN_USER..65535) into the
 * board: programs naming it pass their check from now on.
 * RETURN VALUE: 0; -EINVAL bad id or NULL; -EEXIST; -ENOSPC (table full).
 */
int fcemu_kernel_register(struct fcemu *emu, uint32_t id, fcemu_kernel_fn fn,
			  void *ctx);

/*
 * fcemu_stream_sleep - for a host in the board's process: sleep until a
 * stream run ends (IRQ_COUNT(FC_IRQ_VEC_STREAM) is no longer @seen), at
 * most @max_ns. Read @seen before looking at the runs, then call this.
 */
void fcemu_stream_sleep(struct fcemu *emu, uint32_t seen, uint64_t max_ns);

/*
 * fcemu_sim_time_ps - the board's virtual clock in ps (docs/model.md).
 * RETURN VALUE: 0; -EOPNOTSUPP when no timing model is on; -EINVAL NULL.
 */
int fcemu_sim_time_ps(struct fcemu *emu, uint64_t *ps);

/*
 * fcemu_pw_publish - a cluster board's host names the GPU memory it maps
 * at peer window @entry under generation @gen (FC_PW_CTRL_GEN's) by CUDA
 * IPC @handle, the entry's byte 0 @off bytes into the allocation, before
 * it makes the entry VALID; @handle NULL withdraws it. An emulator-only
 * side table of the cluster (not a register): other boards' engines then
 * write the entry directly (docs/hardware.md, "What the emulator does").
 */
void fcemu_pw_publish(struct fcemu *emu, unsigned int entry, uint32_t gen,
		      const void *handle, uint64_t off);

/* True while any engine holds a chain it has not finished. */
bool fcemu_busy(struct fcemu *emu);
/*
 * The host took a mapping back (an unmap of its IOMMU): translations the
 * board keeps (the event queue's, as an IOTLB keeps them) are dropped and
 * looked up again at their next use.
 */
void fcemu_iotlb_flush(struct fcemu *emu);
/* The host waits for its board (docs/model.md): with a timing model the
 * board may take a packet that arrives later than its present. */
void fcemu_host_waits(struct fcemu *emu);

/*
 * fcemu_flush_aborts - before the board goes (fcemu_destroy()): send the
 * ABORTs its engines owe for messages a reset cut off, so that a receiver
 * never glues the part onto the next owner's message.
 * RETURN VALUE: true when none is owed any more; false while the injection
 * queue has no room (call fcemu_progress() and try again).
 */
bool fcemu_flush_aborts(struct fcemu *emu);

#endif /* FCEMU_H */
