/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/fabric/: the transport's own sizes and the calls between
 * its files (fabric.c, fabric_rx.c, peer_check.c, handlers.c) that no
 * layer above makes.
 */
#ifndef FC_TRANSPORT_INTERNAL_H
#define FC_TRANSPORT_INTERNAL_H

#include "transport.h"

#define RING_SLOTS	   256	       /* packets per port's receive ring */
#define STAGE_SLOTS	   32	       /* staging buffers for small sends */
#define STAGE_SLOT_LEN	   (64u << 10) /* larger sends get a buffer of their own */
#define PEER_GRACE_NS	   (100ull * 1000000)  /* drain after seeing it dead */
#define PEER_EXIT_GRACE_NS (1000ull * 1000000) /* ... or closed in order */
#define PEER_GRACE_POLLS   64  /* ... and look this often at least */
#define PEER_OPEN_ROUNDS   256 /* progress at most, opening to a dead one */
#define LINGER_QUIET_NS	   (1000ull * 1000000)	/* fc_close: none ended */
#define LINGER_MAX_NS	   (10000ull * 1000000) /* ... nor longer in all */
#define REQ_CACHE	   32 /* ended requests kept for the next */
#define REQ_PREFILL	   4  /* ... and made at open */

/* fabric_rx.c: where packets arrive (fabric_msg.c: what they make) */
int fc__rx_init(struct fc_dev *dev);
void fc__rx_fini(struct fc_dev *dev);
/* Take what arrived. RETURN VALUE: true if anything did. */
bool fc__rx_drain(struct fc_dev *dev);

/* peer_check.c: fc__peer_down() at time @now; fc__peer_check() asking
 * the backend now, whatever it said lately. */
bool fc__peer_down_at(struct fc_dev *dev, uint32_t node, uint64_t now);
int fc__peer_check_fresh(struct fc_dev *dev, uint32_t node);

/* handlers.c: a control message from @node on @port arrived: to its
 * handler. */
void fc__ctrl_take(struct fc_dev *dev, uint32_t port, uint32_t node,
		   const uint8_t *msg, size_t len);

#endif /* FC_TRANSPORT_INTERNAL_H */
