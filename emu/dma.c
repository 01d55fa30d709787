// SPDX-License-Identifier: MIT
/*
 * The chaining-DMA engine: latches a doorbell, fetches the descriptor table
 * once, checks every descriptor before any data moves, then moves the data
 * in budget-sized steps when the host calls fcemu_progress().
 */
#include <endian.h>
#include <string.h>

#include "emu_internal.h"

static void dma_wr(struct fcemu *emu, struct fcemu_dma *dma, uint32_t reg,
		   uint32_t val)
{
	emu_wr(emu, FC_DMA_REG(dma->index, reg), val);
}

static uint32_t dma_rd(struct fcemu *emu, struct fcemu_dma *dma, uint32_t reg)
{
	return emu_rd(emu, FC_DMA_REG(dma->index, reg));
}

static void dma_irq(struct fcemu *emu, struct fcemu_dma *dma, uint32_t cause)
{
	if (dma_rd(emu, dma, FC_DMA_IRQ_ENABLE) & cause)
		fcemu__raise_irq(emu, FC_IRQ_VEC_DMA);
}

void fcemu__dma_init(struct fcemu *emu, struct fcemu_dma *dma,
		     unsigned int index)
{
	memset(dma, 0, sizeof(*dma));
	dma->index = index;
	dma->seen_doorbell = dma_rd(emu, dma, FC_DMA_DOORBELL);
	dma->seen_reset = dma_rd(emu, dma, FC_DMA_RESET);
	dma_wr(emu, dma, FC_DMA_STATUS, FC_DMA_STATUS_IDLE);
}

/* An engine takes or leaves a chain; the board counts the busy ones. */
static void set_busy(struct fcemu *emu, struct fcemu_dma *dma, bool busy)
{
	if (busy && !dma->busy)
		emu->engines_busy++;
	else if (!busy && dma->busy)
		emu->engines_busy--;
	dma->busy = busy;
}

/* ---- Virtual time of a chain (docs/model.md), when a profile is on ---- */

/* The doorbell (a posted write) and one read of the whole table. */
static void vt_chain_start(struct fcemu *emu, struct fcemu_dma *dma)
{
	const struct fcm_profile *p = &emu->vt.prof;

	fcemu__host_acts(emu);
	dma->vt = emu->vt.now +
		  fcemu__vt_ps(fcm_pcie_write_ns(p, 4) +
			       fcm_pcie_read_ns(p, (uint64_t)(dma->count *
							      p->desc_bytes)));
	dma->vt_read = false;
	dma->vt_wrote = false;
}

/* Host memory read by the chain: the first read waits a round trip, the
 * rest stream behind it. */
static void vt_host_read(struct fcemu *emu, struct fcemu_dma *dma)
{
	if (!dma->vt_read)
		dma->vt += fcemu__vt_ps(2 * emu->vt.prof.pcie_ns);
	dma->vt_read = true;
}

/* A descriptor between memories, whole: its bytes over PCIe (reads and
 * writes are full duplex, so one that does both costs them once). */
static void vt_desc(struct fcemu *emu, struct fcemu_dma *dma,
		    const struct fc_hw_desc *d)
{
	bool rd = d->src_space == FC_SPACE_HOST;
	bool wr = d->dst_space == FC_SPACE_HOST;

	if (rd)
		vt_host_read(emu, dma);
	if (rd || wr)
		dma->vt += fcemu__vt_ps(
			fcm_pcie_bytes_ns(&emu->vt.prof, le32toh(d->len)));
	dma->vt_wrote |= wr;
}

/* A descriptor that goes out as packets: they leave once their bytes are
 * read and through the engine's port into the fabric. */
static void vt_send_start(struct fcemu *emu, struct fcemu_dma *dma,
			  const struct fc_hw_desc *d)
{
	if (d->src_space == FC_SPACE_HOST)
		vt_host_read(emu, dma);
	fcemu__vt_begin(&emu->vt,
			dma->vt + fcemu__vt_ps(emu->vt.prof.endpoint_ns / 2));
}

/* The chain ended: the last write lands, then the interrupt (an MSI);
 * fences end once their acks came (they moved the board's clock). */
