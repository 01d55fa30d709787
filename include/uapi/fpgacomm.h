/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * fpgacomm.ko <-> userspace ABI: ioctls on /dev/fpgacommN and mmap offsets.
 *
 * Rules: fixed-width types only; every struct has a flags field and
 * reserved fields, and the driver returns -EINVAL for unknown flags or
 * non-zero reserved fields, so the ABI grows by new flags and commands.
 * Unknown commands return -ENOTTY. Userspace never passes a bus address:
 * it names its own memory (a user virtual address or a registered buffer)
 * and the driver builds the descriptors and programs receive rings (it may
 * read one back: MEM_INFO, for fabric addresses). Register offsets, address spaces
 * and error codes come from <fpgacomm/hw.h>.
 */
#ifndef _UAPI_FPGACOMM_H
#define _UAPI_FPGACOMM_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define FC_ABI_VERSION		1

/* What this driver offers, in fc_ioc_info.features. */
#define FC_FEAT_DMA		(1u << 0)	/* SUBMIT, WAIT, RESET */
#define FC_FEAT_MEM_REGISTER	(1u << 1)	/* MEM_REGISTER, MEM_UNREGISTER */
#define FC_FEAT_MMAP_REGS	(1u << 2)	/* mmap of BAR0 at FC_MMAP_REGS */
#define FC_FEAT_MMAP_APERTURE	(1u << 3)	/* mmap of BAR2 at FC_MMAP_APERTURE */
#define FC_FEAT_MEM_ALLOC	(1u << 4)	/* MEM_ALLOC + mmap of the buffer */
#define FC_FEAT_EVENTFD		(1u << 5)	/* FC_SUBMIT_EVENTFD */
#define FC_FEAT_POLL		(1u << 6)	/* poll(2) on the file */
#define FC_FEAT_REG		(1u << 7)	/* REG_READ, REG_WRITE */
#define FC_FEAT_CHAN_RING	(1u << 8)	/* CHAN_RING, CHAN_HEAD */
#define FC_FEAT_XFER_MORE	(1u << 9)	/* FC_XFER_MORE */
#define FC_FEAT_MEM_INFO	(1u << 10)	/* MEM_INFO */
#define FC_FEAT_DESC_LIMIT	(1u << 11)	/* fc_ioc_info.max_desc is set */
#define FC_FEAT_PIO		(1u << 12)	/* mmap of the PIO send pages at FC_MMAP_PIO */
#define FC_FEAT_PIO_KICK	(1u << 13)	/* PIO_KICK after each PIO_TAIL write */
#define FC_FEAT_PEER_IMPORT	(1u << 14)	/* PEER_IMPORT: a dma-buf as a handle */
#define FC_FEAT_PEER_EXPORT	(1u << 15)	/* PEER_EXPORT: the aperture as a dma-buf */
#define FC_FEAT_EQ		(1u << 16)	/* EQ, EQ_HEAD, FC_CHAN_RING_EQ */
#define FC_FEAT_XFER_CTRL	(1u << 17)	/* FC_XFER_CTRL */
#define FC_FEAT_EQ_WAIT		(1u << 18)	/* EQ_WAIT */
#define FC_FEAT_ENGINES		(1u << 19)	/* FC_SUBMIT_ENGINE */
#define FC_FEAT_PEER_WINDOW	(1u << 20)	/* PEER_WINDOW: the board's window table */

/* How chain completion reaches the driver, in fc_ioc_info.irq_mode. */
#define FC_IRQ_MODE_POLL	0	/* the driver polls DONE_SEQ */
#define FC_IRQ_MODE_INTX	1
#define FC_IRQ_MODE_MSI		2
#define FC_IRQ_MODE_MSIX	3

