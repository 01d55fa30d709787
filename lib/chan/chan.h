/* SPDX-License-Identifier: MIT */
/*
 * The channel API's calls (lib/chan/) that other parts of the library
 * use: the barrier, tagged messages and the collectives' links.
 */
#ifndef FC_CHAN_H
#define FC_CHAN_H

#include "transport.h"

/* chan.c: open a channel on any port, the library's own included, to a
 * peer alive or not: what a peer that left sent before may still come
 * (the library's barrier and groups receive from peers done with them). */
int fc__chan_open(struct fc_dev *dev, uint32_t peer, uint32_t port,
		  struct fc_chan **chanp);
int fc__isend(struct fc_chan *ch, const void *buf, size_t len,
	      struct fc_req **reqp);
int fc__irecv(struct fc_chan *ch, void *buf, size_t cap, struct fc_req **reqp);
/* lib/chan/chan.c: fc_req_test() of a handle without progress, for a caller
 * that has just moved the board (fc_progress) and tests many requests. */
int fc__req_peek(struct fc_req *req, size_t *len);
/* put.c */
int fc__put_fence(struct fc_dev *dev, int timeout_ms);

#endif /* FC_CHAN_H */
