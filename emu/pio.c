// SPDX-License-Identifier: MIT
/*
 * The PIO send window (hw.h FC_PIO_*): packets the host wrote into the
 * board, taken into the injection queue in order and routed at once. The
 * board owns the source field and checks the rest: a host cannot send
 * what a descriptor could not.
 */
#include <endian.h>
#include <string.h>

#include "emu_internal.h"
#include "cluster_internal.h"

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

void fcemu__pio_notice(struct fcemu *emu)
{
	struct fcemu_cluster *c = emu->cluster;
	uint32_t tail = emu_rd(emu, FC_PIO_TAIL);
	uint32_t head = emu_rd(emu, FC_PIO_HEAD);
	uint32_t src = emu->cfg.node_id << FC_PKT_SRC_SHIFT;
	const uint32_t keep =
		~((FC_PKT_NODE_MASK << FC_PKT_SRC_SHIFT) | FC_PKT_VC);
	bool taken = false;

	/* A host that wrote past the window lost what it overwrote. */
	if (tail - head > FC_PIO_SLOTS || !c) {
		emu_wr(emu, FC_PIO_ERRORS,
		       emu_rd(emu, FC_PIO_ERRORS) + (tail - head));
		emu_wr(emu, FC_PIO_HEAD, tail);
		return;
	}
	for (; head != tail; head++) {
		struct fc_hw_pkt pkt;
		uint32_t hdr;

		memcpy(&pkt, (const uint8_t *)emu->bar0 + FC_PIO_SLOT(head),
		       sizeof(pkt));
		hdr = le32toh(pkt.hdr);
		if (!pio_ok(hdr)) {
			emu_inc(emu, FC_PIO_ERRORS);
			continue;
		}
		pkt.hdr = htole32((hdr & keep) | src);
		if (!fcemu_cluster_inject(c, emu->cfg.node_id, &pkt))
			break; /* the injection queue is full: next progress */
		taken = true;
	}
	emu_wr(emu, FC_PIO_HEAD, head);
	if (taken)
		fcemu_cluster_route_now(c, emu->cfg.node_id);
}

void fcemu__pio_reset(struct fcemu *emu)
{
	emu_wr(emu, FC_PIO_HEAD, emu_rd(emu, FC_PIO_TAIL));
}
