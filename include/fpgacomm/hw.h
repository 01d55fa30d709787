/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * fpgacomm hardware contract: the board's registers, descriptor and packet
 * formats, and address maps. The driver, the library and the emulator all
 * include this file; no other file defines a register offset or bit.
 * docs/hardware.md explains each item.
 *
 * Rules that hold for every register:
 *  - registers are 32 bits wide, little endian, accessed with 32-bit loads and
 *    stores at 4-byte aligned offsets; 64-bit values are LO/HI pairs;
 *  - each register has exactly one writer: the host ("H") or the board ("B").
 *    Commands are sequence numbers written by the host (doorbells, resets,
 *    interrupt acknowledgements), never write-1-to-clear bits, so the board
 *    can be emulated behind shared memory without trapping writes;
 *  - reserved offsets read as zero and ignore writes.
 */
#ifndef FPGACOMM_HW_H
#define FPGACOMM_HW_H

#include <linux/types.h>
#ifdef __KERNEL__
#include <linux/errno.h>
#include <asm/byteorder.h>
#define FC_HW_LE16(x)	le16_to_cpu(x)
#define FC_HW_LE32(x)	le32_to_cpu(x)
#define FC_HW_LE64(x)	le64_to_cpu(x)
#else
#include <endian.h>
#include <errno.h>
#define FC_HW_LE16(x)	le16toh(x)
#define FC_HW_LE32(x)	le32toh(x)
#define FC_HW_LE64(x)	le64toh(x)
#endif

/* PCI identity of the board (placeholder IDs of the reference design). */
#define FC_PCI_VENDOR_ID	0x1172
#define FC_PCI_DEVICE_ID	0xfc01
/* QEMU ivshmem, used in test VMs only when the driver is told to. */
#define FC_IVSHMEM_VENDOR_ID	0x1af4
#define FC_IVSHMEM_DEVICE_ID	0x1110

/*
 * BARs. BAR0: the register file below. BAR2: a window onto board memory of
 * FC_REG_APERTURE_SIZE bytes starting at board address FC_REG_APERTURE_BASE.
 */
#define FC_BAR_REGS		0
#define FC_BAR_APERTURE		2
#define FC_BAR0_SIZE		0x100000u	/* 1 MiB */

/*
 * The emulated board behind QEMU's ivshmem device (test VMs): ivshmem's own
 * registers are its BAR0 and the shared memory its BAR2, which holds the
 * board's register file at offset 0 and the aperture after it. The daemon
 * hosting the board is ivshmem peer 0: after writing board registers the
 * driver rings it by writing (peer << 16 | vector) to ivshmem's DOORBELL.
 * ivshmem-plain has no doorbell and no interrupts: the daemon then watches
 * the registers and the driver polls.
 */
#define FC_IVSHMEM_BAR_IVREGS	0
#define FC_IVSHMEM_BAR_SHM	2
#define FC_IVSHMEM_REGS_OFF	0
#define FC_IVSHMEM_APERTURE_OFF	FC_BAR0_SIZE
#define FC_IVSHMEM_SHM_SIZE	(2 * FC_BAR0_SIZE)	/* a power of two */
#define FC_IVSHMEM_IVPOSITION	0x08	/* ivshmem BAR0: our peer id */
#define FC_IVSHMEM_DOORBELL	0x0c	/* ivshmem BAR0: ring a peer */
#define FC_IVSHMEM_DAEMON_PEER	0

/* ---- Global block: identity, capabilities, board-wide control ---- */
#define FC_REG_ID		0x0000	/* B: FC_HW_ID_MAGIC */
#define FC_REG_VERSION		0x0004	/* B: major << 16 | minor */
#define FC_REG_CAPS		0x0008	/* B: FC_CAP_* */
#define FC_REG_NODE_ID		0x000c	/* B: this board's fabric node (6 bits) */
#define FC_REG_NUM_DMA		0x0010	/* B: number of DMA engines */
#define FC_REG_NUM_PORTS	0x0014	/* B: number of link ports (local excluded) */
#define FC_REG_MEM_SIZE_LO	0x0018	/* B: board memory (HBM) bytes */
#define FC_REG_MEM_SIZE_HI	0x001c
#define FC_REG_SCRATCH		0x0020	/* H: free for bring-up tests */
#define FC_REG_SCRATCH_ECHO	0x0024	/* B: ~SCRATCH, proves the board is alive */
#define FC_REG_LINK_STATE	0x0028	/* B: bit p-1 set: link port p is up */
#define FC_REG_APERTURE_BASE_LO	0x0030	/* H: board address of BAR2 offset 0 */
#define FC_REG_APERTURE_BASE_HI	0x0034
#define FC_REG_APERTURE_SIZE	0x0038	/* B: BAR2 size in bytes */
#define FC_REG_BOARD_RESET	0x003c	/* H: sequence; a new value resets all */
#define FC_REG_BOARD_RESET_ACK	0x0040	/* B: last BOARD_RESET value acted on */
/*
 * A board reset resets every DMA engine (below; their RESET_ACK does not
 * move) and local store, and drops the PIO window's untaken messages. It
 * clears no counter and leaves channel endpoints (TAIL, DROPS; SEEN shows
 * CTRL), the router, the ports and FENCE_ACKs owed to others alone.
 */

#define FC_HW_ID_MAGIC		0x46434f4du	/* "FCOM" */
#define FC_HW_VERSION_MAJOR	1
#define FC_HW_VERSION_MINOR	2
#define FC_HW_VERSION		((FC_HW_VERSION_MAJOR << 16) | FC_HW_VERSION_MINOR)
#define FC_HW_VERSION_GET_MAJOR(v)	((v) >> 16)
#define FC_HW_VERSION_GET_MINOR(v)	((v) & 0xffff)

#define FC_CAP_DMA		(1u << 0)	/* chaining DMA engines */
#define FC_CAP_BOARD_MEM	(1u << 1)	/* board memory (HBM) */
#define FC_CAP_ROUTER		(1u << 2)	/* router, routing table, ports */
#define FC_CAP_CHANNELS		(1u << 3)	/* channel endpoints */
#define FC_CAP_FABRIC_DMA	(1u << 4)	/* descriptors may name remote nodes */
#define FC_CAP_HBM_STREAMS	(1u << 5)	/* local stores and stream programs */
#define FC_CAP_PEER_MAP		(1u << 6)	/* DMA reaches peer devices' BARs (P2P) */
#define FC_CAP_CHAN_EVENTS	(1u << 7)	/* FC_REG_CHAN_EVENTS(g) */
#define FC_CAP_PIO_SEND		(1u << 8)	/* FC_PIO_*: packets written by the host */
#define FC_CAP_CHAN_SEEN	(1u << 9)	/* FC_CHAN_SEEN acknowledges CTRL */
#define FC_CAP_EVENT_QUEUE	(1u << 10)	/* FC_EQ_*: one queue for all channels */
#define FC_CAP_PEER_WINDOW	(1u << 11)	/* FC_PW_*: FC_REGION_PEER is served */
#define FC_CAP_FABRIC_GET	(1u << 12)	/* remote sources: FC_PKT_T_GET */
#define FC_CAP_EMULATED		(1u << 31)	/* the board is the emulator */

/* ---- Interrupts ---- */
/*
 * Each vector has a board-written event counter and a host-written
 * acknowledgement. An MSI/MSI-X message is sent when the counter moves while
 * the vector is enabled; a level (INTx) interrupt is asserted while
 * IRQ_COUNT(v) != IRQ_ACK(v) for any enabled v.
 */
#define FC_IRQ_VECTORS		4
#define FC_IRQ_VEC_DMA		0	/* DMA chain done, descriptor IRQ, error */
#define FC_IRQ_VEC_LINK		1	/* link state or router error */
#define FC_IRQ_VEC_CHAN		2	/* channel receive */
#define FC_IRQ_VEC_STREAM	3	/* HBM stream event */

#define FC_REG_IRQ_ENABLE	0x0800	/* H: bit v enables vector v */
#define FC_REG_IRQ_COUNT(v)	(0x0810 + 4 * (v))	/* B */
#define FC_REG_IRQ_ACK(v)	(0x0820 + 4 * (v))	/* H */

/*
 * Which channel receive rings have news, without reading every TAIL
 * (FC_CAP_CHAN_EVENTS): group g counts the TAIL updates of channels
 * FC_CHAN_GROUP_SIZE * g .. FC_CHAN_GROUP_SIZE * (g + 1) - 1. The board
 * advances it after those TAILs and before the FC_IRQ_VEC_CHAN event that
 * follows them, so a host that saw the event and remembers each group's
 * last value reads the TAILs of the groups that moved, and no others.
 */
