// SPDX-License-Identifier: MIT
/*
 * Virtual time of one board (emu/vtime.h): the profile's costs in
 * picoseconds, and the arrival of packets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtime.h"

int fcemu__vt_init(struct fcemu_vtime *vt)
{
	const struct fcm_profile *p = &vt->prof;
	const char *env;
	double pcie_pkt;
	int ret;

	memset(vt, 0, sizeof(*vt));
	memset(vt->hops, 0xff, sizeof(vt->hops));
	memset(vt->in, 0xff, sizeof(vt->in));
	ret = fcm_profile_from_env(&vt->prof);
	if (ret)
		return ret < 0 ? ret : 0;
	vt->on = true;
	env = getenv("FPGACOMM_EMU_MODEL_ORDER");
	/* on with a model, unless turned off */
	vt->order = !(env && !strcmp(env, "0"));
	vt->pkt = fcemu__vt_ps(fcm_pkt_ns(p));
	vt->router = fcemu__vt_ps(fcm_router_ns(p));
	vt->link = fcemu__vt_ps(p->link_ns + fcm_pkt_ns(p));
	/* A host on PCIe stores a packet into the board and the far board
	 * writes it into its host's memory. */
	pcie_pkt = p->pcie_lanes > 0 ?
			   fcm_pcie_write_ns(p, (uint64_t)p->pkt_bytes) :
			   0;
	vt->tx = fcemu__vt_ps(p->endpoint_ns / 2 + pcie_pkt);
	vt->rx = fcemu__vt_ps(p->endpoint_ns - p->endpoint_ns / 2 + pcie_pkt);
	/* a whole number of packets, as many as the emulated link holds */
	if (p->link_credits > FCEMU_VT_CREDITS_MAX ||
	    (double)(unsigned int)p->link_credits != p->link_credits) {
		fprintf(stderr,
			"fpgacomm: profile %s: link_credits %g: a whole number "
			"up to %u, or 0 for unbounded\n",
			p->name, p->link_credits, FCEMU_VT_CREDITS_MAX);
		vt->on = false;
		return -EINVAL;
	}
	vt->credits = (unsigned int)p->link_credits;
	vt->credit_loop = fcemu__vt_ps(fcm_credit_loop_ns(p));
	return 0;
}

uint64_t fcemu__vt_credits(struct fcemu_vtime *vt, unsigned int port,
			   uint64_t t)
{
	struct fcemu_vt_credits *cr = &vt->tx_cr[port];
	uint64_t i;

	/* every packet a burst record stands for takes a credit */
	for (i = 0; i <= vt->skip; i++) {
		if (i)
			t += vt->pkt;
		t = fcemu__vt_credit(cr, vt->credits, t);
		fcemu__vt_credit_used(cr, vt->credits, t + vt->credit_loop);
	}
	return t;
}

void fcemu__vt_arrive(struct fcemu_vtime *vt, unsigned int src,
		      unsigned int hops, unsigned int in, uint64_t t)
{
	bool link = hops && in && in <= FC_MAX_PORTS;
	uint64_t at;

	if (!vt || !vt->on || src >= FC_MAX_NODES)
		return;
	/* its credit on the last link: when the one @credits before it
	 * left our buffer, plus the loop; one ejection port: one packet at
	 * a time, from every link */
	at = fcemu__vt_arrival(
		vt, hops, link, t, vt->rx_last[src], link ? vt->rx_in[in] : 0,
		link ? fcemu__vt_credit(&vt->rx_cr[in], vt->credits, 0) : 0,
		vt->rx_eject);
	vt->rx_eject = at;
	if (link) {
		vt->rx_in[in] = at;
		fcemu__vt_credit_used(&vt->rx_cr[in], vt->credits,
				      at + vt->credit_loop);
	}
	vt->rx_last[src] = at;
	fcemu__vt_reach(vt, at + vt->rx);
}
