/* SPDX-License-Identifier: MIT */
/*
 * Private to emu/bridge_*.c: the bridge's state and messages, and the data
 * path of bridge_ofi.c (sending, receiving, the thread) that the setup in
 * bridge_setup.c starts and stops. Only built with libfabric's headers.
 */
#ifndef FCEMU_BRIDGE_INTERNAL_H
#define FCEMU_BRIDGE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <dlfcn.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "bridge_rma.h"
#include "bridge.h"
#include "cluster_internal.h"

#define BR_BATCH	64 /* packets per message at most */
#define BR_RX		32 /* receives posted */
#define BR_TX		64 /* data messages in flight */
#define BR_CREDIT_BATCH 32 /* credits returned at least this many at once */
#define BR_HB_NS	(100 * 1000000ull)
#define BR_SREAD_MS	100
/* after packets came in, more may follow this close (a message's next
 * batch): the wait for them stays on the completion queue */
#define BR_TRAIL_NS (50 * 1000ull)
#define BR_NAME_MAX 256
#define BR_STOP_NS  (10 * 1000000000ull) /* to carry what is left */
/* a leaving board's links idle this long: nothing passes through them */
#define BR_QUIET_NS (1000000000ull)
#define BR_MAGIC    0x46434252u /* "FCBR" */
/* a peer that never spoke: its start may wait for every other one's */
#define BR_FIRST_NS (30 * 1000000000ull)

enum br_type {
	BR_DATA = 1, /* packets for the receiver's input (port, vc) */
	BR_CREDIT,   /* packets taken off the sender's input at (port, vc) */
	BR_HB,	     /* alive */
	BR_BYE,	     /* leaving in order */
	BR_DOWN,     /* you were declared down here */
	BR_HELLO,    /* a board that left is back, under a new name */
};

struct br_hdr {
	uint32_t magic;
	uint8_t type;
	uint8_t port; /* DATA: the receiver's input port; CREDIT: ours */
	uint8_t vc;
	uint8_t src;
	uint8_t dst;
	uint8_t pad;
	uint16_t count; /* DATA: packets that follow */
	uint32_t head;	/* CREDIT: how many */
	/* the bridges at both ends, as the sender knows them: a message
	 * of or for an earlier bridge of the same board is not taken */
	uint32_t src_epoch, dst_epoch;
};

/* A packet as it crosses: its CRC and departure time travel with it. */
struct br_slot {
	struct fc_hw_pkt pkt;
	uint32_t crc;
	uint32_t pad;
	uint64_t t;
};

#define BR_MSG_MAX (sizeof(struct br_hdr) + BR_BATCH * sizeof(struct br_slot))

struct br_buf {
	struct fi_context ctx; /* first: the completion's op_context */
	struct br_buf *next;
	bool rx;
	unsigned int dst;
	uint8_t data[BR_MSG_MAX] __attribute__((aligned(64)));
};

/* The few libfabric calls that are functions (the rest are inline). */
struct ofi_api {
	int (*getinfo)(uint32_t, const char *, const char *, uint64_t,
		       const struct fi_info *, struct fi_info **);
	void (*freeinfo)(struct fi_info *);
	struct fi_info *(*dupinfo)(const struct fi_info *);
	int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
};

struct fcemu_bridge {
	struct fcemu_cluster *c;
	unsigned int node;
	struct fcemu_bridge_boot boot;
	struct ofi_api api;
	void *dl;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fcemu_rma *rma; /* bursts by RMA (bridge_rma.c), or NULL */
	int wait_fd; /* the CQ's, or -1: only the thread reads the CQ */
	size_t inject_size;
	fi_addr_t addr[FC_MAX_NODES];
	uint32_t epoch;			 /* this bridge, among the board's */
	uint32_t epoch_of[FC_MAX_NODES]; /* each peer's, as addr[] was made */
	uint64_t peers; /* remote boards: heartbeats to and from */
	uint64_t links; /* our ports whose far end is remote */
	uint64_t heard[FC_MAX_NODES];
	uint64_t spoke; /* bit n: heard from n's bridge at least once */
	/* boards that said goodbye: still sent heartbeats while they carry
	 * others' traffic (they still listen for ours), BR_STOP_NS at most */
	uint64_t left;
	uint64_t left_at[FC_MAX_NODES];
	/* boards down here whose new bridge we learnt of: back once it speaks */
	uint64_t reborn;
	/* per board, the bridge declared down: kept for this process's next
	 * bridges, so that it is told, never taken back */
	uint32_t down_epoch[FC_MAX_NODES];
	uint64_t moved_at; /* a packet last crossed our links */
	/* a reply may come until then (fcemu_bridge_wait_reply), or 0: set
	 * as packets leave, shortened as some come in; read without the lock */
	uint64_t due_until;
	uint64_t next_hb, last_tick;
	struct br_buf *rx;
	struct br_buf *tx, *tx_free;
	unsigned int tx_busy;
	/* per port and VC of ours: sent, and acked by the far head */
	uint32_t sent[FC_MAX_PORTS + 1][FC_NUM_VCS];
	uint32_t acked[FC_MAX_PORTS + 1][FC_NUM_VCS];
	uint32_t reported[FC_MAX_PORTS + 1][FC_NUM_VCS]; /* our input heads */
	pthread_mutex_t lock;
	pthread_t thread;
	bool thread_on;
	volatile bool stop;
};

/* ---- bridge_ofi.c: the data path ---- */

uint64_t fcemu__br_now_ns(void);
/* libfabric's few real functions, from the dlopen'd library. */
int fcemu__br_load_api(struct fcemu_bridge *b);
/* A libfabric return as a negative errno. */
int fcemu__br_ofi_err(ssize_t ret);
/* Board @n declared down here (DEAD or EXITED). */
bool fcemu__br_dead(struct fcemu_cluster *c, unsigned int n);
/* Board @n's endpoint name and landing info: its address, its epoch. */
int fcemu__br_meet_peer(struct fcemu_bridge *b, unsigned int n,
			const void *blob, size_t len);
/* A control message (heartbeat, credit, goodbye...) to board @dst. */
int fcemu__br_send_ctl(struct fcemu_bridge *b, unsigned int dst,
		       enum br_type type, unsigned int port, unsigned int vc,
		       uint32_t head);
/* A message with a body, for bridge_rma.c's records and answers. */
int fcemu__br_send_msg(void *arg, unsigned int dst, unsigned int type,
		       unsigned int port, unsigned int vc, uint32_t head,
		       const void *body, size_t len);
/* Move what waits on our remote links; the cluster's pump callback. */
unsigned int fcemu__br_pump(void *arg);
unsigned int fcemu__br_pump_locked(struct fcemu_bridge *b);
/* Take the completions that have arrived. */
unsigned int fcemu__br_reap(struct fcemu_bridge *b);
/* Sleep until the CQ has something, @max_ns at most; read nothing. */
void fcemu__br_wait_cq(struct fcemu_bridge *b, uint64_t max_ns);
/* Packets from other hosts wait in our board's inputs, not yet routed. */
bool fcemu__br_inputs_waiting(struct fcemu_bridge *b);
/* The receiving thread: sleeps on the completion queue. */
void *fcemu__br_bridge_thread(void *arg);

#endif /* FCEMU_BRIDGE_INTERNAL_H */