#define FC_CHAN_GROUPS		16
#define FC_CHAN_GROUP_SIZE	16	/* FC_MAX_CHANNELS / FC_CHAN_GROUPS */
#define FC_REG_CHAN_EVENTS(g)	(0x0840 + 4 * (g))	/* B: wraps */

/*
 * The event queue (FC_CAP_EVENT_QUEUE): one queue in host memory that the
 * board writes, so that a host reads one place instead of every ring.
 * Channel endpoints whose CTRL has FC_CHAN_CTRL_EQ (with ENABLE) deliver
 * their packets here instead of into their own ring. An entry is the
 * packet as it arrived (struct fc_hw_pkt, FC_EQ_ENTRY_SIZE bytes) with
 * the header's VC bit replaced by the phase (FC_EQ_PHASE): 1 on the first
 * pass through the queue, 0 on the second, and so on, so a host finds new
 * entries by polling memory: entry n (counted from 0 when ENABLE was set,
 * as TAIL counts) is at slot n % SLOTS and is new when its phase is
 * !((n / SLOTS) & 1). The board writes an entry's header after its
 * payload, then TAIL after the entries of a batch. The host zeroes the
 * queue, writes BASE, SLOTS and HEAD = 0, then sets ENABLE; the board
 * then starts at entry 0 (TAIL reads 0). A full queue (TAIL - HEAD ==
 * SLOTS) holds packets back in the fabric, as a full ring does, and
 * counts STALLS. After writing a batch that includes entry IRQ_AT the
 * board counts one event on FC_IRQ_VEC_CHAN: a host about to sleep writes
 * its next entry number there and looks once more (one interrupt per
 * arming at most: moderation is the host's). Switching off: clear ENABLE
 * and wait until SEEN reads without it before the memory is reused.
 */
#define FC_EQ_BASE_LO		0x0880	/* H: bus address of the queue */
#define FC_EQ_BASE_HI		0x0884	/* H */
#define FC_EQ_SLOTS		0x0888	/* H: entries, a power of 2 */
#define FC_EQ_CTRL		0x088c	/* H: FC_EQ_CTRL_* */
#define FC_EQ_HEAD		0x0890	/* H: entries consumed by the host */
#define FC_EQ_TAIL		0x0894	/* B: entries written since ENABLE */
#define FC_EQ_IRQ_AT		0x0898	/* H: entry number that raises */
#define FC_EQ_SEEN		0x089c	/* B: the CTRL value the board works by */
#define FC_EQ_STALLS		0x08a0	/* B: times a full queue held packets (wraps) */
#define FC_EQ_CTRL_ENABLE	(1u << 0)
#define FC_EQ_ENTRY_SIZE	64
#define FC_EQ_MIN_SLOTS		64
#define FC_EQ_MAX_SLOTS		65536
#define FC_EQ_PHASE		(1u << 26)	/* in an entry's header: FC_PKT_VC */
/* The phase the board gives entry number @n of a queue of @slots. */
#define FC_EQ_PHASE_OF(n, slots)	((((n) / (slots)) & 1) ? 0 : FC_EQ_PHASE)

/* ---- Chaining DMA engines ---- */
/*
 * Starting a chain: write the descriptor table's host bus address and the
 * descriptor count, then write DOORBELL with a value different from the
 * last one (the library writes a running chain number). The board latches
 * the new value, checks the whole chain and then moves the data. When the
 * chain ends, well or in error, the board writes, in this order: the data,
 * the counters, ERROR/ERR_INDEX/STATUS, DONE_SEQ (= the doorbell value),
 * then IRQ_COUNT. A host that sees DONE_SEQ equal to its doorbell may read
 * everything else. A chain with any bad descriptor moves no data: the
 * engine stops in FC_DMA_STATUS_ERROR with ERROR and ERR_INDEX (0 for
 * table-level errors) and ignores doorbells until reset.
 *
 * The host must not write DESC_* or DOORBELL again until DONE_SEQ equals
 * its last doorbell (STATUS may still read IDLE just after a doorbell).
 *
 * Reset: a new RESET value aborts a running chain (its DONE_SEQ is not
 * written), clears ERROR, ERR_INDEX and STATUS, takes the current DOORBELL
 * value as already seen, and is acknowledged in RESET_ACK. Counters are not
 * cleared. BOARD_RESET does the same to every engine. The host waits for
 * RESET_ACK before its next doorbell: one written earlier is swallowed.
 *
 * BYTES is one little-endian 64-bit counter, stored by the board in one
 * 64-bit write; 32-bit readers read HI, LO, HI and re-read if HI moved.
 */
#define FC_DMA_BASE		0x1000
#define FC_DMA_STRIDE		0x100
#define FC_DMA_MAX_ENGINES	8
#define FC_DMA_REG(e, r)	(FC_DMA_BASE + FC_DMA_STRIDE * (e) + (r))

#define FC_DMA_DESC_LO		0x00	/* H: descriptor table bus address */
#define FC_DMA_DESC_HI		0x04	/* H */
#define FC_DMA_DESC_COUNT	0x08	/* H: 1..FC_DMA_MAX_CHAIN */
#define FC_DMA_DOORBELL		0x0c	/* H: chain sequence number */
#define FC_DMA_IRQ_ENABLE	0x10	/* H: FC_DMA_IRQ_* */
#define FC_DMA_RESET		0x14	/* H: sequence; a new value aborts+resets */
#define FC_DMA_STATUS		0x20	/* B: FC_DMA_STATUS_* */
#define FC_DMA_ERROR		0x24	/* B: FC_DMA_ERR_* of the failed chain */
#define FC_DMA_ERR_INDEX	0x28	/* B: index of the offending descriptor */
#define FC_DMA_DONE_SEQ		0x2c	/* B: doorbell value of last ended chain */
#define FC_DMA_DESC_DONE	0x30	/* B: descriptors completed (wraps) */
#define FC_DMA_CHAINS_DONE	0x34	/* B: chains completed (wraps) */
#define FC_DMA_DOORBELLS	0x38	/* B: doorbells accepted (wraps) */
#define FC_DMA_RESET_ACK	0x3c	/* B: last RESET value acted on */
#define FC_DMA_BYTES_LO		0x40	/* B: bytes moved (wraps at 2^64) */
#define FC_DMA_BYTES_HI		0x44	/* B */

#define FC_DMA_STATUS_IDLE	0
#define FC_DMA_STATUS_BUSY	1
#define FC_DMA_STATUS_ERROR	2

#define FC_DMA_IRQ_CHAIN	(1u << 0)	/* raise FC_IRQ_VEC_DMA at chain end */
#define FC_DMA_IRQ_DESC		(1u << 1)	/* ... after descriptors with F_IRQ */
#define FC_DMA_IRQ_ERROR	(1u << 2)	/* ... when the engine stops in error */
#define FC_DMA_IRQ_ALL		(FC_DMA_IRQ_CHAIN | FC_DMA_IRQ_DESC | FC_DMA_IRQ_ERROR)

#define FC_DMA_ERR_NONE		0
#define FC_DMA_ERR_COUNT	1	/* DESC_COUNT is 0 or above the maximum */
#define FC_DMA_ERR_FETCH	2	/* descriptor table not reachable */
#define FC_DMA_ERR_ALIGN	3	/* descriptor table not 32-byte aligned */
#define FC_DMA_ERR_LEN		4	/* length 0 or above FC_DESC_MAX_LEN */
#define FC_DMA_ERR_FLAGS	5	/* unknown flag, or EOC missing/misplaced */
#define FC_DMA_ERR_SPACE	6	/* unknown or unsupported address space */
#define FC_DMA_ERR_ADDR		7	/* address range outside its space */
#define FC_DMA_ERR_ROUTE	8	/* fabric address with no route */
#define FC_DMA_ERR_RSVD		9	/* reserved descriptor field not zero */
#define FC_DMA_ERR_ABORTED	10	/* host-side: chain cancelled by a reset */
#define FC_DMA_ERR_WINDOW	11	/* a peer window refused: entry invalid or
					 * revoked, out of bounds, not permitted */
#define FC_DMA_ERR_MAX		11