struct fc_ioc_info {
	__u32 flags;			/* in: must be 0 */
	__u32 abi_version;		/* FC_ABI_VERSION */
	__u32 features;			/* FC_FEAT_* */
	__u32 irq_mode;			/* FC_IRQ_MODE_* */
	__u32 hw_id;			/* FC_REG_ID, as read at probe */
	__u32 hw_version;
	__u32 hw_caps;			/* FC_CAP_* */
	__u32 node_id;
	__u32 dma_engines;
	__u32 num_ports;
	__u32 max_chain;		/* transfers per SUBMIT */
	__s32 numa_node;		/* -1 when unknown */
	__aligned_u64 max_xfer_len;	/* bytes per transfer */
	__aligned_u64 board_mem_size;
	__aligned_u64 regs_size;	/* bytes mappable at FC_MMAP_REGS */
	__aligned_u64 aperture_size;	/* bytes mappable at FC_MMAP_APERTURE */
	__u32 max_desc;			/* descriptors per file (SUBMIT) */
	__u32 reserved0;
	__aligned_u64 reserved[3];
};

/*
 * MEM_REGISTER: pin [addr, addr+len) of the caller's memory (any alignment,
 * no size limit but RLIMIT_MEMLOCK) and return a handle for transfers.
 * MEM_ALLOC: allocate len bytes of DMA memory in the driver; mmap it at
 * mmap_offset. MEM_UNREGISTER: release a handle of either kind.
 */
struct fc_ioc_mem {
	__u32 flags;			/* in: must be 0 */
	__u32 handle;			/* out (REGISTER, ALLOC); in (UNREGISTER) */
	__aligned_u64 addr;		/* in (REGISTER) */
	__aligned_u64 len;		/* in (REGISTER, ALLOC) */
	__aligned_u64 mmap_offset;	/* out (ALLOC) */
	__aligned_u64 reserved[2];
};

/*
 * One end of a transfer. FC_SPACE_HOST with handle 0 names a user virtual
 * address, pinned for the chain's lifetime; with a handle, addr is an offset
 * in that registered buffer. FC_SPACE_BOARD and FC_SPACE_FABRIC take the
 * board or fabric address in addr and handle 0.
 */
struct fc_ioc_loc {
	__u32 space;			/* FC_SPACE_* */
	__u32 handle;
	__aligned_u64 addr;
};

/*
 * A transfer whose destination is a channel endpoint (FC_SPACE_FABRIC,
 * FC_REGION_CHAN) is one message, however many descriptors the driver
 * needs for it; with FC_XFER_MORE the message goes on in the next transfer
 * of the same SUBMIT, which must name the same channel (a message gathered
 * from several buffers). Not valid on another destination, nor on the last
 * transfer: -EINVAL.
 */
#define FC_XFER_MORE		(1u << 0)
/*
 * The message this transfer sends is a control message (FC_DESC_F_CTRL):
 * it arrives as FC_PKT_T_CTRL packets, in order with the channel's data
 * but told apart from it (userspace protocols: credits, rendezvous). Only
 * towards a channel endpoint; FC_XFER_MORE only between transfers that
 * both have it. FC_FEAT_XFER_CTRL says the driver takes it.
 */
#define FC_XFER_CTRL		(1u << 1)

struct fc_ioc_xfer {
	struct fc_ioc_loc src;
	struct fc_ioc_loc dst;
	__aligned_u64 len;		/* 1..max_xfer_len */
	__u32 flags;			/* FC_XFER_* */
	__u32 reserved;
};

