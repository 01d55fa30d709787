// SPDX-License-Identifier: MIT
/*
 * Copies into and out of peer memory that the CPU cannot load or store (a
 * GPU's): the host moves the bytes through its peer_move op, so the board
 * model needs no GPU API. Peer to peer goes through a bounce buffer.
 */
#include <stdlib.h>

#include "emu_internal.h"

static int move(struct fcemu *emu, uint64_t bus, void *cpu, uint64_t len,
		bool to_peer)
{
	return emu->ops->peer_move(emu->ctx, bus, cpu, len, to_peer) ?
		       FC_DMA_ERR_ADDR :
		       FC_DMA_ERR_NONE;
}

/* A staging block: a descriptor's peer source, read at once. */
struct fcemu_stage {
	struct fcemu_stage *next;
	uint8_t data[];
};

const uint8_t *fcemu__peer_stage(struct fcemu *emu, struct fcemu_dma *dma,
				 uint64_t bus, uint64_t len)
{
	struct fcemu_stage *st = malloc(sizeof(*st) + len);

	if (!st)
		return NULL;
	if (move(emu, bus, st->data, len, false)) {
		free(st);
		return NULL;
	}
	st->next = dma->stages;
	dma->stages = st;
	return st->data;
}

void fcemu__peer_unstage(struct fcemu_dma *dma)
{
	struct fcemu_stage *st;

	while ((st = dma->stages)) {
		dma->stages = st->next;
		free(st);
	}
	dma->stage_desc = 0;
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