/* The chaining-DMA descriptor: 32 bytes, little endian, 32-byte aligned. */
struct fc_hw_desc {
	__le32 len;		/* bytes, 1..FC_DESC_MAX_LEN */
	__le16 flags;		/* FC_DESC_F_* */
	__u8 src_space;		/* FC_SPACE_* */
	__u8 dst_space;
	__le64 src;
	__le64 dst;
	__le32 tag;		/* free for the host; not interpreted */
	__le32 reserved;	/* must be zero */
};

#define FC_DESC_SIZE		32
#define FC_DESC_ALIGN		32
#define FC_DMA_MAX_CHAIN	255
#define FC_DESC_MAX_LEN		(1u << 30)	/* 1 GiB */

#define FC_DESC_F_EOC		(1u << 0)	/* last descriptor: exactly the last */
#define FC_DESC_F_IRQ		(1u << 1)	/* count an interrupt when done */
#define FC_DESC_F_MORE		(1u << 2)	/* channel message goes on in the next */
#define FC_DESC_F_CTRL		(1u << 3)	/* channel message of the host's own protocol */
/*
 * F_MORE and F_CTRL follow the chain rule, fc_hw_chain_check() below.
 * F_CTRL sends the message as FC_PKT_T_CTRL packets instead of DATA: host
 * software's control messages (rendezvous) travel in order with the data
 * but are told apart from it.
 */
#define FC_DESC_F_KNOWN		(FC_DESC_F_EOC | FC_DESC_F_IRQ | FC_DESC_F_MORE | \
				 FC_DESC_F_CTRL)

/* Address spaces a descriptor end may name. */
#define FC_SPACE_HOST		0	/* host bus address (IOVA) */
#define FC_SPACE_BOARD		1	/* board memory (HBM) offset */
#define FC_SPACE_FABRIC		2	/* global fabric address, below */
#define FC_SPACE_MAX		2

/*
 * Global fabric address (PEACH2-style): node, then region, then offset.
 *   bits 63..48  zero
 *   bits 47..42  node (FC_MAX_NODES)
 *   bits 41..40  region: host window, board memory, peer (GPU) window,
 *                channel endpoint (offset = channel << 32)
 *   bits 39..0   offset within the region (1 TiB)
 * The receiving board strips node and region and applies the offset to its
 * own host window (IOVA), board memory, or peer window.
 */
#define FC_MAX_NODES		64
#define FC_FABRIC_NODE_SHIFT	42
#define FC_FABRIC_NODE_MASK	0x3full
#define FC_FABRIC_REGION_SHIFT	40
#define FC_FABRIC_REGION_MASK	0x3ull
#define FC_FABRIC_OFFSET_MASK	((1ull << 40) - 1)
#define FC_FABRIC_RSVD_MASK	(~((1ull << 48) - 1))
#define FC_REGION_HOST		0
#define FC_REGION_BOARD		1
#define FC_REGION_PEER		2	/* the receiving board's peer window */
/*
 * Peer memory (another PCIe device's: a GPU's, another board's aperture)
 * is bus space like host memory: once the host has mapped it for the board
 * (a dma-buf import), a descriptor of that board names it as FC_SPACE_HOST
 * at the bus address of that mapping. The board reaches a peer's BAR that
 * way only with FC_CAP_PEER_MAP (its requests may go peer-to-peer).
 *
 * Other nodes name it through the board's peer window (FC_CAP_PEER_WINDOW,
 * FC_PW_* below): an FC_REGION_PEER offset is (entry, offset in entry),
 *   bits 39..34  entry of the window's translation table (FC_PW_ENTRIES)
 *   bits 33..0   byte offset from the entry's BASE (16 GiB at most)
 * so that no remote node ever names a bus address, and the host that owns
 * the memory decides what is reachable, and for how long.
 */
#define FC_PW_ENTRY_SHIFT	34
#define FC_PW_ENTRY_MASK	0x3full
#define FC_PW_OFF_MASK		((1ull << FC_PW_ENTRY_SHIFT) - 1)
#define FC_PW_MAX_SIZE		(1ull << FC_PW_ENTRY_SHIFT)
#define FC_PW_OFFSET(entry, off) \
	((((__u64)(entry) & FC_PW_ENTRY_MASK) << FC_PW_ENTRY_SHIFT) | \
	 ((__u64)(off) & FC_PW_OFF_MASK))
#define FC_PW_ADDR(node, entry, off) \
	FC_FABRIC_ADDR(node, FC_REGION_PEER, FC_PW_OFFSET(entry, off))
#define FC_PW_ENTRY_OF(a)	((FC_FABRIC_OFFSET(a) >> FC_PW_ENTRY_SHIFT) & \
				 FC_PW_ENTRY_MASK)
#define FC_PW_OFF_OF(a)		((a) & FC_PW_OFF_MASK)
#define FC_REGION_CHAN		3
#define FC_FABRIC_CHAN_SHIFT	32
#define FC_FABRIC_CHAN(node, chan) \
	FC_FABRIC_ADDR(node, FC_REGION_CHAN, (__u64)(chan) << FC_FABRIC_CHAN_SHIFT)

#define FC_FABRIC_ADDR(node, region, off) \
	((((__u64)(node) & FC_FABRIC_NODE_MASK) << FC_FABRIC_NODE_SHIFT) | \
	 (((__u64)(region) & FC_FABRIC_REGION_MASK) << FC_FABRIC_REGION_SHIFT) | \
	 ((__u64)(off) & FC_FABRIC_OFFSET_MASK))
#define FC_FABRIC_NODE(a)	(((a) >> FC_FABRIC_NODE_SHIFT) & FC_FABRIC_NODE_MASK)
#define FC_FABRIC_REGION(a)	(((a) >> FC_FABRIC_REGION_SHIFT) & FC_FABRIC_REGION_MASK)
#define FC_FABRIC_OFFSET(a)	((a) & FC_FABRIC_OFFSET_MASK)

/* ---- Router (CIRCUS-style: ports x ports crossbar, 64-entry table) ---- */
#define FC_ROUTER_BASE		0x4000
#define FC_ROUTER_CTRL		0x4000	/* H: FC_ROUTER_CTRL_* */
#define FC_ROUTER_STATUS	0x4004	/* B: FC_ROUTER_STATUS_* */
#define FC_ROUTER_DROPS		0x4008	/* B: packets with no route or for a
					   dead node, dropped here (wraps) */
#define FC_ROUTER_EJECT_DROPS	0x400c	/* B: packets for this node it could not
					   apply: endpoint off, bad PUT (wraps) */
#define FC_ROUTE_TABLE(dst)	(0x4100 + 4 * (dst))	/* H: per destination */
/*
 * The fabric this board is part of, as its fabric manager (fpgacomm-route
 * load, the emulated cluster's creator) describes it, so that a host can
 * tell its world from registers alone: FABRIC_NODES boards (0: not part of
 * a fabric), FABRIC_TOPO the topology. They sit with the routing table,
 * which the same manager writes, not in the global block: a board reset
 * clears the board's own registers, never what the manager set.
 */
#define FC_ROUTER_FABRIC_NODES	0x4010	/* H: nodes in the fabric, 0 = none */
#define FC_ROUTER_FABRIC_TOPO	0x4014	/* H: FC_TOPO_* kind, nx, ny */
/*
 * Nodes this board knows to be down (left the fabric, or died): bit n of
 * the 64-bit value. A host that cannot ask the fabric manager (a kernel
 * driver's user) fails requests to such a node instead of waiting.
 */
#define FC_ROUTER_NODES_DOWN_LO	0x4018	/* B */
#define FC_ROUTER_NODES_DOWN_HI	0x401c	/* B */
#define FC_TOPO_NONE		0
#define FC_TOPO_RING		1	/* nx nodes, ny = 1 */
#define FC_TOPO_MESH		2
#define FC_TOPO_TORUS		3
#define FC_TOPO_FULL		4	/* nx nodes, ny = 1 */
#define FC_TOPO_KIND_MASK	0xffu
#define FC_TOPO_NX_SHIFT	8
#define FC_TOPO_NY_SHIFT	16
#define FC_TOPO_DIM_MASK	0xffu
#define FC_TOPO(kind, nx, ny) \
	(((__u32)(kind) & FC_TOPO_KIND_MASK) | \
	 (((__u32)(nx) & FC_TOPO_DIM_MASK) << FC_TOPO_NX_SHIFT) | \
	 (((__u32)(ny) & FC_TOPO_DIM_MASK) << FC_TOPO_NY_SHIFT))
