/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/chan/tagged*.c: the tagged endpoint's state, and the
 * matching side (tagged_match.c: operations, pieces, the posted and
 * unexpected queues, what arrives) that the calls of tagged.c use.
 * Everything is guarded by the fabric's lock.
 */
#ifndef FC_TAGGED_INTERNAL_H
#define FC_TAGGED_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "devmem.h"
#include "chan.h"

#define HDR_MAGIC     0xa7
#define HDR_SPLIT     (1u << 0)		/* the payload follows in pieces */
#define HDR_DATA      (1u << 1)		/* @data is the sender's */
#define HDR_SPACE1    (1u << 2)		/* of the second matching space */
#define EAGER_BUF     (16u << 10)	/* a header and a small payload */
#define OP_CACHE      64		/* ended operations kept for the next */
#define DEAD_CHECK_NS (20ull * 1000000) /* look for dead peers this often */

struct hdr {
	uint64_t tag;
	uint64_t data;
	uint32_t len;
	uint16_t port; /* the sender's endpoint */
	uint8_t flags; /* HDR_* */
	uint8_t magic;
	uint32_t piece; /* HDR_SPLIT: bytes per piece but the last */
	uint32_t rsvd;
};

#define EAGER_MAX (EAGER_BUF - sizeof(struct hdr))

/* Channel requests of one message's pieces. */
struct pieces {
	struct fc_req **reqs;
	struct fc_req *one; /* reqs when there is one piece */
	unsigned int n, left;
	uint32_t node;
	int status;
};

struct op {
	struct op *next;
	bool send, inject;
	bool discard;  /* receive: of a claimed message, no buffer */
	bool space1;   /* receive: FC_TAG_F_SPACE1 */
	uint32_t node; /* receive: wanted, or FC_TAG_ANY_NODE */
	uint32_t port; /* receive: the sender's wanted, or FC_TAG_ANY_PORT */
	uint64_t tag, ignore;
	uint8_t *buf;
	size_t cap;
	uint8_t *tmp; /* receive: landing of a cut-off message */
	struct pieces pc;
	struct fc_tag_cqe cqe;
	/* device memory, staged through a host buffer (devmem.h) */
	struct fc__bounce *bounce;
	void *dbuf; /* receive: the device buffer it goes to at its end */
};

/* A message nobody asked for yet. */
struct fc_tag_msg {
	struct fc_tag_msg *next;  /* unexpected queue */
	struct fc_tag_msg *anext; /* arriving: pieces outstanding */
	uint32_t node;
	struct hdr h;
	uint8_t *data; /* the whole payload, ours */
	struct pieces pc;
	bool arriving;
	bool queued;	   /* on the unexpected queue */
	struct op *waiter; /* matched, waits for its pieces */
};

struct fc_tag_ep {
	struct fc_dev *dev;
	struct fc__fabric *fab;
	uint32_t port, size;
	struct fc_chan *ch[FC_MAX_NODES];   /* on our port */
	struct fc_req *eager[FC_MAX_NODES]; /* posted on them */
	uint8_t *ebuf;			    /* size * EAGER_BUF */
	struct fc_chan **xch;		    /* other ports', ours */
	struct op *posted_h, *posted_t;
	struct fc_tag_msg *unexp_h, *unexp_t;
	struct op *active; /* pieces outstanding */
	struct fc_tag_msg *arriving;
	struct fc_tag_msg *claimed; /* by fc_tag_probe(), linked by next */
	struct op *done_h, *done_t;
	struct op *cache;
	unsigned int cached;
	uint64_t dead_check_ns;
	uint8_t sbuf[EAGER_BUF];
};

/* ---- tagged_match.c ---- */

/* Operations: from the endpoint's cache; done ones go on its done queue. */
struct op *fc__tag_op_new(struct fc_tag_ep *ep);
void fc__tag_op_free(struct fc_tag_ep *ep, struct op *o);
void fc__tag_op_done(struct fc_tag_ep *ep, struct op *o, int status);
/* Cancel what is left of a message's pieces. */
void fc__tag_pieces_drop(struct pieces *pc);
/* The oldest unexpected message that matches (@take: off the queue). */
struct fc_tag_msg *fc__tag_unexp_find(struct fc_tag_ep *ep, uint32_t node,
				      uint32_t port, uint64_t tag,
				      uint64_t ignore, bool space1, bool take);
void fc__tag_msg_free(struct fc_tag_msg *m);
/* An unexpected message into receive @o (at once, or as pieces land). */
void fc__tag_msg_deliver(struct fc_tag_ep *ep, struct fc_tag_msg *m,
			 struct op *o);
/* Post the endpoint's header receive on @node's channel again. */
int fc__tag_eager_post(struct fc_tag_ep *ep, uint32_t node);
/* Take what the channels delivered; progress: the board, then both. */
bool fc__tag_take_headers(struct fc_tag_ep *ep);
void fc__tag_take_pieces(struct fc_tag_ep *ep);
void fc__tag_progress(struct fc_tag_ep *ep);

#endif /* FC_TAGGED_INTERNAL_H */
