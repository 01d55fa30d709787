// SPDX-License-Identifier: MIT
/*
 * Copies into and out of peer memory that the CPU cannot load or store (a
 * GPU's): the host moves the bytes through its peer_move op, so the board
 * model needs no GPU API. Peer to peer goes through a bounce buffer.
 */
#include <stdlib.h>

#include "emu_internal.h"

#define FCEMU_BOUNCE (4u << 20)

static int move(struct fcemu *emu, uint64_t bus, void *cpu, uint64_t len,
		bool to_peer)
{
	return emu->ops->peer_move(emu->ctx, bus, cpu, len, to_peer) ?
		       FC_DMA_ERR_ADDR :
		       FC_DMA_ERR_NONE;
}

int fcemu__peer_copy(struct fcemu *emu, const struct fcemu_span *to,
		     const struct fcemu_span *from, uint64_t len)
{
	uint64_t done, n, at;
	bool back;
	int err;

	if (to->ptr)
		return move(emu, from->bus, to->ptr, len, false);
	if (from->ptr)
		return move(emu, to->bus, from->ptr, len, true);
	if (!emu->bounce) {
		emu->bounce = malloc(FCEMU_BOUNCE);
		if (!emu->bounce)
			return FC_DMA_ERR_ADDR; /* seen by the host as a fault */
	}
	/* Memmove order: backwards when the destination lies above. */
	back = to->bus > from->bus;
	for (done = 0; done < len; done += n) {
		n = len - done < FCEMU_BOUNCE ? len - done : FCEMU_BOUNCE;
		at = back ? len - done - n : done;
		err = move(emu, from->bus + at, emu->bounce, n, false);
		if (!err)
			err = move(emu, to->bus + at, emu->bounce, n, true);
		if (err)
			return err;
	}
	return FC_DMA_ERR_NONE;
}