#define FC_TOPO_KIND(t)		((t) & FC_TOPO_KIND_MASK)
#define FC_TOPO_NX(t)		(((t) >> FC_TOPO_NX_SHIFT) & FC_TOPO_DIM_MASK)
#define FC_TOPO_NY(t)		(((t) >> FC_TOPO_NY_SHIFT) & FC_TOPO_DIM_MASK)
#define FC_ROUTER_CTRL_ENABLE	(1u << 0)
#define FC_ROUTER_STATUS_UP	(1u << 0)
/* A route entry: output port and the virtual channel after a dateline. */
#define FC_ROUTE_PORT_MASK	0x0fu		/* 0 = local, 1..N = link */
#define FC_ROUTE_VALID		(1u << 4)
#define FC_ROUTE_DATELINE	(1u << 5)	/* crossing moves to VC 1 */
#define FC_PORT_LOCAL		0
#define FC_MAX_PORTS		8		/* link ports 1..8 */
/*
 * Virtual channels: a packet enters on VC 0, returns to VC 0 when it turns
 * to another dimension (link ports 2d+1 and 2d+2 are dimension d), and
 * moves to VC 1 on a hop whose route entry has FC_ROUTE_DATELINE.
 */
#define FC_NUM_VCS		2
#define FC_PORT_DIM(p)		(((p) - 1) / 2)

/* ---- Link ports, one block per link port p (1..FC_MAX_PORTS) ---- */
#define FC_PORT_BASE		0x5000
#define FC_PORT_STRIDE		0x100
#define FC_PORT_REG(p, r)	(FC_PORT_BASE + FC_PORT_STRIDE * ((p) - 1) + (r))
#define FC_PORT_STATUS		0x00	/* B: FC_PORT_UP, peer node in 13..8 */
#define FC_PORT_TX_PKTS		0x04	/* B: packets sent (wraps) */
#define FC_PORT_RX_PKTS		0x08	/* B: packets received (wraps) */
#define FC_PORT_CRC_ERRORS	0x0c	/* B: packets failing the link CRC */
#define FC_PORT_RETRANSMITS	0x10	/* B: packets sent again */
#define FC_PORT_CREDITS		0x14	/* B: free receive slots at the peer */
#define FC_PORT_RMA_WRITES	0x18	/* B: bursts sent as one RMA write */
#define FC_PORT_RMA_RETRIES	0x1c	/* B: ... written again after a bad check */
#define FC_PORT_UP		(1u << 0)
#define FC_PORT_PEER_SHIFT	8
#define FC_PORT_PEER_MASK	0x3fu

/* ---- Channel endpoints: host receive rings, one per channel port ---- */
#define FC_CHAN_BASE		0x6000
#define FC_CHAN_STRIDE		0x20
#define FC_MAX_CHANNELS		256
#define FC_CHAN_REG(c, r)	(FC_CHAN_BASE + FC_CHAN_STRIDE * (c) + (r))
#define FC_CHAN_RING_LO		0x00	/* H: receive ring bus address */
#define FC_CHAN_RING_HI		0x04	/* H */
#define FC_CHAN_RING_SLOTS	0x08	/* H: ring size in packets, power of 2 */
#define FC_CHAN_CTRL		0x0c	/* H: FC_CHAN_CTRL_* */
#define FC_CHAN_HEAD		0x10	/* H: slots consumed by the host */
#define FC_CHAN_TAIL		0x14	/* B: slots written by the board; never
					 * reset but at power-up: a host starts
					 * an endpoint with HEAD = TAIL */
#define FC_CHAN_DROPS		0x18	/* B: packets dropped: endpoint off (wraps) */
/*
 * B (FC_CAP_CHAN_SEEN): the CTRL value the board works by, written once it
 * has stopped working by the one before: with ENABLE clear here, the
 * board writes the ring no more and its memory may be freed.
 */
#define FC_CHAN_SEEN		0x1c
#define FC_CHAN_CTRL_ENABLE	(1u << 0)
/* With ENABLE: packets go to the event queue (FC_EQ_*), RING_* unused. */
#define FC_CHAN_CTRL_EQ		(1u << 1)
/*
 * A receive-ring slot is one whole DATA packet as it arrived (struct
 * fc_hw_pkt, FC_CHAN_SLOT_SIZE bytes): the header gives source node, len
 * and EOM; payload bytes 0..len-1 are the data. A message is the payload
 * of one source's slots, in ring order, up to and including its EOM slot;
 * messages from different sources may interleave in one ring. The board
 * writes slot TAIL % RING_SLOTS, then advances TAIL; a full ring
 * (TAIL - HEAD == RING_SLOTS) holds the packet back in the fabric.
 */
#define FC_CHAN_SLOT_SIZE	64

/* ---- Link packet: 64 bytes = 4-byte header + 60-byte payload ---- */
#define FC_PKT_SIZE		64
#define FC_PKT_PAYLOAD		60
/*
 * Header, little endian:
 *   bits  5..0   destination node
 *   bits 11..6   source node
 *   bits 19..12  channel (port number of the endpoint)
 *   bits 25..20  payload bytes used (0..60)
 *   bit  26      virtual channel
 *   bit  27      end of message
 *   bits 31..28  type: FC_PKT_T_*
 */
#define FC_PKT_DST_SHIFT	0
#define FC_PKT_SRC_SHIFT	6
#define FC_PKT_NODE_MASK	0x3fu
#define FC_PKT_CHAN_SHIFT	12
#define FC_PKT_CHAN_MASK	0xffu
#define FC_PKT_LEN_SHIFT	20
#define FC_PKT_LEN_MASK		0x3fu
#define FC_PKT_VC		(1u << 26)
#define FC_PKT_EOM		(1u << 27)
#define FC_PKT_TYPE_SHIFT	28
#define FC_PKT_TYPE_MASK	0xfu
#define FC_PKT_T_DATA		0	/* channel payload */
#define FC_PKT_T_PUT		1	/* remote write: payload = addr + data */
#define FC_PKT_T_CREDIT		2	/* link level (hardware links only) */
#define FC_PKT_T_ACK		3	/* link level (hardware links only) */
#define FC_PKT_T_FENCE		4	/* answer with FENCE_ACK once all before it landed */
#define FC_PKT_T_FENCE_ACK	5
#define FC_PKT_T_CTRL		6	/* channel payload, as DATA, of a F_CTRL message */
#define FC_PKT_T_ABORT		7	/* the source's message on chan ends unfinished;
					 * before anything else of its engine,
					 * and before the PIO window's next */
#define FC_PKT_T_GET		8	/* read request: answered by PUTs */

/*
 * FENCE and FENCE_ACK: channel = the sending DMA engine, payload bytes 0..3
 * = a little-endian token that the ack echoes (len 4). A FENCE_ACK's byte 4
 * is its status: 0, or an FC_DMA_ERR_* when a remote write from that
 * engine since the last fence could not be applied (len 5). The receiving board
 * answers a FENCE after applying every earlier packet from the same source;
 * packets from one source to one node keep their order (one path, FIFOs).
 *
 * A PUT packet's payload: destination offset (region in bits 41..40), data;
 * its chan is the sending engine, whose FENCE_ACK reports a failed write.
 * A PUT into FC_REGION_PEER goes through the receiver's peer window
 * (FC_PW_*); one it refuses writes nothing and sets the next FENCE_ACK's
 * status to FC_DMA_ERR_WINDOW. A PUT the receiver cannot apply for another
 * reason (outside its host window or board memory) gives FC_DMA_ERR_ADDR.
 *
 * GET (FC_CAP_FABRIC_GET), a read request: chan = the requesting engine,
 * len = FC_PKT_GET_LEN, payload (little endian):
 *   bytes  0..7   source: region and offset on the receiver, node bits zero
 *   bytes  8..15  reply address: a fabric address on the requesting node
 *                 (host, board or peer region) where the data lands
 *   bytes 16..19  length in bytes, 1..FC_DESC_MAX_LEN
 * The receiver checks the source as it checks a PUT's destination (window
 * entries need FC_PW_CTRL_READ) and answers with PUT packets (chan = the
 * requesting engine) to the reply address, in order, before it answers
 * any later FENCE from that source: the requester's FENCE_ACK arrives
 * after the data. A source it refuses sends nothing and sets the FENCE_ACK
 * status (FC_DMA_ERR_WINDOW or FC_DMA_ERR_ADDR).
 */
#define FC_PKT_PUT_ADDR_BYTES	8
#define FC_PKT_PUT_DATA		(FC_PKT_PAYLOAD - FC_PKT_PUT_ADDR_BYTES)
#define FC_PKT_GET_SRC		0
#define FC_PKT_GET_REPLY	8
#define FC_PKT_GET_BYTES	16
#define FC_PKT_GET_LEN		20