static void vt_chain_end(struct fcemu *emu, struct fcemu_dma *dma)
{
	const struct fcm_profile *p = &emu->vt.prof;
	uint64_t end = dma->vt;

	if (dma->vt_wrote)
		end += fcemu__vt_ps(p->pcie_ns);
	if (dma->fence_need && emu->vt.now > end)
		end = emu->vt.now;
	fcemu__vt_reach(&emu->vt, end + fcemu__vt_ps(fcm_pcie_write_ns(p, 4)));
}

/* End the running chain: successfully if @err is FC_DMA_ERR_NONE. */
static void dma_end(struct fcemu *emu, struct fcemu_dma *dma, uint32_t err,
		    uint32_t index)
{
	if (emu->vt.on && dma->busy)
		vt_chain_end(emu, dma);
	if (emu->vt.order && emu->cluster)
		fcemu__vt_event(emu->cluster, emu->cfg.node_id);
	set_busy(emu, dma, false);
	if (err) {
		fcemu__fabric_abort(emu, dma);
		dma_wr(emu, dma, FC_DMA_ERROR, err);
		dma_wr(emu, dma, FC_DMA_ERR_INDEX, index);
		dma_wr(emu, dma, FC_DMA_STATUS, FC_DMA_STATUS_ERROR);
	} else {
		emu_inc(emu, FC_DMA_REG(dma->index, FC_DMA_CHAINS_DONE));
		dma_wr(emu, dma, FC_DMA_STATUS, FC_DMA_STATUS_IDLE);
	}
	/* DONE_SEQ last: the host polls it and then reads STATUS. */
	dma_wr(emu, dma, FC_DMA_DONE_SEQ, dma->seq);
	dma_irq(emu, dma, err ? FC_DMA_IRQ_ERROR : FC_DMA_IRQ_CHAIN);
}

void fcemu__dma_reset(struct fcemu *emu, struct fcemu_dma *dma)
{
	fcemu__fabric_abort(emu, dma);
	set_busy(emu, dma, false);
	dma->seen_doorbell = dma_rd(emu, dma, FC_DMA_DOORBELL);
	dma_wr(emu, dma, FC_DMA_ERROR, FC_DMA_ERR_NONE);
	dma_wr(emu, dma, FC_DMA_ERR_INDEX, 0);
	dma_wr(emu, dma, FC_DMA_STATUS, FC_DMA_STATUS_IDLE);
}

static int check_local_dst(struct fcemu *emu, const struct fc_hw_desc *d,
			   uint32_t len)
{
	int err = fcemu__check_range(emu, d->dst_space, le64toh(d->dst), len);

	if (err)
		return err;
	return fcemu__pw_local_perm(emu, d->dst_space, le64toh(d->dst), len,
				    FCEMU_PW_WRITE);
}

/* A read request: the source on another node, the destination ours. */
static int check_get(struct fcemu *emu, const struct fc_hw_desc *d,
		     uint32_t len)
{
	int err;

	if (fcemu__fabric_packets(emu, d->dst_space, le64toh(d->dst)))
		return FC_DMA_ERR_ROUTE; /* both ends elsewhere */
	err = check_local_dst(emu, d, len);
	if (err)
		return err;
	return fcemu__get_check(emu, le64toh(d->src), len);
}

static int check_desc(struct fcemu *emu, const struct fc_hw_desc *d, bool last)
{
	uint32_t len = le32toh(d->len);
	uint16_t flags = le16toh(d->flags);
	int err;

	if (d->reserved)
		return FC_DMA_ERR_RSVD;
	if (flags & ~FC_DESC_F_KNOWN)
		return FC_DMA_ERR_FLAGS;
	if (!!(flags & FC_DESC_F_EOC) != last)
		return FC_DMA_ERR_FLAGS;
	if (len == 0 || len > FC_DESC_MAX_LEN)
		return FC_DMA_ERR_LEN;
	if (d->src_space > FC_SPACE_MAX || d->dst_space > FC_SPACE_MAX)
		return FC_DMA_ERR_SPACE;
	if (fcemu__get_desc(emu, d->src_space, le64toh(d->src)))
		return check_get(emu, d, len);
	err = fcemu__check_range(emu, d->src_space, le64toh(d->src), len);
	if (!err)
		err = fcemu__pw_local_perm(emu, d->src_space, le64toh(d->src),
					   len, FCEMU_PW_READ);
	if (err)
		return err;
	if (!fcemu__fabric_packets(emu, d->dst_space, le64toh(d->dst)))
		return check_local_dst(emu, d, len);
	return fcemu__fabric_check(emu, le64toh(d->dst), len);
}

