// SPDX-License-Identifier: MIT
/*
 * The board's event queue (FC_EQ_*, docs/hardware.md section 12): one
 * queue in host memory for the packets of every channel endpoint switched
 * to it, each entry the packet with its phase, so that a host polls one
 * place. Ejection (fabric_eject.c) writes entries in batches.
 */
#include <endian.h>
#include <string.h>

#include "emu_internal.h"

static bool slots_ok(uint32_t slots)
{
	return slots >= FC_EQ_MIN_SLOTS && slots <= FC_EQ_MAX_SLOTS &&
	       !(slots & (slots - 1));
}

/* Act on a new CTRL: ENABLE set starts the queue at entry 0. */
void fcemu__eq_notice(struct fcemu *emu)
{
	struct fcemu_eq *eq = &emu->eq;
	uint32_t ctrl = emu_rd(emu, FC_EQ_CTRL);

	if (ctrl == eq->ctrl)
		return;
	if ((ctrl & FC_EQ_CTRL_ENABLE) && !(eq->ctrl & FC_EQ_CTRL_ENABLE)) {
		eq->slots = emu_rd(emu, FC_EQ_SLOTS);
		eq->base = emu_rd(emu, FC_EQ_BASE_LO) |
			   (uint64_t)emu_rd(emu, FC_EQ_BASE_HI) << 32;
		eq->tail = 0;
		emu_wr(emu, FC_EQ_TAIL, 0);
	}
	eq->ctrl = ctrl;
	emu_wr(emu, FC_EQ_SEEN, ctrl);
}

/* RETURN VALUE: 0, or -1 when the queue is off or unusable. */
static int batch_open(struct fcemu *emu, struct fcemu_eq_batch *b)
{
	struct fcemu_eq *eq = &emu->eq;

	fcemu__eq_notice(emu);
	b->state = -1;
	if (!(eq->ctrl & FC_EQ_CTRL_ENABLE) || !slots_ok(eq->slots))
		return -1;
	if (!eq->q || eq->q_base != eq->base || eq->q_slots != eq->slots) {
		eq->q = emu->ops->translate(emu->ctx, eq->base,
					    (uint64_t)eq->slots *
						    FC_EQ_ENTRY_SIZE);
		if (!eq->q)
			return -1;
		eq->q_base = eq->base;
		eq->q_slots = eq->slots;
	}
	b->q = eq->q;
	b->start = b->tail = eq->tail;
	b->head = emu_rd(emu, FC_EQ_HEAD);
	b->state = 1;
	return 0;
}

int fcemu__eq_put_slow(struct fcemu *emu, struct fcemu_eq_batch *b,
		       const struct fc_hw_pkt *pkt)
{
	uint32_t slots;

	if (!b->state && batch_open(emu, b))
		return -1;
	if (b->state < 0)
		return -1;
	slots = emu->eq.slots; /* as the opening found it */
	if (b->tail - b->head >= slots) {
		/* Full as last seen: the host may have read some since. */
		b->head = emu_rd(emu, FC_EQ_HEAD);
		if (b->tail - b->head >= slots) {
			if (!b->stalled)
				emu_inc(emu, FC_EQ_STALLS);
			b->stalled = true;
			return 0;
		}
	}
	fcemu__eq_write(b->q, b->tail++, slots, pkt);
	return 1;
}

void fcemu__eq_batch_end(struct fcemu *emu, struct fcemu_eq_batch *b)
{
	uint32_t at;

	if (b->state <= 0 || b->tail == b->start)
		return;
	emu->eq.tail = b->tail;
	emu_wr(emu, FC_EQ_TAIL, b->tail);
	at = emu_rd(emu, FC_EQ_IRQ_AT);
	if (at - b->start < b->tail - b->start)
		fcemu__raise_irq(emu, FC_IRQ_VEC_CHAN);
}

void fcemu_iotlb_flush(struct fcemu *emu)
{
	emu->eq.q = NULL;
}
