// SPDX-License-Identifier: MIT
/*
 * The PIO send window (hw.h FC_PIO_*): packets the host wrote into the
 * board, taken into the injection queue in order and routed at once. The
 * board owns the source field and checks the rest: a host cannot send
 * what a descriptor could not. It takes a message whole or not yet, so
 * that no message is ever cut in two: not by a full injection queue (a
 * chain's packets cannot come between its parts), not by a reset.
 */
#include <endian.h>
#include <string.h>

#include "emu_internal.h"
#include "fabric.h"

static uint32_t slot_hdr(const struct fcemu *emu, uint32_t i)
{
	const struct fc_hw_pkt *p =
		(const void *)((const uint8_t *)emu->bar0 + FC_PIO_SLOT(i));

	return le32toh(p->hdr);
}

/* Is @hdr a packet the window takes? */
static bool pio_ok(uint32_t hdr)
{
	uint32_t type = (hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK;
	uint32_t len = (hdr >> FC_PKT_LEN_SHIFT) & FC_PKT_LEN_MASK;

	if (type != FC_PKT_T_DATA && type != FC_PKT_T_CTRL)
		return false;
	if (len > FC_PKT_PAYLOAD)
		return false;
	return len || (hdr & FC_PKT_EOM);
}

/*
 * The message at @head: packets up to its EOM. RETURN VALUE: how many, 0
 * if its EOM is not written yet; *ok false if any of them is refused.
 */
static uint32_t message_at(const struct fcemu *emu, uint32_t head,
			   uint32_t tail, bool *ok)
{
	uint32_t i, hdr;

	*ok = true;
	for (i = head; i != tail; i++) {
		hdr = slot_hdr(emu, i);
		*ok &= pio_ok(hdr);
		if (hdr & FC_PKT_EOM)
			return i - head + 1;
	}
	return 0;
}

static void count_errors(struct fcemu *emu, uint32_t n)
{
	emu_wr(emu, FC_PIO_ERRORS, emu_rd(emu, FC_PIO_ERRORS) + n);
}

static void inject_message(struct fcemu *emu, uint32_t head, uint32_t n)
{
	const uint32_t keep =
		~((FC_PKT_NODE_MASK << FC_PKT_SRC_SHIFT) | FC_PKT_VC);
	uint32_t src = emu->cfg.node_id << FC_PKT_SRC_SHIFT, i;
	struct fc_hw_pkt pkt;

	for (i = head; i != head + n; i++) {
		memcpy(&pkt, (const uint8_t *)emu->bar0 + FC_PIO_SLOT(i),
		       sizeof(pkt));
		pkt.hdr = htole32((le32toh(pkt.hdr) & keep) | src);
		fcemu_cluster_inject(emu->cluster, emu->cfg.node_id, &pkt);
	}
}

/* The message at @head, @n packets, by the express hop if it can go. */
static bool express(struct fcemu *emu, uint32_t head, uint32_t n)
{
	const struct fc_hw_pkt *pkts[FC_PIO_SLOTS];
	uint32_t i;

	for (i = 0; i < n; i++)
		pkts[i] = (const void *)((const uint8_t *)emu->bar0 +
					 FC_PIO_SLOT(head + i));
	return fcemu_cluster_express(emu->cluster, emu->cfg.node_id, pkts, n);
}

void fcemu__pio_notice(struct fcemu *emu)
{
	struct fcemu_cluster *c = emu->cluster;
	uint32_t tail = emu_rd(emu, FC_PIO_TAIL);
	uint32_t head = emu_rd(emu, FC_PIO_HEAD), n;
	bool taken = false, ok;

	/*
	 * A host that wrote past the window lost what it overwrote; a full
	 * window with no end of message in it can never be sent.
	 */
	if (tail - head > FC_PIO_SLOTS || !c) {
		count_errors(emu, tail - head);
		emu_wr(emu, FC_PIO_HEAD, tail);
		return;
	}
	/*
	 * An ABORT an engine owes goes first (hw.h, "Cut-off messages"): a
	 * window message on its channel would be glued onto the part the
	 * receiver has. No room for it: the window waits too.
	 */
	if (emu->aborts_owed && !fcemu__fabric_flush_aborts(emu))
		return;
	while (head != tail) {
		n = message_at(emu, head, tail, &ok);
		if (!n) {
			if (tail - head == FC_PIO_SLOTS) {
				count_errors(emu, tail - head);
				head = tail;
			}
			break; /* the rest is not written yet */
		}
		/* virtual time: the host's stores reach the board */
		fcemu__vt_begin(&emu->vt, emu->vt.now + emu->vt.tx);
		if (emu->vt.on)
			fcemu__host_acts(emu);
		if (!ok) {
			count_errors(emu, n);
		} else if (!express(emu, head, n)) {
			if (fcemu_cluster_inject_room(c, emu->cfg.node_id) < n)
				break; /* the injection queue is full: later */
			inject_message(emu, head, n);
			taken = true;
		}
		head += n;
	}
	emu_wr(emu, FC_PIO_HEAD, head);
	if (taken)
		fcemu_cluster_route_now(c, emu->cfg.node_id);
}

/* Messages not taken yet are dropped whole, and counted. */
void fcemu__pio_reset(struct fcemu *emu)
{
	uint32_t tail = emu_rd(emu, FC_PIO_TAIL);

	count_errors(emu, tail - emu_rd(emu, FC_PIO_HEAD));
	emu_wr(emu, FC_PIO_HEAD, tail);
}