struct fc_hw_pkt {
	__le32 hdr;
	__u8 payload[FC_PKT_PAYLOAD];
};

#define FC_PKT_HDR(dst, src, chan, len, type) \
	((((__u32)(dst) & FC_PKT_NODE_MASK) << FC_PKT_DST_SHIFT) | \
	 (((__u32)(src) & FC_PKT_NODE_MASK) << FC_PKT_SRC_SHIFT) | \
	 (((__u32)(chan) & FC_PKT_CHAN_MASK) << FC_PKT_CHAN_SHIFT) | \
	 (((__u32)(len) & FC_PKT_LEN_MASK) << FC_PKT_LEN_SHIFT) | \
	 (((__u32)(type) & FC_PKT_TYPE_MASK) << FC_PKT_TYPE_SHIFT))

/* ---- PIO send: channel packets the host writes itself ---- */
/*
 * A small message costs a descriptor fetch and a payload read when it goes
 * by DMA; through the PIO window the host writes its packets into the
 * board and the board injects them as they are (PEACH2's PIO path, CIRCUS's
 * host-written channel FIFO). The window is a ring of FC_PIO_SLOTS packet
 * slots: the host writes whole packets (struct fc_hw_pkt, one 64-byte
 * write-combined store each on hardware) into slots TAIL % FC_PIO_SLOTS
 * onwards, then advances PIO_TAIL by their number. The board takes them in
 * order into its injection queue and advances PIO_HEAD; the host keeps
 * TAIL - HEAD <= FC_PIO_SLOTS. A slot is the host's again once HEAD has
 * passed it.
 *
 * Only DATA and CTRL packets are taken, with len 1..60 (0 with EOM); the
 * board writes its own node into the source field and clears VC. Others
 * are skipped and counted in PIO_ERRORS. A host's messages through the
 * window and through its DMA engines enter the router by separate queues:
 * their order is the host's to keep (a message goes by PIO only once the
 * chains before it have ended). A board reset empties the window (HEAD =
 * TAIL). The block and the window are two pages of their own, so that a
 * driver may map them for a user that may not map the other registers.
 */
#define FC_PIO_BASE		0xa000
#define FC_PIO_TAIL		0xa000	/* H: packets written to the window */
#define FC_PIO_HEAD		0xa004	/* B: packets taken */
#define FC_PIO_ERRORS		0xa008	/* B: packets refused (wraps) */
/*
 * B: non-zero while the board sees PIO_TAIL move by itself. A host whose
 * stores the board cannot see (behind ivshmem: FC_FEAT_PIO_KICK) writes
 * TAIL, then after a full barrier reads WATCH, and tells the board
 * (PIO_KICK) only if it reads zero. The board clears WATCH, then after a
 * full barrier reads TAIL once more, before it stops looking: one of the
 * two sees the other's store. Hardware, seeing every store, keeps it 1.
 */
#define FC_PIO_WATCH		0xa00c
#define FC_PIO_WINDOW		0xb000	/* H: FC_PIO_SLOTS x FC_PKT_SIZE */
#define FC_PIO_SLOTS		64
#define FC_PIO_SLOT(i)		(FC_PIO_WINDOW + FC_PKT_SIZE * ((i) % FC_PIO_SLOTS))

/* ---- Peer window: FC_REGION_PEER's translation table ---- */
/*
 * FC_CAP_PEER_WINDOW. Incoming PUTs, bursts and GETs whose address names
 * FC_REGION_PEER are translated here: entry FC_PW_ENTRY_OF(addr) maps
 * [0, SIZE) of the region's entry to host bus addresses [BASE, BASE +
 * SIZE) of this board (peer memory the host mapped for the board: a GPU's,
 * a dma-buf). The host that owns the board programs the table (the driver
 * on a kernel board, the library in emulation); remote nodes only name
 * entries. A packet is applied only if, checked against the entry's CTRL
 * as the board works by it (SEEN): VALID is set, the whole range lies
 * within SIZE, and the entry permits it (WRITE for PUT, READ for GET).
 * Otherwise nothing is written or read, REFUSED counts it, LAST_REFUSED
 * says which entry and why, and the sender's next FENCE_ACK carries
 * FC_DMA_ERR_WINDOW, so its chain ends with that error.
 *
 * Programming entry i: with SEEN(i) showing VALID clear, write BASE and
 * SIZE, then CTRL with VALID, the permissions and a GEN different from
 * the last one. Revoking: write CTRL with VALID clear and a new GEN, then
 * wait until SEEN(i) equals it: the board writes SEEN only once no packet
 * checked under the old CTRL can still read or write, so the memory may
 * then be unmapped. GEN only makes each CTRL value distinct; packets do
 * not carry it, and an address of a revoked entry names whatever the
 * entry maps next (hosts reuse the entry freed longest ago).
 */
#define FC_PW_BASE		0xc000
#define FC_PW_ENTRIES		0xc000	/* B: entries in the table (64) */
#define FC_PW_REFUSED		0xc004	/* B: packets refused (wraps) */
#define FC_PW_LAST_REFUSED	0xc008	/* B: FC_PW_REF_*: the last refusal */
#define FC_PW_MAX_ENTRIES	64
#define FC_PW_STRIDE		0x20
#define FC_PW_REG(i, r)		(0xc100 + FC_PW_STRIDE * (i) + (r))
#define FC_PW_BASE_LO		0x00	/* H: bus address of offset 0 */
#define FC_PW_BASE_HI		0x04	/* H */
#define FC_PW_SIZE_LO		0x08	/* H: bytes, 1..FC_PW_MAX_SIZE */
#define FC_PW_SIZE_HI		0x0c	/* H */
#define FC_PW_CTRL		0x10	/* H: FC_PW_CTRL_*, GEN in 31..16 */
#define FC_PW_SEEN		0x14	/* B: the CTRL value the board works by */
#define FC_PW_CTRL_VALID	(1u << 0)
#define FC_PW_CTRL_READ		(1u << 1)	/* GETs may read it */
#define FC_PW_CTRL_WRITE	(1u << 2)	/* PUTs may write it */
#define FC_PW_CTRL_KNOWN	(FC_PW_CTRL_VALID | FC_PW_CTRL_READ | FC_PW_CTRL_WRITE)
#define FC_PW_GEN_SHIFT		16
#define FC_PW_CTRL_GEN(g)	(((__u32)(g) & 0xffffu) << FC_PW_GEN_SHIFT)
/* LAST_REFUSED: entry, source node and reason (FC_PW_WHY_*). */
#define FC_PW_REF_ENTRY(v)	((v) & 0x3fu)
#define FC_PW_REF_SRC(v)	(((v) >> 8) & 0x3fu)
#define FC_PW_REF_WHY(v)	(((v) >> 16) & 0xffu)
#define FC_PW_REF(entry, src, why) \
	(((__u32)(entry) & 0x3fu) | (((__u32)(src) & 0x3fu) << 8) | \
	 (((__u32)(why) & 0xffu) << 16))
#define FC_PW_WHY_INVALID	1	/* VALID clear: unmapped or revoked */
#define FC_PW_WHY_RANGE		2	/* beyond SIZE */
#define FC_PW_WHY_PERM		3	/* READ or WRITE not permitted */

/* ---- HBM controller and local stores (FC_CAP_HBM_STREAMS) ---- */
/*
 * Board memory is FC_HBM_PCHANNELS pseudo-channels laid end to end:
 * pseudo-channel p holds board addresses [p * PCH_BYTES, (p + 1) * PCH_BYTES)
 * (FC_HBM_PCH_OF()). No interleave: a range inside one pseudo-channel is
 * served by that channel alone, and spreading work over channels is the
 * host's placement. The geometry registers are constant; they and the LS
 * blocks read zero on a board without FC_CAP_HBM_STREAMS.
 */
#define FC_HBM_BASE		0x8000
#define FC_HBM_PCHANNELS	0x8000	/* B: pseudo-channels (32 on Stratix 10 MX) */
#define FC_HBM_NUM_LS		0x8004	/* B: local stores */
#define FC_HBM_LS_SIZE		0x8008	/* B: bytes per local store */
#define FC_HBM_KERNELS		0x800c	/* B: bit k: built-in kernel k is present */
#define FC_HBM_PCH_BYTES_LO	0x8010	/* B: bytes per pseudo-channel */
#define FC_HBM_PCH_BYTES_HI	0x8014