/*
 * SUBMIT: queue @count transfers as one ticket on one of the board's DMA
 * engines: engine 0, or with FC_SUBMIT_ENGINE (FC_FEAT_ENGINES) engine
 * @engine, below fc_ioc_info.dma_engines (and FC_DMA_MAX_ENGINES; a board
 * that reports none has engine 0), else -EINVAL; without the flag @engine
 * must be 0 (-EINVAL). A file's tickets on one engine run in the order it
 * submitted them, each after the one before has ended; tickets on
 * different engines run side by side, with no order between them (nor
 * between their ends): a long ticket on one engine does not hold back a
 * short one on another. Files take each engine in turn. The driver
 * builds one descriptor per bus-contiguous piece of each transfer, in
 * tables of max_chain descriptors (one hardware chain each). What a file may hold is bounded, counted from
 * SUBMIT until the ticket ends (not until WAIT):
 *  - descriptors: a ticket of n descriptors holds ceil(n / max_chain)
 *    tables, and a file's tickets together at most max_desc / max_chain
 *    (fc_ioc_info, FC_FEAT_DESC_LIMIT; 1024 tables, 8 MiB of DMA memory);
 *  - results: 512 tickets whose result no WAIT has collected.
 * A ticket needing more than max_desc descriptors on its own gets -E2BIG,
 * as does a count outside 1..max_chain: it never fits, split it. One
 * that does not fit beside the file's tickets queued or running, or over
 * the results limit, gets -EAGAIN: WAIT for an earlier ticket and retry.
 * Other errors: -EINVAL (flags, reserved fields, lengths, spaces, handles),
 * -ERANGE (outside a buffer or board memory), -EFAULT (user addresses),
 * -EPERM (raw bus addresses), -EMSGSIZE (a channel message crossing a
 * table), -ENOMEM (RLIMIT_MEMLOCK, no memory), -EIO (that engine out of use
 * until the board is removed: its reset went unacknowledged; the others
 * go on), -ENODEV (board gone).
 */
#define FC_SUBMIT_EVENTFD	(1u << 0)	/* signal eventfd when it ends */
#define FC_SUBMIT_ENGINE	(1u << 1)	/* run it on engine @engine */

struct fc_ioc_submit {
	__u32 flags;			/* FC_SUBMIT_* */
	__u32 count;			/* 1..max_chain */
	__aligned_u64 xfers;		/* user pointer to count fc_ioc_xfer */
	__s32 eventfd;			/* with FC_SUBMIT_EVENTFD */
	__u32 engine;			/* with FC_SUBMIT_ENGINE, else 0 */
	__aligned_u64 ticket;		/* out: for WAIT */
	__aligned_u64 reserved[2];
};

/*
 * WAIT: wait until chain @ticket of this file has ended, at most timeout_ms
 * (negative: no limit, 0: do not sleep). Returns 0 with status filled in, or
 * -ETIMEDOUT (chain still running), -ENOENT (no such ticket), -EINTR.
 */
struct fc_ioc_wait {
	__u32 flags;			/* in: must be 0 */
	__s32 timeout_ms;
	__aligned_u64 ticket;
	__s32 status;			/* out: 0 or -errno of the chain */
	__u32 hw_error;			/* out: FC_DMA_ERR_* */
	__u32 hw_index;			/* out: offending descriptor */
	__u32 reserved0;
	__aligned_u64 reserved[2];
};

/*
 * REG_READ, REG_WRITE: one 32-bit register of BAR0 (offsets from hw.h).
 * Writing needs CAP_SYS_RAWIO: registers can start DMA to any address.
 */
struct fc_ioc_reg {
	__u32 flags;			/* in: must be 0 */
	__u32 offset;			/* 4-byte aligned, below regs_size */
	__u32 value;			/* out (READ), in (WRITE) */
	__u32 reserved;
};

/*
 * RESET: cancel this file's chains on every engine (-ECANCELED), resetting
 * the engines that ran one of them and the idle ones; an engine running
 * another file's chain goes on. -EIO: an engine is out of use.
 */
struct fc_ioc_reset {
	__u32 flags;			/* in: must be 0 */
	__u32 reserved;
};

