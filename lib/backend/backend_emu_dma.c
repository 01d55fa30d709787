// SPDX-License-Identifier: MIT
/*
 * The emulated board's DMA engines as the backend drives them: chains
 * queued in descriptor tables per engine, kicked through the registers as
 * the driver kicks a real board's, reaped in order per engine, results
 * (failures) remembered by ticket, and an engine reset that ends what is
 * queued with -ECANCELED.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "backend_emu_internal.h"

static uint64_t loc_bus(struct fc_dev *dev, const struct fc_loc *loc)
{
	if (loc->space == FC_SPACE_HOST) {
		struct fc__mem *m = fc__mem_find(dev, loc->mem);

		return m->handle + m->peer_off + loc->addr;
	}
	return loc->addr;
}

static unsigned int slot_of(uint64_t seq)
{
	return seq % EMU_QUEUE_DEPTH;
}

static struct fc_hw_desc *table_of(struct emu_engine *q, uint64_t seq)
{
	return (struct fc_hw_desc *)((char *)q->tables +
				     slot_of(seq) * EMU_TABLE_BYTES);
}

static uint64_t ticket_of(unsigned int e, uint64_t seq)
{
	return seq * FC_DMA_MAX_ENGINES + e;
}

static void record_fail(struct emu_engine *q, uint64_t seq, int status,
			uint32_t hw_error, uint32_t hw_index)
{
	struct emu_fail *f = &q->fails[q->fail_next++ % EMU_FAIL_LOG];

	/* Evicting a failure: older chains can no longer be answered. */
	if (f->seq > q->forgotten_upto)
		q->forgotten_upto = f->seq;
	f->seq = seq;
	q->newest_fail = seq; /* an engine's chains fail in order */
	f->res.status = status;
	f->res.hw_error = hw_error;
	f->res.hw_index = hw_index;
	f->res.reserved = 0;
}

/* Start engine @e's oldest queued chain if the engine is free. */
static void kick(struct emu_board *b, unsigned int e)
{
	struct emu_engine *q = &b->eng[e];
	uint64_t t = q->done_upto + 1;
	uint64_t bus;

	if (q->running || q->done_upto == q->last_seq)
		return;
	bus = q->tables_bus + (uint64_t)slot_of(t) * EMU_TABLE_BYTES;
	wr(b, FC_DMA_REG(e, FC_DMA_DESC_LO), (uint32_t)bus);
	wr(b, FC_DMA_REG(e, FC_DMA_DESC_HI), (uint32_t)(bus >> 32));
	wr(b, FC_DMA_REG(e, FC_DMA_DESC_COUNT), q->count[slot_of(t)]);
	q->board_reset_seen = rd(b, FC_REG_BOARD_RESET_ACK);
	wr(b, FC_DMA_REG(e, FC_DMA_DOORBELL), (uint32_t)t);
	q->running = true;
	b->running |= 1u << e;
}

/* Retire engine @e's running chain if the board has ended it; start the
 * next. */
static void reap_engine(struct emu_board *b, unsigned int e)
{
	struct emu_engine *q = &b->eng[e];
	uint64_t t = q->done_upto + 1;
	uint32_t err;

	if (!q->running)
		return;
	if (rd(b, FC_DMA_REG(e, FC_DMA_DONE_SEQ)) != (uint32_t)t) {
		/* A board reset (a register write) aborted it: it never ends. */
		if (rd(b, FC_REG_BOARD_RESET_ACK) == q->board_reset_seen)
			return;
		record_fail(q, t, -ECANCELED, FC_DMA_ERR_ABORTED, 0);
	} else if (rd(b, FC_DMA_REG(e, FC_DMA_STATUS)) == FC_DMA_STATUS_ERROR) {
		err = rd(b, FC_DMA_REG(e, FC_DMA_ERROR));
		record_fail(q, t, fc_hw_dma_errno(err), err,
			    rd(b, FC_DMA_REG(e, FC_DMA_ERR_INDEX)));
		/* Recover at once: the next chain must not need a reload. */
		wr(b, FC_DMA_REG(e, FC_DMA_RESET), ++q->reset_seq);
	}
	q->running = false;
	b->running &= ~(1u << e);
	q->done_upto = t;
	kick(b, e);
}