#define FC_HBM_PCH_OF(addr, pch_bytes)	((addr) / (pch_bytes))

/*
 * One block per local store (LS), each with two streams. Stream s of LS l
 * has its registers at FC_LS_SREG(l, s, r); stream 0's are where the first
 * contract put the LS's. A stream runs a program of FC_LS_PROG_LEN
 * instructions fetched from board memory (FC_SPACE_BOARD) at PROG, 32-byte
 * aligned, when START takes a new value; the program is checked whole
 * before it runs (FC_LS_ERR_*), and the run has ended when DONE_SEQ equals
 * START. A stream in ERROR ignores START until its LS is reset. Each run's
 * end counts one event on FC_IRQ_VEC_STREAM.
 *
 * Local stores are not a DMA address space: programs name bytes of their
 * own LS by offset (0..LS_SIZE), and data enters and leaves an LS only by
 * a program's COPY instructions, from and to board memory. A stream
 * program never reaches host memory, so the host may let any user start
 * one.
 */
#define FC_LS_BASE		0x9000
#define FC_LS_STRIDE		0x80
#define FC_MAX_LS		32
#define FC_LS_STREAMS		2
#define FC_LS_STREAM_STRIDE	0x40
#define FC_LS_REG(l, r)		(FC_LS_BASE + FC_LS_STRIDE * (l) + (r))
#define FC_LS_SREG(l, s, r)	FC_LS_REG(l, FC_LS_STREAM_STRIDE * (s) + (r))
#define FC_LS_PROG_LO		0x00	/* H: board address of the program */
#define FC_LS_PROG_HI		0x04	/* H */
#define FC_LS_PROG_LEN		0x08	/* H: program length in instructions */
#define FC_LS_START		0x0c	/* H: sequence; a new value starts it */
#define FC_LS_STATUS		0x10	/* B: FC_DMA_STATUS_* values */
#define FC_LS_ERROR		0x14	/* B: FC_LS_ERR_* of the failed run */
#define FC_LS_DONE_SEQ		0x18	/* B: START value of the last ended run */
#define FC_LS_ERR_INDEX		0x1c	/* B: instruction the error names */
#define FC_LS_INSNS		0x20	/* B: instructions executed (wraps) */
#define FC_LS_RUNS		0x24	/* B: runs ended without error (wraps) */
/*
 * Per LS: a new RESET value aborts both streams (no DONE_SEQ for their
 * runs), clears STATUS, ERROR, ERR_INDEX and the LS's events, takes the
 * current START values as seen, and is acknowledged in RESET_ACK once both
 * streams have stopped. Wait for the ack before the next START. A
 * BOARD_RESET does the same to every LS (RESET_ACK is left alone then).
 */
#define FC_LS_RESET		0x70	/* H: sequence; a new value resets the LS */
#define FC_LS_RESET_ACK		0x74	/* B: last RESET value acted on */

/* Errors of a stream run (FC_LS_ERROR); ERR_INDEX names the instruction. */
#define FC_LS_ERR_NONE		0
#define FC_LS_ERR_LEN		1	/* PROG_LEN 0 or above FC_SPROG_MAX */
#define FC_LS_ERR_FETCH		2	/* program outside board memory */
#define FC_LS_ERR_ALIGN		3	/* program not 32-byte aligned */
#define FC_LS_ERR_OP		4	/* unknown opcode */
#define FC_LS_ERR_RSVD		5	/* reserved field or flag not zero */
#define FC_LS_ERR_LS_ADDR	6	/* LS range outside the LS, or unaligned */
#define FC_LS_ERR_HBM_ADDR	7	/* board range outside board memory */
#define FC_LS_ERR_KERNEL	8	/* kernel the board does not have */
#define FC_LS_ERR_LOOP		9	/* LOOP of 0, too deep, or unbalanced */
#define FC_LS_ERR_END		10	/* END missing, or not the last */
#define FC_LS_ERR_EVENT		11	/* event number >= FC_LS_EVENTS */
#define FC_LS_ERR_KFAIL		12	/* a kernel failed while running */
#define FC_LS_ERR_ABORTED	13	/* host-side: run cancelled by a reset */
#define FC_LS_ERR_MAX		13

/*
 * A stream instruction: 32 bytes, little endian. Programs are arrays of
 * them, 1..FC_SPROG_MAX long, ending with exactly one FC_SOP_END.
 *
 *  COPY_IN   LS[ls, ls + len)  <- board[hbm + step * i, ... + len)
 *  COPY_OUT  board[hbm + step * i, ... + len) <- LS[ls, ls + len)
 *            i: the iteration of the innermost enclosing LOOP (0 outside);
 *            len 1..LS_SIZE, ls and len multiples of 4; every iteration's
 *            range is checked before the run starts.
 *  RUN       kernel @kernel on @len 4-byte elements: dst = LS[ls],
 *            src = LS[ls2], scalar argument @arg (FC_KERN_*).
 *  LOOP      run the instructions up to the matching ENDLOOP @len times
 *            (1..); at most FC_SLOOP_DEPTH deep. stream_for.
 *  ENDLOOP
 *  WAIT      take one from event @len of this LS (0..FC_LS_EVENTS-1),
 *            waiting while it is zero: a semaphore between the streams.
 *  SIGNAL    add one to event @len.
 *  END       the run ends well.
 * Fields an opcode does not use are zero (FC_LS_ERR_RSVD otherwise).
 */
struct fc_hw_sinsn {
	__u8 op;		/* FC_SOP_* */
	__u8 flags;		/* zero */
	__le16 kernel;		/* RUN: FC_KERN_* */
	__le32 len;		/* bytes, elements, iterations or event */
	__le64 hbm;		/* COPY: board address at iteration 0 */
	__le32 step;		/* COPY: board bytes added per iteration */
	__le32 ls;		/* COPY: LS offset; RUN: destination */
	__le32 ls2;		/* RUN: source */
	__le32 arg;		/* RUN: scalar (float32 bits for FP kernels) */
};

#define FC_SINSN_SIZE		32
#define FC_SPROG_ALIGN		32
#define FC_SPROG_MAX		256	/* instructions per program */
#define FC_SLOOP_DEPTH		4
#define FC_LS_EVENTS		4

#define FC_SOP_END		0
#define FC_SOP_COPY_IN		1
#define FC_SOP_COPY_OUT		2
#define FC_SOP_RUN		3
#define FC_SOP_LOOP		4
#define FC_SOP_ENDLOOP		5
#define FC_SOP_WAIT		6
#define FC_SOP_SIGNAL		7
#define FC_SOP_MAX		7

/*
 * Kernels. Built-in ones are 1..31, present when bit k of FC_HBM_KERNELS
 * is set. Elements are uint32 for INVERT, float32 for the others:
 *  INVERT dst[i] = ~src[i]          ADD   dst[i] = dst[i] + src[i]
 *  SCALE  dst[i] = arg * src[i]     AXPY  dst[i] = arg * src[i] + dst[i]
 *  SUM    dst[0] = src[0] + ... + src[len - 1], added in index order
 * Ids from FC_KERN_USER (256) up name kernels loaded into the board
 * (user kernels of an emulated board); a program naming one the board
 * lacks fails its check with FC_LS_ERR_KERNEL.
 */
#define FC_KERN_INVERT		1
#define FC_KERN_ADD		2
#define FC_KERN_SCALE		3
#define FC_KERN_AXPY		4
#define FC_KERN_SUM		5
#define FC_KERN_USER		256

/* ---- Emulator-only block: fault knobs (a real board reads zeros) ---- */
#define FC_EMU_BASE		0xf000
#define FC_EMU_MAGIC		0xf000	/* B: FC_EMU_MAGIC_VALUE on the emulator */
#define FC_EMU_FAULT_DMA_STALL	0xf004	/* H: non-zero: engines make no progress */
#define FC_EMU_FAULT_DMA_ERROR	0xf008	/* H: non-zero: chains fail with this code */
#define FC_EMU_FAULT_RESET_DEAF	0xf00c	/* H: non-zero: engine and board resets go unheeded */
#define FC_EMU_MAGIC_VALUE	0x454d554cu	/* "EMUL" */
/*
 * Behind QEMU ivshmem only: the bus (guest-physical) address of the
 * ivshmem shared memory BAR, written by the host driver at probe, so that
 * the daemons of the VM's other boards can resolve DMA to this board's
 * aperture, as PCIe peers reach a BAR (fpgacomm-emud --peer).
 */