/*
 * CHAN_RING: give channel endpoint @chan (0..FC_MAX_CHANNELS-1) a receive
 * ring of @slots packets (a power of two, at most 2^20) at @offset (a
 * multiple of FC_CHAN_SLOT_SIZE) in MEM_ALLOC buffer @handle, and switch it
 * on; HEAD starts at the board's TAIL, returned in @head (an empty ring).
 * The driver programs the board with the bus address; the buffer stays
 * allocated while the ring uses it, even unregistered. An endpoint belongs
 * to the file that programmed it, which may program it again, until that
 * file switches it off (FC_CHAN_RING_OFF, @handle, @slots and @offset 0) or
 * is closed; another file gets -EBUSY. -EOPNOTSUPP: the board has no
 * channel endpoints (FC_CAP_CHANNELS). -EINVAL: unknown flags, non-zero
 * @head or reserved fields, @chan, @slots or @offset out of the above, a
 * @handle that is not a MEM_ALLOC buffer of this file, or with
 * FC_CHAN_RING_OFF any of @handle, @slots, @offset set. -ERANGE: the ring
 * does not lie within the buffer's length. -EFAULT: @head could not be
 * returned; the endpoint is then left off. -EIO: the board did not say it
 * left the endpoint's ring before (FC_CHAN_SEEN): that memory is kept
 * until the board goes, and the endpoint stays off. Ring slots are laid out as
 * <fpgacomm/hw.h> says (FC_CHAN_SLOT_SIZE); TAIL is read with REG_READ of
 * FC_CHAN_REG(chan, FC_CHAN_TAIL).
 */
#define FC_CHAN_RING_OFF	(1u << 0)
/*
 * FC_CHAN_RING_EQ (FC_FEAT_EQ): the endpoint delivers into the event queue
 * of this file (FC_IOC_EQ) instead of a ring: CTRL = ENABLE |
 * FC_CHAN_CTRL_EQ. @handle, @slots and @offset must be 0 (-EINVAL), @head
 * is returned 0; -EPERM when this file does not hold the queue,
 * -EOPNOTSUPP on a board without one (FC_CAP_EVENT_QUEUE). The endpoint
 * is owned as a ring is, and switched off with the queue.
 * CHAN_HEAD on it gets -EINVAL: the queue has the one HEAD (EQ_HEAD).
 */
#define FC_CHAN_RING_EQ		(1u << 1)

struct fc_ioc_chan_ring {
	__u32 flags;			/* FC_CHAN_RING_* */
	__u32 chan;
	__u32 handle;
	__u32 slots;
	__aligned_u64 offset;
	__u32 head;			/* out */
	__u32 reserved0;
	__aligned_u64 reserved[2];
};

/*
 * CHAN_HEAD: the owner of endpoint @chan has consumed up to @head. HEAD
 * only moves forward, and not beyond TAIL: @head - HEAD <= TAIL - HEAD in
 * 32-bit arithmetic, HEAD being the last value set (by CHAN_RING or
 * CHAN_HEAD), else -ERANGE. -EPERM: this file does not own the endpoint.
 * -EINVAL: non-zero flags or reserved, @chan out of range. -EOPNOTSUPP: no
 * channel endpoints.
 */
struct fc_ioc_chan_head {
	__u32 flags;			/* in: must be 0 */
	__u32 chan;
	__u32 head;
	__u32 reserved;
};

/*
 * MEM_INFO: what the board sees of buffer @handle. A bus-contiguous buffer
 * (MEM_ALLOC) has FC_MEM_INFO_CONTIG in out_flags and its bus address in
 * bus_addr: the offset of its first byte in this node's host window, to
 * name it in fabric addresses (FC_REGION_HOST) for other nodes' writes.
 * Bus addresses are given only to CAP_SYS_RAWIO, and only CAP_SYS_RAWIO may
 * name a fabric address in FC_REGION_HOST in SUBMIT (-EPERM): such an
 * address reaches host memory directly. FC_REGION_PEER needs no capability:
 * it names entries of the receiving board's peer window (PEER_WINDOW),
 * which that board's host maps. -EINVAL: any
 * field but @handle non-zero, or @handle not a buffer of this file.
 */