/* F_MORE and F_CTRL of @d, whose destination check_desc() found good. */
static int check_chain_rule(const struct fc_hw_desc *d,
			    const struct fc_hw_desc *next)
{
	struct fc_hw_chain_step s = fc_hw_desc_step(d), n;

	if (next)
		n = fc_hw_desc_step(next);
	return fc_hw_chain_check(&s, next ? &n : NULL);
}

/* Fetch and check the chain named by DESC_*; FC_DMA_ERR_NONE if it is good. */
static int fetch_chain(struct fcemu *emu, struct fcemu_dma *dma,
		       uint32_t *bad_index)
{
	uint64_t base = dma_rd(emu, dma, FC_DMA_DESC_LO) |
			(uint64_t)dma_rd(emu, dma, FC_DMA_DESC_HI) << 32;
	uint32_t count = dma_rd(emu, dma, FC_DMA_DESC_COUNT);
	uint32_t forced = emu_rd(emu, FC_EMU_FAULT_DMA_ERROR);
	const void *table;
	uint32_t i;
	int err;

	*bad_index = 0;
	if (forced)
		return forced;
	if (count == 0 || count > FC_DMA_MAX_CHAIN)
		return FC_DMA_ERR_COUNT;
	if (base % FC_DESC_ALIGN)
		return FC_DMA_ERR_ALIGN;
	table = emu->ops->translate(emu->ctx, base,
				    (uint64_t)count * FC_DESC_SIZE);
	if (!table)
		return FC_DMA_ERR_FETCH;
	/* One fetch of the whole table, as the hardware does. */
	memcpy(dma->chain, table, (size_t)count * FC_DESC_SIZE);
	for (i = 0; i < count; i++) {
		err = check_desc(emu, &dma->chain[i], i == count - 1);
		if (!err)
			err = check_chain_rule(
				&dma->chain[i],
				i + 1 < count ? &dma->chain[i + 1] : NULL);
		if (err) {
			*bad_index = i;
			return err;
		}
	}
	dma->count = count;
	return FC_DMA_ERR_NONE;
}

/* Act on a new RESET or DOORBELL value written by the host. */
void fcemu__dma_notice(struct fcemu *emu, struct fcemu_dma *dma)
{
	uint32_t reset = dma_rd(emu, dma, FC_DMA_RESET);
	uint32_t doorbell;
	uint32_t bad;
	int err;

	/* The deaf knob models a wedged board: the reset is never seen. */
	if (reset != dma->seen_reset) {
		if (emu_rd(emu, FC_EMU_FAULT_RESET_DEAF)) {
			emu->dma_recheck = true; /* seen once it hears */
		} else {
			dma->seen_reset = reset;
			fcemu__dma_reset(emu, dma);
			dma_wr(emu, dma, FC_DMA_RESET_ACK, reset);
		}
	}
	doorbell = dma_rd(emu, dma, FC_DMA_DOORBELL);
	if (doorbell == dma->seen_doorbell)
		return;
	if (dma->busy) {
		emu->dma_recheck = true; /* taken once the chain ends */
		return;
	}
	/* In ERROR a doorbell waits for the reset, which takes it as seen. */
	if (dma_rd(emu, dma, FC_DMA_STATUS) == FC_DMA_STATUS_ERROR)
		return;

	dma->seen_doorbell = doorbell;
	dma->seq = doorbell;
	emu_inc(emu, FC_DMA_REG(dma->index, FC_DMA_DOORBELLS));
	err = fetch_chain(emu, dma, &bad);
	if (err) {
		dma_end(emu, dma, err, bad);
		return;
	}
	set_busy(emu, dma, true);
	dma->cur = 0;
	dma->cur_off = 0;
	if (emu->vt.on)
		vt_chain_start(emu, dma);
	fcemu__fabric_chain_start(emu, dma);
	dma_wr(emu, dma, FC_DMA_STATUS, FC_DMA_STATUS_BUSY);
}

