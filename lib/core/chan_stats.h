/* SPDX-License-Identifier: MIT */
/*
 * What the channels did with callers' buffers, per device: counted by
 * lib/chan/chan.c, lib/fabric/fabric.c, lib/fabric/fabric_rx.c,
 * lib/proto/eager.c, lib/proto/rndv.c and lib/core/mem.c for tests
 * and benchmarks
 * (tests/test_coll_mem.c tells by them that a collective on fc_mem
 * buffers copied and registered nothing), never used for decisions.
 */
#ifndef FC_CHAN_STATS_H
#define FC_CHAN_STATS_H

#include <stdint.h>

struct fc_dev;

struct fc__chan_stats {
	/* eager sends of a caller that keeps its buffer (the collectives)
	 * copied into staging memory all the same: not registered */
	uint64_t kept_copies;
	/* callers' buffers registered for one rendezvous message */
	uint64_t rndv_regs;
	/* messages moved straight from or into a caller's registration */
	uint64_t direct;
	/* rendezvous messages the receiver read itself (RTS_GET) */
	uint64_t rgets;
	/* messages of more than one packet a blocking receive copied
	 * straight from the event queue into its buffer (no request) */
	uint64_t straight;
	/* rendezvous announcements (RTS) that went through the PIO window,
	 * no chain (also while writes to their node were out) */
	uint64_t rts_pio;
	/* blocking sends of one packet written by the shortest way
	 * (proto/eager.c, fc__eager_send_one) */
	uint64_t one_packet;
};

/* A snapshot of @dev's counters into *@out. */
void fc__chan_stats_get(struct fc_dev *dev, struct fc__chan_stats *out);

#endif /* FC_CHAN_STATS_H */