#define FC_MEM_INFO_CONTIG	(1u << 0)

struct fc_ioc_mem_info {
	__u32 flags;			/* in: must be 0 */
	__u32 handle;			/* in */
	__aligned_u64 len;		/* out */
	__aligned_u64 bus_addr;		/* out, with FC_MEM_INFO_CONTIG */
	__u32 out_flags;		/* out: FC_MEM_INFO_* */
	__u32 reserved0;
	__aligned_u64 reserved[2];
};

/*
 * PIO_KICK: tell the board that FC_PIO_TAIL moved, where it does not see
 * the write by itself (FC_FEAT_PIO_KICK: a board emulated behind QEMU
 * ivshmem; a real board sees it and the driver does not offer this).
 * -EINVAL: non-zero flags or reserved. -EACCES: this file does not hold
 * the PIO pages (FC_MMAP_PIO). -EOPNOTSUPP: no PIO on this board.
 */
struct fc_ioc_pio_kick {
	__u32 flags;			/* in: must be 0 */
	__u32 reserved0;
	__aligned_u64 reserved[1];
};

/*
 * PEER_IMPORT: make bytes [offset, offset + len) of dma-buf @fd (memory of
 * another device: a GPU, another board's aperture, pages of a driver) a
 * peer region of this file, named by the returned @handle as a registered
 * buffer is: FC_SPACE_HOST with @handle, addr an offset in the region, as
 * source or destination of SUBMIT. The driver attaches to the dma-buf
 * dynamically, allowing peer-to-peer where the board reaches peers
 * (FC_CAP_PEER_MAP), pins it and maps it for the board; the descriptors
 * carry the bus addresses of that mapping (<fpgacomm/hw.h>, FC_REGION_PEER).
 * MEM_UNREGISTER of @handle releases it, as does close; chains that use it
 * keep it until they end. Should the exporter take the memory back
 * (move_notify), chains naming the region end with -ENOLINK (the running
 * one is stopped by an engine reset) and a SUBMIT naming it gets -ENOLINK
 * from then on: unregister the handle. -EINVAL: unknown flags, non-zero
 * @handle or reserved fields, @offset or @len not a multiple of the page
 * size, @len 0, or @fd not a dma-buf. -EBADF: @fd is no open file.
 * -ERANGE: the range does not lie within the dma-buf. -EMFILE: the file
 * holds max_imports peer regions already (a module parameter, 1024 by
 * default: /sys/module/fpgacomm/parameters/max_imports); unregister one
 * first. The driver's memory for a region is charged to the caller's
 * memory cgroup. Errors of the exporter's attach or map (-EOPNOTSUPP,
 * -ENOMEM, ...) are passed on.
 */
struct fc_ioc_peer_import {
	__u32 flags;			/* in: must be 0 */
	__s32 fd;			/* in: the dma-buf */
	__aligned_u64 offset;		/* in */
	__aligned_u64 len;		/* in */
	__u32 handle;			/* out */
	__u32 reserved0;
	__aligned_u64 reserved[2];
};

/*
 * PEER_EXPORT: a dma-buf of bytes [offset, offset + len) of the board's
 * aperture (BAR2: board memory from FC_REG_APERTURE_BASE on), returned in
 * @fd (close-on-exec), for another device's driver to import, or to mmap
 * (uncached). Importers must allow peer-to-peer; each gets the range
 * mapped for its device. The dma-buf holds the board, not the file: it
 * lives until its last user lets go. When the board is removed its
 * importers are told (move_notify), new attaches, pins and maps fail
 * with -ENODEV (the exporter is dynamic, so a dynamic importer that maps
 * again gets the error, never the BAR's old address) and its CPU mappings
 * fault with SIGBUS. -EINVAL: unknown flags, non-zero @fd or
 * reserved fields, @offset or @len not a multiple of the page size, @len
 * 0. -ERANGE: beyond aperture_size. -EOPNOTSUPP: the board has no
 * aperture. -EFAULT: @fd could not be returned (nothing was made).
 */
