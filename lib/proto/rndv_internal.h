/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/proto/rndv*.c: what rendezvous keeps per request and per
 * board, and the calls its three files make of each other: the sending
 * side and the answers (rndv.c), the receiving side (rndv_recv.c), and
 * giving up and what the transport calls (rndv_reg.c), which call down in
 * that order.
 */
#ifndef FC_RNDV_INTERNAL_H
#define FC_RNDV_INTERNAL_H

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto_internal.h"

#define RNDV_ENV "FPGACOMM_RNDV_MIN" /* bytes; 0: no rendezvous */
/* microseconds a 1 MiB message nobody asked for waits for its receive */
#define LAND_ENV      "FPGACOMM_RNDV_LAND_US"
#define LAND_DELAY_US 1000
#define GET_ENV	      "FPGACOMM_RNDV_GET"
/*
 * Messages up to this long are read by the receiver (FPGACOMM_RNDV_GET),
 * longer ones written by the sender's board. None by default: on emulated
 * boards a read's data moves only while the sender's process drives its
 * board, and on 32 cores with two quiet ranks the write was faster at
 * every size measured (64 KiB latency 18-21 us against 23-29 read, 128
 * KiB 24-26 against 33-35; bandwidth alike); a read saves a trip where
 * the sending side's board runs on its own (hardware).
 */
#define GET_MAX 0

/* Where a rendezvous request is (SEND: RTS, WAIT_CTS, DATA, FIN; RECV:
 * LAND, or GET when it reads the sender's buffer itself). */
enum rstate {
	FC__RNDV_NONE,
	FC__RNDV_RTS,	   /* its announcement's chain runs */
	FC__RNDV_WAIT_CTS, /* the receiver has not fc__rv_answered yet */
	FC__RNDV_DATA,	   /* the remote write's chain runs */
	FC__RNDV_FIN,	   /* the chain telling the receiver runs */
	FC__RNDV_LAND,	   /* receive: fc__rv_cleared, the data is coming */
	FC__RNDV_GET,	   /* receive: its read's chain runs, or waits */
};

/* What rendezvous keeps of a request (r->proto) while it is one. */
struct rreq {
	enum rstate state;
	uint32_t cookie;
	const void *sbuf; /* SEND: the caller's buffer */
	int data_status;  /* SEND: how the remote write ended */
	bool rget;	  /* SEND: announced with its address (RTS_GET) */
	bool revoking;	  /* SEND: a REVOKE is out, its answer not in */
	uint8_t early;	  /* SEND: the answer (its kind) that came before
			   * its RTS's chain ended, or 0 */
	uint64_t early_val;
	struct fc_req *rnext; /* waiting for an answer, a batch, or a FIN */
};

static inline struct rreq *RQ(const struct fc_req *r)
{
	return r->proto;
}

static inline enum rstate st(const struct fc_req *r)
{
	return r->proto ? RQ(r)->state : FC__RNDV_NONE;
}

/* Where a message announced to this receiver is (struct rmsg). */
enum mstate {
	MSG_DEFERRED, /* announced (RTS), nowhere to land yet */
	MSG_LANDING,  /* cleared (CTS) into @land, FIN due */
	MSG_LANDED,   /* in @land */
};

/* What rendezvous keeps of a queued message it announced (m->proto, in
 * the message's own block: see msg_new()). */
struct rmsg {
	enum mstate state;
	uint32_t cookie; /* the sender's name for it */
	uint64_t raddr;	 /* DEFERRED: where it may be read (RTS_GET), or 0 */
	struct fc_mem *land; /* LANDING, LANDED: the library's buffer */
	int status;	     /* LANDED: 0, or the sender's error */
	uint64_t land_at_ns; /* DEFERRED: landed from then on */
};

static inline struct rmsg *RM(const struct fc__msg *m)
{
	return m->proto;
}

/* What rendezvous keeps per board (fab->proto[FC__PROTO_RNDV]): no other
 * layer sees it. */
struct rndv {
	struct rndv_pub pub; /* first: what eager.c reads (proto_internal.h) */
	/* receivers read announced messages up to this long (RTS_GET);
	 * 0: never */
	size_t get_max;
	uint32_t next_cookie;
	struct fc_req *cts_wait; /* sends waiting for an answer */
	/* writes (reads) waiting for their node's batch in flight */
	struct fc_req *data_head, *data_tail;
	/* per node: writes (reads) in the send queue or flying (one batch) */
	uint8_t data_fly[FC_MAX_NODES];
	/* receives fc__rv_cleared (CTS), waiting for their FIN */
	struct fc_req *landing;
	uint64_t land_delay_ns; /* a 1 MiB message nobody asked for waits */
	/* the earliest a message nobody asked for is landed (its tick() is
	 * on meanwhile); 0: none waits */
	uint64_t land_due_ns;
};

static inline struct rndv *RV(const struct fc__fabric *fab)
{
	return fc__proto_state(fab, FC__PROTO_RNDV);
}

/* ---- rndv.c ---- */

int fc__rv_rq_new(struct fc_req *r);
void fc__rv_rq_end(struct fc_req *r);
/* A send's answer from its receiver (CTS, GOT or REVOKED) taken. */
void fc__rv_answered(struct fc_dev *dev, struct fc_req *r, uint8_t kind,
		     uint64_t val);
void fc__rv_cleared(struct fc_dev *dev, struct fc_req *r, uint64_t addr);
/* A write (or a read) queued for its node's next batch. */
void fc__rv_data_queue(struct fc__fabric *fab, struct fc_req *r);
/* RTS_GET's value: the sender's offset and length in one. */
uint64_t fc__rv_rts_val(struct fc_dev *dev, struct fc_req *r);
/* Handlers of the answers, and the transport's upcalls for chains. */
void fc__rv_on_cts(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, uint64_t addr);
void fc__rv_on_got(struct fc_dev *dev, uint32_t port, uint32_t node,
		   uint32_t cookie, uint64_t val);
void fc__rv_on_revoked(struct fc_dev *dev, uint32_t port, uint32_t node,
		       uint32_t cookie, uint64_t val);
bool fc__rv_chain_ended(struct fc_dev *dev, struct fc_req *r, int *status);
int fc__rv_submit(struct fc_dev *dev, struct fc_req *r, unsigned int lane,
		  unsigned int *n);

/* ---- rndv_recv.c ---- */

/* Handlers of the sender's control messages. */
void fc__rv_on_fin_ctrl(struct fc_dev *dev, uint32_t port, uint32_t node,
			uint32_t cookie, uint64_t val);
void fc__rv_on_revoke(struct fc_dev *dev, uint32_t port, uint32_t node,
		      uint32_t cookie, uint64_t val);
void fc__rv_on_rts_ctrl(struct fc_dev *dev, uint32_t port, uint32_t node,
			uint32_t cookie, uint64_t val);
void fc__rv_on_rts_get_ctrl(struct fc_dev *dev, uint32_t port, uint32_t node,
			    uint32_t cookie, uint64_t val);
/* A message matched, kept, or due to be landed (the transport's calls). */
bool fc__rv_msg_ready(const struct fc__msg *m);
void fc__rv_msg_take(struct fc_dev *dev, uint32_t port, struct fc__src *s,
		     struct fc__msg *m, struct fc_req *r);
void fc__rv_land_deferred(struct fc_dev *dev, uint32_t port, struct fc__src *s);
void fc__rv_land_due(struct fc_dev *dev);

#endif /* FC_RNDV_INTERNAL_H */
