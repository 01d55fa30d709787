// SPDX-License-Identifier: MIT
/*
 * The peer window (docs/hardware.md section 9): FC_REGION_PEER offsets
 * translated to host bus addresses by a table in the board's registers,
 * checked by fc_hw_pw_check(). The board works by each entry's SEEN value;
 * it takes a new CTRL between ejection calls, never during one, so a
 * packet checked under the old value has finished when SEEN moves.
 */
#include "emu_internal.h"

void fcemu__pw_init(struct fcemu *emu)
{
	emu_wr(emu, FC_PW_ENTRIES, emu->cluster ? FC_PW_MAX_ENTRIES : 0);
	fcemu__ipc_claim(emu);
}

bool fcemu__pw_is_ctrl(uint32_t off)
{
	uint32_t r = off - FC_PW_REG(0, 0);

	return off >= FC_PW_REG(0, 0) && r < FC_PW_STRIDE * FC_PW_MAX_ENTRIES &&
	       r % FC_PW_STRIDE == FC_PW_CTRL;
}

void fcemu__pw_notice(struct fcemu *emu)
{
	unsigned int i;
	uint32_t ctrl;

	for (i = 0; i < FC_PW_MAX_ENTRIES; i++) {
		ctrl = emu_rd(emu, FC_PW_REG(i, FC_PW_CTRL));
		/* Not while another board copies into it (emu/ipc.c): it
		 * stays for a later notice, and the host's wait runs out. */
		if (ctrl != emu_rd(emu, FC_PW_REG(i, FC_PW_SEEN)) &&
		    fcemu__ipc_drain(emu, i))
			emu_wr(emu, FC_PW_REG(i, FC_PW_SEEN), ctrl);
	}
}

static uint64_t reg64(struct fcemu *emu, unsigned int i, uint32_t lo)
{
	return emu_rd(emu, FC_PW_REG(i, lo)) |
	       (uint64_t)emu_rd(emu, FC_PW_REG(i, lo + 4)) << 32;
}

int fcemu__pw_translate(struct fcemu *emu, uint64_t off, uint64_t len,
			int access, unsigned int src, uint64_t *bus)
{
	unsigned int i =
		(unsigned int)((off >> FC_PW_ENTRY_SHIFT) & FC_PW_ENTRY_MASK);
	uint32_t ctrl, why;
	uint64_t size;

	if (!emu->cluster)
		return FC_DMA_ERR_ROUTE; /* no window on a board on its own */
	ctrl = emu_rd(emu, FC_PW_REG(i, FC_PW_SEEN));
	size = reg64(emu, i, FC_PW_SIZE_LO);
	if (size > FC_PW_MAX_SIZE)
		ctrl &= ~FC_PW_CTRL_VALID; /* a size the contract forbids */
	if (access == FCEMU_PW_ANY)
		ctrl |= FC_PW_CTRL_READ | FC_PW_CTRL_WRITE;
	why = fc_hw_pw_check(ctrl, size, off, len, access == FCEMU_PW_WRITE);
	if (why) {
		emu_inc(emu, FC_PW_REFUSED);
		emu_wr(emu, FC_PW_LAST_REFUSED, FC_PW_REF(i, src, why));
		return FC_DMA_ERR_WINDOW;
	}
	*bus = reg64(emu, i, FC_PW_BASE_LO) + FC_PW_OFF_OF(off);
	return FC_DMA_ERR_NONE;
}