/* Every engine with a chain running (a poll of an idle one costs too). */
void fc__emu_reap(struct emu_board *b)
{
	uint32_t busy;

	for (busy = b->running; busy; busy &= busy - 1)
		reap_engine(b, (unsigned int)__builtin_ctz(busy));
}

int fc__emu_submit(struct fc_dev *dev, unsigned int engine,
		   const struct fc_xfer *xfers, unsigned int n,
		   uint64_t *ticket)
{
	struct emu_board *b = board_of(dev);
	struct emu_engine *q = &b->eng[engine];
	uint64_t t = q->last_seq + 1;
	struct fc_hw_desc *d;
	unsigned int i;

	reap_engine(b, engine);
	if (t - q->done_upto > EMU_QUEUE_DEPTH)
		return -EAGAIN;
	d = table_of(q, t);
	for (i = 0; i < n; i++) {
		const struct fc_xfer *x = &xfers[i];

		d[i].len = htole32((uint32_t)x->len);
		d[i].flags = htole16(
			(i == n - 1 ? FC_DESC_F_EOC : 0) |
			(x->flags & FC_XFER_F_MORE ? FC_DESC_F_MORE : 0) |
			(x->flags & FC_XFER_F_CTRL ? FC_DESC_F_CTRL : 0));
		d[i].src_space = (uint8_t)x->src.space;
		d[i].dst_space = (uint8_t)x->dst.space;
		d[i].src = htole64(loc_bus(dev, &x->src));
		d[i].dst = htole64(loc_bus(dev, &x->dst));
		d[i].tag = htole32(i);
		d[i].reserved = 0;
	}
	q->count[slot_of(t)] = (uint16_t)n;
	q->last_seq = t;
	*ticket = ticket_of(engine, t);
	kick(b, engine);
	return 0;
}

/* RETURN VALUE: 0 and *res, or -ENOENT for a chain too old to tell. */
static int ended_result(struct emu_engine *q, uint64_t seq,
			struct fc_dma_result *res)
{
	unsigned int i;

	memset(res, 0, sizeof(*res));
	/* Most chains end well: no need to search the log for those. */
	if (seq > q->newest_fail)
		return 0;
	for (i = 0; i < EMU_FAIL_LOG; i++) {
		if (q->fails[i].seq == seq) {
			*res = q->fails[i].res;
			return 0;
		}
	}
	return seq <= q->forgotten_upto ? -ENOENT : 0;
}

int fc__emu_poll(struct fc_dev *dev, uint64_t ticket, struct fc_dma_result *res,
		 uint64_t *moved)
{
	struct emu_board *b = board_of(dev);
	unsigned int e = ticket % FC_DMA_MAX_ENGINES;
	uint64_t seq = ticket / FC_DMA_MAX_ENGINES;
	struct emu_engine *q = &b->eng[e];

	if (moved)
		*moved = 0;
	if (e >= b->engines || seq == 0 || seq > q->last_seq)
		return -ENOENT;
	reap_engine(b, e);
	if (seq > q->done_upto && moved) {
		*moved = fcemu_progress(b->emu, EMU_STEP_BYTES);
		fc__emu_reap(b);
	}
	if (seq > q->done_upto)
		return -EINPROGRESS;
	return ended_result(q, seq, res);
}

/* Every engine: its chain aborted, those queued cancelled. */
int fc__emu_reset(struct fc_dev *dev)
{
	struct emu_board *b = board_of(dev);
	struct emu_engine *q;
	unsigned int e;
	uint64_t t;

	fc__emu_reap(b);
	for (e = 0; e < b->engines; e++) {
		q = &b->eng[e];
		wr(b, FC_DMA_REG(e, FC_DMA_RESET), ++q->reset_seq);
		for (t = q->done_upto + 1; t <= q->last_seq; t++)
			record_fail(q, t, -ECANCELED, FC_DMA_ERR_ABORTED, 0);
		q->done_upto = q->last_seq;
		q->running = false;
	}
	b->running = 0;
	return 0;
}