#define FC_EMU_SHM_BUS_LO	0xf010	/* H: bits 31..0 */
#define FC_EMU_SHM_BUS_HI	0xf014	/* H: bits 63..32 */

/* ---- Derived facts, shared so that every side agrees ---- */

/*
 * Does @off hold a host bus address (a descriptor table, a receive ring, a
 * stream program)? The kernel driver reads 0 there for a caller without
 * CAP_SYS_RAWIO, as MEM_INFO hides its bus addresses (docs/hardware.md).
 */
static inline int fc_hw_bus_addr_reg(__u32 off)
{
	__u32 r;

	if (off == FC_EQ_BASE_LO || off == FC_EQ_BASE_HI)
		return 1;
	r = off - FC_DMA_BASE;
	if (off >= FC_DMA_BASE && r < FC_DMA_STRIDE * FC_DMA_MAX_ENGINES)
		return r % FC_DMA_STRIDE <= FC_DMA_DESC_HI;
	r = off - FC_CHAN_BASE;
	if (off >= FC_CHAN_BASE && r < FC_CHAN_STRIDE * FC_MAX_CHANNELS)
		return r % FC_CHAN_STRIDE <= FC_CHAN_RING_HI;
	r = off - FC_LS_BASE;
	if (off >= FC_LS_BASE && r < FC_LS_STRIDE * FC_MAX_LS)
		return r % FC_LS_STRIDE <= FC_LS_PROG_HI;
	r = off - FC_PW_REG(0, 0);
	if (off >= FC_PW_REG(0, 0) && r < FC_PW_STRIDE * FC_PW_MAX_ENTRIES)
		return r % FC_PW_STRIDE <= FC_PW_BASE_HI;
	return 0;
}

/* Is @off a register the host writes ("H" above)? Others ignore writes. */
static inline int fc_hw_host_writable(__u32 off)
{
	__u32 r;

	switch (off) {
	case FC_REG_SCRATCH:
	case FC_REG_APERTURE_BASE_LO:
	case FC_REG_APERTURE_BASE_HI:
	case FC_REG_BOARD_RESET:
	case FC_REG_IRQ_ENABLE:
	case FC_ROUTER_CTRL:
	case FC_ROUTER_FABRIC_NODES:
	case FC_ROUTER_FABRIC_TOPO:
	case FC_PIO_TAIL:
	case FC_EQ_BASE_LO:
	case FC_EQ_BASE_HI:
	case FC_EQ_SLOTS:
	case FC_EQ_CTRL:
	case FC_EQ_HEAD:
	case FC_EQ_IRQ_AT:
	case FC_EMU_FAULT_DMA_STALL:
	case FC_EMU_FAULT_DMA_ERROR:
	case FC_EMU_FAULT_RESET_DEAF:
	case FC_EMU_SHM_BUS_LO:
	case FC_EMU_SHM_BUS_HI:
		return 1;
	}
	if (off >= FC_REG_IRQ_ACK(0) && off < FC_REG_IRQ_ACK(FC_IRQ_VECTORS))
		return 1;
	if (off >= FC_ROUTE_TABLE(0) && off < FC_ROUTE_TABLE(FC_MAX_NODES))
		return 1;
	r = off - FC_PW_REG(0, 0);
	if (off >= FC_PW_REG(0, 0) && r < FC_PW_STRIDE * FC_PW_MAX_ENTRIES)
		return r % FC_PW_STRIDE <= FC_PW_CTRL;
	if (off >= FC_PIO_WINDOW && off < FC_PIO_SLOT(FC_PIO_SLOTS - 1) + FC_PKT_SIZE)
		return 1;
	r = off - FC_DMA_BASE;
	if (off >= FC_DMA_BASE && r < FC_DMA_STRIDE * FC_DMA_MAX_ENGINES)
		return r % FC_DMA_STRIDE <= FC_DMA_RESET;
	r = off - FC_CHAN_BASE;
	if (off >= FC_CHAN_BASE && r < FC_CHAN_STRIDE * FC_MAX_CHANNELS)
		return r % FC_CHAN_STRIDE <= FC_CHAN_HEAD;
	r = off - FC_LS_BASE;
	if (off >= FC_LS_BASE && r < FC_LS_STRIDE * FC_MAX_LS) {
		r %= FC_LS_STRIDE;
		if (r == FC_LS_RESET)
			return 1;
		return r < FC_LS_STREAMS * FC_LS_STREAM_STRIDE &&
		       r % FC_LS_STREAM_STRIDE <= FC_LS_START;
	}
	return 0;
}

/*
 * Is @off in the local-store blocks? Their host registers start stream
 * programs, which reach board memory and local stores only, never host
 * memory: a driver may let any user write them.
 */
static inline int fc_hw_ls_reg(__u32 off)
{
	return off >= FC_LS_BASE && off < FC_LS_REG(FC_MAX_LS, 0);
}

/* Is [@addr, @addr + @len) within a board memory of @mem_size bytes? */
static inline int fc_hw_board_span_ok(__u64 addr, __u64 len, __u64 mem_size)
{
	return addr <= mem_size && len <= mem_size - addr;
}

/*
 * Is [@addr, @addr + @len) a valid fabric span: reserved bits clear, and
 * within one region of one node? @len is not zero.
 */
static inline int fc_hw_fabric_span_ok(__u64 addr, __u64 len)
{
	return !(addr & FC_FABRIC_RSVD_MASK) &&
	       FC_FABRIC_OFFSET(addr) + len - 1 <= FC_FABRIC_OFFSET_MASK;
}

/*
 * Checks the bounds of @len bytes (not zero) at @addr in board memory of
 * @mem_size bytes or in the fabric: 0, -ERANGE outside, -EINVAL for another
 * space (host memory is checked against its registration, not here).
 */
static inline int fc_hw_span_check(__u32 space, __u64 addr, __u64 len,
				   __u64 mem_size)
{
	switch (space) {
	case FC_SPACE_BOARD:
		return fc_hw_board_span_ok(addr, len, mem_size) ? 0 : -ERANGE;
	case FC_SPACE_FABRIC:
		return fc_hw_fabric_span_ok(addr, len) ? 0 : -ERANGE;
	default:
		return -EINVAL;
	}
}

/* Is a destination a channel endpoint (FC_REGION_CHAN of a fabric address)? */
static inline int fc_hw_dst_is_chan(__u32 space, __u64 addr)
{
	return space == FC_SPACE_FABRIC &&
	       FC_FABRIC_REGION(addr) == FC_REGION_CHAN;
}

/*
 * What the chain rule reads of a descriptor, or of a host transfer that
 * becomes descriptors: its FC_DESC_F_* flags and its destination.
 */
struct fc_hw_chain_step {
	__u32 flags;		/* FC_DESC_F_*; only MORE and CTRL matter */
	__u32 dst_space;	/* FC_SPACE_* */
	__u64 dst;
};

static inline struct fc_hw_chain_step fc_hw_desc_step(const struct fc_hw_desc *d)
{
	struct fc_hw_chain_step s = {
		.flags = FC_HW_LE16(d->flags),
		.dst_space = d->dst_space,
		.dst = FC_HW_LE64(d->dst),
	};

	return s;
}

/*
 * The chain rule of channel messages (docs/hardware.md section 8), checked
 * here for the library, the driver and the emulated board alike: F_CTRL
 * only towards a channel; F_MORE only towards a channel and never on the
 * last descriptor, and then the next descriptor goes to the same channel
 * (same space and address) with the same F_CTRL. @next is the following
 * descriptor, NULL for the last of a chain. The other fields are checked
 * elsewhere. RETURN VALUE: FC_DMA_ERR_NONE, or FC_DMA_ERR_FLAGS against
 * @d (fc_hw_dma_errno() makes it -EINVAL).
 */
static inline __u32 fc_hw_chain_check(const struct fc_hw_chain_step *d,
				      const struct fc_hw_chain_step *next)
{
	int to_chan = fc_hw_dst_is_chan(d->dst_space, d->dst);

	if ((d->flags & FC_DESC_F_CTRL) && !to_chan)
		return FC_DMA_ERR_FLAGS;
	if (!(d->flags & FC_DESC_F_MORE))
		return FC_DMA_ERR_NONE;
	if (!to_chan || !next || next->dst_space != d->dst_space ||
	    next->dst != d->dst || ((next->flags ^ d->flags) & FC_DESC_F_CTRL))
		return FC_DMA_ERR_FLAGS;
	return FC_DMA_ERR_NONE;
}

