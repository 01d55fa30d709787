// SPDX-License-Identifier: MIT
/*
 * Address spaces as the board sees them: host bus addresses go through the
 * host's translation (an IOMMU in effect), board addresses index board
 * memory, and fabric addresses that name this node resolve to one of those.
 * On a cluster board, a destination on another node or a channel goes out
 * as packets instead (emu/fabric_io.c); what arrives (a PUT, a burst) is
 * written where fcemu__put_target() says. This file calls nothing above it.
 */
#include <stddef.h>

#include "emu_internal.h"

static int check_board(const struct fcemu *emu, uint64_t addr, uint64_t len)
{
	if (!fc_hw_board_span_ok(addr, len, emu->mem_size))
		return FC_DMA_ERR_ADDR;
	return FC_DMA_ERR_NONE;
}

/*
 * Turn a fabric address of this node into (space, addr); else an error.
 * The peer region goes through the window, without its permissions: the
 * chain check asks for those (fcemu__pw_local_perm()).
 */
static int fabric_local(struct fcemu *emu, uint64_t fabric, uint64_t len,
			unsigned int *space, uint64_t *addr)
{
	if (fabric & FC_FABRIC_RSVD_MASK)
		return FC_DMA_ERR_ADDR;
	if (FC_FABRIC_NODE(fabric) != emu->cfg.node_id)
		return FC_DMA_ERR_ROUTE; /* not memory this board reaches */
	switch (FC_FABRIC_REGION(fabric)) {
	case FC_REGION_HOST:
		*space = FC_SPACE_HOST;
		break;
	case FC_REGION_BOARD:
		*space = FC_SPACE_BOARD;
		break;
	case FC_REGION_PEER:
		*space = FC_SPACE_HOST;
		return fcemu__pw_translate(emu, FC_FABRIC_OFFSET(fabric), len,
					   FCEMU_PW_ANY, emu->cfg.node_id,
					   addr);
	default:
		return FC_DMA_ERR_ROUTE;
	}
	*addr = FC_FABRIC_OFFSET(fabric);
	return FC_DMA_ERR_NONE;
}

int fcemu__pw_local_perm(struct fcemu *emu, unsigned int space, uint64_t addr,
			 uint64_t len, int access)
{
	uint64_t bus;

	if (space != FC_SPACE_FABRIC ||
	    FC_FABRIC_NODE(addr) != emu->cfg.node_id ||
	    FC_FABRIC_REGION(addr) != FC_REGION_PEER)
		return FC_DMA_ERR_NONE;
	return fcemu__pw_translate(emu, FC_FABRIC_OFFSET(addr), len, access,
				   emu->cfg.node_id, &bus);
}

/* RETURN VALUE: FC_DMA_ERR_NONE when [addr, addr+len) is reachable. */
int fcemu__check_range(struct fcemu *emu, unsigned int space, uint64_t addr,
		       uint64_t len)
{
	int err;

	switch (space) {
	case FC_SPACE_HOST:
		if (addr + len < addr)
			return FC_DMA_ERR_ADDR;
		if (!emu->ops->translate(emu->ctx, addr, len) &&
		    !fcemu__peer_span(emu, addr, len))
			return FC_DMA_ERR_ADDR;
		return FC_DMA_ERR_NONE;
	case FC_SPACE_BOARD:
		return check_board(emu, addr, len);
	case FC_SPACE_FABRIC:
		err = fabric_local(emu, addr, len, &space, &addr);
		if (err)
			return err;
		return fcemu__check_range(emu, space, addr, len);
	default:
		return FC_DMA_ERR_SPACE;
	}
}

/* A pointer to a range already checked, or NULL if it vanished since. */
void *fcemu__resolve(struct fcemu *emu, unsigned int space, uint64_t addr,
		     uint64_t len)
{
	switch (space) {
	case FC_SPACE_HOST:
		return emu->ops->translate(emu->ctx, addr, len);
	case FC_SPACE_BOARD:
		if (check_board(emu, addr, len))
			return NULL;
		return emu->mem + addr;
	case FC_SPACE_FABRIC:
		if (fabric_local(emu, addr, len, &space, &addr))
			return NULL;
		return fcemu__resolve(emu, space, addr, len);
	default:
		return NULL;
	}
}

int fcemu__put_locate(struct fcemu *emu, uint64_t addr, uint64_t len,
		      int access, unsigned int src, struct fcemu_span *span)
{
	unsigned int space = FC_SPACE_HOST;
	uint64_t at = FC_FABRIC_OFFSET(addr);
	int err;

	if ((addr & ~FCEMU_PUT_ADDR_MASK) || !len)
		return FC_DMA_ERR_ADDR;
	switch (FC_FABRIC_REGION(addr)) {
	case FC_REGION_HOST:
		break;
	case FC_REGION_BOARD:
		space = FC_SPACE_BOARD;
		break;
	case FC_REGION_PEER:
		err = fcemu__pw_translate(emu, at, len, access, src, &at);
		if (err)
			return err;
		break;
	default:
		return FC_DMA_ERR_ADDR;
	}
	return fcemu__locate(emu, space, at, len, span) ? FC_DMA_ERR_NONE :
							  FC_DMA_ERR_ADDR;
}

/* Does [bus, bus+len) lie in a peer window that the CPU cannot reach? */
bool fcemu__peer_span(struct fcemu *emu, uint64_t bus, uint64_t len)
{
	return emu->ops->peer_span && emu->ops->peer_move &&
	       emu->ops->peer_span(emu->ctx, bus, len);
}

/*
 * Where a range already checked lies: CPU memory (span->ptr), or a peer
 * window at host bus address span->bus (span->ptr NULL).
 * RETURN VALUE: false if it vanished since the check.
 */
bool fcemu__locate(struct fcemu *emu, unsigned int space, uint64_t addr,
		   uint64_t len, struct fcemu_span *span)
{
	span->ptr = fcemu__resolve(emu, space, addr, len);
	span->bus = 0;
	if (span->ptr)
		return true;
	if (space == FC_SPACE_FABRIC &&
	    fabric_local(emu, addr, len, &space, &addr))
		return false;
	if (space != FC_SPACE_HOST || !fcemu__peer_span(emu, addr, len))
		return false;
	span->bus = addr;
	return true;
}