struct fc_ioc_peer_export {
	__u32 flags;			/* in: must be 0 */
	__s32 fd;			/* out */
	__aligned_u64 offset;		/* in */
	__aligned_u64 len;		/* in */
	__aligned_u64 reserved[2];
};

/*
 * EQ (FC_FEAT_EQ, on a board with FC_CAP_EVENT_QUEUE): give this file the
 * board's event queue, @slots entries (a power of two, FC_EQ_MIN_SLOTS to
 * FC_EQ_MAX_SLOTS) of FC_EQ_ENTRY_SIZE bytes at @offset (a multiple of
 * FC_EQ_ENTRY_SIZE) in MEM_ALLOC buffer @handle, and switch it on: the
 * driver zeroes those entries, programs FC_EQ_* with the bus address,
 * HEAD 0 and an IRQ_AT out of reach (the queue raises no interrupt), then
 * sets ENABLE; the board starts at entry 0 with phase 1 (<fpgacomm/hw.h>).
 * The entries are read in the buffer's mapping. Endpoints join the queue
 * with FC_CHAN_RING_EQ. One file holds the queue at a time, until it
 * switches it off (FC_EQ_OFF, @handle, @slots and @offset 0; its
 * endpoints in the queue are switched off too) or is closed; another file
 * gets -EBUSY. The holder may set it up again: the queue is switched off
 * first, as FC_EQ_OFF does. The buffer stays allocated while the queue
 * uses it, even unregistered. -EOPNOTSUPP: no event queue on this board.
 * -EINVAL: unknown flags, non-zero reserved fields, @slots or @offset out
 * of the above, a @handle that is not a MEM_ALLOC buffer of this file, or
 * with FC_EQ_OFF any of @handle, @slots, @offset set. -ERANGE: the queue
 * does not lie within the buffer's length. -EIO: the board did not say it
 * left the queue before (FC_EQ_SEEN within 2 s): that memory is kept
 * until the board goes, and the queue stays off.
 */
#define FC_EQ_OFF		(1u << 0)

struct fc_ioc_eq {
	__u32 flags;			/* FC_EQ_* */
	__u32 handle;
	__u32 slots;
	__u32 reserved0;
	__aligned_u64 offset;
	__aligned_u64 reserved[2];
};

/*
 * EQ_HEAD: the holder of the event queue has consumed its entries up to
 * @head (FC_EQ_HEAD: the board writes no further than @head + slots). HEAD
 * only moves forward, and not beyond FC_EQ_TAIL, read from the board:
 * @head - HEAD <= TAIL - HEAD in 32-bit arithmetic, HEAD being the last
 * value set (0 at EQ), else -ERANGE. An entry may be visible (its phase
 * written) a little before TAIL counts it: retry later. -EPERM: this file
 * does not hold the queue. -EINVAL: non-zero flags or reserved fields.
 * -EOPNOTSUPP: no event queue on this board.
 */
struct fc_ioc_eq_head {
	__u32 flags;			/* in: must be 0 */
	__u32 head;
	__aligned_u64 reserved;
};

/*
 * EQ_WAIT (FC_FEAT_EQ_WAIT): sleep until the board has written entry
 * @entry of this file's event queue (its phase in the mapping says so), or
 * @timeout_us passed. The driver arms the queue's interrupt for that entry
 * (FC_EQ_IRQ_AT, FC_IRQ_VEC_CHAN), so the sleeper wakes when it lands;
 * without that interrupt (polling, INTx) it looks every 50 us. @entry is
 * at or after the last HEAD (EQ_HEAD), at most FC_EQ_SLOTS ahead of it.
 * Returns 0 (at once when the entry was already written), -ETIMEDOUT,
 * -EINTR (a signal), -EPERM (this file does not hold the queue, or lost
 * it meanwhile), -EINVAL (flags, reserved, @entry out of range),
 * -EOPNOTSUPP (no event queue), -ENODEV (the board went).
 */