/* One 64-bit store, so a reader on the other side never sees a torn carry. */
static void add_bytes(struct fcemu *emu, struct fcemu_dma *dma, uint64_t n)
{
	volatile uint64_t *bytes =
		(volatile uint64_t *)&emu
			->bar0[FC_DMA_REG(dma->index, FC_DMA_BYTES_LO) / 4];

	__atomic_store_n(bytes, __atomic_load_n(bytes, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELEASE);
}

/* A descriptor that goes out as packets. RETURN VALUE: bytes taken;
 * *stop when the engine must wait (no room) or the chain ended. */
static uint64_t fabric_step(struct fcemu *emu, struct fcemu_dma *dma,
			    uint64_t budget, bool *stop)
{
	uint64_t len = le32toh(dma->chain[dma->cur].len);
	uint64_t step;
	bool blocked;
	int err;

	step = fcemu__fabric_send(emu, dma, budget, &blocked, &err);
	add_bytes(emu, dma, step);
	if (err) {
		/* The host unmapped the source under a running chain. */
		dma_end(emu, dma, err, dma->cur);
		*stop = true;
	} else if (blocked || dma->cur_off < len) {
		*stop = true; /* resumes on the next progress call */
	}
	return step;
}

/* After the last descriptor: remote writes must land before the end. */
static void fence_step(struct fcemu *emu, struct fcemu_dma *dma)
{
	int r = fcemu__fabric_fence(emu, dma);

	if (r < 0)
		dma_end(emu, dma, -r, dma->count - 1);
	else if (r > 0)
		dma_end(emu, dma, FC_DMA_ERR_NONE, 0);
}

uint64_t fcemu__dma_progress(struct fcemu *emu, struct fcemu_dma *dma,
			     uint64_t budget)
{
	uint64_t moved = 0;
	bool stop = false;

	while (dma->busy && moved < budget) {
		const struct fc_hw_desc *d;
		uint64_t len, step, src, dst;
		struct fcemu_span from, to;
		int err;

		if (dma->cur == dma->count) {
			fence_step(emu, dma);
			break;
		}
		d = &dma->chain[dma->cur];
		len = le32toh(d->len);
		step = len - dma->cur_off;
		src = le64toh(d->src) + dma->cur_off;
		dst = le64toh(d->dst) + dma->cur_off;
		if (fcemu__get_desc(emu, d->src_space, le64toh(d->src))) {
			/* the request leaves once the chain is fetched */
			if (emu->vt.on)
				fcemu__vt_begin(
					&emu->vt,
					dma->vt + fcemu__vt_ps(
							  emu->vt.prof
								  .endpoint_ns /
							  2));
			if (!fcemu__get_send(emu, dma))
				break; /* no room: on the next call */
			add_bytes(emu, dma, len); /* the contract: its length */
			goto desc_done;
		}
		if (fcemu__fabric_packets(emu, d->dst_space, le64toh(d->dst))) {
			if (emu->vt.on && !dma->cur_off)
				vt_send_start(emu, dma, d);
			moved += fabric_step(emu, dma, budget - moved, &stop);
			if (emu->vt.on && emu->vt.last > dma->vt)
				dma->vt = emu->vt.last;
			if (stop)
				break;
			goto desc_done;
		}
		if (step > budget - moved)
			step = budget - moved;
		if (!fcemu__locate(emu, d->src_space, src, step, &from) ||
		    !fcemu__locate(emu, d->dst_space, dst, step, &to)) {
			/* The host unmapped a buffer under a running chain. */
			dma_end(emu, dma, FC_DMA_ERR_ADDR, dma->cur);
			break;
		}
		if (from.ptr && to.ptr) {
			fcemu__copy(to.ptr, from.ptr, step);
		} else {
			err = fcemu__peer_copy(emu, &to, &from, step);
			if (err) {
				dma_end(emu, dma, err, dma->cur);
				break;
			}
		}
		add_bytes(emu, dma, step); /* counters before DONE_SEQ */
		moved += step;
		dma->cur_off += step;
		if (dma->cur_off < len)
			continue;
		if (emu->vt.on)
			vt_desc(emu, dma, d);
desc_done:
		emu_inc(emu, FC_DMA_REG(dma->index, FC_DMA_DESC_DONE));
		if (le16toh(d->flags) & FC_DESC_F_IRQ)
			dma_irq(emu, dma, FC_DMA_IRQ_DESC);
		dma->cur_off = 0;
		/* A chain that wrote to other nodes ends after their fences. */
		if (++dma->cur == dma->count && !dma->fence_need)
			dma_end(emu, dma, FC_DMA_ERR_NONE, 0);
	}
	return moved;
}