/* The errno a chain ending with DMA error @err reports (0 for none). */
static inline int fc_hw_dma_errno(__u32 err)
{
	switch (err) {
	case FC_DMA_ERR_NONE:
		return 0;
	case FC_DMA_ERR_COUNT:
		return -E2BIG;
	case FC_DMA_ERR_FETCH:
	case FC_DMA_ERR_ADDR:
		return -EFAULT;
	case FC_DMA_ERR_ALIGN:
	case FC_DMA_ERR_LEN:
	case FC_DMA_ERR_FLAGS:
	case FC_DMA_ERR_SPACE:
	case FC_DMA_ERR_RSVD:
		return -EINVAL;
	case FC_DMA_ERR_ROUTE:
		return -EHOSTUNREACH;
	case FC_DMA_ERR_ABORTED:
		return -ECANCELED;
	case FC_DMA_ERR_WINDOW:
		return -EACCES;
	default:
		return -EIO;
	}
}

/*
 * The peer window's check of [@off, @off + @len) (an FC_REGION_PEER offset,
 * @len not zero) against entry CTRL @ctrl and @size, for a PUT (@write) or
 * a GET. Written once for the board, the emulator and the tests.
 * RETURN VALUE: 0, or the FC_PW_WHY_* it is refused for.
 */
static inline __u32 fc_hw_pw_check(__u32 ctrl, __u64 size, __u64 off,
				   __u64 len, int write)
{
	__u64 o = FC_PW_OFF_OF(off);

	if (!(ctrl & FC_PW_CTRL_VALID))
		return FC_PW_WHY_INVALID;
	if (o > size || len > size - o)
		return FC_PW_WHY_RANGE;
	if (!(ctrl & (write ? FC_PW_CTRL_WRITE : FC_PW_CTRL_READ)))
		return FC_PW_WHY_PERM;
	return 0;
}

/*
 * A block-stride transfer (PEACH2's): @count blocks of @block bytes, block
 * k from src + k * @src_stride to dst + k * @dst_stride, one descriptor
 * each in one chain. Strides below the block would overlap blocks.
 * RETURN VALUE: 0; -EINVAL (count or block 0, a stride below the block);
 * -E2BIG (more blocks than @max_chain, a block above FC_DESC_MAX_LEN).
 */
static inline int fc_hw_stride_check(__u64 count, __u64 block,
				     __u64 src_stride, __u64 dst_stride,
				     __u64 max_chain)
{
	if (!count || !block || src_stride < block || dst_stride < block)
		return -EINVAL;
	if (count > max_chain || block > FC_DESC_MAX_LEN)
		return -E2BIG;
	return 0;
}

/* What a stream program is checked against: the board's side of it. */
struct fc_hw_sgeom {
	__u64 mem_size;		/* board memory bytes */
	__u32 ls_size;		/* FC_HBM_LS_SIZE */
	__u32 kernels;		/* FC_HBM_KERNELS */
	/* Has the board kernel @id >= FC_KERN_USER? NULL: none. */
	int (*user_kernel)(void *ctx, __u32 id);
	void *ctx;
};

static inline int fc_hw_sls_ok(__u32 off, __u64 len, __u32 ls_size)
{
	return !(off % 4) && !(len % 4) && len && off <= ls_size &&
	       len <= ls_size - off;
}

/* One instruction; @iters: iterations of its innermost loop (1 outside). */
static inline __u32 fc_hw_sinsn_check(const struct fc_hw_sinsn *in,
				      __u64 iters,
				      const struct fc_hw_sgeom *g)
{
	__u32 len = FC_HW_LE32(in->len), k = FC_HW_LE16(in->kernel);
	__u64 hbm = FC_HW_LE64(in->hbm), step = FC_HW_LE32(in->step);
	__u64 last;

	if (in->flags)
		return FC_LS_ERR_RSVD;
	switch (in->op) {
	case FC_SOP_COPY_IN:
	case FC_SOP_COPY_OUT:
		if (in->kernel || in->ls2 || in->arg)
			return FC_LS_ERR_RSVD;
		if (!fc_hw_sls_ok(FC_HW_LE32(in->ls), len, g->ls_size))
			return FC_LS_ERR_LS_ADDR;
		/* the last iteration's range, without overflow */
		if (hbm > g->mem_size ||
		    (step && iters - 1 > (g->mem_size - hbm) / step))
			return FC_LS_ERR_HBM_ADDR;
		last = hbm + step * (iters - 1);
		if (!fc_hw_board_span_ok(last, len, g->mem_size))
			return FC_LS_ERR_HBM_ADDR;
		return FC_LS_ERR_NONE;
	case FC_SOP_RUN:
		if (in->hbm || in->step)
			return FC_LS_ERR_RSVD;
		if (k < 32 ? !(k && (g->kernels >> k) & 1) :
		    k < FC_KERN_USER || !g->user_kernel ||
		    !g->user_kernel(g->ctx, k))
			return FC_LS_ERR_KERNEL;
		if (!fc_hw_sls_ok(FC_HW_LE32(in->ls), (__u64)len * 4, g->ls_size) ||
		    !fc_hw_sls_ok(FC_HW_LE32(in->ls2), (__u64)len * 4, g->ls_size))
			return FC_LS_ERR_LS_ADDR;
		return FC_LS_ERR_NONE;
	case FC_SOP_END:
	case FC_SOP_LOOP:
	case FC_SOP_ENDLOOP:
	case FC_SOP_WAIT:
	case FC_SOP_SIGNAL:
		if (in->kernel || in->hbm || in->step || in->ls || in->ls2 ||
		    in->arg)
			return FC_LS_ERR_RSVD;
		if ((in->op == FC_SOP_END || in->op == FC_SOP_ENDLOOP) && len)
			return FC_LS_ERR_RSVD;
		if (in->op == FC_SOP_LOOP && !len)
			return FC_LS_ERR_LOOP;
		if ((in->op == FC_SOP_WAIT || in->op == FC_SOP_SIGNAL) &&
		    len >= FC_LS_EVENTS)
			return FC_LS_ERR_EVENT;
		return FC_LS_ERR_NONE;
	default:
		return FC_LS_ERR_OP;
	}
}

/*
 * Check a whole program of @n instructions as the board does at START.
 * RETURN VALUE: FC_LS_ERR_NONE, or the error with *bad the instruction.
 */
static inline __u32 fc_hw_sprog_check(const struct fc_hw_sinsn *prog, __u32 n,
				      const struct fc_hw_sgeom *g, __u32 *bad)
{
	__u32 iters[FC_SLOOP_DEPTH + 1] = { 1 };
	__u32 depth = 0, i, err;

	*bad = 0;
	if (!n || n > FC_SPROG_MAX)
		return FC_LS_ERR_LEN;
	for (i = 0; i < n; i++) {
		*bad = i;
		err = fc_hw_sinsn_check(&prog[i], iters[depth], g);
		if (err)
			return err;
		switch (prog[i].op) {
		case FC_SOP_LOOP:
			if (depth == FC_SLOOP_DEPTH)
				return FC_LS_ERR_LOOP;
			iters[++depth] = FC_HW_LE32(prog[i].len);
			break;
		case FC_SOP_ENDLOOP:
			if (!depth)
				return FC_LS_ERR_LOOP;
			depth--;
			break;
		case FC_SOP_END:
			if (depth)
				return FC_LS_ERR_LOOP;
			if (i != n - 1)
				return FC_LS_ERR_END;
			return FC_LS_ERR_NONE;
		}
	}
	*bad = n - 1;
	return depth ? FC_LS_ERR_LOOP : FC_LS_ERR_END;
}

/* The errno a stream run ending with @err reports (0 for none). */
static inline int fc_hw_ls_errno(__u32 err)
{
	switch (err) {
	case FC_LS_ERR_NONE:
		return 0;
	case FC_LS_ERR_LEN:
		return -E2BIG;
	case FC_LS_ERR_FETCH:
	case FC_LS_ERR_LS_ADDR:
	case FC_LS_ERR_HBM_ADDR:
		return -EFAULT;
	case FC_LS_ERR_ALIGN:
		return -EINVAL;
	case FC_LS_ERR_OP:	/* the program's structure: malformed */
	case FC_LS_ERR_RSVD:
	case FC_LS_ERR_LOOP:
	case FC_LS_ERR_END:
	case FC_LS_ERR_EVENT:
		return -ENOEXEC;
	case FC_LS_ERR_KERNEL:
		return -ENOSYS;
	case FC_LS_ERR_ABORTED:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

#endif /* FPGACOMM_HW_H */