struct fc_ioc_eq_wait {
	__u32 flags;			/* in: must be 0 */
	__u32 entry;
	__u32 timeout_us;
	__u32 reserved;
};

/*
 * PEER_WINDOW (FC_FEAT_PEER_WINDOW, on a board with FC_CAP_PEER_WINDOW): the
 * board's peer window, the table that lets other nodes reach memory of
 * this host through FC_REGION_PEER (<fpgacomm/hw.h>, FC_PW_*).
 *
 * FC_PEER_WINDOW_MAP puts bytes [@offset, @offset + @len) of buffer
 * @handle of this file (a PEER_IMPORT region or a MEM_ALLOC buffer) into
 * a free entry with the permissions in @flags (FC_PEER_WINDOW_READ: other
 * nodes' GETs may read it; FC_PEER_WINDOW_WRITE: their PUTs may write it;
 * at least one) and returns the entry in @entry: other nodes name byte
 * @off of the range as FC_PW_ADDR(node, @entry, @off). The entry takes
 * the one freed longest ago. The range must be one piece of bus address
 * space (one segment of the region's mapping; a MEM_ALLOC buffer always
 * is) and at most FC_PW_MAX_SIZE bytes. The entry holds the memory: it
 * stays pinned and mapped, even unregistered, until the entry goes.
 *
 * FC_PEER_WINDOW_UNMAP (@handle, @offset, @len 0) revokes @entry: the
 * board stops serving it before the call returns (FC_PW_SEEN), and a PUT
 * or GET naming it from then on ends the sender's chain with
 * FC_DMA_ERR_WINDOW (-EACCES) and touches nothing. Only the file that
 * mapped an entry may unmap it (-EPERM for another file's, -ENOENT for an
 * entry not mapped). The driver revokes an entry the same way when its
 * buffer is unregistered (MEM_UNREGISTER), when the file is closed, when
 * the exporter of a PEER_IMPORT region takes the memory back
 * (move_notify), and when the board is removed or fails. A PCI reset
 * leaves the window alone, as the contract says of H registers.
 *
 * Errors: -EINVAL (unknown flags or op, no permission with MAP, non-zero
 * reserved fields or fields the op does not use, @len 0, a @handle that
 * is not a PEER_IMPORT region or MEM_ALLOC buffer of this file, a range
 * that is not one segment), -ERANGE (the range does not lie within the
 * buffer, or is above FC_PW_MAX_SIZE; @entry not below FC_PW_MAX_ENTRIES),
 * -ENOSPC (every entry is in use), -ENOLINK (the region's exporter took
 * it back), -EPERM, -ENOENT (above), -EFAULT (@entry could not be
 * returned: the entry is unmapped again), -EIO (the board did not
 * acknowledge a revocation within 2 s: the entry and its memory are kept
 * until the board goes), -EOPNOTSUPP (the board has no peer window).
 */
#define FC_PEER_WINDOW_MAP	1
#define FC_PEER_WINDOW_UNMAP	2
#define FC_PEER_WINDOW_READ	(1u << 0)
#define FC_PEER_WINDOW_WRITE	(1u << 1)

struct fc_ioc_peer_window {
	__u32 op;			/* FC_PEER_WINDOW_MAP or _UNMAP */
	__u32 flags;			/* MAP: FC_PEER_WINDOW_READ, _WRITE */
	__u32 handle;			/* MAP: in */
	__u32 entry;			/* MAP: out; UNMAP: in */
	__aligned_u64 offset;		/* MAP: in */
	__aligned_u64 len;		/* MAP: in */
	__aligned_u64 reserved[2];
};

#define FC_IOC_MAGIC		0xfc
#define FC_IOC_INFO		_IOWR(FC_IOC_MAGIC, 0x00, struct fc_ioc_info)
#define FC_IOC_MEM_REGISTER	_IOWR(FC_IOC_MAGIC, 0x01, struct fc_ioc_mem)
#define FC_IOC_MEM_UNREGISTER	_IOW(FC_IOC_MAGIC, 0x02, struct fc_ioc_mem)
#define FC_IOC_MEM_ALLOC	_IOWR(FC_IOC_MAGIC, 0x03, struct fc_ioc_mem)
#define FC_IOC_SUBMIT		_IOWR(FC_IOC_MAGIC, 0x04, struct fc_ioc_submit)
#define FC_IOC_WAIT		_IOWR(FC_IOC_MAGIC, 0x05, struct fc_ioc_wait)
#define FC_IOC_RESET		_IOW(FC_IOC_MAGIC, 0x06, struct fc_ioc_reset)
#define FC_IOC_REG_READ		_IOWR(FC_IOC_MAGIC, 0x07, struct fc_ioc_reg)
#define FC_IOC_REG_WRITE	_IOW(FC_IOC_MAGIC, 0x08, struct fc_ioc_reg)
#define FC_IOC_CHAN_RING	_IOWR(FC_IOC_MAGIC, 0x09, struct fc_ioc_chan_ring)
#define FC_IOC_CHAN_HEAD	_IOW(FC_IOC_MAGIC, 0x0a, struct fc_ioc_chan_head)
#define FC_IOC_MEM_INFO		_IOWR(FC_IOC_MAGIC, 0x0b, struct fc_ioc_mem_info)
#define FC_IOC_PIO_KICK		_IOW(FC_IOC_MAGIC, 0x0c, struct fc_ioc_pio_kick)
#define FC_IOC_PEER_IMPORT	_IOWR(FC_IOC_MAGIC, 0x0d, struct fc_ioc_peer_import)
#define FC_IOC_PEER_EXPORT	_IOWR(FC_IOC_MAGIC, 0x0e, struct fc_ioc_peer_export)
#define FC_IOC_EQ		_IOW(FC_IOC_MAGIC, 0x0f, struct fc_ioc_eq)
#define FC_IOC_EQ_HEAD		_IOW(FC_IOC_MAGIC, 0x10, struct fc_ioc_eq_head)
#define FC_IOC_EQ_WAIT		_IOW(FC_IOC_MAGIC, 0x11, struct fc_ioc_eq_wait)
#define FC_IOC_PEER_WINDOW	_IOWR(FC_IOC_MAGIC, 0x12, struct fc_ioc_peer_window)

/*
 * mmap offsets of the file (page multiples), MAP_SHARED only. Mapping the
 * registers needs CAP_SYS_RAWIO; the aperture and MEM_ALLOC buffers need
 * only the file. When the board is removed (PCI remove, hot unplug) with
 * mappings in place, they stay but lose their pages: a load or store in
 * any of them gets SIGBUS, and a new mmap -ENODEV. MEM_ALLOC memory is
 * freed at the removal, not at munmap.
 */
#define FC_MMAP_REGS		0x0ull
#define FC_MMAP_APERTURE	(1ull << 40)
/*
 * The PIO send block and window of the hardware contract (FC_PIO_BASE, then
 * FC_PIO_WINDOW: FC_MMAP_PIO_SIZE bytes, write-combined), where the board
 * has them (FC_FEAT_PIO). No capability is needed: the board checks every
 * packet and sets its source. The first file that maps them holds them
 * until it is closed; another file's mmap gets -EBUSY meanwhile.
 */
#define FC_MMAP_PIO		(1ull << 39)
#define FC_MMAP_PIO_SIZE	0x2000ull

/*
 * poll(2): POLLIN when a chain submitted through this file has ended since
 * the last FC_IOC_WAIT on it.
 */

#endif /* _UAPI_FPGACOMM_H */
